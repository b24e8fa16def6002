/* SPDX-License-Identifier: MIT */
/*
 * The in-process mode's private header (region*.c: region.c the API and
 * fork, region_events.c events, region_evict.c eviction, region_fault.c
 * the handler and its faults). Locking: region.c's comment.
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

#include "runtime/pager.h"
#include "runtime/uffd_ops.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif

#define PAGE		RT_UFFD_PAGE
#define RG_HEADROOM	32		/* pages evicted below the budget per batch */
#define RG_MIN_BUDGET	(64ULL << 10)
#define RG_MAX_LEN	(64ULL << 30)
#define RG_MIRROR_MEM	(1ULL << 20)	/* the mirror's frames: pages in transit */
#define RG_STALL_NS	10000000ULL	/* eviction retried after a futile batch */
#define RG_LAT_BUCKETS	32		/* bucket b: service time in [2^b, 2^(b+1)) us */

#define RG_REQUIRED	(UFFD_FEATURE_MOVE | UFFD_FEATURE_EVENT_REMOVE | \
			 UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMAP)
#define RG_OPTIONAL	(UFFD_FEATURE_POISON | UFFD_FEATURE_WP_ASYNC)

/* A region of the API, where it is now (mremap moves it). */
struct rg_region {
	struct rg_region *next;
	uint64_t start, npages;
};

struct uswap_region_pool {
	struct uswap_region_pool *next;	/* pools_list */
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* prefork_done */
	int uffd, efd;			/* the userfaultfd; the handler's doorbell */
	pthread_t thread;
	bool stop, prefork, prefork_done, child;
	bool postfork;			/* fork() waits in the parent for the budget */
	uint64_t features, flags;
	struct uswap_mem *mem;
	int swap_type;			/* the pool's own device, or -1 */
	char *staging;			/* PG_BATCH pages between two guard pages */
	struct rg_region *regions;
	uint64_t budget;		/* pages: the budget given */
	uint64_t limit;			/* the budget now (rg_bound_total()) */
	uint64_t total, cp_pages;	/* the total bound; compressed pages now */
	struct pg_tree tree;		/* the pool's one space and its counts */
	struct pager pg;		/* the regions' pages (pager.h) */
	bool pg_ready;			/* pg and tree made */
	uint64_t stall_until;		/* make_room() waits until then (ns) */
	struct uswap_region_stat st;	/* the pool's own counters (pager's: tree.st) */
	uint64_t lat[RG_LAT_BUCKETS];
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

static inline void peak_total(struct uswap_region_pool *pool)
{
	if (pool->tree.resident + pool->cp_pages > pool->st.peak_total_pages)
		pool->st.peak_total_pages = pool->tree.resident + pool->cp_pages;
}

/* region_events.c */
void rg_region_free(struct uswap_region_pool *pool, struct rg_region *r);
void rg_read_msgs(struct uswap_region_pool *pool);
/* region_fault.c */
extern const struct pg_ops rg_pager_ops;
/* region_evict.c */
int rg_register(struct uswap_region_pool *pool, uint64_t start, uint64_t len);
uint64_t rg_evict_batch(struct uswap_region_pool *pool, uint64_t want, bool *again);
void rg_bound_total(struct uswap_region_pool *pool);
void rg_make_room(struct uswap_region_pool *pool);
void *rg_handler_main(void *arg);

#endif
