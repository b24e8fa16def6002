/* SPDX-License-Identifier: MIT */
/*
 * The in-process mode's private header (region*.c): a pool's and a
 * region's state, the small helpers every part uses, and what the parts
 * call of each other. region.c is the API and fork; region_events.c the
 * pool's userfaultfd events; region_evict.c eviction; region_fault.c the
 * handler thread and its faults. Locking: as region.c's comment says.
 */
#ifndef USWAP_RUNTIME_REGION_INTERNAL_H
#define USWAP_RUNTIME_REGION_INTERNAL_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <uswap/legacy.h>
#include <uswap/mm.h>
#include <uswap/region.h>
#include <uswap/swap.h>

#include "io/backend.h"
#include "runtime/lru.h"
#include "runtime/uffd_ops.h"
#include "swap/swap_internal.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif

#define PAGE		RT_UFFD_PAGE
#define RG_RUN		16		/* pages per fault: zero-fill and prefetch runs */
#define RG_BATCH	64		/* pages per eviction batch */
#define RG_HEADROOM	32		/* pages evicted below the budget per batch */
#define RG_MIN_BUDGET	(64ULL << 10)
#define RG_MAX_LEN	(64ULL << 30)
#define RG_MIRROR_MEM	(1ULL << 20)	/* the mirror's frames: pages in transit */
#define RG_STALL_NS	10000000ULL	/* eviction retried after a futile batch */
#define RG_LAT_BUCKETS	32		/* bucket b: service time in [2^b, 2^(b+1)) us */
#define RG_FLOOR	16		/* pages: the least resident budget total_bytes leaves */

#define RG_REQUIRED	(UFFD_FEATURE_MOVE | UFFD_FEATURE_EVENT_REMOVE | \
			 UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMAP)
#define RG_OPTIONAL	(UFFD_FEATURE_POISON | UFFD_FEATURE_WP_ASYNC)

enum rg_state {
	RG_ABSENT = 0,	/* never touched, or dropped: reads as zeros */
	RG_RESIDENT,	/* present in the region */
	RG_MOVING,	/* moved into the staging area, in the batch being evicted */
	RG_SWAPPED,	/* in the mirror at the same offset */
};

/* Invariant: a RESIDENT page is in pool->tab (on an LRU list) and no
 * other page is; MOVING pages are off the lists. */
struct rg_region {
	struct rg_region *next;
	uint64_t id;			/* unique in the pool: found again after events */
	uint64_t start, npages;		/* where it is now (mremap moves it) */
	uint64_t mirror, mirror_pages;	/* its mapping in the mirror mm (>= npages) */
	uint8_t *state;			/* enum rg_state per page */
	uint32_t *shadow;		/* SWAPPED: the eviction clock as it left */
};

struct rg_pending {
	uint64_t addr, t0;
};

struct uswap_region_pool {
	struct uswap_region_pool *next;	/* pools_list */
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* prefork_done */
	int uffd, efd;			/* the userfaultfd; the handler's doorbell */
	pthread_t thread;
	bool stop, prefork, prefork_done, child;
	bool postfork;			/* fork() waits in the parent for the budget */
	bool wp;			/* regions registered for WP_ASYNC written bits */
	int pagemap;			/* /proc/self/pagemap for PAGEMAP_SCAN, or -1 */
	uint64_t features, flags;
	struct uswap_mem *mem;
	struct uswap_mm *mm;		/* the mirror */
	int swap_type;			/* the pool's own device, or -1 */
	char *staging;			/* RG_BATCH pages between two guard pages */
	struct rg_region *regions;
	uint64_t budget, resident, swapped, ra_next;
	uint64_t limit;			/* the resident budget now: budget, or less
					 * under total (bound_total()) */
	uint64_t total, cp_pages;	/* the total bound; compressed pages now */
	uint64_t next_id, scan_clock;
	struct pagetab tab;		/* RESIDENT pages: LRU values (lru.h) */
	struct rt_lru lru;
	struct rt_lru_stats lru_st;
	uint64_t stall_until;		/* make_room() waits until then (ns) */
	struct rg_pending *pending;	/* faults read, not served yet */
	size_t nr_pending, cap_pending;
	struct uswap_region_stat st;
	uint64_t lat[RG_LAT_BUCKETS];
	char buf[RG_RUN * PAGE];	/* a swap-in run */
};


/* Ring the handler's doorbell. Context: any. */
static inline void kick(struct uswap_region_pool *pool)
{
	uint64_t one = 1;
	ssize_t r = write(pool->efd, &one, sizeof(one));

	(void)r;
}

/* The region holding @addr, or NULL. Context: pool->lock held. */
static inline struct rg_region *region_of(struct uswap_region_pool *pool, uint64_t addr)
{
	for (struct rg_region *r = pool->regions; r; r = r->next)
		if (addr >= r->start && addr < r->start + r->npages * PAGE)
			return r;
	return NULL;
}

/* The region with id @id, or NULL (freed). Context: pool->lock held. */
static inline struct rg_region *region_by_id(struct uswap_region_pool *pool, uint64_t id)
{
	for (struct rg_region *r = pool->regions; r; r = r->next)
		if (r->id == id)
			return r;
	return NULL;
}

static inline void peak_total(struct uswap_region_pool *pool)
{
	if (pool->resident + pool->cp_pages > pool->st.peak_total_pages)
		pool->st.peak_total_pages = pool->resident + pool->cp_pages;
}

/*
 * Page @i of @r is resident now: counted, and put on a list (the active
 * one if @active; @flags: LRU_AHEAD for a page a copy mapped, lru.h).
 * A page the list cannot take (-ENOMEM) stays resident
 * and is never chosen. Context: pool->lock held.
 */
static inline void set_resident_lru(struct uswap_region_pool *pool, struct rg_region *r, uint64_t i,
			     bool active, uint64_t flags)
{
	r->state[i] = RG_RESIDENT;
	rt_lru_add_flags(&pool->lru, &pool->tab, r->start + i * PAGE, active, flags);
	if (++pool->resident > pool->st.peak_resident_pages)
		pool->st.peak_resident_pages = pool->resident;
	peak_total(pool);
}

static inline void set_resident(struct uswap_region_pool *pool, struct rg_region *r, uint64_t i)
{
	set_resident_lru(pool, r, i, false, 0);
}

/* The RESIDENT page at @addr leaves its list. Context: pool->lock held. */
static inline void lru_out(struct uswap_region_pool *pool, uint64_t addr)
{
	uint64_t v;

	if (pt_get(&pool->tab, addr, &v)) {
		rt_lru_forget(&pool->lru, v);
		pt_del(&pool->tab, addr);
	}
}

/* region_events.c */
void rg_region_free(struct uswap_region_pool *pool, struct rg_region *r);
void rg_read_msgs(struct uswap_region_pool *pool);
/* region_evict.c */
int rg_register(struct uswap_region_pool *pool, uint64_t start, uint64_t len);
uint64_t rg_evict_batch(struct uswap_region_pool *pool, uint64_t want, bool *again);
void rg_make_room(struct uswap_region_pool *pool);
/* region_fault.c */
void *rg_handler_main(void *arg);

#endif
