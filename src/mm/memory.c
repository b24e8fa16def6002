/* SPDX-License-Identifier: MIT */
/*
 * Page faults, copy-on-write, zap and the page-table copy of fork (the
 * kernel's mm/memory.c as it concerns anonymous memory and swap).
 *
 * Every fault handler is called with mmap_lock held for read and no other
 * lock; it returns 0 when the caller should look at the PTE again (the
 * fault was handled, or raced and must be retried), or -errno.
 */
#include <string.h>

#include "mm/mm_internal.h"

/** find_vma() - the vma containing page @pgno, or NULL. Context: mmap_lock. */
struct uswap_vma *find_vma(struct uswap_mm *mm, uint64_t pgno)
{
	struct uswap_vma *vma;

	cds_list_for_each_entry(vma, &mm->vmas, node)
		if (pgno >= vma->start && pgno < vma->end)
			return vma;
	return NULL;
}

static pte_t pte_get(struct uswap_vma *vma, uint64_t pgno)
{
	return atomic_load_explicit(vma_pte(vma, pgno), memory_order_acquire);
}

static void pte_set(struct uswap_vma *vma, uint64_t pgno, pte_t p)
{
	atomic_store_explicit(vma_pte(vma, pgno), p, memory_order_release);
}

/* An aligned run of 2^order pages around @pgno, inside the vma. */
static bool vma_has_aligned(struct uswap_vma *vma, uint64_t pgno, unsigned int order,
			    uint64_t *base)
{
	uint64_t b = pgno & ~((1ULL << order) - 1);

	*base = b;
	return b >= vma->start && b + (1ULL << order) <= vma->end;
}

static int do_anonymous_page(struct uswap_mm *mm, struct uswap_vma *vma, uint64_t pgno)
{
	struct uswap_mem *mem = mm->mem;
	unsigned int order = 0, k;
	struct folio *folio = NULL;
	uint64_t base = pgno, j, nr;
	struct uswap_spinlock *ptl;
	int err = 0;

	/* The largest allowed order whose whole aligned range is unmapped. */
	for (k = mem->cfg.max_order; k > 0 && !folio; k--) {
		if (!vma_has_aligned(vma, pgno, k, &base))
			continue;
		for (j = 0; j < (1ULL << k); j++)
			if (!pte_none(pte_get(vma, base + j)))
				break;
		if (j < (1ULL << k))
			continue;
		folio = mem_alloc_folio_memcg(mem, mm->memcg, k, &err);
		if (folio)
			order = k;
	}
	if (!folio) {
		base = pgno;
		folio = mem_alloc_folio_memcg(mem, mm->memcg, 0, &err);
		if (!folio)
			return err;
	}
	nr = 1ULL << order;
	memset(folio_address(folio), 0, nr << USWAP_PAGE_SHIFT);
	folio_mark_uptodate(folio);
	folio_set_flag(folio, PG_swapbacked);
	folio->mapping = vma->anon;
	folio->index = base;
	lru_add(mem, folio, false);

	ptl = vma_ptl(vma, base);
	uswap_spin_lock(ptl);
	for (j = 0; j < nr; j++)
		if (!pte_none(pte_get(vma, base + j)))
			break;
	if (j == nr) {
		for (j = 0; j < nr; j++)
			pte_set(vma, base + j, pfn_pte_excl(folio->pfn + j) | PTE_YOUNG | PTE_DIRTY);
		folio_add_anon_rmap(folio, vma, nr);
		atomic_fetch_add(&mm->rss, (long)nr);
	}
	uswap_spin_unlock(ptl);
	if (j != nr)
		lru_del(mem, folio);	/* lost a race: nobody maps it */
	folio_put(folio);
	mem_stat_inc(mem, minor_faults);
	return 0;
}

/*
 * Orders a synchronous device may swap in at @pgno: aligned runs of swap
 * PTEs of one device with consecutive, equally aligned offsets.
 */
static unsigned long swapin_orders(struct uswap_vma *vma, uint64_t pgno, swp_entry_t entry,
				   unsigned int max_order)
{
	unsigned long orders = 1;
	unsigned int k;

	for (k = max_order; k > 0; k--) {
		uint64_t base, j, off0;

		if (!vma_has_aligned(vma, pgno, k, &base))
			continue;
		off0 = swp_offset(entry) - (pgno - base);
		if (off0 & ((1ULL << k) - 1))
			continue;
		for (j = 0; j < (1ULL << k); j++) {
			pte_t p = pte_get(vma, base + j);

			if (!pte_is_swap(p) || swp_type(pte_to_swp_entry(p)) != swp_type(entry) ||
			    swp_offset(pte_to_swp_entry(p)) != off0 + j)
				break;
		}
		if (j == (1ULL << k))
			orders |= 1UL << k;
	}
	return orders;
}

/* The largest window vm.page-cluster may ask for (SWAP_RA_ORDER_CEILING). */
#define SWAP_VMA_RA_MAX 32

/* 1 << vm.page-cluster for this budget (mem config: 0 the default 3, -1 none). */
static unsigned int mem_ra_max_pages(const struct uswap_mem *mem)
{
	int pc = mem->cfg.page_cluster;

	return pc < 0 ? 1 : 1U << (pc ? pc : 3);
}

/*
 * Whether a folio we hold locked, with no mapping left and out of the swap
 * cache, is provably ours alone: the only references are ours and the
 * LRU's (the kernel's folio_ref_count() == 1 test in do_swap_page()).
 */
static bool folio_refs_only_ours(struct folio *folio)
{
	return !folio_in_swap(folio) &&
	       folio_ref_count(folio) == 1 + (folio_test_flag(folio, PG_lru) ? 1 : 0);
}

/*
 * The kernel's should_try_to_free_swap(), asked after this mapping's swap
 * references are put and before the folio is mapped: drop the cache copy
 * when swap is full overall or for the folio's group (mem_cgroup_swap_full()),
 * when the VMA is VM_LOCKED (the folio will stay resident: its swap copy
 * only takes space), or on a
 * write fault when nobody but the cache and we hold the folio. Both
 * kernels have these three rules; swap table phase II adds "always on a
 * synchronous device" (info->free_sync, set by the new design only); 6.17
 * has no such rule. The LRU's reference is ours to discount: the kernel's
 * LRU holds none. Context: folio locked, PTL held. Return: true to try
 * folio_free_swap().
 */
static bool should_try_to_free_swap(struct folio *folio, const struct uswap_vma *vma,
				    const struct uswap_swapin_info *info, bool write)
{
	long lru = folio_test_flag(folio, PG_lru) ? 1 : 0;

	if (!folio_test_swapcache(folio))
		return false;
	if (info->free_sync || uswap_swap_cgroup_full(folio_memcg_id(folio)) || vma->locked)
		return true;
	return write && folio_ref_count(folio) == 1 + lru + (long)folio_nr_pages(folio);
}

/*
 * info.ra_reclaim for a fault: direct reclaim of about @nr frames before
 * the swap-in allocates its folio and readahead folios, as the kernel's
 * GFP_HIGHUSER_MOVABLE allocation in __read_swap_cache_async() reclaims.
 * Context: as any allocation of a fault (mmap_lock held for read), and no
 * swap cluster lock, no SWAP_HAS_CACHE pin, no folio lock of this swap-in
 * (swapin_ra_reserve() in src/swap/swap_state.c has the deadlock analysis).
 * Return: the frames freed.
 */
static int mem_ra_reclaim(void *arg, unsigned int nr)
{
	struct uswap_mem *mem = arg;

	mem_stat_inc(mem, direct_reclaims);
	return (int)shrink_memory(mem, nr, true);
}

/* The readahead state of one swap-in (arrays for struct uswap_swapin_info). */
struct swapin_ra {
	struct folio *folios[USWAP_SWAPIN_RA_MAX];
	swp_entry_t around[USWAP_SWAPIN_RA_MAX];
	uint64_t shadows[USWAP_SWAPIN_RA_MAX];
};

/*
 * Read the swap entry @orig of page @pgno into a folio (mem_swapin()), in
 * at most @orders, with the kernel's VMA readahead around it (its arrays
 * in @ra): the swap entries of the PTEs any window may cover, max - 1
 * pages either side of the fault, inside the vma and the PMD (one PTL
 * range), read lock-free (the swap layer rechecks each slot);
 * swap_vma_ra_win() picks the window from them. Counts the mm's readahead.
 * Then lock the folio (uswap_swapin_lock()).
 * Context: mmap_lock held for read, no PTL. Return: 0 and *@folio locked,
 * uptodate and caching the entry (a reference held); 1 look again (the PTE
 * changed, a racing swap-in, swapoff brought the page in); -EIO the read
 * failed (counted); -ENOMEM, -errno.
 */
static int fault_swapin(struct uswap_mm *mm, struct uswap_vma *vma, uint64_t pgno, pte_t orig,
			unsigned long orders, struct swapin_ra *ra, struct uswap_swapin_info *info,
			struct folio **folio)
{
	struct uswap_mem *mem = mm->mem;
	uint64_t pmd = pgno & ~(uint64_t)(PTES_PER_PTL - 1), lo, hi, j;
	unsigned int max = mem_ra_max_pages(mem);
	int err;

	_Static_assert(2 * SWAP_VMA_RA_MAX - 1 <= USWAP_SWAPIN_RA_MAX, "window fits the array");
	*info = (struct uswap_swapin_info){ .ra_folios = ra->folios, .ra_entries = ra->around,
					    .ra_addr = pgno,
					    .ra_info = &vma->swap_readahead_info,
					    .ra_shadows = ra->shadows,
					    .ra_reclaim = mem_ra_reclaim, .ra_reclaim_arg = mem };
	lo = pgno >= vma->start + (max - 1) ? pgno - (max - 1) : vma->start;
	lo = lo > pmd ? lo : pmd;
	hi = USWAP_MIN(USWAP_MIN(vma->end, pgno + max), pmd + PTES_PER_PTL);
	info->ra_first = lo;
	info->ra_max_pages = max;
	for (j = lo; j < hi; j++) {
		pte_t p = pte_get(vma, j);

		ra->around[info->nr_ra_entries++] = pte_is_swap(p) ? pte_to_swp_entry(p) :
				(swp_entry_t){ 0 };
	}
	err = mem_swapin(mem, mm->memcg, pte_to_swp_entry(orig), orders, info, folio);
	if (err == -ENOENT || err == -EAGAIN)
		return 1;	/* the PTE changed, or a racing swap-in */
	if (err == -ENODEV && pte_get(vma, pgno) != orig)
		return 1;	/* swapoff brought the page in meanwhile */
	if (err)
		return err;
	if (info->ra_pages)
		atomic_fetch_add_explicit(&mm->ra_pages, info->ra_pages, memory_order_relaxed);
	if (info->ra_hit)
		atomic_fetch_add_explicit(&mm->ra_hits, 1, memory_order_relaxed);
	err = uswap_swapin_lock(*folio, pte_to_swp_entry(orig));
	if (err) {
		if (info->major)
			lru_add(mem, *folio, false);
		folio_put(*folio);
		if (err == -EIO) {
			mem_stat_inc(mem, read_errors);
			return -EIO;
		}
		return 1;
	}
	return 0;
}

static int do_swap_page(struct uswap_mm *mm, struct uswap_vma *vma, uint64_t pgno, pte_t orig,
			bool write)
{
	struct swapin_ra ra;
	struct uswap_swapin_info info;
	struct uswap_mem *mem = mm->mem;
	swp_entry_t entry = pte_to_swp_entry(orig);
	unsigned long orders = 1, nr, idx, j;
	struct uswap_spinlock *ptl;
	struct folio *folio;
	uint64_t head_pg;
	bool whole = false, activate = false, exclusive;
	int err;

	if (mem->cfg.max_order && uswap_swap_synchronous(entry))
		orders = swapin_orders(vma, pgno, entry, mem->cfg.max_order);
	err = fault_swapin(mm, vma, pgno, orig, orders, &ra, &info, &folio);
	if (err == 1)
		return 0;	/* look again */
	if (err == -EIO)
		mem_stat_inc(mem, sigbus);
	if (err)
		return err;
	nr = folio_nr_pages(folio);
	if (info.major) {
		/* Judged at the group that evicted it, whichever mm faults. */
		if (info.shadow)
			activate = workingset_refault(mem, folio, info.shadow);
		lru_add(mem, folio, activate);
	}
	idx = swp_offset(entry) - swp_offset(folio->swap);
	head_pg = pgno - idx;
	ptl = vma_ptl(vma, pgno);
	uswap_spin_lock(ptl);
	if (pte_get(vma, pgno) != orig) {
		uswap_spin_unlock(ptl);
		/* As the kernel's error paths: drop the swap copy if unused. */
		folio_free_swap(folio);
		folio_unlock(folio);
		folio_put(folio);
		return 0;
	}
	if (!folio->mapping) {
		folio->mapping = vma->anon;
		folio->index = head_pg;
	}
	/* Map a large folio whole when its PTEs are all its entries, in one
	 * PTL range; else only the faulting page. */
	if (nr > 1 && !(head_pg & (nr - 1)) && head_pg >= vma->start && head_pg + nr <= vma->end &&
	    folio->index == head_pg) {
		whole = true;
		for (j = 0; j < nr && whole; j++) {
			pte_t p = pte_get(vma, head_pg + j);

			whole = pte_is_swap(p) &&
				pte_to_swp_entry(p).val == swp_entry(swp_type(entry),
						swp_offset(folio->swap) + j).val;
		}
	}
	/*
	 * Exclusive (the kernel's do_swap_page()): the swap PTEs say the pages
	 * were exclusive when they went out; a folio that never entered the
	 * swap cache (read around it, count 1) is ours alone. But a device
	 * that reads the page during writeback must not see it change: a
	 * folio under writeback there is mapped read-only, and a write goes
	 * through do_wp_page(), which copies it.
	 */
	if (whole) {
		exclusive = true;
		for (j = 0; j < nr; j++)
			exclusive &= pte_swp_exclusive(pte_get(vma, head_pg + j));
	} else {
		exclusive = pte_swp_exclusive(orig);
	}
	if (!folio_test_swapcache(folio))
		exclusive = true;
	else if (exclusive && folio_test_writeback(folio) && uswap_swap_stable_writes(entry))
		exclusive = false;
	/* This mapping's swap references go; then the cache copy, if
	 * should_try_to_free_swap() says so and no other reference needs it
	 * (folio_free_swap checks). A folio read around the cache (the old
	 * design's bypass) gives its SWAP_HAS_CACHE pins back here, the
	 * kernel's swapcache_clear() after mapping. */
	folio_put_swap(folio, whole ? -1 : (long)idx);
	if (!folio_test_swapcache(folio))
		folio_free_swap(folio);
	else if (should_try_to_free_swap(folio, vma, &info, write) && folio_free_swap(folio) == 1)
		mem_stat_inc(mem, swap_frees_after_map);
	/* Not exclusive by its PTE, but nobody else holds a reference: ours. */
	if (!exclusive && folio_refs_only_ours(folio))
		exclusive = true;
	if (whole) {
		for (j = 0; j < nr; j++)
			pte_set(vma, head_pg + j, (exclusive ? pfn_pte_excl(folio->pfn + j) :
						   pfn_pte(folio->pfn + j, false)) | PTE_YOUNG);
		folio_add_anon_rmap(folio, vma, nr);
		atomic_fetch_add(&mm->rss, (long)nr);
		atomic_fetch_sub(&mm->swapents, (long)nr);
	} else {
		pte_set(vma, pgno, (exclusive ? pfn_pte_excl(folio->pfn + idx) :
				    pfn_pte(folio->pfn + idx, false)) | PTE_YOUNG);
		folio_add_anon_rmap(folio, vma, 1);
		atomic_fetch_add(&mm->rss, 1);
		atomic_fetch_sub(&mm->swapents, 1);
	}
	uswap_spin_unlock(ptl);
	folio_unlock(folio);
	folio_put(folio);
	return 0;
}

/**
 * peek_swap_page() - copy @len bytes at @off of the swapped-out page
 * @pgno (swap PTE @orig) into @buf without mapping it. The page is read
 * as MADV_WILLNEED reads (read_swap_cache_async()): into the swap cache,
 * where it stays clean and unmapped on the LRU for reclaim to drop
 * without I/O; or, on the old design's bypass, around the cache, and
 * freed after the copy. The PTE, the slot and its count are left as
 * they were, so the slot keeps the page's data.
 * Context: mmap_lock held for read, no PTL. Return: 0 copied; 1 the PTE
 * changed (look again); -EIO (the page's data could not be read), -ENOMEM.
 */
int peek_swap_page(struct uswap_mm *mm, struct uswap_vma *vma, uint64_t pgno, pte_t orig,
		   void *buf, size_t off, size_t len)
{
	struct swapin_ra ra;
	struct uswap_swapin_info info;
	struct uswap_mem *mem = mm->mem;
	swp_entry_t entry = pte_to_swp_entry(orig);
	struct folio *folio;
	uint64_t pfn;
	int err;

	err = fault_swapin(mm, vma, pgno, orig, 1, &ra, &info, &folio);
	if (err)
		return err;
	pfn = folio->pfn + (swp_offset(entry) - swp_offset(folio->swap));
	memcpy(buf, (char *)folio->pool->mem + ((pfn - folio->pool->base_pfn) << USWAP_PAGE_SHIFT) +
	       off, len);
	/*
	 * Drop-behind: the caller keeps the bytes and the slot keeps the
	 * data, so a clean, unmapped cache folio goes now rather than taking
	 * a frame until reclaim finds it (a bypass folio gives its
	 * SWAP_HAS_CACHE pins back and goes with our reference). One that
	 * reclaim has isolated is left to reclaim.
	 */
	if (!folio_test_swapcache(folio)) {
		folio_free_swap(folio);
		mem_stat_inc(mem, peek_drops);
	} else if (!folio_test_dirty(folio) && !folio_test_writeback(folio) &&
		   !atomic_load(&folio->mapcount)) {
		bool listed = lru_del(mem, folio);

		if ((listed || info.major) && uswap_remove_mapping(folio, 0) == 1) {
			mem_stat_inc(mem, peek_drops);
			return 0;
		}
		if (listed || info.major)
			lru_add(mem, folio, false);
	} else if (info.major) {
		lru_add(mem, folio, false);
	}
	folio_unlock(folio);
	folio_put(folio);
	return 0;
}

/*
 * wp_can_reuse_anon_folio(): may a write fault on a page not marked
 * exclusive keep it? Only an order-0 folio that nothing else references:
 * its one mapping is ours, and the swap cache lets go of it (which it
 * refuses while the folio is under writeback or still swapped).
 * Context: PTL held (our mapping cannot go); the folio is only trylocked.
 */
static bool wp_can_reuse_anon_folio(struct folio *folio)
{
	long lru = folio_test_flag(folio, PG_lru) ? 1 : 0;
	bool ok;

	if (folio_order(folio) || atomic_load(&folio->mapcount) != 1)
		return false;
	/* Cheap test first: more references than mapping, LRU and cache. */
	if (folio_ref_count(folio) > 1 + lru + (folio_in_swap(folio) ? 1 : 0))
		return false;
	if (!folio_trylock(folio))
		return false;
	if (folio_in_swap(folio))
		folio_free_swap(folio);
	ok = !folio_in_swap(folio) &&
	     folio_ref_count(folio) == 1 + (folio_test_flag(folio, PG_lru) ? 1 : 0);
	folio_unlock(folio);
	return ok;
}

/*
 * Write fault on a present, write-protected page (the kernel's
 * do_wp_page()): an exclusive page, or one wp_can_reuse_anon_folio()
 * proves unshared, is made writable in place; any other is copied.
 */
static int do_wp_page(struct uswap_mm *mm, struct uswap_vma *vma, uint64_t pgno, pte_t orig)
{
	struct uswap_mem *mem = mm->mem;
	struct uswap_spinlock *ptl = vma_ptl(vma, pgno);
	struct folio *old, *new;
	uint64_t sub;
	int err;

	uswap_spin_lock(ptl);
	if (pte_get(vma, pgno) != orig) {
		uswap_spin_unlock(ptl);
		return 0;
	}
	old = page_folio_pfn(pte_pfn(orig));
	sub = pte_pfn(orig) - old->pfn;
	if (pte_excl(orig) || wp_can_reuse_anon_folio(old)) {
		pte_set(vma, pgno, orig | PTE_EXCL | PTE_WRITE | PTE_YOUNG | PTE_DIRTY);
		uswap_spin_unlock(ptl);
		mem_stat_inc(mem, cow_reuses);
		return 0;
	}
	folio_get(old);
	uswap_spin_unlock(ptl);

	new = mem_alloc_folio_memcg(mem, mm->memcg, 0, &err);
	if (!new) {
		folio_put(old);
		return err;
	}
	memcpy(folio_address(new), (char *)folio_address(old) + (sub << USWAP_PAGE_SHIFT),
	       USWAP_PAGE_SIZE);
	folio_mark_uptodate(new);
	folio_set_flag(new, PG_swapbacked);
	new->mapping = vma->anon;
	new->index = pgno;
	lru_add(mem, new, false);
	uswap_spin_lock(ptl);
	if (pte_get(vma, pgno) == orig) {
		pte_set(vma, pgno, pfn_pte_excl(new->pfn) | PTE_YOUNG | PTE_DIRTY);
		folio_add_anon_rmap(new, vma, 1);
		folio_remove_rmap(mem, old, 1);
		mem_stat_inc(mem, cow_copies);
	} else {
		uswap_spin_unlock(ptl);
		lru_del(mem, new);
		folio_put(new);
		folio_put(old);
		return 0;
	}
	uswap_spin_unlock(ptl);
	folio_put(new);
	folio_put(old);
	return 0;
}

/**
 * handle_mm_fault() - make page @pgno present (and writable for @write).
 * Context: mmap_lock held for read. Return: 0 (look at the PTE again),
 * -ENOMEM, -EIO (the page's data could not be read).
 */
int handle_mm_fault(struct uswap_mm *mm, struct uswap_vma *vma, uint64_t pgno, bool write)
{
	pte_t p = pte_get(vma, pgno);

	if (pte_is_poison(p)) {
		mem_stat_inc(mm->mem, sigbus);
		return -EIO;
	}
	if (pte_none(p))
		return do_anonymous_page(mm, vma, pgno);
	if (pte_is_swap(p))
		return do_swap_page(mm, vma, pgno, p, write);
	if (write && !pte_write(p))
		return do_wp_page(mm, vma, pgno, p);
	return 0;
}

/**
 * zap_pte_range() - unmap pages [start, end) of @vma: present pages lose
 * a mapping, swap entries are put in runs (swap_put_entries_direct).
 * Context: mmap_lock held for write (or the mm is exiting).
 */
void zap_pte_range(struct uswap_vma *vma, uint64_t start, uint64_t end)
{
	struct uswap_mem *mem = vma->mm->mem;
	uint64_t pg = start;

	while (pg < end) {
		uint64_t chunk_end = USWAP_MIN(end, (pg / PTES_PER_PTL + 1) * PTES_PER_PTL);
		struct uswap_spinlock *ptl = vma_ptl(vma, pg);

		uswap_spin_lock(ptl);
		while (pg < chunk_end) {
			pte_t p = pte_get(vma, pg);

			if (pte_present(p)) {
				struct folio *f = page_folio_pfn(pte_pfn(p));
				unsigned long n = 1;

				pte_set(vma, pg, 0);
				/* The rest of the same folio, in order. */
				while (pg + n < chunk_end) {
					pte_t q = pte_get(vma, pg + n);

					if (!pte_present(q) || pte_pfn(q) != pte_pfn(p) + n ||
					    page_folio_pfn(pte_pfn(q)) != f)
						break;
					pte_set(vma, pg + n, 0);
					n++;
				}
				folio_remove_rmap(mem, f, n);
				atomic_fetch_sub(&vma->mm->rss, (long)n);
				pg += n;
			} else if (pte_is_swap(p)) {
				swp_entry_t e = pte_to_swp_entry(p);
				long n = 1;

				pte_set(vma, pg, 0);
				while (pg + (uint64_t)n < chunk_end) {
					pte_t q = pte_get(vma, pg + (uint64_t)n);

					if (!pte_is_swap(q) ||
					    pte_to_swp_entry(q).val != e.val + (uint64_t)n ||
					    swp_offset(e) / SWAPFILE_CLUSTER !=
					    (swp_offset(e) + (uint64_t)n) / SWAPFILE_CLUSTER)
						break;
					pte_set(vma, pg + (uint64_t)n, 0);
					n++;
				}
				USWAP_BUG_ON(swap_put_entries_direct(e, n));
				atomic_fetch_sub(&vma->mm->swapents, n);
				pg += (uint64_t)n;
			} else {
				if (pte_is_poison(p))
					pte_set(vma, pg, 0);
				pg++;
			}
		}
		uswap_spin_unlock(ptl);
	}
}

/**
 * copy_vma_ptes() - fork's copy of @src's page table into @dst: swap
 * entries gain a reference, present pages are shared write-protected;
 * neither side's page or entry is exclusive any more.
 * Context: mmap_lock of the parent held for write. Return: 0, or the
 * error of swap_dup_entry_direct (the copy stops; the child is torn down).
 */
int copy_vma_ptes(struct uswap_vma *dst, struct uswap_vma *src)
{
	uint64_t pg;
	int err = 0;

	for (pg = src->start; pg < src->end && !err;) {
		uint64_t chunk_end = USWAP_MIN(src->end, (pg / PTES_PER_PTL + 1) * PTES_PER_PTL);
		struct uswap_spinlock *sptl = vma_ptl(src, pg), *dptl = vma_ptl(dst, pg);

		/* Parent before child: the order split_folio() locks in. */
		uswap_spin_lock(sptl);
		uswap_spin_lock(dptl);
		for (; pg < chunk_end; pg++) {
			pte_t p = pte_get(src, pg);

			if (pte_present(p)) {
				struct folio *f = page_folio_pfn(pte_pfn(p));

				p &= ~(PTE_WRITE | PTE_EXCL);
				pte_set(src, pg, p);
				pte_set(dst, pg, p);
				folio_add_anon_rmap(f, dst, 1);
				atomic_fetch_add(&dst->mm->rss, 1);
			} else if (pte_is_swap(p)) {
				err = swap_dup_entry_direct(pte_to_swp_entry(p));
				if (err)
					break;
				p &= ~PTE_SWP_EXCL;
				pte_set(src, pg, p);
				pte_set(dst, pg, p);
				atomic_fetch_add(&dst->mm->swapents, 1);
			} else if (pte_is_poison(p)) {
				pte_set(dst, pg, p);
			}
		}
		uswap_spin_unlock(dptl);
		uswap_spin_unlock(sptl);
	}
	return err;
}

/*
 * Swapoff could not read the page behind @p (its device failed): the data
 * is gone. As the kernel's unuse_pte(), the PTE becomes a poison marker
 * (later accesses are -EIO) and the swap entry is put, so that swapoff can
 * finish. Context: mmap_lock held for read; takes the PTL. Return: nothing.
 */
static void unuse_lost_pte(struct uswap_vma *vma, uint64_t pg, pte_t p)
{
	struct uswap_spinlock *ptl = vma_ptl(vma, pg);
	bool lost = false;

	uswap_spin_lock(ptl);
	if (pte_get(vma, pg) == p) {
		pte_set(vma, pg, PTE_POISON);
		lost = true;
	}
	uswap_spin_unlock(ptl);
	if (!lost)
		return;
	USWAP_BUG_ON(swap_put_entries_direct(pte_to_swp_entry(p), 1));
	atomic_fetch_sub(&vma->mm->swapents, 1);
	mem_stat_inc(vma->mm->mem, swapoff_lost);
}

/**
 * unuse_vma() - swapoff: fault in every page of @vma that is on device
 * @type. A page that cannot be read (-EIO: the device failed) is lost: its
 * PTE is poisoned and its entry put (counted in swapoff_lost).
 * Context: mmap_lock held for read. Return: 0, -ENOMEM.
 */
int unuse_vma(struct uswap_vma *vma, unsigned int type)
{
	uint64_t pg;
	int err;

	for (pg = vma->start; pg < vma->end; pg++) {
		for (;;) {
			pte_t p = pte_get(vma, pg);

			if (!pte_is_swap(p) || swp_type(pte_to_swp_entry(p)) != type)
				break;
			err = do_swap_page(vma->mm, vma, pg, p, false);
			if (err == -EIO)
				unuse_lost_pte(vma, pg, p);
			else if (err)
				return err;
		}
	}
	return 0;
}
