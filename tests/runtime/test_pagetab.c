/* SPDX-License-Identifier: MIT */
/*
 * The supervisor's page-state map and FIFO (src/runtime/pagetab.c) against
 * a plain model: random sets, deletes (backward shift: no entry may become
 * unreachable), range collections by probing and by walking, growth, and
 * the FIFO's order across its growth.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/pagetab.c"

#define SPAN	4096		/* pages of the model's address space */
#define BASE	0x7f0000000000ULL

static uint64_t model[SPAN];	/* 0: absent, else the value */
static uint64_t rng = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void check_all(const struct pagetab *pt)
{
	size_t n = 0;
	uint64_t v;

	for (size_t i = 0; i < SPAN; i++) {
		bool there = pt_get(pt, BASE + i * 4096, &v);

		assert_int_equal(there, model[i] != 0);
		if (there) {
			assert_int_equal(v, model[i]);
			n++;
		}
	}
	assert_int_equal(n, pt->count);
	assert_true(pt->count * 2 <= pt->cap);
}

static void check_range(const struct pagetab *pt, size_t a, size_t b)
{
	struct pt_ent *e;
	size_t n, want = 0;

	assert_int_equal(pt_collect(pt, BASE + a * 4096, BASE + b * 4096, &e, &n), 0);

	for (size_t i = a; i < b; i++)
		want += model[i] != 0;
	assert_int_equal(n, want);
	for (size_t i = 0; i < n; i++) {
		size_t page = (size_t)((e[i].key - BASE) / 4096);

		assert_true(page >= a && page < b);
		assert_int_equal(e[i].val, model[page]);
	}
	free(e);
}

static void test_against_model(void **state)
{
	struct pagetab pt;

	(void)state;
	memset(model, 0, sizeof(model));
	assert_int_equal(pt_init(&pt), 0);
	for (int op = 0; op < 200000; op++) {
		size_t i = (size_t)(rnd() % SPAN);
		unsigned int what = (unsigned int)(rnd() % 8);

		if (what < 4) {
			uint64_t v = PT_VAL(1 + rnd() % 5, rnd() % 1000);

			assert_int_equal(pt_set(&pt, BASE + i * 4096, v), 0);
			model[i] = v;
		} else if (what < 7) {
			pt_del(&pt, BASE + i * 4096);
			model[i] = 0;
		} else {
			size_t len = (size_t)(rnd() % (what == 7 && op % 2 ? 8 : SPAN));
			size_t a = i, b = i + len > SPAN ? SPAN : i + len;

			check_range(&pt, a, b);	/* small ranges probe, large ones walk */
		}
		if (op % 20000 == 0)
			check_all(&pt);
	}
	check_all(&pt);
	for (size_t i = 0; i < SPAN; i++)
		pt_del(&pt, BASE + i * 4096);
	assert_int_equal(pt.count, 0);
	pt_free(&pt);
}

static void test_fifo_order(void **state)
{
	struct rt_fifo f = { 0 };
	uint64_t a, next_in = 0, next_out = 0;

	(void)state;
	for (int round = 0; round < 50; round++) {
		int push = (int)(rnd() % 3000), pop = (int)(rnd() % 3000);

		for (int i = 0; i < push; i++)
			assert_int_equal(fifo_push(&f, next_in++), 0);
		for (int i = 0; i < pop && fifo_pop(&f, &a); i++)
			assert_int_equal(a, next_out++);
		assert_int_equal(f.len, next_in - next_out);
	}
	while (fifo_pop(&f, &a))
		assert_int_equal(a, next_out++);
	assert_int_equal(next_out, next_in);
	assert_false(fifo_pop(&f, &a));
	fifo_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_against_model),
		cmocka_unit_test(test_fifo_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
