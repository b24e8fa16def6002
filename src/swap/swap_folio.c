/* SPDX-License-Identifier: MIT */
/*
 * The folio-based slot workflow ("mm, swap: cleanup swap entry management
 * workflow", docs/KERNEL-MAP.md): allocation pinned by the swap
 * cache, references taken and dropped under the folio lock, and the
 * hibernation slots that live without a folio.
 */
#include "swap/swap_internal.h"

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

/** folio_alloc_swap() - see uswap/swap.h. */
USWAP_API int folio_alloc_swap(struct folio *folio)
{
	swp_entry_t entry;

	/* Only data worth keeping goes to swap: the kernel asserts uptodate.
	 * A folio that already holds slots (cached, or read around the cache
	 * holding SWAP_HAS_CACHE) must not get others: its own would leak. */
	if (!folio_test_locked(folio) || folio_in_swap(folio) ||
	    !folio_test_uptodate(folio) || folio_order(folio) >= SWAP_NR_ORDERS)
		return -EINVAL;
	return swap_alloc_slots(folio, folio_order(folio), false, -1, &entry);
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
	if (si->design)
		err = si->design->dup(si, offset, nr, false);
	else
		err = swap_dup_entries_cluster(si, offset, nr, false);
	put_swap_device(si);
	return err;
}

/** folio_put_swap() - see uswap/swap.h. Context: folio locked; takes ci->lock. */
USWAP_API int folio_put_swap(struct folio *folio, long subpage)
{
	struct swap_info_struct *si;
	struct swap_cluster_info *ci;
	unsigned int nr, off, i;
	uint64_t offset;
	int err = folio_swap_range(folio, subpage, &offset, &nr);

	if (err)
		return err;
	err = swap_entry_pin(folio->swap, &si);
	if (err)
		return err;
	if (si->design) {
		err = si->design->folio_put(si, folio, offset, nr);
		put_swap_device(si);
		return err;
	}
	off = offset % SWAPFILE_CLUSTER;
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
	put_swap_device(si);
	return err;
}

/**
 * folio_maybe_swapped() - see uswap/swap.h. Lockless: the folio lock keeps
 * the slots allocated and the table present.
 */
USWAP_API bool folio_maybe_swapped(struct folio *folio)
{
	struct swap_info_struct *si;
	struct swap_cluster_info *ci;
	unsigned long nr = folio_nr_pages(folio), i;
	unsigned int off;
	bool ret = false;

	if (!folio_in_swap(folio) || swap_entry_pin(folio->swap, &si))
		return false;
	if (si->design) {
		ret = si->design->maybe_swapped(si, folio);
		put_swap_device(si);
		return ret;
	}
	ci = offset_to_cluster(si, swp_offset(folio->swap));
	off = swp_offset(folio->swap) % SWAPFILE_CLUSTER;
	for (i = 0; i < nr && !ret; i++) {
		uint64_t tb = swap_table_get(ci, off + (unsigned int)i);

		ret = swp_tb_is_countable(tb) && __swp_tb_get_count(tb) > 0;
	}
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
	if (si->design) {
		ret = si->design->free_swap(si, folio);
		put_swap_device(si);
		return ret;
	}
	put_swap_device(si);
	/*
	 * With the folio locked no count can leave 0 (only folio_dup_swap does
	 * that, under this lock), so "all zero" seen here stays true.
	 */
	if (folio_maybe_swapped(folio))
		return 0;
	if (swap_cache_del_folio(folio, 0))
		return 0;
	folio_mark_dirty(folio);
	return 1;
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
	int err = swap_put_entries_direct(entry, 1);

	if (err)
		return err;
	/* Readahead may have cached the slot meanwhile: drop that folio too. */
	if (!swap_entry_pin(entry, &si)) {
		__try_to_reclaim_swap(si, swp_offset(entry), true);
		put_swap_device(si);
	}
	return 0;
}
