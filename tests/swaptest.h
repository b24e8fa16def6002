/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the swap-table tests (cmocka): a per-case device and frame
 * pool, and assertions on a slot's raw table entry and exact count.
 *
 * Each test case builds its own world with swaptest_init() and tears it
 * down with swaptest_fini(), which asserts that swapoff succeeds (swapoff
 * itself checks that only bad slots are left) and that every frame of the
 * pool came back.
 */
#ifndef USWAP_SWAPTEST_H
#define USWAP_SWAPTEST_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

#include <uswap/uswap.h>
#include "swap/swap_table.h"

struct swaptest {
	struct uswap_frame_pool *pool;
	unsigned int type;
	uint64_t max;
};

/* The library reports misuse on stderr; the tests misuse it on purpose. */
static inline void swaptest_quiet(void)
{
	if (!getenv("USWAP_TEST_VERBOSE"))
		setenv("USWAP_QUIET", "1", 0);
}

/*
 * A temporary directory for a test binary's device files: pass
 * swaptest_dir_setup/teardown to cmocka_run_group_tests(); files in it
 * are named with swaptest_path().
 */
static char swaptest_dir[] __attribute__((unused)) = "/tmp/uswap-test-XXXXXX";

static inline int swaptest_dir_setup(void **state)
{
	(void)state;
	return mkdtemp(swaptest_dir) ? 0 : -1;
}

static inline int swaptest_dir_teardown(void **state)
{
	(void)state;
	return rmdir(swaptest_dir);
}

/* @buf (256 bytes) gets the path of file @name in the directory. */
static inline void swaptest_path(char *buf, const char *name)
{
	snprintf(buf, 256, "%.200s/%.40s", swaptest_dir, name);
}

static inline void swaptest_init(struct swaptest *t, uint64_t nr_pages, size_t nr_frames)
{
	/*
	 * Each case's device outranks those of earlier cases, which a failed
	 * case may have left swapped on: allocations go to this case's device.
	 */
	static int prio = 100;
	int type;

	assert_int_equal(uswap_frame_pool_create(nr_frames, &t->pool), 0);
	type = uswap_swapon_mem(nr_pages, SWAP_FLAG_PREFER | prio++);
	assert_true(type >= 0);
	t->type = (unsigned int)type;
	t->max = nr_pages;
}

static inline void swaptest_fini(struct swaptest *t)
{
	assert_int_equal(uswap_swapoff_type(t->type), 0);
	assert_int_equal(uswap_frame_pool_free_frames(t->pool), uswap_frame_pool_nr_frames(t->pool));
	uswap_frame_pool_destroy(t->pool);
}

static inline struct folio *swaptest_folio(struct swaptest *t, unsigned int order, bool lock)
{
	struct folio *f = uswap_folio_alloc(t->pool, order);

	assert_non_null(f);
	folio_mark_uptodate(f);	/* folio_alloc_swap wants data worth keeping */
	if (lock)
		folio_lock(f);
	return f;
}

/* Unlock and drop the test's reference (the folio must be out of the cache). */
static inline void swaptest_folio_done(struct folio *f)
{
	assert_false(folio_test_swapcache(f));
	folio_unlock(f);
	folio_put(f);
}

static inline swp_entry_t swaptest_entry(struct swaptest *t, uint64_t offset)
{
	return swp_entry(t->type, offset);
}

static inline unsigned int tb_count_field(long count)
{
	return count >= (long)SWP_TB_COUNT_MAX ? SWP_TB_COUNT_MAX : (unsigned int)count;
}

#define expect_slot(e, want_tb, want_count)                                  \
	do {                                                                 \
		uint64_t tb_ = ~0ULL;                                        \
		long c_ = -2;                                                \
		assert_int_equal(uswap_swap_tb_peek((e), &tb_, &c_), 0);     \
		assert_int_equal(tb_, (uint64_t)(want_tb));                  \
		assert_int_equal(c_, (long)(want_count));                    \
	} while (0)

/* Cached by @f with exact count @c. */
#define expect_pfn(e, f, c) \
	expect_slot((e), pfn_to_swp_tb(folio_pfn(f), swp_tb_mk_flags(tb_count_field(c), false)), (c))
/* Swapped out with shadow @sh and exact count @c. */
#define expect_shadow(e, sh, c) \
	expect_slot((e), shadow_to_swp_tb((sh), swp_tb_mk_flags(tb_count_field(c), false)), (c))
#define expect_free(e) expect_slot((e), SWP_TB_NULL, 0)
#define expect_bad(e) expect_slot((e), SWP_TB_BAD, -1)

static inline struct uswap_swap_stat swaptest_stat(struct swaptest *t)
{
	struct uswap_swap_stat st;

	assert_int_equal(uswap_swap_stat(t->type, &st), 0);
	return st;
}

#endif
