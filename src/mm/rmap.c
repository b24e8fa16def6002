/* SPDX-License-Identifier: MIT */
/*
 * Reverse mapping of anonymous folios: from a folio to every PTE mapping
 * it, through the anon_vma of its family of processes and the page number
 * (folio->index), which fork keeps equal in parent and child.
 */
#include <stdlib.h>

#include "mm/mm_internal.h"
#include "util/alloc.h"

/** anon_vma_alloc() - a new family with one reference (the first vma's). */
struct anon_vma *anon_vma_alloc(void)
{
	struct anon_vma *av = uswap_calloc(1, sizeof(*av));

	if (!av)
		return NULL;
	pthread_mutex_init(&av->lock, NULL);
	CDS_INIT_LIST_HEAD(&av->vmas);
	atomic_init(&av->refcount, 1);
	return av;
}

void anon_vma_get(struct anon_vma *av)
{
	atomic_fetch_add(&av->refcount, 1);
}

static void anon_vma_free_rcu(struct rcu_head *head)
{
	struct anon_vma *av = caa_container_of(head, struct anon_vma, rcu);

	uswap_rcu_tsan_acquire();
	pthread_mutex_destroy(&av->lock);
	free(av);
}

/** anon_vma_put() - drop a reference; freed after an RCU grace period. */
void anon_vma_put(struct anon_vma *av)
{
	if (atomic_fetch_sub(&av->refcount, 1) == 1)
		uswap_call_rcu(&av->rcu, anon_vma_free_rcu);
}

/** anon_vma_link() - add @vma to the family (after its older members). */
void anon_vma_link(struct anon_vma *av, struct uswap_vma *vma)
{
	vma->anon = av;
	pthread_mutex_lock(&av->lock);
	cds_list_add_tail(&vma->anon_node, &av->vmas);
	pthread_mutex_unlock(&av->lock);
}

/** anon_vma_unlink() - remove @vma (its PTEs already zapped) and drop its ref. */
void anon_vma_unlink(struct uswap_vma *vma)
{
	struct anon_vma *av = vma->anon;

	pthread_mutex_lock(&av->lock);
	cds_list_del(&vma->anon_node);
	pthread_mutex_unlock(&av->lock);
	anon_vma_put(av);
}

/**
 * folio_add_anon_rmap() - @nr more PTEs of @vma map the folio: mapcount
 * and references grow by @nr; a new folio joins the vma's family.
 * Context: PTL held.
 */
void folio_add_anon_rmap(struct folio *folio, struct uswap_vma *vma, unsigned long nr)
{
	if (!folio->mapping)
		folio->mapping = vma->anon;
	atomic_fetch_add(&folio->mapcount, (int)nr);
	folio_ref_add(folio, (long)nr);
}

/**
 * folio_remove_rmap() - @nr PTEs no longer map the folio; a folio left
 * unmapped and uncached leaves the LRU; the mappings' references go.
 * Context: PTL held (it may free the folio).
 */
void folio_remove_rmap(struct uswap_mem *mem, struct folio *folio, unsigned long nr)
{
	int left = atomic_fetch_sub(&folio->mapcount, (int)nr) - (int)nr;

	USWAP_BUG_ON(left < 0);
	/* Unmapped for good: a swap cache copy nobody references goes too
	 * (the kernel's free_swap_cache). */
	if (!left && folio_test_swapcache(folio) && folio_trylock(folio)) {
		folio_free_swap(folio);
		folio_unlock(folio);
	}
	if (!left && !folio_test_swapcache(folio))
		lru_del(mem, folio);
	folio_put_refs(folio, (long)nr);
}

/*
 * The folio's anon_vma, referenced, if the folio is still mapped. While it
 * is mapped, some vma of the family keeps the anon_vma alive; RCU covers
 * the window between reading the pointer and taking the reference.
 */
static struct anon_vma *folio_get_anon_vma(struct folio *folio)
{
	struct anon_vma *av = NULL;
	long r;

	uswap_rcu_read_lock();
	if (folio->mapping && !folio_is_shmem(folio) &&
	    atomic_load(&folio->mapcount) > 0) {
		av = folio->mapping;
		r = atomic_load(&av->refcount);
		do {
			if (r <= 0) {
				av = NULL;
				break;
			}
		} while (!atomic_compare_exchange_weak(&av->refcount, &r, r + 1));
	}
	uswap_rcu_read_unlock();
	return av;
}

/*
 * Walk every PTE of the family that maps a page of @folio, with its PTL
 * held: @fn returns false to stop. Context: folio locked.
 */
static void rmap_walk(struct folio *folio,
		      bool (*fn)(struct folio *, struct uswap_vma *, uint64_t pgno,
				 unsigned long i, void *), void *arg)
{
	struct anon_vma *av = folio_get_anon_vma(folio);
	unsigned long nr = folio_nr_pages(folio), i;
	struct uswap_vma *vma;
	bool go = true;

	if (!av)
		return;
	pthread_mutex_lock(&av->lock);
	cds_list_for_each_entry(vma, &av->vmas, anon_node) {
		for (i = 0; i < nr && go; i++) {
			uint64_t pgno = folio->index + i;
			struct uswap_spinlock *ptl;
			pte_t p;

			if (pgno < vma->start || pgno >= vma->end)
				continue;
			ptl = vma_ptl(vma, pgno);
			uswap_spin_lock(ptl);
			p = atomic_load_explicit(vma_pte(vma, pgno), memory_order_relaxed);
			if (pte_present(p) && pte_pfn(p) == folio->pfn + i)
				go = fn(folio, vma, pgno, i, arg);
			uswap_spin_unlock(ptl);
		}
		if (!go)
			break;
	}
	pthread_mutex_unlock(&av->lock);
	anon_vma_put(av);
}

static bool referenced_one(struct folio *folio, struct uswap_vma *vma, uint64_t pgno,
			   unsigned long i, void *arg)
{
	_Atomic pte_t *ptep = vma_pte(vma, pgno);
	pte_t p = atomic_load_explicit(ptep, memory_order_relaxed);

	(void)folio;
	(void)i;
	if (p & PTE_YOUNG) {
		atomic_store_explicit(ptep, p & ~PTE_YOUNG, memory_order_relaxed);
		(*(int *)arg)++;
	}
	return true;
}

/**
 * folio_referenced() - count and clear the young bits of the PTEs mapping
 * the folio. Context: folio locked. Return: how many were young.
 */
int folio_referenced(struct folio *folio)
{
	int n = 0;

	/* shmem pages are not mapped here: accesses go through
	 * folio_mark_accessed(), and reclaim reads PG_referenced itself. */
	if (folio_is_shmem(folio))
		return 0;
	rmap_walk(folio, referenced_one, &n);
	return n;
}

struct unmap_state {
	struct uswap_mem *mem;
	int err;
};

static bool unmap_one(struct folio *folio, struct uswap_vma *vma, uint64_t pgno,
		      unsigned long i, void *arg)
{
	struct unmap_state *st = arg;
	pte_t old = atomic_load_explicit(vma_pte(vma, pgno), memory_order_relaxed);
	swp_entry_t e;
	int err;

	err = folio_dup_swap(folio, (long)i);
	if (err) {
		st->err = err;
		return false;
	}
	/* Writes through this PTE are newer than any copy on swap. */
	if (old & PTE_DIRTY)
		folio_mark_dirty(folio);
	e = swp_entry(swp_type(folio->swap), swp_offset(folio->swap) + i);
	/* The page's exclusive flag moves into the swap entry (the kernel's
	 * try_to_unmap_one() with folio_try_share_anon_rmap_pte()). */
	atomic_store_explicit(vma_pte(vma, pgno), swp_entry_to_pte(e, pte_excl(old)),
			      memory_order_release);
	atomic_fetch_sub(&vma->mm->rss, 1);
	atomic_fetch_add(&vma->mm->swapents, 1);
	atomic_fetch_sub(&folio->mapcount, 1);
	folio_put_refs(folio, 1);	/* the caller's reference keeps it */
	return true;
}

/**
 * try_to_unmap() - replace every PTE mapping the swap-cache folio with its
 * swap entry, taking one swap reference per PTE (folio_dup_swap).
 * Context: folio locked, in the swap cache; caller holds a reference.
 * Return: true when nothing maps the folio any more.
 */
bool try_to_unmap(struct uswap_mem *mem, struct folio *folio)
{
	struct unmap_state st = { mem, 0 };

	rmap_walk(folio, unmap_one, &st);
	return atomic_load(&folio->mapcount) == 0;
}

/**
 * split_folio() - split an isolated, uncached large anonymous folio into
 * order-0 folios, each keeping the mappings of its page.
 * With the family's lock and the page-table lock of every vma that can map
 * the folio held (oldest vma first, the order fork locks parent and child
 * in), mapcounts cannot change; each page's mapcount is counted, and the
 * caller's isolation reference is copied to every piece.
 * Context: folio locked, isolated from the LRU (the caller holds that
 * reference and no other). Return: 0 (every piece locked, refcount =
 * its mappings + 1); -EBUSY (someone else holds a reference: unchanged).
 */
int split_folio(struct uswap_mem *mem, struct folio *folio)
{
	unsigned long nr = folio_nr_pages(folio), i;
	struct anon_vma *av = folio_get_anon_vma(folio);
	struct uswap_spinlock *held[256];
	unsigned int nheld = 0, k;
	int map[SWAPFILE_CLUSTER] = { 0 }, total = 0, err = 0;
	struct uswap_vma *vma;

	(void)mem;
	if (av) {
		pthread_mutex_lock(&av->lock);
		cds_list_for_each_entry(vma, &av->vmas, anon_node) {
			uint64_t pg = folio->index;
			struct uswap_spinlock *ptl;

			if (pg + nr <= vma->start || pg >= vma->end)
				continue;
			if (pg < vma->start)
				pg = vma->start;
			if (nheld == ARRAY_SIZE(held)) {
				err = -EBUSY;
				break;
			}
			/* An aligned folio lies in one PTL range of a vma. */
			ptl = vma_ptl(vma, pg);
			uswap_spin_lock(ptl);
			held[nheld++] = ptl;
			for (i = 0; i < nr; i++) {
				uint64_t pgno = folio->index + i;
				pte_t p;

				if (pgno < vma->start || pgno >= vma->end)
					continue;
				p = atomic_load_explicit(vma_pte(vma, pgno), memory_order_relaxed);
				if (pte_present(p) && pte_pfn(p) == folio->pfn + i) {
					map[i]++;
					total++;
				}
			}
		}
	}
	if (!err && (total != atomic_load(&folio->mapcount) ||
		     folio_ref_count(folio) != total + 1))
		err = -EBUSY;
	if (!err) {
		struct uswap_memcg *cg = folio_memcg(folio);

		uswap_folio_split_frames(folio);
		for (i = 0; i < nr; i++) {
			atomic_store(&folio[i].mapcount, map[i]);
			atomic_store(&folio[i].refcount, map[i] + 1);
			/* Each piece keeps one page of the charge. */
			__atomic_store_n(&folio[i].private, (void *)cg, __ATOMIC_RELAXED);
		}
	}
	for (k = nheld; k-- > 0;)
		uswap_spin_unlock(held[k]);
	if (av) {
		pthread_mutex_unlock(&av->lock);
		anon_vma_put(av);
	}
	return err;
}
