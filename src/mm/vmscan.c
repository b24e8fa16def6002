/* SPDX-License-Identifier: MIT */
/*
 * Reclaim: age the active list into the inactive one, and turn cold
 * inactive folios into swap entries (the kernel's shrink_folio_list):
 *   folio_alloc_swap (a large folio that cannot get slots of its order is
 *   split) -> unmap every PTE with folio_dup_swap -> write back -> once
 *   clean, leave the cache with a workingset shadow and free the frames.
 */
#include <time.h>

#include "mm/mm_internal.h"
#include "swap/swap_internal.h"

#define SWAP_CLUSTER_MAX 32

/* Active folios (of group @cg, or of all with @cg NULL and @all) move to
 * the inactive list; their young bits are cleared. */
static void shrink_active_list(struct uswap_mem *mem, struct uswap_memcg *cg, bool all,
			       unsigned int nr)
{
	struct folio *batch[SWAP_CLUSTER_MAX];
	unsigned int max = USWAP_MIN(nr, (unsigned int)SWAP_CLUSTER_MAX), i;
	unsigned int n = all ? lru_isolate(mem, true, batch, max) :
			       lru_isolate_memcg(mem, cg, true, batch, max);

	for (i = 0; i < n; i++) {
		struct folio *f = batch[i];

		if (folio_trylock(f)) {
			folio_referenced(f);
			folio_unlock(f);
		}
		folio_clear_flag(f, PG_referenced);
		folio_set_flag(f, PG_workingset);
		lru_putback(mem, f, false);
	}
}

/* Free a folio nobody maps or caches any more: drop our (LRU) reference. */
static bool folio_is_orphan(struct folio *f)
{
	return !folio_in_swap(f) && !folio_test_flag(f, PG_writeback) &&
	       atomic_load(&f->mapcount) == 0 && !folio_is_shmem(f);
}

/**
 * uswap_remove_mapping() - see uswap/swap.h. The kernel's __remove_mapping()
 * for a swap-cache folio: the references of the caller and of the cache
 * are frozen (a lookup racing with us fails folio_try_get() and retries on
 * the table, where it finds the shadow), the device's design deletes the
 * folio from the cache leaving @shadow, and the frames go back to the pool.
 * Context: folio locked, not under writeback; pins the device; takes ci->lock.
 */
USWAP_API int uswap_remove_mapping(struct folio *folio, uint64_t shadow)
{
	long expected = 1 + (long)folio_nr_pages(folio);
	struct swap_info_struct *si;

	if (!folio_test_locked(folio) || !folio_test_swapcache(folio) ||
	    folio_test_writeback(folio) || !shadow_fits_swp_tb(shadow))
		return -EINVAL;
	if (swap_entry_pin(folio->swap, &si))
		return -EINVAL;
	if (!atomic_compare_exchange_strong(&folio->refcount, &expected, 0)) {
		put_swap_device(si);
		return 0;
	}
	if (folio_test_dirty(folio)) {
		atomic_store(&folio->refcount, expected);
		put_swap_device(si);
		return 0;
	}
	si->design->cache_del(si, folio, shadow);
	put_swap_device(si);
	/* Nobody else holds a reference, so nobody waits on the lock. */
	atomic_store_explicit(&folio->lockword, 0, memory_order_release);
	uswap_frame_pool_free_folio(folio);
	return 1;
}

/*
 * Whether folio_alloc_swap() refused @f's @nr slots because its group is
 * at memory.swap.max (mem_cgroup_try_charge_swap()), not for want of space.
 */
static bool folio_swap_at_max(struct folio *f, unsigned long nr)
{
	struct uswap_swap_cgroup_stat st;
	uint16_t id = folio_memcg_id(f);

	return id && !uswap_swap_cgroup_stat(id, &st) && st.max != USWAP_SWAP_MAX_NONE &&
	       st.usage + nr > st.max;
}

/*
 * Reclaim one locked, isolated folio. A folio whose group is at its swap
 * limit stays in memory (activated, as shrink_folio_list()'s
 * activate_locked) and counts in *@no_swap only when @cg (group reclaim):
 * global reclaim moves on to other groups' folios. Return: pages freed;
 * the folio is unlocked and either freed or put back on a list.
 */
static unsigned long shrink_folio(struct uswap_mem *mem, struct uswap_memcg *cg, struct folio *f,
				  unsigned int *no_swap, unsigned int *wb)
{
	unsigned long nr = folio_nr_pages(f);
	uint64_t shadow;
	bool sync;
	int ref, err;

	if (folio_test_writeback(f)) {
		(*wb)++;
		goto keep;
	}
	if (folio_is_orphan(f)) {
		folio_unlock(f);
		folio_put(f);
		return nr;
	}
	ref = folio_referenced(f);
	if (ref) {
		if (folio_test_clear_flag(f, PG_referenced) || ref > 1) {
			workingset_age_nonresident(folio_workingset(mem, f), nr);
			goto activate;
		}
		folio_set_flag(f, PG_referenced);
		goto keep;
	}
	if (!folio_test_swapcache(f)) {
		err = folio_alloc_swap(f);
		if (err && folio_order(f)) {
			/* No slots of its order: go out as order-0 pages. */
			if (split_folio(mem, f))
				goto keep;
			mem_stat_inc(mem, thp_splits);
			{
				unsigned long i;

				for (i = 0; i < nr; i++) {
					struct folio *p = f + i;

					folio_unlock(p);
					if (folio_is_orphan(p))
						folio_put(p);
					else
						lru_putback(mem, p, false);
				}
			}
			return 0;
		}
		if (err) {
			/* no swap space, or the group's limit: keep it in memory */
			if (cg || !folio_swap_at_max(f, nr))
				(*no_swap)++;
			goto activate;
		}
		folio_mark_dirty(f);
	}
	if (folio_is_shmem(f)) {
		if (!shmem_unmap_folio(folio_shmem(f), f))
			goto keep;
	} else if (!try_to_unmap(mem, f)) {
		goto keep;
	}
	if (folio_test_dirty(f)) {
		sync = uswap_swap_synchronous(f->swap);
		err = uswap_swap_writeout(f, sync);	/* unlocks */
		if (err == -EINVAL || err == -EOPNOTSUPP || err == -ENOMEM) {
			lru_putback(mem, f, true);
			return 0;
		}
		mem_stat_add(mem, swapouts, nr);
		memcg_stat_add(folio_memcg(f), pswpout, nr);
		if (!sync) {
			/* In flight: the next pass finds it clean. */
			(*wb)++;
			lru_putback(mem, f, false);
			return 0;
		}
		folio_lock(f);
		if (err) {
			/* The write failed: the data stays in memory, still in
			 * the cache, dirty; faults find it there. */
			mem_stat_inc(mem, write_errors);
			goto activate;
		}
		if (!folio_test_swapcache(f) || folio_test_dirty(f) || folio_test_writeback(f) ||
		    atomic_load(&f->mapcount))
			goto keep;
	}
	shadow = workingset_eviction(folio_workingset(mem, f), folio_test_flag(f, PG_workingset), nr);
	if (uswap_remove_mapping(f, shadow) == 1)
		return nr;
keep:
	folio_unlock(f);
	lru_putback(mem, f, false);
	return 0;
activate:
	/* Not a candidate for swapping: give its swap space back when swap
	 * is short for its group (mem_cgroup_swap_full()). */
	if (folio_test_swapcache(f) && !folio_test_writeback(f) &&
	    uswap_swap_cgroup_full(folio_memcg_id(f)))
		folio_free_swap(f);
	folio_unlock(f);
	lru_putback(mem, f, true);
	return 0;
}

/*
 * Reclaim up to @nr_to_reclaim pages: of group @cg only, or of every
 * group with @all. Context: may sleep; takes the reclaim lock (one
 * reclaimer at a time). Return: pages freed.
 */
static unsigned long shrink_lruvec(struct uswap_mem *mem, struct uswap_memcg *cg, bool all,
				   unsigned long nr_to_reclaim)
{
	struct folio *batch[SWAP_CLUSTER_MAX];
	unsigned long reclaimed = 0, scanned = 0;
	unsigned long limit = 4 * (mem->nr_frames + nr_to_reclaim);
	unsigned int n, i, no_swap = 0, wb = 0;
	_Atomic long *nr_inactive = all ? &mem->nr_inactive : &cg->nr_inactive;
	_Atomic long *nr_active = all ? &mem->nr_active : &cg->nr_active;

	pthread_mutex_lock(&mem->reclaim_lock);
	/* Out of swap: once a batch worth of folios found no slot and nothing
	 * was freed, more scanning only burns time (the OOM case). */
	while (reclaimed < nr_to_reclaim && scanned < limit &&
	       !(no_swap >= SWAP_CLUSTER_MAX && !reclaimed)) {
		long inactive = atomic_load(nr_inactive);
		long active = atomic_load(nr_active);
		/* A group's list may be short: scan about what is asked for,
		 * so that a charge of one page does not age the whole group
		 * (the kernel scans a share of a list by priority). */
		unsigned int scan = all ? SWAP_CLUSTER_MAX :
			(unsigned int)USWAP_MIN(USWAP_MAX(nr_to_reclaim - reclaimed, 4UL),
						(unsigned long)SWAP_CLUSTER_MAX);

		if (active > 0 && inactive < active)
			shrink_active_list(mem, cg, all, scan);
		n = all ? lru_isolate(mem, false, batch, scan) :
			  lru_isolate_memcg(mem, cg, false, batch, scan);
		if (!n) {
			if (!atomic_load(nr_active))
				break;
			shrink_active_list(mem, cg, all, scan);
			scanned += scan;
			continue;
		}
		for (i = 0; i < n; i++) {
			struct folio *f = batch[i];
			struct uswap_memcg *fcg = folio_memcg(f);
			unsigned long nr = folio_nr_pages(f), freed;

			scanned += nr;
			if (!folio_trylock(f)) {
				lru_putback(mem, f, false);
				continue;
			}
			/* The folio's charge pins its group until the folio is
			 * freed below: pin it over the counting. */
			mem_cgroup_get(fcg);
			memcg_stat_add(fcg, pgscan, nr);
			freed = shrink_folio(mem, all ? NULL : cg, f, &no_swap, &wb);
			memcg_stat_add(fcg, pgsteal, freed);
			mem_cgroup_put(fcg);
			reclaimed += freed;
		}
		/* Nothing freed but writes in flight: wait for them a little
		 * (the kernel's reclaim_throttle on writeback). */
		if (!reclaimed && wb) {
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
			wb = 0;
		}
	}
	pthread_mutex_unlock(&mem->reclaim_lock);
	mem_stat_add(mem, reclaimed, reclaimed);
	return reclaimed;
}

/**
 * shrink_memory() - reclaim up to @nr_to_reclaim pages from the budget,
 * any group's. Context: may sleep; takes the reclaim lock (one reclaimer
 * at a time). Return: pages freed.
 */
unsigned long shrink_memory(struct uswap_mem *mem, unsigned long nr_to_reclaim, bool direct)
{
	(void)direct;
	return shrink_lruvec(mem, NULL, true, nr_to_reclaim);
}

/**
 * try_to_free_mem_cgroup_pages() - reclaim up to @nr_to_reclaim pages of
 * group @cg's folios (a charge at memory.max). Context: may sleep; takes
 * the reclaim lock; the caller holds a pin of @cg. Return: pages freed.
 */
unsigned long try_to_free_mem_cgroup_pages(struct uswap_memcg *cg, unsigned long nr_to_reclaim)
{
	return shrink_lruvec(cg->mem, cg, false, nr_to_reclaim);
}
