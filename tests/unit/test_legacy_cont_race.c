/* SPDX-License-Identifier: MIT */
/*
 * The window of the old design's continuation pages: a dup that takes a
 * slot past SWAP_MAP_MAX allocates a continuation page with the cluster
 * unlocked, and other threads may put meanwhile. The test includes
 * legacy_map.c (its static functions are reached by including the .c)
 * with a hook that runs the "other thread"
 * in that window, in the same thread: the interleaving is forced. As the
 * kernel's add_swap_count_continuation(), the adder rechecks the count
 * when it relocks and drops a page the slot no longer needs.
 */
#include <errno.h>

#include "swaptest.h"
#include "swap/swap_internal.h"

static swp_entry_t window_entry;
static long window_puts;

static void run_window(void)
{
	while (window_puts > 0) {
		window_puts--;
		assert_int_equal(swap_put_entries_direct(window_entry, 1), 0);
	}
}

#define legacy_cont_alloc_unlocked_hook(si, offset) run_window()
#include "legacy/legacy_map.c"

static long count_of(swp_entry_t e)
{
	uint64_t tb = 0;
	long c = -2;

	assert_int_equal(uswap_swap_tb_peek(e, &tb, &c), 0);
	return c;
}

static uint64_t cont_pages(unsigned int type)
{
	struct uswap_legacy_stat ls;

	assert_int_equal(uswap_legacy_stat(type, &ls), 0);
	return ls.nr_cont_pages;
}

/* A slot at SWAP_MAP_MAX; the dup past it finds, once relocked, that
 * @puts puts in the window brought the count down. */
static void dup_past_max(unsigned int type, long puts, long want_count, uint64_t want_pages)
{
	swp_entry_t e = swap_alloc_hibernation_slot(type);
	long c;

	assert_true(e.val != 0);
	assert_int_equal(count_of(e), 1);
	for (c = 1; c < SWAP_MAP_MAX; c++)
		assert_int_equal(swap_dup_entry_direct(e), 0);
	assert_int_equal(count_of(e), SWAP_MAP_MAX);
	window_entry = e;
	window_puts = puts;
	assert_int_equal(swap_dup_entry_direct(e), 0);
	assert_int_equal(window_puts, 0);
	assert_int_equal(count_of(e), want_count);
	assert_int_equal(cont_pages(type), want_pages);
	for (c = want_count; c > 0; c--)
		assert_int_equal(swap_put_entries_direct(e, 1), 0);
	assert_int_equal(count_of(e), 0);	/* free again */
}

/* A put in the window: the dup then fits the map byte, no page is kept. */
static void test_put_in_window(void **state)
{
	int type;

	(void)state;
	swaptest_quiet();
	type = uswap_swapon_mem_design(4 * SWAPFILE_CLUSTER, SWAP_FLAG_PREFER | 200, "legacy");
	assert_true(type >= 0);
	dup_past_max((unsigned int)type, 1, SWAP_MAP_MAX, 0);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
}

/* Nothing in the window: the page is needed and kept. */
static void test_no_race(void **state)
{
	int type;

	(void)state;
	swaptest_quiet();
	type = uswap_swapon_mem_design(4 * SWAPFILE_CLUSTER, SWAP_FLAG_PREFER | 201, "legacy");
	assert_true(type >= 0);
	dup_past_max((unsigned int)type, 0, SWAP_MAP_MAX + 1, 1);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_in_window),
		cmocka_unit_test(test_no_race),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
