/* SPDX-License-Identifier: MIT */
/*
 * Memory cgroups of the mm layer: memory.max and memory.swap.max hold at
 * every step (the excess is swapped out, or stays in memory at the swap
 * limit), groups with different limits, fork keeps the group, a swap-in
 * is charged to the slot's group, a refault is judged at the group that
 * evicted the page, and the data always reads back right.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <uswap/mm.h>
#include <uswap/swap.h>
#include "mm/mm_internal.h"
#include "testutil.h"

#define PAGE	USWAP_PAGE_SIZE

static struct uswap_mem *mem;
static int type = -1;

static int setup(void **state)
{
	struct uswap_mem_config cfg = { .budget_bytes = 4 << 20, .no_kswapd = true,
					.page_cluster = -1 };

	(void)state;
	if (uswap_mem_create(&cfg, &mem))
		return -1;
	type = uswap_swapon_spec("zram:32M", 0, NULL, 0);
	return type < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	/* A failed test leaves its mms: leak the budget rather than trip. */
	if (!cds_list_empty(&mem->mmlist)) {
		mem = NULL;
		return -1;
	}
	uswap_mem_destroy(mem);
	mem = NULL;
	if (type >= 0 && uswap_swapoff_type((unsigned int)type))
		return -1;
	type = -1;
	return 0;
}

/* Page @pg of tag @tag: no zero word, so it is never a zero page. */
static void fill(unsigned char *buf, uint64_t tag, uint64_t pg)
{
	uint64_t *w = (uint64_t *)buf, i;

	for (i = 0; i < PAGE / 8; i++)
		w[i] = (tag * 0x9e3779b97f4a7c15ULL) ^ (pg << 20) ^ (i | 1ULL << 63);
}

static void check_pages(struct uswap_mm *mm, uint64_t addr, uint64_t tag, uint64_t n)
{
	unsigned char want[PAGE], got[PAGE];
	uint64_t pg;

	for (pg = 0; pg < n; pg++) {
		fill(want, tag, pg);
		assert_int_equal(uswap_mm_read(mm, addr + pg * PAGE, got, PAGE), 0);
		assert_memory_equal(want, got, PAGE);
	}
}

static struct uswap_memcg *group(uint64_t memory_max, uint64_t swap_max)
{
	struct uswap_memcg_config cfg = { .memory_max = memory_max, .swap_max = swap_max };
	struct uswap_memcg *cg;

	assert_int_equal(uswap_memcg_create(mem, &cfg, &cg), 0);
	assert_true(uswap_memcg_id(cg) > 0);
	return cg;
}

static struct uswap_memcg_stats stats(struct uswap_memcg *cg)
{
	struct uswap_memcg_stats st;

	uswap_memcg_get_stats(cg, &st);
	assert_true(st.memory_current <= st.memory_max);
	assert_true(st.swap_current <= st.swap_max);
	return st;
}

/* The errors of the API. */
static void test_errors(void **state)
{
	struct uswap_memcg_config bad = { .memory_max = 1, .swap_max = 1, .__reserved[2] = 1 };
	struct uswap_memcg *cg;
	struct uswap_mm *mm;

	(void)state;
	assert_int_equal(uswap_memcg_create(mem, &bad, &cg), -EINVAL);
	assert_int_equal(uswap_memcg_destroy(NULL), -EINVAL);
	assert_int_equal(uswap_memcg_set_memory_max(NULL, 1), -EINVAL);
	assert_int_equal(uswap_memcg_id(NULL), 0);
	assert_int_equal(uswap_memcg_create(mem, NULL, &cg), 0);
	assert_int_equal(uswap_mm_create_memcg(mem, cg, &mm), 0);
	assert_int_equal(uswap_memcg_destroy(cg), -EBUSY);
	uswap_mm_destroy(mm);
	assert_int_equal(uswap_memcg_destroy(cg), 0);
}

/* memory.max holds at every step; the excess goes to swap; data comes back. */
static void test_memory_max(void **state)
{
	struct uswap_memcg *cg = group(64, UINT64_MAX);
	unsigned char buf[PAGE];
	struct uswap_memcg_stats st;
	struct uswap_mm *mm;
	uint64_t addr, pg, n = 400;

	(void)state;
	assert_int_equal(uswap_mm_create_memcg(mem, cg, &mm), 0);
	assert_int_equal(uswap_mm_mmap(mm, n * PAGE, &addr), 0);
	for (pg = 0; pg < n; pg++) {
		fill(buf, 1, pg);
		assert_int_equal(uswap_mm_write(mm, addr + pg * PAGE, buf, PAGE), 0);
		st = stats(cg);
		assert_true(st.memory_current <= 64);
	}
	assert_true(st.memory_current > 0);
	assert_true(st.events_max > 0);
	assert_int_equal(st.events_oom, 0);
	assert_true(st.pswpout >= n - 64);
	assert_true(st.swap_current >= n - 64);
	assert_true(st.pgsteal > 0 && st.pgscan >= st.pgsteal);
	assert_true(st.memory_peak <= 64);
	check_pages(mm, addr, 1, n);
	st = stats(cg);
	assert_true(st.pswpin > 0);
	/* A lower limit reclaims down to it. */
	assert_int_equal(uswap_memcg_set_memory_max(cg, 16), 0);
	st = stats(cg);
	assert_true(st.memory_current <= 16);
	check_pages(mm, addr, 1, n);
	uswap_mm_destroy(mm);
	assert_int_equal(uswap_memcg_destroy(cg), 0);
}

/*
 * memory.swap.max holds at every step: over it folios stay in memory
 * (global reclaim moves on), the group's swap "max" events count; with a
 * memory limit too, a charge that nothing can make room for fails.
 */
static void test_swap_max(void **state)
{
	struct uswap_memcg *cg = group(UINT64_MAX, 50), *tight = group(64, 32);
	struct uswap_mm *mm, *mm2;
	struct uswap_mm_stats ms;
	struct uswap_memcg_stats st;
	unsigned char buf[PAGE];
	uint64_t addr, addr2, pg, n = 300, ok = 0;
	int err = 0;

	(void)state;
	assert_int_equal(uswap_mm_create_memcg(mem, cg, &mm), 0);
	assert_int_equal(uswap_mm_mmap(mm, n * PAGE, &addr), 0);
	for (pg = 0; pg < n; pg++) {
		fill(buf, 2, pg);
		assert_int_equal(uswap_mm_write(mm, addr + pg * PAGE, buf, PAGE), 0);
		if (pg % 32 == 31) {
			uswap_mem_reclaim(mem, 256);
			stats(cg);
		}
	}
	uswap_mem_reclaim(mem, 1024);
	st = stats(cg);
	assert_true(st.swap_current <= 50);
	assert_true(st.swap_current > 0);
	assert_true(st.swap_events_max > 0);
	uswap_mm_get_stats(mm, &ms);
	assert_true(ms.rss_pages >= n - 50);
	check_pages(mm, addr, 2, n);
	stats(cg);

	/* 64 pages of memory and 32 of swap: room for 96 pages at most. */
	assert_int_equal(uswap_mm_create_memcg(mem, tight, &mm2), 0);
	assert_int_equal(uswap_mm_mmap(mm2, 200 * PAGE, &addr2), 0);
	for (pg = 0; pg < 200; pg++) {
		fill(buf, 3, pg);
		err = uswap_mm_write(mm2, addr2 + pg * PAGE, buf, PAGE);
		st = stats(tight);
		if (err)
			break;
		ok++;
	}
	assert_int_equal(err, -ENOMEM);
	assert_true(ok >= 64 && ok <= 96);
	assert_true(st.events_oom > 0);
	assert_true(st.swap_events_max > 0);
	/* Nothing was lost; raising the swap limit lets the rest in (a read
	 * of a swapped page needs room in memory too: at both limits it
	 * fails as the write did). */
	assert_int_equal(uswap_memcg_set_swap_max(tight, UINT64_MAX), 0);
	check_pages(mm2, addr2, 3, ok);
	stats(tight);
	for (pg = ok; pg < 200; pg++) {
		fill(buf, 3, pg);
		assert_int_equal(uswap_mm_write(mm2, addr2 + pg * PAGE, buf, PAGE), 0);
		stats(tight);
	}
	check_pages(mm2, addr2, 3, 200);
	uswap_mm_destroy(mm2);
	uswap_mm_destroy(mm);
	assert_int_equal(uswap_memcg_destroy(tight), 0);
	assert_int_equal(uswap_memcg_destroy(cg), 0);
}

/* Two groups with different swap limits under the same global reclaim. */
static void test_two_groups(void **state)
{
	struct uswap_memcg *a = group(UINT64_MAX, 40), *b = group(UINT64_MAX, 400);
	struct uswap_memcg_stats sa, sb;
	struct uswap_mm *ma, *mb;
	unsigned char buf[PAGE];
	uint64_t aa, ab, pg, n = 250;

	(void)state;
	assert_int_equal(uswap_mm_create_memcg(mem, a, &ma), 0);
	assert_int_equal(uswap_mm_create_memcg(mem, b, &mb), 0);
	assert_int_equal(uswap_mm_mmap(ma, n * PAGE, &aa), 0);
	assert_int_equal(uswap_mm_mmap(mb, n * PAGE, &ab), 0);
	for (pg = 0; pg < n; pg++) {
		fill(buf, 4, pg);
		assert_int_equal(uswap_mm_write(ma, aa + pg * PAGE, buf, PAGE), 0);
		fill(buf, 5, pg);
		assert_int_equal(uswap_mm_write(mb, ab + pg * PAGE, buf, PAGE), 0);
	}
	uswap_mem_reclaim(mem, 2 * n);
	sa = stats(a);
	sb = stats(b);
	assert_true(sa.swap_current <= 40);
	assert_true(sb.swap_current > 40);
	assert_true(sa.swap_events_max > 0);
	assert_int_equal(sb.swap_events_max, 0);
	assert_int_equal(sa.memory_current + sb.memory_current,
			 (uint64_t)(atomic_load(&mem->nr_active) + atomic_load(&mem->nr_inactive)));
	check_pages(ma, aa, 4, n);
	check_pages(mb, ab, 5, n);
	uswap_mm_destroy(ma);
	uswap_mm_destroy(mb);
	assert_int_equal(uswap_memcg_destroy(a), 0);
	assert_int_equal(uswap_memcg_destroy(b), 0);
}

/* A child is in its parent's group: its copies are charged there. */
static void test_fork_keeps_group(void **state)
{
	struct uswap_memcg *cg = group(48, UINT64_MAX);
	struct uswap_mm *parent, *child;
	struct uswap_memcg_stats st;
	unsigned char buf[PAGE];
	uint64_t addr, pg, n = 100;

	(void)state;
	assert_int_equal(uswap_mm_create_memcg(mem, cg, &parent), 0);
	assert_int_equal(uswap_mm_mmap(parent, n * PAGE, &addr), 0);
	for (pg = 0; pg < n; pg++) {
		fill(buf, 6, pg);
		assert_int_equal(uswap_mm_write(parent, addr + pg * PAGE, buf, PAGE), 0);
	}
	assert_int_equal(uswap_mm_fork(parent, &child), 0);
	assert_ptr_equal(child->memcg, cg);
	uswap_mm_destroy(parent);
	assert_int_equal(uswap_memcg_destroy(cg), -EBUSY);
	st = stats(cg);
	for (pg = 0; pg < n; pg++) {
		fill(buf, 7, pg);
		assert_int_equal(uswap_mm_write(child, addr + pg * PAGE, buf, PAGE), 0);
		stats(cg);
	}
	st = stats(cg);
	assert_true(st.memory_current > 0);
	check_pages(child, addr, 7, n);
	uswap_mm_destroy(child);
	assert_int_equal(uswap_memcg_destroy(cg), 0);
}

/*
 * An mm of group Y faults pages that group X swapped out (the child moved
 * to Y by hand: the API keeps a child in its parent's group). The swap-in
 * is charged to X, the slot's group, and the refault judged at X.
 */
static void test_swapin_charges_slot_group(void **state)
{
	struct uswap_memcg *x = group(UINT64_MAX, UINT64_MAX), *y = group(UINT64_MAX, UINT64_MAX);
	struct uswap_memcg_stats sx0, sx, sy;
	struct uswap_mm *parent, *child;
	unsigned char buf[PAGE];
	uint64_t addr, pg, n = 64;

	(void)state;
	assert_int_equal(uswap_mm_create_memcg(mem, x, &parent), 0);
	assert_int_equal(uswap_mm_mmap(parent, n * PAGE, &addr), 0);
	for (pg = 0; pg < n; pg++) {
		fill(buf, 8, pg);
		assert_int_equal(uswap_mm_write(parent, addr + pg * PAGE, buf, PAGE), 0);
	}
	/* Twice: the first pass only ages the pages. */
	uswap_mem_reclaim(mem, 4 * n);
	uswap_mem_reclaim(mem, 4 * n);
	sx0 = stats(x);
	assert_int_equal(sx0.memory_current, 0);
	assert_int_equal(sx0.swap_current, n);
	assert_int_equal(uswap_mm_fork(parent, &child), 0);
	/* Move the child to Y. */
	atomic_fetch_sub(&x->nr_mms, 1);
	atomic_fetch_add(&y->nr_mms, 1);
	mem_cgroup_get(y);
	child->memcg = y;
	mem_cgroup_put(x);
	check_pages(child, addr, 8, n);
	sx = stats(x);
	sy = stats(y);
	assert_int_equal(sx.memory_current, n);
	assert_int_equal(sy.memory_current, 0);
	assert_int_equal(sx.pswpin, n);
	assert_int_equal(sy.pswpin, 0);
	assert_int_equal(sx.workingset_refault, sx0.workingset_refault + n);
	assert_int_equal(sy.workingset_refault, 0);
	/* Pages the child writes now are its own group's. */
	fill(buf, 9, 0);
	assert_int_equal(uswap_mm_write(child, addr, buf, PAGE), 0);
	sy = stats(y);
	assert_int_equal(sy.memory_current, 1);
	uswap_mm_destroy(child);
	uswap_mm_destroy(parent);
	assert_int_equal(uswap_memcg_destroy(x), 0);
	assert_int_equal(uswap_memcg_destroy(y), 0);
}

/* A recent refault is activated by the evicting group's clock: a hot set
 * that nearly fills the group, and a few other pages in turn. */
static void test_refault_activation(void **state)
{
	struct uswap_memcg *cg = group(32, UINT64_MAX);
	struct uswap_memcg_stats st;
	struct uswap_mm *mm;
	unsigned char buf[PAGE];
	uint64_t addr, pg, round, n = 48;

	(void)state;
	assert_int_equal(uswap_mm_create_memcg(mem, cg, &mm), 0);
	assert_int_equal(uswap_mm_mmap(mm, n * PAGE, &addr), 0);
	for (pg = 0; pg < n; pg++) {
		fill(buf, 10, pg);
		assert_int_equal(uswap_mm_write(mm, addr + pg * PAGE, buf, PAGE), 0);
	}
	for (round = 0; round < 60; round++) {
		check_pages(mm, addr, 10, 24);
		for (pg = 24 + round * 5 % 24; pg < n && pg < 24 + round * 5 % 24 + 4; pg++) {
			fill(buf, 10, pg);
			assert_int_equal(uswap_mm_write(mm, addr + pg * PAGE, buf, PAGE), 0);
		}
		stats(cg);
	}
	check_pages(mm, addr, 10, n);
	st = stats(cg);
	assert_true(st.workingset_refault > 0);
	assert_true(st.workingset_activate > 0);
	uswap_mm_destroy(mm);
	assert_int_equal(uswap_memcg_destroy(cg), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memory_max, setup, teardown),
		cmocka_unit_test_setup_teardown(test_swap_max, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_groups, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork_keeps_group, setup, teardown),
		cmocka_unit_test_setup_teardown(test_swapin_charges_slot_group, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refault_activation, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
