/* SPDX-License-Identifier: MIT */
/*
 * swapon and swapoff against each other and against the rest: one file
 * swapped on once however many threads try and by whatever name; the
 * free-swap total after a swapoff that succeeds and one that fails; and
 * swapoff running its owners' unuse without swap_lock, so that a thread
 * holding a folio lock may swap on meanwhile (folio lock -> swap_lock).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "swaptest.h"
#include "swap/swap_header.h"
#include "swap/swap_internal.h"


static void make_file(const char *path, uint32_t pages)
{
	static const uint8_t uuid[16] = { 1, 2, 3, 4, 5, 6, 0x47, 8, 0x89, 10, 11, 12, 13, 14, 15, 16 };
	void *page = aligned_alloc(4096, 4096);
	int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);

	assert_true(fd >= 0);
	assert_int_equal(uswap_swap_header_build(page, pages - 1, NULL, 0, uuid, "r"), 0);
	assert_int_equal(ftruncate(fd, (off_t)pages * 4096), 0);
	assert_int_equal(pwrite(fd, page, 4096, 0), 4096);
	close(fd);
	free(page);
}

static struct folio *new_folio(struct uswap_frame_pool *pool)
{
	struct folio *f = uswap_folio_alloc(pool, 0);

	assert_non_null(f);
	folio_mark_uptodate(f);
	folio_lock(f);
	return f;
}

#define NR_RACERS 8

struct racer {
	pthread_barrier_t *start;
	const char *path;
	int ret;
};

static void *racer_fn(void *arg)
{
	struct racer *r = arg;

	pthread_barrier_wait(r->start);
	r->ret = uswap_swapon(r->path, 0);
	return NULL;
}

/* 8 threads swap on one file at once: one wins, the others get -EBUSY. */
static void test_swapon_same_file_race(void **state)
{
	struct racer r[NR_RACERS];
	pthread_t t[NR_RACERS];
	pthread_barrier_t start;
	char path[256];
	int round, i;

	(void)state;
	swaptest_path(path, "race");
	make_file(path, 1024);
	for (round = 0; round < 200; round++) {
		int won = -1, busy = 0;

		pthread_barrier_init(&start, NULL, NR_RACERS);
		for (i = 0; i < NR_RACERS; i++) {
			r[i] = (struct racer){ &start, path, 0 };
			assert_int_equal(pthread_create(&t[i], NULL, racer_fn, &r[i]), 0);
		}
		for (i = 0; i < NR_RACERS; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&start);
		for (i = 0; i < NR_RACERS; i++) {
			if (r[i].ret >= 0) {
				if (won >= 0)
					fail_msg("round %d: swapped on twice (types %d and %d)",
						 round, won, r[i].ret);
				won = r[i].ret;
			} else {
				assert_int_equal(r[i].ret, -EBUSY);
				busy++;
			}
		}
		assert_true(won >= 0);
		assert_int_equal(busy, NR_RACERS - 1);
		assert_int_equal(uswap_swapoff_type((unsigned int)won), 0);
	}
	unlink(path);
}

/* Two names for one file (a hard link, a symlink) are one swap file; the
 * claim is given back by swapoff and by a swapon that fails. */
static void test_swapon_other_name(void **state)
{
	char path[256], hard[256], soft[256], bad[256];
	int type;

	(void)state;
	swaptest_path(path, "named");
	swaptest_path(hard, "named-hard");
	swaptest_path(soft, "named-soft");
	swaptest_path(bad, "named-bad");
	make_file(path, 1024);
	assert_int_equal(link(path, hard), 0);
	assert_int_equal(symlink(path, soft), 0);
	type = uswap_swapon(path, 0);
	assert_true(type >= 0);
	assert_int_equal(uswap_swapon(hard, 0), -EBUSY);
	assert_int_equal(uswap_swapon(soft, 0), -EBUSY);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	/* Free again: by the other name now. */
	type = uswap_swapon(hard, 0);
	assert_true(type >= 0);
	assert_int_equal(uswap_swapon(path, 0), -EBUSY);
	assert_int_equal(uswap_swapoff(hard), 0);
	/* A swapon that fails (no header) leaves the file free. */
	{
		int fd = open(bad, O_CREAT | O_TRUNC | O_RDWR, 0600);

		assert_true(fd >= 0);
		assert_int_equal(ftruncate(fd, 1 << 20), 0);
		close(fd);
	}
	assert_int_equal(uswap_swapon(bad, 0), -EINVAL);
	make_file(bad, 256);
	type = uswap_swapon(bad, 0);
	assert_true(type >= 0);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	unlink(soft);
	unlink(hard);
	unlink(path);
	unlink(bad);
}

#define USED 600

/* Fill @n slots of the only device with cache-only folios, unlocked so
 * that swapoff may reclaim them. */
static void alloc_cached(struct uswap_frame_pool *pool, struct folio **f, int n, int type)
{
	int i;

	for (i = 0; i < n; i++) {
		f[i] = new_folio(pool);
		assert_int_equal(folio_alloc_swap(f[i]), 0);
		assert_int_equal(swp_type(folio_swap_entry(f[i])), (unsigned int)type);
		folio_unlock(f[i]);
	}
}

static void put_all(struct folio **f, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		folio_lock(f[i]);
		if (folio_test_swapcache(f[i]))
			assert_int_equal(folio_free_swap(f[i]), 1);
		folio_unlock(f[i]);
		folio_put(f[i]);
	}
}

/*
 * Device A, 600 of 1023 slots used, swapped off (its cache-only slots
 * reclaimed by swapoff); then device B, 600 of 1023 used: more than half
 * of all swap is in use.
 */
static void test_swap_full_after_swapoff(void **state)
{
	static struct folio *f[USED];
	struct uswap_frame_pool *pool;
	int a, b;

	(void)state;
	assert_int_equal(uswap_frame_pool_create(2 * USED, &pool), 0);
	a = uswap_swapon_mem(1024, 0);
	assert_true(a >= 0);
	alloc_cached(pool, f, USED, a);
	assert_true(uswap_vm_swap_full());
	assert_int_equal(uswap_swapoff_type((unsigned int)a), 0);
	put_all(f, USED);
	assert_false(uswap_vm_swap_full());

	b = uswap_swapon_mem(1024, 0);
	assert_true(b >= 0);
	alloc_cached(pool, f, 300, b);
	assert_false(uswap_vm_swap_full());	/* 300 of 1023 */
	alloc_cached(pool, f + 300, USED - 300, b);
	assert_true(uswap_vm_swap_full());	/* 600 of 1023 */
	put_all(f, USED);
	assert_false(uswap_vm_swap_full());
	assert_int_equal(uswap_swapoff_type((unsigned int)b), 0);
	uswap_frame_pool_destroy(pool);
}

/*
 * A swapoff that fails with -EBUSY (600 slots held by entries that no
 * owner gives back) leaves the device as it was: still more than half
 * used. And nothing drifts: the next device is accounted right.
 */
static void test_swap_full_after_busy_swapoff(void **state)
{
	static swp_entry_t e[USED];
	static struct folio *f[USED];
	struct uswap_frame_pool *pool;
	int a, b, i;

	(void)state;
	assert_int_equal(uswap_frame_pool_create(2 * USED, &pool), 0);
	a = uswap_swapon_mem(1024, 0);
	assert_true(a >= 0);
	for (i = 0; i < USED; i++) {
		struct folio *g = new_folio(pool);

		assert_int_equal(folio_alloc_swap(g), 0);
		assert_int_equal(folio_dup_swap(g, -1), 0);
		e[i] = folio_swap_entry(g);
		assert_int_equal(swap_cache_del_folio(g, 0), 0);
		folio_unlock(g);
		folio_put(g);
	}
	assert_true(uswap_vm_swap_full());
	assert_int_equal(uswap_swapoff_type((unsigned int)a), -EBUSY);
	assert_true(uswap_vm_swap_full());
	assert_int_equal(uswap_swapoff_type((unsigned int)a), -EBUSY);
	assert_true(uswap_vm_swap_full());
	for (i = 0; i < USED; i++)
		assert_int_equal(swap_put_entries_direct(e[i], 1), 0);
	assert_false(uswap_vm_swap_full());
	assert_int_equal(uswap_swapoff_type((unsigned int)a), 0);

	b = uswap_swapon_mem(1024, 0);
	assert_true(b >= 0);
	alloc_cached(pool, f, USED, b);
	assert_true(uswap_vm_swap_full());
	put_all(f, USED);
	assert_int_equal(uswap_swapoff_type((unsigned int)b), 0);
	uswap_frame_pool_destroy(pool);
}

/* ---- swapoff's unuse runs without swap_lock ---- */

struct order_test {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct folio *folio;		/* locked by the holder thread */
	int device;			/* the type being swapped off */
	bool locked, unuse_started, holder_done, swapoff_done;
	int holder_type, swapoff_ret;
};

static void ot_set(struct order_test *ot, bool *flag)
{
	pthread_mutex_lock(&ot->lock);
	*flag = true;
	pthread_cond_broadcast(&ot->cond);
	pthread_mutex_unlock(&ot->lock);
}

/* Wait for *flag, at most @secs seconds. Return: whether it was set. */
static bool ot_wait(struct order_test *ot, bool *flag, int secs)
{
	struct timespec ts;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += secs;
	pthread_mutex_lock(&ot->lock);
	while (!*flag)
		if (pthread_cond_timedwait(&ot->cond, &ot->lock, &ts))
			break;
	ok = *flag;
	pthread_mutex_unlock(&ot->lock);
	return ok;
}

static struct order_test *the_ot;

/* The owner's unuse: it needs the folio that the holder has locked. */
static int order_unuse(unsigned int type, void *arg)
{
	struct order_test *ot = arg;

	if ((int)type != ot->device)
		return 0;
	ot_set(ot, &ot->unuse_started);
	folio_lock(ot->folio);
	folio_unlock(ot->folio);
	return 0;
}

/* Holds the folio lock, and swaps a device on while swapoff unuses. */
static void *holder_fn(void *arg)
{
	struct order_test *ot = arg;

	folio_lock(ot->folio);
	ot_set(ot, &ot->locked);
	ot_wait(ot, &ot->unuse_started, 3600);
	ot->holder_type = uswap_swapon_mem(1024, 0);
	folio_unlock(ot->folio);
	ot_set(ot, &ot->holder_done);
	return NULL;
}

static void *swapoff_fn(void *arg)
{
	struct order_test *ot = arg;

	ot->swapoff_ret = uswap_swapoff_type((unsigned int)ot->device);
	ot_set(ot, &ot->swapoff_done);
	return NULL;
}

/*
 * folio lock -> swap_lock, as documented: a thread holding a folio lock
 * swaps on while a swapoff's unuse waits for that folio. With swap_lock
 * held across the unuse, both would wait for ever. Last in the file: on
 * failure the two threads stay blocked.
 */
static void test_swapoff_unuse_lock_order(void **state)
{
	struct uswap_frame_pool *pool;
	pthread_t holder, off;

	(void)state;
	the_ot = calloc(1, sizeof(*the_ot));
	assert_non_null(the_ot);
	pthread_mutex_init(&the_ot->lock, NULL);
	pthread_cond_init(&the_ot->cond, NULL);
	assert_int_equal(uswap_frame_pool_create(16, &pool), 0);
	the_ot->folio = uswap_folio_alloc(pool, 0);
	assert_non_null(the_ot->folio);
	the_ot->device = uswap_swapon_mem(1024, 0);
	assert_true(the_ot->device >= 0);
	assert_int_equal(uswap_swap_set_owner(order_unuse, the_ot, true), 0);

	assert_int_equal(pthread_create(&holder, NULL, holder_fn, the_ot), 0);
	assert_true(ot_wait(the_ot, &the_ot->locked, 60));
	assert_int_equal(pthread_create(&off, NULL, swapoff_fn, the_ot), 0);
	if (!ot_wait(the_ot, &the_ot->holder_done, 20) ||
	    !ot_wait(the_ot, &the_ot->swapoff_done, 20))
		fail_msg("swapon under a folio lock and swapoff's unuse of that folio deadlock");
	pthread_join(holder, NULL);
	pthread_join(off, NULL);
	assert_int_equal(the_ot->swapoff_ret, 0);
	assert_true(the_ot->holder_type >= 0);
	assert_int_equal(uswap_swap_set_owner(order_unuse, the_ot, false), 0);
	assert_int_equal(uswap_swapoff_type((unsigned int)the_ot->holder_type), 0);
	folio_put(the_ot->folio);
	uswap_frame_pool_destroy(pool);
	free(the_ot);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_swapon_same_file_race),
		cmocka_unit_test(test_swapon_other_name),
		cmocka_unit_test(test_swap_full_after_swapoff),
		cmocka_unit_test(test_swap_full_after_busy_swapoff),
		cmocka_unit_test(test_swapoff_unuse_lock_order),
	};

	setenv("USWAP_QUIET", "1", 1);
	return cmocka_run_group_tests(tests, swaptest_dir_setup, swaptest_dir_teardown);
}
