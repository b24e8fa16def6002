/* SPDX-License-Identifier: MIT */
/*
 * The swap side of memory cgroups: one page counter per group id (the
 * kernel's memcg->swap page_counter and its memory.swap.* files), charged
 * when a folio gets slots and uncharged when a slot frees, from the ids
 * the slots keep (the table design's per-cluster id table, the old
 * design's swap_cgroup array: each design's memcg_ids op).
 *
 * The registry maps an id to its group. A group's memory stays for the
 * life of the process (an id is reused, its struct with it), so a charge
 * or an uncharge never reads freed memory; its state says whether it may
 * be charged:
 *   FREE   -> LIVE    uswap_swap_cgroup_create() (registry lock)
 *   LIVE   -> DYING   uswap_swap_cgroup_destroy()
 *   DYING  -> FREE    when usage is 0: destroy, or the last uncharge
 * A FREE group has usage 0; ids of DYING groups stay taken while slots
 * hold them, as the kernel's memcg id outlives the cgroup (swap_cgroup
 * references).
 */
#include <pthread.h>

#include "swap/swap_internal.h"
#include "util/alloc.h"

enum { SWAP_CG_FREE, SWAP_CG_LIVE, SWAP_CG_DYING };

struct swap_cgroup {
	_Atomic long usage;		/* slots charged */
	_Atomic long peak;
	_Atomic uint64_t max;
	_Atomic uint64_t events_max, events_fail;
	_Atomic int state;		/* SWAP_CG_* */
};

static _Atomic(struct swap_cgroup *) swap_cgroups[USWAP_MEMCG_ID_MAX + 1];
static pthread_mutex_t swap_cgroups_lock = PTHREAD_MUTEX_INITIALIZER;

static struct swap_cgroup *swap_cgroup_of(uint16_t id)
{
	return id ? atomic_load_explicit(&swap_cgroups[id], memory_order_acquire) : NULL;
}

/** uswap_swap_cgroup_create() - see uswap/swap.h. Context: takes the registry lock. */
USWAP_API int uswap_swap_cgroup_create(uint64_t max, uint16_t *id)
{
	struct swap_cgroup *cg;
	unsigned int i;
	int err = -ENOSPC;

	pthread_mutex_lock(&swap_cgroups_lock);
	for (i = 1; i <= USWAP_MEMCG_ID_MAX; i++) {
		cg = atomic_load_explicit(&swap_cgroups[i], memory_order_relaxed);
		if (cg && atomic_load(&cg->state) != SWAP_CG_FREE)
			continue;
		if (!cg) {
			cg = uswap_calloc(1, sizeof(*cg));
			if (!cg) {
				err = -ENOMEM;
				break;
			}
		}
		atomic_store(&cg->peak, 0);
		atomic_store(&cg->max, max);
		atomic_store(&cg->events_max, 0);
		atomic_store(&cg->events_fail, 0);
		atomic_store(&cg->state, SWAP_CG_LIVE);
		atomic_store_explicit(&swap_cgroups[i], cg, memory_order_release);
		*id = (uint16_t)i;
		err = 0;
		break;
	}
	pthread_mutex_unlock(&swap_cgroups_lock);
	return err;
}

/* DYING -> FREE once nothing is charged. Context: any. */
static void swap_cgroup_try_release(struct swap_cgroup *cg)
{
	int dying = SWAP_CG_DYING;

	if (!atomic_load(&cg->usage))
		atomic_compare_exchange_strong(&cg->state, &dying, SWAP_CG_FREE);
}

/** uswap_swap_cgroup_destroy() - see uswap/swap.h. */
USWAP_API int uswap_swap_cgroup_destroy(uint16_t id)
{
	struct swap_cgroup *cg = swap_cgroup_of(id);
	int live = SWAP_CG_LIVE;

	if (!cg || !atomic_compare_exchange_strong(&cg->state, &live, SWAP_CG_DYING))
		return -EINVAL;
	swap_cgroup_try_release(cg);
	return 0;
}

/** uswap_swap_cgroup_set_max() - see uswap/swap.h. */
USWAP_API int uswap_swap_cgroup_set_max(uint16_t id, uint64_t max)
{
	struct swap_cgroup *cg = swap_cgroup_of(id);

	if (!cg || atomic_load(&cg->state) != SWAP_CG_LIVE)
		return -EINVAL;
	atomic_store(&cg->max, max);
	return 0;
}

/** uswap_swap_cgroup_stat() - see uswap/swap.h. Context: lockless. */
USWAP_API int uswap_swap_cgroup_stat(uint16_t id, struct uswap_swap_cgroup_stat *st)
{
	struct swap_cgroup *cg = swap_cgroup_of(id);

	if (!cg || atomic_load(&cg->state) == SWAP_CG_FREE || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->usage = (uint64_t)atomic_load(&cg->usage);
	st->peak = (uint64_t)atomic_load(&cg->peak);
	st->max = atomic_load(&cg->max);
	st->events_max = atomic_load(&cg->events_max);
	st->events_fail = atomic_load(&cg->events_fail);
	return 0;
}

/** uswap_swap_cgroup_full() - see uswap/swap.h. Context: lockless. */
USWAP_API bool uswap_swap_cgroup_full(uint16_t id)
{
	struct swap_cgroup *cg = swap_cgroup_of(id);
	uint64_t max;

	if (uswap_vm_swap_full())
		return true;
	if (!cg || atomic_load(&cg->state) == SWAP_CG_FREE)
		return false;
	max = atomic_load(&cg->max);
	return max != USWAP_SWAP_MAX_NONE &&
	       (uint64_t)atomic_load(&cg->usage) * 2 >= max;
}

/**
 * swap_cgroup_try_charge() - charge @nr slots to group @id, within its
 * limit (mem_cgroup_try_charge_swap()). An id no live group holds is
 * charged nowhere, as the root.
 * Context: any; lockless. Return: the id the slots are to keep (@id, or
 * 0), or -ENOMEM over the limit (the group's "max" and "fail" events
 * counted).
 */
int swap_cgroup_try_charge(uint16_t id, unsigned int nr)
{
	struct swap_cgroup *cg = swap_cgroup_of(id);
	long usage, peak;

	if (!cg)
		return 0;
	usage = atomic_fetch_add(&cg->usage, (long)nr) + (long)nr;
	if (atomic_load(&cg->state) == SWAP_CG_FREE) {
		atomic_fetch_sub(&cg->usage, (long)nr);
		return 0;
	}
	if ((uint64_t)usage > atomic_load(&cg->max)) {
		atomic_fetch_sub(&cg->usage, (long)nr);
		/* Both events, as memcg's: "max" says why, "fail" that it did. */
		atomic_fetch_add(&cg->events_max, 1);
		atomic_fetch_add(&cg->events_fail, 1);
		swap_cgroup_try_release(cg);
		return -ENOMEM;
	}
	peak = atomic_load(&cg->peak);
	while (usage > peak && !atomic_compare_exchange_weak(&cg->peak, &peak, usage))
		;
	return id;
}

/* swap_cgroup_uncharge() - @nr slots of group @id freed. Context: any. */
void swap_cgroup_uncharge(uint16_t id, unsigned int nr)
{
	struct swap_cgroup *cg = swap_cgroup_of(id);

	if (!cg || !nr)
		return;
	USWAP_BUG_ON(atomic_fetch_sub(&cg->usage, (long)nr) < (long)nr);
	swap_cgroup_try_release(cg);
}

/* swap_cgroup_count_fail() - group @id found no free slot ("fail" event). */
void swap_cgroup_count_fail(uint16_t id)
{
	struct swap_cgroup *cg = swap_cgroup_of(id);

	if (cg)
		atomic_fetch_add(&cg->events_fail, 1);
}

/**
 * swap_cgroup_record() - slots [@offset, @offset+@nr) of one cluster keep
 * id @id (__swap_cgroup_set()). Context: ci->lock held, table present.
 */
void swap_cgroup_record(struct swap_info_struct *si, struct swap_cluster_info *ci,
			uint64_t offset, unsigned int nr, uint16_t id)
{
	uint16_t *ids = si->design->memcg_ids(si, ci, offset);
	unsigned int i;

	uswap_assert_held(&ci->lock);
	uswap_assert(ids);
	for (i = 0; i < nr; i++)
		ids[i] = id;
}

/**
 * swap_cgroup_clear() - slots [@offset, @offset+@nr) of one cluster are
 * freed: clear their ids and uncharge them, a run of equal ids at a time
 * (slots of one free may belong to different groups).
 * Context: ci->lock held.
 */
void swap_cgroup_clear(struct swap_info_struct *si, struct swap_cluster_info *ci,
		       uint64_t offset, unsigned int nr)
{
	uint16_t *ids = si->design->memcg_ids(si, ci, offset);
	unsigned int i, run = 0;
	uint16_t cur = 0;

	uswap_assert_held(&ci->lock);
	uswap_assert(ids);
	for (i = 0; i < nr; i++) {
		if (ids[i] != cur) {
			swap_cgroup_uncharge(cur, run);
			cur = ids[i];
			run = 0;
		}
		run++;
		ids[i] = 0;
	}
	swap_cgroup_uncharge(cur, run);
}

/** uswap_swap_cgroup_lookup() - see uswap/swap.h. Context: takes ci->lock. */
USWAP_API uint16_t uswap_swap_cgroup_lookup(swp_entry_t entry)
{
	struct swap_info_struct *si;
	struct swap_cluster_info *ci;
	uint64_t offset = swp_offset(entry);
	uint16_t id = 0, *ids;

	if (swap_entry_pin(entry, &si))
		return 0;
	ci = swap_cluster_lock(si, offset);
	ids = si->design->memcg_ids(si, ci, offset);
	if (ids)
		id = *ids;
	swap_cluster_unlock(ci);
	put_swap_device(si);
	return id;
}
