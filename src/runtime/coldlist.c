/* SPDX-License-Identifier: MIT */
/* The page replacement of coldlist.h: rings with lazy deletion, and written bits
 * read and reset by PAGEMAP_SCAN on ranges registered for WP_ASYNC. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "runtime/coldlist.h"
#include "runtime/uffd_compat.h"
#include "util/alloc.h"

static int ring_push(struct rt_lru_ring *r, uint64_t addr, uint64_t ticket)
{
	if (r->len == r->cap) {
		uint64_t ncap = r->cap ? r->cap * 2 : 1024;
		struct rt_lru_ent *na = uswap_malloc(ncap * sizeof(*na));

		if (!na)
			return -ENOMEM;
		for (uint64_t i = 0; i < r->len; i++)
			na[i] = r->a[(r->head + i) & (r->cap - 1)];
		free(r->a);
		r->a = na;
		r->cap = ncap;
		r->head = 0;
	}
	r->a[(r->head + r->len++) & (r->cap - 1)] = (struct rt_lru_ent){ addr, ticket };
	return 0;
}

static bool ring_pop(struct rt_lru_ring *r, struct rt_lru_ent *e)
{
	if (!r->len)
		return false;
	*e = r->a[r->head];
	r->head = (r->head + 1) & (r->cap - 1);
	r->len--;
	return true;
}

/* Whether @e is its page's live entry on list @list. */
static bool ent_live(const struct pagetab *tab, const struct rt_lru_ent *e, unsigned int list,
		     uint64_t *val)
{
	return pt_get(tab, e->addr, val) && PT_STATE(*val) == PS_RESIDENT &&
	       LRU_TICKET(*val) == e->ticket && LRU_ACTIVE(*val) == list;
}

/* Drop the stale entries of ring @list when they outnumber the live ones
 * (pages dropped, moved or evicted leave theirs behind). */
static void ring_compact(struct rt_lru *l, const struct pagetab *tab, unsigned int list)
{
	struct rt_lru_ring *r = &l->ring[list];
	uint64_t n = r->len, v, kept = 0;
	struct rt_lru_ent e = { 0, 0 };

	if (r->len < 4096 || r->len < 2 * l->nr[list])
		return;
	for (uint64_t i = 0; i < n; i++) {
		if (!ring_pop(r, &e))
			break;
		if (ent_live(tab, &e, list, &v)) {
			ring_push(r, e.addr, e.ticket);	/* room is there: never fails */
			kept++;
		}
	}
	l->nr[list] = kept;
}

/**
 * rt_lru_add_flags() - put the RESIDENT page @addr at the head of a list,
 * the active one if @active, with @flags (LRU_*), and record it in @tab.
 * Return: 0, -ENOMEM (the page is then resident but on no list: never
 * chosen for eviction).
 */
int rt_lru_add_flags(struct rt_lru *l, struct pagetab *tab, uint64_t addr, bool active,
		     uint64_t flags)
{
	uint64_t ticket = ++l->next_ticket;
	unsigned int list = active ? 1 : 0;
	int err;

	err = pt_set(tab, addr, PT_VAL(PS_RESIDENT, 0) | (ticket << 12) |
			  (flags & (LRU_WRITTEN | LRU_SEEN | LRU_AHEAD)) | ((uint64_t)list << 8));
	if (err)
		return err;
	ring_compact(l, tab, list);
	err = ring_push(&l->ring[list], addr, ticket);
	if (!err)
		l->nr[list]++;
	return err;
}

/* PAGEMAP_SCAN [@start, @end) with @flags for the pages in categories @cat
 * (reported as @ret), calling @fn(@arg, a, b) on each run [a, b) found and
 * adding its pages to *@found. Return: 0, or -errno of the failed scan. */
static int pm_scan(int pagemap, uint64_t start, uint64_t end, uint64_t flags, uint64_t cat,
		   uint64_t ret, void (*fn)(void *arg, uint64_t a, uint64_t b), void *arg,
		   long *found)
{
	struct page_region r[256];

	while (start < end) {
		struct pm_scan_arg a = {
			.size = sizeof(a), .flags = flags, .start = start, .end = end,
			.vec = (uint64_t)(uintptr_t)r, .vec_len = 256,
			.category_mask = cat, .return_mask = ret,
		};
		long n = ioctl(pagemap, PAGEMAP_SCAN, &a);

		if (n < 0)
			return -errno;
		for (long i = 0; i < n; i++) {
			fn(arg, r[i].start, r[i].end);
			*found += (long)((r[i].end - r[i].start) / 4096);
		}
		if (a.walk_end <= start)
			break;
		start = a.walk_end;
	}
	return 0;
}

struct mark_arg {
	struct pagetab *tab;
	long found;		/* RESIDENT pages found written */
};

/* pm_scan(): mark the RESIDENT pages of [@a, @b) written. */
static void mark_written(void *arg, uint64_t a, uint64_t b)
{
	struct mark_arg *m = arg;
	uint64_t v;

	for (uint64_t p = a; p < b; p += 4096)
		if (pt_get(m->tab, p, &v) && PT_STATE(v) == PS_RESIDENT) {
			/* a copy's own bit is not a reference (LRU_AHEAD) */
			pt_set(m->tab, p, v & LRU_AHEAD ? v & ~LRU_AHEAD : v | LRU_WRITTEN);
			m->found++;
		}
}

/**
 * rt_lru_scan() - read and reset the written bits of [@start, @end) in the
 * process of @pagemap (the pages found written are write-protected again)
 * and mark the RESIDENT ones LRU_WRITTEN in @tab (or take their LRU_AHEAD).
 * Return: the pages found written and resident, or -errno (the range is
 * not registered for WP_ASYNC: no information).
 */
long rt_lru_scan(int pagemap, struct pagetab *tab, uint64_t start, uint64_t end)
{
	struct mark_arg m = { .tab = tab };
	long pages = 0;
	int err = pm_scan(pagemap, start, end, PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
			  PAGE_IS_WRITTEN | PAGE_IS_PRESENT, PAGE_IS_WRITTEN, mark_written, &m,
			  &pages);

	return err ? err : m.found;
}

#define RT_PRESENT_PREAD_MAX	(1ULL << 24)	/* 64 GiB of address space */

/**
 * rt_present_scan() - call @fn(@arg, a, b) for each run [a, b) of pages
 * present in [@start, @end) of the process of @pagemap. PAGEMAP_SCAN skips
 * the holes between VMAs at no cost; kernels without it get a read of the
 * pagemap, bounded to RT_PRESENT_PREAD_MAX pages.
 * Return: the pages found, or -errno.
 */
long rt_present_scan(int pagemap, uint64_t start, uint64_t end,
		     void (*fn)(void *arg, uint64_t a, uint64_t b), void *arg)
{
	uint64_t pm[512];
	long found = 0;
	int err = pm_scan(pagemap, start, end, 0, PAGE_IS_PRESENT, PAGE_IS_PRESENT, fn, arg,
			  &found);

	if ((err != -ENOTTY && err != -EINVAL) || found)
		return err ? err : found;
	if ((end - start) / 4096 > RT_PRESENT_PREAD_MAX)
		end = start + RT_PRESENT_PREAD_MAX * 4096;
	while (start < end) {
		uint64_t n = (end - start) / 4096, run = 0;
		ssize_t got;

		if (n > 512)
			n = 512;
		got = pread(pagemap, pm, n * 8, (off_t)(start / 4096 * 8));
		if (got <= 0)
			break;
		n = (uint64_t)got / 8;
		for (uint64_t i = 0; i <= n; i++) {
			if (i < n && (pm[i] >> 63) & 1) {
				run++;
				continue;
			}
			if (run) {
				fn(arg, start + (i - run) * 4096, start + i * 4096);
				found += (long)run;
			}
			run = 0;
		}
		start += n * 4096;
	}
	return found;
}

/**
 * rt_lru_forget() - a RESIDENT page with value @val leaves its list
 * (dropped, moved): only its list's count changes; its entry goes stale.
 */
void rt_lru_forget(struct rt_lru *l, uint64_t val)
{
	unsigned int list = (unsigned int)LRU_ACTIVE(val);

	if (PT_STATE(val) == PS_RESIDENT && LRU_TICKET(val) && l->nr[list])
		l->nr[list]--;
}

/**
 * rt_lru_refault() - the workingset test for a page coming back whose
 * SWAPPED value was @shadow_val: its refault distance (evictions since it
 * left, modulo 2^24) against @room, the pages the active list may hold.
 * Return: true if the page should be activated.
 */
bool rt_lru_refault(uint64_t shadow_val, uint64_t clock, uint64_t room)
{
	uint64_t dist = (clock - LRU_SHADOW(shadow_val)) & LRU_SHADOW_MASK;

	return dist <= room;
}

/*
 * Age the active list: move its oldest pages to the inactive head while it
 * holds more than half of @nr_resident, or while the inactive list is
 * empty (the kernel's inactive_is_low() at inactive_ratio 1).
 */
static void age_active(struct rt_lru *l, struct pagetab *tab, uint64_t nr_resident,
		       struct rt_lru_stats *st)
{
	struct rt_lru_ent e;
	uint64_t v;

	while ((l->nr[1] > nr_resident / 2 || !l->nr[0]) && ring_pop(&l->ring[1], &e)) {
		if (!ent_live(tab, &e, 1, &v))
			continue;
		l->nr[1]--;
		/* As the kernel's shrink_active_list() for anon: deactivated
		 * whether written or not; a write from now on counts. */
		if (rt_lru_add(l, tab, e.addr, false))
			break;
		st->deactivated++;
	}
}

/**
 * rt_lru_pop() - take the coldest resident page off its list (the caller
 * changes its state): the inactive list's oldest, after aging the active
 * list. An inactive tail page written since the last scan is kept once
 * (rotated, LRU_SEEN) and activated if written again by its next visit,
 * as the kernel's folio_check_references() does.
 * Return: true and *@addr, false when no page is on a list.
 */
bool rt_lru_pop(struct rt_lru *l, struct pagetab *tab, uint64_t *addr, uint64_t nr_resident,
		struct rt_lru_stats *st)
{
	struct rt_lru_ent e;
	uint64_t v;

	for (;;) {
		age_active(l, tab, nr_resident, st);
		if (!ring_pop(&l->ring[0], &e)) {
			if (!l->ring[1].len)
				return false;
			l->nr[0] = 0;	/* every entry was stale: resynchronize */
			continue;
		}
		if (!ent_live(tab, &e, 0, &v))
			continue;
		if (l->nr[0])
			l->nr[0]--;
		if ((v & LRU_WRITTEN) && (v & LRU_SEEN)) {
			st->promoted++;
			if (!rt_lru_add(l, tab, e.addr, true))
				continue;
		} else if (v & LRU_WRITTEN) {
			st->rotated++;
			if (!rt_lru_add_flags(l, tab, e.addr, false, LRU_SEEN))
				continue;
		}
		*addr = e.addr;
		return true;
	}
}

/** rt_lru_free() - free the rings. */
void rt_lru_free(struct rt_lru *l)
{
	free(l->ring[0].a);
	free(l->ring[1].a);
	memset(l, 0, sizeof(*l));
}
