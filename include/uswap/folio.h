/* SPDX-License-Identifier: MIT */
/*
 * Frames and folios: the emulated RAM that swap moves pages in and out of.
 *
 * A frame pool is N page frames of real memory with a buddy allocator for
 * naturally aligned runs of 2^order frames (order 0..9). A folio is such a
 * run: it has a sleeping lock that any thread may release (as the kernel's
 * folio lock, which I/O completion releases), a reference count, flags, and
 * while it is in the swap cache, its swap entry.
 */
#ifndef USWAP_FOLIO_H
#define USWAP_FOLIO_H

#include <uswap/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct folio;
struct uswap_frame_pool;

#define USWAP_MAX_ORDER 9

/**
 * uswap_frame_pool_create() - map nr_frames page frames of memory.
 * Context: may sleep (waits for destroyed pools when every id is taken).
 * Return: 0 and *out, -EINVAL (0 frames or more than one pool may address),
 * -ENOMEM, -ENOSPC (all pool ids in use).
 */
USWAP_API int uswap_frame_pool_create(size_t nr_frames, struct uswap_frame_pool **out);
/**
 * uswap_frame_pool_destroy() - unmap a pool; every folio must be freed.
 * Lockless swap-cache lookups may still be looking at its folios: the
 * memory is released, and the pool's id reused, after an RCU grace period.
 */
USWAP_API void uswap_frame_pool_destroy(struct uswap_frame_pool *pool);
/** uswap_frame_pool_free_frames() - frames not in any folio now. Lockless. */
USWAP_API size_t uswap_frame_pool_free_frames(const struct uswap_frame_pool *pool);
USWAP_API size_t uswap_frame_pool_nr_frames(const struct uswap_frame_pool *pool);

/**
 * uswap_folio_alloc() - a folio of 2^order frames, refcount 1, unlocked.
 * Context: any. Return: the folio, or NULL when no aligned run is free
 * (or order > USWAP_MAX_ORDER).
 */
USWAP_API struct folio *uswap_folio_alloc(struct uswap_frame_pool *pool, unsigned int order);

USWAP_API void folio_get(struct folio *folio);
/** folio_put() - drop a reference; the last one returns the frames. */
USWAP_API void folio_put(struct folio *folio);
USWAP_API long folio_ref_count(const struct folio *folio);

/** folio_lock() - sleep until the folio lock is ours. Context: may sleep. */
USWAP_API void folio_lock(struct folio *folio);
USWAP_API bool folio_trylock(struct folio *folio);
/** folio_unlock() - release the lock; any thread may do it. */
USWAP_API void folio_unlock(struct folio *folio);
USWAP_API bool folio_test_locked(const struct folio *folio);

USWAP_API unsigned int folio_order(const struct folio *folio);
USWAP_API unsigned long folio_nr_pages(const struct folio *folio);
USWAP_API uint64_t folio_pfn(const struct folio *folio);
USWAP_API void *folio_address(const struct folio *folio);
/** folio_swap_entry() - the first entry of a swap-cache folio (val 0 if none). */
USWAP_API swp_entry_t folio_swap_entry(const struct folio *folio);

USWAP_API bool folio_test_swapcache(const struct folio *folio);
USWAP_API bool folio_test_dirty(const struct folio *folio);
USWAP_API bool folio_test_writeback(const struct folio *folio);
USWAP_API bool folio_test_uptodate(const struct folio *folio);
USWAP_API void folio_mark_uptodate(struct folio *folio);
USWAP_API void folio_mark_dirty(struct folio *folio);
USWAP_API bool folio_clear_dirty(struct folio *folio);

#ifdef __cplusplus
}
#endif
#endif
