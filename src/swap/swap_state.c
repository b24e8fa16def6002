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

#define SWAP_RA_ORDER_CEILING	5	/* the kernel's cap on vm.page-cluster's windows */
#define SWAP_RA_WIN_DEFAULT	8	/* vm.page-cluster 3 */
#define SWAP_RA_HITS_MAX	0xffU

/* vma->swap_readahead_info, packed as the kernel packs it (SWAP_RA_VAL),
 * with a page number where the kernel keeps the page-aligned address. */
#define SWAP_RA_VAL(pg, win, hits)	(((uint64_t)(pg) << 16) | ((uint64_t)(win) << 8) | (hits))
#define SWAP_RA_PG(v)			((v) >> 16)
#define SWAP_RA_WIN(v)			((unsigned int)((v) >> 8) & 0xffU)
#define SWAP_RA_HITS(v)			((unsigned int)(v) & SWAP_RA_HITS_MAX)

/* The largest window vm.page-cluster allows, as swap_vma_ra_win() caps it. */
static unsigned int swap_ra_max_win(const struct uswap_swapin_info *info)
{
	unsigned int max = info && info->ra_max_pages ? info->ra_max_pages : SWAP_RA_WIN_DEFAULT;

	return max > (1U << SWAP_RA_ORDER_CEILING) ? 1U << SWAP_RA_ORDER_CEILING : max;
}

/**
 * __swapin_nr_pages() - the kernel's __swapin_nr_pages(): the readahead
 * window for a fault at @offset after one at @prev with @hits readahead
 * hits between them: hits + 2 rounded up to a power of two (from 4), or 1
 * without hits unless the fault is next to the last one; at most
 * @max_pages, and not below half the last window @prev_win.
 * Context: any. Return: the window in pages (>= 1).
 */
unsigned int __swapin_nr_pages(uint64_t prev, uint64_t offset, unsigned int hits,
			       unsigned int max_pages, unsigned int prev_win)
{
	unsigned int pages = hits + 2;

	if (pages == 2) {
		if (offset != prev + 1 && offset + 1 != prev)
			pages = 1;
	} else {
		unsigned int p = 4;

		while (p < pages)
			p <<= 1;
		pages = p;
	}
	if (pages > max_pages)
		pages = max_pages;
	/* Don't shrink readahead too fast. */
	if (pages < prev_win / 2)
		pages = prev_win / 2;
	return pages ? pages : 1;
}

/*
 * The cluster readahead state, one for the whole system as in the kernel:
 * swapin_nr_pages()'s static prev_offset and last_readahead_pages, and
 * swapin_readahead_hits (readahead folios hit since the last window was
 * chosen, by any fault that did not use VMA readahead). Relaxed atomics:
 * the kernel's are READ_ONCE/atomic_t too, and a lost update only skews
 * one window.
 */
static _Atomic uint64_t swap_ra_prev_offset;
static _Atomic unsigned int swap_ra_last_pages;
static _Atomic unsigned int swapin_readahead_hits;

/* Swapped-on rotational devices (the kernel's nr_rotate_swap): swapon and
 * swapoff in swap_device.c count them. */
_Atomic int nr_rotate_swap;

/**
 * swapin_nr_pages() - the kernel's swapin_nr_pages(): the cluster
 * readahead window for a fault at @offset (any device), from the global
 * state above: the hits are taken (reset to 0), the last fault offset is
 * moved on only when there were none (as the kernel does), and the window
 * is remembered for the next "don't shrink too fast".
 * Context: lockless (relaxed atomics).
 * Return: the window in pages (1: no readahead).
 */
unsigned int swapin_nr_pages(uint64_t offset, unsigned int max)
{
	unsigned int hits, pages;

	if (max <= 1)
		return 1;
	hits = atomic_exchange_explicit(&swapin_readahead_hits, 0, memory_order_relaxed);
	pages = __swapin_nr_pages(atomic_load_explicit(&swap_ra_prev_offset, memory_order_relaxed),
				  offset, hits, max,
				  atomic_load_explicit(&swap_ra_last_pages, memory_order_relaxed));
	if (!hits)
		atomic_store_explicit(&swap_ra_prev_offset, offset, memory_order_relaxed);
	atomic_store_explicit(&swap_ra_last_pages, pages, memory_order_relaxed);
	return pages;
}

/**
 * swap_cluster_ra_last_pages() - the last cluster readahead window (the
 * kernel's last_readahead_pages), for tests.
 * Context: lockless. Return: the window in pages (0 before the first).
 */
unsigned int swap_cluster_ra_last_pages(void)
{
	return atomic_load_explicit(&swap_ra_last_pages, memory_order_relaxed);
}

/**
 * swap_use_vma_readahead() - the kernel's swap_use_vma_readahead(): VMA
 * readahead unless a rotational device is swapped on (then every swap-in
 * of every device uses cluster readahead, as nr_rotate_swap decides there;
 * enable_vma_readahead is always on here).
 * Context: lockless. Return: true for VMA readahead.
 */
bool swap_use_vma_readahead(void)
{
	return atomic_load_explicit(&nr_rotate_swap, memory_order_relaxed) == 0;
}

/* VMA readahead for this fault: the system allows it and the caller gave
 * its VMA state and PTEs (shmem gives none: swap_cluster_readahead()). */
static bool swapin_vma_ra(const struct uswap_swapin_info *info)
{
	return info && info->ra_info && info->ra_entries && swap_use_vma_readahead();
}

/**
 * swap_vma_ra_win() - the kernel's swap_vma_ra_win(): the VMA readahead
 * window [*@start, *@end) in pages for the fault at info->ra_addr, from and
 * into the VMA's state info->ra_info (window and hits reset, fault page
 * recorded). The window counts PTE positions: forward after a fault at
 * the next page, backward after one at the previous page, otherwise
 * centred; clamped to the pages the caller gave (the VMA and the PMD).
 * Context: lockless (the state is one atomic word, as the kernel's).
 * Return: the window size before clamping (1: no readahead).
 */
unsigned int swap_vma_ra_win(const struct uswap_swapin_info *info, uint64_t *start,
			     uint64_t *end)
{
	uint64_t ra = __atomic_load_n(info->ra_info, __ATOMIC_RELAXED);
	uint64_t fpg = info->ra_addr, prev = SWAP_RA_PG(ra), lo, hi, left;
	unsigned int max = swap_ra_max_win(info), win;

	*start = fpg;
	*end = fpg + 1;
	if (max == 1)
		return 1;
	win = __swapin_nr_pages(prev, fpg, SWAP_RA_HITS(ra), max, SWAP_RA_WIN(ra));
	__atomic_store_n(info->ra_info, SWAP_RA_VAL(fpg, win, 0), __ATOMIC_RELAXED);
	if (win == 1)
		return 1;
	if (fpg == prev + 1) {
		lo = fpg;
		hi = fpg + win;
	} else if (prev == fpg + 1) {
		lo = fpg + 1 >= win ? fpg + 1 - win : 0;
		hi = fpg + 1;
	} else {
		left = (win - 1) / 2;
		lo = fpg >= left ? fpg - left : 0;
		hi = lo + win;
	}
	*start = lo > info->ra_first ? lo : info->ra_first;
	*end = hi < info->ra_first + info->nr_ra_entries ? hi : info->ra_first + info->nr_ra_entries;
	return win;
}

/**
 * swap_update_readahead() - a swap-in found @folio in the cache: clear its
 * PG_readahead and count the hit, and as the kernel's lookup does, record
 * the fault in the VMA's state (page, window kept, hits + 1 on a readahead
 * folio), or for cluster readahead in the global hits
 * (swapin_readahead_hits).
 * Context: lockless. Return: nothing; info->ra_hit says whether it was a
 * readahead folio.
 */
void swap_update_readahead(struct swap_info_struct *si, struct folio *folio,
			   struct uswap_swapin_info *info)
{
	bool readahead = folio_test_clear_flag(folio, PG_readahead);

	if (swapin_vma_ra(info)) {
		uint64_t ra = __atomic_load_n(info->ra_info, __ATOMIC_RELAXED);
		unsigned int hits = SWAP_RA_HITS(ra);

		if (readahead && hits < SWAP_RA_HITS_MAX)
			hits++;
		__atomic_store_n(info->ra_info, SWAP_RA_VAL(info->ra_addr, SWAP_RA_WIN(ra), hits),
				 __ATOMIC_RELAXED);
	} else if (readahead) {
		atomic_fetch_add_explicit(&swapin_readahead_hits, 1, memory_order_relaxed);
	}
	if (readahead)
		atomic_fetch_add_explicit(&si->nr_ra_hits, 1, memory_order_relaxed);
	if (info)
		info->ra_hit = readahead;
}

/**
 * swapin_ra_offsets() - the slots to read ahead with a fault at @entry:
 * VMA readahead (swap_vma_readahead()): the swap PTEs of this device in
 * the window swap_vma_ra_win() gives, in address order; else cluster
 * readahead (swap_cluster_readahead()): the aligned block of swap offsets
 * around it, sized by swapin_nr_pages().
 * Context: lockless. Return: how many offsets were written to @offs (at
 * most @max), the faulting one excluded.
 */
unsigned int swapin_ra_offsets(struct swap_info_struct *si, swp_entry_t entry,
			       struct uswap_swapin_info *info, uint64_t *offs, unsigned int max)
{
	uint64_t offset = swp_offset(entry), start, end, pg;
	unsigned int win, i, n = 0;

	if (swapin_vma_ra(info)) {
		if (swap_vma_ra_win(info, &start, &end) == 1)
			return 0;
		for (pg = start; pg < end && n < max; pg++) {
			swp_entry_t e = info->ra_entries[pg - info->ra_first];

			/* Only swap PTEs; this device's (one read batch). */
			if (pg == info->ra_addr || !e.val || swp_type(e) != swp_type(entry) ||
			    !swp_offset(e) || swp_offset(e) >= si->max || swp_offset(e) == offset)
				continue;
			offs[n++] = swp_offset(e);
		}
		return n;
	}
	/* swap_cluster_readahead(): [offset & ~mask, offset | mask], past
	 * the header (slot 0) and inside the device. */
	win = swapin_nr_pages(offset, swap_ra_max_win(info));
	if (win <= 1)
		return 0;
	for (i = 0; i < win && n < max; i++) {
		uint64_t o = (offset & ~((uint64_t)win - 1)) + i;

		if (o != offset && o && o < si->max)
			offs[n++] = o;
	}
	return n;
}

/**
 * swapin_ra_reserve() - readahead allocations may reclaim (the kernel's
 * __read_swap_cache_async() allocates with the fault's GFP_HIGHUSER_MOVABLE,
 * which enters direct reclaim when no page is free): before a swap-in
 * allocates the faulting folio and its @nra readahead folios, ask the
 * caller's info->ra_reclaim to free frames if @pool has fewer than the
 * batch needs. Called once, before the first allocation, so that none of
 * the batch is locked yet.
 *
 * Deadlock analysis. When the callback runs, this thread holds: the device
 * pin (get_swap_device(), a reference count, not a lock: reclaim may pin
 * and write to this device too, and only swapoff waits for pins, which
 * reclaim never does), and the caller's own context (for the mm layer,
 * mmap_lock for read, as any fault allocation holds it). It holds no swap
 * cluster lock (swapin_ra_offsets() reads the PTE entries handed over and
 * the cluster state lock-free; the slots are rechecked under ci->lock at
 * allocation), no SWAP_HAS_CACHE pin of the old design (taken per slot
 * after the allocation), and no folio lock: neither the faulting folio nor
 * any readahead folio exists yet. Reclaim takes LRU, PTL, folio and
 * cluster locks of other folios in their usual order, and nothing it can
 * wait for waits on this thread. (The kernel reclaims inside each
 * allocation while earlier readahead folios are locked under read; its
 * reclaim only trylocks, and those folios are not on the LRU yet: the same
 * holds here, reserving first just makes it plain.)
 * Context: device pinned; may sleep (in the callback). Return: nothing.
 */
void swapin_ra_reserve(struct uswap_frame_pool *pool, struct uswap_swapin_info *info,
		       unsigned int nra)
{
	if (!nra || !info || !info->ra_reclaim)
		return;
	if (uswap_frame_pool_free_frames(pool) >= (size_t)nra + 1)
		return;
	info->ra_reclaim(info->ra_reclaim_arg, nra + 1);
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
	/* Phase II's should_try_to_free_swap(): a synchronous device's cache
	 * copy goes once mapped. */
	if (info && (atomic_load(&si->flags) & SWP_SYNCHRONOUS_IO))
		info->free_sync = true;
	folio = swap_table_cache_get(si, entry);
	if (folio) {
		swap_update_readahead(si, folio, info);
		goto out;
	}
	if (atomic_load(&si->flags) & SWP_SYNCHRONOUS_IO) {
		/* Largest order the caller's page table allows, then smaller. */
		for (order = SWAP_NR_ORDERS - 1; order > 0; order--) {
			swp_entry_t aligned;

			if (!(orders & (1UL << order)))
				continue;
			aligned = swp_entry(swp_type(entry), offset & ~((1ULL << order) - 1));
			if (!swap_zero_uniform(si, swp_offset(aligned), 1U << order))
				continue;
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

		swapin_ra_reserve(pool, info, nra);
		folio = swap_cache_alloc_folio(si, entry, pool, 0, &shadow, &err);
		if (!folio)
			goto failed;
		batch[n++] = folio;
		for (i = 0; i < nra; i++) {
			uint64_t o = offs[i];
			struct folio *ra;
			int rerr;

			/* Readahead folios get workingset refault handling too
			 * (__read_swap_cache_async() passes every shadow on). */
			uint64_t rshadow = 0;

			ra = swap_cache_alloc_folio(si, swp_entry(swp_type(entry), o), pool, 0, &rshadow,
						    &rerr);
			if (!ra) {
				if (rerr == -ENOMEM)
					break;	/* no frame to spare: read what we have */
				continue;	/* unused or already cached */
			}
			folio_set_flag(ra, PG_readahead);
			if (info && info->ra_shadows)
				info->ra_shadows[n - 1] = rshadow;
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
