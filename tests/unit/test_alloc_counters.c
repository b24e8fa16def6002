/* SPDX-License-Identifier: MIT */
/*
 * The allocator's usage counters are split per CPU (swap_alloc.c): each
 * CPU adds to its own slot and folds it into the shared count in
 * batches. What must stay exact: the device's inuse_pages as stat reports
 * it, vm_swap_full() at its line (more than half used), and the device
 * leaving the avail list when full and coming back on the first free,
 * also when two CPUs allocate and free at once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "swap/swap_internal.h"
#include "testutil.h"

/* The device's inuse_pages as uswap_swap_stat() reports it. */
static uint64_t inuse_of(int type)
{
	struct uswap_swap_stat st;

	assert_int_equal(uswap_swap_stat((unsigned int)type, &st), 0);
	return st.inuse_pages;
}

/* What vm_swap_full() must say with @inuse of @pages used (one device). */
static bool want_full(uint64_t inuse, uint64_t pages)
{
	return (pages - inuse) * 2 < pages;
}

#define BIG_CLUSTERS	512	/* far more than the per-CPU slack */

/*
 * Fill a device far larger than the counters' slack, a cluster at a
 * time and then slot by slot: after every allocation the stat is exact
 * and vm_swap_full() flips exactly past half. Full, the device refuses;
 * one slot freed, it takes one again.
 */
static void test_counters_exact(void **state)
{
	const uint64_t max = BIG_CLUSTERS * SWAPFILE_CLUSTER;
	static swp_entry_t held[BIG_CLUSTERS * SWAPFILE_CLUSTER];
	static unsigned int order_of[BIG_CLUSTERS * SWAPFILE_CLUSTER];
	struct uswap_frame_pool *pool;
	struct uswap_swap_stat st;
	uint64_t inuse = 0, pages, n = 0, i;
	swp_entry_t e;
	int type;

	(void)state;
	assert_int_equal(uswap_frame_pool_create(2 << USWAP_MAX_ORDER, &pool), 0);
	type = uswap_swapon_mem(max, 0);
	assert_true(type >= 0);
	assert_int_equal(uswap_swap_stat((unsigned int)type, &st), 0);
	pages = st.pages;
	assert_false(uswap_vm_swap_full());

	/* Whole clusters (cluster 0 holds the header: not for order 9). */
	while (test_swap_out_one(pool, USWAP_MAX_ORDER, &e) == 0) {
		held[n] = e;
		order_of[n++] = USWAP_MAX_ORDER;
		inuse += 1U << USWAP_MAX_ORDER;
		assert_int_equal(inuse_of(type), inuse);
		assert_int_equal(uswap_vm_swap_full(), want_full(inuse, pages));
	}
	assert_int_equal(inuse, pages - (SWAPFILE_CLUSTER - 1));
	/* The rest of cluster 0, one slot at a time. */
	while (inuse < pages) {
		assert_int_equal(test_swap_out_one(pool, 0, &e), 0);
		held[n] = e;
		order_of[n++] = 0;
		inuse++;
		assert_int_equal(inuse_of(type), inuse);
	}
	assert_true(uswap_vm_swap_full());
	assert_int_equal(test_swap_out_one(pool, 0, &e), -ENOMEM);

	/* A free puts the full device back on the avail list. */
	assert_int_equal(swap_put_entries_direct(held[n - 1], 1), 0);
	assert_int_equal(inuse_of(type), pages - 1);
	assert_int_equal(test_swap_out_one(pool, 0, &e), 0);
	held[n - 1] = e;
	assert_int_equal(inuse_of(type), pages);

	/* Empty it again, checking the line on the way down. */
	for (i = n; i-- > 0;) {
		assert_int_equal(swap_put_entries_direct(held[i], 1L << order_of[i]), 0);
		inuse -= 1U << order_of[i];
		assert_int_equal(inuse_of(type), inuse);
		assert_int_equal(uswap_vm_swap_full(), want_full(inuse, pages));
	}
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	uswap_frame_pool_destroy(pool);
}

#define SMALL_SLOTS	(8 * SWAPFILE_CLUSTER)
#define ROUNDS		40

struct filler {
	int cpu;			/* pinned here, or -1 */
	uint64_t seed;
	pthread_barrier_t *start;
	struct uswap_frame_pool *pool;
	swp_entry_t held[SMALL_SLOTS];
	unsigned int nr;
	unsigned long enomem;
};

/* Fill until the device is full, free a random half, again and again. */
static void *filler_fn(void *arg)
{
	struct filler *f = arg;
	uint64_t rnd = f->seed;
	swp_entry_t e;
	unsigned int r, i;

	if (f->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(f->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	pthread_barrier_wait(f->start);
	for (r = 0; r < ROUNDS; r++) {
		while (test_swap_out_one(f->pool, 0, &e) == 0)
			f->held[f->nr++] = e;
		f->enomem++;
		for (i = 0; i < f->nr / 2; i++) {
			unsigned int k;

			rnd = rnd * 6364136223846793005ULL + 1442695040888963407ULL;
			k = (unsigned int)((rnd >> 33) % f->nr);
			assert_int_equal(swap_put_entries_direct(f->held[k], 1), 0);
			f->held[k] = f->held[--f->nr];
		}
	}
	return NULL;
}

/*
 * Two threads (on two CPUs when there are two) fill a small device to
 * full and free half of what they hold, over and over: full and not full
 * alternate on both CPUs at once. Afterwards the count is exact and the
 * device takes every one of its slots again: no slot was lost in the
 * per-CPU parts and the device was not left off the avail list.
 */
static void test_counters_full_two_cpus(void **state)
{
	static struct filler fl[2];
	struct uswap_frame_pool *pool;
	pthread_barrier_t start;
	pthread_t tid[2];
	uint64_t pages, got = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	swp_entry_t e;
	unsigned int t, i;
	int type;

	(void)state;
	type = uswap_swapon_mem(SMALL_SLOTS, 0);
	assert_true(type >= 0);
	pages = SMALL_SLOTS - 1;
	pthread_barrier_init(&start, NULL, 2);
	for (t = 0; t < 2; t++) {
		memset(&fl[t], 0, sizeof(fl[t]));
		fl[t].cpu = ncpu >= 2 ? (int)t : -1;
		fl[t].seed = 0x9e3779b97f4a7c15ULL * (t + 1);
		fl[t].start = &start;
		assert_int_equal(uswap_frame_pool_create(64, &fl[t].pool), 0);
		assert_int_equal(pthread_create(&tid[t], NULL, filler_fn, &fl[t]), 0);
	}
	for (t = 0; t < 2; t++)
		pthread_join(tid[t], NULL);
	pthread_barrier_destroy(&start);
	assert_int_equal(inuse_of(type), fl[0].nr + fl[1].nr);
	for (t = 0; t < 2; t++) {
		for (i = 0; i < fl[t].nr; i++)
			assert_int_equal(swap_put_entries_direct(fl[t].held[i], 1), 0);
		fl[t].nr = 0;
		uswap_frame_pool_destroy(fl[t].pool);
	}
	assert_int_equal(inuse_of(type), 0);

	/* Every slot again, from this thread. */
	assert_int_equal(uswap_frame_pool_create(64, &pool), 0);
	while (test_swap_out_one(pool, 0, &e) == 0)
		fl[0].held[got++] = e;
	assert_int_equal(got, pages);
	assert_int_equal(inuse_of(type), pages);
	for (i = 0; i < got; i++)
		assert_int_equal(swap_put_entries_direct(fl[0].held[i], 1), 0);
	assert_int_equal(inuse_of(type), 0);
	uswap_frame_pool_destroy(pool);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counters_exact),
		cmocka_unit_test(test_counters_full_two_cpus),
	};

	setenv("USWAP_QUIET", "1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
