/* SPDX-License-Identifier: MIT */
/*
 * The supervisor's registered ranges (src/runtime/ranges.c) against a plain
 * model, one bit per page: random adds (merging), subtractions (splits),
 * moves (mremap) and lookups; the invariants (sorted, disjoint, not
 * touching, aligned, in user space) after every step; and the bound of
 * RT_RANGES_MAX runs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ranges.h"

#define SPAN	2048		/* pages of the model's address space */
#define BASE	0x7f0000000000ULL
#define PG	4096ULL

static bool model[SPAN];
static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The ranges hold exactly the model's pages, as maximal runs. */
static void check(const struct rt_ranges *r)
{
	size_t runs = 0;

	assert_true(rt_ranges_valid(r));
	for (size_t i = 0; i < SPAN; i++) {
		const struct rt_range *g = rt_ranges_find(r, BASE + i * PG + 123);

		assert_int_equal(g != NULL, model[i]);
		runs += model[i] && (i == 0 || !model[i - 1]);
	}
	assert_int_equal(r->n, runs);
}

static void set_model(size_t a, size_t b, bool v)
{
	for (size_t i = a; i < b && i < SPAN; i++)
		model[i] = v;
}

static void test_random(void **state)
{
	struct rt_ranges r = { 0 };

	(void)state;
	memset(model, 0, sizeof(model));
	for (int step = 0; step < 20000; step++) {
		size_t a = rnd() % SPAN, len = 1 + rnd() % (rnd() % 4 ? 16 : 256), b = a + len;
		int op = (int)(rnd() % 8);

		if (b > SPAN)
			b = SPAN;
		if (op < 3) {
			assert_int_equal(rt_ranges_add(&r, BASE + a * PG, BASE + b * PG), 0);
			set_model(a, b, true);
		} else if (op < 6) {
			rt_ranges_sub(&r, BASE + a * PG, BASE + b * PG);
			set_model(a, b, false);
		} else {
			/* mremap to a free place: moves what is registered in
			 * [a, b) and leaves [a, b) unregistered */
			size_t to = rnd() % SPAN, n = b - a;
			bool tmp[SPAN];

			if (to + n > SPAN || (to < b && a < to + n))
				continue;
			for (size_t i = 0; i < n; i++)
				tmp[i] = model[a + i];
			rt_ranges_sub(&r, BASE + to * PG, BASE + (to + n) * PG);	/* MREMAP_FIXED unmaps */
			set_model(to, to + n, false);
			assert_int_equal(rt_ranges_move(&r, BASE + a * PG, BASE + to * PG, n * PG), 0);
			set_model(a, b, false);
			for (size_t i = 0; i < n; i++)
				model[to + i] = tmp[i];
		}
		check(&r);
	}
	rt_ranges_free(&r);
}

/* Copies are deep; outside the span nothing is found. */
static void test_copy(void **state)
{
	struct rt_ranges r = { 0 }, c;

	(void)state;
	assert_int_equal(rt_ranges_add(&r, BASE, BASE + 4 * PG), 0);
	assert_int_equal(rt_ranges_add(&r, BASE + 8 * PG, BASE + 9 * PG), 0);
	assert_int_equal(rt_ranges_copy(&c, &r), 0);
	rt_ranges_sub(&r, BASE, BASE + 100 * PG);
	assert_int_equal(r.n, 0);
	assert_int_equal(c.n, 2);
	assert_non_null(rt_ranges_find(&c, BASE + 8 * PG));
	assert_null(rt_ranges_find(&c, BASE + 4 * PG));
	assert_null(rt_ranges_find(&c, BASE - 1));
	rt_ranges_free(&r);
	rt_ranges_free(&c);
}

/* RT_RANGES_MAX separate runs fit; one more is -E2BIG and changes nothing;
 * one that merges still fits. */
static void test_bound(void **state)
{
	struct rt_ranges r = { 0 };
	uint64_t top = 0x100000000ULL;

	(void)state;
	for (uint64_t i = 0; i < RT_RANGES_MAX; i++)
		assert_int_equal(rt_ranges_add(&r, top + i * 2 * PG, top + (i * 2 + 1) * PG), 0);
	assert_int_equal(r.n, RT_RANGES_MAX);
	assert_int_equal(rt_ranges_add(&r, 0x10000, 0x11000), -E2BIG);
	assert_int_equal(r.n, RT_RANGES_MAX);
	assert_int_equal(rt_ranges_add(&r, top + PG, top + 2 * PG), 0);	/* joins two */
	assert_int_equal(r.n, RT_RANGES_MAX - 1);
	assert_true(rt_ranges_valid(&r));
	rt_ranges_free(&r);
}

/* What rt_ranges_valid() refuses. */
static void test_invalid(void **state)
{
	struct rt_range v[2];
	struct rt_ranges r = { .v = v, .n = 1, .cap = 2 };

	(void)state;
	v[0] = (struct rt_range){ 0x2000, 0x1000 };
	assert_false(rt_ranges_valid(&r));
	v[0] = (struct rt_range){ 0x1001, 0x2000 };
	assert_false(rt_ranges_valid(&r));
	v[0] = (struct rt_range){ 0x1000, rt_user_top() + PG };
	assert_false(rt_ranges_valid(&r));
	v[0] = (struct rt_range){ 0x1000, 0x3000 };
	v[1] = (struct rt_range){ 0x3000, 0x4000 };	/* touching: should have merged */
	r.n = 2;
	assert_false(rt_ranges_valid(&r));
	v[1] = (struct rt_range){ 0x5000, 0x6000 };
	assert_true(rt_ranges_valid(&r));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_copy),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
