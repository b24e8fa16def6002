/* SPDX-License-Identifier: MIT */
/*
 * A lockless swap-cache lookup racing with the destruction of the frame
 * pool that holds the folio it found: the lookup has turned the entry's
 * PFN into a folio struct and is about to take a reference when the folio
 * leaves the cache, is freed, and its pool is destroyed.
 *
 * The test includes swap_cache.c and legacy_cache.c (to reach their
 * static functions)
 * with a hook that parks the lookup at that point until the main thread
 * has destroyed the pool and created a new one, so the interleaving is
 * forced. The folio struct must still be there (ASan reports a
 * use-after-free otherwise), and the new pool must not take the old one's
 * PFN range while the lookup may still use it.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>

#include "swaptest.h"
#include "swap/swap_internal.h"

static _Thread_local bool in_lookup_thread;
static atomic_bool hook_armed;
static sem_t parked, resume;

/* In the lookup thread, once: wait for the main thread between
 * pfn_folio() and folio_try_get(). */
static void lookup_hook(struct folio *folio)
{
	bool armed = true;

	if (!in_lookup_thread || !folio ||
	    !atomic_compare_exchange_strong(&hook_armed, &armed, false))
		return;
	sem_post(&parked);
	while (sem_wait(&resume))
		;
}

#define swap_cache_lookup_hook(folio) lookup_hook(folio)
#define legacy_cache_lookup_hook(folio) lookup_hook(folio)
#include "swap/swap_cache.c"
#include "legacy/legacy_cache.c"

static swp_entry_t lookup_entry;

static atomic_bool lookup_done;

static void *lookup_fn(void *arg)
{
	struct folio *folio;

	(void)arg;
	in_lookup_thread = true;
	folio = swap_cache_get_folio(lookup_entry);
	/* Without the hook (the lookup never parked), wake the main thread
	 * so that the test fails instead of hanging. */
	atomic_store(&lookup_done, true);
	sem_post(&parked);
	return folio;
}

static void lookup_vs_pool_destroy(const char *design)
{
	struct uswap_frame_pool *pool, *next;
	unsigned int old_id, new_id;
	pthread_t tid;
	struct folio *f;
	void *found;
	int type;

	assert_int_equal(uswap_frame_pool_create(16, &pool), 0);
	type = uswap_swapon_mem_design(1024, SWAP_FLAG_PREFER | 200, design);
	assert_true(type >= 0);
	f = uswap_folio_alloc(pool, 0);
	assert_non_null(f);
	folio_mark_uptodate(f);
	folio_lock(f);
	assert_int_equal(folio_alloc_swap(f), 0);
	lookup_entry = folio_swap_entry(f);
	assert_int_equal(swp_type(lookup_entry), (unsigned int)type);

	assert_int_equal(sem_init(&parked, 0, 0), 0);
	assert_int_equal(sem_init(&resume, 0, 0), 0);
	atomic_store(&hook_armed, true);
	atomic_store(&lookup_done, false);
	assert_int_equal(pthread_create(&tid, NULL, lookup_fn, NULL), 0);
	while (sem_wait(&parked))
		;
	assert_false(atomic_load(&lookup_done));

	/* The lookup holds a folio struct of @pool. Free it, and the pool. */
	assert_int_equal(folio_free_swap(f), 1);
	folio_unlock(f);
	folio_put(f);
	assert_int_equal(uswap_frame_pool_free_frames(pool), uswap_frame_pool_nr_frames(pool));
	old_id = pool->id;
	uswap_frame_pool_destroy(pool);
	assert_int_equal(uswap_frame_pool_create(16, &next), 0);
	new_id = next->id;

	sem_post(&resume);
	assert_int_equal(pthread_join(tid, &found), 0);
	assert_null(found);
	assert_false(atomic_load(&hook_armed));
	assert_int_not_equal(new_id, old_id);
	expect_slot(lookup_entry, 0, 0);

	uswap_frame_pool_destroy(next);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	sem_destroy(&parked);
	sem_destroy(&resume);
}

static void test_lookup_vs_pool_destroy_table(void **state)
{
	(void)state;
	lookup_vs_pool_destroy("table");
}

static void test_lookup_vs_pool_destroy_legacy(void **state)
{
	(void)state;
	lookup_vs_pool_destroy("legacy");
}

/*
 * The ids of destroyed pools wait for a grace period before reuse: when
 * every other id is taken, create waits for them rather than fail.
 */
static void test_create_waits_for_retiring_ids(void **state)
{
	static struct uswap_frame_pool *pools[POOL_MAX];
	unsigned int n = 0, i, id;
	int err;

	(void)state;
	while ((err = uswap_frame_pool_create(1, &pools[n])) == 0)
		n++;
	assert_int_equal(err, -ENOSPC);
	assert_true(n > 0);
	id = pools[n / 2]->id;
	uswap_frame_pool_destroy(pools[n / 2]);
	assert_int_equal(uswap_frame_pool_create(1, &pools[n / 2]), 0);
	assert_int_equal(pools[n / 2]->id, id);
	for (i = 0; i < n; i++)
		uswap_frame_pool_destroy(pools[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup_vs_pool_destroy_table),
		cmocka_unit_test(test_lookup_vs_pool_destroy_legacy),
		cmocka_unit_test(test_create_waits_for_retiring_ids),
	};

	swaptest_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
