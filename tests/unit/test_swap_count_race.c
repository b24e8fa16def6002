/* SPDX-License-Identifier: MIT */
/*
 * The window of swap_extend_table_alloc(): a dup that needs the cluster's
 * extend table allocates it with the cluster unlocked, and other threads
 * may put or dup meanwhile. The test includes swap_count.c (to reach its
 * static functions) with a hook that runs the "other thread" inside that window, in the
 * same thread: the interleaving is forced, not hoped for.
 *
 * Slots are brought to COUNT_MAX - 1 by writing the count field under the
 * cluster lock, so that the test is fast at any USWAP_TB_COUNT_BITS.
 */
#include <errno.h>

#include "swaptest.h"
#include "swap/swap_internal.h"

static void (*window_fn)(void);
static unsigned int window_runs;

/* One shot: a dup inside the window that needs a table of its own
 * allocates it without running the hook again. */
static void run_window(void)
{
	void (*fn)(void) = window_fn;

	window_fn = NULL;
	if (fn) {
		window_runs++;
		fn();
	}
}

#define swap_extend_alloc_unlocked_hook(si, ci, off) run_window()
#include "swap/swap_count.c"

#define SHADOW 0x1235ULL

static swp_entry_t slot_a, slot_b;

static uint64_t nr_ext(struct swaptest *t)
{
	return swaptest_stat(t).nr_extend_tables;
}

/* Write count @c (< COUNT_MAX) into the count field of a used slot. */
static void set_count(swp_entry_t e, unsigned int c)
{
	struct swap_info_struct *si = get_swap_device(e);
	struct swap_cluster_info *ci;
	unsigned int off = swp_offset(e) % SWAPFILE_CLUSTER;
	uint64_t tb;

	assert_non_null(si);
	assert_true(c >= 1 && c < SWP_TB_COUNT_MAX);
	ci = swap_cluster_lock(si, swp_offset(e));
	tb = __swap_table_get(ci, off);
	assert_true(swp_tb_is_shadow(tb) || swp_tb_is_folio(tb));
	assert_int_equal(__swp_tb_get_count(tb), 1);
	__swap_table_set(ci, off, __swp_tb_mk_count(tb, c));
	swap_cluster_unlock(ci);
	put_swap_device(si);
}

/* The full walk, whatever USWAP_DEBUG: aborts on an unneeded table. */
static void check_cluster_of(swp_entry_t e)
{
	struct swap_info_struct *si = get_swap_device(e);
	struct swap_cluster_info *ci;

	assert_non_null(si);
	ci = swap_cluster_lock(si, swp_offset(e));
	uswap_check_cluster(si, ci);
	swap_cluster_unlock(ci);
	put_swap_device(si);
}

/* A swapped-out slot (shadow) with count 1, and its folio gone. */
static swp_entry_t shadow_slot(struct swaptest *t)
{
	struct folio *f = swaptest_folio(t, 0, true);
	swp_entry_t e;

	assert_int_equal(folio_alloc_swap(f), 0);
	e = folio_swap_entry(f);
	assert_int_equal(folio_dup_swap(f, -1), 0);
	assert_int_equal(swap_cache_del_folio(f, SHADOW), 0);
	swaptest_folio_done(f);
	return e;
}

static void put_all(swp_entry_t e)
{
	long c = swp_swapcount(e);

	while (c-- > 0)
		assert_int_equal(swap_put_entries_direct(e, 1), 0);
	expect_free(e);
}

static void put_a(void)
{
	assert_int_equal(swap_put_entries_direct(slot_a, 1), 0);
}

/*
 * CPU A dups slot a at COUNT_MAX - 1 and drops the lock to allocate; CPU B
 * puts slot a, which no longer needs the table when A relocks. A must not
 * attach it: the count stays in the table and no extend table is left.
 */
static void test_put_in_window_direct(void **state)
{
	struct swaptest t;

	(void)state;
	swaptest_init(&t, 1024, 64);
	slot_a = shadow_slot(&t);
	set_count(slot_a, SWP_TB_COUNT_MAX - 1);
	window_fn = put_a;
	window_runs = 0;
	assert_int_equal(swap_dup_entry_direct(slot_a), 0);
	assert_int_equal(window_runs, 1);
	expect_shadow(slot_a, SHADOW, SWP_TB_COUNT_MAX - 1);
	assert_int_equal(nr_ext(&t), 0);
	check_cluster_of(slot_a);

	/* Undisturbed, the next dup does attach one. */
	assert_int_equal(swap_dup_entry_direct(slot_a), 0);
	expect_shadow(slot_a, SHADOW, SWP_TB_COUNT_MAX);
	assert_int_equal(nr_ext(&t), 1);
	put_all(slot_a);
	assert_int_equal(nr_ext(&t), 0);
	swaptest_fini(&t);
}

/* The same through the folio: A holds the folio lock, B a page table. */
static void test_put_in_window_folio(void **state)
{
	struct swaptest t;
	struct folio *f;
	unsigned int c;

	(void)state;
	swaptest_init(&t, 1024, 64);
	f = swaptest_folio(&t, 0, true);
	assert_int_equal(folio_alloc_swap(f), 0);
	slot_a = folio_swap_entry(f);
	assert_int_equal(folio_dup_swap(f, -1), 0);
	set_count(slot_a, SWP_TB_COUNT_MAX - 1);
	window_fn = put_a;
	window_runs = 0;
	assert_int_equal(folio_dup_swap(f, -1), 0);
	assert_int_equal(window_runs, 1);
	expect_pfn(slot_a, f, SWP_TB_COUNT_MAX - 1);
	assert_int_equal(nr_ext(&t), 0);
	check_cluster_of(slot_a);

	for (c = SWP_TB_COUNT_MAX - 1; c > 0; c--)
		assert_int_equal(folio_put_swap(f, -1), 0);
	assert_int_equal(folio_free_swap(f), 1);
	swaptest_folio_done(f);
	assert_int_equal(nr_ext(&t), 0);
	swaptest_fini(&t);
}

static void dup_b(void)
{
	assert_int_equal(swap_dup_entry_direct(slot_b), 0);
}

/*
 * B overflows another slot of the cluster in the window and attaches its
 * own table: A drops its allocation and uses B's.
 */
static void test_other_slot_attaches_in_window(void **state)
{
	struct swaptest t;

	(void)state;
	swaptest_init(&t, 1024, 64);
	slot_a = shadow_slot(&t);
	slot_b = shadow_slot(&t);
	assert_int_equal(swp_offset(slot_a) / SWAPFILE_CLUSTER,
			 swp_offset(slot_b) / SWAPFILE_CLUSTER);
	set_count(slot_a, SWP_TB_COUNT_MAX - 1);
	set_count(slot_b, SWP_TB_COUNT_MAX - 1);
	window_fn = dup_b;
	window_runs = 0;
	assert_int_equal(swap_dup_entry_direct(slot_a), 0);
	assert_int_equal(window_runs, 1);
	expect_shadow(slot_a, SHADOW, SWP_TB_COUNT_MAX);
	expect_shadow(slot_b, SHADOW, SWP_TB_COUNT_MAX);
	assert_int_equal(nr_ext(&t), 1);
	check_cluster_of(slot_a);
	put_all(slot_a);
	assert_int_equal(nr_ext(&t), 1);
	put_all(slot_b);
	assert_int_equal(nr_ext(&t), 0);
	swaptest_fini(&t);
}

static void put_a_dup_a(void)
{
	assert_int_equal(swap_put_entries_direct(slot_a, 1), 0);
	assert_int_equal(swap_dup_entry_direct(slot_a), 0);
}

/* B puts and dups slot a back to COUNT_MAX - 1: A's table is needed again. */
static void test_put_and_dup_in_window(void **state)
{
	struct swaptest t;

	(void)state;
	swaptest_init(&t, 1024, 64);
	slot_a = shadow_slot(&t);
	set_count(slot_a, SWP_TB_COUNT_MAX - 1);
	window_fn = put_a_dup_a;
	window_runs = 0;
	assert_int_equal(swap_dup_entry_direct(slot_a), 0);
	assert_int_equal(window_runs, 1);
	expect_shadow(slot_a, SHADOW, SWP_TB_COUNT_MAX);
	assert_int_equal(nr_ext(&t), 1);
	check_cluster_of(slot_a);
	put_all(slot_a);
	assert_int_equal(nr_ext(&t), 0);
	swaptest_fini(&t);
}

/*
 * A two-page folio whose second slot needs the table: B's put of that slot
 * in the window leaves both slots counted in the table, with no table.
 */
static void put_b(void)
{
	assert_int_equal(swap_put_entries_direct(slot_b, 1), 0);
}

static void test_put_in_window_large_folio(void **state)
{
	struct swaptest t;
	struct folio *f;
	unsigned int c;

	(void)state;
	swaptest_init(&t, 1024, 64);
	f = swaptest_folio(&t, 1, true);
	assert_int_equal(folio_alloc_swap(f), 0);
	slot_a = folio_swap_entry(f);
	slot_b = swp_entry(swp_type(slot_a), swp_offset(slot_a) + 1);
	assert_int_equal(folio_dup_swap(f, -1), 0);
	set_count(slot_b, SWP_TB_COUNT_MAX - 1);
	window_fn = put_b;
	window_runs = 0;
	assert_int_equal(folio_dup_swap(f, -1), 0);
	assert_int_equal(window_runs, 1);
	expect_pfn(slot_a, f, 2);
	expect_pfn(slot_b, f, SWP_TB_COUNT_MAX - 1);
	assert_int_equal(nr_ext(&t), 0);
	check_cluster_of(slot_a);

	for (c = SWP_TB_COUNT_MAX - 1; c > 2; c--)
		assert_int_equal(folio_put_swap(f, 1), 0);
	assert_int_equal(folio_put_swap(f, -1), 0);
	assert_int_equal(folio_put_swap(f, -1), 0);
	assert_int_equal(folio_free_swap(f), 1);
	swaptest_folio_done(f);
	swaptest_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_in_window_direct),
		cmocka_unit_test(test_put_in_window_folio),
		cmocka_unit_test(test_other_slot_attaches_in_window),
		cmocka_unit_test(test_put_and_dup_in_window),
		cmocka_unit_test(test_put_in_window_large_folio),
	};

	swaptest_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
