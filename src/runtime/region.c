/* SPDX-License-Identifier: MIT */
/*
 * The in-process mode (include/uswap/region.h; docs/RUNTIME.md, "The
 * in-process mode"): regions of the caller's own memory under a budget. One
 * handler thread per pool reads the pool's userfaultfd, serves faults with
 * batched UFFDIO_COPY (zero runs for first touches, swap-in runs with
 * sequential prefetch) and, when the budget is exceeded, moves pages out
 * with UFFDIO_MOVE into a staging area and writes them into a mirror
 * address space of the mm layer, whose reclaim puts them on the swap
 * devices. Each region has its own mapping in the mirror, at the same
 * offsets. Cold pages come from the supervisor's lists (lru.c): resident
 * pages are keyed by address in pool->tab, a swapped page keeps its
 * shadow (the eviction clock as it left) in its region's shadow array.
 *
 * Locking: pool->lock protects everything of a pool; the handler holds it
 * while it serves a round, the API calls while they change the regions.
 * Nothing is done under it that can wait for the handler: no access to a
 * registered page, no madvise or munmap of a registered range (the events
 * are synchronous). pools_lock (outer) protects the list of pools, for
 * fork.
 */
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

static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uswap_region_pool *pools_list;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static const char zeros[RG_RUN * PAGE];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Ring the handler's doorbell. Context: any. */
static void kick(struct uswap_region_pool *pool)
{
	uint64_t one = 1;
	ssize_t r = write(pool->efd, &one, sizeof(one));

	(void)r;
}

/* The region holding @addr, or NULL. Context: pool->lock held. */
static struct rg_region *region_of(struct uswap_region_pool *pool, uint64_t addr)
{
	for (struct rg_region *r = pool->regions; r; r = r->next)
		if (addr >= r->start && addr < r->start + r->npages * PAGE)
			return r;
	return NULL;
}

/* The region with id @id, or NULL (freed). Context: pool->lock held. */
static struct rg_region *region_by_id(struct uswap_region_pool *pool, uint64_t id)
{
	for (struct rg_region *r = pool->regions; r; r = r->next)
		if (r->id == id)
			return r;
	return NULL;
}

static void peak_total(struct uswap_region_pool *pool)
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
static void set_resident_lru(struct uswap_region_pool *pool, struct rg_region *r, uint64_t i,
			     bool active, uint64_t flags)
{
	r->state[i] = RG_RESIDENT;
	rt_lru_add_flags(&pool->lru, &pool->tab, r->start + i * PAGE, active, flags);
	if (++pool->resident > pool->st.peak_resident_pages)
		pool->st.peak_resident_pages = pool->resident;
	peak_total(pool);
}

static void set_resident(struct uswap_region_pool *pool, struct rg_region *r, uint64_t i)
{
	set_resident_lru(pool, r, i, false, 0);
}

/* The RESIDENT page at @addr leaves its list. Context: pool->lock held. */
static void lru_out(struct uswap_region_pool *pool, uint64_t addr)
{
	uint64_t v;

	if (pt_get(&pool->tab, addr, &v)) {
		rt_lru_forget(&pool->lru, v);
		pt_del(&pool->tab, addr);
	}
}

/* ---- events ---- */

/*
 * The program dropped [@a, @b) (MADV_DONTNEED, munmap): every page there
 * reads zeros now; swapped copies are freed. A MOVING page becomes ABSENT:
 * the batch then discards its bytes.
 * Context: handler, pool->lock held.
 */
static void drop_range(struct uswap_region_pool *pool, uint64_t a, uint64_t b)
{
	for (struct rg_region *r = pool->regions; r; r = r->next) {
		uint64_t end = r->start + r->npages * PAGE;
		uint64_t lo = a > r->start ? a : r->start, hi = b < end ? b : end;

		for (uint64_t p = lo; p < hi; p += PAGE) {
			uint64_t i = (p - r->start) / PAGE;

			if (r->state[i] == RG_SWAPPED) {
				uswap_mm_madvise_dontneed(pool->mm, r->mirror + i * PAGE, PAGE);
				pool->swapped--;
			} else if (r->state[i] != RG_ABSENT) {
				if (r->state[i] == RG_RESIDENT)
					lru_out(pool, p);
				pool->resident--;
			}
			r->state[i] = RG_ABSENT;
		}
	}
}

/* Cut @r to its first @npages pages (the rest was unmapped). Context:
 * pool->lock held. */
static void region_truncate(struct uswap_region_pool *pool, struct rg_region *r,
			    uint64_t npages)
{
	uint64_t end = r->start + r->npages * PAGE;

	if (npages >= r->npages)
		return;
	drop_range(pool, r->start + npages * PAGE, end);
	pool->st.region_bytes -= (r->npages - npages) * PAGE;
	r->npages = npages;
}

/* Free a region's bookkeeping and its mirror. Context: pool->lock held. */
static void region_free(struct uswap_region_pool *pool, struct rg_region *r)
{
	struct rg_region **pp;

	for (pp = &pool->regions; *pp && *pp != r; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = r->next;
	for (uint64_t i = 0; i < r->npages; i++) {
		if (r->state[i] == RG_SWAPPED) {
			pool->swapped--;
		} else if (r->state[i] != RG_ABSENT) {
			if (r->state[i] == RG_RESIDENT && !pool->child)
				lru_out(pool, r->start + i * PAGE);
			pool->resident--;
		}
	}
	if (!pool->child)
		uswap_mm_munmap(pool->mm, r->mirror);
	pool->st.regions--;
	pool->st.region_bytes -= r->npages * PAGE;
	free(r->state);
	free(r->shadow);
	free(r);
}

static void queue_fault(struct uswap_region_pool *pool, uint64_t addr)
{
	if (pool->nr_pending == pool->cap_pending) {
		size_t ncap = pool->cap_pending ? pool->cap_pending * 2 : 64;
		struct rg_pending *n = realloc(pool->pending, ncap * sizeof(*n));

		if (!n) {	/* the thread faults again when woken */
			rt_uffd_wake(pool->uffd, addr, PAGE);
			return;
		}
		pool->pending = n;
		pool->cap_pending = ncap;
	}
	pool->pending[pool->nr_pending++] = (struct rg_pending){ addr, now_ns() };
}

/*
 * mremap() moved the region at @from to @to ([@from, @from + @len) was
 * its whole, after any shrinking): its resident pages are keyed anew on
 * the lists, with their list and flags; the mirror keeps the offsets.
 * A move of a part of a region cannot be followed (its swapped pages
 * would have to leave the region's mirror): the program is aborted.
 * Context: handler, pool->lock held.
 */
static void follow_remap(struct uswap_region_pool *pool, uint64_t from, uint64_t to,
			 uint64_t len)
{
	struct rg_region *r = region_of(pool, from);
	uint64_t keep = len / PAGE, v;

	if (!r)
		return;		/* not a region's (cannot happen: only they are registered) */
	if (r->start != from || keep > r->npages) {
		fprintf(stderr, "uswap: mremap() moved a part of a region (0x%llx, %llu bytes, "
			"of 0x%llx): regions are moved whole; aborting rather than lose its "
			"swapped pages\n", (unsigned long long)from, (unsigned long long)len,
			(unsigned long long)r->start);
		abort();
	}
	region_truncate(pool, r, keep);
	for (uint64_t i = 0; i < r->npages; i++) {
		uint64_t a = r->start + i * PAGE;

		if (r->state[i] != RG_RESIDENT || !pt_get(&pool->tab, a, &v))
			continue;
		rt_lru_forget(&pool->lru, v);
		pt_del(&pool->tab, a);
		rt_lru_add_flags(&pool->lru, &pool->tab, to + i * PAGE, LRU_ACTIVE(v),
				 v & (LRU_WRITTEN | LRU_SEEN | LRU_AHEAD));
	}
	r->start = to;
	pool->ra_next = 0;
	pool->st.remaps++;
}

/*
 * Read what the uffd has: events are handled now, faults queued (served
 * by serve_pending()). Context: handler, pool->lock held.
 */
static void read_msgs(struct uswap_region_pool *pool)
{
	struct uffd_msg msg[32];
	ssize_t n;

	while ((n = read(pool->uffd, msg, sizeof(msg))) > 0) {
		for (size_t i = 0; i < (size_t)n / sizeof(msg[0]); i++) {
			struct uffd_msg *m = &msg[i];

			switch (m->event) {
			case UFFD_EVENT_PAGEFAULT:
				pool->st.faults++;
				queue_fault(pool, m->arg.pagefault.address & ~(PAGE - 1));
				break;
			case UFFD_EVENT_REMOVE:
				pool->st.removes++;
				drop_range(pool, m->arg.remove.start, m->arg.remove.end);
				break;
			case UFFD_EVENT_UNMAP: {
				uint64_t a = m->arg.remove.start, b = m->arg.remove.end;
				struct rg_region *r, *nx;

				pool->st.unmaps++;
				drop_range(pool, a, b);
				for (r = pool->regions; r; r = nx) {
					uint64_t end = r->start + r->npages * PAGE;

					nx = r->next;
					if (a <= r->start && end <= b)
						region_free(pool, r);
					else if (a > r->start && a < end && b >= end)
						region_truncate(pool, r, (a - r->start) / PAGE);
				}
				break;
			}
			case UFFD_EVENT_REMAP:
				follow_remap(pool, m->arg.remap.from, m->arg.remap.to,
					     m->arg.remap.len);
				break;
			default:
				break;
			}
		}
	}
}

/* ---- eviction ---- */

/*
 * Register [@start, @start + @len) for MISSING faults, and for WP_ASYNC
 * written bits where the pool has them (the staging area too: UFFDIO_MOVE
 * wants both sides with the same protection).
 * Context: any. Return: 0, -errno.
 */
static int rg_register(struct uswap_region_pool *pool, uint64_t start, uint64_t len)
{
	struct uffdio_register r = {
		.range = { .start = start, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING | (pool->wp ? UFFDIO_REGISTER_MODE_WP : 0),
	};

	return ioctl(pool->uffd, UFFDIO_REGISTER, &r) ? -errno : 0;
}

/* Empty the staging area: unregistered first, so that no REMOVE event
 * (which this thread would have to read itself) is raised. */
static void staging_clear(struct uswap_region_pool *pool)
{
	uint64_t s = (uint64_t)(uintptr_t)pool->staging;

	rt_uffd_unregister(pool->uffd, s, RG_BATCH * PAGE);
	madvise(pool->staging, RG_BATCH * PAGE, MADV_DONTNEED);
	if (rg_register(pool, s, RG_BATCH * PAGE)) {
		fprintf(stderr, "uswap: cannot register a region pool's staging area again\n");
		abort();
	}
}

/*
 * The compressed bytes of the pool's own device (zram's pool: the memory
 * that holds the data), and the resident budget the total bound leaves:
 * pool->limit = min(budget, total - compressed pages), at least RG_FLOOR.
 * Without a device of its own the pool cannot tell its share of the
 * store: limit = budget (total_bytes needs @swap).
 * Context: pool->lock held; the device stays on while the pool lives.
 */
static void bound_total(struct uswap_region_pool *pool)
{
	struct swap_info_struct *si;
	struct swap_zram_stats zs;
	uint64_t room;

	pool->limit = pool->budget;
	if (pool->swap_type < 0)
		return;
	si = atomic_load(&swap_info[pool->swap_type]);
	if (!si || !si->bdev || swap_backend_zram_stats(si->bdev, &zs))
		return;
	pool->st.compressed_bytes = zs.pool_bytes;
	if (zs.pool_bytes > pool->st.peak_compressed_bytes)
		pool->st.peak_compressed_bytes = zs.pool_bytes;
	pool->cp_pages = (zs.pool_bytes + PAGE - 1) / PAGE;
	peak_total(pool);
	if (!pool->total)
		return;
	room = pool->total > pool->cp_pages ? pool->total - pool->cp_pages : 0;
	if (room < RG_FLOOR)
		room = RG_FLOOR;
	if (room < pool->limit)
		pool->limit = room;
}

/*
 * Read the written bits of the regions when a quarter of the resident
 * pages (at least a batch) was evicted since the last read, as the
 * supervisor does (session.c, scan_written()).
 * Context: handler, pool->lock held.
 */
static void scan_written(struct uswap_region_pool *pool)
{
	uint64_t every = pool->resident / 4 > RG_BATCH ? pool->resident / 4 : RG_BATCH;

	if (!pool->wp || pool->pagemap < 0 || (pool->flags & USWAP_REGION_EVICT_FIFO) ||
	    pool->st.evicted - pool->scan_clock < every)
		return;
	pool->scan_clock = pool->st.evicted;
	pool->lru_st.scans++;
	for (struct rg_region *r = pool->regions; r; r = r->next) {
		long n = rt_lru_scan(pool->pagemap, &pool->tab, r->start,
				     r->start + r->npages * PAGE);

		if (n > 0)
			pool->st.written += (uint64_t)n;
	}
}

/*
 * Put a moved page whose bytes could not be stored back where it is now
 * (page @i of region @id: an mremap may have moved it meanwhile).
 * Context: handler, pool->lock held.
 */
static void evict_undo(struct uswap_region_pool *pool, uint64_t id, uint64_t i,
		       const char *bytes)
{
	for (;;) {
		struct rg_region *r = region_by_id(pool, id);
		uint64_t done;
		int err;

		if (!r || i >= r->npages || r->state[i] != RG_MOVING)
			return;		/* dropped meanwhile: zeros, as asked */
		err = rt_uffd_copy(pool->uffd, r->start + i * PAGE, bytes, PAGE, &done);
		if (!err || err == -EEXIST || (err != -EAGAIN && done == 0)) {
			/* counted resident still; back on the inactive list */
			r->state[i] = RG_RESIDENT;
			rt_lru_add(&pool->lru, &pool->tab, r->start + i * PAGE, false);
			return;
		}
		read_msgs(pool);	/* EAGAIN: an event is pending */
		usleep(20);
	}
}

struct rg_cand {
	uint64_t addr, id, i;
	struct rg_region *r;
};

static int cand_cmp(const void *a, const void *b)
{
	const struct rg_cand *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * Move up to @want resident pages (<= RG_BATCH) out, the coldest by the
 * lists, and store them in the mirror. A page the kernel refuses because
 * it is shared with a forked child (EBUSY) is unshared once with
 * MADV_POPULATE_WRITE (a write fault without a write: the parent gets its
 * own copy, or the page back if the child is gone) and moved then.
 * *@again is set when a pending event stopped it.
 * Return: the pages evicted. Context: handler, pool->lock held.
 */
static uint64_t evict_batch(struct uswap_region_pool *pool, uint64_t want, bool *again)
{
	struct rg_cand c[RG_BATCH];
	bool moved[RG_BATCH] = { false }, unshared[RG_BATCH] = { false };
	uint64_t n = 0, evicted = 0, a;
	bool any = false;

	if (want > RG_BATCH)
		want = RG_BATCH;
	scan_written(pool);
	/* Pick: the inactive list's oldest (rt_lru_pop() ages and rotates). */
	while (n < want && rt_lru_pop(&pool->lru, &pool->tab, &a, pool->resident,
				      &pool->lru_st)) {
		struct rg_region *r = region_of(pool, a);
		uint64_t i;

		pt_del(&pool->tab, a);	/* off the lists while in the batch */
		if (!r || r->state[i = (a - r->start) / PAGE] != RG_RESIDENT)
			continue;	/* cannot happen: tab holds RESIDENT pages only */
		c[n++] = (struct rg_cand){ a, r->id, i, r };
	}
	/* Move, in runs of neighbouring pages. */
	qsort(c, n, sizeof(c[0]), cand_cmp);
	for (uint64_t s = 0; s < n;) {
		uint64_t k = 1, done;
		int err;

		while (s + k < n && c[s + k].r == c[s].r && c[s + k].i == c[s].i + k)
			k++;
		err = rt_uffd_move(pool->uffd, (uint64_t)(uintptr_t)pool->staging + s * PAGE,
				   c[s].addr, k * PAGE, 0, &done);
		done /= PAGE;
		for (uint64_t j = 0; j < done; j++) {
			moved[s + j] = true;
			c[s + j].r->state[c[s + j].i] = RG_MOVING;
			any = true;
		}
		if (!err) {
			s += k;
			continue;
		}
		if (err == -EAGAIN && done) {
			s += done;	/* a partial move: the rest again, for its real error */
			continue;
		}
		if (err == -EAGAIN) {
			*again = true;
			break;		/* an event is pending: the rest stays */
		}
		s += done;
		if (err == -EBUSY && !unshared[s] &&
		    !madvise((void *)(uintptr_t)c[s].addr, (k - done) * PAGE, MADV_POPULATE_WRITE)) {
			/* Shared copy-on-write (after a fork, every page of the
			 * run is): the rest of the run unshared at once, again. */
			for (uint64_t j = s; j < s + k - done; j++)
				unshared[j] = true;
			pool->st.cow_unshared += k - done;
			continue;
		}
		if (err == -EBUSY)
			pool->st.evict_busy++;	/* pinned: stays resident */
		if (err == -ENOENT) {	/* not present: dropped without an event seen */
			c[s].r->state[c[s].i] = RG_ABSENT;
			pool->resident--;
		}
		s++;
	}
	/* What did not move goes back on the inactive list (rotated, as the
	 * kernel's putback). */
	for (uint64_t s = 0; s < n; s++)
		if (!moved[s] && c[s].r->state[c[s].i] == RG_RESIDENT)
			rt_lru_add(&pool->lru, &pool->tab, c[s].addr, false);
	/* Store what moved; what cannot be stored goes back. evict_undo()
	 * reads events, which may free or move a region: look each one up
	 * again by its id. */
	for (uint64_t s = 0; s < n; s++) {
		struct rg_region *r = moved[s] ? region_by_id(pool, c[s].id) : NULL;
		const char *bytes = pool->staging + s * PAGE;
		uint64_t i = c[s].i;

		if (!r || i >= r->npages || r->state[i] != RG_MOVING)
			continue;	/* dropped meanwhile: the bytes go */
		if (uswap_mm_write(pool->mm, r->mirror + i * PAGE, bytes, PAGE)) {
			pool->st.evict_failed++;
			evict_undo(pool, c[s].id, i, bytes);
			continue;
		}
		r->state[i] = RG_SWAPPED;
		/* the shadow: the eviction clock as it leaves */
		r->shadow[i] = (uint32_t)((pool->st.evicted + evicted) & LRU_SHADOW_MASK);
		pool->resident--;
		pool->swapped++;
		evicted++;
	}
	if (any)
		staging_clear(pool);
	pool->st.evict_batches++;
	pool->st.evicted += evicted;
	return evicted;
}

/* Evict until a run fits under the budget (with headroom), unless a fork
 * is being prepared. Context: handler, pool->lock held. */
static void make_room(struct uswap_region_pool *pool)
{
	uint64_t head;
	int tries = 0;

	bound_total(pool);
	head = pool->limit / 4 < RG_HEADROOM ? pool->limit / 4 : RG_HEADROOM;
	if (pool->stall_until && now_ns() < pool->stall_until)
		return;		/* the last batch moved nothing */
	pool->stall_until = 0;
	while (!pool->prefork && pool->resident + RG_RUN > pool->limit) {
		uint64_t want = pool->resident + RG_RUN + head - pool->limit;
		bool again = false;

		if (evict_batch(pool, want, &again)) {
			bound_total(pool);	/* the store grew */
			continue;
		}
		if (again && tries++ < 20000) {
			/* An event is pending (a madvise, munmap or mremap of
			 * the program): read it, let its thread go on (it must
			 * run to end the kernel's mmap_changing, which may take
			 * long on a loaded machine: up to ~1 s), retry. */
			read_msgs(pool);
			usleep(50);
			continue;
		}
		/* Nothing evictable now (pinned pages, swap full): over
		 * budget, seen in the peak; the handler tries again in
		 * RG_STALL_NS. */
		pool->stall_until = now_ns() + RG_STALL_NS;
		break;
	}
}

/* ---- faults ---- */

/*
 * Serve a first touch (or a fault on a page that is present already):
 * zeros for @i and the absent pages after it, up to @room.
 * Return: 0, -EAGAIN (retry after the pending event).
 */
static int serve_zero(struct uswap_region_pool *pool, struct rg_region *r, uint64_t i,
		      uint64_t room)
{
	uint64_t n = 1, done;
	int err;

	if (r->state[i] == RG_ABSENT)
		while (n < room && i + n < r->npages && r->state[i + n] == RG_ABSENT)
			n++;
	err = rt_uffd_copy(pool->uffd, r->start + i * PAGE, zeros, n * PAGE, &done);
	done /= PAGE;
	for (uint64_t k = 0; k < done; k++)
		if (r->state[i + k] == RG_ABSENT)
			set_resident_lru(pool, r, i + k, false, LRU_AHEAD);
	if (done) {
		pool->st.zero_fills++;
		pool->st.zero_pages += done;
	}
	if (err == -EAGAIN && !done)
		return -EAGAIN;
	if (err == -EEXIST && !done) {	/* present already: served by a run */
		if (r->state[i] == RG_ABSENT)
			set_resident(pool, r, i);
		rt_uffd_wake(pool->uffd, r->start + i * PAGE, PAGE);
	}
	return 0;
}

/*
 * Swap @i in, with the swapped pages after it up to @room when the access
 * looks sequential (@i follows the last run), in one copy; the mirror is
 * dropped for the pages copied. A page the devices lost is poisoned.
 * Return: 0, -EAGAIN (retry after the pending event).
 */
static int serve_swapin(struct uswap_region_pool *pool, struct rg_region *r, uint64_t i,
			uint64_t room)
{
	uint64_t a = r->start + i * PAGE, n = 1, done;
	int err;

	if (a != pool->ra_next)
		room = 1;
	while (n < room && i + n < r->npages && r->state[i + n] == RG_SWAPPED)
		n++;
	err = uswap_mm_read(pool->mm, r->mirror + i * PAGE, pool->buf, n * PAGE);
	if (err && n > 1) {
		n = 1;
		err = uswap_mm_read(pool->mm, r->mirror + i * PAGE, pool->buf, PAGE);
	}
	if (err) {
		fprintf(stderr, "uswap: region page 0x%llx cannot be read back (%s): SIGBUS on "
			"access\n", (unsigned long long)a, strerror(-err));
		err = rt_uffd_poison(pool->uffd, a, PAGE);
		if (err == -EAGAIN)
			return -EAGAIN;
		if (err) {	/* never let the thread read zeros instead */
			fprintf(stderr, "uswap: cannot poison it (%s): aborting\n", strerror(-err));
			abort();
		}
		uswap_mm_madvise_dontneed(pool->mm, r->mirror + i * PAGE, PAGE);
		r->state[i] = RG_ABSENT;
		pool->swapped--;
		pool->st.poisoned++;
		return 0;
	}
	err = rt_uffd_copy(pool->uffd, a, pool->buf, n * PAGE, &done);
	done /= PAGE;
	if (done) {
		uswap_mm_madvise_dontneed(pool->mm, r->mirror + i * PAGE, done * PAGE);
		/* Refaults: the workingset test activates a page that came back
		 * within the active list's room (half the budget), as the
		 * kernel's workingset_refault() does for each page read in. */
		for (uint64_t k = 0; k < done; k++) {
			bool active = !(pool->flags & USWAP_REGION_EVICT_FIFO) &&
				      rt_lru_refault(LRU_SWAPPED(0, r->shadow[i + k]),
						     pool->st.evicted, pool->limit / 2);

			set_resident_lru(pool, r, i + k, active, LRU_AHEAD);
			pool->lru_st.activated += active;
		}
		pool->lru_st.refaults += done;
		pool->swapped -= done;
		pool->ra_next = a + done * PAGE;
		pool->st.swapins++;
		pool->st.prefetched += done - 1;
	}
	if (err == -EAGAIN && !done)
		return -EAGAIN;
	if (err == -EEXIST && !done)
		rt_uffd_wake(pool->uffd, a, PAGE);	/* cannot happen to a swapped page */
	return 0;
}

/*
 * The VMA holding @addr, from /proc/self/maps: *@start, *@end.
 * Context: any; never with mmap_lock held by this thread (none is).
 * Return: 0, -ENOENT.
 */
static int vma_of(uint64_t addr, uint64_t *start, uint64_t *end)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long long a, b;
	char line[512];
	int err = -ENOENT;

	if (!f)
		return -ENOENT;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx", &a, &b) == 2 && addr >= a && addr < b) {
			*start = a;
			*end = b;
			err = 0;
			break;
		}
	fclose(f);
	return err;
}

/*
 * A region grew by mremap() (in place, which raises no event, or moved:
 * the REMAP event gives the old length only): a fault at @addr past a
 * region's end, in the same VMA. The region takes the VMA up to the next
 * region. Its mirror, if too small, is replaced by a larger one, the
 * swapped pages copied over (if the devices fail that, the program is
 * aborted with a message rather than read a lost page).
 * Context: handler, pool->lock held.
 * Return: the region, or NULL (no region grew there).
 */
static struct rg_region *region_grow(struct uswap_region_pool *pool, uint64_t addr)
{
	struct rg_region *r = NULL;
	uint64_t vs, ve, end, np, nm;
	uint8_t *ns;
	uint32_t *nsh;

	if (vma_of(addr, &vs, &ve))
		return NULL;
	for (struct rg_region *x = pool->regions; x; x = x->next)
		if (x->start >= vs && x->start <= addr && (!r || x->start > r->start))
			r = x;
	if (!r || r->start + r->npages * PAGE > addr)
		return NULL;
	end = ve;
	for (struct rg_region *x = pool->regions; x; x = x->next)
		if (x->start > r->start && x->start < end)
			end = x->start;
	np = (end - r->start) / PAGE;
	ns = realloc(r->state, np);
	if (ns)
		r->state = ns;
	nsh = ns ? realloc(r->shadow, np * sizeof(*nsh)) : NULL;
	if (!nsh)
		return NULL;
	r->shadow = nsh;
	memset(r->state + r->npages, RG_ABSENT, np - r->npages);
	memset(r->shadow + r->npages, 0, (np - r->npages) * sizeof(*nsh));
	if (np > r->mirror_pages) {
		uint64_t old = r->mirror;

		if (uswap_mm_mmap(pool->mm, np * PAGE, &nm))
			return NULL;
		for (uint64_t i = 0; i < r->npages; i++) {
			if (r->state[i] != RG_SWAPPED ||
			    (!uswap_mm_read(pool->mm, old + i * PAGE, pool->buf, PAGE) &&
			     !uswap_mm_write(pool->mm, nm + i * PAGE, pool->buf, PAGE)))
				continue;
			fprintf(stderr, "uswap: a region grown by mremap() cannot keep its swapped "
				"page 0x%llx (swap full or a read error): aborting\n",
				(unsigned long long)(r->start + i * PAGE));
			abort();
		}
		uswap_mm_munmap(pool->mm, old);
		r->mirror = nm;
		r->mirror_pages = np;
	}
	pool->st.region_bytes += (np - r->npages) * PAGE;
	r->npages = np;
	return r;
}

/* Serve the fault at @addr. Return: 0 done, -EAGAIN keep it pending. */
static int serve_fault(struct uswap_region_pool *pool, uint64_t addr)
{
	struct rg_region *r = region_of(pool, addr);
	uint64_t i, room;

	if (!r)
		r = region_grow(pool, addr);
	if (!r) {	/* destroyed or unmapped meanwhile */
		rt_uffd_wake(pool->uffd, addr, PAGE);
		return 0;
	}
	make_room(pool);
	r = region_of(pool, addr);	/* eviction may have read an UNMAP */
	if (!r) {
		rt_uffd_wake(pool->uffd, addr, PAGE);
		return 0;
	}
	i = (addr - r->start) / PAGE;
	room = pool->prefork || pool->resident + RG_RUN <= pool->limit ? RG_RUN : 1;
	if (r->state[i] == RG_SWAPPED)
		return serve_swapin(pool, r, i, room);
	return serve_zero(pool, r, i, room);
}

static void count_latency(struct uswap_region_pool *pool, uint64_t t0)
{
	uint64_t us = (now_ns() - t0) / 1000;
	unsigned int b = 0;

	while (us > 1 && b < RG_LAT_BUCKETS - 1) {
		us >>= 1;
		b++;
	}
	pool->lat[b]++;
}

/* Serve the queued faults that can be. Return: true if some wait still. */
static bool serve_pending(struct uswap_region_pool *pool)
{
	size_t j = 0;

	/* By index: eviction may read more faults into the queue meanwhile. */
	for (size_t i = 0; i < pool->nr_pending; i++) {
		struct rg_pending p = pool->pending[i];

		if (serve_fault(pool, p.addr))
			pool->pending[j++] = p;
		else
			count_latency(pool, p.t0);
	}
	pool->nr_pending = j;
	return j != 0;
}

/* A fork is being prepared: bring every page in. Return: true when done. */
static bool prefork_swapin(struct uswap_region_pool *pool)
{
	for (struct rg_region *r = pool->regions; r; r = r->next)
		for (uint64_t i = 0; i < r->npages && pool->swapped; i++)
			if (r->state[i] == RG_SWAPPED) {
				pool->ra_next = r->start + i * PAGE;
				if (serve_swapin(pool, r, i, RG_RUN))
					return false;
			}
	return pool->swapped == 0;
}

/* The handler thread: one round per wake-up. */
static void *handler_main(void *arg)
{
	struct uswap_region_pool *pool = arg;
	bool again = false;
	int timeout = -1;	/* set under pool->lock at the end of each round */

	for (;;) {
		struct pollfd p[2] = { { .fd = pool->uffd, .events = POLLIN },
				       { .fd = pool->efd, .events = POLLIN } };
		uint64_t v;

		if (poll(p, 2, timeout) < 0 && errno != EINTR)
			break;
		if (p[1].revents & POLLIN && read(pool->efd, &v, sizeof(v)) < 0)
			v = 0;
		pthread_mutex_lock(&pool->lock);
		if (pool->stop) {
			pthread_mutex_unlock(&pool->lock);
			break;
		}
		read_msgs(pool);
		again = serve_pending(pool);
		if (pool->prefork && !pool->prefork_done) {
			if (prefork_swapin(pool)) {
				pool->prefork_done = true;
				pthread_cond_broadcast(&pool->cond);
			} else {
				again = true;
			}
		}
		make_room(pool);
		/* Eviction may have read faults (while it waited for an event):
		 * serve them now, for no message will wake the poll for them. */
		if (pool->nr_pending && !again)
			again = serve_pending(pool);
		again = again || pool->nr_pending;
		/* A fork() returns in the parent once the pool is within its
		 * budget again, or nothing more can be moved out for now. */
		if (pool->postfork && (pool->resident <= pool->limit || pool->stall_until)) {
			pool->postfork = false;
			pthread_cond_broadcast(&pool->cond);
		}
		timeout = again ? 1 : pool->stall_until ? (int)(RG_STALL_NS / 1000000) : -1;
		pthread_mutex_unlock(&pool->lock);
	}
	return NULL;
}

/* ---- fork ---- */

/* Before fork(): every pool brings its pages in and stops evicting, so that
 * the child, whose copies are not registered, reads the data (a pool
 * whose regions are not inherited, USWAP_REGION_NOFORK, goes on). */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&pools_lock);
	for (struct uswap_region_pool *p = pools_list; p; p = p->next) {
		if (p->flags & USWAP_REGION_NOFORK)
			continue;
		pthread_mutex_lock(&p->lock);
		p->prefork = true;
		p->prefork_done = false;
		kick(p);
		while (!p->prefork_done)
			pthread_cond_wait(&p->cond, &p->lock);
		p->st.forks++;
		pthread_mutex_unlock(&p->lock);
	}
}

/* After fork(), in the parent: evict again, and wait until each pool is
 * within its budget (pages shared with the child are unshared to be
 * moved: evict_batch()), so that the overshoot ends with the fork. */
static void atfork_parent(void)
{
	for (struct uswap_region_pool *p = pools_list; p; p = p->next) {
		if (p->flags & USWAP_REGION_NOFORK)
			continue;
		pthread_mutex_lock(&p->lock);
		p->prefork = false;
		p->postfork = true;
		p->stall_until = 0;
		kick(p);
		pthread_mutex_unlock(&p->lock);
	}
	for (struct uswap_region_pool *p = pools_list; p; p = p->next) {
		pthread_mutex_lock(&p->lock);
		while (p->postfork)
			pthread_cond_wait(&p->cond, &p->lock);
		pthread_mutex_unlock(&p->lock);
	}
	pthread_mutex_unlock(&pools_lock);
}

/* The child: no handler, no registration; its pools are inert. */
static void atfork_child(void)
{
	for (struct uswap_region_pool *p = pools_list; p; p = p->next) {
		pthread_mutex_init(&p->lock, NULL);
		pthread_cond_init(&p->cond, NULL);
		p->child = true;
		close(p->uffd);
		close(p->efd);
		if (p->pagemap >= 0)
			close(p->pagemap);
		p->uffd = p->efd = p->pagemap = -1;
	}
	pthread_mutex_init(&pools_lock, NULL);
}

static void atfork_register(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* ---- the API ---- */

static bool config_ok(const struct uswap_region_config *cfg)
{
	for (size_t i = 0; i < sizeof(cfg->__reserved) / sizeof(cfg->__reserved[0]); i++)
		if (cfg->__reserved[i])
			return false;
	if (cfg->budget_bytes < RG_MIN_BUDGET)
		return false;
	if (cfg->design && (!cfg->swap || (strcmp(cfg->design, "table") &&
					   strcmp(cfg->design, "legacy"))))
		return false;
	if (cfg->total_bytes && (cfg->total_bytes < RG_MIN_BUDGET || !cfg->swap))
		return false;
	return !(cfg->flags & ~(USWAP_REGION_NOFORK | USWAP_REGION_EVICT_FIFO));
}

/* Undo a partly made pool. Context: the pool's thread not started. */
static void pool_free(struct uswap_region_pool *pool)
{
	if (pool->mm)
		uswap_mm_destroy(pool->mm);
	if (pool->mem)
		uswap_mem_destroy(pool->mem);
	if (pool->swap_type >= 0)
		uswap_swapoff_type((unsigned int)pool->swap_type);
	/* Closed before the staging area is unmapped: its UNMAP event would
	 * wait for a reader that is gone. */
	if (pool->uffd >= 0)
		close(pool->uffd);
	if (pool->efd >= 0)
		close(pool->efd);
	if (pool->pagemap >= 0)
		close(pool->pagemap);
	pt_free(&pool->tab);
	rt_lru_free(&pool->lru);
	if (pool->staging)
		munmap(pool->staging - PAGE, (RG_BATCH + 2) * PAGE);
	pthread_mutex_destroy(&pool->lock);
	pthread_cond_destroy(&pool->cond);
	free(pool->pending);
	free(pool);
}

/** uswap_region_pool_create() - see uswap/region.h. */
USWAP_API int uswap_region_pool_create(const struct uswap_region_config *cfg,
				       struct uswap_region_pool **out)
{
	struct uswap_mem_config mc = { .budget_bytes = RG_MIRROR_MEM, .no_kswapd = true };
	struct uswap_region_pool *pool;
	char *m;
	int err;

	if (!cfg || !out || !config_ok(cfg))
		return -EINVAL;
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->cond, NULL);
	pool->swap_type = -1;
	pool->efd = pool->pagemap = -1;
	pool->budget = pool->limit = cfg->budget_bytes / PAGE;
	pool->total = cfg->total_bytes / PAGE;
	pool->flags = cfg->flags;
	pool->st.budget_pages = pool->budget;
	pool->st.total_pages = pool->total;
	pool->uffd = rt_uffd_open(O_CLOEXEC | O_NONBLOCK);
	if (pool->uffd < 0) {
		err = pool->uffd == -ENOSYS ? -EOPNOTSUPP : -EPERM;
		goto fail;
	}
	err = rt_uffd_api(pool->uffd, RG_REQUIRED | RG_OPTIONAL, &pool->features);
	if (err || (pool->features & RG_REQUIRED) != RG_REQUIRED) {
		err = -EOPNOTSUPP;
		goto fail;
	}
	err = -ENOMEM;
	if (pt_init(&pool->tab))
		goto fail;
	/* Written bits where the kernel has WP_ASYNC and pagemap can be read. */
	if (pool->features & UFFD_FEATURE_WP_ASYNC) {
		pool->pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
		pool->wp = pool->pagemap >= 0;
	}
	pool->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (pool->efd < 0)
		goto fail;
	/* Guard pages on both sides: the staging area never merges with a
	 * neighbour, so that registering it again never splits one. */
	m = mmap(NULL, (RG_BATCH + 2) * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		goto fail;
	pool->staging = m + PAGE;
	if (mprotect(pool->staging, RG_BATCH * PAGE, PROT_READ | PROT_WRITE) ||
	    (err = rg_register(pool, (uint64_t)(uintptr_t)pool->staging, RG_BATCH * PAGE)))
		goto fail;
	if (cfg->swap) {
		char why[256] = "";

		err = uswap_swapon_spec_design(cfg->swap, 0, cfg->design ? cfg->design : "table",
					       why, sizeof(why));
		if (err < 0)
			goto fail;
		pool->swap_type = err;
	}
	if ((err = uswap_mem_create(&mc, &pool->mem)) || (err = uswap_mm_create(pool->mem, &pool->mm)))
		goto fail;
	if ((err = -pthread_create(&pool->thread, NULL, handler_main, pool)))
		goto fail;
	pthread_once(&atfork_once, atfork_register);
	pthread_mutex_lock(&pools_lock);
	pool->next = pools_list;
	pools_list = pool;
	pthread_mutex_unlock(&pools_lock);
	*out = pool;
	return 0;
fail:
	pool_free(pool);
	return err;
}

/** uswap_region_pool_destroy() - see uswap/region.h. */
USWAP_API void uswap_region_pool_destroy(struct uswap_region_pool *pool)
{
	struct uswap_region_pool **pp;

	if (!pool)
		return;
	pthread_mutex_lock(&pools_lock);
	for (pp = &pools_list; *pp && *pp != pool; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = pool->next;
	pthread_mutex_unlock(&pools_lock);
	if (pool->child) {	/* plain memory now; the swap layer is the parent's */
		while (pool->regions) {
			struct rg_region *r = pool->regions;

			pool->regions = r->next;
			/* NOFORK: the child never had them; what is there now
			 * is the child's own. */
			if (!(pool->flags & USWAP_REGION_NOFORK))
				munmap((void *)(uintptr_t)r->start, r->npages * PAGE);
			free(r->state);
			free(r->shadow);
			free(r);
		}
		pt_free(&pool->tab);
		rt_lru_free(&pool->lru);
		free(pool->pending);
		free(pool);
		return;
	}
	/* Unregister first: a thread still waiting on a fault is woken, and
	 * the handler is never needed again. */
	pthread_mutex_lock(&pool->lock);
	for (struct rg_region *r = pool->regions; r; r = r->next)
		rt_uffd_unregister(pool->uffd, r->start, r->npages * PAGE);
	pool->stop = true;
	kick(pool);
	pthread_mutex_unlock(&pool->lock);
	pthread_join(pool->thread, NULL);
	while (pool->regions) {
		struct rg_region *r = pool->regions;
		uint64_t start = r->start, len = r->npages * PAGE;

		region_free(pool, r);
		munmap((void *)(uintptr_t)start, len);
	}
	pool_free(pool);
}

/** uswap_region_create() - see uswap/region.h. */
USWAP_API int uswap_region_create(struct uswap_region_pool *pool, uint64_t len, void **addr)
{
	struct rg_region *r;
	void *m;
	int err;

	if (!pool || !addr || !len || len > RG_MAX_LEN)
		return -EINVAL;
	if (pool->child)
		return -ECHILD;
	len = (len + PAGE - 1) & ~(PAGE - 1);
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->npages = r->mirror_pages = len / PAGE;
	r->state = calloc(r->npages, 1);
	r->shadow = calloc(r->npages, sizeof(*r->shadow));
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (!r->state || !r->shadow || m == MAP_FAILED) {
		err = -ENOMEM;
		goto fail;
	}
	r->start = (uint64_t)(uintptr_t)m;
	/* 4 KiB pages only: a huge page would be mapped around one copied in. */
	madvise(m, len, MADV_NOHUGEPAGE);
	if (pool->flags & USWAP_REGION_NOFORK)
		madvise(m, len, MADV_DONTFORK);
	pthread_mutex_lock(&pool->lock);
	err = uswap_mm_mmap(pool->mm, len, &r->mirror);
	if (!err && (err = rg_register(pool, r->start, len)))
		uswap_mm_munmap(pool->mm, r->mirror);
	if (!err) {
		r->id = ++pool->next_id;
		r->next = pool->regions;
		pool->regions = r;
		pool->st.regions++;
		pool->st.region_bytes += len;
	}
	pthread_mutex_unlock(&pool->lock);
	if (err)
		goto fail;
	*addr = m;
	return 0;
fail:
	if (m != MAP_FAILED)
		munmap(m, len);
	free(r->state);
	free(r->shadow);
	free(r);
	return err;
}

/** uswap_region_destroy() - see uswap/region.h. */
USWAP_API int uswap_region_destroy(struct uswap_region_pool *pool, void *addr)
{
	uint64_t a = (uint64_t)(uintptr_t)addr, len;
	struct rg_region *r;
	size_t j = 0;

	if (!pool)
		return -EINVAL;
	pthread_mutex_lock(&pool->lock);
	for (r = pool->regions; r && r->start != a; r = r->next)
		;
	if (!r) {
		pthread_mutex_unlock(&pool->lock);
		return -EINVAL;
	}
	len = r->npages * PAGE;
	if (!pool->child) {
		/* No event from here on; the waiters are woken. */
		rt_uffd_unregister(pool->uffd, a, len);
		for (size_t i = 0; i < pool->nr_pending; i++)
			if (pool->pending[i].addr < a || pool->pending[i].addr >= a + len)
				pool->pending[j++] = pool->pending[i];
		pool->nr_pending = j;
	}
	region_free(pool, r);
	pthread_mutex_unlock(&pool->lock);
	if (!pool->child || !(pool->flags & USWAP_REGION_NOFORK))
		munmap(addr, len);
	return 0;
}

/* The upper bound (us) of the bucket holding fraction @q of the faults. */
static uint64_t lat_quantile(const uint64_t *lat, double q)
{
	uint64_t total = 0, seen = 0;

	for (unsigned int b = 0; b < RG_LAT_BUCKETS; b++)
		total += lat[b];
	if (!total)
		return 0;
	for (unsigned int b = 0; b < RG_LAT_BUCKETS; b++) {
		seen += lat[b];
		if ((double)seen >= q * (double)total)
			return 2ULL << b;
	}
	return 0;
}

/** uswap_region_pool_stat() - see uswap/region.h. */
USWAP_API int uswap_region_pool_stat(struct uswap_region_pool *pool,
				     struct uswap_region_stat *st)
{
	if (!pool || !st)
		return -EINVAL;
	pthread_mutex_lock(&pool->lock);
	*st = pool->st;
	st->resident_pages = pool->resident;
	st->swapped_pages = pool->swapped;
	st->fault_p50_us = lat_quantile(pool->lat, 0.5);
	st->fault_p99_us = lat_quantile(pool->lat, 0.99);
	st->refaults = pool->lru_st.refaults;
	st->refaults_activated = pool->lru_st.activated;
	st->refault_ppm = pool->st.evicted ? pool->lru_st.refaults * 1000000 / pool->st.evicted : 0;
	pthread_mutex_unlock(&pool->lock);
	memset(st->__reserved, 0, sizeof(st->__reserved));
	return 0;
}
