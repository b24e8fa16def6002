/* SPDX-License-Identifier: MIT */
/*
 * The seam between the slot designs: the exported entry points that reach
 * a device's slots, in one place. Each checks what its comment in
 * uswap/swap.h promises to check, pins the device (swap_entry_pin(), which
 * also checks the type and offset, and warns about a bad entry), calls
 * the device's design, si->design (swap_table_ops, or swap_legacy_ops of
 * src/legacy), and unpins. An op runs pinned with its arguments checked
 * and returns what the entry point returns. Code that already holds a pin
 * calls the design's own functions, never these, so nothing pins twice.
 *
 * uswap_remove_mapping() is the vmscan side's (src/mm/vmscan.c) and the
 * slot allocator (folio_alloc_swap) picks its device itself
 * (swap_alloc.c).
 */
#include "swap/swap_internal.h"

static bool entry_aligned(swp_entry_t entry, unsigned long nr)
{
	return !(swp_offset(entry) & (nr - 1));
}

/* The slot range of a swap-cache folio, or of one of its pages. */
static int folio_swap_range(struct folio *folio, long subpage, uint64_t *offset, unsigned int *nr)
{
	unsigned long n = folio_nr_pages(folio);

	if (!folio_test_locked(folio) || !folio_in_swap(folio))
		return -EINVAL;
	if (subpage >= (long)n)
		return -EINVAL;
	*offset = swp_offset(folio->swap) + (subpage >= 0 ? (uint64_t)subpage : 0);
	*nr = subpage >= 0 ? 1 : (unsigned int)n;
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

/* ---- the folio workflow ---- */

/** folio_alloc_swap() - see uswap/swap.h. Context: folio locked. */
USWAP_API int folio_alloc_swap(struct folio *folio)
{
	swp_entry_t entry;

	/* Only data worth keeping goes to swap: the kernel asserts uptodate.
	 * A folio that already holds slots (cached, or read around the cache
	 * holding SWAP_HAS_CACHE) must not get others: its own would leak. */
	unsigned int nr = (unsigned int)folio_nr_pages(folio);
	int id, err;

	if (!folio_test_locked(folio) || folio_in_swap(folio) ||
	    !folio_test_uptodate(folio) || folio_order(folio) >= SWAP_NR_ORDERS)
		return -EINVAL;
	/*
	 * The group's limit first (mem_cgroup_try_charge_swap()): over it the
	 * folio gets no slots and stays in memory. The allocator records the
	 * id it returns in the slots (swap_cgroup_record()); a group gone
	 * meanwhile leaves the root's 0.
	 */
	id = swap_cgroup_try_charge(folio_memcg_id(folio), nr);
	if (id < 0)
		return id;
	folio_set_memcg_id(folio, (uint16_t)id);
	err = swap_alloc_slots(folio, folio_order(folio), false, -1, &entry);
	if (err) {
		/* No free slot: the group's "fail" event, as the kernel counts
		 * it when mem_cgroup_try_charge_swap() meets an empty entry. */
		swap_cgroup_count_fail((uint16_t)id);
		swap_cgroup_uncharge((uint16_t)id, nr);
	}
	return err;
}

/** folio_dup_swap() - see uswap/swap.h. Context: folio locked; takes ci->lock. */
USWAP_API int folio_dup_swap(struct folio *folio, long subpage)
{
	struct swap_info_struct *si;
	uint64_t offset;
	unsigned int nr;
	int err = folio_swap_range(folio, subpage, &offset, &nr);

	if (err)
		return err;
	err = swap_entry_pin(folio->swap, &si);
	if (err)
		return err;
	err = si->design->dup(si, offset, nr, false);
	put_swap_device(si);
	return err;
}

/** folio_put_swap() - see uswap/swap.h. Context: folio locked; takes ci->lock. */
USWAP_API int folio_put_swap(struct folio *folio, long subpage)
{
	struct swap_info_struct *si;
	uint64_t offset;
	unsigned int nr;
	int err = folio_swap_range(folio, subpage, &offset, &nr);

	if (err)
		return err;
	err = swap_entry_pin(folio->swap, &si);
	if (err)
		return err;
	err = si->design->folio_put(si, folio, offset, nr);
	put_swap_device(si);
	return err;
}

/**
 * folio_maybe_swapped() - see uswap/swap.h. Context: folio locked;
 * lockless otherwise.
 */
USWAP_API bool folio_maybe_swapped(struct folio *folio)
{
	struct swap_info_struct *si;
	bool ret;

	if (!folio_in_swap(folio) || swap_entry_pin(folio->swap, &si))
		return false;
	ret = si->design->maybe_swapped(si, folio);
	put_swap_device(si);
	return ret;
}

/** folio_free_swap() - see uswap/swap.h. Context: folio locked. */
USWAP_API int folio_free_swap(struct folio *folio)
{
	struct swap_info_struct *si;
	int ret;

	if (!folio_test_locked(folio))
		return -EINVAL;
	if (!folio_in_swap(folio) || folio_test_writeback(folio))
		return 0;
	if (swap_entry_pin(folio->swap, &si))
		return 0;
	ret = si->design->free_swap(si, folio);
	put_swap_device(si);
	return ret;
}

/** swap_alloc_hibernation_slot() - see uswap/swap.h. */
USWAP_API swp_entry_t swap_alloc_hibernation_slot(unsigned int type)
{
	swp_entry_t entry = { 0 };

	if (type >= MAX_SWAPFILES || swap_alloc_slots(NULL, 0, true, (int)type, &entry))
		entry.val = 0;
	return entry;
}

/** swap_free_hibernation_slot() - see uswap/swap.h. */
USWAP_API int swap_free_hibernation_slot(swp_entry_t entry)
{
	struct swap_info_struct *si;
	int err = swap_entry_pin(entry, &si);

	if (err)
		return err;
	err = si->design->put_direct(si, swp_offset(entry), 1);
	/* Readahead may have cached the slot meanwhile: drop that folio too. */
	if (!err)
		si->design->try_reclaim(si, swp_offset(entry), true);
	put_swap_device(si);
	return err;
}

/* ---- direct references (page-table copies and zaps) and counts ---- */

/** swap_dup_entry_direct() - see uswap/swap.h. Context: takes ci->lock. */
USWAP_API int swap_dup_entry_direct(swp_entry_t entry)
{
	struct swap_info_struct *si;
	int err = swap_entry_pin(entry, &si);

	if (err)
		return err;
	err = si->design->dup(si, swp_offset(entry), 1, true);
	put_swap_device(si);
	return err;
}

/**
 * swap_put_entries_direct() - see uswap/swap.h. The range must lie in the
 * device; the design checks every slot of it before changing any.
 * Context: takes ci->lock per cluster, then trylocks folios.
 */
USWAP_API int swap_put_entries_direct(swp_entry_t entry, long nr)
{
	uint64_t offset = swp_offset(entry), end;
	struct swap_info_struct *si;
	int err;

	if (nr <= 0)
		return -EINVAL;
	err = swap_entry_pin(entry, &si);
	if (err)
		return err;
	end = offset + (uint64_t)nr;
	if (end > si->max || end < offset) {
		uswap_dump_slot("put past the device end", si, end - 1);
		put_swap_device(si);
		return -EINVAL;
	}
	err = si->design->put_direct(si, offset, (uint64_t)nr);
	put_swap_device(si);
	return err;
}

/** swp_swapcount() - see uswap/swap.h. Context: takes ci->lock. */
USWAP_API long swp_swapcount(swp_entry_t entry)
{
	struct swap_info_struct *si;
	long c;
	int err = swap_entry_pin(entry, &si);

	if (err)
		return err;
	c = si->design->swapcount(si, swp_offset(entry));
	put_swap_device(si);
	return c;
}

/** swap_entry_swapped() - see uswap/swap.h. Context: lockless. */
USWAP_API bool swap_entry_swapped(swp_entry_t entry)
{
	struct swap_info_struct *si;
	bool ret;

	if (swap_entry_pin(entry, &si))
		return false;
	ret = si->design->swapped(si, swp_offset(entry));
	put_swap_device(si);
	return ret;
}

/** uswap_swap_tb_peek() - see uswap/swap.h. Context: takes ci->lock. */
USWAP_API int uswap_swap_tb_peek(swp_entry_t entry, uint64_t *tbp, long *countp)
{
	struct swap_info_struct *si;
	int err = swap_entry_pin(entry, &si);

	if (err)
		return err;
	err = si->design->peek(si, swp_offset(entry), tbp, countp);
	put_swap_device(si);
	return err;
}

/* ---- the swap cache ---- */

/** swap_cache_add_folio() - see uswap/swap.h. Context: folio locked; takes ci->lock. */
USWAP_API int swap_cache_add_folio(struct folio *folio, swp_entry_t entry, uint64_t *shadowp)
{
	unsigned long nr = folio_nr_pages(folio);
	struct swap_info_struct *si;
	int err;

	if (!folio_test_locked(folio) || folio_test_swapcache(folio) || !entry_aligned(entry, nr))
		return -EINVAL;
	err = swap_entry_pin(entry, &si);
	if (err)
		return err;
	if (swp_offset(entry) + nr > si->max)
		err = -EINVAL;
	else
		err = si->design->cache_add(si, folio, entry, shadowp);
	put_swap_device(si);
	return err;
}

/**
 * swap_cache_del_folio() - see uswap/swap.h. The design deletes; the
 * cache's references are dropped here.
 * Context: folio locked; takes ci->lock.
 */
USWAP_API int swap_cache_del_folio(struct folio *folio, uint64_t shadow)
{
	struct swap_info_struct *si;
	int err;

	if (!folio_test_locked(folio) || !folio_test_swapcache(folio) ||
	    folio_test_writeback(folio) || !shadow_fits_swp_tb(shadow))
		return -EINVAL;
	err = swap_entry_pin(folio->swap, &si);
	if (err)
		return err;
	err = si->design->cache_del(si, folio, shadow);
	put_swap_device(si);
	if (!err)
		folio_ref_sub(folio, (long)folio_nr_pages(folio));
	return err;
}

/**
 * swap_cache_get_folio() - see uswap/swap.h. Context: lockless; the pin
 * keeps the cluster array, RCU (in the design) the table.
 */
USWAP_API struct folio *swap_cache_get_folio(swp_entry_t entry)
{
	struct swap_info_struct *si;
	struct folio *folio;

	if (swap_entry_pin(entry, &si))
		return NULL;
	folio = si->design->cache_get(si, entry);
	put_swap_device(si);
	return folio;
}

/** swap_cache_get_shadow() - see uswap/swap.h. Context: lockless. */
USWAP_API uint64_t swap_cache_get_shadow(swp_entry_t entry)
{
	struct swap_info_struct *si;
	uint64_t shadow;

	if (swap_entry_pin(entry, &si))
		return 0;
	shadow = si->design->cache_shadow(si, entry);
	put_swap_device(si);
	return shadow;
}

/**
 * swap_cache_replace_folio() - see uswap/swap.h. Context: both folios
 * locked; takes ci->lock.
 */
USWAP_API int swap_cache_replace_folio(struct folio *old, struct folio *new, swp_entry_t entry)
{
	unsigned long nr_new = folio_nr_pages(new), nr_old = folio_nr_pages(old);
	struct swap_info_struct *si;
	int err;

	if (!folio_test_locked(old) || !folio_test_locked(new) || !folio_test_swapcache(old) ||
	    folio_test_swapcache(new) || nr_new > nr_old || !entry_aligned(entry, nr_new) ||
	    !folio_matches_swap_entry(old, entry))
		return -EINVAL;
	err = swap_entry_pin(entry, &si);
	if (err)
		return err;
	err = si->design->cache_replace(si, old, new, entry);
	put_swap_device(si);
	return err;
}

/* ---- swap-in ---- */

/** uswap_swapin() - see uswap/swap.h. Context: may sleep (I/O, folio locks). */
USWAP_API int uswap_swapin(swp_entry_t entry, struct uswap_frame_pool *pool, unsigned long orders,
			   struct folio **out, struct uswap_swapin_info *info)
{
	struct swap_info_struct *si;
	int err;

	if (info && !uswap_mem_is_zero(info->__reserved, sizeof(info->__reserved)))
		return -EINVAL;
	if (info) {
		info->shadow = 0;
		info->major = false;
		info->ra_pages = 0;
		info->ra_hit = false;
		info->free_sync = false;
	}
	err = swap_entry_pin(entry, &si);
	if (err)
		return err;
	err = si->design->swapin(si, entry, pool, orders, out, info);
	put_swap_device(si);
	return err;
}

/**
 * uswap_swapin_lock() - see uswap/swap.h. The device stays pinned while
 * the folio lock is awaited, as do_swap_page() holds get_swap_device().
 * An entry whose device is gone gets the plain checks; its folio, if it
 * was not read, is left as it is.
 * Context: may sleep (folio lock).
 */
USWAP_API int uswap_swapin_lock(struct folio *folio, swp_entry_t entry)
{
	struct swap_info_struct *si;
	int err;

	if (!swap_entry_pin(entry, &si)) {
		err = si->design->swapin_lock(si, folio, entry);
		put_swap_device(si);
		return err;
	}
	folio_lock(folio);
	if (!folio_matches_swap_entry(folio, entry)) {
		folio_unlock(folio);
		return -EAGAIN;
	}
	if (!folio_test_uptodate(folio)) {
		folio_unlock(folio);
		return -EIO;
	}
	return 0;
}
