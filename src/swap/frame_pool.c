/* SPDX-License-Identifier: MIT */
/*
 * The frame pool: emulated RAM. A buddy allocator over nr_frames page
 * frames hands out naturally aligned runs of 2^order frames (folios).
 *
 * Each pool owns the global PFN range [id << 28, (id + 1) << 28), so a PFN
 * stored in a swap table entry names one frame of one pool; pfn_folio()
 * reads the pool registry without a lock. A pool is destroyed only once
 * all its folios are free, after which no table holds its PFNs; but a
 * lockless lookup may have read a PFN just before and be about to take a
 * reference on its folio. So destroy unregisters the pool and frees it, and
 * gives its id (its PFN range) back, only after an RCU grace period: a
 * lookup that read the PFN in a read section finds the folio struct still
 * there and free, and no new reader can read that PFN any more.
 *
 * Locking: pool->lock (spinlock) protects the free lists and PG_buddy /
 * buddy_order of free runs. pool_registry_lock protects registry changes
 * and pool_retiring.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "swap/folio_internal.h"
#include "util/alloc.h"

static _Atomic(struct uswap_frame_pool *) pool_registry[POOL_MAX];
static pthread_mutex_t pool_registry_lock = PTHREAD_MUTEX_INITIALIZER;
/*
 * Ids of destroyed pools whose grace period has not been seen to end: not
 * reused until the pool's free callback runs, or until a create that finds
 * no other id has waited for a grace period itself. pool_retired counts
 * the retirements of each id, so that a late callback cannot release the
 * id of a later retirement.
 */
static bool pool_retiring[POOL_MAX];
static uint64_t pool_retired[POOL_MAX];

/** pfn_folio() - the folio struct of frame pfn, or NULL. Context: lockless. */
struct folio *pfn_folio(uint64_t pfn)
{
	uint64_t id = pfn >> POOL_PFN_SHIFT;
	struct uswap_frame_pool *pool;

	if (id >= POOL_MAX)
		return NULL;
	pool = atomic_load_explicit(&pool_registry[id], memory_order_acquire);
	if (!pool || pfn - pool->base_pfn >= pool->nr_frames)
		return NULL;
	return &pool->folios[pfn - pool->base_pfn];
}

static void pool_push(struct uswap_frame_pool *pool, size_t idx, unsigned int order)
{
	struct folio *f = &pool->folios[idx];

	f->buddy_order = (uint8_t)order;
	folio_set_flag(f, PG_buddy);
	cds_list_add(&f->lru, &pool->free_list[order]);
}

static void pool_unlink(struct folio *f)
{
	cds_list_del(&f->lru);
	folio_clear_flag(f, PG_buddy);
}

/** uswap_frame_pool_create() - see uswap/folio.h. Context: may sleep. */
USWAP_API int uswap_frame_pool_create(size_t nr_frames, struct uswap_frame_pool **out)
{
	struct uswap_frame_pool *pool;
	unsigned int id, o;
	bool retry;
	size_t idx;

	if (!nr_frames || nr_frames > (1ULL << POOL_PFN_SHIFT) || !out)
		return -EINVAL;
	pool = uswap_calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	pool->nr_frames = nr_frames;
	pool->mem = mmap(NULL, nr_frames << USWAP_PAGE_SHIFT, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (pool->mem == MAP_FAILED) {
		free(pool);
		return -ENOMEM;
	}
	/* The frames hold other processes' pages (uswap run): never in a
	 * core dump of ours (docs/SECURITY.md). */
	madvise(pool->mem, nr_frames << USWAP_PAGE_SHIFT, MADV_DONTDUMP);
	pool->folios = uswap_calloc(nr_frames, sizeof(*pool->folios));
	if (!pool->folios) {
		munmap(pool->mem, nr_frames << USWAP_PAGE_SHIFT);
		free(pool);
		return -ENOMEM;
	}
	uswap_spin_init(&pool->lock);
	for (o = 0; o <= USWAP_MAX_ORDER; o++)
		CDS_INIT_LIST_HEAD(&pool->free_list[o]);

	pthread_mutex_lock(&pool_registry_lock);
	for (retry = true;; retry = false) {
		unsigned int retiring = POOL_MAX;
		uint64_t gen;

		for (id = 0; id < POOL_MAX; id++) {
			if (atomic_load_explicit(&pool_registry[id], memory_order_relaxed))
				continue;
			if (!pool_retiring[id])
				break;
			retiring = id;
		}
		if (id < POOL_MAX || retiring == POOL_MAX || !retry)
			break;
		/*
		 * Every free id waits for a grace period: wait for one. Once it
		 * has ended nobody reads a PFN of a pool retired before it, so
		 * that id can be reused even if its pool is not freed yet.
		 */
		gen = pool_retired[retiring];
		pthread_mutex_unlock(&pool_registry_lock);
		uswap_synchronize_rcu();
		pthread_mutex_lock(&pool_registry_lock);
		if (!atomic_load_explicit(&pool_registry[retiring], memory_order_relaxed) &&
		    (!pool_retiring[retiring] || pool_retired[retiring] == gen)) {
			pool_retiring[retiring] = false;
			id = retiring;
			break;
		}
	}
	if (id == POOL_MAX) {
		pthread_mutex_unlock(&pool_registry_lock);
		uswap_spin_destroy(&pool->lock);
		free(pool->folios);
		munmap(pool->mem, nr_frames << USWAP_PAGE_SHIFT);
		free(pool);
		return -ENOSPC;
	}
	pool->id = id;
	pool->base_pfn = (uint64_t)id << POOL_PFN_SHIFT;
	for (idx = 0; idx < nr_frames; idx++) {
		struct folio *f = &pool->folios[idx];

		f->pfn = pool->base_pfn + idx;
		f->pool = pool;
		CDS_INIT_LIST_HEAD(&f->lru);
	}
	/* Seed the free lists with the largest aligned runs that fit. */
	for (idx = 0; idx < nr_frames;) {
		o = USWAP_MAX_ORDER;
		while ((idx & ((1UL << o) - 1)) || idx + (1UL << o) > nr_frames)
			o--;
		pool_push(pool, idx, o);
		idx += 1UL << o;
	}
	atomic_store(&pool->nr_free, nr_frames);
	atomic_store_explicit(&pool_registry[id], pool, memory_order_release);
	pthread_mutex_unlock(&pool_registry_lock);
	*out = pool;
	return 0;
}

static void frame_pool_free_rcu(struct rcu_head *head)
{
	struct uswap_frame_pool *pool = caa_container_of(head, struct uswap_frame_pool, rcu);

	uswap_rcu_tsan_acquire();
	uswap_spin_destroy(&pool->lock);
	munmap(pool->mem, pool->nr_frames << USWAP_PAGE_SHIFT);
	free(pool->folios);
	pthread_mutex_lock(&pool_registry_lock);
	if (pool_retired[pool->id] == pool->retire_gen)
		pool_retiring[pool->id] = false;
	pthread_mutex_unlock(&pool_registry_lock);
	free(pool);
}

/**
 * uswap_frame_pool_destroy() - unregister the pool now; unmap and free it,
 * and let a new pool take its id, after an RCU grace period.
 * Context: any; does not wait.
 */
USWAP_API void uswap_frame_pool_destroy(struct uswap_frame_pool *pool)
{
	if (!pool)
		return;
	USWAP_BUG_ON(atomic_load(&pool->nr_free) != pool->nr_frames);
	pthread_mutex_lock(&pool_registry_lock);
	atomic_store_explicit(&pool_registry[pool->id], NULL, memory_order_release);
	pool_retiring[pool->id] = true;
	pool->retire_gen = ++pool_retired[pool->id];
	pthread_mutex_unlock(&pool_registry_lock);
	uswap_call_rcu(&pool->rcu, frame_pool_free_rcu);
}

USWAP_API size_t uswap_frame_pool_free_frames(const struct uswap_frame_pool *pool)
{
	return atomic_load_explicit(&pool->nr_free, memory_order_relaxed);
}

USWAP_API size_t uswap_frame_pool_nr_frames(const struct uswap_frame_pool *pool)
{
	return pool->nr_frames;
}

/** uswap_folio_alloc() - take an aligned run. Context: takes pool->lock. */
USWAP_API struct folio *uswap_folio_alloc(struct uswap_frame_pool *pool, unsigned int order)
{
	struct folio *f = NULL;
	unsigned int o;
	size_t idx;

	if (order > USWAP_MAX_ORDER)
		return NULL;
	uswap_spin_lock(&pool->lock);
	for (o = order; o <= USWAP_MAX_ORDER; o++)
		if (!cds_list_empty(&pool->free_list[o]))
			break;
	if (o > USWAP_MAX_ORDER) {
		uswap_spin_unlock(&pool->lock);
		return NULL;
	}
	f = cds_list_first_entry(&pool->free_list[o], struct folio, lru);
	pool_unlink(f);
	idx = f->pfn - pool->base_pfn;
	/* Split: give back the upper halves. */
	while (o > order) {
		o--;
		pool_push(pool, idx + (1UL << o), o);
	}
	atomic_fetch_sub_explicit(&pool->nr_free, 1UL << order, memory_order_relaxed);
	uswap_spin_unlock(&pool->lock);

	f->order = (uint8_t)order;
	for (o = 0; o < (1U << order); o++)
		pool->folios[idx + o].head = f;
	atomic_store_explicit(&f->flags, 0, memory_order_relaxed);
	atomic_store_explicit(&f->lockword, 0, memory_order_relaxed);
	atomic_store_explicit(&f->mapcount, 0, memory_order_relaxed);
	f->swap.val = 0;
	folio_set_memcg_id(f, 0);
	f->mapping = NULL;
	f->index = 0;
	f->private = NULL;
	CDS_INIT_LIST_HEAD(&f->lru);
	atomic_store_explicit(&f->refcount, 1, memory_order_release);
	return f;
}

/** uswap_folio_split_frames() - see folio.h. Context: folio locked. */
void uswap_folio_split_frames(struct folio *folio)
{
	unsigned long nr = 1UL << folio->order, i;
	uint32_t flags = atomic_load(&folio->flags) & ~(1U << PG_lru);

	for (i = 1; i < nr; i++) {
		struct folio *t = folio + i;

		t->order = 0;
		t->head = t;
		atomic_store(&t->flags, flags);
		atomic_store(&t->lockword, 1);
		atomic_store(&t->mapcount, 0);
		atomic_store(&t->refcount, 0);
		t->swap.val = 0;
		folio_set_memcg_id(t, folio_memcg_id(folio));	/* split_page_memcg(): pieces keep the group */
		t->mapping = folio->mapping;
		t->index = folio->index + i;
		t->private = NULL;
		CDS_INIT_LIST_HEAD(&t->lru);
	}
	folio->order = 0;
}

/**
 * uswap_frame_pool_free_folio() - return a folio's run, merging buddies,
 * after the pool's free_hook (if any) has seen the folio.
 * Context: called by folio_put() on the last reference; takes pool->lock.
 */
void uswap_frame_pool_free_folio(struct folio *folio)
{
	struct uswap_frame_pool *pool = folio->pool;
	size_t idx = folio->pfn - pool->base_pfn;
	unsigned int order = folio->order;

	if (pool->free_hook)
		pool->free_hook(folio);
	uswap_spin_lock(&pool->lock);
	atomic_fetch_add_explicit(&pool->nr_free, 1UL << order, memory_order_relaxed);
	while (order < USWAP_MAX_ORDER) {
		size_t buddy = idx ^ (1UL << order);
		struct folio *b;

		if (buddy + (1UL << order) > pool->nr_frames)
			break;
		b = &pool->folios[buddy];
		if (!folio_test_flag(b, PG_buddy) || b->buddy_order != order)
			break;
		pool_unlink(b);
		idx &= ~(1UL << order);
		order++;
	}
	pool_push(pool, idx, order);
	uswap_spin_unlock(&pool->lock);
}
