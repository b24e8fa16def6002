/* SPDX-License-Identifier: MIT */
/*
 * The swap cache of the old design as phase I left it: the cluster's swap
 * table names the cached folio (PFN word) or keeps a workingset shadow,
 * but the slot's count and its SWAP_HAS_CACHE pin live in the swap_map.
 * Adding a folio needs the pin first (swapcache_prepare); deleting it
 * turns PFN words into shadows, then puts the pin (put_swap_folio), which
 * frees the slots nobody references.
 */
#include "legacy/legacy_internal.h"

/**
 * __legacy_cache_add() - add_to_swap_cache(): slots of @folio at @entry,
 * whose SWAP_HAS_CACHE the caller took, name the folio; the cache takes
 * nr references. *shadowp (if not NULL) gets the first slot's old shadow.
 * Context: ci->lock and folio lock held.
 */
void __legacy_cache_add(struct swap_info_struct *si, struct swap_cluster_info *ci,
			struct folio *folio, swp_entry_t entry, uint64_t *shadowp)
{
	uint64_t offset = swp_offset(entry);
	unsigned int off = (unsigned int)(offset % SWAPFILE_CLUSTER), i;
	unsigned long nr = folio_nr_pages(folio);

	uswap_assert_held(&ci->lock);
	uswap_assert(folio_test_locked(folio) && !folio_in_swap(folio));
	if (shadowp) {
		*shadowp = swp_tb_get_shadow(__swap_table_get(ci, off));
	}
	folio_ref_add(folio, (long)nr);
	folio->swap = entry;
	folio_set_flag(folio, PG_swapcache);
	folio_set_flag(folio, PG_swapbacked);
	for (i = 0; i < nr; i++) {
		USWAP_BUG_ON(!(legacy_map_get(si, offset + i) & SWAP_HAS_CACHE));
		USWAP_BUG_ON(swp_tb_is_folio(__swap_table_get(ci, off + i)));
		__swap_table_set(ci, off + i, pfn_to_swp_tb(folio->pfn, 0));
	}
}

/**
 * __legacy_cache_del() - __delete_from_swap_cache() + put_swap_folio():
 * PFN words become @shadow (NULL for none), the folio leaves the cache,
 * then SWAP_HAS_CACHE is put and unreferenced slots are freed. The cache's
 * folio references are not dropped.
 * Context: ci->lock and folio lock held, no writeback.
 */
void __legacy_cache_del(struct swap_info_struct *si, struct swap_cluster_info *ci,
			struct folio *folio, uint64_t shadow)
{
	uint64_t offset = swp_offset(folio->swap);
	unsigned int off = (unsigned int)(offset % SWAPFILE_CLUSTER), i;
	unsigned long nr = folio_nr_pages(folio);
	uint64_t word = shadow ? shadow_to_swp_tb(shadow, 0) : SWP_TB_NULL;

	uswap_assert_held(&ci->lock);
	uswap_assert(folio_test_locked(folio) && folio_test_swapcache(folio));
	uswap_assert(!folio_test_writeback(folio));
	for (i = 0; i < nr; i++) {
		uint64_t tb = __swap_table_xchg(ci, off + i, word);

		USWAP_BUG_ON(!swp_tb_is_folio(tb) || swp_tb_to_pfn(tb) != folio->pfn);
	}
	folio_clear_flag(folio, PG_swapcache);
	folio->swap.val = 0;
	__legacy_put_cache(si, ci, offset, (unsigned int)nr);
}

/**
 * legacy_scan_range() - may the allocator take [off, off+nr) of @ci? Free
 * map bytes can; SWAP_HAS_CACHE-only ones can after reclaim when swap is
 * more than half full. Slots past the device end (the masked tail) cannot.
 * Context: ci->lock held.
 */
bool legacy_scan_range(struct swap_info_struct *si, struct swap_cluster_info *ci,
		       unsigned int off, unsigned int nr, bool *need_reclaim)
{
	uint64_t base = cluster_offset(si, ci);
	unsigned int i;

	uswap_assert_held(&ci->lock);
	*need_reclaim = false;
	if (base + off + nr > si->max)
		return false;
	for (i = 0; i < nr; i++) {
		unsigned char ent = legacy_map_get(si, base + off + i);

		if (!ent)
			continue;
		if (ent == SWAP_HAS_CACHE) {
			/* Asked only here, as the kernel does: it reads
			 * global counts that other CPUs write. */
			if (!vm_swap_full())
				return false;
			*need_reclaim = true;
			continue;
		}
		return false;
	}
	return true;
}

/**
 * legacy_alloc_fill() - the allocator took [off, off+2^order): the map
 * says SWAP_HAS_CACHE (count 0) and @folio joins the cache; a hibernation
 * slot (@folio NULL) gets count 1 and no cache. Context: ci->lock held.
 */
void legacy_alloc_fill(struct swap_info_struct *si, struct swap_cluster_info *ci,
		       struct folio *folio, unsigned int off, unsigned int order)
{
	uint64_t offset = cluster_offset(si, ci) + off;
	unsigned int nr = 1U << order, i;

	uswap_assert_held(&ci->lock);
	for (i = 0; i < nr; i++) {
		USWAP_BUG_ON(legacy_map_get(si, offset + i));
		legacy_map_set(si, offset + i, folio ? SWAP_HAS_CACHE : 1);
	}
	if (folio)
		__legacy_cache_add(si, ci, folio, swp_entry(si->type, offset), NULL);
	if (USWAP_DEBUG >= 2 && folio)
		uswap_assert(folio_nr_pages(folio) == nr);
}

/** legacy_cache_only() - the slot is held by SWAP_HAS_CACHE alone. ci->lock held. */
bool legacy_cache_only(struct swap_info_struct *si, struct swap_cluster_info *ci,
		       unsigned int off)
{
	uint64_t offset = cluster_offset(si, ci) + off;

	uswap_assert_held(&ci->lock);
	return offset < si->max && legacy_map_get(si, offset) == SWAP_HAS_CACHE;
}

/**
 * legacy_free_swap() - folio_free_swap(). A cached folio leaves the cache
 * if no slot has a count (its slots are freed, it is dirtied). A bypass
 * folio (read around the cache) gives its SWAP_HAS_CACHE pins back, the
 * kernel's swapcache_clear(): slots with count 0 are freed, the others
 * stay swapped out.
 * Context: folio locked, not under writeback. Return: 1 released, 0 kept.
 */
int legacy_free_swap(struct swap_info_struct *si, struct folio *folio)
{
	struct swap_cluster_info *ci;
	unsigned long nr = folio_nr_pages(folio);

	if (folio_test_flag(folio, PG_swapbypass)) {
		uint64_t offset = swp_offset(folio->swap);

		legacy_swapcache_clear(si, offset, (unsigned int)nr);
		folio->swap.val = 0;
		folio_clear_flag(folio, PG_swapbypass);
		return 1;
	}
	/* With the folio locked no count leaves 0 (only a dup under this
	 * lock does that), so "all zero" seen here stays true. */
	if (legacy_maybe_swapped(si, folio))
		return 0;
	ci = swap_cluster_lock(si, swp_offset(folio->swap));
	__legacy_cache_del(si, ci, folio, 0);
	if (USWAP_DEBUG_WALKS)
		legacy_check_cluster(si, ci);
	swap_cluster_unlock(ci);
	folio_ref_sub(folio, (long)nr);
	folio_mark_dirty(folio);
	return 1;
}

/**
 * legacy_cache_add() - swap_cache_add_folio() for a legacy device:
 * swapcache_prepare() and add_to_swap_cache() in one step under ci->lock.
 * Return: 0; -EEXIST (SWAP_HAS_CACHE already set: cached, or a reader holds
 * it), -ENOENT (a slot has count 0), -EINVAL (bad slot). Nothing changes
 * on error.
 */
int legacy_cache_add(struct swap_info_struct *si, struct folio *folio, swp_entry_t entry,
		     uint64_t *shadowp)
{
	unsigned long nr = folio_nr_pages(folio);
	struct swap_cluster_info *ci;
	uint64_t shadow = 0;
	int err;

	if (folio_in_swap(folio) || swp_offset(entry) % SWAPFILE_CLUSTER + nr > SWAPFILE_CLUSTER)
		return -EINVAL;
	ci = swap_cluster_lock(si, swp_offset(entry));
	err = __legacy_swapcache_prepare(si, ci, swp_offset(entry), (unsigned int)nr);
	if (!err)
		__legacy_cache_add(si, ci, folio, entry, &shadow);
	if (USWAP_DEBUG_WALKS)
		legacy_check_cluster(si, ci);
	swap_cluster_unlock(ci);
	if (!err && shadowp)
		*shadowp = shadow;
	return err;
}

/**
 * legacy_cache_del() - swap_cache_del_folio() on a legacy device: delete
 * (putting SWAP_HAS_CACHE), leaving the cache's folio references to the
 * caller. Context: folio locked and cached, no writeback; takes ci->lock.
 * Return: 0.
 */
int legacy_cache_del(struct swap_info_struct *si, struct folio *folio, uint64_t shadow)
{
	struct swap_cluster_info *ci = swap_cluster_lock(si, swp_offset(folio->swap));

	__legacy_cache_del(si, ci, folio, shadow);
	if (USWAP_DEBUG_WALKS)
		legacy_check_cluster(si, ci);
	swap_cluster_unlock(ci);
	return 0;
}

/** legacy_cache_replace() - migration is not part of the comparison. Return: -EOPNOTSUPP. */
int legacy_cache_replace(struct swap_info_struct *si, struct folio *old, struct folio *new,
			 swp_entry_t entry)
{
	(void)si; (void)old; (void)new; (void)entry;
	return -EOPNOTSUPP;
}

/*
 * Tests that include this file may run code in a lookup between turning
 * the PFN into a folio and taking the reference.
 */
#ifndef legacy_cache_lookup_hook
#define legacy_cache_lookup_hook(folio) do { } while (0)
#endif

/**
 * legacy_cache_get() - swap_cache_get_folio(): the cached folio with a
 * reference, or NULL. Lockless: the read of the PFN, pfn_folio() and
 * folio_try_get() are one RCU read section, which keeps the folio structs
 * of a pool destroyed meanwhile (swap_cache_get_folio()); the recheck
 * after folio_try_get() catches a folio that left the cache (and maybe
 * was reused) meanwhile.
 */
struct folio *legacy_cache_get(struct swap_info_struct *si, swp_entry_t entry)
{
	struct swap_cluster_info *ci = offset_to_cluster(si, swp_offset(entry));
	unsigned int off = (unsigned int)(swp_offset(entry) % SWAPFILE_CLUSTER);
	struct folio *folio = NULL;

	uswap_rcu_read_lock();
	for (;;) {
		uint64_t tb = swap_table_get_rcu(ci, off);

		if (!swp_tb_is_folio(tb))
			break;
		folio = pfn_folio(swp_tb_to_pfn(tb));
		legacy_cache_lookup_hook(folio);
		if (folio && folio_try_get(folio)) {
			if (swap_table_get_rcu(ci, off) == tb)
				break;
			folio_put(folio);
		}
		folio = NULL;
	}
	uswap_rcu_read_unlock();
	return folio;
}

/** legacy_cache_shadow() - the slot's shadow, 0 if none. Lockless. */
uint64_t legacy_cache_shadow(struct swap_info_struct *si, swp_entry_t entry)
{
	return swp_tb_get_shadow(swap_table_get(offset_to_cluster(si, swp_offset(entry)),
						(unsigned int)(swp_offset(entry) % SWAPFILE_CLUSTER)));
}

/**
 * legacy_try_reclaim() - __try_to_reclaim_swap(): drop the cached folio
 * at @offset if every slot of it is held by SWAP_HAS_CACHE alone and
 * (@anyway, or it is unmapped, or swap is full).
 * Context: no cluster lock held; trylocks the folio.
 * Return: as the kernel's: the folio's page count if it was freed, minus
 * that count if a folio is cached there but stays, 0 if none is cached.
 */
int legacy_try_reclaim(struct swap_info_struct *si, uint64_t offset, bool anyway)
{
	swp_entry_t entry = swp_entry(si->type, offset);
	struct swap_cluster_info *ci;
	struct folio *folio = legacy_cache_get(si, entry);
	unsigned long nr, i;
	uint64_t first;
	int ret;

	if (!folio)
		return 0;
	nr = folio_nr_pages(folio);
	ret = -(int)nr;
	if (!folio_trylock(folio))
		goto out_put;
	if (!folio_swap_reclaimable(folio, entry, anyway))
		goto out_unlock;
	first = swp_offset(folio->swap);
	ci = swap_cluster_lock(si, first);
	for (i = 0; i < nr; i++)
		if (legacy_map_get(si, first + i) != SWAP_HAS_CACHE)
			break;
	if (i == nr) {
		__legacy_cache_del(si, ci, folio, 0);
		ret = (int)nr;
	}
	if (USWAP_DEBUG_WALKS)
		legacy_check_cluster(si, ci);
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

/**
 * legacy_peek() - uswap_swap_tb_peek() on a legacy device: *tb is the
 * slot's swap_map byte (not a table word), *count the exact count (-1 for
 * a bad slot). Context: takes ci->lock. Return: 0.
 */
int legacy_peek(struct swap_info_struct *si, uint64_t offset, uint64_t *tb, long *count)
{
	struct swap_cluster_info *ci = swap_cluster_lock(si, offset);

	if (tb)
		*tb = legacy_map_get(si, offset);
	if (count) {
		long c = __legacy_get_count(si, ci, offset);

		*count = c < 0 ? -1 : c;
	}
	swap_cluster_unlock(ci);
	return 0;
}
