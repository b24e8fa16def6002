/* SPDX-License-Identifier: MIT */
/*
 * Swap-in in the old design (do_swap_page before swap table phase II):
 *
 *  - a cache hit returns the cached folio;
 *  - on a SWP_SYNCHRONOUS_IO device, a slot with count 1 is read around
 *    the swap cache (the bypass): the reader takes SWAP_HAS_CACHE as a bit
 *    lock, reads into a private folio and, once the page is mapped, clears
 *    the bit (folio_free_swap -> swapcache_clear). A racing reader that
 *    finds the bit taken sleeps a jiffy and makes the fault retry;
 *  - otherwise the folio goes through the swap cache with readahead, on
 *    every device: __read_swap_cache_async takes SWAP_HAS_CACHE, then adds
 *    the folio to the cache; a reader that finds the bit taken but no folio
 *    in the cache (another reader between the two steps) waits a jiffy and
 *    looks again, for the faulting slot and the readahead slots alike;
 *  - a large folio is read around the cache only where can_swapin_thp()
 *    allows: no slot of the range has SWAP_HAS_CACHE;
 *  - readahead allocations may reclaim, as __read_swap_cache_async()'s
 *    do: the caller's info->ra_reclaim runs before the batch is allocated;
 *  - the cache copy is kept after mapping unless should_try_to_free_swap()
 *    (6.17) says otherwise (swap full, the VMA mlocked, or an exclusive
 *    write fault): no "always free on synchronous devices", that is phase
 *    II's rule.
 */
#include <sched.h>
#include <unistd.h>

#include "io/backend.h"
#include "legacy/legacy_internal.h"
#include "swap/swap_io.h"

#define LEGACY_JIFFY_US		1000	/* schedule_timeout_uninterruptible(1) at HZ=1000 */

/*
 * The kernel's can_swapin_thp() for the bypass of a large folio (the
 * caller's page table already holds the aligned run of entries, in
 * order): no slot of the range may have SWAP_HAS_CACHE (non_swapcache_batch()),
 * or the large folio would conflict with a cached one. Lockless.
 */
static bool legacy_can_swapin_thp(struct swap_info_struct *si, uint64_t start, unsigned int nr)
{
	unsigned int i;

	if (start + nr > si->max || start % SWAPFILE_CLUSTER + nr > SWAPFILE_CLUSTER)
		return false;
	for (i = 0; i < nr; i++) {
		unsigned char ent = legacy_map_get(si, start + i);

		if ((ent & SWAP_HAS_CACHE) || !swap_count(ent))
			return false;
	}
	return true;
}

/*
 * The bypass: read @entry (count 1, synchronous device) into a folio that
 * never enters the swap cache. Return: 0 and *out (PG_swapbypass, holding
 * SWAP_HAS_CACHE on its slots, read done); -EAGAIN (another reader holds
 * the bit: we slept a jiffy, the fault retries); -ENOENT; -ENOMEM.
 */
static int legacy_swapin_bypass(struct swap_info_struct *si, swp_entry_t entry,
				struct uswap_frame_pool *pool, unsigned long orders,
				struct folio **out, struct uswap_swapin_info *info)
{
	struct legacy_info *li = legacy_info(si);
	uint64_t offset = swp_offset(entry), start, shadow = 0;
	struct swap_cluster_info *ci;
	struct folio *folio = NULL;
	unsigned int order, nr;
	int err;

	for (order = SWAP_NR_ORDERS - 1; order > 0; order--) {
		if (!(orders & (1UL << order)))
			continue;
		if (!legacy_can_swapin_thp(si, offset & ~((1ULL << order) - 1), 1U << order) ||
		    !swap_zero_uniform(si, offset & ~((1ULL << order) - 1), 1U << order))
			continue;
		folio = uswap_folio_alloc(pool, order);
		if (folio)
			break;
	}
	if (!folio) {
		order = 0;
		folio = uswap_folio_alloc(pool, 0);
		if (!folio)
			return -ENOMEM;
	}
	nr = 1U << order;
	start = offset & ~((uint64_t)nr - 1);
	folio_lock(folio);
	ci = swap_cluster_lock(si, start);
	err = __legacy_swapcache_prepare(si, ci, start, nr);
	/* The shadow stays in the table until the slot is freed. */
	if (!err)
		shadow = swp_tb_get_shadow(__swap_table_get(ci,
							(unsigned int)(offset % SWAPFILE_CLUSTER)));
	swap_cluster_unlock(ci);
	if (err) {
		folio_unlock(folio);
		folio_put(folio);
		if (err == -EEXIST) {
			/*
			 * Another fault is reading this slot (bypass or cache).
			 * The old kernel slept a jiffy here to keep the retrying
			 * fault from spinning, then let the fault retry.
			 */
			atomic_fetch_add_explicit(&li->bypass_retries, 1, memory_order_relaxed);
			usleep(LEGACY_JIFFY_US);
			return -EAGAIN;
		}
		return err;
	}
	/* For swap_read_folios() the folio names its slots like a cache
	 * folio, but it is in no cache: PG_swapbypass, not PG_swapcache. */
	folio->swap = swp_entry(si->type, start);
	folio_set_flag(folio, PG_swapbacked);
	folio_set_flag(folio, PG_swapbypass);
	atomic_fetch_add_explicit(&li->bypass_swapins, 1, memory_order_relaxed);
	if (info) {
		info->major = true;
		info->shadow = shadow;
		info->ra_pages = 0;
	}
	swap_read_folios(si, &folio, 1);	/* unlocks when read */
	*out = folio;
	return 0;
}

/*
 * __read_swap_cache_async(): the cached folio of @offset, or a new locked
 * folio added to the cache for it (*new set). With @wait, a slot whose
 * SWAP_HAS_CACHE is taken without a cached folio is waited for; without,
 * -EEXIST is returned (readahead skips it).
 * Return: the folio with a reference (a new one also has the cache's),
 * or NULL with *errp: -ENOENT (count 0), -ENOMEM, -EEXIST, -EINVAL.
 */
static struct folio *legacy_read_swap_cache_async(struct swap_info_struct *si, uint64_t offset,
						  struct uswap_frame_pool *pool, bool wait,
						  bool *new, uint64_t *shadowp, int *errp)
{
	swp_entry_t entry = swp_entry(si->type, offset);
	struct legacy_info *li = legacy_info(si);
	struct swap_cluster_info *ci;
	struct folio *folio;
	int err;

	*new = false;
	for (;;) {
		folio = legacy_cache_get(si, entry);
		if (folio)
			return folio;
		/* Just skip read ahead for an unused swap slot. */
		if (!legacy_swapped(si, offset)) {
			*errp = -ENOENT;
			return NULL;
		}
		folio = uswap_folio_alloc(pool, 0);
		if (!folio) {
			*errp = -ENOMEM;
			return NULL;
		}
		folio_lock(folio);
		ci = swap_cluster_lock(si, offset);
		err = __legacy_swapcache_prepare(si, ci, offset, 1);
		swap_cluster_unlock(ci);
		if (!err)
			break;
		folio_unlock(folio);
		folio_put(folio);
		if (err != -EEXIST || !wait) {
			*errp = err;
			return NULL;
		}
		/*
		 * SWAP_HAS_CACHE is set but no folio is cached: a reader
		 * between swapcache_prepare and the cache add (below), a bypass
		 * reader, or a delete between its two steps. Wait and retry.
		 */
		atomic_fetch_add_explicit(&li->cache_retries, 1, memory_order_relaxed);
		usleep(LEGACY_JIFFY_US);
	}
	/*
	 * The pin is ours; the kernel charged the memcg here, with no lock
	 * held. Racing readers of this slot wait in the loop above until the
	 * folio is in the cache.
	 */
	ci = swap_cluster_lock(si, offset);
	__legacy_cache_add(si, ci, folio, entry, shadowp);
	if (USWAP_DEBUG_WALKS)
		legacy_check_cluster(si, ci);
	swap_cluster_unlock(ci);
	*new = true;
	return folio;
}

/**
 * legacy_swapin() - uswap_swapin() on a legacy device (see the file
 * comment). Context: device pinned by the caller; may sleep.
 * Return: 0 and *out; -EAGAIN (bypass race: retry the fault), -ENOENT,
 * -ENOMEM, -EINVAL.
 */
int legacy_swapin(struct swap_info_struct *si, swp_entry_t entry, struct uswap_frame_pool *pool,
		  unsigned long orders, struct folio **out, struct uswap_swapin_info *info)
{
	struct folio *batch[SWAP_READ_BATCH_MAX];
	uint64_t offset = swp_offset(entry), shadow = 0, offs[USWAP_SWAPIN_RA_MAX];
	unsigned int n = 0, nra, i;
	struct folio *folio;
	bool new;
	int err;

	folio = legacy_cache_get(si, entry);
	if (folio) {
		swap_update_readahead(si, folio, info);
		*out = folio;
		return 0;
	}
	if ((atomic_load(&si->flags) & SWP_SYNCHRONOUS_IO) &&
	    swap_count(legacy_map_get(si, offset)) == 1)
		return legacy_swapin_bypass(si, entry, pool, orders, out, info);

	nra = swapin_ra_offsets(si, entry, info, offs, USWAP_SWAPIN_RA_MAX);
	/* 6.17's readahead allocations may reclaim (__read_swap_cache_async()
	 * with the fault's gfp): before any folio of the batch is allocated,
	 * so with no lock held (swapin_ra_reserve() has the analysis). */
	swapin_ra_reserve(pool, info, nra);
	folio = legacy_read_swap_cache_async(si, offset, pool, true, &new, &shadow, &err);
	if (!folio)
		return err;
	if (!new) {
		/* A racing reader cached it meanwhile. */
		swap_update_readahead(si, folio, info);
		*out = folio;
		return 0;
	}
	batch[n++] = folio;
	for (i = 0; i < nra; i++) {
		uint64_t o = offs[i];
		struct folio *ra;
		int rerr;

		uint64_t rshadow = 0;

		/*
		 * 6.17's swap_vma_readahead() and swap_cluster_readahead() call
		 * __read_swap_cache_async() with skip_if_exists false: a slot
		 * whose SWAP_HAS_CACHE is taken without a cached folio is waited
		 * for, a jiffy at a time, as for the faulting slot. The shadow
		 * goes to workingset refault handling as any other's.
		 */
		ra = legacy_read_swap_cache_async(si, o, pool, true, &new, &rshadow, &rerr);
		if (!ra) {
			if (rerr == -ENOMEM)
				break;	/* no frame to spare: read what we have */
			continue;	/* unused or bad */
		}
		if (!new) {
			folio_put(ra);	/* already cached */
			continue;
		}
		folio_set_flag(ra, PG_readahead);
		if (info && info->ra_shadows)
			info->ra_shadows[n - 1] = rshadow;
		batch[n++] = ra;
	}
	swapin_read_batch(si, batch, n, shadow, info);
	*out = folio;
	return 0;
}

/**
 * legacy_swapin_lock() - uswap_swapin_lock() on a legacy device. A bypass
 * folio is ours alone: on a read error its SWAP_HAS_CACHE pins are
 * cleared (the slots keep their counts). A cache folio is checked as in
 * the table design. Return: 0 (locked), -EAGAIN, -EIO (unlocked).
 */
int legacy_swapin_lock(struct swap_info_struct *si, struct folio *folio, swp_entry_t entry)
{
	folio_lock(folio);
	if (!folio_matches_swap_entry(folio, entry)) {
		folio_unlock(folio);
		return -EAGAIN;
	}
	if (folio_test_uptodate(folio))
		return 0;
	if (folio_test_flag(folio, PG_swapbypass)) {
		legacy_swapcache_clear(si, swp_offset(folio->swap), (unsigned int)folio_nr_pages(folio));
		folio->swap.val = 0;
		folio_clear_flag(folio, PG_swapbypass);
	} else {
		legacy_cache_del(si, folio, 0);
		folio_ref_sub(folio, (long)folio_nr_pages(folio));
	}
	folio_unlock(folio);
	return -EIO;
}
