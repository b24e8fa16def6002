/* SPDX-License-Identifier: MIT */
/*
 * The in-process mode: the handler thread, its faults (zero runs, swap-in
 * runs with sequential prefetch) and its latency counts (docs/RUNTIME.md).
 */
#include "runtime/region_internal.h"

/* First touches are served from these: a run of zeros. */
static const char rg_zeros[RG_RUN * PAGE];


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
	err = rt_uffd_copy(pool->uffd, r->start + i * PAGE, rg_zeros, n * PAGE, &done);
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
	rg_make_room(pool);
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
	pool->lat[rt_lat_bucket(t0, RG_LAT_BUCKETS)]++;
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
void *rg_handler_main(void *arg)
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
		rg_read_msgs(pool);
		again = serve_pending(pool);
		if (pool->prefork && !pool->prefork_done) {
			if (prefork_swapin(pool)) {
				pool->prefork_done = true;
				pthread_cond_broadcast(&pool->cond);
			} else {
				again = true;
			}
		}
		rg_make_room(pool);
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
