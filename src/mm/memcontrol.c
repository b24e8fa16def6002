/* SPDX-License-Identifier: MIT */
/*
 * Memory cgroups of a budget (the kernel's mm/memcontrol.c, flat: no
 * hierarchy). A group has a memory counter (memory.current / memory.max),
 * charged by the folios the mm allocates or swaps in for it, and a swap
 * counter, the swap layer's group of the same id (memory.swap.*), charged
 * by folio_alloc_swap() through the folio's memcg id.
 *
 * Charging: a charge that would go over memory.max first reclaims from the
 * group (try_to_free_mem_cgroup_pages()) and fails with -ENOMEM only when
 * reclaim makes no progress (the kernel's OOM; here the fault fails). A
 * folio swapped in is charged to the group its slot is charged to
 * (mem_cgroup_swapin_charge_folio()), or to the faulting mm's group when
 * that group is gone. Uncharging: the frame pool's free hook, when the
 * folio's last reference goes, whoever drops it.
 *
 * Lock order: mem->memcg_lock is a leaf; no reclaim or charge runs under it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mm/mm_internal.h"
#include "util/alloc.h"

/* Charge attempts that reclaim before giving up (MAX_RECLAIM_RETRIES). */
#define MEMCG_RECLAIM_RETRIES	16

static void mem_cgroup_free(struct uswap_memcg *cg)
{
	free(cg);
}

/** mem_cgroup_get() - pin a group's struct. Context: the caller holds a pin or memcg_lock. */
void mem_cgroup_get(struct uswap_memcg *cg)
{
	if (cg)
		atomic_fetch_add(&cg->pins, 1);
}

/* Drop @n pins; the last frees the group. Context: any. */
static void mem_cgroup_put_many(struct uswap_memcg *cg, long n)
{
	if (cg && n && atomic_fetch_sub(&cg->pins, n) == n)
		mem_cgroup_free(cg);
}

/** mem_cgroup_put() - drop a pin of mem_cgroup_get(). Context: any. */
void mem_cgroup_put(struct uswap_memcg *cg)
{
	mem_cgroup_put_many(cg, 1);
}

/*
 * The pool's free hook: a folio's last reference is gone, uncharge its
 * pages from its group. Context: any (the caller of the last folio_put()).
 */
static void mem_cgroup_free_hook(struct folio *folio)
{
	struct uswap_memcg *cg = folio_memcg(folio);

	if (!cg)
		return;
	__atomic_store_n(&folio->private, NULL, __ATOMIC_RELAXED);
	mem_cgroup_cancel_charge(cg, folio_nr_pages(folio));
}

/**
 * mem_cgroup_init() - the budget's group registry, the uncharge hook, and
 * the root's nonresident clock. The root's shadows carry an id of their
 * own, taken from the swap layer's registry as a group without limit that
 * nothing is charged to (the kernel's root memcg has an id too, 1), so that
 * no group's id and no shadow value of 0 can stand for the root.
 * Context: may sleep. Return: 0, -ENOSPC (no group id left), -ENOMEM.
 */
int mem_cgroup_init(struct uswap_mem *mem)
{
	int err = uswap_swap_cgroup_create(USWAP_SWAP_MAX_NONE, &mem->root_memcg_id);

	if (err)
		return err;
	workingset_init(&mem->ws, mem->nr_frames, mem->root_memcg_id, 0);
	pthread_mutex_init(&mem->memcg_lock, NULL);
	CDS_INIT_LIST_HEAD(&mem->memcgs);
	mem->pool->free_hook = mem_cgroup_free_hook;
	return 0;
}

/**
 * mem_cgroup_fini() - free the groups still registered at the budget's
 * destruction. Context: every folio of the budget is free.
 */
void mem_cgroup_fini(struct uswap_mem *mem)
{
	struct uswap_memcg *cg, *tmp;

	cds_list_for_each_entry_safe(cg, tmp, &mem->memcgs, node) {
		cds_list_del(&cg->node);
		uswap_swap_cgroup_destroy(cg->id);
		mem_cgroup_free(cg);
	}
	pthread_mutex_destroy(&mem->memcg_lock);
	uswap_swap_cgroup_destroy(mem->root_memcg_id);
}

/**
 * mem_cgroup_get_by_id() - the live group of @mem with id @id, pinned
 * (mem_cgroup_from_id() + css_tryget_online()).
 * Context: takes memcg_lock. Return: the group, or NULL (root, unknown or
 * destroyed).
 */
struct uswap_memcg *mem_cgroup_get_by_id(struct uswap_mem *mem, uint16_t id)
{
	struct uswap_memcg *cg, *found = NULL;

	if (!id)
		return NULL;
	pthread_mutex_lock(&mem->memcg_lock);
	cds_list_for_each_entry(cg, &mem->memcgs, node) {
		if (cg->id == id) {
			mem_cgroup_get(cg);
			found = cg;
			break;
		}
	}
	pthread_mutex_unlock(&mem->memcg_lock);
	return found;
}

static void mem_cgroup_charged(struct uswap_memcg *cg, long usage)
{
	long peak = atomic_load(&cg->memory_peak);

	while (usage > peak && !atomic_compare_exchange_weak(&cg->memory_peak, &peak, usage))
		;
}

/**
 * mem_cgroup_force_charge() - charge @nr pages to @cg past its limit (a
 * folio that is already in memory: swap-in's large folio and readahead).
 * Context: the caller holds a pin of @cg. Return: nothing.
 */
void mem_cgroup_force_charge(struct uswap_memcg *cg, unsigned long nr)
{
	if (!cg)
		return;
	atomic_fetch_add(&cg->pins, (long)nr);
	mem_cgroup_charged(cg, atomic_fetch_add(&cg->memory_current, (long)nr) + (long)nr);
}

/**
 * mem_cgroup_try_charge_noreclaim() - charge @nr pages to @cg if they fit
 * under memory.max as it is (a large folio's or readahead's charge, which
 * falls back to less rather than reclaim).
 * Context: any; the caller holds a pin of @cg. Return: 0, -ENOMEM.
 */
int mem_cgroup_try_charge_noreclaim(struct uswap_memcg *cg, unsigned long nr)
{
	long cur;

	if (!cg)
		return 0;
	cur = atomic_load(&cg->memory_current);
	while ((uint64_t)cur + nr <= atomic_load(&cg->memory_max)) {
		if (atomic_compare_exchange_weak(&cg->memory_current, &cur, cur + (long)nr)) {
			atomic_fetch_add(&cg->pins, (long)nr);
			mem_cgroup_charged(cg, cur + (long)nr);
			return 0;
		}
	}
	return -ENOMEM;
}

/**
 * mem_cgroup_try_charge() - charge @nr pages to @cg within memory.max,
 * reclaiming from the group first when the charge would go over it
 * (try_charge_memcg()).
 * Context: may sleep (reclaim); no mm lock but mmap_lock for read; the
 * caller holds a pin of @cg. Return: 0 (always for the root, @cg NULL);
 * -ENOMEM when reclaim could not make room (events_oom counted).
 */
int mem_cgroup_try_charge(struct uswap_memcg *cg, unsigned long nr)
{
	unsigned int tries, idle = 0;
	bool hit = false;

	if (!cg)
		return 0;
	for (tries = 0;; tries++) {
		long cur = atomic_load(&cg->memory_current);
		uint64_t max = atomic_load(&cg->memory_max);

		while ((uint64_t)cur + nr <= max) {
			if (atomic_compare_exchange_weak(&cg->memory_current, &cur,
							 cur + (long)nr)) {
				atomic_fetch_add(&cg->pins, (long)nr);
				mem_cgroup_charged(cg, cur + (long)nr);
				return 0;
			}
		}
		if (!hit) {
			hit = true;
			memcg_stat_add(cg, events_max, 1);
		}
		if (tries >= MEMCG_RECLAIM_RETRIES || idle >= 3) {
			memcg_stat_add(cg, events_oom, 1);
			return -ENOMEM;
		}
		if (try_to_free_mem_cgroup_pages(cg, USWAP_MAX(nr, (uint64_t)cur + nr - max)))
			idle = 0;
		else
			idle++;
	}
}

/**
 * mem_cgroup_cancel_charge() - give back @nr pages charged to @cg.
 * Context: any. Return: nothing.
 */
void mem_cgroup_cancel_charge(struct uswap_memcg *cg, unsigned long nr)
{
	if (!cg)
		return;
	USWAP_BUG_ON(atomic_fetch_sub(&cg->memory_current, (long)nr) < (long)nr);
	mem_cgroup_put_many(cg, (long)nr);
}

/**
 * mem_cgroup_commit_charge() - a charge taken for @folio's pages now
 * belongs to the folio: it points at @cg and carries its id, so that its
 * slots are charged to the group's swap counter.
 * Context: the folio is new (not yet on the LRU nor mapped). Return: nothing.
 */
void mem_cgroup_commit_charge(struct folio *folio, struct uswap_memcg *cg)
{
	if (!cg)
		return;
	__atomic_store_n(&folio->private, (void *)cg, __ATOMIC_RELEASE);
	folio_set_memcg_id(folio, cg->id);
}

/**
 * mem_cgroup_reclaim_over_max() - reclaim from @cg until it is back within
 * memory.max, or reclaim makes no progress (after forced charges).
 * Context: may sleep; the caller holds a pin of @cg. Return: nothing.
 */
void mem_cgroup_reclaim_over_max(struct uswap_memcg *cg)
{
	unsigned int i;

	for (i = 0; cg && i < MEMCG_RECLAIM_RETRIES; i++) {
		uint64_t cur = (uint64_t)atomic_load(&cg->memory_current);
		uint64_t max = atomic_load(&cg->memory_max);

		if (cur <= max || !try_to_free_mem_cgroup_pages(cg, cur - max))
			break;
	}
}

/**
 * mem_alloc_folio_memcg() - a folio of @order for an mm of group @cg:
 * charged to the group (reclaiming from it at memory.max), then taken from
 * the budget (mem_alloc_folio()). Context: as mem_alloc_folio().
 * Return: the folio, charged; NULL and *@err -ENOMEM (the group's limit or
 * the budget).
 */
struct folio *mem_alloc_folio_memcg(struct uswap_mem *mem, struct uswap_memcg *cg,
				    unsigned int order, int *err)
{
	struct folio *f;

	*err = mem_cgroup_try_charge(cg, 1UL << order);
	if (*err)
		return NULL;
	f = mem_alloc_folio(mem, order);
	if (!f) {
		mem_cgroup_cancel_charge(cg, 1UL << order);
		*err = -ENOMEM;
		return NULL;
	}
	mem_cgroup_commit_charge(f, cg);
	return f;
}

/** folio_workingset() - the nonresident clock of @folio's group. Lockless. */
struct uswap_workingset *folio_workingset(struct uswap_mem *mem, const struct folio *folio)
{
	struct uswap_memcg *cg = folio_memcg(folio);

	return cg ? &cg->ws : &mem->ws;
}

/**
 * workingset_refault() - judge the refault of @folio, evicted with
 * @shadow, at the group that evicted it (the shadow's memcg id), whichever
 * mm faults it now: recent when its refault distance is within that
 * group's active list. A recent folio is marked workingset and ages the
 * group's clock. A group that is gone judges nothing.
 * Context: takes memcg_lock. Return: true to activate the folio.
 */
bool workingset_refault(struct uswap_mem *mem, struct folio *folio, uint64_t shadow)
{
	struct uswap_workingset *ws = &mem->ws;
	struct uswap_memcg *cg = NULL;
	uint64_t eviction;
	unsigned long wss;
	uint16_t id, node;
	bool bit, was_ws = false, recent;

	mem_stat_inc(mem, refaults);
	workingset_unpack_shadow(shadow, &id, &node, &eviction, &bit, 0);
	if (id != mem->root_memcg_id) {
		cg = mem_cgroup_get_by_id(mem, id);
		if (!cg)
			return false;
		ws = &cg->ws;
		wss = (unsigned long)atomic_load(&cg->nr_active);
	} else {
		wss = (unsigned long)atomic_load(&mem->nr_active);
	}
	memcg_stat_add(cg, workingset_refault, 1);
	recent = workingset_test_recent(ws, shadow, wss, &was_ws);
	if (recent) {
		mem_stat_inc(mem, refault_activations);
		memcg_stat_add(cg, workingset_activate, 1);
		workingset_age_nonresident(ws, folio_nr_pages(folio));
		folio_set_flag(folio, PG_workingset);
	}
	mem_cgroup_put(cg);
	return recent;
}

/* ---- the public API ---- */

/** uswap_memcg_create() - see uswap/mm.h. */
USWAP_API int uswap_memcg_create(struct uswap_mem *mem, const struct uswap_memcg_config *cfg,
				 struct uswap_memcg **out)
{
	struct uswap_memcg *cg;
	uint16_t id;
	int err;

	if (!mem || !out || (cfg && !uswap_mem_is_zero(cfg->__reserved, sizeof(cfg->__reserved))))
		return -EINVAL;
	cg = uswap_calloc(1, sizeof(*cg));
	if (!cg)
		return -ENOMEM;
	err = uswap_swap_cgroup_create(cfg ? cfg->swap_max : USWAP_SWAP_MAX_NONE, &id);
	if (err) {
		free(cg);
		return err;
	}
	cg->mem = mem;
	cg->id = id;
	atomic_init(&cg->memory_max, cfg ? cfg->memory_max : UINT64_MAX);
	atomic_init(&cg->pins, 1);
	workingset_init(&cg->ws, mem->nr_frames, id, 0);
	pthread_mutex_lock(&mem->memcg_lock);
	cds_list_add_tail(&cg->node, &mem->memcgs);
	pthread_mutex_unlock(&mem->memcg_lock);
	*out = cg;
	return 0;
}

/** uswap_memcg_destroy() - see uswap/mm.h. */
USWAP_API int uswap_memcg_destroy(struct uswap_memcg *cg)
{
	struct uswap_mem *mem;

	if (!cg)
		return -EINVAL;
	mem = cg->mem;
	pthread_mutex_lock(&mem->memcg_lock);
	if (atomic_load(&cg->nr_mms)) {
		pthread_mutex_unlock(&mem->memcg_lock);
		return -EBUSY;
	}
	cg->dead = true;
	cds_list_del(&cg->node);
	pthread_mutex_unlock(&mem->memcg_lock);
	uswap_swap_cgroup_destroy(cg->id);
	mem_cgroup_put(cg);
	return 0;
}

/** uswap_memcg_set_memory_max() - see uswap/mm.h. */
USWAP_API int uswap_memcg_set_memory_max(struct uswap_memcg *cg, uint64_t pages)
{
	if (!cg)
		return -EINVAL;
	atomic_store(&cg->memory_max, pages);
	mem_cgroup_reclaim_over_max(cg);
	return 0;
}

/** uswap_memcg_set_swap_max() - see uswap/mm.h. */
USWAP_API int uswap_memcg_set_swap_max(struct uswap_memcg *cg, uint64_t pages)
{
	if (!cg)
		return -EINVAL;
	return uswap_swap_cgroup_set_max(cg->id, pages);
}

/** uswap_memcg_id() - see uswap/mm.h. */
USWAP_API uint16_t uswap_memcg_id(const struct uswap_memcg *cg)
{
	return cg ? cg->id : 0;
}

/** uswap_memcg_get_stats() - see uswap/mm.h. Lockless. */
USWAP_API void uswap_memcg_get_stats(struct uswap_memcg *cg, struct uswap_memcg_stats *st)
{
	struct uswap_swap_cgroup_stat sw;

	memset(st, 0, sizeof(*st));
	st->memory_current = (uint64_t)atomic_load(&cg->memory_current);
	st->memory_peak = (uint64_t)atomic_load(&cg->memory_peak);
	st->memory_max = atomic_load(&cg->memory_max);
	if (!uswap_swap_cgroup_stat(cg->id, &sw)) {
		st->swap_current = sw.usage;
		st->swap_peak = sw.peak;
		st->swap_max = sw.max;
		st->swap_events_max = sw.events_max;
		st->swap_events_fail = sw.events_fail;
	}
#define S(x) st->x = atomic_load_explicit(&cg->stat.x, memory_order_relaxed)
	S(events_max); S(events_oom); S(pgscan); S(pgsteal);
	S(pswpout); S(pswpin); S(workingset_refault); S(workingset_activate);
#undef S
}
