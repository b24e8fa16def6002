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
#include "io/backend.h"
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

/* A swap file of 4096 slots; @rotational forces the disk's kind (the spec's
 * ",rotational=N"), so the test does not depend on the disk under /tmp. */
static void mm_env_setup_rot(struct mm_env *m, const char *design, int rotational)
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
	snprintf(spec, sizeof(spec), "file:%s,rotational=%d", m->path, rotational);
	m->type = uswap_swapon_spec_design(spec, 0, design, err, sizeof(err));
	if (m->type < 0)
		fail_msg("swapon %s (%s): %d %s", spec, design, m->type, err);
	assert_false(uswap_swap_type_active((unsigned int)m->type) &&
		     uswap_swap_synchronous(swp_entry((unsigned int)m->type, 1)));
}

static void mm_env_setup(struct mm_env *m, const char *design)
{
	mm_env_setup_rot(m, design, 0);
}

static void mm_env_teardown(struct mm_env *m)
{
	uswap_mem_destroy(m->mem);
	assert_int_equal(uswap_swapoff_type((unsigned int)m->type), 0);
	unlink(m->path);
}

/* Write @n pages of @mm at @addr, then swap them all out, none cached
 * (the mm's other pages are all swapped out already). */
static void fill_and_swap_out(struct mm_env *m, struct uswap_mm *mm, uint64_t addr, uint64_t n)
{
	static uint64_t buf[PAGE / 8];
	struct uswap_mem_stats st;
	struct uswap_mm_stats ms;
	uint64_t i, before;
	int pass;

	uswap_mm_get_stats(mm, &ms);
	before = ms.swap_pages;
	for (i = 0; i < n; i++) {
		buf[0] = i + 1;
		assert_int_equal(uswap_mm_write(mm, addr + i * PAGE, buf, PAGE), 0);
	}
	for (pass = 0; pass < 100; pass++) {
		uswap_mem_reclaim(m->mem, 1 << 20);
		uswap_mem_get_stats(m->mem, &st);
		uswap_mm_get_stats(mm, &ms);
		if (ms.swap_pages == before + n && !st.nr_active && !st.nr_inactive)
			break;
	}
	assert_int_equal(ms.swap_pages, before + n);
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

/* The swap offset of page @i of the mapping at @addr (a swap PTE). */
static uint64_t page_offset(struct uswap_mm *mm, uint64_t addr, uint64_t i)
{
	struct uswap_vma *vma = find_vma(mm, addr / PAGE + i);
	pte_t p;

	assert_non_null(vma);
	p = atomic_load(vma_pte(vma, addr / PAGE + i));
	assert_true(pte_is_swap(p));
	return swp_offset(pte_to_swp_entry(p));
}

/* The page of the mapping at @addr (@n pages) whose slot is @off. */
static uint64_t page_at(struct uswap_mm *mm, uint64_t addr, uint64_t n, uint64_t off)
{
	uint64_t i;

	for (i = 0; i < n; i++) {
		struct uswap_vma *vma = find_vma(mm, addr / PAGE + i);
		pte_t p = atomic_load(vma_pte(vma, addr / PAGE + i));

		if (pte_is_swap(p) && swp_offset(pte_to_swp_entry(p)) == off)
			return i;
	}
	fail_msg("no page of the mapping is on slot %" PRIu64, off);
	return 0;
}

/*
 * Cluster readahead (swap_cluster_readahead(), swapin_nr_pages()): with a
 * rotational device swapped on, swap_use_vma_readahead() is false for
 * every fault; the window is an aligned block of swap offsets, and its
 * state (last offset, last window, hits) is one for the whole system.
 * Two mappings A and B; o is an offset divisible by 8 with A's slots
 * o .. o+47 and B's slots b .. b+7 all in use (asserted, not assumed).
 *   A o:    4 far faults first leave the window at 1 (8 -> 4 -> 2 -> 1 from
 *           any start); then o: no hits, not next to the last -> 1.
 *   A o+1:  next to o -> 2: block [o, o+1], o is cached: nothing read.
 *   A o+2:  next to o+1 -> 2: [o+2, o+3]: o+3 read ahead.
 *   A o+3:  a hit (global hits 1).
 *   A o+4:  hits 1 -> 4: [o+4, o+7]: 3 read ahead; the last offset stays
 *           o+2 (moved on only without hits).
 *   A o+5..o+7: hits (3).
 *   A o+8:  hits 3 -> 8: [o+8, o+15]: 7.
 *   A o+40: no hits, far: 1, but not below 8 / 2: [o+40, o+43]: 3.
 *   A o+41: a hit, in mapping A.
 *   B b:    B's first fault: the hit A scored counts (one state for all):
 *           4: B's block of 4 around b: 3 read ahead. (With VMA readahead
 *           B's own state would give 1.)
 */
static void mm_cluster_readahead(const char *design)
{
	struct mm_env m;
	struct uswap_mm *mm;
	uint64_t a, b, o = 0, bo, i, base;
	unsigned int k;

	mm_env_setup_rot(&m, design, 1);
	assert_false(swap_use_vma_readahead());
	assert_int_equal(uswap_mm_create(m.mem, &mm), 0);
	assert_int_equal(uswap_mm_mmap(mm, 256 * PAGE, &a), 0);
	assert_int_equal(uswap_mm_mmap(mm, 64 * PAGE, &b), 0);
	fill_and_swap_out(&m, mm, a, 256);
	fill_and_swap_out(&m, mm, b, 64);
	/* An offset o divisible by 16 with A's pages on o .. o+63, consecutive. */
	for (i = 0; i < 256 && !o; i++) {
		uint64_t off = page_offset(mm, a, i), j;

		if (off % 16 || i + 64 > 256)
			continue;
		for (j = 1; j < 64; j++)
			if (page_offset(mm, a, i + j) != off + j)
				break;
		if (j == 64)
			o = off;
	}
	if (!o)
		fail_msg("no 64 consecutive slots from a multiple of 16 in A");
	base = page_at(mm, a, 256, o);
	/* B: a page whose slot is 8-aligned, and the three after it on the
	 * next slots (the block of 4 at bo). */
	bo = 0;
	for (i = 0; i + 4 <= 64 && !bo; i++) {
		uint64_t off = page_offset(mm, b, i);

		if (!(off % 8) && page_offset(mm, b, i + 1) == off + 1 &&
		    page_offset(mm, b, i + 2) == off + 2 && page_offset(mm, b, i + 3) == off + 3)
			bo = off;
	}
	if (!bo)
		fail_msg("no 4 consecutive slots from a multiple of 8 in B");
	/* Four far faults in A outside o .. o+63 leave the window at 1; their
	 * readahead is not looked at (it depends on the earlier state). */
	for (k = 0, i = 0; i < 256 && k < 4; i += 37) {
		uint64_t off = page_offset(mm, a, i);

		if (i >= base && i < base + 64)
			continue;
		if (off + 16 > o && off < o + 80)
			continue;
		read_page(mm, a, i);
		k++;
	}
	assert_int_equal(k, 4);
	assert_int_equal(swap_cluster_ra_last_pages(), 1);
	step(mm, a, base + 0, 0, 0);
	step(mm, a, base + 1, 0, 0);
	step(mm, a, base + 2, 1, 0);
	assert_int_equal(swap_cluster_ra_last_pages(), 2);
	step(mm, a, base + 3, 0, 1);
	step(mm, a, base + 4, 3, 0);
	assert_int_equal(swap_cluster_ra_last_pages(), 4);
	for (i = 5; i < 8; i++)
		step(mm, a, base + i, 0, 1);
	step(mm, a, base + 8, 7, 0);
	assert_int_equal(swap_cluster_ra_last_pages(), 8);
	step(mm, a, base + 40, 3, 0);
	assert_int_equal(swap_cluster_ra_last_pages(), 4);
	step(mm, a, base + 41, 0, 1);
	step(mm, b, page_at(mm, b, 64, bo + 1), 3, 0);
	assert_int_equal(swap_cluster_ra_last_pages(), 4);
	uswap_mm_destroy(mm);
	mm_env_teardown(&m);
	assert_true(swap_use_vma_readahead());
}

/*
 * Readahead allocations may reclaim (__read_swap_cache_async() allocates
 * with the fault's gfp): sequential faults open an 8-page window; then
 * other pages fill memory until one frame is free. The next window's
 * fault needs 8 frames: the mm's ra_reclaim frees them first, and all 7
 * readahead pages are read (without it the faulting folio would take the
 * last frame and the readahead none).
 */
static void mm_readahead_reclaims(const char *design)
{
	struct mm_env m;
	struct uswap_mm *mm;
	struct uswap_mem_stats s0, s1;
	uint64_t a, f, i, nf = 0;

	mm_env_setup(&m, design);
	assert_int_equal(uswap_mm_create(m.mem, &mm), 0);
	assert_int_equal(uswap_mm_mmap(mm, 64 * PAGE, &a), 0);
	assert_int_equal(uswap_mm_mmap(mm, 4096 * PAGE, &f), 0);
	fill_and_swap_out(&m, mm, a, 64);
	/* Windows 1, 2, 4, 8 (mm_sequential): faults at 0, 1, 3, 7. */
	step(mm, a, 0, 0, 0);
	step(mm, a, 1, 1, 0);
	step(mm, a, 2, 0, 1);
	step(mm, a, 3, 3, 0);
	for (i = 4; i < 7; i++)
		step(mm, a, i, 0, 1);
	/* Fill until one frame is left (reclaim takes the oldest filler
	 * pages, not A's, which are newer). */
	while (uswap_frame_pool_free_frames(m.mem->pool) != 1) {
		static uint64_t buf[PAGE / 8];

		assert_true(nf < 4096);
		buf[0] = nf;
		assert_int_equal(uswap_mm_write(mm, f + nf * PAGE, buf, PAGE), 0);
		nf++;
	}
	uswap_mem_get_stats(m.mem, &s0);
	step(mm, a, 7, 7, 0);
	uswap_mem_get_stats(m.mem, &s1);
	assert_true(s1.direct_reclaims > s0.direct_reclaims);
	for (i = 8; i < 15; i++)
		step(mm, a, i, 0, 1);
	uswap_mm_destroy(mm);
	mm_env_teardown(&m);
}

/*
 * should_try_to_free_swap()'s VM_LOCKED rule, both designs (both kernels
 * have it): a read fault on a non-synchronous device keeps the swap cache
 * copy (swap not full, not a write), unless the mapping is mlocked, when
 * the copy is dropped once mapped (swap_frees_after_map).
 */
static void mm_mlock_frees_swap(const char *design)
{
	struct mm_env m;
	struct uswap_mm *mm;
	struct uswap_mem_stats s0, s1, s2;
	uint64_t a, b;

	mm_env_setup(&m, design);
	assert_int_equal(uswap_mm_create(m.mem, &mm), 0);
	assert_int_equal(uswap_mm_mmap(mm, 16 * PAGE, &a), 0);
	assert_int_equal(uswap_mm_mmap(mm, 16 * PAGE, &b), 0);
	fill_and_swap_out(&m, mm, a, 16);
	fill_and_swap_out(&m, mm, b, 16);
	assert_int_equal(uswap_mm_mlock(mm, b, true), 0);
	assert_int_equal(uswap_mm_mlock(mm, b + PAGE, true), -EINVAL);
	uswap_mem_get_stats(m.mem, &s0);
	read_page(mm, a, 5);
	uswap_mem_get_stats(m.mem, &s1);
	assert_int_equal(s1.swap_frees_after_map, s0.swap_frees_after_map);
	read_page(mm, b, 5);
	uswap_mem_get_stats(m.mem, &s2);
	assert_int_equal(s2.swap_frees_after_map, s1.swap_frees_after_map + 1);
	/* munlock: the rule no longer applies */
	assert_int_equal(uswap_mm_mlock(mm, b, false), 0);
	read_page(mm, b, 12);
	uswap_mem_get_stats(m.mem, &s1);
	assert_int_equal(s1.swap_frees_after_map, s2.swap_frees_after_map);
	uswap_mm_destroy(mm);
	mm_env_teardown(&m);
}

/* "file:PATH,rotational=N" forces the disk's kind; without it, -1 (sysfs
 * decides at open); a bad value is refused; an unknown option after a
 * comma is part of the path. */
static void test_spec_rotational(void **state)
{
	static struct swap_backend_spec sp;
	char err[256];

	(void)state;
	assert_int_equal(swap_backend_spec_parse("file:/x/y,rotational=1", &sp, err, sizeof(err)), 0);
	assert_int_equal(sp.kind, SWAP_BACKEND_FILE);
	assert_string_equal(sp.path, "/x/y");
	assert_int_equal(sp.rotational, 1);
	assert_int_equal(swap_backend_spec_parse("file:/x/y,rotational=0", &sp, err, sizeof(err)), 0);
	assert_string_equal(sp.path, "/x/y");
	assert_int_equal(sp.rotational, 0);
	assert_int_equal(swap_backend_spec_parse("file:/x/y", &sp, err, sizeof(err)), 0);
	assert_string_equal(sp.path, "/x/y");
	assert_int_equal(sp.rotational, -1);
	assert_int_equal(swap_backend_spec_parse("file:/a,rotational=2", &sp, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "rotational"));
	assert_int_equal(swap_backend_spec_parse("file:,rotational=1", &sp, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(swap_backend_spec_parse("file:/a,speed=1", &sp, err, sizeof(err)), 0);
	assert_string_equal(sp.path, "/a,speed=1");
	assert_int_equal(swap_backend_spec_parse("file:/a,rotational=1,encrypt=off,discard=off",
						 &sp, err, sizeof(err)), 0);
	assert_string_equal(sp.path, "/a");
	assert_int_equal(sp.rotational, 1);
	assert_int_equal(sp.encrypt, SWAP_CRYPT_NONE);
	assert_false(sp.discard);
	assert_int_equal(swap_backend_spec_parse("file:/a", &sp, err, sizeof(err)), 0);
	assert_int_equal(sp.encrypt, SWAP_CRYPT_AUTO);
	assert_true(sp.discard);
	assert_int_equal(swap_backend_spec_parse("file:/a,encrypt=rot13", &sp, err, sizeof(err)),
			 -EINVAL);
}

static void test_mm_cluster_readahead(void **state)
{
	(void)state;
	mm_cluster_readahead("table");
	mm_cluster_readahead("legacy");
}

static void test_mm_readahead_reclaims(void **state)
{
	(void)state;
	mm_readahead_reclaims("table");
	mm_readahead_reclaims("legacy");
}

static void test_mm_mlock_frees_swap(void **state)
{
	(void)state;
	mm_mlock_frees_swap("table");
	mm_mlock_frees_swap("legacy");
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
		cmocka_unit_test(test_spec_rotational),
		cmocka_unit_test(test_mm_cluster_readahead),
		cmocka_unit_test(test_mm_readahead_reclaims),
		cmocka_unit_test(test_mm_mlock_frees_swap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
