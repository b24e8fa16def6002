/* SPDX-License-Identifier: MIT */
/*
 * Every transition of a slot's table entry, one case each: the raw entry
 * and exact count before and after (uswap_swap_tb_peek), and the error of
 * every call that must refuse, with nothing changed.
 *
 *   free   --folio_alloc_swap-->            PFN count 0
 *   PFN c  --folio_dup_swap / _put_swap-->  PFN c+1 / c-1 (slot stays at 0)
 *   PFN c  --swap_cache_del_folio-->        shadow c   (c > 0)
 *   PFN 0  --swap_cache_del_folio-->        free       (first freeing rule)
 *   shadow --swap_cache_add_folio-->        PFN c, old shadow returned
 *   shadow 1 --swap_put_entries_direct-->   free
 *   PFN 1  --swap_put_entries_direct-->     PFN 0 while we hold the folio
 *                                           (second freeing rule)
 *   free   --hibernation alloc-->           shadow 0, count 1 --free--> free
 */
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "swaptest.h"

#define SHADOW 0x1235ULL	/* bit 0 set, no count bits */

static uint64_t nr_inuse(struct swaptest *t)
{
	return swaptest_stat(t).inuse_pages;
}

/* A locked order-@order folio put in the swap cache; its first entry. */
static struct folio *cached_folio(struct swaptest *t, unsigned int order, swp_entry_t *e)
{
	struct folio *f = swaptest_folio(t, order, true);

	assert_int_equal(folio_alloc_swap(f), 0);
	*e = folio_swap_entry(f);
	assert_int_equal(swp_type(*e), t->type);
	return f;
}

/* An order-0 slot swapped out with @count references and shadow @sh. */
static swp_entry_t swapped_out(struct swaptest *t, unsigned int count, uint64_t sh)
{
	swp_entry_t e;
	struct folio *f = cached_folio(t, 0, &e);
	unsigned int i;

	for (i = 0; i < count; i++)
		assert_int_equal(folio_dup_swap(f, -1), 0);
	assert_int_equal(swap_cache_del_folio(f, sh), 0);
	swaptest_folio_done(f);
	expect_shadow(e, sh, count);
	return e;
}

static void test_free_to_pfn(void **state)
{
	struct swaptest t;
	struct folio *f;
	swp_entry_t e;
	uint64_t o;

	(void)state;
	swaptest_init(&t, 1024, 64);
	for (o = 1; o < t.max; o++)
		expect_free(swaptest_entry(&t, o));
	f = swaptest_folio(&t, 0, true);
	assert_int_equal(folio_ref_count(f), 1);
	assert_int_equal(folio_alloc_swap(f), 0);
	e = folio_swap_entry(f);
	assert_int_not_equal(swp_offset(e), 0);
	assert_true(swp_offset(e) < t.max);
	assert_true(folio_test_swapcache(f));
	assert_int_equal(folio_ref_count(f), 2);	/* the cache's reference */
	expect_pfn(e, f, 0);
	assert_int_equal(swp_swapcount(e), 0);
	assert_int_equal(nr_inuse(&t), 1);
	assert_true(folio_matches_swap_entry(f, e));

	assert_int_equal(swap_cache_del_folio(f, 0), 0);
	expect_free(e);
	swaptest_folio_done(f);
	swaptest_fini(&t);
}

static void test_pfn_dup_put(void **state)
{
	struct swaptest t;
	struct folio *f;
	swp_entry_t e;

	(void)state;
	swaptest_init(&t, 1024, 64);
	f = cached_folio(&t, 0, &e);
	assert_int_equal(folio_dup_swap(f, -1), 0);
	expect_pfn(e, f, 1);
	assert_int_equal(folio_put_swap(f, -1), 0);
	expect_pfn(e, f, 0);			/* the cache pins it */
	assert_int_equal(nr_inuse(&t), 1);
	assert_true(folio_test_swapcache(f));
	/* subpage 0 of an order-0 folio is the folio */
	assert_int_equal(folio_dup_swap(f, 0), 0);
	expect_pfn(e, f, 1);
	assert_int_equal(folio_put_swap(f, 0), 0);
	expect_pfn(e, f, 0);
	assert_int_equal(folio_free_swap(f), 1);
	expect_free(e);
	swaptest_folio_done(f);
	swaptest_fini(&t);
}

static void test_pfn_to_shadow(void **state)
{
	struct swaptest t;
	struct folio *f;
	swp_entry_t e;

	(void)state;
	swaptest_init(&t, 1024, 64);
	f = cached_folio(&t, 0, &e);
	assert_int_equal(folio_dup_swap(f, -1), 0);
	assert_int_equal(folio_dup_swap(f, -1), 0);
	expect_pfn(e, f, 2);
	assert_int_equal(swap_cache_del_folio(f, SHADOW), 0);
	expect_shadow(e, SHADOW, 2);
	assert_int_equal(swap_cache_get_shadow(e), SHADOW);
	assert_false(folio_test_swapcache(f));
	assert_int_equal(folio_swap_entry(f).val, 0);
	assert_int_equal(folio_ref_count(f), 1);
	assert_false(folio_matches_swap_entry(f, e));
	assert_int_equal(nr_inuse(&t), 1);
	swaptest_folio_done(f);
	assert_int_equal(swap_put_entries_direct(e, 1), 0);
	expect_shadow(e, SHADOW, 1);
	assert_int_equal(swap_put_entries_direct(e, 1), 0);
	expect_free(e);

	/* A shadow with count bits is refused and changes nothing. */
	f = cached_folio(&t, 0, &e);
	assert_int_equal(folio_dup_swap(f, -1), 0);
	assert_int_equal(swap_cache_del_folio(f, SHADOW | (1ULL << 63)), -EINVAL);
	expect_pfn(e, f, 1);
	/* The empty placeholder: shadow 0 reads back as 0. */
	assert_int_equal(swap_cache_del_folio(f, 0), 0);
	expect_shadow(e, 0, 1);
	assert_int_equal(swap_cache_get_shadow(e), 0);
	swaptest_folio_done(f);
	assert_int_equal(swap_put_entries_direct(e, 1), 0);
	expect_free(e);
	swaptest_fini(&t);
}

/* First freeing rule: a count-0 slot is freed as its folio leaves the cache. */
static void test_pfn0_freed_on_cache_delete(void **state)
{
	struct swaptest t;
	struct folio *f;
	swp_entry_t e;

	(void)state;
	swaptest_init(&t, 1024, 64);
	f = cached_folio(&t, 0, &e);
	expect_pfn(e, f, 0);
	assert_int_equal(swap_cache_del_folio(f, SHADOW), 0);
	expect_free(e);
	assert_int_equal(swap_cache_get_shadow(e), 0);
	assert_int_equal(nr_inuse(&t), 0);
	assert_int_equal(folio_ref_count(f), 1);
	swaptest_folio_done(f);
	swaptest_fini(&t);
}

static void test_shadow_to_pfn(void **state)
{
	struct swaptest t;
	struct folio *f;
	uint64_t sh = 0xdead;
	swp_entry_t e;

	(void)state;
	swaptest_init(&t, 1024, 64);
	e = swapped_out(&t, 3, SHADOW);
	f = swaptest_folio(&t, 0, true);
	assert_int_equal(swap_cache_add_folio(f, e, &sh), 0);
	assert_int_equal(sh, SHADOW);
	assert_true(folio_test_swapcache(f));
	assert_int_equal(folio_swap_entry(f).val, e.val);
	assert_int_equal(folio_ref_count(f), 2);
	expect_pfn(e, f, 3);
	assert_int_equal(swap_cache_get_shadow(e), 0);
	/* Back out with another shadow; in again without asking for it. */
	assert_int_equal(swap_cache_del_folio(f, 0x777), 0);
	expect_shadow(e, 0x777, 3);
	assert_int_equal(swap_cache_add_folio(f, e, NULL), 0);
	expect_pfn(e, f, 3);
	assert_int_equal(swap_cache_del_folio(f, 0), 0);
	expect_shadow(e, 0, 3);
	/* The placeholder shadow comes back as 0. */
	sh = 0xdead;
	assert_int_equal(swap_cache_add_folio(f, e, &sh), 0);
	assert_int_equal(sh, 0);
	assert_int_equal(swap_put_entries_direct(e, 1), 0);
	assert_int_equal(folio_put_swap(f, -1), 0);
	assert_int_equal(folio_put_swap(f, -1), 0);
	expect_pfn(e, f, 0);
	assert_int_equal(folio_free_swap(f), 1);
	assert_true(folio_test_dirty(f));
	expect_free(e);
	swaptest_folio_done(f);
	swaptest_fini(&t);
}

static void test_shadow1_to_free(void **state)
{
	struct swaptest t;
	swp_entry_t e;

	(void)state;
	swaptest_init(&t, 1024, 64);
	e = swapped_out(&t, 1, SHADOW);
	assert_int_equal(nr_inuse(&t), 1);
	assert_int_equal(swap_put_entries_direct(e, 1), 0);
	expect_free(e);
	assert_int_equal(nr_inuse(&t), 0);
	assert_int_equal(swap_put_entries_direct(e, 1), -ENOENT);
	expect_free(e);
	swaptest_fini(&t);
}

/*
 * Second freeing rule: a cached slot whose count reaches 0 stays while we
 * hold its folio locked; folio_free_swap then frees it.
 */
static void test_cached_put_to_zero_stays(void **state)
{
	struct swaptest t;
	struct folio *f;
	swp_entry_t e;

	(void)state;
	swaptest_init(&t, 1024, 64);
	f = cached_folio(&t, 0, &e);
	assert_int_equal(folio_dup_swap(f, -1), 0);
	assert_int_equal(folio_free_swap(f), 0);	/* referenced: kept */
	expect_pfn(e, f, 1);
	assert_int_equal(swap_put_entries_direct(e, 1), 0);
	expect_pfn(e, f, 0);
	assert_true(folio_test_swapcache(f));
	assert_int_equal(nr_inuse(&t), 1);
	assert_false(folio_test_dirty(f));
	assert_int_equal(folio_free_swap(f), 1);
	expect_free(e);
	assert_true(folio_test_dirty(f));
	assert_false(folio_test_swapcache(f));
	assert_int_equal(folio_ref_count(f), 1);
	assert_int_equal(folio_free_swap(f), 0);	/* not cached any more */
	assert_int_equal(nr_inuse(&t), 0);
	swaptest_folio_done(f);
	swaptest_fini(&t);
}

/* An unlocked, unmapped cache-only folio is reclaimed by the last put. */
static void test_cached_put_to_zero_unlocked_reclaimed(void **state)
{
	struct swaptest t;
	struct folio *f;
	swp_entry_t e;

	(void)state;
	swaptest_init(&t, 1024, 64);
	f = cached_folio(&t, 0, &e);
	assert_int_equal(folio_dup_swap(f, -1), 0);
	folio_unlock(f);
	assert_int_equal(swap_put_entries_direct(e, 1), 0);
	expect_free(e);
	assert_false(folio_test_swapcache(f));
	assert_int_equal(folio_ref_count(f), 1);
	assert_int_equal(nr_inuse(&t), 0);
	folio_put(f);
	swaptest_fini(&t);
}

static void test_bad_slot(void **state)
{
	struct swaptest t;
	swp_entry_t e;
	struct folio *f;

	(void)state;
	swaptest_init(&t, 1024, 64);
	e = swaptest_entry(&t, 0);	/* the header */
	expect_bad(e);
	assert_int_equal(swap_dup_entry_direct(e), -EINVAL);
	assert_int_equal(swap_put_entries_direct(e, 1), -EINVAL);
	assert_int_equal(swap_free_hibernation_slot(e), -EINVAL);
	assert_int_equal(swp_swapcount(e), -EINVAL);
	assert_false(swap_entry_swapped(e));
	assert_null(swap_cache_get_folio(e));
	assert_int_equal(swap_cache_get_shadow(e), 0);
	f = swaptest_folio(&t, 0, true);
	assert_int_equal(swap_cache_add_folio(f, e, NULL), -EINVAL);
	assert_false(folio_test_swapcache(f));
	assert_int_equal(folio_ref_count(f), 1);
	expect_bad(e);
	assert_int_equal(nr_inuse(&t), 0);
	swaptest_folio_done(f);
	swaptest_fini(&t);
}

static void test_dup_of_free_or_uncounted(void **state)
{
	struct swaptest t;
	struct folio *f;
	swp_entry_t e, other;

	(void)state;
	swaptest_init(&t, 1024, 64);
	f = cached_folio(&t, 0, &e);
	other = swaptest_entry(&t, swp_offset(e) == 1 ? 2 : 1);
	expect_free(other);
	assert_int_equal(swap_dup_entry_direct(other), -ENOENT);
	expect_free(other);
	/* A count-0 cached slot: only folio_dup_swap may take it from 0. */
	assert_int_equal(swap_dup_entry_direct(e), -ENOENT);
	expect_pfn(e, f, 0);
	assert_int_equal(folio_dup_swap(f, -1), 0);
	assert_int_equal(swap_dup_entry_direct(e), 0);
	expect_pfn(e, f, 2);
	assert_int_equal(folio_put_swap(f, -1), 0);
	assert_int_equal(folio_put_swap(f, -1), 0);
	assert_int_equal(folio_free_swap(f), 1);
	swaptest_folio_done(f);
	assert_int_equal(nr_inuse(&t), 0);
	swaptest_fini(&t);
}

static void test_put_of_zero_count(void **state)
{
	struct swaptest t;
	struct folio *f;
	swp_entry_t e, s;
	unsigned int i;

	(void)state;
	swaptest_init(&t, 1024, 64);
	f = cached_folio(&t, 0, &e);
	assert_int_equal(swap_put_entries_direct(e, 1), -ENOENT);
	assert_int_equal(folio_put_swap(f, -1), -ENOENT);
	assert_int_equal(folio_put_swap(f, 0), -ENOENT);
	assert_int_equal(swap_free_hibernation_slot(e), -ENOENT);
	expect_pfn(e, f, 0);
	assert_true(folio_test_swapcache(f));
	assert_int_equal(folio_free_swap(f), 1);
	swaptest_folio_done(f);
	expect_free(e);
	assert_int_equal(swap_put_entries_direct(e, 1), -ENOENT);
	expect_free(e);

	/* A range with one unreferenced slot in the middle: nothing changes. */
	f = cached_folio(&t, 2, &e);
	for (i = 0; i < 4; i++)
		if (i != 2)
			assert_int_equal(folio_dup_swap(f, i), 0);
	assert_int_equal(folio_put_swap(f, -1), -ENOENT);
	assert_int_equal(swap_put_entries_direct(e, 4), -ENOENT);
	for (i = 0; i < 4; i++)
		expect_pfn(swaptest_entry(&t, swp_offset(e) + i), f, i == 2 ? 0 : 1);
	assert_int_equal(swap_cache_del_folio(f, SHADOW), 0);
	swaptest_folio_done(f);
	s = swaptest_entry(&t, swp_offset(e) + 2);
	expect_free(s);
	assert_int_equal(swap_put_entries_direct(e, 4), -ENOENT);
	for (i = 0; i < 4; i++)
		if (i != 2)
			expect_shadow(swaptest_entry(&t, swp_offset(e) + i), SHADOW, 1);
	assert_int_equal(swap_put_entries_direct(e, 2), 0);
	assert_int_equal(swap_put_entries_direct(swaptest_entry(&t, swp_offset(e) + 3), 1), 0);
	for (i = 0; i < 4; i++)
		expect_free(swaptest_entry(&t, swp_offset(e) + i));
	assert_int_equal(nr_inuse(&t), 0);
	swaptest_fini(&t);
}

static void test_unlocked_folio(void **state)
{
	struct swaptest t;
	struct folio *f, *g;
	swp_entry_t e;

	(void)state;
	swaptest_init(&t, 1024, 64);
	f = swaptest_folio(&t, 0, false);
	assert_int_equal(folio_alloc_swap(f), -EINVAL);
	assert_false(folio_test_swapcache(f));
	assert_int_equal(nr_inuse(&t), 0);
	folio_lock(f);
	assert_int_equal(folio_alloc_swap(f), 0);
	e = folio_swap_entry(f);
	assert_int_equal(folio_dup_swap(f, -1), 0);
	folio_unlock(f);
	assert_int_equal(folio_dup_swap(f, -1), -EINVAL);
	assert_int_equal(folio_put_swap(f, -1), -EINVAL);
	assert_int_equal(folio_free_swap(f), -EINVAL);
	assert_int_equal(swap_cache_del_folio(f, 0), -EINVAL);
	expect_pfn(e, f, 1);
	folio_lock(f);
	assert_int_equal(swap_cache_del_folio(f, SHADOW), 0);
	swaptest_folio_done(f);
	/* swap-in and migration also want locked folios */
	g = swaptest_folio(&t, 0, false);
	assert_int_equal(swap_cache_add_folio(g, e, NULL), -EINVAL);
	assert_false(folio_test_swapcache(g));
	expect_shadow(e, SHADOW, 1);
	folio_lock(g);
	assert_int_equal(swap_cache_add_folio(g, e, NULL), 0);
	f = swaptest_folio(&t, 0, false);
	assert_int_equal(swap_cache_replace_folio(g, f, e), -EINVAL);
	expect_pfn(e, g, 1);
	folio_put(f);
	assert_int_equal(folio_put_swap(g, -1), 0);
	assert_int_equal(folio_free_swap(g), 1);
	swaptest_folio_done(g);
	swaptest_fini(&t);
}

static void test_uncached_folio(void **state)
{
	struct swaptest t;
	struct folio *f, *g;
	swp_entry_t e;

	(void)state;
	swaptest_init(&t, 1024, 64);
	f = swaptest_folio(&t, 0, true);
	assert_int_equal(folio_dup_swap(f, -1), -EINVAL);
	assert_int_equal(folio_put_swap(f, -1), -EINVAL);
	assert_int_equal(swap_cache_del_folio(f, 0), -EINVAL);
	assert_int_equal(folio_free_swap(f), 0);
	assert_false(folio_maybe_swapped(f));
	assert_int_equal(nr_inuse(&t), 0);
	/* Already cached: no second allocation, no second add. */
	assert_int_equal(folio_alloc_swap(f), 0);
	e = folio_swap_entry(f);
	assert_int_equal(folio_alloc_swap(f), -EINVAL);
	assert_int_equal(swap_cache_add_folio(f, e, NULL), -EINVAL);
	assert_int_equal(nr_inuse(&t), 1);
	expect_pfn(e, f, 0);
	/* replace needs an uncached new folio and a cached old one */
	g = swaptest_folio(&t, 0, true);
	assert_int_equal(swap_cache_replace_folio(g, f, e), -EINVAL);
	expect_pfn(e, f, 0);
	assert_int_equal(folio_free_swap(f), 1);
	swaptest_folio_done(f);
	swaptest_folio_done(g);
	swaptest_fini(&t);
}

static void test_out_of_range(void **state)
{
	struct swaptest t;
	swp_entry_t end, far, last;
	struct folio *f;
	uint64_t tb;
	long c;

	(void)state;
	swaptest_init(&t, 1600, 64);	/* tail-masked last cluster */
	end = swaptest_entry(&t, t.max);
	far = swaptest_entry(&t, SWP_OFFSET_MASK);
	last = swaptest_entry(&t, t.max - 1);
	assert_int_equal(uswap_swap_tb_peek(end, &tb, &c), -EINVAL);
	assert_int_equal(uswap_swap_tb_peek(far, &tb, &c), -EINVAL);
	assert_int_equal(swap_dup_entry_direct(end), -EINVAL);
	assert_int_equal(swap_put_entries_direct(end, 1), -EINVAL);
	assert_int_equal(swap_put_entries_direct(far, 1), -EINVAL);
	assert_int_equal(swp_swapcount(end), -EINVAL);
	assert_int_equal(swap_free_hibernation_slot(end), -EINVAL);
	assert_false(swap_entry_swapped(end));
	assert_null(swap_cache_get_folio(end));
	f = swaptest_folio(&t, 0, true);
	assert_int_equal(swap_cache_add_folio(f, end, NULL), -EINVAL);
	folio_unlock(f);
	folio_put(f);
	/* A range that runs past the end, a count that is not a count. */
	expect_free(last);
	assert_int_equal(swap_put_entries_direct(last, 2), -EINVAL);
	assert_int_equal(swap_put_entries_direct(last, 0), -EINVAL);
	assert_int_equal(swap_put_entries_direct(last, -1), -EINVAL);
	/* Type bits beyond MAX_SWAPFILES */
	assert_int_equal(swp_swapcount(swp_entry(MAX_SWAPFILES, 1)), -EINVAL);
	assert_int_equal(swap_dup_entry_direct(swp_entry(31, 1)), -EINVAL);
	/* A subpage past the folio */
	f = cached_folio(&t, 1, &last);
	assert_int_equal(folio_dup_swap(f, 2), -EINVAL);
	assert_int_equal(folio_put_swap(f, 2), -EINVAL);
	expect_pfn(last, f, 0);
	assert_int_equal(swap_cache_del_folio(f, 0), 0);
	swaptest_folio_done(f);
	assert_int_equal(nr_inuse(&t), 0);
	swaptest_fini(&t);
}

static void test_swapped_off_type(void **state)
{
	struct swaptest t;
	struct uswap_swap_stat st;
	struct folio *f;
	swp_entry_t e;
	uint64_t tb;
	long c;
	int type;

	(void)state;
	swaptest_init(&t, 1024, 64);
	type = uswap_swapon_mem(1024, 0);
	assert_true(type >= 0);
	assert_int_not_equal(type, t.type);
	e = swp_entry((unsigned int)type, 5);
	expect_free(e);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), -EINVAL);
	assert_int_equal(uswap_swap_tb_peek(e, &tb, &c), -ENODEV);
	assert_int_equal(swap_dup_entry_direct(e), -ENODEV);
	assert_int_equal(swap_put_entries_direct(e, 1), -ENODEV);
	assert_int_equal(swp_swapcount(e), -ENODEV);
	assert_int_equal(swap_free_hibernation_slot(e), -ENODEV);
	assert_int_equal(uswap_swap_stat((unsigned int)type, &st), -ENODEV);
	assert_false(swap_entry_swapped(e));
	assert_null(swap_cache_get_folio(e));
	assert_int_equal(swap_alloc_hibernation_slot((unsigned int)type).val, 0);
	f = swaptest_folio(&t, 0, true);
	assert_int_equal(swap_cache_add_folio(f, e, NULL), -ENODEV);
	assert_false(folio_test_swapcache(f));
	swaptest_folio_done(f);
	swaptest_fini(&t);
}

static void test_cache_add_errors(void **state)
{
	struct swaptest t;
	struct folio *f, *g, *h;
	swp_entry_t e, fr;
	uint64_t sh = 0x99;

	(void)state;
	swaptest_init(&t, 1024, 64);
	f = cached_folio(&t, 0, &e);
	assert_int_equal(folio_dup_swap(f, -1), 0);
	g = swaptest_folio(&t, 0, true);
	assert_int_equal(swap_cache_add_folio(g, e, &sh), -EEXIST);
	assert_int_equal(sh, 0x99);
	assert_false(folio_test_swapcache(g));
	assert_int_equal(folio_ref_count(g), 1);
	expect_pfn(e, f, 1);
	/* a cached slot with count 0 is still -EEXIST: use that folio */
	assert_int_equal(folio_put_swap(f, -1), 0);
	assert_int_equal(swap_cache_add_folio(g, e, NULL), -EEXIST);
	expect_pfn(e, f, 0);
	fr = swaptest_entry(&t, swp_offset(e) == 1 ? 2 : 1);
	expect_free(fr);
	assert_int_equal(swap_cache_add_folio(g, fr, NULL), -ENOENT);
	expect_free(fr);
	assert_false(folio_test_swapcache(g));
	assert_int_equal(folio_free_swap(f), 1);
	swaptest_folio_done(f);

	/* Large folio: misaligned entry, and a range that is partly free. */
	e = swapped_out(&t, 1, SHADOW);
	h = swaptest_folio(&t, 1, true);
	assert_int_equal(swap_cache_add_folio(h, swaptest_entry(&t, swp_offset(e) | 1), NULL),
			 -EINVAL);
	/* its buddy slot is free, or the header (bad) */
	if ((swp_offset(e) ^ 1) == 0) {
		assert_int_equal(swap_cache_add_folio(h, swaptest_entry(&t, 0), NULL), -EINVAL);
	} else {
		expect_free(swaptest_entry(&t, swp_offset(e) ^ 1));
		assert_int_equal(swap_cache_add_folio(h, swaptest_entry(&t, swp_offset(e) & ~1ULL),
						      NULL), -ENOENT);
	}
	assert_false(folio_test_swapcache(h));
	expect_shadow(e, SHADOW, 1);
	swaptest_folio_done(h);
	assert_int_equal(swap_cache_add_folio(g, e, NULL), 0);
	assert_int_equal(folio_put_swap(g, -1), 0);
	assert_int_equal(folio_free_swap(g), 1);
	swaptest_folio_done(g);
	assert_int_equal(nr_inuse(&t), 0);
	swaptest_fini(&t);
}

static void test_cache_get_folio(void **state)
{
	struct swaptest t;
	struct folio *f, *got;
	swp_entry_t e;

	(void)state;
	swaptest_init(&t, 1024, 64);
	f = cached_folio(&t, 2, &e);
	assert_int_equal(folio_ref_count(f), 1 + 4);
	got = swap_cache_get_folio(swaptest_entry(&t, swp_offset(e) + 3));
	assert_ptr_equal(got, f);
	assert_int_equal(folio_ref_count(f), 1 + 4 + 1);
	assert_true(folio_matches_swap_entry(got, swaptest_entry(&t, swp_offset(e) + 3)));
	assert_false(folio_matches_swap_entry(got, swaptest_entry(&t, swp_offset(e) + 4)));
	folio_put(got);
	assert_int_equal(folio_dup_swap(f, 1), 0);
	assert_int_equal(swap_cache_del_folio(f, SHADOW), 0);
	assert_int_equal(folio_ref_count(f), 1);
	assert_null(swap_cache_get_folio(swaptest_entry(&t, swp_offset(e) + 1)));	/* shadow */
	assert_null(swap_cache_get_folio(e));						/* freed */
	swaptest_folio_done(f);
	assert_int_equal(swap_put_entries_direct(swaptest_entry(&t, swp_offset(e) + 1), 1), 0);
	swaptest_fini(&t);
}

static void test_cache_replace(void **state)
{
	struct swaptest t;
	struct folio *old, *nw, *piece[4];
	swp_entry_t e;
	unsigned int i;

	(void)state;
	swaptest_init(&t, 1024, 64);
	old = cached_folio(&t, 0, &e);
	assert_int_equal(folio_dup_swap(old, -1), 0);
	assert_int_equal(folio_dup_swap(old, -1), 0);
	nw = swaptest_folio(&t, 0, true);
	assert_int_equal(swap_cache_replace_folio(old, nw, e), 0);
	expect_pfn(e, nw, 2);
	assert_false(folio_test_swapcache(old));
	assert_int_equal(folio_ref_count(old), 1);
	assert_true(folio_test_swapcache(nw));
	assert_int_equal(folio_swap_entry(nw).val, e.val);
	assert_int_equal(folio_ref_count(nw), 2);
	assert_ptr_equal(swap_cache_get_folio(e), nw);
	folio_put(nw);
	swaptest_folio_done(old);
	assert_int_equal(folio_put_swap(nw, -1), 0);
	assert_int_equal(folio_put_swap(nw, -1), 0);
	assert_int_equal(folio_free_swap(nw), 1);
	swaptest_folio_done(nw);

	/* A split: an order-2 folio replaced page by page keeps every count. */
	old = cached_folio(&t, 2, &e);
	for (i = 0; i < 4; i++) {
		unsigned int k;

		for (k = 0; k <= i; k++)
			assert_int_equal(folio_dup_swap(old, i), 0);
	}
	for (i = 0; i < 4; i++) {
		swp_entry_t pe = swaptest_entry(&t, swp_offset(e) + i);

		piece[i] = swaptest_folio(&t, 0, true);
		assert_int_equal(swap_cache_replace_folio(old, piece[i], pe), 0);
		expect_pfn(pe, piece[i], i + 1);
		assert_int_equal(folio_test_swapcache(old), i < 3);
	}
	assert_int_equal(folio_ref_count(old), 1);
	swaptest_folio_done(old);
	for (i = 0; i < 4; i++) {
		assert_int_equal(swap_cache_del_folio(piece[i], SHADOW), 0);
		expect_shadow(swaptest_entry(&t, swp_offset(e) + i), SHADOW, i + 1);
		swaptest_folio_done(piece[i]);
	}
	for (i = 0; i < 4; i++) {
		unsigned int k;

		for (k = 0; k <= i; k++)
			assert_int_equal(swap_put_entries_direct(swaptest_entry(&t, swp_offset(e) + i), 1), 0);
	}
	assert_int_equal(nr_inuse(&t), 0);
	swaptest_fini(&t);
}

static void large_folio(unsigned int order)
{
	unsigned long nr = 1UL << order, i;
	struct swaptest t;
	struct folio *f;
	swp_entry_t e;
	uint64_t base;

	swaptest_init(&t, 4096, 2048);
	f = cached_folio(&t, order, &e);
	base = swp_offset(e);
	assert_int_equal(base % nr, 0);
	assert_int_equal(base / SWAPFILE_CLUSTER, (base + nr - 1) / SWAPFILE_CLUSTER);
	assert_int_equal(nr_inuse(&t), nr);
	assert_int_equal(folio_ref_count(f), 1 + (long)nr);
	for (i = 0; i < nr; i++)
		expect_pfn(swaptest_entry(&t, base + i), f, 0);
	/* A folio never ends up over the header slot. */
	assert_int_not_equal(base, 0);
	assert_false(folio_maybe_swapped(f));

	assert_int_equal(folio_dup_swap(f, -1), 0);
	for (i = 0; i < nr; i++)
		expect_pfn(swaptest_entry(&t, base + i), f, 1);
	assert_int_equal(folio_dup_swap(f, (long)nr - 1), 0);
	assert_int_equal(folio_dup_swap(f, 1), 0);
	assert_int_equal(folio_dup_swap(f, 1), 0);
	for (i = 0; i < nr; i++)
		expect_pfn(swaptest_entry(&t, base + i), f,
			   i == 1 ? 3 : i == nr - 1 ? 2 : 1);
	assert_int_equal(folio_put_swap(f, -1), 0);
	for (i = 0; i < nr; i++)
		expect_pfn(swaptest_entry(&t, base + i), f,
			   i == 1 ? 2 : i == nr - 1 ? 1 : 0);
	/* Some pages at 0: a whole-folio put fails and changes nothing. */
	assert_int_equal(folio_put_swap(f, -1), -ENOENT);
	assert_int_equal(folio_put_swap(f, 0), -ENOENT);
	assert_int_equal(folio_put_swap(f, (long)nr), -EINVAL);
	assert_int_equal(folio_dup_swap(f, (long)nr), -EINVAL);
	for (i = 0; i < nr; i++)
		expect_pfn(swaptest_entry(&t, base + i), f,
			   i == 1 ? 2 : i == nr - 1 ? 1 : 0);
	assert_true(folio_maybe_swapped(f));
	assert_int_equal(folio_free_swap(f), 0);
	/* Out of the cache: counted pages become shadows, the rest are freed. */
	assert_int_equal(swap_cache_del_folio(f, SHADOW), 0);
	for (i = 0; i < nr; i++) {
		swp_entry_t s = swaptest_entry(&t, base + i);

		if (i == 1)
			expect_shadow(s, SHADOW, 2);
		else if (i == nr - 1)
			expect_shadow(s, SHADOW, 1);
		else
			expect_free(s);
	}
	assert_int_equal(nr_inuse(&t), 2);
	assert_int_equal(folio_ref_count(f), 1);
	swaptest_folio_done(f);
	/* Swap the whole range back in: -ENOENT, some slots are free. */
	f = swaptest_folio(&t, order, true);
	assert_int_equal(swap_cache_add_folio(f, swaptest_entry(&t, base), NULL), -ENOENT);
	swaptest_folio_done(f);
	assert_int_equal(swap_put_entries_direct(swaptest_entry(&t, base + 1), 1), 0);
	assert_int_equal(swap_put_entries_direct(swaptest_entry(&t, base + 1), 1), 0);
	assert_int_equal(swap_put_entries_direct(swaptest_entry(&t, base + nr - 1), 1), 0);
	assert_int_equal(nr_inuse(&t), 0);

	/* Whole-folio round trip: out with counts 1, in whole, out again. */
	f = cached_folio(&t, order, &e);
	base = swp_offset(e);
	assert_int_equal(folio_dup_swap(f, -1), 0);
	assert_int_equal(swap_cache_del_folio(f, SHADOW), 0);
	swaptest_folio_done(f);
	f = swaptest_folio(&t, order, true);
	assert_int_equal(swap_cache_add_folio(f, swaptest_entry(&t, base + nr - 1), NULL), -EINVAL);
	assert_int_equal(swap_cache_add_folio(f, e, NULL), 0);
	for (i = 0; i < nr; i++)
		expect_pfn(swaptest_entry(&t, base + i), f, 1);
	assert_ptr_equal(swap_cache_get_folio(swaptest_entry(&t, base + nr - 1)), f);
	folio_put(f);
	assert_int_equal(swap_put_entries_direct(e, (long)nr), 0);
	for (i = 0; i < nr; i++)
		expect_pfn(swaptest_entry(&t, base + i), f, 0);
	assert_int_equal(folio_free_swap(f), 1);
	for (i = 0; i < nr; i++)
		expect_free(swaptest_entry(&t, base + i));
	swaptest_folio_done(f);
	assert_int_equal(nr_inuse(&t), 0);
	swaptest_fini(&t);
}

static void test_large_folio_order4(void **state)
{
	(void)state;
	large_folio(4);
}

static void test_large_folio_order9(void **state)
{
	(void)state;
	large_folio(9);
}

static void alloc_hung(int sig)
{
	static const char msg[] = "folio_alloc_swap did not return: livelock on a "
				  "fragmented cluster list\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

/*
 * A large folio when the only cluster of its order has free slots but no
 * aligned free run: -ENOMEM, not an endless walk of the frag list; order 0
 * still fills the holes.
 */
static void test_large_alloc_fragmented(void **state)
{
	struct folio *f[256], *g;
	struct swaptest t;
	swp_entry_t e;
	unsigned int i;

	(void)state;
	swaptest_init(&t, 1024, 1024);	/* one usable cluster */
	for (i = 0; i < 256; i++) {
		f[i] = cached_folio(&t, 1, &e);
		assert_int_equal(swp_offset(e) / SWAPFILE_CLUSTER, 1);
		assert_int_equal(folio_dup_swap(f[i], 0), 0);
	}
	for (i = 0; i < 256; i++) {
		assert_int_equal(swap_cache_del_folio(f[i], SHADOW), 0);
		swaptest_folio_done(f[i]);
	}
	assert_int_equal(nr_inuse(&t), 256);
	g = swaptest_folio(&t, 1, true);
	signal(SIGALRM, alloc_hung);
	alarm(10);
	assert_int_equal(folio_alloc_swap(g), -ENOMEM);
	alarm(0);
	assert_false(folio_test_swapcache(g));
	assert_int_equal(nr_inuse(&t), 256);
	swaptest_folio_done(g);
	g = cached_folio(&t, 0, &e);
	assert_int_equal(swp_offset(e) % 2, 1);
	assert_int_equal(swap_cache_del_folio(g, 0), 0);
	swaptest_folio_done(g);
	for (i = 0; i < 256; i++)
		assert_int_equal(swap_put_entries_direct(swaptest_entry(&t, 512 + 2 * i), 1), 0);
	assert_int_equal(nr_inuse(&t), 0);
	swaptest_fini(&t);
}

/*
 * The allocator's scan meets a cache-only slot (PFN, count 0, its folio
 * unlocked and unmapped) before a free slot of the same cluster. With swap
 * more than half used it reclaims that folio and takes its slot; below
 * half it passes over it and takes the free slot, and the folio stays
 * cached (the kernel's cluster_scan_range(), which asks vm_swap_full()
 * only at such a slot). @pages sets the side of the line: the filled
 * cluster is all the test uses. Both designs share the allocator and
 * scan their own way (@design).
 */
static void cache_only_scan(const char *design, uint64_t pages, bool full)
{
	static struct folio *f[4096];
	unsigned int per[16] = { 0 }, n = 0, i, x = 0;
	struct folio *c = NULL, *d = NULL, *g;
	struct swaptest t;
	swp_entry_t e;

	static int prio = 1000;
	int type;

	assert_int_equal(uswap_frame_pool_create(4096, &t.pool), 0);
	type = uswap_swapon_mem_design(pages, SWAP_FLAG_PREFER | prio++, design);
	assert_true(type >= 0);
	t.type = (unsigned int)type;
	t.max = pages;
	/* Fill until one cluster past the header's is ours alone, full. */
	while (!x) {
		assert_true(n < ARRAY_SIZE(f));
		f[n] = cached_folio(&t, 0, &e);
		i = (unsigned int)(swp_offset(e) / SWAPFILE_CLUSTER);
		assert_true(i < ARRAY_SIZE(per));
		if (++per[i] == SWAPFILE_CLUSTER)
			x = i;
		n++;
	}
	for (i = 0; i < n; i++) {
		uint64_t off = swp_offset(folio_swap_entry(f[i]));

		if (off == x * SWAPFILE_CLUSTER + 10)
			c = f[i];
		if (off == x * SWAPFILE_CLUSTER + 20)
			d = f[i];
	}
	assert_non_null(c);
	assert_non_null(d);
	/* d's slot freed (count 0: leaving the cache frees it); c cache-only. */
	assert_int_equal(swap_cache_del_folio(d, 0), 0);
	folio_unlock(c);
	assert_int_equal(uswap_vm_swap_full(), full);

	g = cached_folio(&t, 0, &e);
	if (full) {
		assert_int_equal(swp_offset(e), x * SWAPFILE_CLUSTER + 10);
		assert_false(folio_test_swapcache(c));
	} else {
		assert_int_equal(swp_offset(e), x * SWAPFILE_CLUSTER + 20);
		assert_true(folio_test_swapcache(c));
		folio_lock(c);
	}
	for (i = 0; i < n; i++) {
		if (f[i] == c && full) {
			folio_put(c);
			continue;
		}
		if (folio_test_swapcache(f[i]))
			assert_int_equal(swap_cache_del_folio(f[i], 0), 0);
		swaptest_folio_done(f[i]);
	}
	assert_int_equal(swap_cache_del_folio(g, 0), 0);
	swaptest_folio_done(g);
	assert_int_equal(nr_inuse(&t), 0);
	swaptest_fini(&t);
}

static void test_cache_only_scan_reclaims(void **state)
{
	(void)state;
	cache_only_scan("table", 1024, true);
	cache_only_scan("legacy", 1024, true);
}

static void test_cache_only_scan_passes(void **state)
{
	(void)state;
	cache_only_scan("table", 8192, false);
	cache_only_scan("legacy", 8192, false);
}

static void test_hibernation_slot(void **state)
{
	struct swaptest t;
	struct folio *f;
	swp_entry_t e;

	(void)state;
	swaptest_init(&t, 1024, 64);
	e = swap_alloc_hibernation_slot(t.type);
	assert_int_not_equal(e.val, 0);
	assert_int_equal(swp_type(e), t.type);
	expect_shadow(e, 0, 1);
	assert_int_equal(swp_swapcount(e), 1);
	assert_true(swap_entry_swapped(e));
	assert_int_equal(nr_inuse(&t), 1);
	assert_int_equal(swap_free_hibernation_slot(e), 0);
	expect_free(e);
	assert_int_equal(swap_free_hibernation_slot(e), -ENOENT);
	assert_int_equal(nr_inuse(&t), 0);
	assert_int_equal(swap_alloc_hibernation_slot(MAX_SWAPFILES).val, 0);

	/* Readahead cached the slot: freeing it drops that folio too. */
	e = swap_alloc_hibernation_slot(t.type);
	assert_int_not_equal(e.val, 0);
	f = swaptest_folio(&t, 0, true);
	assert_int_equal(swap_cache_add_folio(f, e, NULL), 0);
	expect_pfn(e, f, 1);
	folio_unlock(f);
	assert_int_equal(swap_free_hibernation_slot(e), 0);
	expect_free(e);
	assert_false(folio_test_swapcache(f));
	assert_int_equal(folio_ref_count(f), 1);
	folio_put(f);
	assert_int_equal(nr_inuse(&t), 0);
	swaptest_fini(&t);
}

static void test_folio_maybe_swapped(void **state)
{
	struct swaptest t;
	struct folio *f;
	swp_entry_t e;

	(void)state;
	swaptest_init(&t, 1024, 64);
	f = cached_folio(&t, 3, &e);
	assert_false(folio_maybe_swapped(f));
	assert_int_equal(folio_dup_swap(f, 5), 0);
	assert_true(folio_maybe_swapped(f));
	assert_int_equal(swap_dup_entry_direct(swaptest_entry(&t, swp_offset(e) + 5)), 0);
	assert_int_equal(folio_put_swap(f, 5), 0);
	assert_true(folio_maybe_swapped(f));
	assert_int_equal(swap_put_entries_direct(swaptest_entry(&t, swp_offset(e) + 5), 1), 0);
	assert_false(folio_maybe_swapped(f));
	assert_true(folio_test_swapcache(f));	/* we hold it locked */
	assert_int_equal(folio_free_swap(f), 1);
	assert_false(folio_maybe_swapped(f));
	swaptest_folio_done(f);
	swaptest_fini(&t);
}

static void test_swap_entry_swapped(void **state)
{
	struct swaptest t;
	struct folio *f;
	swp_entry_t e;

	(void)state;
	swaptest_init(&t, 1024, 64);
	assert_false(swap_entry_swapped(swaptest_entry(&t, 0)));
	assert_false(swap_entry_swapped(swaptest_entry(&t, 1)));
	f = cached_folio(&t, 0, &e);
	assert_false(swap_entry_swapped(e));
	assert_int_equal(folio_dup_swap(f, -1), 0);
	assert_true(swap_entry_swapped(e));
	assert_int_equal(swap_cache_del_folio(f, SHADOW), 0);
	assert_true(swap_entry_swapped(e));
	swaptest_folio_done(f);
	assert_int_equal(swap_put_entries_direct(e, 1), 0);
	assert_false(swap_entry_swapped(e));
	swaptest_fini(&t);
}

static void test_swp_swapcount(void **state)
{
	struct swaptest t;
	struct folio *f;
	swp_entry_t e;
	long i;

	(void)state;
	swaptest_init(&t, 1024, 64);
	assert_int_equal(swp_swapcount(swaptest_entry(&t, 1)), 0);
	assert_int_equal(swp_swapcount(swaptest_entry(&t, 0)), -EINVAL);
	f = cached_folio(&t, 0, &e);
	for (i = 1; i <= 5; i++) {
		assert_int_equal(folio_dup_swap(f, -1), 0);
		assert_int_equal(swp_swapcount(e), i);
	}
	assert_int_equal(swap_cache_del_folio(f, SHADOW), 0);
	swaptest_folio_done(f);
	for (i = 4; i >= 0; i--) {
		assert_int_equal(swap_put_entries_direct(e, 1), 0);
		assert_int_equal(swp_swapcount(e), i);
	}
	expect_free(e);
	swaptest_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_free_to_pfn),
		cmocka_unit_test(test_pfn_dup_put),
		cmocka_unit_test(test_pfn_to_shadow),
		cmocka_unit_test(test_pfn0_freed_on_cache_delete),
		cmocka_unit_test(test_shadow_to_pfn),
		cmocka_unit_test(test_shadow1_to_free),
		cmocka_unit_test(test_cached_put_to_zero_stays),
		cmocka_unit_test(test_cached_put_to_zero_unlocked_reclaimed),
		cmocka_unit_test(test_bad_slot),
		cmocka_unit_test(test_dup_of_free_or_uncounted),
		cmocka_unit_test(test_put_of_zero_count),
		cmocka_unit_test(test_unlocked_folio),
		cmocka_unit_test(test_uncached_folio),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_swapped_off_type),
		cmocka_unit_test(test_cache_add_errors),
		cmocka_unit_test(test_cache_get_folio),
		cmocka_unit_test(test_cache_replace),
		cmocka_unit_test(test_large_folio_order4),
		cmocka_unit_test(test_large_folio_order9),
		cmocka_unit_test(test_hibernation_slot),
		cmocka_unit_test(test_folio_maybe_swapped),
		cmocka_unit_test(test_swap_entry_swapped),
		cmocka_unit_test(test_swp_swapcount),
		cmocka_unit_test(test_cache_only_scan_reclaims),
		cmocka_unit_test(test_cache_only_scan_passes),
		/* last: on a livelock its watchdog ends the program */
		cmocka_unit_test(test_large_alloc_fragmented),
	};

	swaptest_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
