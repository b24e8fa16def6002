/* SPDX-License-Identifier: MIT */
/*
 * The device worker (the kernel's discard_work and reclaim_work) and
 * what the allocator does without it: emptied clusters are discarded by
 * the worker, not by allocations that can be served elsewhere; an order-0
 * allocation that finds nothing discards the waiting clusters itself; a
 * cluster that an allocator empties while it holds it is discarded too; a
 * device that fills up while swap is more than half used gets its
 * cache-only slots reclaimed in the background; and
 * __try_to_reclaim_swap()'s return values.
 *
 * Waits on the worker are waits for a condition with a generous deadline,
 * never a sleep standing in for an ordering.
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
#include <time.h>
#include <unistd.h>

#include <uswap/legacy.h>
#include "swaptest.h"
#include "swap/swap_header.h"
#include "swap/swap_internal.h"

#define DEADLINE_SECS 60


static void make_file(const char *path, uint32_t pages)
{
	static const uint8_t uuid[16] = { 1, 2, 3, 4, 5, 6, 0x47, 8, 0x89, 10, 11, 12, 13, 14, 15, 16 };
	void *page = aligned_alloc(4096, 4096);
	int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);

	assert_true(fd >= 0);
	assert_int_equal(uswap_swap_header_build(page, pages - 1, NULL, 0, uuid, "w"), 0);
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

/* A locked folio: out of the swap cache and gone. */
static void drop_folio(struct folio *f)
{
	if (folio_test_swapcache(f))
		assert_int_equal(folio_free_swap(f), 1);
	folio_unlock(f);
	folio_put(f);
}

static uint64_t offset_of(struct folio *f)
{
	return swp_offset(folio_swap_entry(f));
}

/* Allocate @n folios on @type, all in one cluster. Return: its index. */
static uint64_t fill_cluster(struct uswap_frame_pool *pool, struct folio **f, int n, int type)
{
	uint64_t c = UINT64_MAX;
	int i;

	for (i = 0; i < n; i++) {
		f[i] = new_folio(pool);
		assert_int_equal(folio_alloc_swap(f[i]), 0);
		assert_int_equal(swp_type(folio_swap_entry(f[i])), (unsigned int)type);
		if (!i)
			c = offset_of(f[i]) / SWAPFILE_CLUSTER;
		assert_int_equal(offset_of(f[i]) / SWAPFILE_CLUSTER, c);
	}
	return c;
}

static uint8_t cluster_flags(struct swap_info_struct *si, uint64_t c)
{
	struct swap_cluster_info *ci = &si->cluster_info[c];
	uint8_t fl;

	uswap_spin_lock(&ci->lock);
	fl = ci->flags;
	uswap_spin_unlock(&ci->lock);
	return fl;
}

/* ---- a discard hook that records who discards what, and can hold the worker ---- */

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t main;
	bool hold_worker;		/* the worker waits in the hook while set */
	bool worker_in;			/* the worker is waiting in the hook */
	int worker_calls, main_calls;
	uint64_t worker_off[8], main_off[8];
} hk = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static int hook_discard(struct swap_info_struct *si, uint64_t offset, uint64_t nr)
{
	(void)si;
	assert_int_equal(nr, SWAPFILE_CLUSTER);
	pthread_mutex_lock(&hk.lock);
	if (pthread_equal(pthread_self(), hk.main)) {
		if (hk.main_calls < 8)
			hk.main_off[hk.main_calls] = offset;
		hk.main_calls++;
	} else {
		if (hk.worker_calls < 8)
			hk.worker_off[hk.worker_calls] = offset;
		hk.worker_calls++;
		hk.worker_in = true;
		pthread_cond_broadcast(&hk.cond);
		while (hk.hold_worker)
			pthread_cond_wait(&hk.cond, &hk.lock);
		hk.worker_in = false;
	}
	pthread_mutex_unlock(&hk.lock);
	return 0;
}

static void hook_reset(bool hold)
{
	pthread_mutex_lock(&hk.lock);
	hk.main = pthread_self();
	hk.hold_worker = hold;
	hk.worker_in = false;
	hk.worker_calls = hk.main_calls = 0;
	pthread_mutex_unlock(&hk.lock);
}

static void hook_release_worker(void)
{
	pthread_mutex_lock(&hk.lock);
	hk.hold_worker = false;
	pthread_cond_broadcast(&hk.cond);
	pthread_mutex_unlock(&hk.lock);
}

/* Wait until the worker has discarded @n clusters (it may be held in the
 * hook on the last). Return: whether it did within the deadline. */
static bool wait_worker_calls(int n)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += DEADLINE_SECS;
	pthread_mutex_lock(&hk.lock);
	while (hk.worker_calls < n)
		if (pthread_cond_timedwait(&hk.cond, &hk.lock, &ts))
			break;
	n = hk.worker_calls >= n;
	pthread_mutex_unlock(&hk.lock);
	return n;
}

/* Poll a condition the worker brings about, up to the deadline. */
static bool wait_until(bool (*cond)(void *), void *arg)
{
	struct timespec step = { 0, 1000000 }, now, end;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += DEADLINE_SECS;
	for (;;) {
		if (cond(arg))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec > end.tv_nsec))
			return false;
		nanosleep(&step, NULL);
	}
}

struct cluster_ref {
	struct swap_info_struct *si;
	uint64_t c;
};

static bool cluster_is_free(void *arg)
{
	struct cluster_ref *r = arg;

	return cluster_flags(r->si, r->c) == CLUSTER_FLAG_FREE;
}

static int swapon_discard_file(const char *name, uint32_t pages, struct swap_info_struct **sip)
{
	char path[256];
	int type;

	swaptest_path(path, name);
	make_file(path, pages);
	type = uswap_swapon(path, SWAP_FLAG_PREFER | 500 | SWAP_FLAG_DISCARD |
				  SWAP_FLAG_DISCARD_PAGES);
	assert_true(type >= 0);
	unlink(path);	/* the backend keeps it open */
	*sip = atomic_load(&swap_info[type]);
	assert_non_null(*sip);
	assert_true(atomic_load(&(*sip)->flags) & SWP_PAGE_DISCARD);
	/* Before any cluster empties: the worker reads it after being woken. */
	(*sip)->discard = hook_discard;
	return type;
}

/* An emptied cluster is discarded by the worker, then freed; the thread
 * that emptied it does not discard. */
static void test_discard_async(void **state)
{
	static struct folio *f[SWAPFILE_CLUSTER];
	struct uswap_frame_pool *pool;
	struct swap_info_struct *si;
	struct cluster_ref r;
	int type, i;

	(void)state;
	hook_reset(false);
	assert_int_equal(uswap_frame_pool_create(2048, &pool), 0);
	type = swapon_discard_file("async", 1536, &si);
	r.si = si;
	r.c = fill_cluster(pool, f, SWAPFILE_CLUSTER, type);
	for (i = 0; i < SWAPFILE_CLUSTER; i++)
		drop_folio(f[i]);
	if (!wait_worker_calls(1))
		fail_msg("no discard from the worker within %d s", DEADLINE_SECS);
	assert_true(wait_until(cluster_is_free, &r));
	pthread_mutex_lock(&hk.lock);
	assert_int_equal(hk.worker_off[0], r.c * SWAPFILE_CLUSTER);
	assert_int_equal(hk.main_calls, 0);
	pthread_mutex_unlock(&hk.lock);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	uswap_frame_pool_destroy(pool);
}

/*
 * With the worker held in a discard: allocations that find room do not
 * discard, though a cluster waits on the discard list; a cluster that the
 * allocator empties while it holds it (full of cache-only slots, reclaimed
 * because swap is more than half used) waits for discard like any other;
 * and the order-0 allocation that then finds nothing discards the waiting
 * clusters itself and is served from them.
 */
static void test_discard_sync_fallback(void **state)
{
	static struct folio *x[SWAPFILE_CLUSTER], *z[SWAPFILE_CLUSTER], *rc[SWAPFILE_CLUSTER];
	static struct folio *lk[2 * SWAPFILE_CLUSTER];
	struct uswap_frame_pool *pool;
	struct swap_info_struct *si;
	struct folio *last;
	struct cluster_ref xr;
	uint64_t cx, cz, cr, c4;
	int type, i, n;

	(void)state;
	hook_reset(true);
	assert_int_equal(uswap_frame_pool_create(4096, &pool), 0);
	/* Clusters: 0 (511 slots past the header), 1, 2, 3, 4. */
	type = swapon_discard_file("sync", 2560, &si);

	/* X: emptied, taken by the worker, which is held in the hook. */
	cx = fill_cluster(pool, x, SWAPFILE_CLUSTER, type);
	for (i = 0; i < SWAPFILE_CLUSTER; i++)
		drop_folio(x[i]);
	if (!wait_worker_calls(1))
		fail_msg("no discard from the worker within %d s", DEADLINE_SECS);
	/* Z: emptied, waits on the discard list. */
	cz = fill_cluster(pool, z, SWAPFILE_CLUSTER, type);
	for (i = 0; i < SWAPFILE_CLUSTER; i++)
		drop_folio(z[i]);

	/* R: full of cache-only slots nobody holds locked. */
	cr = fill_cluster(pool, rc, SWAPFILE_CLUSTER, type);
	for (i = 0; i < SWAPFILE_CLUSTER; i++)
		folio_unlock(rc[i]);
	pthread_mutex_lock(&hk.lock);
	assert_int_equal(hk.main_calls, 0);	/* there was room: no discard here */
	pthread_mutex_unlock(&hk.lock);
	/* Everything else, locked. */
	c4 = fill_cluster(pool, lk, SWAPFILE_CLUSTER, type);
	for (n = SWAPFILE_CLUSTER; n < 2 * SWAPFILE_CLUSTER - 1; n++) {
		lk[n] = new_folio(pool);
		assert_int_equal(folio_alloc_swap(lk[n]), 0);
		assert_int_equal(offset_of(lk[n]) / SWAPFILE_CLUSTER, 0);
	}
	assert_true(cx != cz && cx != cr && cx != c4 && cz != cr && cz != c4 && cr != c4);
	assert_true(uswap_vm_swap_full());
	pthread_mutex_lock(&hk.lock);
	assert_int_equal(hk.main_calls, 0);
	pthread_mutex_unlock(&hk.lock);

	/*
	 * No free slot but in X, which the worker holds, and Z, waiting: the
	 * allocator reclaims R (the first full cluster) while it holds it, R
	 * joins Z on the discard list, nothing else is found, and the
	 * allocation discards Z and R and takes a slot of the first.
	 */
	last = new_folio(pool);
	assert_int_equal(folio_alloc_swap(last), 0);
	assert_int_equal(offset_of(last) / SWAPFILE_CLUSTER, cz);
	pthread_mutex_lock(&hk.lock);
	assert_int_equal(hk.main_calls, 2);
	assert_int_equal(hk.main_off[0], cz * SWAPFILE_CLUSTER);
	assert_int_equal(hk.main_off[1], cr * SWAPFILE_CLUSTER);
	pthread_mutex_unlock(&hk.lock);
	for (i = 0; i < SWAPFILE_CLUSTER; i++)
		assert_false(folio_test_swapcache(rc[i]));

	hook_release_worker();
	xr = (struct cluster_ref){ si, cx };
	assert_true(wait_until(cluster_is_free, &xr));
	drop_folio(last);
	for (i = 0; i < n; i++)
		drop_folio(lk[i]);
	for (i = 0; i < SWAPFILE_CLUSTER; i++)
		folio_put(rc[i]);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	uswap_frame_pool_destroy(pool);
}

static bool device_below(void *arg)
{
	struct swap_info_struct *si = arg;

	return swap_inuse_pages(si) < (long)si->pages;
}

/*
 * A device that fills up while more than half of swap is used: the worker
 * frees the cache-only slots of as many full clusters as the device has
 * clusters' worth in use (here one), with no allocation asking for it.
 */
static void test_reclaim_work(void **state)
{
	static struct folio *f[1023];
	struct uswap_frame_pool *pool;
	struct swap_info_struct *si;
	long inuse;
	int type, i, gone = 0;

	(void)state;
	assert_int_equal(uswap_frame_pool_create(2048, &pool), 0);
	type = uswap_swapon_mem(1024, SWAP_FLAG_PREFER | 600);
	assert_true(type >= 0);
	si = atomic_load(&swap_info[type]);
	for (i = 0; i < 1023; i++) {
		f[i] = new_folio(pool);
		assert_int_equal(folio_alloc_swap(f[i]), 0);
		assert_int_equal(swp_type(folio_swap_entry(f[i])), (unsigned int)type);
		folio_unlock(f[i]);
	}
	if (!wait_until(device_below, si))
		fail_msg("no background reclaim within %d s", DEADLINE_SECS);
	swap_flush_work(si);
	inuse = swap_inuse_pages(si);
	/* One full cluster reclaimed: 511 (the header's) or 512 slots. */
	assert_true(inuse == 1023 - 511 || inuse == 1023 - 512);
	for (i = 0; i < 1023; i++)
		gone += !folio_test_swapcache(f[i]);
	assert_int_equal(gone, 1023 - inuse);
	for (i = 0; i < 1023; i++) {
		folio_lock(f[i]);
		drop_folio(f[i]);
	}
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	uswap_frame_pool_destroy(pool);
}

/*
 * A design's try_reclaim (__try_to_reclaim_swap() on a table device,
 * legacy_try_reclaim() on a legacy one) returns what the kernel's does: the folio's
 * pages when it freed them, minus that when a folio is cached there but
 * stays (locked elsewhere, or still referenced), 0 when none is cached.
 * Both designs.
 */
static void try_to_reclaim_values(const char *design)
{
	struct uswap_frame_pool *pool;
	struct swap_info_struct *si;
	struct folio *f, *g;
	uint64_t off;
	int type;

	assert_int_equal(uswap_frame_pool_create(64, &pool), 0);
	type = uswap_swapon_mem_design(1024, SWAP_FLAG_PREFER | 700, design);
	assert_true(type >= 0);
	/* The ops run pinned, as their callers hold the device. */
	si = get_swap_device(swp_entry((unsigned int)type, 0));
	assert_non_null(si);
	f = new_folio(pool);
	assert_int_equal(folio_alloc_swap(f), 0);
	off = offset_of(f);
	/* Nothing cached at a free slot. */
	assert_int_equal(si->design->try_reclaim(si, off + 1, true), 0);
	/* Cached, count 0, but locked (by us). */
	assert_int_equal(si->design->try_reclaim(si, off, true), -1);
	/* Cached and unlocked, but referenced by a swap entry. */
	assert_int_equal(folio_dup_swap(f, -1), 0);
	folio_unlock(f);
	assert_int_equal(si->design->try_reclaim(si, off, true), -1);
	assert_true(folio_test_swapcache(f));
	folio_lock(f);
	assert_int_equal(folio_put_swap(f, -1), 0);
	folio_unlock(f);
	/* Cached only: freed. */
	assert_int_equal(si->design->try_reclaim(si, off, true), 1);
	assert_false(folio_test_swapcache(f));
	assert_int_equal(si->design->try_reclaim(si, off, true), 0);
	folio_put(f);

	/* A large folio: its page count, from any of its slots. */
	g = uswap_folio_alloc(pool, 2);
	assert_non_null(g);
	folio_mark_uptodate(g);
	folio_lock(g);
	assert_int_equal(folio_alloc_swap(g), 0);
	off = offset_of(g);
	assert_int_equal(si->design->try_reclaim(si, off + 2, true), -4);
	folio_unlock(g);
	assert_int_equal(si->design->try_reclaim(si, off + 3, true), 4);
	folio_put(g);
	put_swap_device(si);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	uswap_frame_pool_destroy(pool);
}

static void test_try_to_reclaim_values(void **state)
{
	(void)state;
	try_to_reclaim_values("table");
	try_to_reclaim_values("legacy");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_discard_async),
		cmocka_unit_test(test_discard_sync_fallback),
		cmocka_unit_test(test_reclaim_work),
		cmocka_unit_test(test_try_to_reclaim_values),
	};

	setenv("USWAP_QUIET", "1", 1);
	return cmocka_run_group_tests(tests, swaptest_dir_setup, swaptest_dir_teardown);
}
