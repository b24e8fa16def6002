/* SPDX-License-Identifier: MIT */
/*
 * The frag list of an order is scanned one cluster per allocation
 * attempt, as the kernel does: the head is tried and goes to the tail, so
 * a large folio may fail where a later attempt (or a split) succeeds, and
 * the list keeps rotating.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdlib.h>

#include "swap/swap_internal.h"

struct attempt {
	struct folio *folio;
	int ret;
};

/* Each thread has its own current cluster per order: a fresh thread has
 * none, so its allocation starts from the device's lists. */
static void *attempt_fn(void *arg)
{
	struct attempt *a = arg;

	a->ret = folio_alloc_swap(a->folio);
	return NULL;
}

static int alloc_fresh_thread(struct folio *f)
{
	struct attempt a = { f, 0 };
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, attempt_fn, &a), 0);
	pthread_join(t, NULL);
	return a.ret;
}

static struct folio *new_folio(struct uswap_frame_pool *pool, unsigned int order)
{
	struct folio *f = uswap_folio_alloc(pool, order);

	assert_non_null(f);
	folio_mark_uptodate(f);
	folio_lock(f);
	return f;
}

#define PAIRS (2 * SWAPFILE_CLUSTER / 2)

static void test_frag_one_cluster_per_attempt(void **state)
{
	static swp_entry_t odd[PAIRS];
	struct uswap_frame_pool *pool;
	struct folio *c3first, *g[3];
	uint64_t c3;
	int type, i, ok = -1;

	(void)state;
	assert_int_equal(uswap_frame_pool_create(4096, &pool), 0);
	/* Clusters 0 (slot 0 is the header: order 0 only), 1, 2, 3. */
	type = uswap_swapon_mem(2048, 0);
	assert_true(type >= 0);

	/* Clusters 1 and 2 full of order-1 folios, then every even slot
	 * freed: 256 free slots each, no free aligned pair. */
	for (i = 0; i < PAIRS; i++) {
		struct folio *f = new_folio(pool, 1);
		swp_entry_t e;

		assert_int_equal(folio_alloc_swap(f), 0);
		e = folio_swap_entry(f);
		assert_int_equal(swp_offset(e) / SWAPFILE_CLUSTER, 1 + i / (SWAPFILE_CLUSTER / 2));
		assert_int_equal(folio_dup_swap(f, -1), 0);
		assert_int_equal(swap_cache_del_folio(f, 0), 0);
		folio_unlock(f);
		folio_put(f);
		assert_int_equal(swap_put_entries_direct(e, 1), 0);
		odd[i] = swp_entry(swp_type(e), swp_offset(e) + 1);
	}
	/* An attempt finds nothing in them (they move from nonfull to
	 * frag) and starts cluster 3, which joins frag behind them. */
	c3first = new_folio(pool, 1);
	assert_int_equal(alloc_fresh_thread(c3first), 0);
	c3 = swp_offset(folio_swap_entry(c3first)) / SWAPFILE_CLUSTER;
	assert_int_equal(c3, 3);

	/* frag[1] = 1, 2, 3; no free cluster, nonfull[1] empty. One frag
	 * cluster per attempt: 1 fails, 2 fails, 3 serves. */
	for (i = 0; i < 3; i++) {
		g[i] = new_folio(pool, 1);
		if (alloc_fresh_thread(g[i]) == 0) {
			ok = i;
			break;
		}
	}
	assert_int_equal(ok, 2);
	assert_int_equal(swp_offset(folio_swap_entry(g[2])) / SWAPFILE_CLUSTER, c3);

	for (i = 0; i <= ok; i++) {
		if (folio_test_swapcache(g[i]))
			assert_int_equal(folio_free_swap(g[i]), 1);
		folio_unlock(g[i]);
		folio_put(g[i]);
	}
	assert_int_equal(folio_free_swap(c3first), 1);
	folio_unlock(c3first);
	folio_put(c3first);
	for (i = 0; i < PAIRS; i++)
		assert_int_equal(swap_put_entries_direct(odd[i], 1), 0);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	uswap_frame_pool_destroy(pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frag_one_cluster_per_attempt),
	};

	setenv("USWAP_QUIET", "1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
