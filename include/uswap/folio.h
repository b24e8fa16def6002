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
 * uswap_frame_pool_create() - map @nr_frames page frames of memory.
 * @nr_frames: the pool's size in 4 KiB frames.
 * @out: receives the pool.
 *
 * The frames are real, anonymous memory of the process; folios of the
 * pool are allocated from them by uswap_folio_alloc().
 *
 * Context: may sleep (waits for an RCU grace period when every pool id is
 * taken by pools destroyed but not yet released).
 * Return: 0 and *@out; -EINVAL (0 frames, or more than one pool may
 * address), -ENOMEM, -ENOSPC (all pool ids in use).
 */
USWAP_API int uswap_frame_pool_create(size_t nr_frames, struct uswap_frame_pool **out);

/**
 * uswap_frame_pool_destroy() - unmap a pool and free it.
 * @pool: the pool, or NULL (nothing is done).
 *
 * Every folio of the pool must have been freed: a frame still in a folio
 * is a broken invariant, reported before the process aborts. Lockless
 * swap-cache lookups may still be looking at its folios: the memory is
 * released, and the pool's id reused, after an RCU grace period.
 *
 * Context: may sleep; no other thread may use @pool.
 */
USWAP_API void uswap_frame_pool_destroy(struct uswap_frame_pool *pool);

/**
 * uswap_frame_pool_free_frames() - the number of frames of @pool in no folio.
 * Context: any; lockless, the figure may be stale by the time it is read.
 * Return: the number of free frames.
 */
USWAP_API size_t uswap_frame_pool_free_frames(const struct uswap_frame_pool *pool);

/**
 * uswap_frame_pool_nr_frames() - the size of @pool in frames.
 * Context: any.
 * Return: the number of frames the pool was created with.
 */
USWAP_API size_t uswap_frame_pool_nr_frames(const struct uswap_frame_pool *pool);

/**
 * uswap_folio_alloc() - a folio of 2^@order frames, refcount 1, unlocked.
 * @pool: the pool to take the frames from.
 * @order: 0..USWAP_MAX_ORDER; the frames are aligned to their number.
 *
 * Context: any; takes the pool's lock.
 * Return: the folio, or NULL when no aligned run is free (or @order is
 * above USWAP_MAX_ORDER).
 */
USWAP_API struct folio *uswap_folio_alloc(struct uswap_frame_pool *pool, unsigned int order);

/**
 * folio_get() - take one more reference to @folio.
 * The caller must already hold one: getting a reference to a free folio
 * is a broken invariant, reported before the process aborts.
 * Context: any.
 */
USWAP_API void folio_get(struct folio *folio);

/**
 * folio_put() - drop a reference; the last one returns the frames to the pool.
 * A folio whose last reference goes must be unlocked and out of the swap
 * cache.
 * Context: any.
 */
USWAP_API void folio_put(struct folio *folio);

/**
 * folio_ref_count() - the number of references to @folio.
 * Context: any; lockless, the figure may be stale.
 * Return: the reference count (0 for a free folio).
 */
USWAP_API long folio_ref_count(const struct folio *folio);

/**
 * folio_lock() - sleep until the folio lock is ours.
 * The folio lock is a sleeping lock that any thread may release, as the
 * kernel's, which I/O completion releases; it is not recursive.
 * Context: may sleep.
 */
USWAP_API void folio_lock(struct folio *folio);

/**
 * folio_trylock() - take the folio lock if it is free, without sleeping.
 * Context: any.
 * Return: true if the lock was taken.
 */
USWAP_API bool folio_trylock(struct folio *folio);

/**
 * folio_unlock() - release the folio lock and wake one waiter.
 * Any thread may release it; releasing an unlocked folio is a broken
 * invariant, reported before the process aborts.
 * Context: any thread.
 */
USWAP_API void folio_unlock(struct folio *folio);

/**
 * folio_test_locked() - whether some thread holds the folio lock.
 * Context: any; lockless.
 * Return: true if locked.
 */
USWAP_API bool folio_test_locked(const struct folio *folio);

/**
 * folio_set_memcg_id() - the memory cgroup @folio belongs to (0: the root).
 * The swap layer charges the folio's slots to it (uswap/swap.h).
 * Context: folio locked, or not yet shared.
 */
USWAP_API void folio_set_memcg_id(struct folio *folio, uint16_t id);

/**
 * folio_memcg_id() - the memory cgroup id of @folio.
 * Context: any.
 * Return: the id, 0 for the root.
 */
USWAP_API uint16_t folio_memcg_id(const struct folio *folio);

/**
 * folio_order() - the order of @folio: it has 2^order frames.
 * Context: any.
 * Return: 0..USWAP_MAX_ORDER.
 */
USWAP_API unsigned int folio_order(const struct folio *folio);

/**
 * folio_nr_pages() - the number of pages (frames) of @folio.
 * Context: any.
 * Return: 2^folio_order().
 */
USWAP_API unsigned long folio_nr_pages(const struct folio *folio);

/**
 * folio_pfn() - the frame number of the first frame of @folio.
 * Frame numbers are unique across all pools of the process.
 * Context: any.
 * Return: the frame number.
 */
USWAP_API uint64_t folio_pfn(const struct folio *folio);

/**
 * folio_address() - the memory of @folio: folio_nr_pages() pages.
 * Context: any; the caller holds a reference.
 * Return: the address of the folio's first byte.
 */
USWAP_API void *folio_address(const struct folio *folio);

/**
 * folio_swap_entry() - the first swap entry of a swap-cache folio.
 * Context: any; stable while the folio is locked.
 * Return: the entry, or the invalid entry (val 0) if the folio is not in
 * the swap cache.
 */
USWAP_API swp_entry_t folio_swap_entry(const struct folio *folio);

/**
 * folio_test_swapcache() - whether @folio is in the swap cache.
 * Context: any; stable while the folio is locked.
 * Return: true if it is.
 */
USWAP_API bool folio_test_swapcache(const struct folio *folio);

/**
 * folio_test_dirty() - whether @folio's data is newer than its copy on swap.
 * Context: any.
 * Return: true if the folio is dirty.
 */
USWAP_API bool folio_test_dirty(const struct folio *folio);

/**
 * folio_test_writeback() - whether @folio is being written to swap.
 * Context: any; the flag clears when the write completes.
 * Return: true if under writeback.
 */
USWAP_API bool folio_test_writeback(const struct folio *folio);

/**
 * folio_test_uptodate() - whether @folio holds valid data.
 * A folio read from swap becomes uptodate when the read succeeds.
 * Context: any.
 * Return: true if uptodate.
 */
USWAP_API bool folio_test_uptodate(const struct folio *folio);

/**
 * folio_mark_uptodate() - say that @folio holds valid data.
 * Its owner does so after filling a new folio, before folio_alloc_swap().
 * Context: the caller owns the folio (usually locked).
 */
USWAP_API void folio_mark_uptodate(struct folio *folio);

/**
 * folio_mark_dirty() - say that @folio's data changed since it was written.
 * Context: any; the caller holds a reference.
 */
USWAP_API void folio_mark_dirty(struct folio *folio);

/**
 * folio_clear_dirty() - clear @folio's dirty flag and say what it was.
 * Context: folio locked (as before a write).
 * Return: true if the folio was dirty.
 */
USWAP_API bool folio_clear_dirty(struct folio *folio);

#ifdef __cplusplus
}
#endif
#endif
