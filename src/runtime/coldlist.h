/* SPDX-License-Identifier: MIT */
/*
 * Which resident page to evict (docs/RUNTIME.md, "Cold pages"): the
 * kernel's two anon LRU lists, inactive and active, per process, with the
 * workingset's shadow entries telling each refault's distance
 * (mm/workingset.c: a page evicted and faulted back after D further
 * evictions would have stayed had memory held D more pages). A page
 * comes in on the inactive list; one whose refault distance is within the
 * room of the active list is activated; eviction takes the inactive
 * list's oldest page; the active list is aged onto the inactive one when
 * it outgrows half of the process's resident pages.
 * Context: one thread at a time (the caller serializes); no locking.
 */
#ifndef USWAP_RUNTIME_COLDLIST_H
#define USWAP_RUNTIME_COLDLIST_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/pagetab.h"

/*
 * A RESIDENT page's value in the page map: bit 8 is its list (1 active),
 * bit 9 "written since the last scan" (PAGE_IS_WRITTEN), bit 10
 * "referenced at its last visit of the inactive tail" (the kernel's
 * PG_referenced), bit 11 "mapped by a copy" (UFFDIO_COPY maps a page
 * writable, so the first written bit a scan finds is the mapping's own and
 * is not counted), bits 12.. a ticket matching its one live entry on that
 * list's ring (0: on no list yet).
 * A SWAPPED page's value keeps the mirror index in bits 8..39 (PT_IDX)
 * and its shadow, the eviction clock when it left, in bits 40..63.
 */
#define LRU_ACTIVE(val)		(((val) >> 8) & 1)
#define LRU_WRITTEN		(1ULL << 9)
#define LRU_SEEN		(1ULL << 10)
#define LRU_AHEAD		(1ULL << 11)
#define LRU_TICKET(val)		((val) >> 12)
#define LRU_SHADOW_BITS		24
#define LRU_SHADOW_MASK		((1ULL << LRU_SHADOW_BITS) - 1)
#define LRU_SWAPPED(idx, clock)	(PT_VAL(PS_SWAPPED, idx) | (((clock) & LRU_SHADOW_MASK) << 40))
#define LRU_SHADOW(val)		((val) >> 40)

enum rt_evict_policy {
	RT_EVICT_LRU = 0,	/* active/inactive with refault activation */
	RT_EVICT_FIFO,		/* one list in fault order (for comparison) */
};

struct rt_lru_ent {
	uint64_t addr, ticket;
};

/* A growable ring of entries; stale ones are skipped when popped. */
struct rt_lru_ring {
	struct rt_lru_ent *a;
	uint64_t cap, head, len;	/* cap a power of two */
};

struct rt_lru {
	struct rt_lru_ring ring[2];	/* 0 inactive, 1 active */
	uint64_t nr[2];			/* live pages on each list */
	uint64_t next_ticket;
};

/* Counters shared by the tree (in struct rt_sup). */
struct rt_lru_stats {
	uint64_t refaults;		/* pages swapped back in that we evicted */
	uint64_t activated;		/* ... within the active list's room: activated */
	uint64_t deactivated;		/* pages aged from active to inactive */
	uint64_t swapin_pages;		/* pages brought in by swap-ins */
	uint64_t scans;			/* PAGEMAP_SCAN passes over a process */
	uint64_t written;		/* resident pages found written by them */
	uint64_t rotated;		/* inactive tail pages kept: written once */
	uint64_t promoted;		/* ... activated: written on two visits */
};

int rt_lru_add_flags(struct rt_lru *l, struct pagetab *tab, uint64_t addr, bool active,
		     uint64_t flags);
long rt_lru_scan(int pagemap, struct pagetab *tab, uint64_t start, uint64_t end);
long rt_present_scan(int pagemap, uint64_t start, uint64_t end,
		     void (*fn)(void *arg, uint64_t a, uint64_t b), void *arg);
void rt_lru_forget(struct rt_lru *l, uint64_t val);
bool rt_lru_refault(uint64_t shadow_val, uint64_t clock, uint64_t room);
bool rt_lru_pop(struct rt_lru *l, struct pagetab *tab, uint64_t *addr,
		uint64_t nr_resident, struct rt_lru_stats *st);
void rt_lru_free(struct rt_lru *l);

/* rt_lru_add_flags() without flags. Return: 0, -ENOMEM. */
static inline int rt_lru_add(struct rt_lru *l, struct pagetab *tab, uint64_t addr, bool active)
{
	return rt_lru_add_flags(l, tab, addr, active, 0);
}

#endif
