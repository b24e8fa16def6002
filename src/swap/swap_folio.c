/* SPDX-License-Identifier: MIT */
/*
 * The folio-based slot workflow of the swap table design ("mm, swap:
 * cleanup swap entry management workflow", docs/KERNEL-MAP.md):
 * references dropped under the folio lock, the "is it still swapped?"
 * test, and freeing a folio's slots, by the folio's owner or by reclaim
 * of a folio only the cache holds. The exported entry points that reach
 * these are in swap_api.c.
 */
#include "swap/swap_internal.h"

/**
 * swap_table_folio_put() - folio_put_swap() on a table device: count - 1
 * on @nr slots from @offset, all of the locked cached folio; a slot is
 * never freed here (the cache still holds it).
 * Context: device pinned, folio locked; takes ci->lock.
 * Return: 0, -ENOENT (a count is 0: nothing changed).
 */
int swap_table_folio_put(struct swap_info_struct *si, struct folio *folio, uint64_t offset,
			 unsigned int nr)
{
	unsigned int off = offset % SWAPFILE_CLUSTER, i;
	struct swap_cluster_info *ci;
	int err = 0;

	(void)folio;
	ci = swap_cluster_lock(si, offset);
	for (i = 0; i < nr; i++) {
		if (__swap_cluster_get_count(ci, off + i) <= 0) {
			err = -ENOENT;
			break;
		}
	}
	if (!err) {
		for (i = 0; i < nr; i++)
			__swap_cluster_put_entry(ci, off + i);
		swap_cluster_try_free_extend(si, ci);
	} else {
		uswap_dump_slot("folio_put_swap of a zero count", si, offset + i);
	}
	if (USWAP_DEBUG_WALKS)
		uswap_check_cluster(si, ci);
	swap_cluster_unlock(ci);
	return err;
}

/**
 * swap_table_maybe_swapped() - folio_maybe_swapped() on a table device:
 * does any slot of @folio have a count?
 * Context: device pinned; lockless: the folio lock keeps the slots
 * allocated and the table present (commit 04733e705ebc).
 */
bool swap_table_maybe_swapped(struct swap_info_struct *si, struct folio *folio)
{
	struct swap_cluster_info *ci = offset_to_cluster(si, swp_offset(folio->swap));
	unsigned int off = swp_offset(folio->swap) % SWAPFILE_CLUSTER;
	unsigned long nr = folio_nr_pages(folio), i;
	struct swap_table *t;
	bool ret = false;

	/*
	 * One read section for the folio, and the table read once: the
	 * folio's slots keep the cluster in use, so its table cannot move on
	 * to another cluster (no generation check, swap_table_get_rcu()).
	 */
	uswap_rcu_read_lock();
	t = swap_cluster_table(ci);
	uswap_assert(t);
	for (i = 0; i < nr && !ret; i++) {
		uint64_t tb = swap_table_read(t, off + (unsigned int)i);

		ret = swp_tb_is_countable(tb) && __swp_tb_get_count(tb) > 0;
	}
	uswap_rcu_read_unlock();
	return ret;
}

/**
 * swap_table_free_swap() - folio_free_swap() on a table device: a cached
 * folio none of whose slots has a count leaves the cache (its slots are
 * freed) and is dirtied.
 * Context: device pinned, folio locked, not under writeback; takes ci->lock.
 * Return: 1 released, 0 kept.
 */
int swap_table_free_swap(struct swap_info_struct *si, struct folio *folio)
{
	struct swap_cluster_info *ci;

	/*
	 * With the folio locked no count can leave 0 (only folio_dup_swap does
	 * that, under this lock), so "all zero" seen here stays true.
	 */
	if (!folio_test_swapcache(folio) || swap_table_maybe_swapped(si, folio))
		return 0;
	ci = swap_cluster_lock(si, swp_offset(folio->swap));
	__swap_cache_del_folio(si, ci, folio, folio->swap, 0);
	if (USWAP_DEBUG_WALKS)
		uswap_check_cluster(si, ci);
	swap_cluster_unlock(ci);
	folio_ref_sub(folio, (long)folio_nr_pages(folio));
	folio_mark_dirty(folio);
	return 1;
}

/**
 * __try_to_reclaim_swap() - free the cache-only folio at @offset: if every
 * slot of its folio has count 0 and (@anyway, or nothing maps the folio),
 * the folio leaves the cache and its slots are freed.
 * Context: device pinned; no cluster lock held; trylocks the folio.
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

	folio = swap_table_cache_get(si, entry);
	if (!folio)
		return 0;
	nr = folio_nr_pages(folio);
	ret = -(int)nr;
	if (!folio_trylock(folio))
		goto out_put;
	if (!folio_swap_reclaimable(folio, entry, anyway))
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
