/* SPDX-License-Identifier: MIT */
/*
 * The anonymous LRU: an active and an inactive list per budget, under one
 * spinlock, counted per budget and per memory cgroup. A folio on a list has PG_lru set and the list holds one
 * reference. Isolation moves that reference to the isolator.
 */
#include "mm/mm_internal.h"

static struct cds_list_head *lru_list(struct uswap_mem *mem, bool active)
{
	return active ? &mem->lru_active : &mem->lru_inactive;
}

static _Atomic long *lru_count(struct uswap_mem *mem, bool active)
{
	return active ? &mem->nr_active : &mem->nr_inactive;
}

/* Pages of a list, the budget's and the folio's group's, by @delta. */
static void lru_count_add(struct uswap_mem *mem, struct folio *folio, bool active, long delta)
{
	struct uswap_memcg *cg = folio_memcg(folio);

	atomic_fetch_add_explicit(lru_count(mem, active), delta, memory_order_relaxed);
	if (cg)
		atomic_fetch_add_explicit(active ? &cg->nr_active : &cg->nr_inactive, delta,
					  memory_order_relaxed);
}

/**
 * lru_add() - put a folio on the LRU, taking a reference for it.
 * Context: takes the LRU lock. The folio is not on the LRU.
 */
void lru_add(struct uswap_mem *mem, struct folio *folio, bool active)
{
	USWAP_BUG_ON(folio_test_flag(folio, PG_lru));
	folio_get(folio);
	lru_putback(mem, folio, active);
}

/**
 * lru_del() - take a folio off the LRU and drop the LRU's reference.
 * Context: takes the LRU lock. Return: false if it was not on the LRU
 * (isolated by reclaim, which then owns the decision).
 */
bool lru_del(struct uswap_mem *mem, struct folio *folio)
{
	bool active;

	uswap_spin_lock(&mem->lru_lock);
	if (!folio_test_flag(folio, PG_lru)) {
		uswap_spin_unlock(&mem->lru_lock);
		return false;
	}
	active = folio_test_flag(folio, PG_active);
	cds_list_del_init(&folio->lru);
	folio_clear_flag(folio, PG_lru);
	lru_count_add(mem, folio, active, -(long)folio_nr_pages(folio));
	uswap_spin_unlock(&mem->lru_lock);
	folio_put(folio);
	return true;
}

/**
 * lru_isolate() - take up to @max folios from the tail (coldest end) of a
 * list; the caller now holds the LRU's reference of each.
 * Context: takes the LRU lock. Return: the number taken.
 */
unsigned int lru_isolate(struct uswap_mem *mem, bool active, struct folio **out, unsigned int max)
{
	struct cds_list_head *list = lru_list(mem, active);
	unsigned int n = 0;

	uswap_spin_lock(&mem->lru_lock);
	while (n < max && !cds_list_empty(list)) {
		struct folio *f = cds_list_entry(list->prev, struct folio, lru);

		cds_list_del_init(&f->lru);
		folio_clear_flag(f, PG_lru);
		lru_count_add(mem, f, active, -(long)folio_nr_pages(f));
		out[n++] = f;
	}
	uswap_spin_unlock(&mem->lru_lock);
	return n;
}

/**
 * lru_isolate_memcg() - lru_isolate() of group @cg's folios only. The
 * budget has one LRU for all groups (the kernel has one lruvec per group):
 * the walk goes from the tail over the whole list and skips other groups'
 * folios, leaving them where they are.
 * Context: takes the LRU lock. Return: the number taken.
 */
unsigned int lru_isolate_memcg(struct uswap_mem *mem, struct uswap_memcg *cg, bool active,
			       struct folio **out, unsigned int max)
{
	struct cds_list_head *list = lru_list(mem, active), *pos, *prev;
	unsigned int n = 0;

	uswap_spin_lock(&mem->lru_lock);
	for (pos = list->prev; n < max && pos != list; pos = prev) {
		struct folio *f = cds_list_entry(pos, struct folio, lru);

		prev = pos->prev;
		if (folio_memcg(f) != cg)
			continue;
		cds_list_del_init(&f->lru);
		folio_clear_flag(f, PG_lru);
		lru_count_add(mem, f, active, -(long)folio_nr_pages(f));
		out[n++] = f;
	}
	uswap_spin_unlock(&mem->lru_lock);
	return n;
}

/**
 * lru_putback() - return an isolated folio to the head of a list; the
 * caller's (former LRU) reference goes back to the list.
 */
void lru_putback(struct uswap_mem *mem, struct folio *folio, bool active)
{
	uswap_spin_lock(&mem->lru_lock);
	if (active)
		folio_set_flag(folio, PG_active);
	else
		folio_clear_flag(folio, PG_active);
	cds_list_add(&folio->lru, lru_list(mem, active));
	lru_count_add(mem, folio, active, (long)folio_nr_pages(folio));
	folio_set_flag(folio, PG_lru);
	uswap_spin_unlock(&mem->lru_lock);
}

/**
 * folio_mark_accessed() - an access not seen through a PTE's young bit
 * (shmem reads): first PG_referenced, then activation on the next one.
 */
void folio_mark_accessed(struct uswap_mem *mem, struct folio *folio)
{
	if (folio_test_flag(folio, PG_active))
		return;
	if (!folio_test_set_flag(folio, PG_referenced))
		return;
	uswap_spin_lock(&mem->lru_lock);
	if (folio_test_flag(folio, PG_lru) && !folio_test_flag(folio, PG_active)) {
		cds_list_del(&folio->lru);
		lru_count_add(mem, folio, false, -(long)folio_nr_pages(folio));
		cds_list_add(&folio->lru, &mem->lru_active);
		lru_count_add(mem, folio, true, (long)folio_nr_pages(folio));
		folio_set_flag(folio, PG_active);
		workingset_age_nonresident(folio_workingset(mem, folio), folio_nr_pages(folio));
	}
	uswap_spin_unlock(&mem->lru_lock);
}
