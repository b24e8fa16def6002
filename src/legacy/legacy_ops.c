/* SPDX-License-Identifier: MIT */
/*
 * The legacy design's vtable, its per-device setup and teardown, and its
 * figures (the design is chosen by name in src/swap/swap_design.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uswap/legacy.h>
#include "legacy/legacy_internal.h"
#include "util/alloc.h"

/* Words of the zero map: a bit per slot. */
static size_t legacy_zeromap_words(struct swap_info_struct *si)
{
	return (si->max + 63) / 64;
}

/*
 * ops->setup: the swap_map, with SWAP_MAP_BAD for every slot the generic
 * setup marked SWP_TB_BAD (header, bad pages). Runs before publication.
 * Return: 0, -ENOMEM (nothing left allocated).
 */
static int legacy_setup(struct swap_info_struct *si)
{
	struct legacy_info *li = uswap_calloc(1, sizeof(*li));
	unsigned long c;
	unsigned int i;

	if (!li)
		return -ENOMEM;
	li->swap_map = uswap_calloc(si->max, 1);
	li->swap_cgroup = uswap_calloc(si->max, sizeof(*li->swap_cgroup));
	li->zeromap = uswap_calloc(legacy_zeromap_words(si), sizeof(*li->zeromap));
	if (!li->swap_map || !li->swap_cgroup || !li->zeromap) {
		free(li->swap_map);
		free(li->swap_cgroup);
		free(li->zeromap);
		free(li);
		return -ENOMEM;
	}
	li->nr_map_pages = (si->max + LEGACY_MAP_PAGE - 1) / LEGACY_MAP_PAGE;
	uswap_spin_init(&li->cont_lock);
	si->design_priv = li;
	for (c = 0; c < si->nr_clusters; c++) {
		struct swap_cluster_info *ci = &si->cluster_info[c];

		uswap_spin_lock(&ci->lock);
		for (i = 0; i < SWAPFILE_CLUSTER && c * SWAPFILE_CLUSTER + i < si->max; i++)
			if (swp_tb_is_bad(__swap_table_get(ci, i)))
				legacy_map_set(si, c * SWAPFILE_CLUSTER + i, SWAP_MAP_BAD);
		if (USWAP_DEBUG_WALKS)
			legacy_check_cluster(si, ci);
		swap_cluster_unlock(ci);
	}
	return 0;
}

/* Swapoff: every slot is free or bad again; free the map and pages. */
static void legacy_teardown(struct swap_info_struct *si)
{
	struct legacy_info *li = legacy_info(si);
	unsigned int o;

	for (o = 0; o < si->max; o++) {
		unsigned char ent = legacy_map_get(si, o);

		USWAP_BUG_ON(ent && ent != SWAP_MAP_BAD);
	}
	legacy_free_cont_pages(li);
	uswap_spin_destroy(&li->cont_lock);
	for (o = 0; o < si->max; o++)
		USWAP_BUG_ON(li->swap_cgroup[o]);
	free(li->swap_cgroup);
	free(li->zeromap);
	free(li->swap_map);
	free(li);
	si->design_priv = NULL;
}

static uint64_t legacy_cont_bytes(struct swap_info_struct *si)
{
	struct legacy_info *li = legacy_info(si);
	uint64_t bytes = (uint64_t)atomic_load(&li->nr_cont_pages) * LEGACY_MAP_PAGE;

	if (atomic_load(&li->has_cont_heads))
		bytes += li->nr_map_pages * sizeof(*li->cont_heads);
	return bytes;
}

/* The map's memcg ids of slot @offset on (swap_cgroup). ci->lock held. */
static uint16_t *legacy_memcg_ids(struct swap_info_struct *si, struct swap_cluster_info *ci,
				  uint64_t offset)
{
	uswap_assert_held(&ci->lock);
	return &legacy_info(si)->swap_cgroup[offset];
}

/* The zero map's bits of [offset, offset+nr) to @zero. ci->lock held. */
static void legacy_zero_set(struct swap_info_struct *si, struct swap_cluster_info *ci,
			    uint64_t offset, unsigned int nr, bool zero)
{
	uint64_t *zm = legacy_info(si)->zeromap, o;

	uswap_assert_held(&ci->lock);
	for (o = offset; o < offset + nr; o++)
		zm[o / 64] = zero ? zm[o / 64] | (1ULL << (o % 64)) : zm[o / 64] & ~(1ULL << (o % 64));
}

/* How many of [offset, offset+nr) have their zero bit. ci->lock held. */
static unsigned int legacy_zero_count(struct swap_info_struct *si, struct swap_cluster_info *ci,
				      uint64_t offset, unsigned int nr)
{
	const uint64_t *zm = legacy_info(si)->zeromap;
	unsigned int n = 0;
	uint64_t o;

	uswap_assert_held(&ci->lock);
	for (o = offset; o < offset + nr; o++)
		n += (zm[o / 64] >> (o % 64)) & 1;
	return n;
}

/* The map, the swap_cgroup array and the zero map are static; continuation pages dynamic. */
static void legacy_stat_op(struct swap_info_struct *si, struct uswap_swap_stat *st)
{
	st->static_bytes += si->max + (uint64_t)si->max * sizeof(uint16_t) +
			    legacy_zeromap_words(si) * sizeof(uint64_t);
	st->dynamic_bytes += legacy_cont_bytes(si);
}

const struct swap_design_ops swap_legacy_ops = {
	.name = "legacy",
	.scan_range = legacy_scan_range,
	.alloc_fill = legacy_alloc_fill,
	.cache_only = legacy_cache_only,
	.check_cluster = legacy_check_cluster,
	.dup = legacy_dup,
	.folio_put = legacy_folio_put,
	.put_direct = legacy_put_direct,
	.swapcount = legacy_swapcount,
	.swapped = legacy_swapped,
	.maybe_swapped = legacy_maybe_swapped,
	.free_swap = legacy_free_swap,
	.cache_add = legacy_cache_add,
	.cache_del = legacy_cache_del,
	.cache_get = legacy_cache_get,
	.cache_shadow = legacy_cache_shadow,
	.cache_replace = legacy_cache_replace,
	.try_reclaim = legacy_try_reclaim,
	.swapin = legacy_swapin,
	.swapin_lock = legacy_swapin_lock,
	.peek = legacy_peek,
	.setup = legacy_setup,
	.teardown = legacy_teardown,
	.stat = legacy_stat_op,
	.memcg_ids = legacy_memcg_ids,
	.zero_set = legacy_zero_set,
	.zero_count = legacy_zero_count,
};

/** uswap_legacy_stat() - see uswap/legacy.h. Context: lockless snapshot. */
USWAP_API int uswap_legacy_stat(unsigned int type, struct uswap_legacy_stat *st)
{
	struct swap_info_struct *si;
	struct legacy_info *li;
	int err;

	if (type >= MAX_SWAPFILES || !st)
		return -EINVAL;
	err = swap_entry_pin(swp_entry(type, 0), &si);
	if (err)
		return err;
	if (si->design != &swap_legacy_ops) {
		put_swap_device(si);
		return -EINVAL;
	}
	li = legacy_info(si);
	memset(st, 0, sizeof(*st));
	st->map_bytes = si->max;
	st->swap_cgroup_bytes = (uint64_t)si->max * sizeof(uint16_t);
	st->zeromap_bytes = legacy_zeromap_words(si) * sizeof(uint64_t);
	st->nr_cont_pages = (uint64_t)atomic_load(&li->nr_cont_pages);
	st->cont_bytes = legacy_cont_bytes(si);
	st->bypass_swapins = atomic_load(&li->bypass_swapins);
	st->bypass_retries = atomic_load(&li->bypass_retries);
	st->cache_retries = atomic_load(&li->cache_retries);
	put_swap_device(si);
	return 0;
}
