/* SPDX-License-Identifier: MIT */
/*
 * Waiting for writeback: folio_end_writeback() wakes only when a waiter
 * said so (PG_waiters), and then every waiter. A lost wake-up shows as a
 * waiter still asleep after the end; the test fails after 5 s of that.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <setjmp.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <uswap/uswap.h>
#include "swap/swap_internal.h"

#define NR_WAITERS	3
#define ROUNDS		200

static bool flag(struct folio *f, int bit)
{
	return atomic_load(&f->flags) & (1U << bit);
}

/* Writeback that nobody waits for ends without PG_waiters ever set. */
static void test_no_waiter(void **state)
{
	struct uswap_frame_pool *pool;
	struct folio *f;

	(void)state;
	assert_int_equal(uswap_frame_pool_create(16, &pool), 0);
	f = uswap_folio_alloc(pool, 0);
	assert_non_null(f);
	folio_wait_writeback(f);	/* not under writeback: returns */
	folio_start_writeback(f);
	assert_true(flag(f, PG_writeback));
	assert_false(flag(f, PG_waiters));
	folio_end_writeback(f);
	assert_false(flag(f, PG_writeback));
	assert_false(flag(f, PG_waiters));
	folio_put(f);
	uswap_frame_pool_destroy(pool);
}

struct waiter {
	struct folio *folio;
	_Atomic unsigned int *back;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	folio_wait_writeback(w->folio);
	if (flag(w->folio, PG_writeback))
		return (void *)1;	/* woke while still under writeback */
	atomic_fetch_add(w->back, 1);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Waiters asleep (some of them at least: PG_waiters set) when writeback
 * ends all come back, and the flag is gone; many rounds, so that the end
 * also races with waiters on their way to sleep.
 */
static void test_waiters_woken(void **state)
{
	struct uswap_frame_pool *pool;
	struct folio *f;
	unsigned int round, i;

	(void)state;
	assert_int_equal(uswap_frame_pool_create(16, &pool), 0);
	f = uswap_folio_alloc(pool, 0);
	assert_non_null(f);
	for (round = 0; round < ROUNDS; round++) {
		_Atomic unsigned int back = 0;
		struct waiter w = { .folio = f, .back = &back };
		pthread_t t[NR_WAITERS];
		double t0;
		void *ret;

		folio_start_writeback(f);
		for (i = 0; i < NR_WAITERS; i++)
			assert_int_equal(pthread_create(&t[i], NULL, waiter_main, &w), 0);
		/* every other round, end only once a waiter has said it sleeps */
		if (round % 2 == 0)
			while (!flag(f, PG_waiters))
				sched_yield();
		folio_end_writeback(f);
		t0 = now_s();
		while (atomic_load(&back) < NR_WAITERS) {
			if (now_s() - t0 > 5.0)
				fail_msg("round %u: %u of %d waiters still asleep", round,
					 NR_WAITERS - atomic_load(&back), NR_WAITERS);
			usleep(100);
		}
		for (i = 0; i < NR_WAITERS; i++) {
			assert_int_equal(pthread_join(t[i], &ret), 0);
			assert_null(ret);
		}
		assert_false(flag(f, PG_waiters));
	}
	folio_put(f);
	uswap_frame_pool_destroy(pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_waiter),
		cmocka_unit_test(test_waiters_woken),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
