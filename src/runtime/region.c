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
#include "runtime/region_internal.h"

static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uswap_region_pool *pools_list;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

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
 * moved: rg_evict_batch()), so that the overshoot ends with the fork. */
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
	rg_region_free(pool, r);
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
