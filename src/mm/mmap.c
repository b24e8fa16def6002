/* SPDX-License-Identifier: MIT */
/*
 * Address spaces: creation, fork, exit, anonymous mappings, and the
 * accesses of emulated mode (read / write / touch), which behave as a
 * program's loads and stores: fault the page in, then copy under the
 * page-table lock so that reclaim cannot unmap it midway.
 */
#include <stdlib.h>
#include <string.h>

#include "mm/mm_internal.h"
#include "swap/swap_io.h"
#include "util/alloc.h"

#define MMAP_ALIGN_PAGES 512	/* 2 MiB: a PTL range, the largest folio */

/** uswap_mm_create_memcg() - see uswap/mm.h. */
USWAP_API int uswap_mm_create_memcg(struct uswap_mem *mem, struct uswap_memcg *cg,
				    struct uswap_mm **out)
{
	struct uswap_mm *mm;

	if (cg) {
		if (cg->mem != mem)
			return -EINVAL;
		pthread_mutex_lock(&mem->memcg_lock);
		if (cg->dead) {
			pthread_mutex_unlock(&mem->memcg_lock);
			return -EINVAL;
		}
		atomic_fetch_add(&cg->nr_mms, 1);
		mem_cgroup_get(cg);
		pthread_mutex_unlock(&mem->memcg_lock);
	}
	mm = uswap_calloc(1, sizeof(*mm));
	if (!mm) {
		if (cg) {
			atomic_fetch_sub(&cg->nr_mms, 1);
			mem_cgroup_put(cg);
		}
		return -ENOMEM;
	}
	mm->mem = mem;
	mm->memcg = cg;
	pthread_rwlock_init(&mm->mmap_lock, NULL);
	CDS_INIT_LIST_HEAD(&mm->vmas);
	mm->next_addr = 1ULL << 18;	/* 1 GiB: page 0 is never mapped */
	pthread_mutex_lock(&mem->mmlist_lock);
	cds_list_add_tail(&mm->mmlist, &mem->mmlist);
	pthread_mutex_unlock(&mem->mmlist_lock);
	*out = mm;
	return 0;
}

/** uswap_mm_create() - see uswap/mm.h. */
USWAP_API int uswap_mm_create(struct uswap_mem *mem, struct uswap_mm **out)
{
	return uswap_mm_create_memcg(mem, NULL, out);
}

static struct uswap_vma *vma_alloc(struct uswap_mm *mm, uint64_t start, uint64_t nr)
{
	struct uswap_vma *vma = uswap_calloc(1, sizeof(*vma));
	uint64_t nptl = (nr + PTES_PER_PTL - 1) / PTES_PER_PTL, i;

	if (!vma)
		return NULL;
	vma->mm = mm;
	vma->start = start;
	vma->end = start + nr;
	vma->ptes = uswap_calloc(nr, sizeof(*vma->ptes));
	vma->ptl = uswap_calloc(nptl, sizeof(*vma->ptl));
	if (!vma->ptes || !vma->ptl) {
		free(vma->ptes);
		free(vma->ptl);
		free(vma);
		return NULL;
	}
	for (i = 0; i < nptl; i++)
		uswap_spin_init(&vma->ptl[i]);
	return vma;
}

static void vma_free(struct uswap_vma *vma)
{
	uint64_t nptl = (vma->end - vma->start + PTES_PER_PTL - 1) / PTES_PER_PTL, i;

	for (i = 0; i < nptl; i++)
		uswap_spin_destroy(&vma->ptl[i]);
	free(vma->ptes);
	free(vma->ptl);
	free(vma);
}

/* Zap, leave the family, free. Context: mmap_lock for write, or exiting. */
static void vma_remove(struct uswap_vma *vma)
{
	zap_pte_range(vma, vma->start, vma->end);
	cds_list_del(&vma->node);
	anon_vma_unlink(vma);
	vma_free(vma);
}

/** uswap_mm_destroy() - see uswap/mm.h. */
USWAP_API void uswap_mm_destroy(struct uswap_mm *mm)
{
	struct uswap_vma *vma, *tmp;

	if (!mm)
		return;
	/* Zap first, then leave the mmlist (as exit_mmap before mmput's
	 * list_del): swapoff must not miss entries of an exiting mm. */
	pthread_rwlock_wrlock(&mm->mmap_lock);
	cds_list_for_each_entry_safe(vma, tmp, &mm->vmas, node)
		vma_remove(vma);
	pthread_rwlock_unlock(&mm->mmap_lock);
	pthread_mutex_lock(&mm->mem->mmlist_lock);
	cds_list_del(&mm->mmlist);
	pthread_mutex_unlock(&mm->mem->mmlist_lock);
	pthread_rwlock_destroy(&mm->mmap_lock);
	if (mm->memcg) {
		atomic_fetch_sub(&mm->memcg->nr_mms, 1);
		mem_cgroup_put(mm->memcg);
	}
	free(mm);
}

/** uswap_mm_mmap() - see uswap/mm.h. */
USWAP_API int uswap_mm_mmap(struct uswap_mm *mm, uint64_t len, uint64_t *addr)
{
	uint64_t nr = (len + USWAP_PAGE_SIZE - 1) >> USWAP_PAGE_SHIFT;
	struct uswap_vma *vma;
	struct anon_vma *av;

	if (!len || !addr || nr > (1ULL << 36))
		return -EINVAL;
	av = anon_vma_alloc();
	if (!av)
		return -ENOMEM;
	pthread_rwlock_wrlock(&mm->mmap_lock);
	vma = vma_alloc(mm, mm->next_addr, nr);
	if (!vma) {
		pthread_rwlock_unlock(&mm->mmap_lock);
		anon_vma_put(av);
		return -ENOMEM;
	}
	mm->next_addr += (nr + MMAP_ALIGN_PAGES - 1) / MMAP_ALIGN_PAGES * MMAP_ALIGN_PAGES +
			 MMAP_ALIGN_PAGES;
	anon_vma_link(av, vma);
	cds_list_add_tail(&vma->node, &mm->vmas);
	pthread_rwlock_unlock(&mm->mmap_lock);
	*addr = vma->start << USWAP_PAGE_SHIFT;
	return 0;
}

/** uswap_mm_munmap() - see uswap/mm.h. Return: 0, -EINVAL (no such mapping). */
USWAP_API int uswap_mm_munmap(struct uswap_mm *mm, uint64_t addr)
{
	struct uswap_vma *vma;
	int err = -EINVAL;

	pthread_rwlock_wrlock(&mm->mmap_lock);
	vma = find_vma(mm, addr >> USWAP_PAGE_SHIFT);
	if (vma && vma->start == addr >> USWAP_PAGE_SHIFT) {
		vma_remove(vma);
		err = 0;
	}
	pthread_rwlock_unlock(&mm->mmap_lock);
	return err;
}

/** uswap_mm_madvise_dontneed() - see uswap/mm.h. Return: 0, -EINVAL. */
USWAP_API int uswap_mm_madvise_dontneed(struct uswap_mm *mm, uint64_t addr, uint64_t len)
{
	uint64_t start = addr >> USWAP_PAGE_SHIFT;
	uint64_t end = (addr + len + USWAP_PAGE_SIZE - 1) >> USWAP_PAGE_SHIFT;
	struct uswap_vma *vma;
	int err = -EINVAL;

	pthread_rwlock_wrlock(&mm->mmap_lock);
	vma = find_vma(mm, start);
	if (vma && end <= vma->end && end > start) {
		zap_pte_range(vma, start, end);
		err = 0;
	}
	pthread_rwlock_unlock(&mm->mmap_lock);
	return err;
}

/** uswap_mm_mlock() - see uswap/mm.h. Return: 0, -EINVAL. */
USWAP_API int uswap_mm_mlock(struct uswap_mm *mm, uint64_t addr, bool locked)
{
	struct uswap_vma *vma;
	int err = -EINVAL;

	pthread_rwlock_wrlock(&mm->mmap_lock);
	vma = find_vma(mm, addr >> USWAP_PAGE_SHIFT);
	if (vma && vma->start == addr >> USWAP_PAGE_SHIFT) {
		vma->locked = locked;
		err = 0;
	}
	pthread_rwlock_unlock(&mm->mmap_lock);
	return err;
}

/** uswap_mm_fork() - see uswap/mm.h. */
USWAP_API int uswap_mm_fork(struct uswap_mm *parent, struct uswap_mm **childp)
{
	struct uswap_vma *vma;
	struct uswap_mm *child;
	int err = uswap_mm_create_memcg(parent->mem, parent->memcg, &child);

	if (err)
		return err;
	pthread_rwlock_wrlock(&parent->mmap_lock);
	/* The child is on the mmlist already (swapoff's unuse walks it):
	 * its lock too, nested, as dup_mmap() takes the new mm's. */
	pthread_rwlock_wrlock(&child->mmap_lock);
	child->next_addr = parent->next_addr;
	cds_list_for_each_entry(vma, &parent->vmas, node) {
		struct uswap_vma *cv = vma_alloc(child, vma->start, vma->end - vma->start);

		if (!cv) {
			err = -ENOMEM;
			break;
		}
		/* vm_area_dup() copies the readahead state with the vma. */
		__atomic_store_n(&cv->swap_readahead_info,
				 __atomic_load_n(&vma->swap_readahead_info, __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
		anon_vma_get(vma->anon);
		anon_vma_link(vma->anon, cv);
		cds_list_add_tail(&cv->node, &child->vmas);
		err = copy_vma_ptes(cv, vma);
		if (err)
			break;
	}
	pthread_rwlock_unlock(&child->mmap_lock);
	pthread_rwlock_unlock(&parent->mmap_lock);
	if (err) {
		uswap_mm_destroy(child);
		return err;
	}
	*childp = child;
	return 0;
}

/*
 * Page @pgno's VMA in *@vmap and its PTE in *@p, with the PTL held.
 * Context: mmap_lock held. Return: the PTL (unlock it), or NULL (no VMA).
 */
static struct uswap_spinlock *pte_lock(struct uswap_mm *mm, uint64_t pgno,
				       struct uswap_vma **vmap, pte_t *p)
{
	struct uswap_vma *vma = find_vma(mm, pgno);
	struct uswap_spinlock *ptl;

	if (!vma)
		return NULL;
	ptl = vma_ptl(vma, pgno);
	uswap_spin_lock(ptl);
	*p = atomic_load_explicit(vma_pte(vma, pgno), memory_order_relaxed);
	*vmap = vma;
	return ptl;
}

/* The data of the present PTE @p. */
static void *pte_data(pte_t p)
{
	struct folio *f = pfn_folio(pte_pfn(p));

	return (char *)f->pool->mem + ((pte_pfn(p) - f->pool->base_pfn) << USWAP_PAGE_SHIFT);
}

/*
 * One look at page @pgno's PTE: @step gets it (@p) with the PTE lock @ptl
 * held, which it lets go, and returns 0 or -errno to end, 1 to look again
 * (after a fault or a read that changed the PTE).
 */
typedef int (*pte_step_fn)(struct uswap_mm *mm, struct uswap_vma *vma, uint64_t pgno, pte_t p,
			   struct uswap_spinlock *ptl, void *arg);

/*
 * Look at page @pgno's PTE with @step until it ends, under mmap_lock for
 * read. Context: may sleep. Return: @step's result, -EFAULT with no VMA.
 */
static int pte_walk(struct uswap_mm *mm, uint64_t pgno, pte_step_fn step, void *arg)
{
	int err;

	pthread_rwlock_rdlock(&mm->mmap_lock);
	do {
		struct uswap_vma *vma;
		pte_t p;
		struct uswap_spinlock *ptl = pte_lock(mm, pgno, &vma, &p);

		err = ptl ? step(mm, vma, pgno, p, ptl, arg) : -EFAULT;
	} while (err == 1);
	pthread_rwlock_unlock(&mm->mmap_lock);
	return err;
}

/* One page's part of a copy: @len bytes at @off of the page, to or from @buf. */
struct copy_arg {
	void *buf;
	size_t off, len;
	bool to_page;
};

/*
 * pte_walk() step of a copy (of no bytes: a touch): with the PTE present
 * (writable to write), mark it young (dirty) and copy; else fault it in
 * and look again.
 */
static int copy_step(struct uswap_mm *mm, struct uswap_vma *vma, uint64_t pgno, pte_t p,
		     struct uswap_spinlock *ptl, void *arg)
{
	struct copy_arg *c = arg;
	int err;

	if (pte_present(p) && (!c->to_page || pte_write(p))) {
		/* Only a page of ours alone is ever written. */
		uswap_assert(!pte_write(p) || pte_excl(p));
		p |= PTE_YOUNG | (c->to_page ? PTE_DIRTY : 0);
		atomic_store_explicit(vma_pte(vma, pgno), p, memory_order_relaxed);
		if (c->len && c->to_page)
			memcpy((char *)pte_data(p) + c->off, c->buf, c->len);
		else if (c->len)
			memcpy(c->buf, (char *)pte_data(p) + c->off, c->len);
		uswap_spin_unlock(ptl);
		return 0;
	}
	uswap_spin_unlock(ptl);
	err = handle_mm_fault(mm, vma, pgno, c->to_page);
	return err ? err : 1;
}

/*
 * pte_walk() step of a peek: a present page is copied, an empty one reads
 * as zeros, a poisoned one fails; a swapped one is read without mapping it
 * (peek_swap_page(), 1 if the PTE changed meanwhile).
 */
static int peek_step(struct uswap_mm *mm, struct uswap_vma *vma, uint64_t pgno, pte_t p,
		     struct uswap_spinlock *ptl, void *arg)
{
	struct copy_arg *c = arg;

	if (pte_present(p)) {
		memcpy(c->buf, (char *)pte_data(p) + c->off, c->len);
		uswap_spin_unlock(ptl);
		return 0;
	}
	uswap_spin_unlock(ptl);
	if (pte_none(p)) {
		memset(c->buf, 0, c->len);
		return 0;
	}
	if (pte_is_poison(p))
		return -EIO;
	return peek_swap_page(mm, vma, pgno, p, c->buf, c->off, c->len);
}

/*
 * Walk [@addr, @addr + @len) page by page with @step, @buf following.
 * Context: may sleep. Return: 0, or the first page's error.
 */
static int mm_walk(struct uswap_mm *mm, uint64_t addr, void *buf, size_t len, bool to_page,
		   pte_step_fn step)
{
	while (len) {
		size_t off = addr & (USWAP_PAGE_SIZE - 1);
		size_t n = USWAP_MIN(len, USWAP_PAGE_SIZE - off);
		struct copy_arg c = { buf, off, n, to_page };
		int err = pte_walk(mm, addr >> USWAP_PAGE_SHIFT, step, &c);

		if (err)
			return err;
		addr += n;
		buf = (char *)buf + n;
		len -= n;
	}
	return 0;
}

/** uswap_mm_read() - see uswap/mm.h. */
USWAP_API int uswap_mm_read(struct uswap_mm *mm, uint64_t addr, void *buf, size_t len)
{
	return mm_walk(mm, addr, buf, len, false, copy_step);
}

/** uswap_mm_write() - see uswap/mm.h. */
USWAP_API int uswap_mm_write(struct uswap_mm *mm, uint64_t addr, const void *buf, size_t len)
{
	return mm_walk(mm, addr, (void *)buf, len, true, copy_step);
}

/** uswap_mm_peek() - see uswap/mm.h. */
USWAP_API int uswap_mm_peek(struct uswap_mm *mm, uint64_t addr, void *buf, size_t len)
{
	return mm_walk(mm, addr, buf, len, false, peek_step);
}

/** uswap_mm_same() - see uswap/mm.h. */
USWAP_API int uswap_mm_same(struct uswap_mm *mm, uint64_t addr, const void *buf)
{
	static _Thread_local uint64_t tmp[USWAP_PAGE_SIZE / 8];
	uint64_t pgno = addr >> USWAP_PAGE_SHIFT;
	struct uswap_spinlock *ptl;
	struct uswap_vma *vma;	/* unused: pte_lock() names it */
	pte_t p;
	int ret;

	if (addr & (USWAP_PAGE_SIZE - 1))
		return -EINVAL;
	pthread_rwlock_rdlock(&mm->mmap_lock);
	ptl = pte_lock(mm, pgno, &vma, &p);
	if (!ptl) {
		ret = -EFAULT;
	} else if (pte_present(p)) {
		ret = !memcmp(buf, pte_data(p), USWAP_PAGE_SIZE);
		uswap_spin_unlock(ptl);
	} else {
		uswap_spin_unlock(ptl);
		if (pte_none(p)) {
			memset(tmp, 0, sizeof(tmp));
			ret = 0;
		} else if (pte_is_poison(p)) {
			ret = -EIO;
		} else {
			/* the PTE's count holds the slot; only the caller
			 * writes this mm */
			ret = swap_read_entry(pte_to_swp_entry(p), tmp);
		}
		if (!ret)
			ret = !memcmp(buf, tmp, USWAP_PAGE_SIZE);
	}
	pthread_rwlock_unlock(&mm->mmap_lock);
	return ret;
}

/** uswap_mm_touch() - see uswap/mm.h. */
USWAP_API int uswap_mm_touch(struct uswap_mm *mm, uint64_t addr, bool write)
{
	struct copy_arg c = { NULL, 0, 0, write };	/* no bytes: the fault alone */

	return pte_walk(mm, addr >> USWAP_PAGE_SHIFT, copy_step, &c);
}

/** uswap_mm_get_stats() - see uswap/mm.h. Lockless. */
USWAP_API void uswap_mm_get_stats(struct uswap_mm *mm, struct uswap_mm_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->rss_pages = (uint64_t)atomic_load(&mm->rss);
	st->swap_pages = (uint64_t)atomic_load(&mm->swapents);
	st->readahead_pages = atomic_load_explicit(&mm->ra_pages, memory_order_relaxed);
	st->readahead_hits = atomic_load_explicit(&mm->ra_hits, memory_order_relaxed);
}
