/* SPDX-License-Identifier: MIT */
/*
 * The swap cache is the swap table: a cached slot's entry holds the PFN of
 * the folio with its data, beside the slot's count. Adding a folio under
 * the cluster lock is the one synchronization point of swap-in: the first
 * to add wins, the others find its folio and wait on its lock.
 *
 * The swap table design's cache ops (swap_table_ops); the exported
 * swap_cache_*() entry points that reach them are in swap_api.c.
 */
#include "swap/swap_internal.h"

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
				 pfn_to_swp_tb(folio->pfn, swp_tb_is_null(tb) ? 0 : swp_tb_get_flags(tb)));
	}
}

/**
 * swap_table_cache_add() - swap_cache_add_folio() on a table device: the
 * slots must be in use (count > 0) and not cached; the first slot's shadow
 * goes to *@shadowp. Context: device pinned, folio locked; takes ci->lock.
 * Return: 0; -EEXIST (cached), -ENOENT (a slot is free or count 0),
 * -EINVAL (bad slot). Nothing changes on error.
 */
int swap_table_cache_add(struct swap_info_struct *si, struct folio *folio, swp_entry_t entry,
			 uint64_t *shadowp)
{
	unsigned long nr = folio_nr_pages(folio);
	unsigned int off = swp_offset(entry) % SWAPFILE_CLUSTER, i;
	struct swap_cluster_info *ci;
	uint64_t shadow = 0;
	int err = 0;

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
		__swap_table_set(ci, off + i, shadow_to_swp_tb(shadow, swp_tb_get_flags(tb)));
	}
	if (run)
		__swap_cluster_free_entries(si, ci, off + (unsigned int)nr - run, run);
	folio_clear_flag(folio, PG_swapcache);
	folio->swap.val = 0;
}

/**
 * swap_table_cache_del() - swap_cache_del_folio() on a table device,
 * leaving the cache's folio references to the caller.
 * Context: device pinned, folio locked and cached, no writeback; takes
 * ci->lock. Return: 0.
 */
int swap_table_cache_del(struct swap_info_struct *si, struct folio *folio, uint64_t shadow)
{
	struct swap_cluster_info *ci = swap_cluster_lock(si, swp_offset(folio->swap));

	__swap_cache_del_folio(si, ci, folio, folio->swap, shadow);
	if (USWAP_DEBUG_WALKS)
		uswap_check_cluster(si, ci);
	swap_cluster_unlock(ci);
	return 0;
}

/*
 * Tests that include this file may run code in a lookup between turning
 * the PFN into a folio and taking the reference.
 */
#ifndef swap_cache_lookup_hook
#define swap_cache_lookup_hook(folio) do { } while (0)
#endif

/**
 * swap_table_cache_get() - swap_cache_get_folio() on a table device: the
 * cached folio with a reference, or NULL.
 * Context: device pinned; lockless. The read of the PFN, pfn_folio() and
 * folio_try_get() are one RCU read section: a pool whose last folio was
 * freed after we read its PFN is unregistered, but its folio structs are
 * freed (and its PFN range reused) only after a grace period, so
 * folio_try_get() sees a free folio (refcount 0) and fails. A folio freed
 * and reallocated meanwhile is caught by the recheck of the entry.
 */
struct folio *swap_table_cache_get(struct swap_info_struct *si, swp_entry_t entry)
{
	struct swap_cluster_info *ci = offset_to_cluster(si, swp_offset(entry));
	unsigned int off = swp_offset(entry) % SWAPFILE_CLUSTER;
	struct folio *folio = NULL;

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
	return folio;
}

/**
 * swap_table_cache_shadow() - swap_cache_get_shadow() on a table device.
 * Context: device pinned; lockless. Return: the shadow, 0 if none.
 */
uint64_t swap_table_cache_shadow(struct swap_info_struct *si, swp_entry_t entry)
{
	return swp_tb_get_shadow(swap_table_get(offset_to_cluster(si, swp_offset(entry)),
						swp_offset(entry) % SWAPFILE_CLUSTER));
}

/**
 * swap_table_cache_replace() - swap_cache_replace_folio() on a table
 * device: @new takes @old's place at @entry, counts kept.
 * Context: device pinned, both folios locked; takes ci->lock. Return: 0.
 */
int swap_table_cache_replace(struct swap_info_struct *si, struct folio *old, struct folio *new,
			     swp_entry_t entry)
{
	unsigned long nr_new = folio_nr_pages(new), nr_old = folio_nr_pages(old), i;
	unsigned int off = swp_offset(entry) % SWAPFILE_CLUSTER;
	struct swap_cluster_info *ci;
	bool old_left = false;

	ci = swap_cluster_lock(si, swp_offset(entry));
	folio_ref_add(new, (long)nr_new);
	new->swap = entry;
	folio_set_flag(new, PG_swapcache);
	folio_set_flag(new, PG_swapbacked);
	for (i = 0; i < nr_new; i++) {
		uint64_t tb = __swap_table_get(ci, off + (unsigned int)i);

		USWAP_BUG_ON(!swp_tb_is_folio(tb) || swp_tb_to_pfn(tb) != old->pfn);
		__swap_table_set(ci, off + (unsigned int)i,
				 pfn_to_swp_tb(new->pfn, swp_tb_get_flags(tb)));
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
	folio_ref_sub(old, (long)nr_new);
	return 0;
}
