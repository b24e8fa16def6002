/* SPDX-License-Identifier: MIT */
/*
 * Swap-in through the swap cache (swap table phase II: no bypass). A fault looks the
 * entry up in the cache; on a miss it allocates a folio and adds it to the
 * cache, which is the synchronization point: the loser of a race finds the
 * winner's folio and waits on its lock, and exactly one read is issued per
 * slot. Synchronous devices (compressed memory) read only what was asked,
 * possibly as one large folio; other devices read ahead a window around the
 * fault that grows while readahead pages get used and shrinks when not.
 *
 * The readahead window is shared by both slot designs; swap-in itself is
 * the swap table design's (swap_table_ops; the entry points are in
 * swap_api.c).
 */
#include "io/backend.h"
#include "swap/swap_internal.h"
#include "swap/swap_io.h"

#define SWAP_RA_ORDER_MAX	3	/* vm.page-cluster: windows up to 8 pages */

/*
 * The readahead window for a fault at @offset (the kernel's swapin_nr_pages):
 * hits + 2 pages, 1 without hits unless the fault is next to the last one,
 * rounded up to a power of two, capped, and not below half the last window.
 * Shared by both slot designs. Context: lockless (relaxed atomics).
 */
unsigned int swapin_nr_pages(struct swap_info_struct *si, uint64_t offset)
{
	uint64_t prev = atomic_exchange_explicit(&si->ra_last, offset, memory_order_relaxed);
	unsigned int hits = atomic_exchange_explicit(&si->ra_hits, 0, memory_order_relaxed);
	unsigned int last = atomic_load_explicit(&si->ra_win, memory_order_relaxed);
	unsigned int pages = hits + 2, max = 1U << SWAP_RA_ORDER_MAX;

	if (pages == 2) {
		if (offset != prev + 1 && offset + 1 != prev)
			pages = 1;
	} else {
		unsigned int p = 4;

		while (p < pages)
			p <<= 1;
		pages = p;
	}
	if (pages > max)
		pages = max;
	if (pages < last / 2)
		pages = last / 2;
	atomic_store_explicit(&si->ra_win, pages, memory_order_relaxed);
	return pages;
}

/**
 * swapin_ra_offsets() - the slots to read ahead with a fault at @entry:
 * by virtual address when the caller gave the entries of the following
 * PTEs (the kernel's VMA readahead), else the aligned block of swap offsets
 * around it (cluster readahead). The window size comes from
 * swapin_nr_pages() either way. Context: lockless. Return: how many
 * offsets were written to @offs (at most @max), the faulting one excluded.
 */
unsigned int swapin_ra_offsets(struct swap_info_struct *si, swp_entry_t entry,
			       const struct uswap_swapin_info *info, uint64_t *offs,
			       unsigned int max)
{
	uint64_t offset = swp_offset(entry);
	unsigned int win, i, n = 0;

	if (info && info->ra_entries) {
		win = swapin_nr_pages(si, info->ra_addr);
		for (i = 0; i < info->nr_ra_entries && n + 1 < win && n < max; i++) {
			swp_entry_t e = info->ra_entries[i];

			if (swp_type(e) == swp_type(entry) && swp_offset(e) &&
			    swp_offset(e) < si->max && swp_offset(e) != offset)
				offs[n++] = swp_offset(e);
		}
		return n;
	}
	win = swapin_nr_pages(si, offset);
	for (i = 0; i < win && n < max; i++) {
		uint64_t o = (offset & ~((uint64_t)win - 1)) + i;

		if (o != offset && o && o < si->max)
			offs[n++] = o;
	}
	return n;
}

/*
 * Allocate a folio of @order for the aligned entry and add it to the cache.
 * Context: device pinned.
 * Return: the locked folio (cache references taken), NULL with *errp:
 * -ENOMEM (no frame), -EEXIST (cached already), -ENOENT (slot unused),
 * -EINVAL (bad slot, or the folio would reach past the device's end).
 */
static struct folio *swap_cache_alloc_folio(struct swap_info_struct *si, swp_entry_t entry,
					    struct uswap_frame_pool *pool, unsigned int order,
					    uint64_t *shadowp, int *errp)
{
	struct folio *folio;
	int err;

	if (swp_offset(entry) + (1ULL << order) > si->max) {
		*errp = -EINVAL;
		return NULL;
	}
	folio = uswap_folio_alloc(pool, order);
	if (!folio) {
		*errp = -ENOMEM;
		return NULL;
	}
	folio_lock(folio);
	err = swap_table_cache_add(si, folio, entry, shadowp);
	if (err) {
		folio_unlock(folio);
		folio_put(folio);
		*errp = err;
		return NULL;
	}
	return folio;
}

/**
 * swapin_read_batch() - read a swap-in's folio (@batch[0]) and its
 * readahead folios (the rest) in one submission, and report it in @info.
 * Each folio arrives locked with its allocation reference; batch[0] leaves
 * with the caller's reference instead, the readahead folios with none
 * (they live in the cache) unless info->ra_folios takes them.
 * Context: device pinned; shared by both slot designs.
 */
void swapin_read_batch(struct swap_info_struct *si, struct folio **batch, unsigned int n,
		       uint64_t shadow, struct uswap_swapin_info *info)
{
	unsigned int i;

	atomic_fetch_add(&si->nr_ra_pages, n - 1);
	if (info) {
		info->major = true;
		info->shadow = shadow;
		info->ra_pages = n - 1;
	}
	/* Our reference outlives the I/O: take it before the read can end. */
	folio_get(batch[0]);
	swap_read_folios(si, batch, n);
	for (i = 1; i < n; i++) {
		if (info && info->ra_folios)
			info->ra_folios[i - 1] = batch[i];
		else
			folio_put(batch[i]);
	}
	folio_put(batch[0]);	/* the allocation reference */
}

/**
 * swap_table_swapin() - uswap_swapin() on a table device: a cache hit, or
 * a new folio added to the cache (the synchronization point) and read,
 * with readahead on a device that is not synchronous.
 * Context: device pinned; may sleep. Return: 0 and *@out; -ENOMEM,
 * -ENOENT (the slot is not in use), -EINVAL.
 */
int swap_table_swapin(struct swap_info_struct *si, swp_entry_t entry,
		      struct uswap_frame_pool *pool, unsigned long orders, struct folio **out,
		      struct uswap_swapin_info *info)
{
	struct folio *batch[SWAP_READ_BATCH_MAX];
	struct folio *folio;
	uint64_t offset = swp_offset(entry), shadow = 0;
	unsigned int n = 0, order;
	int err;

	_Static_assert(USWAP_SWAPIN_RA_MAX + 1 <= SWAP_READ_BATCH_MAX, "batch holds the readahead");
again:
	folio = swap_table_cache_get(si, entry);
	if (folio) {
		if (folio_test_clear_flag(folio, PG_readahead)) {
			atomic_fetch_add_explicit(&si->ra_hits, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&si->nr_ra_hits, 1, memory_order_relaxed);
		}
		goto out;
	}
	if (atomic_load(&si->flags) & SWP_SYNCHRONOUS_IO) {
		/* Largest order the caller's page table allows, then smaller. */
		for (order = SWAP_NR_ORDERS - 1; order > 0; order--) {
			swp_entry_t aligned;

			if (!(orders & (1UL << order)))
				continue;
			aligned = swp_entry(swp_type(entry), offset & ~((1ULL << order) - 1));
			folio = swap_cache_alloc_folio(si, aligned, pool, order, &shadow, &err);
			if (folio)
				break;
		}
		if (!folio)
			folio = swap_cache_alloc_folio(si, entry, pool, 0, &shadow, &err);
		if (!folio)
			goto failed;
		batch[n++] = folio;
	} else {
		uint64_t offs[USWAP_SWAPIN_RA_MAX];
		unsigned int nra = swapin_ra_offsets(si, entry, info, offs, USWAP_SWAPIN_RA_MAX), i;

		folio = swap_cache_alloc_folio(si, entry, pool, 0, &shadow, &err);
		if (!folio)
			goto failed;
		batch[n++] = folio;
		for (i = 0; i < nra; i++) {
			uint64_t o = offs[i];
			struct folio *ra;
			int rerr;

			ra = swap_cache_alloc_folio(si, swp_entry(swp_type(entry), o), pool, 0, NULL,
						    &rerr);
			if (!ra) {
				if (rerr == -ENOMEM)
					break;	/* no frame to spare: read what we have */
				continue;	/* unused or already cached */
			}
			folio_set_flag(ra, PG_readahead);
			batch[n++] = ra;
		}
	}
	swapin_read_batch(si, batch, n, shadow, info);
out:
	*out = folio;
	return 0;
failed:
	if (err == -EEXIST)
		goto again;	/* lost the race: use the winner's folio */
	return err;
}

/**
 * swap_table_swapin_lock() - uswap_swapin_lock() on a table device: lock
 * the folio and check that it still caches @entry and was read.
 * Context: device pinned; may sleep (folio lock).
 * Return: 0 (locked), -EAGAIN (no longer @entry's), -EIO (unlocked).
 */
int swap_table_swapin_lock(struct swap_info_struct *si, struct folio *folio, swp_entry_t entry)
{
	folio_lock(folio);
	if (!folio_matches_swap_entry(folio, entry)) {
		folio_unlock(folio);
		return -EAGAIN;
	}
	if (!folio_test_uptodate(folio)) {
		/* The read failed: drop the folio from the cache (counts stay
		 * in shadow entries) so that a later fault reads again. */
		if (folio_test_swapcache(folio) && !folio_test_writeback(folio) &&
		    !swap_table_cache_del(si, folio, 0))
			folio_ref_sub(folio, (long)folio_nr_pages(folio));
		folio_unlock(folio);
		return -EIO;
	}
	return 0;
}

/* Whether @entry's device has all the SWP_* bits of @mask (pinned read). */
static bool swap_entry_has_flags(swp_entry_t entry, unsigned int mask)
{
	struct swap_info_struct *si;
	bool ret;

	if (swap_entry_pin(entry, &si))
		return false;
	ret = (atomic_load(&si->flags) & mask) == mask;
	put_swap_device(si);
	return ret;
}

/** uswap_swap_synchronous() - see uswap/swap.h. */
USWAP_API bool uswap_swap_synchronous(swp_entry_t entry)
{
	return swap_entry_has_flags(entry, SWP_SYNCHRONOUS_IO);
}

/** uswap_swap_stable_writes() - see uswap/swap.h. */
USWAP_API bool uswap_swap_stable_writes(swp_entry_t entry)
{
	return swap_entry_has_flags(entry, SWP_STABLE_WRITES);
}
