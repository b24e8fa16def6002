/* SPDX-License-Identifier: MIT */
/*
 * The in-process mode (include/uswap/region.h; docs/RUNTIME.md, "The
 * in-process mode"): regions of the caller's memory under a budget, one
 * handler thread and one pager space per pool.
 *
 * Locking: pool->lock protects everything of a pool; the handler holds it
 * while it serves a round, the API calls while they change the regions.
 * Nothing is done under it that can wait for the handler: no access to a
 * registered page, no madvise or munmap of a registered range (the events
 * are synchronous). pools_lock (outer) protects the list of pools, for
 * fork.
 */
#include "runtime/region_internal.h"
#include "util/alloc.h"

static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uswap_region_pool *pools_list;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* ---- fork ---- */

/* Before fork(): every pool but NOFORK ones brings its pages in and stops
 * evicting (the child's copies are not registered). */
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
 * within its budget, so that the overshoot ends with the fork. */
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
		if (p->pg.pagemap >= 0)
			close(p->pg.pagemap);
		p->uffd = p->efd = p->pg.pagemap = -1;
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
	if (pool->pg_ready) {
		if (pool->pg.pagemap >= 0)
			close(pool->pg.pagemap);
		pager_destroy(&pool->pg);
		pg_tree_fini(&pool->tree);
	}
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
		munmap(pool->staging - PAGE, (PG_BATCH + 2) * PAGE);
	pthread_mutex_destroy(&pool->lock);
	pthread_cond_destroy(&pool->cond);
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
	pool = uswap_calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->cond, NULL);
	pool->swap_type = -1;
	pool->efd = -1;
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
	pool->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (pool->efd < 0)
		goto fail;
	/* Guard pages on both sides: the staging area never merges with a
	 * neighbour, so that registering it again never splits one. */
	if ((err = uswap_mem_create(&mc, &pool->mem)) ||
	    (err = pg_tree_init(&pool->tree, pool->mem, pool->budget,
				cfg->flags & USWAP_REGION_EVICT_FIFO ? RT_EVICT_FIFO : RT_EVICT_LRU)))
		goto fail;
	if ((err = pager_init(&pool->pg, &pool->tree, &rg_pager_ops, pool))) {
		pg_tree_fini(&pool->tree);
		goto fail;
	}
	pool->pg_ready = true;
	/* Written bits where the kernel has WP_ASYNC and pagemap can be read. */
	if (pool->features & UFFD_FEATURE_WP_ASYNC) {
		pool->pg.pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
		pool->pg.wp = pool->pg.pagemap >= 0;
	}
	err = -ENOMEM;
	m = mmap(NULL, (PG_BATCH + 2) * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		goto fail;
	pool->staging = m + PAGE;
	if (mprotect(pool->staging, PG_BATCH * PAGE, PROT_READ | PROT_WRITE) ||
	    (err = rg_register(pool, (uint64_t)(uintptr_t)pool->staging, PG_BATCH * PAGE)))
		goto fail;
	if (cfg->swap) {
		char why[256] = "";

		err = uswap_swapon_spec_design(cfg->swap, 0, cfg->design ? cfg->design : "table",
					       why, sizeof(why));
		if (err < 0)
			goto fail;
		pool->swap_type = err;
	}
	if ((err = -pthread_create(&pool->thread, NULL, rg_handler_main, pool)))
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
			/* NOFORK: what is there is the child's own */
			if (!(pool->flags & USWAP_REGION_NOFORK))
				munmap((void *)(uintptr_t)r->start, r->npages * PAGE);
			free(r);
		}
		/* the pager's memory; the mm layer is not called here */
		pt_free(&pool->pg.tab);
		pt_free(&pool->pg.passed);
		rt_lru_free(&pool->pg.lru);
		fifo_free(&pool->pg.evict_first);
		rt_ranges_free(&pool->pg.ranges);
		free(pool->pg.pending);
		free(pool->pg.free_idx);
		free(pool->pg.dbg_nz);
		free(pool->tree.buf);
		free(pool);
		return;
	}
	/* unregister first: waiters woken, the handler not needed again */
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

		rg_region_free(pool, r);
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
	r = uswap_calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->npages = len / PAGE;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (m == MAP_FAILED) {
		err = -ENOMEM;
		goto fail;
	}
	r->start = (uint64_t)(uintptr_t)m;
	/* 4 KiB pages only: a huge page would be mapped around one copied in. */
	madvise(m, len, MADV_NOHUGEPAGE);
	if (pool->flags & USWAP_REGION_NOFORK)
		madvise(m, len, MADV_DONTFORK);
	pthread_mutex_lock(&pool->lock);
	err = rt_ranges_add(&pool->pg.ranges, r->start, r->start + len);
	if (!err && (err = rg_register(pool, r->start, len)))
		rt_ranges_sub(&pool->pg.ranges, r->start, r->start + len);
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
	free(r);
	return err;
}

/** uswap_region_destroy() - see uswap/region.h. */
USWAP_API int uswap_region_destroy(struct uswap_region_pool *pool, void *addr)
{
	uint64_t a = (uint64_t)(uintptr_t)addr, len;
	struct rg_region *r;

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
		pager_forget_pending(&pool->pg, a, a + len);
	}
	rg_region_free(pool, r);
	pthread_mutex_unlock(&pool->lock);
	if (!pool->child || !(pool->flags & USWAP_REGION_NOFORK))
		munmap(addr, len);
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
	st->resident_pages = pool->tree.resident;
	st->swapped_pages = pool->pg.nr_swapped;
	st->peak_resident_pages = pool->tree.st.peak_resident;
	st->zero_fills = pool->tree.st.zero_fills;
	st->zero_pages = pool->tree.st.zero_pages;
	st->swapins = pool->tree.st.swapins;
	st->prefetched = pool->tree.st.prefetched;
	st->evict_batches = pool->tree.st.evict_batches;
	st->evicted = pool->tree.st.evicted;
	st->evict_busy = pool->tree.st.evict_busy;
	st->poisoned = pool->tree.st.poisoned;
	st->written = pool->tree.lru_st.written;
	st->fault_p50_us = rt_lat_pct(pool->lat, RG_LAT_BUCKETS, 50);
	st->fault_p99_us = rt_lat_pct(pool->lat, RG_LAT_BUCKETS, 99);
	st->refaults = pool->tree.lru_st.refaults;
	st->refaults_activated = pool->tree.lru_st.activated;
	st->refault_ppm = st->evicted ? st->refaults * 1000000 / st->evicted : 0;
	pthread_mutex_unlock(&pool->lock);
	memset(st->__reserved, 0, sizeof(st->__reserved));
	return 0;
}
