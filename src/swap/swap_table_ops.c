/* SPDX-License-Identifier: MIT */
/*
 * The swap table design as an ops table, like the legacy design's
 * (swap_legacy_ops, src/legacy/legacy_ops.c): what the exported entry
 * points (swap_api.c) and the generic allocator and swapoff call on a
 * device of this design. The allocator's hooks live here; the other ops
 * are in the files that own their part of the design (swap_count.c,
 * swap_folio.c, swap_cache.c, swap_state.c).
 */
#include "swap/swap_internal.h"

/*
 * swap_table_scan_range() - may the allocator take [off, off+nr) of @ci?
 * Free slots can; cache-only slots (PFN, count 0) can after reclaim, when
 * swap is more than half full. vm_swap_full() is asked only when a
 * cache-only slot is met, as the kernel's cluster_scan_range() does: it
 * reads the global counts, whose lines other CPUs write.
 * Context: ci->lock held.
 */
static bool swap_table_scan_range(struct swap_info_struct *si, struct swap_cluster_info *ci,
				  unsigned int off, unsigned int nr, bool *need_reclaim)
{
	unsigned int i;

	(void)si;
	*need_reclaim = false;
	for (i = 0; i < nr; i++) {
		uint64_t tb = __swap_table_get(ci, off + i);

		if (swp_tb_is_null(tb))
			continue;
		if (swp_tb_is_folio(tb) && !__swp_tb_get_count(tb)) {
			if (!vm_swap_full())
				return false;
			*need_reclaim = true;
			continue;
		}
		return false;
	}
	return true;
}

/*
 * swap_table_alloc_fill() - the allocator took [off, off+2^order): cache
 * @folio there with counts 0, or for a hibernation slot (@folio NULL)
 * store an empty shadow with count 1. Context: ci->lock (and the folio
 * lock) held.
 */
static void swap_table_alloc_fill(struct swap_info_struct *si, struct swap_cluster_info *ci,
				  struct folio *folio, unsigned int off, unsigned int order)
{
	unsigned int nr = 1U << order, i;

	if (folio) {
		__swap_cache_add_folio(ci, folio, swp_entry(si->type, cluster_offset(si, ci) + off));
		return;
	}
	for (i = 0; i < nr; i++)
		__swap_table_set(ci, off + i, shadow_to_swp_tb(0, swp_tb_mk_flags(1, false)));
}

/* swap_table_cache_only() - the slot is held by the swap cache alone. ci->lock held. */
static bool swap_table_cache_only(struct swap_info_struct *si, struct swap_cluster_info *ci,
				  unsigned int off)
{
	uint64_t tb = __swap_table_get(ci, off);

	(void)si;
	return swp_tb_is_folio(tb) && !__swp_tb_get_count(tb);
}

/*
 * swap_table_memcg_ids() - the ids of slot @offset on: the cluster's
 * table's id array (the kernel's swap_memcg_table), NULL without a table.
 * Context: ci->lock held.
 */
static uint16_t *swap_table_memcg_ids(struct swap_info_struct *si, struct swap_cluster_info *ci,
				      uint64_t offset)
{
	struct swap_table *t = swap_cluster_table(ci);

	(void)si;
	uswap_assert_held(&ci->lock);
	return t ? &t->memcg[offset % SWAPFILE_CLUSTER] : NULL;
}

/*
 * swap_table_zero_set() - Z of [offset, offset+nr) to @zero: the entries'
 * flag, or the table's bitmap where the entry has no room for it.
 * Context: ci->lock held; the slots allocated (shadow or PFN entries).
 */
static void swap_table_zero_set(struct swap_info_struct *si, struct swap_cluster_info *ci,
				uint64_t offset, unsigned int nr, bool zero)
{
	unsigned int off = (unsigned int)(offset % SWAPFILE_CLUSTER), i;

	(void)si;
	uswap_assert(off + nr <= SWAPFILE_CLUSTER);
	for (i = off; i < off + nr; i++) {
#if SWAP_TABLE_HAS_ZEROFLAG
		uint64_t tb = __swap_table_get(ci, i);

		if (swp_tb_is_zero(tb) != zero)
			__swap_table_set(ci, i, __swp_tb_mk_zero(tb, zero));
#else
		uint64_t *w = &swap_cluster_table(ci)->zero[i / 64];

		*w = zero ? *w | (1ULL << (i % 64)) : *w & ~(1ULL << (i % 64));
#endif
	}
}

/* swap_table_zero_count() - how many of [offset, offset+nr) have Z. ci->lock held. */
static unsigned int swap_table_zero_count(struct swap_info_struct *si, struct swap_cluster_info *ci,
					  uint64_t offset, unsigned int nr)
{
	unsigned int off = (unsigned int)(offset % SWAPFILE_CLUSTER), i, n = 0;

	(void)si;
	uswap_assert(off + nr <= SWAPFILE_CLUSTER);
	if (!swap_cluster_table(ci))
		return 0;
	for (i = off; i < off + nr; i++) {
#if SWAP_TABLE_HAS_ZEROFLAG
		n += swp_tb_is_zero(__swap_table_get(ci, i));
#else
		n += (swap_cluster_table(ci)->zero[i / 64] >> (i % 64)) & 1;
#endif
	}
	return n;
}

/*
 * Swapoff: the design keeps nothing beside the cluster tables, which the
 * device frees itself (swapoff_check_clusters() has checked them).
 */
static void swap_table_teardown(struct swap_info_struct *si)
{
	(void)si;
}

/* Every figure of the table design (tables, extend tables) is the device's own. */
static void swap_table_stat(struct swap_info_struct *si, struct uswap_swap_stat *st)
{
	(void)si;
	(void)st;
}

const struct swap_design_ops swap_table_ops = {
	.name = "table",
	.scan_range = swap_table_scan_range,
	.alloc_fill = swap_table_alloc_fill,
	.cache_only = swap_table_cache_only,
	.check_cluster = uswap_check_cluster,
	.dup = swap_dup_entries_cluster,
	.folio_put = swap_table_folio_put,
	.put_direct = swap_table_put_direct,
	.swapcount = swap_table_swapcount,
	.swapped = swap_table_swapped,
	.maybe_swapped = swap_table_maybe_swapped,
	.free_swap = swap_table_free_swap,
	.cache_add = swap_table_cache_add,
	.cache_del = swap_table_cache_del,
	.cache_get = swap_table_cache_get,
	.cache_shadow = swap_table_cache_shadow,
	.cache_replace = swap_table_cache_replace,
	.try_reclaim = __try_to_reclaim_swap,
	.swapin = swap_table_swapin,
	.swapin_lock = swap_table_swapin_lock,
	.peek = swap_table_peek,
	.teardown = swap_table_teardown,
	.memcg_ids = swap_table_memcg_ids,
	.zero_set = swap_table_zero_set,
	.zero_count = swap_table_zero_count,
	.stat = swap_table_stat,
};
