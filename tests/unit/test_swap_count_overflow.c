/* SPDX-License-Identifier: MIT */
/*
 * Counts crossing the in-table maximum: the entry's count field saturates
 * at SWP_TB_COUNT_MAX and the cluster's extend table holds the real count,
 * allocated when the first slot of the cluster overflows and freed as soon
 * as none does. Every threshold derives from SWP_TB_COUNT_MAX, so the test
 * holds at any USWAP_TB_COUNT_BITS.
 */
#include <errno.h>
#include <limits.h>

#include "swaptest.h"
#include "swap/swap_internal.h"

#define SHADOW 0x1235ULL
#define OVER (SWP_TB_COUNT_MAX + 5UL)

static uint64_t nr_ext(struct swaptest *t)
{
	return swaptest_stat(t).nr_extend_tables;
}

/* Exact count, count field, and the extend table of a lone overflowing slot. */
static void expect_count(struct swaptest *t, swp_entry_t e, unsigned long c, uint64_t ext)
{
	uint64_t tb;
	long cnt;

	assert_int_equal(swp_swapcount(e), c);
	assert_int_equal(uswap_swap_tb_peek(e, &tb, &cnt), 0);
	assert_int_equal(cnt, c);
	assert_int_equal(swp_tb_get_count(tb), tb_count_field((long)c));
	assert_int_equal(swap_entry_swapped(e), c > 0);
	assert_int_equal(nr_ext(t), ext);
}

static uint64_t ext_for(unsigned long c)
{
	return c >= SWP_TB_COUNT_MAX;
}

/* Swapped out (shadow), driven up and down by the direct calls. */
static void test_direct_up_and_down(void **state)
{
	struct swaptest t;
	struct folio *f;
	swp_entry_t e;
	unsigned long c;

	(void)state;
	swaptest_init(&t, 1024, 64);
	f = swaptest_folio(&t, 0, true);
	assert_int_equal(folio_alloc_swap(f), 0);
	e = folio_swap_entry(f);
	assert_int_equal(folio_dup_swap(f, -1), 0);
	assert_int_equal(swap_cache_del_folio(f, SHADOW), 0);
	swaptest_folio_done(f);
	expect_count(&t, e, 1, 0);
	for (c = 2; c <= OVER; c++) {
		assert_int_equal(swap_dup_entry_direct(e), 0);
		expect_count(&t, e, c, ext_for(c));
		expect_shadow(e, SHADOW, c);
	}
	for (c = OVER; c-- > 1;) {
		assert_int_equal(swap_put_entries_direct(e, 1), 0);
		expect_count(&t, e, c, ext_for(c));
		expect_shadow(e, SHADOW, c);
	}
	assert_int_equal(swap_put_entries_direct(e, 1), 0);
	expect_free(e);
	assert_int_equal(nr_ext(&t), 0);
	assert_int_equal(swaptest_stat(&t).inuse_pages, 0);
	swaptest_fini(&t);
}

/* Cached, driven by the folio calls down to the cache-only 0. */
static void test_folio_up_and_down(void **state)
{
	struct swaptest t;
	struct folio *f;
	swp_entry_t e;
	unsigned long c;

	(void)state;
	swaptest_init(&t, 1024, 64);
	f = swaptest_folio(&t, 0, true);
	assert_int_equal(folio_alloc_swap(f), 0);
	e = folio_swap_entry(f);
	expect_count(&t, e, 0, 0);
	for (c = 1; c <= OVER; c++) {
		assert_int_equal(folio_dup_swap(f, -1), 0);
		expect_count(&t, e, c, ext_for(c));
		expect_pfn(e, f, c);
	}
	/* Out of the cache and back in with an overflowed count. */
	assert_int_equal(swap_cache_del_folio(f, SHADOW), 0);
	expect_shadow(e, SHADOW, OVER);
	assert_int_equal(nr_ext(&t), 1);
	assert_int_equal(swap_cache_add_folio(f, e, NULL), 0);
	expect_pfn(e, f, OVER);
	for (c = OVER; c-- > 0;) {
		assert_int_equal(folio_put_swap(f, 0), 0);
		expect_count(&t, e, c, ext_for(c));
		expect_pfn(e, f, c);
	}
	assert_int_equal(folio_put_swap(f, -1), -ENOENT);
	expect_pfn(e, f, 0);
	assert_int_equal(folio_free_swap(f), 1);
	expect_free(e);
	swaptest_folio_done(f);
	assert_int_equal(nr_ext(&t), 0);
	swaptest_fini(&t);
}

/* A whole large folio overflowing: all its slots share one extend table. */
static void test_large_folio_overflow(void **state)
{
	struct swaptest t;
	struct folio *f;
	swp_entry_t e;
	unsigned long c, i;

	(void)state;
	swaptest_init(&t, 1024, 64);
	f = swaptest_folio(&t, 2, true);
	assert_int_equal(folio_alloc_swap(f), 0);
	e = folio_swap_entry(f);
	for (c = 1; c <= OVER; c++) {
		assert_int_equal(folio_dup_swap(f, -1), 0);
		assert_int_equal(nr_ext(&t), ext_for(c));
	}
	assert_int_equal(swap_cache_del_folio(f, 0), 0);
	swaptest_folio_done(f);
	for (c = OVER; c-- > 0;) {
		assert_int_equal(swap_put_entries_direct(e, 4), 0);
		for (i = 0; i < 4; i++) {
			if (c)
				expect_shadow(swaptest_entry(&t, swp_offset(e) + i), 0, c);
			else
				expect_free(swaptest_entry(&t, swp_offset(e) + i));
		}
		assert_int_equal(nr_ext(&t), ext_for(c));
	}
	assert_int_equal(swaptest_stat(&t).inuse_pages, 0);
	swaptest_fini(&t);
}

/*
 * Two overflowing slots of one cluster share one extend table; it goes
 * only when both are back under. Slots in two clusters need two.
 */
static void test_two_slots_share(void **state)
{
	struct swaptest t;
	struct folio *f, *g;
	swp_entry_t a, b, e;
	unsigned long c;

	(void)state;
	swaptest_init(&t, 2048, 2048);
	f = swaptest_folio(&t, 1, true);	/* pages 0 and 1: one cluster */
	assert_int_equal(folio_alloc_swap(f), 0);
	a = folio_swap_entry(f);
	b = swaptest_entry(&t, swp_offset(a) + 1);
	for (c = 1; c <= OVER; c++)
		assert_int_equal(folio_dup_swap(f, 0), 0);
	assert_int_equal(nr_ext(&t), 1);
	for (c = 1; c <= OVER; c++) {
		assert_int_equal(folio_dup_swap(f, 1), 0);
		assert_int_equal(nr_ext(&t), 1);
	}
	assert_int_equal(swp_swapcount(a), OVER);
	assert_int_equal(swp_swapcount(b), OVER);
	/* a back under: b still needs the table */
	for (c = OVER; c-- > SWP_TB_COUNT_MAX - 1;)
		assert_int_equal(folio_put_swap(f, 0), 0);
	assert_int_equal(swp_swapcount(a), SWP_TB_COUNT_MAX - 1);
	expect_pfn(a, f, SWP_TB_COUNT_MAX - 1);
	assert_int_equal(nr_ext(&t), 1);
	/* a over again while b is over: still one */
	assert_int_equal(folio_dup_swap(f, 0), 0);
	assert_int_equal(nr_ext(&t), 1);
	assert_int_equal(folio_put_swap(f, 0), 0);
	for (c = OVER; c > SWP_TB_COUNT_MAX; c--) {
		assert_int_equal(folio_put_swap(f, 1), 0);
		assert_int_equal(nr_ext(&t), 1);
	}
	assert_int_equal(folio_put_swap(f, 1), 0);	/* b: COUNT_MAX -> COUNT_MAX-1 */
	assert_int_equal(nr_ext(&t), 0);
	expect_pfn(a, f, SWP_TB_COUNT_MAX - 1);
	expect_pfn(b, f, SWP_TB_COUNT_MAX - 1);

	/* A second cluster: an order-9 folio fills one of its own. */
	g = swaptest_folio(&t, 9, true);
	assert_int_equal(folio_alloc_swap(g), 0);
	e = folio_swap_entry(g);
	assert_int_not_equal(swp_offset(e) / SWAPFILE_CLUSTER, swp_offset(a) / SWAPFILE_CLUSTER);
	assert_int_equal(folio_dup_swap(f, 0), 0);
	assert_int_equal(nr_ext(&t), 1);
	for (c = 1; c <= SWP_TB_COUNT_MAX; c++)
		assert_int_equal(folio_dup_swap(g, 511), 0);
	assert_int_equal(nr_ext(&t), 2);
	assert_int_equal(swaptest_stat(&t).dynamic_bytes,
			 swaptest_stat(&t).nr_tables * sizeof(struct swap_table) +
			 2 * (SWAPFILE_CLUSTER + 1) * sizeof(unsigned int));
	assert_int_equal(folio_put_swap(f, 0), 0);
	assert_int_equal(nr_ext(&t), 1);
	assert_int_equal(folio_put_swap(g, 511), 0);
	assert_int_equal(nr_ext(&t), 0);
	assert_int_equal(swap_cache_del_folio(g, 0), 0);
	expect_shadow(swaptest_entry(&t, swp_offset(e) + 511), 0, SWP_TB_COUNT_MAX - 1);
	swaptest_folio_done(g);
	for (c = 1; c < SWP_TB_COUNT_MAX; c++)
		assert_int_equal(swap_put_entries_direct(swaptest_entry(&t, swp_offset(e) + 511), 1), 0);
	assert_int_equal(swap_cache_del_folio(f, 0), 0);
	swaptest_folio_done(f);
	for (c = 1; c < SWP_TB_COUNT_MAX; c++)
		assert_int_equal(swap_put_entries_direct(a, 2), 0);
	assert_int_equal(swaptest_stat(&t).inuse_pages, 0);
	swaptest_fini(&t);
}

/* Past 100000 references, and back. */
static void test_hundred_thousand(void **state)
{
	unsigned long top = 100003, c;
	struct swaptest t;
	swp_entry_t e;

	(void)state;
	if (top < SWP_TB_COUNT_MAX + 5UL)
		top = SWP_TB_COUNT_MAX + 5UL;
	swaptest_init(&t, 1024, 64);
	e = swap_alloc_hibernation_slot(t.type);
	assert_int_not_equal(e.val, 0);
	for (c = 2; c <= top; c++) {
		assert_int_equal(swap_dup_entry_direct(e), 0);
		if (c % 997 == 0 || c >= top - 2)
			assert_int_equal(swp_swapcount(e), c);
	}
	expect_shadow(e, 0, top);
	assert_int_equal(nr_ext(&t), ext_for(top));
	for (c = top; c > 1; c--)
		assert_int_equal(swap_put_entries_direct(e, 1), 0);
	expect_shadow(e, 0, 1);
	assert_int_equal(nr_ext(&t), 0);
	assert_int_equal(swap_free_hibernation_slot(e), 0);
	expect_free(e);
	swaptest_fini(&t);
}

/*
 * The extend count is an unsigned int capped at INT_MAX: -EOVERFLOW with
 * nothing changed. Reaching it by 2^31 dups is too slow, so the test sets
 * the extend entry under the cluster lock (private structures).
 */
static void test_eoverflow(void **state)
{
	struct swap_info_struct *si;
	struct swap_cluster_info *ci;
	struct swaptest t;
	struct folio *f;
	swp_entry_t e;
	unsigned int off, saved;
	unsigned long c;

	(void)state;
	swaptest_init(&t, 1024, 64);
	f = swaptest_folio(&t, 0, true);
	assert_int_equal(folio_alloc_swap(f), 0);
	e = folio_swap_entry(f);
	for (c = 1; c <= SWP_TB_COUNT_MAX; c++)
		assert_int_equal(folio_dup_swap(f, -1), 0);
	si = get_swap_device(e);
	assert_non_null(si);
	off = swp_offset(e) % SWAPFILE_CLUSTER;
	ci = swap_cluster_lock(si, swp_offset(e));
	assert_non_null(ci->extend_table);
	saved = ci->extend_table[off];
	assert_int_equal(saved, SWP_TB_COUNT_MAX);
	ci->extend_table[off] = INT_MAX - 1;
	swap_cluster_unlock(ci);

	assert_int_equal(swap_dup_entry_direct(e), 0);
	assert_int_equal(swp_swapcount(e), INT_MAX);
	assert_int_equal(swap_dup_entry_direct(e), -EOVERFLOW);
	assert_int_equal(folio_dup_swap(f, -1), -EOVERFLOW);
	assert_int_equal(swp_swapcount(e), INT_MAX);
	expect_pfn(e, f, INT_MAX);

	ci = swap_cluster_lock(si, swp_offset(e));
	ci->extend_table[off] = saved;
	swap_cluster_unlock(ci);
	put_swap_device(si);
	for (c = SWP_TB_COUNT_MAX; c > 0; c--)
		assert_int_equal(folio_put_swap(f, -1), 0);
	assert_int_equal(nr_ext(&t), 0);
	assert_int_equal(folio_free_swap(f), 1);
	swaptest_folio_done(f);
	swaptest_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_direct_up_and_down),
		cmocka_unit_test(test_folio_up_and_down),
		cmocka_unit_test(test_large_folio_overflow),
		cmocka_unit_test(test_two_slots_share),
		cmocka_unit_test(test_hundred_thousand),
		cmocka_unit_test(test_eoverflow),
	};

	swaptest_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
