/* SPDX-License-Identifier: MIT */
/*
 * The user-space folio and the frame pool (private view).
 *
 * Invariants:
 *   refcount >= 1 while allocated; the swap cache holds nr_pages references
 *     while PG_swapcache is set;
 *   PG_swapcache <=> every slot of folio->swap .. +nr-1 holds this folio's PFN;
 *   folio->swap is written only with the folio locked and the cluster locked.
 */
#ifndef USWAP_SWAP_FOLIO_INTERNAL_H
#define USWAP_SWAP_FOLIO_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>
#include <urcu/list.h>

#include <uswap/folio.h>
#include "util/lock.h"
#include "util/rcu.h"
#include "swap/swap_table.h"

enum folio_flag_bits {
	PG_locked_unused = 0,	/* the lock is lockword, not a flag */
	PG_swapcache,		/* in the swap cache: folio->swap is valid */
	PG_dirty,		/* newer than its copy on the device */
	PG_writeback,		/* being written to the device */
	PG_uptodate,		/* frame holds valid data */
	PG_error,		/* the last read failed */
	PG_active,		/* mm: on the active LRU list */
	PG_referenced,		/* mm: accessed since last scan */
	PG_workingset,		/* mm: was in the workingset at eviction */
	PG_lru,			/* mm: on an LRU list */
	PG_readahead,		/* brought in by readahead, not yet hit */
	PG_buddy,		/* pool: free run head (private to the pool) */
	PG_reclaim,		/* mm: being reclaimed */
	PG_swapbacked,		/* anonymous or shmem memory */
	PG_swapbypass,		/* legacy: read around the cache, holding SWAP_HAS_CACHE */
	PG_waiters,		/* someone sleeps in folio_wait_writeback() */
};

struct folio {
	_Atomic uint32_t lockword;	/* 0 free, 1 locked, 2 locked with waiters (futex) */
	_Atomic uint32_t flags;		/* 1 << PG_*; futex word for writeback waits */
	_Atomic long refcount;		/* 0 == free frame run */
	_Atomic int mapcount;		/* mm: page-table mappings of the folio */
	uint8_t order;			/* set at allocation; run of 2^order frames */
	uint8_t buddy_order;		/* pool: order of a free run (PG_buddy) */
	uint16_t memcg_id;		/* memory cgroup, 0 for the root; reset at allocation;
					 * relaxed atomics (folio_memcg_id()) */
	swp_entry_t swap;		/* first entry while PG_swapcache; folio lock */
	uint64_t pfn;			/* head frame number, global */
	struct uswap_frame_pool *pool;
	struct folio *head;		/* the folio this frame belongs to */
	struct cds_list_head lru;	/* mm LRU, or pool free list while free */
	void *mapping;			/* mm: owner (anon root or shmem object) */
	uint64_t index;			/* mm: page index within mapping */
	void *private;			/* mm: free for the owner */
};

struct uswap_frame_pool {
	uint64_t base_pfn;		/* id << POOL_PFN_SHIFT */
	size_t nr_frames;
	unsigned int id;
	uint8_t *mem;			/* nr_frames pages */
	struct folio *folios;		/* one per frame; heads are the folios */
	struct uswap_spinlock lock;	/* protects free lists and PG_buddy */
	struct cds_list_head free_list[USWAP_MAX_ORDER + 1];
	_Atomic size_t nr_free;
	struct rcu_head rcu;		/* destroy: freed after a grace period */
	uint64_t retire_gen;		/* destroy: which retirement of id; registry lock */
	/* the owner's hook, called with each folio about to be freed (the
	 * mm's memory uncharge); set before the pool's first allocation */
	void (*free_hook)(struct folio *folio);
};

/* Pools own disjoint PFN ranges of 2^28 frames (1 TiB each). */
#define POOL_PFN_SHIFT	28
#define POOL_MAX	(1U << (SWAP_CACHE_PFN_BITS - POOL_PFN_SHIFT))

/*
 * pfn_folio() - the folio struct of frame pfn, or NULL. Lockless; for a
 * PFN read from a swap table, call it and use the folio inside the RCU read
 * section of that read (the pool may be destroyed meanwhile).
 */
struct folio *pfn_folio(uint64_t pfn);

static inline bool folio_test_flag(const struct folio *f, int bit)
{
	return atomic_load_explicit(&f->flags, memory_order_acquire) & (1U << bit);
}

static inline void folio_set_flag(struct folio *f, int bit)
{
	atomic_fetch_or_explicit(&f->flags, 1U << bit, memory_order_release);
}

static inline void folio_clear_flag(struct folio *f, int bit)
{
	atomic_fetch_and_explicit(&f->flags, ~(1U << bit), memory_order_release);
}

static inline bool folio_test_clear_flag(struct folio *f, int bit)
{
	return atomic_fetch_and_explicit(&f->flags, ~(1U << bit), memory_order_acq_rel) &
	       (1U << bit);
}

static inline bool folio_test_set_flag(struct folio *f, int bit)
{
	return atomic_fetch_or_explicit(&f->flags, 1U << bit, memory_order_acq_rel) &
	       (1U << bit);
}

/*
 * uswap_folio_split_frames() - make each frame of a large folio a folio of
 * its own (order 0, head = itself), copying flags, mapping and index + i;
 * refcounts and mapcounts are the caller's to set. The caller holds the
 * folio lock, which every piece inherits (locked).
 */
void uswap_folio_split_frames(struct folio *folio);
/* Return a folio's frames to its pool (its refcount is 0). */
void uswap_frame_pool_free_folio(struct folio *folio);

/* The folio holds its swap slots: in the swap cache, or (legacy design)
 * read around the cache with the slots pinned by SWAP_HAS_CACHE. */
static inline bool folio_in_swap(const struct folio *f)
{
	return atomic_load_explicit(&f->flags, memory_order_acquire) &
	       ((1U << PG_swapcache) | (1U << PG_swapbypass));
}

/* folio_try_get() - take a reference unless the folio is free. */
bool folio_try_get(struct folio *folio);
void folio_ref_add(struct folio *folio, long nr);
/* folio_put_refs() - drop @nr references; the last returns the frames. */
void folio_put_refs(struct folio *folio, long nr);
void folio_ref_sub(struct folio *folio, long nr);

void folio_start_writeback(struct folio *folio);
void folio_end_writeback(struct folio *folio);
/* folio_wait_writeback() - sleep until PG_writeback is clear. */
void folio_wait_writeback(struct folio *folio);

#endif
