/* SPDX-License-Identifier: MIT */
/*
 * Workingset shadows (mm/workingset.c: pack_shadow, workingset_test_recent): packing at
 * the build's swap count width, use as a swap table shadow entry, the
 * bucket order, and the refault distance test.
 *
 * The expected values are computed here from the formulas, not from the
 * implementation's macros: EVICTION_SHIFT = 1 + 1 + NODES_SHIFT + 16,
 * anon eviction bits = 64 - EVICTION_SHIFT - SWP_TB_FLAGS_BITS (the count
 * and, where it fits, the zero flag),
 * bucket_order = max(0, fls(total_pages - 1) - eviction bits),
 * distance = (now - (eviction << bucket_order)) & mask (in buckets here,
 * see test_refault_bucketed).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>

#include "mm/workingset.h"
#include "swap/swap_table.h"
#include "testutil.h"

#define SHIFT_ANON	(1 + 1 + WS_NODES_SHIFT + 16 + SWP_TB_FLAGS_BITS)
#define TS_BITS		(64 - SHIFT_ANON)
#define TS_MASK		(~0ULL >> SHIFT_ANON)

static uint64_t seed;

static unsigned int ref_fls(uint64_t x)
{
	unsigned int n = 0;

	while (x) {
		n++;
		x >>= 1;
	}
	return n;
}

static unsigned int ref_bucket_order(uint64_t total)
{
	unsigned int f = ref_fls(total ? total - 1 : 0);

	return f > TS_BITS ? f - TS_BITS : 0;
}

static int nr_types(uint64_t tb)
{
	return swp_tb_is_null(tb) + swp_tb_is_shadow(tb) + swp_tb_is_folio(tb) +
	       swp_tb_is_ptr(tb) + swp_tb_is_bad(tb);
}

static void test_layout(void **state)
{
	(void)state;
	assert_int_equal(WS_EVICTION_SHIFT, 1 + 1 + WS_NODES_SHIFT + 16);
	assert_int_equal(workingset_anon_timestamp_bits(), TS_BITS);
	/* The extremes: every field full, still no count bit, marker set. */
	uint64_t s = workingset_pack_shadow(0xffff, 0xffff, ~0ULL, true, 0);

	assert_int_equal(s & SWP_TB_FLAGS_MASK, 0);
	assert_int_equal(s & 1, 1);
	assert_int_equal(s, ~0ULL >> SWP_TB_FLAGS_BITS);
	s = workingset_pack_shadow(0, 0, 0, false, 0);
	assert_int_equal(s, SWP_TB_SHADOW_MARK);
}

static void check_roundtrip(uint16_t memcg, uint16_t node, uint64_t eviction, bool ws,
			    unsigned int order)
{
	uint64_t s = workingset_pack_shadow(memcg, node, eviction, ws, order);
	uint64_t ev, want = ((eviction >> order) & TS_MASK) << order;
	uint16_t m, n;
	bool w;
	unsigned int c;

	assert_int_equal(s & SWP_TB_FLAGS_MASK, 0);
	assert_int_equal(s & 1, 1);
	workingset_unpack_shadow(s, &m, &n, &ev, &w, order);
	assert_int_equal(m, memcg);
	assert_int_equal(n, node & ((1U << WS_NODES_SHIFT) - 1));
	assert_int_equal(w, ws);
	assert_int_equal(ev, want);
	/* The packed fields sit where workingset.h draws them, LSB first. */
	assert_int_equal((s >> 1) & 1, ws);
	assert_int_equal((s >> 2) & ((1U << WS_NODES_SHIFT) - 1), n);
	assert_int_equal((s >> (2 + WS_NODES_SHIFT)) & 0xffff, memcg);
	assert_int_equal(s >> WS_EVICTION_SHIFT, (eviction >> order) & TS_MASK);

	/* Usable as a swap table shadow entry at any count (the edges, and
	 * every count when the field is narrow). */
	for (c = 0; c <= SWP_TB_COUNT_MAX; c = (c == 16 && SWP_TB_COUNT_MAX > 32) ?
					     SWP_TB_COUNT_MAX - 1 : c + 1) {
		uint64_t tb = shadow_to_swp_tb(s, swp_tb_mk_flags(c, false));

		assert_true(swp_tb_is_shadow(tb));
		assert_int_equal(nr_types(tb), 1);
		assert_int_equal(swp_tb_get_count(tb), (int)c);
		assert_int_equal(swp_tb_to_shadow(tb), s);
		assert_int_equal(__swp_tb_mk_count(tb, 0), s);
	}
}

static void test_roundtrip_random(void **state)
{
	static const unsigned int orders[] = { 0, 1, 4, 8, 12, 20, 28 };
	uint64_t r = seed;
	unsigned int i, k;

	(void)state;
	for (k = 0; k < sizeof(orders) / sizeof(orders[0]); k++) {
		unsigned int order = orders[k];

		if (order > 64 - TS_BITS)
			continue;
		for (i = 0; i < 20000; i++) {
			uint16_t memcg = (uint16_t)test_rand(&r);
			uint16_t node = (uint16_t)test_rand_below(&r, 1U << WS_NODES_SHIFT);
			uint64_t ev = test_rand(&r);
			bool ws = test_rand(&r) & 1;

			/* Small, field-sized, and full-width counters. */
			switch (i % 3) {
			case 0: ev &= 0xfffff; break;
			case 1: ev &= (TS_MASK << order) | ((1ULL << order) - 1); break;
			}
			check_roundtrip(memcg, node, ev, ws, order);
		}
	}
	/* A node beyond NODES_SHIFT is cut to its low bits, not spilled. */
	check_roundtrip(7, 1U << WS_NODES_SHIFT | 5, 123, false, 0);
}

static void test_bucket_order(void **state)
{
	static const uint64_t totals[] = { 1, 2, 3, 4096, 1ULL << 20, 1ULL << 36, (1ULL << 36) + 1,
					   1ULL << 40, (1ULL << 40) + 1, 1ULL << 44, 1ULL << 50,
					   (1ULL << 63) + 1 };
	uint64_t r = seed ^ 0x55;
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(totals) / sizeof(totals[0]); i++)
		assert_int_equal(workingset_bucket_order(totals[i]), ref_bucket_order(totals[i]));
	/* Exactly TS_BITS of pages need no buckets; one more page needs one. */
	assert_int_equal(workingset_bucket_order(1ULL << TS_BITS), 0);
	assert_int_equal(workingset_bucket_order((1ULL << TS_BITS) + 1), 1);
	for (i = 0; i < 10000; i++) {
		uint64_t t = test_rand(&r) >> test_rand_below(&r, 64);

		if (t)
			assert_int_equal(workingset_bucket_order(t), ref_bucket_order(t));
	}
	/* The example of commit 48dd39b85542 (2^40 pages, 36 bits: order 4),
	 * with the zero flag's bit taken too at the default width: 35 bits. */
	if (SWP_TB_COUNT_BITS == 4)
		assert_int_equal(workingset_bucket_order(1ULL << 40), 5);
}

static struct uswap_workingset make_ws(uint64_t now, size_t total, uint16_t memcg)
{
	struct uswap_workingset ws;

	workingset_init(&ws, total, memcg, 3);
	atomic_store(&ws.nonresident_age, now);
	return ws;
}

/* bucket_order 0: distance = now - eviction exactly; recent iff <= size. */
static void test_refault_distance(void **state)
{
	uint64_t r = seed ^ 0xabc;
	unsigned int i;

	(void)state;
	for (i = 0; i < 20000; i++) {
		uint64_t ev = test_rand(&r) & TS_MASK;
		uint64_t d = test_rand_below(&r, 1u << 16);
		unsigned long size = (unsigned long)test_rand_below(&r, 1u << 17);
		struct uswap_workingset ws = make_ws(ev, 1 << 16, 9);
		uint64_t s;
		bool was;

		assert_int_equal(ws.bucket_order, 0);
		s = workingset_pack_shadow(9, 3, ev, i & 1, 0);
		atomic_store(&ws.nonresident_age, ev + d);
		assert_int_equal(workingset_test_recent(&ws, s, size, &was), d <= size);
		assert_int_equal(was, i & 1);
	}
}

/* workingset_eviction() ages the clock by nr and packs the time before. */
static void test_eviction_clock(void **state)
{
	struct uswap_workingset ws = make_ws(1000, 1 << 16, 42);
	uint64_t s = workingset_eviction(&ws, true, 8);
	bool was = false;

	(void)state;
	assert_int_equal(atomic_load(&ws.nonresident_age), 1008);
	assert_true(workingset_test_recent(&ws, s, 8, &was));
	assert_true(was);
	assert_false(workingset_test_recent(&ws, s, 7, NULL));
	workingset_age_nonresident(&ws, 100);
	assert_true(workingset_test_recent(&ws, s, 108, NULL));
	assert_false(workingset_test_recent(&ws, s, 107, NULL));
}

/*
 * The clock wraps past the eviction field: the masked difference still
 * gives the true distance (when it is below the field's range).
 */
static void test_refault_wrap(void **state)
{
	struct uswap_workingset ws = make_ws(0, 1 << 16, 1);
	uint64_t ev = TS_MASK - 4;	/* 5 ticks before the field wraps */
	uint64_t s = workingset_pack_shadow(1, 0, ev, false, 0);

	(void)state;
	atomic_store(&ws.nonresident_age, ev + 10);	/* field value now 5 */
	assert_true(workingset_test_recent(&ws, s, 10, NULL));
	assert_false(workingset_test_recent(&ws, s, 9, NULL));
	/* And past the 64-bit counter's own wrap. */
	ev = ~0ULL - 2;
	s = workingset_pack_shadow(1, 0, ev, false, 0);
	atomic_store(&ws.nonresident_age, ev + 6);	/* wraps to 3 */
	assert_true(workingset_test_recent(&ws, s, 6, NULL));
	assert_false(workingset_test_recent(&ws, s, 5, NULL));
}

/*
 * With buckets, eviction is stored as eviction >> order. For a clock on a
 * bucket boundary the distance is exact in pages, including across the
 * field's wrap (in buckets).
 */
static void test_refault_bucketed(void **state)
{
	uint64_t r = seed ^ 0xdef;
	unsigned int i;

	(void)state;
	for (i = 0; i < 20000; i++) {
		unsigned int order = 1 + (unsigned int)test_rand_below(&r, 8);
		size_t total = (size_t)1 << (TS_BITS + order);
		struct uswap_workingset ws = make_ws(0, total, 5);
		uint64_t ev = (test_rand(&r) >> order) << order;
		uint64_t d = test_rand_below(&r, 1u << 16) << order;
		unsigned long size = (unsigned long)test_rand_below(&r, 1u << (16 + order));
		uint64_t s;

		assert_int_equal(ws.bucket_order, order);
		s = workingset_pack_shadow(5, 0, ev, false, order);
		atomic_store(&ws.nonresident_age, ev + d);
		assert_int_equal(workingset_test_recent(&ws, s, size, NULL), d <= size);
	}
}

static void test_refault_unknown_memcg(void **state)
{
	struct uswap_workingset ws = make_ws(100, 1 << 16, 7);
	uint64_t s = workingset_pack_shadow(8, 3, 99, true, 0);
	bool was = false;

	(void)state;
	/* Distance 1, huge workingset: still not recent for another memcg. */
	assert_false(workingset_test_recent(&ws, s, ~0UL, &was));
	assert_true(workingset_test_recent(&ws, workingset_pack_shadow(7, 3, 99, true, 0), 1,
					   NULL));
	/* Not a shadow at all: the empty placeholder and a PFN-like word. */
	assert_false(workingset_test_recent(&ws, 0, ~0UL, NULL));
	assert_false(workingset_test_recent(&ws, 2, ~0UL, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_roundtrip_random),
		cmocka_unit_test(test_bucket_order),
		cmocka_unit_test(test_refault_distance),
		cmocka_unit_test(test_eviction_clock),
		cmocka_unit_test(test_refault_wrap),
		cmocka_unit_test(test_refault_bucketed),
		cmocka_unit_test(test_refault_unknown_memcg),
	};

	seed = test_seed("workingset");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
