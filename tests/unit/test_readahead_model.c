/* SPDX-License-Identifier: MIT */
/*
 * readahead_model: swap-in readahead against values worked out by hand
 * from the kernel's functions.
 *
 * Part 1 drives swap_vma_ra_win() and __swapin_nr_pages() directly with a
 * VMA state word and the PTE entries around the fault, as do_swap_page()
 * hands them over: sequential, reverse, random (the window shrinking by
 * halves), strided, clamped, and two VMAs interleaved.
 *
 * Part 2 runs the same shapes through the mm layer on a swap file (not
 * synchronous, solid state: VMA readahead) on both slot designs, and
 * checks per fault the pages read ahead, the hits, and the VMA's state;
 * then two processes related by fork interleave their faults: a hit
 * credits only the faulting VMA.
 *
 * Hand-worked rules (vm.page-cluster 3, at most 8 pages):
 *   window = hits + 2 rounded up to a power of two from 4; with no hits,
 *   2 after a fault at a neighbouring page, else 1; at most 8; never below
 *   half the last window. Forward after a fault at the previous page,
 *   backward after one at the next page, else centred with (win - 1) / 2
 *   pages before the fault. A cache hit records its page in the state and
 *   adds a hit if the folio was read ahead.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <uswap/legacy.h>
#include <uswap/mm.h>
#include <uswap/swap.h>
#include "mm/mm_internal.h"
#include "swap/swap_header.h"
#include "swap/swap_internal.h"

#define PAGE USWAP_PAGE_SIZE

/* vma->swap_readahead_info as swap_state.c packs it. */
static uint64_t ra_val(uint64_t pg, unsigned int win, unsigned int hits)
{
	return (pg << 16) | ((uint64_t)win << 8) | hits;
}

/* ---- part 1: the window, by itself ---- */

struct win_case {
	uint64_t state;	/* relaxed __atomic builtins, as the library */
	swp_entry_t around[USWAP_SWAPIN_RA_MAX];
	struct uswap_swapin_info info;
};

/* A VMA of pages [vstart, vend), all swapped out (entry = page + 1000). */
static void win_fault(struct win_case *c, uint64_t vstart, uint64_t vend, uint64_t pg,
		      unsigned int max, uint64_t *start, uint64_t *end, unsigned int *win)
{
	uint64_t pmd = pg & ~511ULL, lo, hi, j;

	lo = pg >= vstart + (max - 1) ? pg - (max - 1) : vstart;
	lo = lo > pmd ? lo : pmd;
	hi = pg + max < vend ? pg + max : vend;
	hi = hi < pmd + 512 ? hi : pmd + 512;
	memset(&c->info, 0, sizeof(c->info));
	c->info.ra_entries = c->around;
	c->info.ra_info = &c->state;
	c->info.ra_addr = pg;
	c->info.ra_first = lo;
	c->info.ra_max_pages = max;
	for (j = lo; j < hi; j++)
		c->around[c->info.nr_ra_entries++] = swp_entry(0, j + 1000);
	*win = swap_vma_ra_win(&c->info, start, end);
}

/* A cache hit at @pg: the kernel's lookup update (swap_update_readahead()). */
static void win_hit(struct win_case *c, uint64_t pg, bool readahead)
{
	uint64_t s = __atomic_load_n(&c->state, __ATOMIC_RELAXED);
	unsigned int hits = (unsigned int)(s & 0xff) + (readahead ? 1 : 0);

	__atomic_store_n(&c->state, ra_val(pg, (unsigned int)(s >> 8) & 0xff, hits), __ATOMIC_RELAXED);
}

#define FAULT(c, pg, want_win, want_start, want_end) do { \
	uint64_t s_, e_; unsigned int w_; \
	win_fault(c, 0, 100000, pg, 8, &s_, &e_, &w_); \
	assert_int_equal(w_, want_win); \
	if (w_ > 1) { assert_int_equal(s_, want_start); assert_int_equal(e_, want_end); } \
	assert_int_equal(__atomic_load_n(&(c)->state, __ATOMIC_RELAXED), ra_val(pg, want_win, 0)); \
} while (0)

static void test_nr_pages(void **state)
{
	(void)state;
	/* no hits: 1, or 2 next to the last fault either way */
	assert_int_equal(__swapin_nr_pages(10, 50, 0, 8, 0), 1);
	assert_int_equal(__swapin_nr_pages(10, 11, 0, 8, 0), 2);
	assert_int_equal(__swapin_nr_pages(11, 10, 0, 8, 0), 2);
	/* hits + 2 rounded up from 4, capped */
	assert_int_equal(__swapin_nr_pages(10, 50, 1, 8, 0), 4);
	assert_int_equal(__swapin_nr_pages(10, 50, 2, 8, 0), 4);
	assert_int_equal(__swapin_nr_pages(10, 50, 3, 8, 0), 8);
	assert_int_equal(__swapin_nr_pages(10, 50, 7, 8, 0), 8);
	assert_int_equal(__swapin_nr_pages(10, 50, 7, 32, 0), 16);
	assert_int_equal(__swapin_nr_pages(10, 50, 3, 2, 0), 2);
	/* never below half the last window */
	assert_int_equal(__swapin_nr_pages(10, 50, 0, 8, 8), 4);
	assert_int_equal(__swapin_nr_pages(10, 50, 0, 8, 3), 1);
}

static void test_window_sequential(void **state)
{
	struct win_case c = { .state = 0 };

	(void)state;
	FAULT(&c, 100, 1, 0, 0);	/* prev 0: not a neighbour */
	FAULT(&c, 101, 2, 101, 103);	/* forward: 102 read ahead */
	win_hit(&c, 102, true);		/* (102, 2, 1) */
	FAULT(&c, 103, 4, 103, 107);	/* 1 hit: 3 -> 4; 104..106 */
	win_hit(&c, 104, true);
	win_hit(&c, 105, true);
	win_hit(&c, 106, true);		/* (106, 4, 3) */
	FAULT(&c, 107, 8, 107, 115);	/* 3 hits: 5 -> 8; 108..114 */
	for (int i = 108; i <= 114; i++)
		win_hit(&c, (uint64_t)i, true);
	FAULT(&c, 115, 8, 115, 123);	/* 7 hits: 9 -> 16, capped at 8 */
}

static void test_window_reverse(void **state)
{
	struct win_case c = { .state = 0 };

	(void)state;
	FAULT(&c, 200, 1, 0, 0);
	FAULT(&c, 199, 2, 198, 200);	/* backward: 198 */
	win_hit(&c, 198, true);		/* (198, 2, 1) */
	FAULT(&c, 197, 4, 194, 198);	/* backward: 194..196 */
}

static void test_window_random_and_strided(void **state)
{
	struct win_case c = { .state = 0 };

	(void)state;
	/* A sequential run opens the window to 8 ... */
	FAULT(&c, 100, 1, 0, 0);
	FAULT(&c, 101, 2, 101, 103);
	win_hit(&c, 102, true);
	FAULT(&c, 103, 4, 103, 107);
	win_hit(&c, 104, true);
	win_hit(&c, 105, true);
	win_hit(&c, 106, true);
	FAULT(&c, 107, 8, 107, 115);
	/* ... random faults halve it: 4 centred (1 before), 2, 1, 1 */
	FAULT(&c, 400, 4, 399, 403);
	FAULT(&c, 500, 2, 500, 502);
	FAULT(&c, 600, 1, 0, 0);
	FAULT(&c, 700, 1, 0, 0);
	/* Strided faults are never neighbours: no readahead. */
	FAULT(&c, 800, 1, 0, 0);
	FAULT(&c, 802, 1, 0, 0);
	FAULT(&c, 804, 1, 0, 0);
	/* A hit on a folio nobody read ahead records the page, no hit. */
	win_hit(&c, 805, false);
	assert_int_equal(__atomic_load_n(&c.state, __ATOMIC_RELAXED), ra_val(805, 1, 0));
	FAULT(&c, 806, 2, 806, 808);	/* 806 is next to 805 */
}

static void test_window_clamped(void **state)
{
	struct win_case c;
	uint64_t s, e;
	unsigned int w;

	(void)state;
	/* Forward window 8 at the PMD's last page: [1023, 1024) only. */
	__atomic_store_n(&c.state, ra_val(1022, 4, 3), __ATOMIC_RELAXED);
	win_fault(&c, 0, 100000, 1023, 8, &s, &e, &w);
	assert_int_equal(w, 8);
	assert_int_equal(s, 1023);
	assert_int_equal(e, 1024);
	/* Backward window 4 at the VMA's first page: [50, 51). */
	__atomic_store_n(&c.state, ra_val(51, 2, 1), __ATOMIC_RELAXED);
	win_fault(&c, 50, 100, 50, 8, &s, &e, &w);
	assert_int_equal(w, 4);
	assert_int_equal(s, 50);
	assert_int_equal(e, 51);
	/* Centred 4 at the VMA's end: [97, 100) (would be [97, 101)). */
	__atomic_store_n(&c.state, ra_val(10, 8, 0), __ATOMIC_RELAXED);
	win_fault(&c, 50, 100, 98, 8, &s, &e, &w);
	assert_int_equal(w, 4);
	assert_int_equal(s, 97);
	assert_int_equal(e, 100);
	/* vm.page-cluster 0: never any readahead, state untouched. */
	__atomic_store_n(&c.state, ra_val(10, 8, 5), __ATOMIC_RELAXED);
	win_fault(&c, 0, 100000, 11, 1, &s, &e, &w);
	assert_int_equal(w, 1);
	assert_int_equal(__atomic_load_n(&c.state, __ATOMIC_RELAXED), ra_val(10, 8, 5));
	/* vm.page-cluster 5: up to 32. */
	__atomic_store_n(&c.state, ra_val(10, 16, 20), __ATOMIC_RELAXED);
	win_fault(&c, 0, 100000, 11, 32, &s, &e, &w);
	assert_int_equal(w, 32);
	assert_int_equal(s, 11);
	assert_int_equal(e, 43);
}

static void test_window_two_vmas(void **state)
{
	struct win_case a = { .state = 0 }, b = { .state = 0 };

	(void)state;
	/*
	 * Interleaved faults of two VMAs: each keeps its own state, so each
	 * sees its own sequence (with one state per device, A's 101 would
	 * follow B's 5000 and read nothing ahead).
	 */
	FAULT(&a, 100, 1, 0, 0);
	FAULT(&b, 5000, 1, 0, 0);
	FAULT(&a, 101, 2, 101, 103);
	FAULT(&b, 5001, 2, 5001, 5003);
	win_hit(&a, 102, true);
	FAULT(&b, 5003, 1, 0, 0);	/* B skipped 5002: no hits, not a neighbour */
	FAULT(&a, 103, 4, 103, 107);
}

/* ---- part 2: through the mm layer ---- */

struct mm_env {
	struct uswap_mem *mem;
	int type;
	char path[64];
};

static void mm_env_setup(struct mm_env *m, const char *design)
{
	struct uswap_mem_config cfg = { .budget_bytes = 8 << 20, .no_kswapd = true };
	void *page = aligned_alloc(PAGE, PAGE);
	char spec[96], err[256] = "";
	int fd;

	assert_non_null(page);
	assert_int_equal(uswap_mem_create(&cfg, &m->mem), 0);
	snprintf(m->path, sizeof(m->path), "/tmp/uswap-ratest-XXXXXX");
	fd = mkstemp(m->path);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, 0600), 0);
	assert_int_equal(ftruncate(fd, (off_t)(4096 * PAGE)), 0);
	assert_int_equal(uswap_swap_header_build(page, 4095, NULL, 0, NULL, "ratest"), 0);
	assert_int_equal(pwrite(fd, page, PAGE, 0), (ssize_t)PAGE);
	close(fd);
	free(page);
	snprintf(spec, sizeof(spec), "file:%s", m->path);
	m->type = uswap_swapon_spec_design(spec, 0, design, err, sizeof(err));
	if (m->type < 0)
		fail_msg("swapon %s (%s): %d %s", spec, design, m->type, err);
	assert_false(uswap_swap_type_active((unsigned int)m->type) &&
		     uswap_swap_synchronous(swp_entry((unsigned int)m->type, 1)));
}

static void mm_env_teardown(struct mm_env *m)
{
	uswap_mem_destroy(m->mem);
	assert_int_equal(uswap_swapoff_type((unsigned int)m->type), 0);
	unlink(m->path);
}

/* Write @n pages of @mm at @addr, then swap them all out, none cached. */
static void fill_and_swap_out(struct mm_env *m, struct uswap_mm *mm, uint64_t addr, uint64_t n)
{
	static uint64_t buf[PAGE / 8];
	struct uswap_mem_stats st;
	struct uswap_mm_stats ms;
	uint64_t i;
	int pass;

	for (i = 0; i < n; i++) {
		buf[0] = i + 1;
		assert_int_equal(uswap_mm_write(mm, addr + i * PAGE, buf, PAGE), 0);
	}
	for (pass = 0; pass < 100; pass++) {
		uswap_mem_reclaim(m->mem, 1 << 20);
		uswap_mem_get_stats(m->mem, &st);
		uswap_mm_get_stats(mm, &ms);
		if (ms.swap_pages == n && !st.nr_active && !st.nr_inactive)
			break;
	}
	assert_int_equal(ms.swap_pages, n);
	assert_int_equal(st.nr_active + st.nr_inactive, 0);
}

static void read_page(struct uswap_mm *mm, uint64_t addr, uint64_t i)
{
	static uint64_t buf[PAGE / 8];

	assert_int_equal(uswap_mm_read(mm, addr + i * PAGE, buf, PAGE), 0);
	assert_int_equal(buf[0], i + 1);
}

static uint64_t vma_state(struct uswap_mm *mm, uint64_t addr)
{
	struct uswap_vma *vma = find_vma(mm, addr / PAGE);

	assert_non_null(vma);
	return __atomic_load_n(&vma->swap_readahead_info, __ATOMIC_RELAXED);
}

/* One read of page @i: the readahead it did and the hit it scored. */
static void step(struct uswap_mm *mm, uint64_t addr, uint64_t i, uint64_t want_ra,
		 uint64_t want_hit)
{
	struct uswap_mm_stats a, b;

	uswap_mm_get_stats(mm, &a);
	read_page(mm, addr, i);
	uswap_mm_get_stats(mm, &b);
	if (b.readahead_pages - a.readahead_pages != want_ra ||
	    b.readahead_hits - a.readahead_hits != want_hit)
		fail_msg("page %" PRIu64 ": readahead %" PRIu64 " hits %" PRIu64
			 ", want %" PRIu64 " and %" PRIu64, i, b.readahead_pages - a.readahead_pages,
			 b.readahead_hits - a.readahead_hits, want_ra, want_hit);
}

static void mm_sequential(const char *design)
{
	struct mm_env m;
	struct uswap_mm *mm;
	struct uswap_mm_stats ms;
	uint64_t addr, pg0, i;

	mm_env_setup(&m, design);
	assert_int_equal(uswap_mm_create(m.mem, &mm), 0);
	assert_int_equal(uswap_mm_mmap(mm, 64 * PAGE, &addr), 0);
	pg0 = addr / PAGE;
	fill_and_swap_out(&m, mm, addr, 64);
	/* Faults at 0, 1, 3, 7, 15, ..., 55, 63 (offsets in the vma);
	 * windows 1, 2, 4, 8, 8, ...; everything read ahead is used. */
	step(mm, addr, 0, 0, 0);
	assert_int_equal(vma_state(mm, addr), ra_val(pg0, 1, 0));
	step(mm, addr, 1, 1, 0);
	assert_int_equal(vma_state(mm, addr), ra_val(pg0 + 1, 2, 0));
	step(mm, addr, 2, 0, 1);
	assert_int_equal(vma_state(mm, addr), ra_val(pg0 + 2, 2, 1));
	step(mm, addr, 3, 3, 0);
	for (i = 4; i < 7; i++)
		step(mm, addr, i, 0, 1);
	assert_int_equal(vma_state(mm, addr), ra_val(pg0 + 6, 4, 3));
	for (i = 7; i < 63; i++)
		step(mm, addr, i, i % 8 == 7 ? 7 : 0, i % 8 == 7 ? 0 : 1);
	/* The last window, 8 forward from 63, is clamped to the vma: none. */
	step(mm, addr, 63, 0, 0);
	assert_int_equal(vma_state(mm, addr), ra_val(pg0 + 63, 8, 0));
	uswap_mm_get_stats(mm, &ms);
	assert_int_equal(ms.readahead_pages, 53);
	assert_int_equal(ms.readahead_hits, 53);
	uswap_mm_destroy(mm);
	mm_env_teardown(&m);
}

static void mm_reverse_and_strided(const char *design)
{
	struct mm_env m;
	struct uswap_mm *mm;
	uint64_t addr, pg0;

	mm_env_setup(&m, design);
	assert_int_equal(uswap_mm_create(m.mem, &mm), 0);
	assert_int_equal(uswap_mm_mmap(mm, 64 * PAGE, &addr), 0);
	pg0 = addr / PAGE;
	fill_and_swap_out(&m, mm, addr, 64);
	/* Reverse from 40: 40 (1), 39 (2: 38), 38 hit, 37 (4: 34..36). */
	step(mm, addr, 40, 0, 0);
	step(mm, addr, 39, 1, 0);
	step(mm, addr, 38, 0, 1);
	step(mm, addr, 37, 3, 0);
	assert_int_equal(vma_state(mm, addr), ra_val(pg0 + 37, 4, 0));
	/* Strided from 10: far from 37, no hits: 4 / 2 = 2 centred (10, 11),
	 * then 12: 1 vs 2 / 2: 1; 14, 16: 1. */
	step(mm, addr, 10, 1, 0);
	step(mm, addr, 12, 0, 0);
	step(mm, addr, 14, 0, 0);
	step(mm, addr, 16, 0, 0);
	assert_int_equal(vma_state(mm, addr), ra_val(pg0 + 16, 1, 0));
	uswap_mm_destroy(mm);
	mm_env_teardown(&m);
}

static void mm_two_processes(const char *design)
{
	struct mm_env m;
	struct uswap_mm *parent, *child;
	struct uswap_mm_stats ps, cs;
	uint64_t addr, pg0;

	mm_env_setup(&m, design);
	assert_int_equal(uswap_mm_create(m.mem, &parent), 0);
	assert_int_equal(uswap_mm_mmap(parent, 64 * PAGE, &addr), 0);
	pg0 = addr / PAGE;
	fill_and_swap_out(&m, parent, addr, 64);
	/* The parent's vma state is copied at fork (vm_area_dup()). */
	step(parent, addr, 20, 0, 0);
	assert_int_equal(uswap_mm_fork(parent, &child), 0);
	assert_int_equal(vma_state(child, addr), ra_val(pg0 + 20, 1, 0));
	/*
	 * Interleaved, parent first: the parent faults 21 (window 2: 22) and
	 * 23 after its hit on 22 (window 4: 24..26); the child finds every
	 * page cached, and the readahead folios' hits are the parent's: the
	 * child's faults come after the parent cleared PG_readahead.
	 */
	step(parent, addr, 21, 1, 0);
	step(child, addr, 21, 0, 0);
	step(parent, addr, 22, 0, 1);
	step(child, addr, 22, 0, 0);
	step(parent, addr, 23, 3, 0);
	step(child, addr, 23, 0, 0);
	/* Child first now: it hits the parent's readahead folio 24 and gets
	 * the credit; the parent then finds 24 cached with no credit. */
	step(child, addr, 24, 0, 1);
	step(parent, addr, 24, 0, 0);
	assert_int_equal(vma_state(child, addr), ra_val(pg0 + 24, 1, 1));
	assert_int_equal(vma_state(parent, addr), ra_val(pg0 + 24, 4, 0));
	/* The child's own next fault: one hit, not a neighbour of 24 -> 4,
	 * centred on 40 (39..42): three pages read ahead, by the child. */
	step(child, addr, 40, 3, 0);
	assert_int_equal(vma_state(child, addr), ra_val(pg0 + 40, 4, 0));
	uswap_mm_get_stats(parent, &ps);
	uswap_mm_get_stats(child, &cs);
	assert_int_equal(ps.readahead_pages, 4);
	assert_int_equal(ps.readahead_hits, 1);
	assert_int_equal(cs.readahead_pages, 3);
	assert_int_equal(cs.readahead_hits, 1);
	uswap_mm_destroy(child);
	uswap_mm_destroy(parent);
	mm_env_teardown(&m);
}

static void test_mm_sequential(void **state)
{
	(void)state;
	mm_sequential("table");
	mm_sequential("legacy");
}

static void test_mm_reverse_and_strided(void **state)
{
	(void)state;
	mm_reverse_and_strided("table");
	mm_reverse_and_strided("legacy");
}

static void test_mm_two_processes(void **state)
{
	(void)state;
	mm_two_processes("table");
	mm_two_processes("legacy");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nr_pages),
		cmocka_unit_test(test_window_sequential),
		cmocka_unit_test(test_window_reverse),
		cmocka_unit_test(test_window_random_and_strided),
		cmocka_unit_test(test_window_clamped),
		cmocka_unit_test(test_window_two_vmas),
		cmocka_unit_test(test_mm_sequential),
		cmocka_unit_test(test_mm_reverse_and_strided),
		cmocka_unit_test(test_mm_two_processes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
