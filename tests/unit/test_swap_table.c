/* SPDX-License-Identifier: MIT */
/*
 * The swap table entry encoding: every type makes, tests and takes apart
 * as itself and as no other, at whatever count width the build uses.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "swap/swap_table.h"

static int nr_types(uint64_t tb)
{
	return swp_tb_is_null(tb) + swp_tb_is_shadow(tb) + swp_tb_is_folio(tb) +
	       swp_tb_is_ptr(tb) + swp_tb_is_bad(tb);
}

static void test_null(void **state)
{
	(void)state;
	assert_true(swp_tb_is_null(SWP_TB_NULL));
	assert_int_equal(nr_types(SWP_TB_NULL), 1);
	assert_int_equal(swp_tb_get_count(SWP_TB_NULL), 0);
	assert_string_equal(swp_tb_type_name(0), "free");
}

static void test_bad(void **state)
{
	(void)state;
	assert_true(swp_tb_is_bad(SWP_TB_BAD));
	assert_int_equal(nr_types(SWP_TB_BAD), 1);
	assert_int_equal(SWP_TB_BAD & 0xf, 0x8);
	assert_int_equal(swp_tb_get_count(SWP_TB_BAD), -EINVAL);
	assert_false(swp_tb_is_countable(SWP_TB_BAD));
}

static void test_pfn_roundtrip(void **state)
{
	uint64_t pfns[] = { 0, 1, 12345, (1ULL << SWAP_CACHE_PFN_BITS) - 1 };
	unsigned int counts[] = { 0, 1, SWP_TB_COUNT_MAX - 1, SWP_TB_COUNT_MAX };
	size_t i, j;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(pfns); i++) {
		for (j = 0; j < ARRAY_SIZE(counts); j++) {
			uint64_t tb = pfn_to_swp_tb(pfns[i], swp_tb_mk_flags(counts[j], false));

			assert_int_equal(tb & 3, 2);
			assert_true(swp_tb_is_folio(tb));
			assert_int_equal(nr_types(tb), 1);
			assert_true(swp_tb_is_countable(tb));
			assert_int_equal(swp_tb_to_pfn(tb), pfns[i]);
			assert_int_equal(swp_tb_get_count(tb), counts[j]);
		}
	}
}

static void test_shadow_roundtrip(void **state)
{
	uint64_t max_shadow = (~0ULL >> SWP_TB_FLAGS_BITS) | 1;
	uint64_t shadows[] = { 0, 1, 0x12345 | 1, max_shadow };
	unsigned int counts[] = { 1, 2, SWP_TB_COUNT_MAX - 1, SWP_TB_COUNT_MAX };
	size_t i, j;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(shadows); i++) {
		for (j = 0; j < ARRAY_SIZE(counts); j++) {
			uint64_t tb = shadow_to_swp_tb(shadows[i], swp_tb_mk_flags(counts[j], false));

			assert_true(swp_tb_is_shadow(tb));
			assert_int_equal(nr_types(tb), 1);
			assert_int_equal(swp_tb_to_shadow(tb), shadows[i] | 1);
			assert_int_equal(swp_tb_get_count(tb), counts[j]);
		}
	}
}

static void test_ptr(void **state)
{
	static uint64_t word;
	uint64_t tb = ptr_to_swp_tb(&word);

	(void)state;
	assert_true(swp_tb_is_ptr(tb));
	assert_int_equal(nr_types(tb), 1);
	assert_ptr_equal(swp_tb_to_ptr(tb), &word);
	assert_int_equal(swp_tb_get_count(tb), -EINVAL);
}

/* Changing the count keeps the type and payload: cache add/delete rely on it. */
static void test_count_replace(void **state)
{
	uint64_t tb = pfn_to_swp_tb(777, swp_tb_mk_flags(1, false));
	unsigned int c;

	(void)state;
	for (c = 0; c <= SWP_TB_COUNT_MAX; c++) {
		uint64_t n = __swp_tb_mk_count(tb, c);

		assert_true(swp_tb_is_folio(n));
		assert_int_equal(swp_tb_to_pfn(n), 777);
		assert_int_equal(__swp_tb_get_count(n), c);
	}
	tb = shadow_to_swp_tb(0, swp_tb_mk_flags(3 > SWP_TB_COUNT_MAX ? 1 : 3, false));
	tb = __swp_tb_mk_count(tb, SWP_TB_COUNT_MAX);
	assert_true(swp_tb_is_shadow(tb));
	assert_int_equal(__swp_tb_get_count(tb), SWP_TB_COUNT_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_null),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_pfn_roundtrip),
		cmocka_unit_test(test_shadow_roundtrip),
		cmocka_unit_test(test_ptr),
		cmocka_unit_test(test_count_replace),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
