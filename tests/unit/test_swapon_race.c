/* SPDX-License-Identifier: MIT */
/*
 * swapon and swapoff against the rest: the free-swap total after a
 * swapoff that succeeds and one that fails.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "swap/swap_internal.h"

static struct folio *new_folio(struct uswap_frame_pool *pool)
{
	struct folio *f = uswap_folio_alloc(pool, 0);

	assert_non_null(f);
	folio_mark_uptodate(f);
	folio_lock(f);
	return f;
}

#define USED 600

/* Fill @n slots of the only device with cache-only folios, unlocked so
 * that swapoff may reclaim them. */
static void alloc_cached(struct uswap_frame_pool *pool, struct folio **f, int n, int type)
{
	int i;

	for (i = 0; i < n; i++) {
		f[i] = new_folio(pool);
		assert_int_equal(folio_alloc_swap(f[i]), 0);
		assert_int_equal(swp_type(folio_swap_entry(f[i])), (unsigned int)type);
		folio_unlock(f[i]);
	}
}

static void put_all(struct folio **f, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		folio_lock(f[i]);
		if (folio_test_swapcache(f[i]))
			assert_int_equal(folio_free_swap(f[i]), 1);
		folio_unlock(f[i]);
		folio_put(f[i]);
	}
}

/*
 * Device A, 600 of 1023 slots used, swapped off (its cache-only slots
 * reclaimed by swapoff); then device B, 600 of 1023 used: more than half
 * of all swap is in use.
 */
static void test_swap_full_after_swapoff(void **state)
{
	static struct folio *f[USED];
	struct uswap_frame_pool *pool;
	int a, b;

	(void)state;
	assert_int_equal(uswap_frame_pool_create(2 * USED, &pool), 0);
	a = uswap_swapon_mem(1024, 0);
	assert_true(a >= 0);
	alloc_cached(pool, f, USED, a);
	assert_true(uswap_vm_swap_full());
	assert_int_equal(uswap_swapoff_type((unsigned int)a), 0);
	put_all(f, USED);
	assert_false(uswap_vm_swap_full());

	b = uswap_swapon_mem(1024, 0);
	assert_true(b >= 0);
	alloc_cached(pool, f, 300, b);
	assert_false(uswap_vm_swap_full());	/* 300 of 1023 */
	alloc_cached(pool, f + 300, USED - 300, b);
	assert_true(uswap_vm_swap_full());	/* 600 of 1023 */
	put_all(f, USED);
	assert_false(uswap_vm_swap_full());
	assert_int_equal(uswap_swapoff_type((unsigned int)b), 0);
	uswap_frame_pool_destroy(pool);
}

/*
 * A swapoff that fails with -EBUSY (600 slots held by entries that no
 * owner gives back) leaves the device as it was: still more than half
 * used. And nothing drifts: the next device is accounted right.
 */
static void test_swap_full_after_busy_swapoff(void **state)
{
	static swp_entry_t e[USED];
	static struct folio *f[USED];
	struct uswap_frame_pool *pool;
	int a, b, i;

	(void)state;
	assert_int_equal(uswap_frame_pool_create(2 * USED, &pool), 0);
	a = uswap_swapon_mem(1024, 0);
	assert_true(a >= 0);
	for (i = 0; i < USED; i++) {
		struct folio *g = new_folio(pool);

		assert_int_equal(folio_alloc_swap(g), 0);
		assert_int_equal(folio_dup_swap(g, -1), 0);
		e[i] = folio_swap_entry(g);
		assert_int_equal(swap_cache_del_folio(g, 0), 0);
		folio_unlock(g);
		folio_put(g);
	}
	assert_true(uswap_vm_swap_full());
	assert_int_equal(uswap_swapoff_type((unsigned int)a), -EBUSY);
	assert_true(uswap_vm_swap_full());
	assert_int_equal(uswap_swapoff_type((unsigned int)a), -EBUSY);
	assert_true(uswap_vm_swap_full());
	for (i = 0; i < USED; i++)
		assert_int_equal(swap_put_entries_direct(e[i], 1), 0);
	assert_false(uswap_vm_swap_full());
	assert_int_equal(uswap_swapoff_type((unsigned int)a), 0);

	b = uswap_swapon_mem(1024, 0);
	assert_true(b >= 0);
	alloc_cached(pool, f, USED, b);
	assert_true(uswap_vm_swap_full());
	put_all(f, USED);
	assert_int_equal(uswap_swapoff_type((unsigned int)b), 0);
	uswap_frame_pool_destroy(pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_swap_full_after_swapoff),
		cmocka_unit_test(test_swap_full_after_busy_swapoff),
	};

	setenv("USWAP_QUIET", "1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
