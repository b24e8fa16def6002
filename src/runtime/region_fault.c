/* SPDX-License-Identifier: MIT */
/* The in-process mode: the handler thread and its faults (docs/RUNTIME.md). */
#include "runtime/region_internal.h"

/* The pager's copies, wake-ups and poisons go to the pool's uffd. */
static int ops_copy(void *arg, uint64_t dst, const void *src, uint64_t len, uint64_t *done)
{
	struct uswap_region_pool *pool = arg;

	return rt_uffd_copy(pool->uffd, dst, src, len, done);
}

static void ops_wake(void *arg, uint64_t addr)
{
	struct uswap_region_pool *pool = arg;

	rt_uffd_wake(pool->uffd, addr, PAGE);
}

static int ops_poison(void *arg, uint64_t addr)
{
	struct uswap_region_pool *pool = arg;

	return rt_uffd_poison(pool->uffd, addr, PAGE);
}

const struct pg_ops rg_pager_ops = { ops_copy, ops_wake, ops_poison, NULL, NULL };

/* The VMA holding @addr, from /proc/self/maps. Return: 0, -ENOENT. */
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
 * A fault at @addr past a region's end, in its VMA: mremap() grew it (no
 * event says so). The region and its range take the VMA up to the next
 * region. Context: handler, pool->lock held. Return: the region, or NULL.
 */
static struct rg_region *region_grow(struct uswap_region_pool *pool, uint64_t addr)
{
	struct rg_region *r = NULL;
	uint64_t vs, ve, end, np;

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
	if (rt_ranges_add(&pool->pg.ranges, r->start + r->npages * PAGE, end))
		return NULL;
	pool->st.region_bytes += (np - r->npages) * PAGE;
	r->npages = np;
	return r;
}

/* Serve the fault at @addr. Return: 0 done, -EAGAIN/-EBUSY keep it waiting. */
static int serve_fault(void *arg, uint64_t addr)
{
	struct uswap_region_pool *pool = arg;
	struct rg_region *r = region_of(pool, addr);
	uint64_t room;
	int err;

	if (!r)
		r = region_grow(pool, addr);
	if (!r) {	/* destroyed or unmapped meanwhile */
		rt_uffd_wake(pool->uffd, addr, PAGE);
		return 0;
	}
	rg_make_room(pool);
	if (!region_of(pool, addr)) {	/* eviction may have read an UNMAP */
		rt_uffd_wake(pool->uffd, addr, PAGE);
		return 0;
	}
	/* A run as long as the budget leaves room for (make_room() left at
	 * least a zero run's), capped by the pager. */
	room = pool->prefork ? PG_RUN : pool->limit > pool->tree.resident ?
	       pool->limit - pool->tree.resident : 1;
	err = pager_serve(&pool->pg, addr, room);
	if (err == -EAGAIN || err == -EBUSY)
		return err;
	if (err == -EHWPOISON) {
		fprintf(stderr, "uswap: region page 0x%llx cannot be read back: SIGBUS on access\n",
			(unsigned long long)addr);
	} else if (err) {	/* never let the thread read zeros instead */
		fprintf(stderr, "uswap: region page 0x%llx cannot be read back (%s): aborting\n",
			(unsigned long long)addr, strerror(-err));
		abort();
	}
	peak_total(pool);
	return 0;
}

static void count_latency(void *arg, uint64_t t0)
{
	struct uswap_region_pool *pool = arg;

	pool->lat[rt_lat_bucket(t0, RG_LAT_BUCKETS)]++;
}

/* Serve the faults read that can be. Return: true if some wait still. */
static bool serve_pending(struct uswap_region_pool *pool)
{
	bool left = pager_retry(&pool->pg, serve_fault, pool, count_latency) != 0;

	if (USWAP_DEBUG >= 2) {	/* the pool's one space is its tree */
		pager_check(&pool->pg);
		pager_check_present(&pool->pg);
		pager_check_tree(&pool->tree, pool->pg.nr_resident, pool->pg.nr_unevictable,
				 PG_OUT(&pool->pg));
	}
	return left;
}

/* A fork is being prepared: bring every page in. Return: true when done. */
static bool prefork_swapin(struct uswap_region_pool *pool)
{
	int err = pager_swapin_all(&pool->pg);

	if (err && err != -EAGAIN) {	/* never let the child read zeros instead */
		fprintf(stderr, "uswap: a region page cannot be read back before fork (%s): "
			"aborting\n", strerror(-err));
		abort();
	}
	return !err;
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
		/* faults eviction read: no message will wake the poll for them */
		if (pool->pg.nr_pending && !again)
			again = serve_pending(pool);
		again = again || pool->pg.nr_pending;
		/* fork() returns in the parent once within budget, or stalled */
		if (pool->postfork && (pool->tree.resident <= pool->limit || pool->stall_until)) {
			pool->postfork = false;
			pthread_cond_broadcast(&pool->cond);
		}
		timeout = again ? 1 : pool->stall_until ? (int)(RG_STALL_NS / 1000000) : -1;
		pthread_mutex_unlock(&pool->lock);
	}
	return NULL;
}
