/* SPDX-License-Identifier: MIT */
/*
 * Two threads, one device (swap_alloc.c "Cluster ownership", and the
 * percpu_ref-style pin in swap_device.c):
 * - a thread's slow path passes over the cluster another live thread is
 *   allocating from, but takes it when nothing else has room, and takes
 *   it again once that thread has exited;
 * - swapoff waits for a pin held on another thread and counts pins taken
 *   and dropped on different threads exactly; a device swapped on again
 *   pins as before.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "swap/swap_internal.h"
#include "testutil.h"

#define TWO_CLUSTERS	(2 * SWAPFILE_CLUSTER)
#define BIG		(16 * SWAPFILE_CLUSTER)

static unsigned long cluster_of(swp_entry_t e)
{
	return (unsigned long)(swp_offset(e) / SWAPFILE_CLUSTER);
}

/* What a helper thread does: @n slots (all it can if @n is 0), then
 * frees @drop of them and keeps the rest in held[]. */
struct taker {
	unsigned int n, drop;
	unsigned int nr;		/* slots held */
	swp_entry_t held[TWO_CLUSTERS];
};

static void *taker_fn(void *arg)
{
	struct taker *t = arg;
	struct uswap_frame_pool *pool;
	swp_entry_t e;
	unsigned int i;

	assert_int_equal(uswap_frame_pool_create(16, &pool), 0);
	t->nr = 0;
	while ((!t->n || t->nr < t->n) && test_swap_out_one(pool, 0, &e) == 0)
		t->held[t->nr++] = e;
	for (i = 0; i < t->drop && t->nr; i++)
		assert_int_equal(swap_put_entries_direct(t->held[--t->nr], 1), 0);
	uswap_frame_pool_destroy(pool);
	return NULL;
}

/* Run @t on a thread of its own, to its exit. */
static void take_on_thread(struct taker *t)
{
	pthread_t tid;

	assert_int_equal(pthread_create(&tid, NULL, taker_fn, t), 0);
	pthread_join(tid, NULL);
}

static void put_all(swp_entry_t *held, unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < nr; i++)
		assert_int_equal(swap_put_entries_direct(held[i], 1), 0);
}

/*
 * This thread allocates 64 slots in a cluster and frees half: the cluster
 * is on nonfull[0], where the kernel's order sends the next thread's slow
 * path. Another thread must go to a free cluster instead while this one
 * lives. A thread that exits leaves its half-used cluster to the next
 * one, as the kernel would.
 */
static void test_owner_passed_over(void **state)
{
	static swp_entry_t mine[64];
	static struct taker other, gone;
	struct uswap_frame_pool *pool;
	unsigned long my_cluster;
	unsigned int i;
	int type;

	(void)state;
	type = uswap_swapon_mem(BIG, 0);
	assert_true(type >= 0);
	assert_int_equal(uswap_frame_pool_create(16, &pool), 0);
	for (i = 0; i < 64; i++)
		assert_int_equal(test_swap_out_one(pool, 0, &mine[i]), 0);
	my_cluster = cluster_of(mine[0]);
	for (i = 1; i < 64; i++)
		assert_int_equal(cluster_of(mine[i]), my_cluster);
	put_all(mine + 32, 32);

	/* A live thread's cluster is passed over. */
	memset(&other, 0, sizeof(other));
	other.n = 1;
	take_on_thread(&other);
	assert_int_equal(other.nr, 1);
	assert_true(cluster_of(other.held[0]) != my_cluster);
	put_all(other.held, other.nr);

	/* A thread that exited leaves its marked cluster to the next one. */
	memset(&gone, 0, sizeof(gone));
	gone.n = 64;
	gone.drop = 32;
	take_on_thread(&gone);
	assert_int_equal(gone.nr, 32);
	assert_true(cluster_of(gone.held[0]) != my_cluster);
	memset(&other, 0, sizeof(other));
	other.n = 1;
	take_on_thread(&other);
	assert_int_equal(other.nr, 1);
	assert_int_equal(cluster_of(other.held[0]), cluster_of(gone.held[0]));
	put_all(other.held, other.nr);
	put_all(gone.held, gone.nr);
	put_all(mine, 32);
	uswap_frame_pool_destroy(pool);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
}

/*
 * A device of two clusters: this thread holds slots in one and marks it.
 * Another thread still gets every other free slot of the device,
 * including the ones in this thread's cluster: a mark never fails an
 * allocation.
 */
static void test_owner_fallback(void **state)
{
	static swp_entry_t mine[64];
	static struct taker other;
	struct uswap_frame_pool *pool;
	struct uswap_swap_stat st;
	unsigned int i, in_mine = 0;
	int type;

	(void)state;
	type = uswap_swapon_mem(TWO_CLUSTERS, 0);
	assert_true(type >= 0);
	assert_int_equal(uswap_frame_pool_create(16, &pool), 0);
	for (i = 0; i < 64; i++)
		assert_int_equal(test_swap_out_one(pool, 0, &mine[i]), 0);
	put_all(mine + 32, 32);

	memset(&other, 0, sizeof(other));
	take_on_thread(&other);
	assert_int_equal(uswap_swap_stat((unsigned int)type, &st), 0);
	assert_int_equal(other.nr + 32, st.pages);
	assert_int_equal(st.inuse_pages, st.pages);
	for (i = 0; i < other.nr; i++)
		in_mine += cluster_of(other.held[i]) == cluster_of(mine[0]);
	assert_true(in_mine >= 32);
	put_all(other.held, other.nr);
	put_all(mine, 32);
	uswap_frame_pool_destroy(pool);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
}

/* Holds a pin on @type until told to drop it. */
struct pinner {
	unsigned int type;
	_Atomic int state;	/* 0 start, 1 pinned, 2 drop, 3 dropped */
};

static void *pinner_fn(void *arg)
{
	struct pinner *p = arg;
	struct swap_info_struct *si;
	struct timespec ts = { 0, 1000000 };

	assert_int_equal(swap_entry_pin(swp_entry(p->type, 1), &si), 0);
	atomic_store(&p->state, 1);
	while (atomic_load(&p->state) != 2)
		nanosleep(&ts, NULL);
	put_swap_device(si);
	atomic_store(&p->state, 3);
	return NULL;
}

struct offer {
	unsigned int type;
	_Atomic int ret;	/* 1 while swapoff runs */
};

static void *swapoff_fn(void *arg)
{
	struct offer *o = arg;

	atomic_store(&o->ret, uswap_swapoff_type(o->type));
	return NULL;
}

/*
 * Pins taken on one thread and dropped on another balance out; swapoff
 * waits while another thread holds a pin, returns once it is dropped,
 * and pins fail from then on. Swapped on again, the type pins again.
 */
static void test_pin_swapoff(void **state)
{
	struct swap_info_struct *si, *pinned[8];
	struct timespec ts = { 0, 50000000 };
	struct pinner p = { 0 };
	struct offer o = { 0 };
	pthread_t pt, ot;
	unsigned int i;
	int type;

	(void)state;
	type = uswap_swapon_mem(BIG, 0);
	assert_true(type >= 0);
	si = atomic_load(&swap_info[type]);
	for (i = 0; i < 8; i++)
		assert_int_equal(swap_entry_pin(swp_entry((unsigned int)type, 1), &pinned[i]), 0);

	p.type = (unsigned int)type;
	assert_int_equal(pthread_create(&pt, NULL, pinner_fn, &p), 0);
	while (atomic_load(&p.state) != 1)
		sched_yield();
	/* Dropped here, taken there: only the sum counts. */
	for (i = 0; i < 8; i++)
		put_swap_device(pinned[i]);

	o.type = (unsigned int)type;
	atomic_store(&o.ret, 1);
	assert_int_equal(pthread_create(&ot, NULL, swapoff_fn, &o), 0);
	/* Swapoff gets as far as the pin (every slot closed) and waits. */
	for (i = 0; i < SWAP_PCPU_SLOTS; i++)
		while (!SWAP_PIN_IS_CLOSED(atomic_load(&si->pin_cpu[i].v)))
			sched_yield();
	nanosleep(&ts, NULL);
	assert_int_equal(atomic_load(&o.ret), 1);
	assert_false(swap_device_tryget(si));
	atomic_store(&p.state, 2);
	pthread_join(pt, NULL);
	pthread_join(ot, NULL);
	assert_int_equal(atomic_load(&o.ret), 0);
	assert_int_equal(atomic_load(&si->users), SWAP_USERS_DEAD);
	for (i = 0; i < SWAP_PCPU_SLOTS; i++)
		assert_true(SWAP_PIN_IS_CLOSED(atomic_load(&si->pin_cpu[i].v)));
	assert_int_equal(swap_entry_pin(swp_entry((unsigned int)type, 1), &pinned[0]), -ENODEV);

	/* The same type again: pins work and balance. */
	assert_int_equal(uswap_swapon_mem(BIG, 0), type);
	assert_int_equal(swap_entry_pin(swp_entry((unsigned int)type, 1), &pinned[0]), 0);
	put_swap_device(pinned[0]);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	assert_int_equal(atomic_load(&si->users), SWAP_USERS_DEAD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_owner_passed_over),
		cmocka_unit_test(test_owner_fallback),
		cmocka_unit_test(test_pin_swapoff),
	};

	setenv("USWAP_QUIET", "1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
