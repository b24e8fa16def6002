/* SPDX-License-Identifier: MIT */
/*
 * Folio lock, references and flags.
 *
 * The folio lock is a three-state futex word (free / locked / locked with
 * waiters) rather than a pthread mutex because, as in the kernel, the
 * thread that unlocks may not be the one that locked: a read completion
 * unlocks the folio its submitter locked.
 */
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <urcu/futex.h>

#include "swap/folio_internal.h"

static void futex_wait_word(_Atomic uint32_t *w, uint32_t val)
{
	futex_noasync((int32_t *)w, FUTEX_WAIT_PRIVATE, (int32_t)val, NULL, NULL, 0);
}

static void futex_wake_word(_Atomic uint32_t *w, int nr)
{
	futex_noasync((int32_t *)w, FUTEX_WAKE_PRIVATE, nr, NULL, NULL, 0);
}

/** folio_trylock() - take the lock if free. Context: any. Return: true if taken. */
USWAP_API bool folio_trylock(struct folio *folio)
{
	uint32_t c = 0;

	return atomic_compare_exchange_strong_explicit(&folio->lockword, &c, 1,
						       memory_order_acquire,
						       memory_order_relaxed);
}

/** folio_lock() - take the lock, sleeping while it is held. Context: may sleep. */
USWAP_API void folio_lock(struct folio *folio)
{
	uint32_t c = 0;

	if (atomic_compare_exchange_strong_explicit(&folio->lockword, &c, 1,
						    memory_order_acquire,
						    memory_order_relaxed))
		return;
	/* Contended: mark "waiters" and sleep until we are the ones who
	 * turn 0 into 2. */
	if (c != 2)
		c = atomic_exchange_explicit(&folio->lockword, 2, memory_order_acquire);
	while (c != 0) {
		futex_wait_word(&folio->lockword, 2);
		c = atomic_exchange_explicit(&folio->lockword, 2, memory_order_acquire);
	}
}

/** folio_unlock() - release the lock and wake one waiter. Context: any thread. */
USWAP_API void folio_unlock(struct folio *folio)
{
	uint32_t old = atomic_exchange_explicit(&folio->lockword, 0, memory_order_release);

	USWAP_BUG_ON(old == 0);
	if (old == 2)
		futex_wake_word(&folio->lockword, 1);
}

USWAP_API bool folio_test_locked(const struct folio *folio)
{
	return atomic_load_explicit(&folio->lockword, memory_order_relaxed) != 0;
}

USWAP_API void folio_get(struct folio *folio)
{
	long old = atomic_fetch_add_explicit(&folio->refcount, 1, memory_order_relaxed);

	USWAP_BUG_ON(old <= 0);
}

/** folio_try_get() - a reference unless the folio is free. Context: lockless. */
bool folio_try_get(struct folio *folio)
{
	long c = atomic_load_explicit(&folio->refcount, memory_order_relaxed);

	do {
		if (c <= 0)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&folio->refcount, &c, c + 1,
							memory_order_acquire,
							memory_order_relaxed));
	return true;
}

void folio_ref_add(struct folio *folio, long nr)
{
	long old = atomic_fetch_add_explicit(&folio->refcount, nr, memory_order_relaxed);

	USWAP_BUG_ON(old <= 0);
}

void folio_ref_sub(struct folio *folio, long nr)
{
	long old = atomic_fetch_sub_explicit(&folio->refcount, nr, memory_order_release);

	/* Only the swap cache uses this, and it never drops the last ref. */
	USWAP_BUG_ON(old <= nr);
}


/** folio_put() - drop a reference; the last returns the frames to the pool. */
USWAP_API void folio_put(struct folio *folio)
{
	long old = atomic_fetch_sub_explicit(&folio->refcount, 1, memory_order_acq_rel);

	USWAP_BUG_ON(old <= 0);
	if (old == 1) {
		USWAP_BUG_ON(folio_test_flag(folio, PG_swapcache));
		USWAP_BUG_ON(folio_test_locked(folio));
		uswap_frame_pool_free_folio(folio);
	}
}

/** folio_put_refs() - see folio.h. Context: any. */
void folio_put_refs(struct folio *folio, long nr)
{
	long old = atomic_fetch_sub_explicit(&folio->refcount, nr, memory_order_acq_rel);

	USWAP_BUG_ON(old < nr);
	if (old == nr) {
		USWAP_BUG_ON(folio_test_flag(folio, PG_swapcache));
		uswap_frame_pool_free_folio(folio);
	}
}

USWAP_API long folio_ref_count(const struct folio *folio)
{
	return atomic_load_explicit(&folio->refcount, memory_order_relaxed);
}

USWAP_API unsigned int folio_order(const struct folio *folio)
{
	return folio->order;
}

/*
 * The id is written and read with relaxed atomics: a swap-in charges its
 * folio (mem_cgroup_commit_charge()) after the read that published it in
 * the swap cache, so a fault on the same entry in another mm may read the
 * id meanwhile (and see the old one: the root's, for a moment).
 */

/** folio_set_memcg_id() - see uswap/folio.h. Context: any. */
USWAP_API void folio_set_memcg_id(struct folio *folio, uint16_t id)
{
	__atomic_store_n(&folio->memcg_id, id, __ATOMIC_RELAXED);
}

/** folio_memcg_id() - see uswap/folio.h. Context: any. */
USWAP_API uint16_t folio_memcg_id(const struct folio *folio)
{
	return __atomic_load_n(&folio->memcg_id, __ATOMIC_RELAXED);
}

USWAP_API unsigned long folio_nr_pages(const struct folio *folio)
{
	return 1UL << folio->order;
}

USWAP_API uint64_t folio_pfn(const struct folio *folio)
{
	return folio->pfn;
}

USWAP_API void *folio_address(const struct folio *folio)
{
	return folio->pool->mem + ((folio->pfn - folio->pool->base_pfn) << USWAP_PAGE_SHIFT);
}

USWAP_API swp_entry_t folio_swap_entry(const struct folio *folio)
{
	swp_entry_t none = { 0 };

	return folio_test_flag(folio, PG_swapcache) ? folio->swap : none;
}

USWAP_API bool folio_test_swapcache(const struct folio *folio)
{
	return folio_test_flag(folio, PG_swapcache);
}

USWAP_API bool folio_test_dirty(const struct folio *folio)
{
	return folio_test_flag(folio, PG_dirty);
}

USWAP_API bool folio_test_writeback(const struct folio *folio)
{
	return folio_test_flag(folio, PG_writeback);
}

USWAP_API bool folio_test_uptodate(const struct folio *folio)
{
	return folio_test_flag(folio, PG_uptodate);
}

USWAP_API void folio_mark_uptodate(struct folio *folio)
{
	folio_set_flag(folio, PG_uptodate);
}

USWAP_API void folio_mark_dirty(struct folio *folio)
{
	folio_set_flag(folio, PG_dirty);
}

USWAP_API bool folio_clear_dirty(struct folio *folio)
{
	return folio_test_clear_flag(folio, PG_dirty);
}

/** folio_start_writeback() - mark the folio under write. Context: folio locked. */
void folio_start_writeback(struct folio *folio)
{
	bool was = folio_test_set_flag(folio, PG_writeback);

	USWAP_BUG_ON(was);
}

/**
 * folio_end_writeback() - clear PG_writeback, wake waiters if any (the
 * kernel's PG_waiters: no system call when nobody sleeps). Context: any.
 */
void folio_end_writeback(struct folio *folio)
{
	uint32_t old = atomic_fetch_and_explicit(&folio->flags,
						 ~((1U << PG_writeback) | (1U << PG_waiters)),
						 memory_order_acq_rel);

	USWAP_BUG_ON(!(old & (1U << PG_writeback)));
	if (old & (1U << PG_waiters))
		futex_wake_word(&folio->flags, INT_MAX);
}

/** folio_wait_writeback() - sleep until the folio is not under write. */
void folio_wait_writeback(struct folio *folio)
{
	uint32_t f = atomic_load_explicit(&folio->flags, memory_order_acquire);

	while (f & (1U << PG_writeback)) {
		/* Say we sleep before sleeping on a word that says so. */
		if (!(f & (1U << PG_waiters)) &&
		    !atomic_compare_exchange_weak_explicit(&folio->flags, &f,
							   f | (1U << PG_waiters),
							   memory_order_acq_rel,
							   memory_order_acquire))
			continue;
		futex_wait_word(&folio->flags, f | (1U << PG_waiters));
		f = atomic_load_explicit(&folio->flags, memory_order_acquire);
	}
}
