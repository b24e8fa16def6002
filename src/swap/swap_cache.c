/* SPDX-License-Identifier: MIT */
/*
 * The swap cache is the swap table: a cached slot's entry holds the PFN of
 * the folio with its data, beside the slot's count. Adding a folio under
 * the cluster lock is the one synchronization point of swap-in: the first
 * to add wins, the others find its folio and wait on its lock.
 */
#include "swap/swap_internal.h"

static bool entry_aligned(swp_entry_t entry, unsigned long nr)
{
	return !(swp_offset(entry) & (nr - 1));
}

/**
 * __swap_cache_add_folio() - cache @folio at @entry: each slot's entry
 * becomes the folio's PFN with its count kept; the cache takes nr refs.
 * Context: ci->lock and folio lock held; slots checked by the caller.
 */
void __swap_cache_add_folio(struct swap_cluster_info *ci, struct folio *folio,
			    swp_entry_t entry)
{
	unsigned int off = swp_offset(entry) % SWAPFILE_CLUSTER, i;
	unsigned long nr = folio_nr_pages(folio);

	uswap_assert_held(&ci->lock);
	uswap_assert(folio_test_locked(folio) && !folio_test_swapcache(folio));
	folio_ref_add(folio, (long)nr);
	folio->swap = entry;
	folio_set_flag(folio, PG_swapcache);
	folio_set_flag(folio, PG_swapbacked);
	for (i = 0; i < nr; i++) {
		uint64_t tb = __swap_table_get(ci, off + i);

		__swap_table_set(ci, off + i,
				 pfn_to_swp_tb(folio->pfn, swp_tb_is_null(tb) ? 0 : __swp_tb_get_count(tb)));
	}
}

/**
 * swap_cache_add_folio() - see uswap/swap.h. Context: takes ci->lock.
 */
USWAP_API int swap_cache_add_folio(struct folio *folio, swp_entry_t entry, uint64_t *shadowp)
{
	unsigned long nr = folio_nr_pages(folio);
	unsigned int off = swp_offset(entry) % SWAPFILE_CLUSTER, i;
	struct swap_info_struct *si;
	struct swap_cluster_info *ci;
	uint64_t shadow = 0;
	int err;

	if (!folio_test_locked(folio) || folio_test_swapcache(folio) || !entry_aligned(entry, nr))
		return -EINVAL;
	err = swap_entry_pin(entry, &si);
	if (err)
		return err;
	if (swp_offset(entry) + nr > si->max) {
		put_swap_device(si);
		return -EINVAL;
	}
	if (si->design) {
		err = si->design->cache_add(si, folio, entry, shadowp);
		put_swap_device(si);
		return err;
	}
	ci = swap_cluster_lock(si, swp_offset(entry));
	for (i = 0; i < nr; i++) {
		uint64_t tb = __swap_table_get(ci, off + i);

		if (swp_tb_is_folio(tb)) {
			err = -EEXIST;
			break;
		}
		if (swp_tb_is_bad(tb) || !swp_tb_is_countable(tb)) {
			err = -EINVAL;
			break;
		}
		if (swp_tb_is_null(tb) || !__swp_tb_get_count(tb)) {
			err = -ENOENT;
			break;
		}
		if (!i)
			shadow = swp_tb_get_shadow(tb);
	}
	if (!err)
		__swap_cache_add_folio(ci, folio, entry);
	swap_cluster_unlock(ci);
	put_swap_device(si);
	if (!err && shadowp)
		*shadowp = shadow;
	return err;
}

/**
 * __swap_cache_del_folio() - take @folio out of the cache: PFN entries
 * become shadow entries (@shadow, 0 for an empty placeholder) that keep
 * their counts; count-0 slots are freed here. The cache's folio references
 * are not dropped.
 * Context: ci->lock and folio lock held, folio not under writeback.
 */
void __swap_cache_del_folio(struct swap_info_struct *si, struct swap_cluster_info *ci,
			    struct folio *folio, swp_entry_t entry, uint64_t shadow)
{
	unsigned int off = swp_offset(entry) % SWAPFILE_CLUSTER, i, run = 0;
	unsigned long nr = folio_nr_pages(folio);

	uswap_assert_held(&ci->lock);
	uswap_assert(folio_test_locked(folio) && folio_test_swapcache(folio));
	uswap_assert(!folio_test_writeback(folio));
	for (i = 0; i < nr; i++) {
		uint64_t tb = __swap_table_get(ci, off + i);
		unsigned int c;

		USWAP_BUG_ON(!swp_tb_is_folio(tb) || swp_tb_to_pfn(tb) != folio->pfn);
		c = __swp_tb_get_count(tb);
		if (!c) {
			run++;
			continue;
		}
		if (run) {
			__swap_cluster_free_entries(si, ci, off + i - run, run);
			run = 0;
		}
		__swap_table_set(ci, off + i, shadow_to_swp_tb(shadow, c));
	}
	if (run)
		__swap_cluster_free_entries(si, ci, off + (unsigned int)nr - run, run);
	folio_clear_flag(folio, PG_swapcache);
	folio->swap.val = 0;
}

/**
 * swap_cache_del_folio() - see uswap/swap.h. Context: folio locked; takes ci->lock.
 */
USWAP_API int swap_cache_del_folio(struct folio *folio, uint64_t shadow)
{
	struct swap_info_struct *si;
	struct swap_cluster_info *ci;
	swp_entry_t entry;
	int err;

	if (!folio_test_locked(folio) || !folio_test_swapcache(folio) ||
	    folio_test_writeback(folio))
		return -EINVAL;
	if (!shadow_fits_swp_tb(shadow))
		return -EINVAL;
	entry = folio->swap;
	err = swap_entry_pin(entry, &si);
	if (err)
		return err;
	if (si->design) {
		err = si->design->cache_del(si, folio, shadow);
		put_swap_device(si);
		return err;
	}
	ci = swap_cluster_lock(si, swp_offset(entry));
	__swap_cache_del_folio(si, ci, folio, entry, shadow);
	if (USWAP_DEBUG_WALKS)
		uswap_check_cluster(si, ci);
	swap_cluster_unlock(ci);
	put_swap_device(si);
	folio_ref_sub(folio, (long)folio_nr_pages(folio));
	return 0;
}

/** folio_matches_swap_entry() - see uswap/swap.h. Context: folio locked. */
USWAP_API bool folio_matches_swap_entry(const struct folio *folio, swp_entry_t entry)
{
	unsigned long nr = folio_nr_pages(folio);

	if (!folio_in_swap(folio))
		return false;
	return swp_type(folio->swap) == swp_type(entry) &&
	       swp_offset(folio->swap) == (swp_offset(entry) & ~(uint64_t)(nr - 1));
}

/*
 * Tests that include this file may run code in a lookup between turning
 * the PFN into a folio and taking the reference.
 */
#ifndef swap_cache_lookup_hook
#define swap_cache_lookup_hook(folio) do { } while (0)
#endif

/**
 * swap_cache_get_folio() - see uswap/swap.h.
 * Context: lockless. The read of the PFN, pfn_folio() and folio_try_get()
 * are one RCU read section: a pool whose last folio was freed after we
 * read its PFN is unregistered, but its folio structs are freed (and its
 * PFN range reused) only after a grace period, so folio_try_get() sees a
 * free folio (refcount 0) and fails. A folio freed and reallocated
 * meanwhile is caught by the recheck of the entry.
 */
USWAP_API struct folio *swap_cache_get_folio(swp_entry_t entry)
{
	struct swap_info_struct *si;
	struct swap_cluster_info *ci;
	struct folio *folio = NULL;
	unsigned int off;

	if (swap_entry_pin(entry, &si))
		return NULL;
	if (si->design) {
		folio = si->design->cache_get(si, entry);
		put_swap_device(si);
		return folio;
	}
	ci = offset_to_cluster(si, swp_offset(entry));
	off = swp_offset(entry) % SWAPFILE_CLUSTER;
	uswap_rcu_read_lock();
	for (;;) {
		uint64_t tb = swap_table_get_rcu(ci, off);

		if (!swp_tb_is_folio(tb))
			break;
		folio = pfn_folio(swp_tb_to_pfn(tb));
		swap_cache_lookup_hook(folio);
		if (folio && folio_try_get(folio)) {
			/* Still the same entry? Then the folio was cached when we
			 * took the reference. */
			if (swap_table_get_rcu(ci, off) == tb)
				break;
			folio_put(folio);
		}
		folio = NULL;
	}
	uswap_rcu_read_unlock();
	put_swap_device(si);
	return folio;
}

/** swap_cache_get_shadow() - see uswap/swap.h. Context: lockless. */
USWAP_API uint64_t swap_cache_get_shadow(swp_entry_t entry)
{
	struct swap_info_struct *si;
	uint64_t tb;

	if (swap_entry_pin(entry, &si))
		return 0;
	if (si->design) {
		tb = si->design->cache_shadow(si, entry);
		put_swap_device(si);
		return tb;
	}
	tb = swap_table_get(offset_to_cluster(si, swp_offset(entry)),
			    swp_offset(entry) % SWAPFILE_CLUSTER);
	put_swap_device(si);
	return swp_tb_get_shadow(tb);
}

/**
 * swap_cache_replace_folio() - see uswap/swap.h. Context: both folios
 * locked; takes ci->lock.
 */
USWAP_API int swap_cache_replace_folio(struct folio *old, struct folio *new, swp_entry_t entry)
{
	unsigned long nr_new = folio_nr_pages(new), nr_old = folio_nr_pages(old), i;
	unsigned int off = swp_offset(entry) % SWAPFILE_CLUSTER;
	struct swap_info_struct *si;
	struct swap_cluster_info *ci;
	bool old_left = false;
	int err;

	if (!folio_test_locked(old) || !folio_test_locked(new) || !folio_test_swapcache(old) ||
	    folio_test_swapcache(new) || nr_new > nr_old || !entry_aligned(entry, nr_new) ||
	    !folio_matches_swap_entry(old, entry))
		return -EINVAL;
	err = swap_entry_pin(entry, &si);
	if (err)
		return err;
	if (si->design) {
		put_swap_device(si);
		return -EOPNOTSUPP;	/* migration is not part of the comparison */
	}
	ci = swap_cluster_lock(si, swp_offset(entry));
	folio_ref_add(new, (long)nr_new);
	new->swap = entry;
	folio_set_flag(new, PG_swapcache);
	folio_set_flag(new, PG_swapbacked);
	for (i = 0; i < nr_new; i++) {
		uint64_t tb = __swap_table_get(ci, off + (unsigned int)i);

		USWAP_BUG_ON(!swp_tb_is_folio(tb) || swp_tb_to_pfn(tb) != old->pfn);
		__swap_table_set(ci, off + (unsigned int)i,
				 pfn_to_swp_tb(new->pfn, __swp_tb_get_count(tb)));
	}
	/* A split replaces the old folio piece by piece: it leaves the cache
	 * with its last piece. */
	for (i = 0; i < nr_old; i++) {
		uint64_t tb = __swap_table_get(ci, (unsigned int)(swp_offset(old->swap) % SWAPFILE_CLUSTER + i));

		if (swp_tb_is_folio(tb) && swp_tb_to_pfn(tb) == old->pfn) {
			old_left = true;
			break;
		}
	}
	if (!old_left) {
		folio_clear_flag(old, PG_swapcache);
		old->swap.val = 0;
	}
	swap_cluster_unlock(ci);
	put_swap_device(si);
	folio_ref_sub(old, (long)nr_new);
	return 0;
}

/**
 * __try_to_reclaim_swap() - free the cache-only folio at @offset: if every
 * slot of its folio has count 0 and (@anyway, or nothing maps the folio),
 * the folio leaves the cache and its slots are freed.
 * Context: no cluster lock held; trylocks the folio.
 * Return: as the kernel's: the folio's page count if it was freed, minus
 * that count if a folio is cached at @offset but stays (locked elsewhere,
 * under writeback, mapped without @anyway, or a slot still referenced),
 * 0 if no folio is cached there.
 */
int __try_to_reclaim_swap(struct swap_info_struct *si, uint64_t offset, bool anyway)
{
	swp_entry_t entry = swp_entry(si->type, offset);
	struct swap_cluster_info *ci;
	struct folio *folio;
	unsigned int off, i;
	unsigned long nr;
	int ret;

	if (si->design)
		return si->design->try_reclaim(si, offset, anyway);
	folio = swap_cache_get_folio(entry);
	if (!folio)
		return 0;
	nr = folio_nr_pages(folio);
	ret = -(int)nr;
	if (!folio_trylock(folio))
		goto out_put;
	if (!folio_matches_swap_entry(folio, entry) || folio_test_writeback(folio))
		goto out_unlock;
	if (!anyway && atomic_load_explicit(&folio->mapcount, memory_order_relaxed) > 0 &&
	    !vm_swap_full())
		goto out_unlock;
	entry = folio->swap;
	off = swp_offset(entry) % SWAPFILE_CLUSTER;
	ci = swap_cluster_lock(si, swp_offset(entry));
	for (i = 0; i < nr; i++)
		if (__swp_tb_get_count(__swap_table_get(ci, off + i)))
			break;
	if (i == nr) {
		__swap_cache_del_folio(si, ci, folio, entry, 0);
		ret = (int)nr;
	}
	swap_cluster_unlock(ci);
	if (ret > 0) {
		folio_ref_sub(folio, (long)nr);
		folio_mark_dirty(folio);
	}
out_unlock:
	folio_unlock(folio);
out_put:
	folio_put(folio);
	return ret;
}

/** uswap_swap_tb_peek() - see uswap/swap.h. Context: takes ci->lock. */
USWAP_API int uswap_swap_tb_peek(swp_entry_t entry, uint64_t *tbp, long *countp)
{
	struct swap_info_struct *si;
	struct swap_cluster_info *ci;
	unsigned int off = swp_offset(entry) % SWAPFILE_CLUSTER;
	int err = swap_entry_pin(entry, &si);

	if (err)
		return err;
	if (si->design) {
		err = si->design->peek(si, swp_offset(entry), tbp, countp);
		put_swap_device(si);
		return err;
	}
	ci = swap_cluster_lock(si, swp_offset(entry));
	if (tbp)
		*tbp = __swap_table_get(ci, off);
	if (countp) {
		long c = __swap_cluster_get_count(ci, off);

		*countp = c < 0 ? -1 : c;
	}
	swap_cluster_unlock(ci);
	put_swap_device(si);
	return 0;
}

/**
 * uswap_remove_mapping() - see uswap/swap.h. Context: folio locked.
 */
USWAP_API int uswap_remove_mapping(struct folio *folio, uint64_t shadow)
{
	long expected = 1 + (long)folio_nr_pages(folio);
	struct swap_info_struct *si;
	struct swap_cluster_info *ci;
	swp_entry_t entry = folio->swap;

	if (!folio_test_locked(folio) || !folio_test_swapcache(folio) ||
	    folio_test_writeback(folio) || !shadow_fits_swp_tb(shadow))
		return -EINVAL;
	if (swap_entry_pin(entry, &si))
		return -EINVAL;
	if (si->design) {
		int r = si->design->remove_mapping(si, folio, shadow);

		put_swap_device(si);
		return r;
	}
	/*
	 * Freeze the count: a lookup racing with us fails folio_try_get()
	 * and retries on the table, where it finds the shadow.
	 */
	if (!atomic_compare_exchange_strong(&folio->refcount, &expected, 0)) {
		put_swap_device(si);
		return 0;
	}
	if (folio_test_dirty(folio)) {
		atomic_store(&folio->refcount, expected);
		put_swap_device(si);
		return 0;
	}
	ci = swap_cluster_lock(si, swp_offset(entry));
	__swap_cache_del_folio(si, ci, folio, entry, shadow);
	swap_cluster_unlock(ci);
	put_swap_device(si);
	/* Nobody else holds a reference, so nobody waits on the lock. */
	atomic_store_explicit(&folio->lockword, 0, memory_order_release);
	uswap_frame_pool_free_folio(folio);
	return 1;
}
