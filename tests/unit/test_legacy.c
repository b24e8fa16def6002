/* SPDX-License-Identifier: MIT */
/*
 * The legacy (swap_map) design, one case per transition. On a legacy
 * device uswap_swap_tb_peek() returns the map byte and the exact count:
 *
 *   free 0x00 --folio_alloc_swap-->       0x40 (SWAP_HAS_CACHE, count 0)
 *   0x40|c   --dup / put-->               0x40|c+-1, 62 -> 0xc0 + digit page
 *   0x40|c   --swap_cache_del_folio-->    c (shadow kept in the table), or free
 *   c        --swap_cache_add_folio-->    0x40|c, old shadow returned
 *   1        --swap_put_entries_direct--> free (shadow cleared)
 *   0x41     --put direct while held-->   0x40 until the folio lets go
 *   1 (sync) --uswap_swapin-->            0x41, bypass folio not cached
 */
#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "swaptest.h"

#define SH 0x1235ULL
#define SWAP_MAP_BAD_BYTE 0x3f

static struct uswap_swap_stat swaptest_stat_type(unsigned int type)
{
	struct uswap_swap_stat st;

	assert_int_equal(uswap_swap_stat(type, &st), 0);
	return st;
}

struct lt {
	struct uswap_frame_pool *pool;
	unsigned int type;
	uint64_t max;
};

static int next_prio = 200;

static void lt_init_mem(struct lt *t, uint64_t nr_pages, size_t frames)
{
	int type;

	swaptest_quiet();
	assert_int_equal(uswap_frame_pool_create(frames, &t->pool), 0);
	type = uswap_swapon_mem_design(nr_pages, SWAP_FLAG_PREFER | next_prio++, "legacy");
	assert_true(type >= 0);
	t->type = (unsigned int)type;
	t->max = nr_pages;
}

static void lt_init_zram(struct lt *t, const char *spec, size_t frames)
{
	char err[160] = "";
	struct uswap_swap_stat st;
	int type;

	swaptest_quiet();
	assert_int_equal(uswap_frame_pool_create(frames, &t->pool), 0);
	type = uswap_swapon_spec_design(spec, SWAP_FLAG_PREFER | next_prio++, "legacy", err,
					sizeof(err));
	if (type < 0)
		fail_msg("swapon %s: %d %s", spec, type, err);
	t->type = (unsigned int)type;
	assert_int_equal(uswap_swap_stat(t->type, &st), 0);
	t->max = st.max;
}

static void lt_fini(struct lt *t)
{
	assert_int_equal(uswap_swapoff_type(t->type), 0);
	assert_int_equal(uswap_frame_pool_free_frames(t->pool), uswap_frame_pool_nr_frames(t->pool));
	uswap_frame_pool_destroy(t->pool);
}

static struct uswap_legacy_stat lstat(struct lt *t)
{
	struct uswap_legacy_stat st;

	assert_int_equal(uswap_legacy_stat(t->type, &st), 0);
	return st;
}

#define expect_map(e, byte, count) expect_slot((e), (byte), (count))

static struct folio *cached(struct lt *t, unsigned int order, swp_entry_t *e)
{
	struct folio *f = uswap_folio_alloc(t->pool, order);

	assert_non_null(f);
	folio_mark_uptodate(f);
	folio_lock(f);
	assert_int_equal(folio_alloc_swap(f), 0);
	*e = folio_swap_entry(f);
	assert_int_equal(swp_type(*e), t->type);
	return f;
}

/* A page filled with @fill, written out, @count references, left with @sh. */
static swp_entry_t swapped_out(struct lt *t, int fill, unsigned int count, uint64_t sh)
{
	swp_entry_t e;
	struct folio *f = cached(t, 0, &e);
	unsigned int i;

	memset(folio_address(f), fill, USWAP_PAGE_SIZE);
	folio_mark_uptodate(f);
	for (i = 0; i < count; i++)
		assert_int_equal(folio_dup_swap(f, -1), 0);
	folio_mark_dirty(f);
	assert_int_equal(uswap_swap_writeout(f, true), 0);	/* unlocks */
	folio_lock(f);
	assert_int_equal(uswap_remove_mapping(f, sh), 1);
	expect_map(e, count, count);
	return e;
}

static bool page_is(struct folio *f, int fill)
{
	const unsigned char *p = folio_address(f);
	size_t i;

	for (i = 0; i < USWAP_PAGE_SIZE; i++)
		if (p[i] != (unsigned char)fill)
			return false;
	return true;
}

static void test_transitions(void **state)
{
	struct lt t;
	struct folio *f, *g;
	swp_entry_t e;
	uint64_t shadow = 0;

	(void)state;
	lt_init_mem(&t, 1024, 16);
	expect_map(swp_entry(t.type, 0), SWAP_MAP_BAD_BYTE, -1);
	f = cached(&t, 0, &e);
	expect_map(e, 0x40, 0);
	assert_int_equal(swaptest_stat_type(t.type).inuse_pages, 1);
	assert_int_equal(folio_dup_swap(f, -1), 0);
	expect_map(e, 0x41, 1);
	assert_true(swap_entry_swapped(e));
	assert_true(folio_maybe_swapped(f));
	assert_int_equal(folio_put_swap(f, -1), 0);
	expect_map(e, 0x40, 0);
	assert_false(swap_entry_swapped(e));
	assert_int_equal(folio_dup_swap(f, -1), 0);
	/* cache delete keeps the count, the table keeps the shadow */
	assert_int_equal(swap_cache_del_folio(f, SH), 0);
	assert_false(folio_test_swapcache(f));
	expect_map(e, 0x01, 1);
	assert_int_equal(swap_cache_get_shadow(e), SH);
	assert_null(swap_cache_get_folio(e));
	/* add back: prepare + add, old shadow returned */
	assert_int_equal(swap_cache_add_folio(f, e, &shadow), 0);
	assert_int_equal(shadow, SH);
	expect_map(e, 0x41, 1);
	g = uswap_folio_alloc(t.pool, 0);
	folio_lock(g);
	assert_int_equal(swap_cache_add_folio(g, e, NULL), -EEXIST);
	expect_map(e, 0x41, 1);
	g = (folio_unlock(g), folio_put(g), NULL);
	assert_ptr_equal(swap_cache_get_folio(e), f);
	folio_put(f);
	assert_int_equal(swap_cache_del_folio(f, 0), 0);
	expect_map(e, 0x01, 1);
	assert_int_equal(swap_cache_get_shadow(e), 0);
	folio_unlock(f);
	folio_put(f);
	/* last reference of an uncached slot: free */
	assert_int_equal(swap_put_entries_direct(e, 1), 0);
	expect_map(e, 0, 0);
	assert_int_equal(swaptest_stat_type(t.type).inuse_pages, 0);
	/* count 0 leaves the cache: freed at once (first rule) */
	f = cached(&t, 0, &e);
	assert_int_equal(swap_cache_del_folio(f, SH), 0);
	expect_map(e, 0, 0);
	assert_int_equal(swap_cache_get_shadow(e), 0);
	folio_unlock(f);
	folio_put(f);
	/* second rule: count reaches 0 while cached and held */
	f = cached(&t, 0, &e);
	assert_int_equal(folio_dup_swap(f, -1), 0);
	assert_int_equal(swap_put_entries_direct(e, 1), 0);	/* reclaim can't lock it */
	expect_map(e, 0x40, 0);
	assert_int_equal(folio_free_swap(f), 1);
	expect_map(e, 0, 0);
	assert_true(folio_test_dirty(f));
	folio_unlock(f);
	folio_put(f);
	/* ... and when nobody holds it, the put reclaims the folio */
	f = cached(&t, 0, &e);
	assert_int_equal(folio_dup_swap(f, -1), 0);
	folio_unlock(f);
	assert_int_equal(swap_put_entries_direct(e, 1), 0);
	expect_map(e, 0, 0);
	assert_false(folio_test_swapcache(f));
	folio_put(f);
	/* hibernation */
	e = swap_alloc_hibernation_slot(t.type);
	assert_int_not_equal(e.val, 0);
	expect_map(e, 0x01, 1);
	assert_int_equal(swap_free_hibernation_slot(e), 0);
	expect_map(e, 0, 0);
	/* a large folio */
	f = cached(&t, 2, &e);
	assert_int_equal(swp_offset(e) % 4, 0);
	assert_int_equal(folio_dup_swap(f, 1), 0);
	expect_map(swp_entry(t.type, swp_offset(e) + 1), 0x41, 1);
	expect_map(swp_entry(t.type, swp_offset(e) + 2), 0x40, 0);
	assert_int_equal(swap_cache_del_folio(f, SH), 0);
	expect_map(e, 0, 0);
	expect_map(swp_entry(t.type, swp_offset(e) + 1), 0x01, 1);
	assert_int_equal(swaptest_stat_type(t.type).inuse_pages, 1);
	folio_unlock(f);
	folio_put(f);
	assert_int_equal(swap_put_entries_direct(swp_entry(t.type, swp_offset(e) + 1), 1), 0);
	assert_int_equal(swaptest_stat_type(t.type).inuse_pages, 0);
	lt_fini(&t);
}

static void test_errors_change_nothing(void **state)
{
	struct lt t;
	struct folio *f;
	swp_entry_t e, e2;

	(void)state;
	lt_init_mem(&t, 1024, 16);
	e = swp_entry(t.type, 5);
	assert_int_equal(swap_dup_entry_direct(e), -ENOENT);
	expect_map(e, 0, 0);
	assert_int_equal(swap_put_entries_direct(e, 1), -ENOENT);
	assert_int_equal(swap_dup_entry_direct(swp_entry(t.type, 0)), -EINVAL);
	assert_int_equal(swp_swapcount(swp_entry(t.type, 0)), -EINVAL);
	assert_int_equal(swp_swapcount(swp_entry(t.type, t.max)), -EINVAL);
	assert_false(swap_entry_swapped(swp_entry(t.type, 0)));
	f = cached(&t, 1, &e);
	e2 = swp_entry(t.type, swp_offset(e) + 1);
	/* direct dup of a cached count-0 slot */
	assert_int_equal(swap_dup_entry_direct(e), -ENOENT);
	assert_int_equal(folio_put_swap(f, -1), -ENOENT);
	assert_int_equal(folio_dup_swap(f, 0), 0);
	/* a range whose second slot has no count: nothing changes */
	assert_int_equal(swap_put_entries_direct(e, 2), -ENOENT);
	expect_map(e, 0x41, 1);
	expect_map(e2, 0x40, 0);
	assert_int_equal(folio_put_swap(f, -1), -ENOENT);
	expect_map(e, 0x41, 1);
	assert_int_equal(swap_put_entries_direct(e, 0), -EINVAL);
	assert_int_equal(swap_put_entries_direct(swp_entry(t.type, t.max - 1), 2), -EINVAL);
	assert_int_equal(folio_put_swap(f, 0), 0);
	assert_int_equal(folio_free_swap(f), 1);
	expect_map(e, 0, 0);
	expect_map(e2, 0, 0);
	/* adding to a free slot */
	assert_int_equal(swap_cache_add_folio(f, e, NULL), -ENOENT);
	folio_unlock(f);
	folio_put(f);
	assert_int_equal(swaptest_stat_type(t.type).inuse_pages, 0);
	{
		struct uswap_legacy_stat ls;

		assert_int_equal(uswap_legacy_stat(MAX_SWAPFILES, &ls), -EINVAL);
	}
	assert_int_equal(uswap_swapon_mem_design(1024, 0, "nosuch"), -EINVAL);
	lt_fini(&t);
}

static void test_continuation(void **state)
{
	struct lt t;
	struct folio *f;
	swp_entry_t e;
	struct uswap_swap_stat st0, st1;
	long c;

	(void)state;
	lt_init_mem(&t, 1024, 16);
	f = cached(&t, 0, &e);
	st0 = swaptest_stat_type(t.type);
	for (c = 1; c <= 62; c++)
		assert_int_equal(folio_dup_swap(f, -1), 0);
	expect_map(e, 0x40 | 62, 62);
	assert_int_equal(lstat(&t).nr_cont_pages, 0);
	/* 63: the byte wraps to 0 with COUNT_CONTINUED, one digit page */
	assert_int_equal(folio_dup_swap(f, -1), 0);
	expect_map(e, 0x40 | 0x80, 63);
	assert_int_equal(lstat(&t).nr_cont_pages, 1);
	st1 = swaptest_stat_type(t.type);
	assert_int_equal(st1.dynamic_bytes - st0.dynamic_bytes, 4096 + sizeof(void *));
	assert_int_equal(lstat(&t).cont_bytes, 4096 + sizeof(void *));
	assert_int_equal(st1.static_bytes, st0.static_bytes);
	for (c = 64; c < 63 * 128; c++)
		assert_int_equal(folio_dup_swap(f, -1), 0);
	assert_int_equal(swp_swapcount(e), 63 * 128 - 1);
	expect_map(e, 0x40 | 0x80 | 62, 63 * 128 - 1);
	assert_int_equal(lstat(&t).nr_cont_pages, 1);
	/* 63 + 63 * 127 + 62 + 1 = 63 * 128: a second digit page */
	assert_int_equal(folio_dup_swap(f, -1), 0);
	assert_int_equal(swp_swapcount(e), 63 * 128);
	expect_map(e, 0x40 | 0x80, 63 * 128);
	assert_int_equal(lstat(&t).nr_cont_pages, 2);
	/* leave the cache: the count stays, direct dups go on */
	assert_int_equal(swap_cache_del_folio(f, SH), 0);
	folio_unlock(f);
	folio_put(f);
	expect_map(e, 0x80, 63 * 128);
	assert_int_equal(swap_dup_entry_direct(e), 0);
	assert_int_equal(swp_swapcount(e), 63 * 128 + 1);
	/* and back down, borrowing from the digits */
	for (c = 63 * 128 + 1; c > 63; c--) {
		assert_int_equal(swap_put_entries_direct(e, 1), 0);
		if (c - 1 == 63 * 128 - 1)
			expect_map(e, 0x80 | 62, c - 1);
	}
	expect_map(e, 0x80, 63);
	assert_int_equal(swap_put_entries_direct(e, 1), 0);
	expect_map(e, 62, 62);	/* COUNT_CONTINUED gone */
	for (c = 62; c > 0; c--)
		assert_int_equal(swap_put_entries_direct(e, 1), 0);
	expect_map(e, 0, 0);
	assert_int_equal(swap_cache_get_shadow(e), 0);
	/* pages stay until swapoff, as in the kernel */
	assert_int_equal(lstat(&t).nr_cont_pages, 2);
	assert_int_equal(swaptest_stat_type(t.type).inuse_pages, 0);
	lt_fini(&t);
}

static void test_metadata(void **state)
{
	struct lt t;
	struct uswap_swap_stat lst, tst;
	int ttype;

	(void)state;
	lt_init_mem(&t, 5000, 16);
	ttype = uswap_swapon_mem_design(5000, 0, "table");
	assert_true(ttype >= 0);
	lst = swaptest_stat_type(t.type);
	tst = swaptest_stat_type((unsigned int)ttype);
	/* cluster array + per slot: the map byte, the swap_cgroup id (2
	 * bytes) and the zeromap bit (in 64-bit words) */
	assert_int_equal(lst.static_bytes, tst.static_bytes + 5000 + 2 * 5000 + (5000 + 63) / 64 * 8);
	assert_int_equal(lstat(&t).swap_cgroup_bytes, 2 * 5000);
	assert_int_equal(lstat(&t).zeromap_bytes, (5000 + 63) / 64 * 8);
	assert_int_equal(lst.dynamic_bytes, tst.dynamic_bytes);
	assert_int_equal(lstat(&t).map_bytes, 5000);
	assert_int_equal(uswap_swapoff_type((unsigned int)ttype), 0);
	{
		struct uswap_legacy_stat ls;

		/* a table device has no legacy figures */
		ttype = uswap_swapon_mem_design(1024, 0, NULL);
		assert_true(ttype >= 0);
		assert_int_equal(uswap_legacy_stat((unsigned int)ttype, &ls), -EINVAL);
		assert_int_equal(uswap_swapoff_type((unsigned int)ttype), 0);
	}
	lt_fini(&t);
}

/* Bypass on a synchronous device: count 1, not cached, freed after use. */
static void test_bypass(void **state)
{
	struct uswap_swapin_info info = { 0 };
	struct lt t;
	struct folio *f, *g;
	swp_entry_t e;

	(void)state;
	lt_init_zram(&t, "zram:4M", 32);
	e = swapped_out(&t, 0x5a, 1, SH);
	assert_int_equal(swap_cache_get_shadow(e), SH);
	assert_int_equal(uswap_swapin(e, t.pool, 1, &f, &info), 0);
	assert_true(info.major);
	assert_int_equal(info.shadow, SH);
	assert_int_equal(info.ra_pages, 0);
	assert_false(folio_test_swapcache(f));
	assert_null(swap_cache_get_folio(e));
	expect_map(e, 0x41, 1);
	assert_int_equal(lstat(&t).bypass_swapins, 1);
	/* a second reader finds the bit lock taken: -EAGAIN after a jiffy */
	assert_int_equal(uswap_swapin(e, t.pool, 1, &g, NULL), -EAGAIN);
	assert_int_equal(lstat(&t).bypass_retries, 1);
	assert_int_equal(uswap_swapin_lock(f, e), 0);
	/* it holds its slot: no second set of slots for it */
	assert_int_equal(folio_alloc_swap(f), -EINVAL);
	expect_map(e, 0x41, 1);
	assert_true(page_is(f, 0x5a));
	assert_true(folio_matches_swap_entry(f, e));
	assert_int_equal(folio_put_swap(f, 0), 0);
	expect_map(e, 0x40, 0);
	assert_int_equal(folio_free_swap(f), 1);
	expect_map(e, 0, 0);
	assert_int_equal(swap_cache_get_shadow(e), 0);
	assert_false(folio_matches_swap_entry(f, e));
	folio_unlock(f);
	folio_put(f);
	/* the error path: free_swap without the put keeps the count */
	e = swapped_out(&t, 0x33, 1, 0);
	assert_int_equal(uswap_swapin(e, t.pool, 1, &f, NULL), 0);
	assert_int_equal(uswap_swapin_lock(f, e), 0);
	assert_int_equal(folio_free_swap(f), 1);
	expect_map(e, 0x01, 1);
	folio_unlock(f);
	folio_put(f);
	assert_int_equal(swap_put_entries_direct(e, 1), 0);
	assert_int_equal(swaptest_stat_type(t.type).inuse_pages, 0);
	lt_fini(&t);
}

/* Count 2 on a synchronous device goes through the cache, with readahead. */
static void test_cache_readahead(void **state)
{
	struct lt t;
	swp_entry_t e[8];
	unsigned int i, ra = 0;

	(void)state;
	lt_init_zram(&t, "zram:4M", 64);
	for (i = 0; i < 8; i++) {
		e[i] = swapped_out(&t, 0x10 + (int)i, 2, SH);
		if (i)
			assert_int_equal(swp_offset(e[i]), swp_offset(e[0]) + i);
	}
	for (i = 0; i < 8; i++) {
		struct folio *ra_f[USWAP_SWAPIN_RA_MAX];
		struct uswap_swapin_info info = { .ra_folios = ra_f };
		struct folio *f;
		unsigned int j;

		assert_int_equal(uswap_swapin(e[i], t.pool, 1, &f, &info), 0);
		for (j = 0; j < info.ra_pages; j++)
			folio_put(ra_f[j]);
		ra += info.ra_pages;
		assert_int_equal(uswap_swapin_lock(f, e[i]), 0);
		assert_true(folio_test_swapcache(f));
		assert_true(page_is(f, 0x10 + (int)i));
		expect_map(e[i], 0x42, 2);
		assert_int_equal(folio_put_swap(f, 0), 0);
		assert_int_equal(folio_free_swap(f), 0);	/* count 1 left */
		expect_map(e[i], 0x41, 1);
		folio_unlock(f);
		folio_put(f);
	}
	assert_true(ra > 0);
	assert_int_equal(lstat(&t).bypass_swapins, 0);
	for (i = 0; i < 8; i++) {
		assert_int_equal(swap_put_entries_direct(e[i], 1), 0);
		expect_map(e[i], 0, 0);	/* unmapped cached folio reclaimed */
	}
	assert_int_equal(swaptest_stat_type(t.type).inuse_pages, 0);
	lt_fini(&t);
}

struct racer {
	struct lt *t;
	swp_entry_t e;
	atomic_int eagain;
	bool ok;
};

/* The second reader: retries while the first holds SWAP_HAS_CACHE. */
static void *bypass_racer(void *arg)
{
	struct racer *r = arg;
	struct folio *f;
	int err;

	while ((err = uswap_swapin(r->e, r->t->pool, 1, &f, NULL)) == -EAGAIN)
		atomic_fetch_add(&r->eagain, 1);
	if (err)
		return NULL;
	if (uswap_swapin_lock(f, r->e))
		return NULL;
	r->ok = page_is(f, 0x77);
	folio_free_swap(f);
	folio_unlock(f);
	folio_put(f);
	return NULL;
}

/*
 * Two bypass reads of one slot: the first holds the SWAP_HAS_CACHE bit lock
 * until the second has been refused at least once (-EAGAIN), whatever the
 * scheduling, then gives it back as an error path does.
 */
static void test_bypass_race(void **state)
{
	struct lt t;
	struct racer r;
	struct folio *f;
	pthread_t th;
	swp_entry_t e;

	(void)state;
	lt_init_zram(&t, "zram:4M", 32);
	e = swapped_out(&t, 0x77, 1, 0);
	r = (struct racer){ .t = &t, .e = e };
	atomic_init(&r.eagain, 0);
	assert_int_equal(uswap_swapin(e, t.pool, 1, &f, NULL), 0);
	assert_int_equal(uswap_swapin_lock(f, e), 0);
	assert_true(page_is(f, 0x77));
	assert_int_equal(pthread_create(&th, NULL, bypass_racer, &r), 0);
	while (atomic_load(&r.eagain) < 1)
		usleep(100);
	folio_free_swap(f);
	folio_unlock(f);
	folio_put(f);
	pthread_join(th, NULL);
	assert_true(r.ok);
	assert_true(lstat(&t).bypass_retries >= 1);
	assert_int_equal(lstat(&t).bypass_swapins, 2);
	expect_map(e, 0x01, 1);
	assert_int_equal(swap_put_entries_direct(e, 1), 0);
	lt_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transitions),
		cmocka_unit_test(test_errors_change_nothing),
		cmocka_unit_test(test_continuation),
		cmocka_unit_test(test_metadata),
		cmocka_unit_test(test_bypass),
		cmocka_unit_test(test_cache_readahead),
		cmocka_unit_test(test_bypass_race),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
