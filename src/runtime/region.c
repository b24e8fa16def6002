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
 * offsets.
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

#include "runtime/uffd_ops.h"

#define PAGE		RT_UFFD_PAGE
#define RG_RUN		16		/* pages per fault: zero-fill and prefetch runs */
#define RG_BATCH	64		/* pages per eviction batch */
#define RG_HEADROOM	32		/* pages evicted below the budget per batch */
#define RG_MIN_BUDGET	(64ULL << 10)
#define RG_MAX_LEN	(64ULL << 30)
#define RG_MIRROR_MEM	(1ULL << 20)	/* the mirror's frames: pages in transit */
#define RG_STALL_NS	10000000ULL	/* eviction retried after a futile batch */
#define RG_LAT_BUCKETS	32		/* bucket b: service time in [2^b, 2^(b+1)) us */

#define RG_REQUIRED	(UFFD_FEATURE_MOVE | UFFD_FEATURE_EVENT_REMOVE | UFFD_FEATURE_EVENT_UNMAP)
#define RG_OPTIONAL	(UFFD_FEATURE_EVENT_REMAP | UFFD_FEATURE_POISON)

enum rg_state {
	RG_ABSENT = 0,	/* never touched, or dropped: reads as zeros */
	RG_RESIDENT,	/* present in the region */
	RG_MOVING,	/* moved into the staging area, in the batch being evicted */
	RG_SWAPPED,	/* in the mirror at the same offset */
};

struct rg_region {
	struct rg_region *next;
	uint64_t start, npages;
	uint64_t mirror;		/* its mapping in the mirror mm */
	uint8_t *state;			/* enum rg_state per page */
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
	uint64_t features;
	struct uswap_mem *mem;
	struct uswap_mm *mm;		/* the mirror */
	int swap_type;			/* the pool's own device, or -1 */
	char *staging;			/* RG_BATCH pages between two guard pages */
	struct rg_region *regions;
	struct rg_region *hand_r;	/* the eviction clock: region and page */
	uint64_t hand;
	uint64_t budget, resident, swapped, ra_next;
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

static void set_resident(struct uswap_region_pool *pool, struct rg_region *r, uint64_t i)
{
	r->state[i] = RG_RESIDENT;
	if (++pool->resident > pool->st.peak_resident_pages)
		pool->st.peak_resident_pages = pool->resident;
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
				pool->resident--;
			}
			r->state[i] = RG_ABSENT;
		}
	}
}

/* Free a region's bookkeeping and its mirror. Context: pool->lock held. */
static void region_free(struct uswap_region_pool *pool, struct rg_region *r)
{
	struct rg_region **pp;

	for (pp = &pool->regions; *pp && *pp != r; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = r->next;
	if (pool->hand_r == r) {
		pool->hand_r = NULL;
		pool->hand = 0;
	}
	for (uint64_t i = 0; i < r->npages; i++) {
		if (r->state[i] == RG_SWAPPED)
			pool->swapped--;
		else if (r->state[i] != RG_ABSENT)
			pool->resident--;
	}
	if (!pool->child)
		uswap_mm_munmap(pool->mm, r->mirror);
	pool->st.regions--;
	pool->st.region_bytes -= r->npages * PAGE;
	free(r->state);
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
					nx = r->next;
					if (a <= r->start && r->start + r->npages * PAGE <= b)
						region_free(pool, r);
				}
				break;
			}
			case UFFD_EVENT_REMAP:
				fprintf(stderr, "uswap: a region at 0x%llx was moved by mremap(), which "
					"regions do not support: aborting rather than lose its "
					"swapped pages\n", (unsigned long long)m->arg.remap.from);
				abort();
			default:
				break;
			}
		}
	}
}

/* ---- eviction ---- */

/* Empty the staging area: unregistered first, so that no REMOVE event
 * (which this thread would have to read itself) is raised. */
static void staging_clear(struct uswap_region_pool *pool)
{
	uint64_t s = (uint64_t)(uintptr_t)pool->staging;

	rt_uffd_unregister(pool->uffd, s, RG_BATCH * PAGE);
	madvise(pool->staging, RG_BATCH * PAGE, MADV_DONTNEED);
	if (rt_uffd_register(pool->uffd, s, RG_BATCH * PAGE)) {
		fprintf(stderr, "uswap: cannot register a region pool's staging area again\n");
		abort();
	}
}

/*
 * Put a moved page whose bytes could not be stored back where it was.
 * Context: handler, pool->lock held.
 */
static void evict_undo(struct uswap_region_pool *pool, uint64_t addr, const char *bytes)
{
	for (;;) {
		struct rg_region *r = region_of(pool, addr);
		uint64_t i, done;
		int err;

		if (!r || r->state[(addr - r->start) / PAGE] != RG_MOVING)
			return;		/* dropped meanwhile: zeros, as asked */
		i = (addr - r->start) / PAGE;
		err = rt_uffd_copy(pool->uffd, addr, bytes, PAGE, &done);
		if (!err || err == -EEXIST || (err != -EAGAIN && done == 0)) {
			r->state[i] = RG_RESIDENT;	/* counted resident still */
			return;
		}
		read_msgs(pool);	/* EAGAIN: an event is pending */
		usleep(20);
	}
}

/*
 * Move up to @want resident pages (<= RG_BATCH) out, by the clock, and
 * store them in the mirror. *@again is set when a pending event stopped it.
 * Return: the pages evicted. Context: handler, pool->lock held.
 */
static uint64_t evict_batch(struct uswap_region_pool *pool, uint64_t want, bool *again)
{
	struct rg_region *rr[RG_BATCH];
	uint64_t idx[RG_BATCH], addr[RG_BATCH], scanned = 0;
	uint64_t total = pool->st.region_bytes / PAGE;
	bool moved[RG_BATCH] = { false };
	uint64_t n = 0, evicted = 0;
	bool any = false;

	if (want > RG_BATCH)
		want = RG_BATCH;
	/* Pick: the clock over the regions' pages, in address order. */
	while (n < want && scanned < total && pool->regions) {
		struct rg_region *r = pool->hand_r ? pool->hand_r : pool->regions;

		if (pool->hand >= r->npages) {
			pool->hand_r = r->next ? r->next : pool->regions;
			pool->hand = 0;
			continue;
		}
		pool->hand_r = r;
		if (r->state[pool->hand] == RG_RESIDENT) {
			rr[n] = r;
			idx[n++] = pool->hand;
		}
		pool->hand++;
		scanned++;
	}
	/* Move, in runs of neighbouring pages. */
	for (uint64_t s = 0; s < n;) {
		uint64_t c = 1, done;
		int err;

		while (s + c < n && rr[s + c] == rr[s] && idx[s + c] == idx[s] + c)
			c++;
		err = rt_uffd_move(pool->uffd, (uint64_t)(uintptr_t)pool->staging + s * PAGE,
				   rr[s]->start + idx[s] * PAGE, c * PAGE, 0, &done);
		done /= PAGE;
		for (uint64_t k = 0; k < done; k++) {
			moved[s + k] = true;
			rr[s + k]->state[idx[s + k]] = RG_MOVING;
			any = true;
		}
		if (!err) {
			s += c;
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
		if (err == -EBUSY)
			pool->st.evict_busy++;	/* shared copy-on-write: stays resident */
		if (err == -ENOENT) {	/* not present: dropped without an event seen */
			rr[s + done]->state[idx[s + done]] = RG_ABSENT;
			pool->resident--;
		}
		s += done + 1;
	}
	for (uint64_t s = 0; s < n; s++)
		addr[s] = rr[s]->start + idx[s] * PAGE;
	/* Store what moved; what cannot be stored goes back. evict_undo()
	 * reads events, which may free a region: look each one up again. */
	for (uint64_t s = 0; s < n; s++) {
		struct rg_region *r = moved[s] ? region_of(pool, addr[s]) : NULL;
		const char *bytes = pool->staging + s * PAGE;

		if (!r || r->state[idx[s]] != RG_MOVING)
			continue;	/* dropped meanwhile: the bytes go */
		if (uswap_mm_write(pool->mm, r->mirror + idx[s] * PAGE, bytes, PAGE)) {
			pool->st.evict_failed++;
			evict_undo(pool, addr[s], bytes);
			continue;
		}
		r->state[idx[s]] = RG_SWAPPED;
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
	uint64_t head = pool->budget / 4 < RG_HEADROOM ? pool->budget / 4 : RG_HEADROOM;

	int tries = 0;

	if (pool->stall_until && now_ns() < pool->stall_until)
		return;		/* the last batch moved nothing */
	pool->stall_until = 0;
	while (!pool->prefork && pool->resident + RG_RUN > pool->budget) {
		uint64_t want = pool->resident + RG_RUN + head - pool->budget;
		bool again = false;

		if (evict_batch(pool, want, &again))
			continue;
		if (again && tries++ < 500) {
			/* An event is pending (a madvise or munmap of the
			 * program): read it, let its thread go on, retry. */
			read_msgs(pool);
			usleep(20);
			continue;
		}
		/* Nothing evictable now (pages shared with a forked child
		 * until written): over budget, seen in the peak; the handler
		 * tries again in RG_STALL_NS. */
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
			set_resident(pool, r, i + k);
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
		for (uint64_t k = 0; k < done; k++)
			set_resident(pool, r, i + k);
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

/* Serve the fault at @addr. Return: 0 done, -EAGAIN keep it pending. */
static int serve_fault(struct uswap_region_pool *pool, uint64_t addr)
{
	struct rg_region *r = region_of(pool, addr);
	uint64_t i, room;

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
	room = pool->prefork || pool->resident + RG_RUN <= pool->budget ? RG_RUN : 1;
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

	for (;;) {
		struct pollfd p[2] = { { .fd = pool->uffd, .events = POLLIN },
				       { .fd = pool->efd, .events = POLLIN } };
		uint64_t v;

		int timeout = again ? 1 : pool->stall_until ? (int)(RG_STALL_NS / 1000000) : -1;

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
		pthread_mutex_unlock(&pool->lock);
	}
	return NULL;
}

/* ---- fork ---- */

/* Before fork(): every pool brings its pages in and stops evicting, so that
 * the child, whose copies are not registered, reads the data. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&pools_lock);
	for (struct uswap_region_pool *p = pools_list; p; p = p->next) {
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

static void atfork_parent(void)
{
	for (struct uswap_region_pool *p = pools_list; p; p = p->next) {
		pthread_mutex_lock(&p->lock);
		p->prefork = false;
		kick(p);
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
		p->uffd = p->efd = -1;
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
	return true;
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
	pool->efd = -1;
	pool->budget = cfg->budget_bytes / PAGE;
	pool->st.budget_pages = pool->budget;
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
	    (err = rt_uffd_register(pool->uffd, (uint64_t)(uintptr_t)pool->staging,
				    RG_BATCH * PAGE)))
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
			munmap((void *)(uintptr_t)r->start, r->npages * PAGE);
			free(r->state);
			free(r);
		}
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
	r->npages = len / PAGE;
	r->state = calloc(r->npages, 1);
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (!r->state || m == MAP_FAILED) {
		err = -ENOMEM;
		goto fail;
	}
	r->start = (uint64_t)(uintptr_t)m;
	/* 4 KiB pages only: a huge page would be mapped around one copied in. */
	madvise(m, len, MADV_NOHUGEPAGE);
	pthread_mutex_lock(&pool->lock);
	err = uswap_mm_mmap(pool->mm, len, &r->mirror);
	if (!err && (err = rt_uffd_register(pool->uffd, r->start, len)))
		uswap_mm_munmap(pool->mm, r->mirror);
	if (!err) {
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
	pthread_mutex_unlock(&pool->lock);
	memset(st->__reserved, 0, sizeof(st->__reserved));
	return 0;
}
