/* SPDX-License-Identifier: MIT */
/*
 * The supervisor's page replacement (src/runtime/coldlist.c) against a plain
 * model: random adds, drops and pops keep the lists' counts and the pop
 * order (oldest live inactive entry first, stale entries skipped and
 * compacted away); the active list is aged to half the resident pages;
 * written pages get one rotation, then activation; the refault distance
 * test with its 24-bit wrap.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/pagetab.c"
#include "runtime/coldlist.c"

#define BASE	0x7f0000000000ULL
#define SPAN	3000

static uint64_t rng = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t addr(uint64_t i)
{
	return BASE + i * 4096;
}

/* The model: each page's list (-1 none) and the order it was added in. */
static int list_of[SPAN];
static uint64_t order_of[SPAN], clock_now;

static void add(struct rt_lru *l, struct pagetab *pt, uint64_t i, bool active)
{
	assert_int_equal(rt_lru_add(l, pt, addr(i), active), 0);
	list_of[i] = active;
	order_of[i] = ++clock_now;
}

static void drop(struct rt_lru *l, struct pagetab *pt, uint64_t i)
{
	uint64_t v = 0;

	assert_true(pt_get(pt, addr(i), &v));
	rt_lru_forget(l, v);
	pt_del(pt, addr(i));
	list_of[i] = -1;
}

/* With no active pages and nothing written, pops come out in add order
 * and the counts match the model, through drops, re-adds and compaction. */
static void test_inactive_order(void **state)
{
	struct pagetab pt;
	struct rt_lru l = { 0 };
	struct rt_lru_stats st = { 0 };

	(void)state;
	assert_int_equal(pt_init(&pt), 0);
	for (int i = 0; i < SPAN; i++)
		list_of[i] = -1;
	for (int round = 0; round < 20000; round++) {
		uint64_t i = rnd() % SPAN, r = rnd() % 4, n = 0;

		if (r < 2 && list_of[i] < 0)
			add(&l, &pt, i, false);
		else if (r == 2 && list_of[i] >= 0)
			drop(&l, &pt, i);
		else if (r == 3) {
			uint64_t a, best = ~0ULL, want = SPAN;

			for (uint64_t k = 0; k < SPAN; k++)
				if (list_of[k] == 0 && order_of[k] < best) {
					best = order_of[k];
					want = k;
				}
			if (want == SPAN) {
				assert_false(rt_lru_pop(&l, &pt, &a, 1000, &st));
				continue;
			}
			assert_true(rt_lru_pop(&l, &pt, &a, 1000, &st));
			assert_int_equal(a, addr(want));
			pt_set(&pt, a, PT_VAL(PS_EVICTING, 0));
			list_of[want] = -1;
		}
		for (uint64_t k = 0; k < SPAN; k++)
			n += list_of[k] == 0;
		assert_int_equal(l.nr[0], n);
		/* Compaction keeps the ring within twice the live entries. */
		assert_true(l.ring[0].len <= 2 * n + 4096);
	}
	rt_lru_free(&l);
	pt_free(&pt);
}

/* The active list is aged onto the inactive one down to half the
 * resident pages, oldest first. */
static void test_aging(void **state)
{
	struct pagetab pt;
	struct rt_lru l = { 0 };
	struct rt_lru_stats st = { 0 };
	uint64_t a;

	(void)state;
	assert_int_equal(pt_init(&pt), 0);
	for (uint64_t i = 0; i < 100; i++)
		assert_int_equal(rt_lru_add(&l, &pt, addr(i), true), 0);
	for (uint64_t i = 100; i < 110; i++)
		assert_int_equal(rt_lru_add(&l, &pt, addr(i), false), 0);
	/* 110 resident: the active list may keep 55; 45 are aged, oldest first,
	 * behind the 10 inactive pages. */
	for (uint64_t i = 100; i < 110; i++) {
		assert_true(rt_lru_pop(&l, &pt, &a, 110, &st));
		assert_int_equal(a, addr(i));
		pt_del(&pt, a);
	}
	assert_int_equal(st.deactivated, 45);
	assert_int_equal(l.nr[1], 55);
	assert_true(rt_lru_pop(&l, &pt, &a, 110, &st));
	assert_int_equal(a, addr(0));
	rt_lru_free(&l);
	pt_free(&pt);
}

/* A written inactive page is rotated once; written again, activated; not
 * written again, evicted on its next visit. */
static void test_written(void **state)
{
	struct pagetab pt;
	struct rt_lru l = { 0 };
	struct rt_lru_stats st = { 0 };
	uint64_t a, v = 0;

	(void)state;
	assert_int_equal(pt_init(&pt), 0);
	for (uint64_t i = 0; i < 4; i++)
		assert_int_equal(rt_lru_add(&l, &pt, addr(i), false), 0);
	for (uint64_t i = 0; i < 2; i++) {	/* pages 0 and 1 written */
		assert_true(pt_get(&pt, addr(i), &v));
		pt_set(&pt, addr(i), v | LRU_WRITTEN);
	}
	assert_true(rt_lru_pop(&l, &pt, &a, 100, &st));
	assert_int_equal(a, addr(2));
	pt_del(&pt, a);
	assert_int_equal(st.rotated, 2);
	assert_true(pt_get(&pt, addr(0), &v));
	pt_set(&pt, addr(0), v | LRU_WRITTEN);	/* page 0 written again */
	assert_true(rt_lru_pop(&l, &pt, &a, 100, &st));
	assert_int_equal(a, addr(3));
	pt_del(&pt, a);
	assert_true(rt_lru_pop(&l, &pt, &a, 100, &st));
	assert_int_equal(a, addr(1));		/* seen, not written: evicted */
	pt_del(&pt, a);
	assert_int_equal(st.promoted, 1);
	assert_true(pt_get(&pt, addr(0), &v));
	assert_int_equal(LRU_ACTIVE(v), 1);
	rt_lru_free(&l);
	pt_free(&pt);
}

static void test_refault_distance(void **state)
{
	(void)state;
	assert_true(rt_lru_refault(LRU_SWAPPED(5, 1000), 1000 + 512, 512));
	assert_false(rt_lru_refault(LRU_SWAPPED(5, 1000), 1000 + 513, 512));
	/* The shadow keeps 24 bits; the mirror index is untouched by it. */
	assert_int_equal(PT_IDX(LRU_SWAPPED(0xfffffffu, (1ULL << 24) - 10)), 0xfffffffu);
	assert_int_equal(PT_STATE(LRU_SWAPPED(7, 3)), PS_SWAPPED);
	assert_true(rt_lru_refault(LRU_SWAPPED(5, (1ULL << 24) - 10), (1ULL << 24) + 20, 30));
	assert_false(rt_lru_refault(LRU_SWAPPED(5, (1ULL << 24) - 10), (1ULL << 24) + 21, 30));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inactive_order),
		cmocka_unit_test(test_aging),
		cmocka_unit_test(test_written),
		cmocka_unit_test(test_refault_distance),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
