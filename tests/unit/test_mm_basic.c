/* SPDX-License-Identifier: MIT */
/*
 * The mm layer over swap, case by case: page-table states, large folios
 * (whole swap-in on zram, order 0 from a file), kswapd and direct reclaim,
 * the swap-out workflow, swap-in faults, COW after fork, fork's duplicated
 * swap entries, exit/munmap/madvise putting entries, swapoff across address
 * spaces and shmem (and its clean -ENOMEM failure), shmem swap references,
 * workingset refaults, read errors.
 *
 * Every page carries a pattern of (tag, page, version) checked on every
 * read. Each case makes its own budget and devices; the teardown (run even
 * after a failure) destroys mms, shmem objects and the budget, then swaps
 * every device off, which must succeed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uswap/mm.h>
#include <uswap/swap.h>
#include "io/backend.h"
#include "mm/mm_internal.h"
#include "swap/swap_header.h"
#include "swap/swapon.h"
#include "testutil.h"

#define PAGE	USWAP_PAGE_SIZE
#define MAX_MMS	8
#define MAX_SHM	4
#define MAX_DEV	2

struct env {
	struct uswap_mem *mem;
	struct uswap_mm *mms[MAX_MMS];
	struct uswap_shmem *shms[MAX_SHM];
	int types[MAX_DEV];
	char paths[MAX_DEV][64];
	unsigned int nr_types;
	uint64_t frames;
};

static struct env E;

/* ---- patterns ---- */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/* Version 0 is a never-written page: zeros. */
static void pat_fill(void *buf, uint64_t tag, uint64_t pg, uint64_t ver)
{
	uint64_t *w = buf, s, i;

	if (!ver) {
		memset(buf, 0, PAGE);
		return;
	}
	s = mix64(tag ^ mix64(pg ^ mix64(ver + 0x51ed)));
	for (i = 0; i < PAGE / 8; i++)
		w[i] = s + i * 0x9e3779b97f4a7c15ULL;
}

static void write_page(struct uswap_mm *mm, uint64_t addr, uint64_t pg, uint64_t tag,
		       uint64_t ver)
{
	static uint64_t buf[PAGE / 8];
	int err;

	pat_fill(buf, tag, pg, ver);
	err = uswap_mm_write(mm, addr + pg * PAGE, buf, PAGE);
	if (err)
		fail_msg("write page %" PRIu64 " v%" PRIu64 ": %d", pg, ver, err);
}

static void check_page(struct uswap_mm *mm, uint64_t addr, uint64_t pg, uint64_t tag,
		       uint64_t ver)
{
	static uint64_t want[PAGE / 8], got[PAGE / 8];
	int err;

	pat_fill(want, tag, pg, ver);
	memset(got, 0xa5, sizeof(got));
	err = uswap_mm_read(mm, addr + pg * PAGE, got, PAGE);
	if (err)
		fail_msg("read page %" PRIu64 " (v%" PRIu64 "): %d", pg, ver, err);
	if (memcmp(want, got, PAGE))
		fail_msg("data mismatch: page %" PRIu64 " tag %" PRIx64 " expected v%" PRIu64,
			 pg, tag, ver);
}

static void write_range(struct uswap_mm *mm, uint64_t addr, uint64_t first, uint64_t n,
			uint64_t tag, uint64_t ver)
{
	uint64_t i;

	for (i = first; i < first + n; i++)
		write_page(mm, addr, i, tag, ver);
}

static void check_range(struct uswap_mm *mm, uint64_t addr, uint64_t first, uint64_t n,
			uint64_t tag, uint64_t ver)
{
	uint64_t i;

	for (i = first; i < first + n; i++)
		check_page(mm, addr, i, tag, ver);
}

static void shm_write(struct uswap_shmem *shm, uint64_t pg, uint64_t tag, uint64_t ver)
{
	static uint64_t buf[PAGE / 8];

	pat_fill(buf, tag, pg, ver);
	assert_int_equal(uswap_shmem_write(shm, pg * PAGE, buf, PAGE), 0);
}

static void shm_check(struct uswap_shmem *shm, uint64_t pg, uint64_t tag, uint64_t ver)
{
	static uint64_t want[PAGE / 8], got[PAGE / 8];
	int err;

	pat_fill(want, tag, pg, ver);
	err = uswap_shmem_read(shm, pg * PAGE, got, PAGE);
	if (err)
		fail_msg("shmem read page %" PRIu64 ": %d", pg, err);
	if (memcmp(want, got, PAGE))
		fail_msg("shmem data mismatch: page %" PRIu64 " expected v%" PRIu64, pg, ver);
}

/* ---- environment ---- */

static void mem_setup(uint64_t budget_mib, unsigned int max_order, bool no_kswapd)
{
	struct uswap_mem_config cfg = {
		.budget_bytes = budget_mib << 20,
		.max_order = max_order,
		.no_kswapd = no_kswapd,
	};

	assert_int_equal(uswap_mem_create(&cfg, &E.mem), 0);
	E.frames = (budget_mib << 20) / PAGE;
}

static int add_type(int type)
{
	assert_true(type >= 0);
	assert_true(E.nr_types < MAX_DEV);
	E.types[E.nr_types++] = type;
	return type;
}

static int dev_zram(const char *spec, int flags)
{
	char err[256] = "";
	int type = uswap_swapon_spec(spec, flags, err, sizeof(err));

	if (type < 0)
		fail_msg("swapon %s: %d %s", spec, type, err);
	E.paths[E.nr_types][0] = 0;
	return add_type(type);
}

/* A swap file of @pages slots (header included), 0600, in /tmp. */
static int dev_file(uint64_t pages, int flags)
{
	char *path = E.paths[E.nr_types];
	void *page = aligned_alloc(PAGE, PAGE);
	char err[256] = "";
	int fd, type;

	assert_non_null(page);
	snprintf(path, sizeof(E.paths[0]), "/tmp/uswap-mmtest-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, 0600), 0);
	assert_int_equal(ftruncate(fd, (off_t)(pages * PAGE)), 0);
	assert_int_equal(uswap_swap_header_build(page, (uint32_t)(pages - 1), NULL, 0, NULL,
						 "mmtest"), 0);
	assert_int_equal(pwrite(fd, page, PAGE, 0), (ssize_t)PAGE);
	close(fd);
	free(page);
	type = uswap_swapon_ex(path, flags, err, sizeof(err));
	if (type < 0)
		fail_msg("swapon %s: %d %s", path, type, err);
	return add_type(type);
}

/* Forget a device the test swapped off itself. */
static void forget_type(int type)
{
	unsigned int i;

	for (i = 0; i < E.nr_types; i++)
		if (E.types[i] == type)
			E.types[i] = -1;
}

static struct uswap_mm *new_mm(void)
{
	unsigned int i;

	for (i = 0; i < MAX_MMS; i++)
		if (!E.mms[i]) {
			assert_int_equal(uswap_mm_create(E.mem, &E.mms[i]), 0);
			return E.mms[i];
		}
	fail_msg("too many mms");
	return NULL;
}

static struct uswap_mm *fork_mm(struct uswap_mm *parent)
{
	unsigned int i;

	for (i = 0; i < MAX_MMS; i++)
		if (!E.mms[i]) {
			assert_int_equal(uswap_mm_fork(parent, &E.mms[i]), 0);
			return E.mms[i];
		}
	fail_msg("too many mms");
	return NULL;
}

static void exit_mm(struct uswap_mm *mm)
{
	unsigned int i;

	for (i = 0; i < MAX_MMS; i++)
		if (E.mms[i] == mm) {
			E.mms[i] = NULL;
			uswap_mm_destroy(mm);
			return;
		}
	fail_msg("unknown mm");
}

static struct uswap_shmem *new_shm(uint64_t pages)
{
	unsigned int i;

	for (i = 0; i < MAX_SHM; i++)
		if (!E.shms[i]) {
			assert_int_equal(uswap_shmem_create(E.mem, pages * PAGE, &E.shms[i]), 0);
			return E.shms[i];
		}
	fail_msg("too many shmem objects");
	return NULL;
}

static int setup(void **state)
{
	(void)state;
	memset(&E, 0, sizeof(E));
	return 0;
}

static int teardown(void **state)
{
	unsigned int i;
	int ret = 0;

	(void)state;
	for (i = MAX_MMS; i-- > 0;)
		if (E.mms[i])
			uswap_mm_destroy(E.mms[i]);
	for (i = 0; i < MAX_SHM; i++)
		if (E.shms[i])
			uswap_shmem_destroy(E.shms[i]);
	uswap_mem_destroy(E.mem);
	for (i = 0; i < E.nr_types; i++) {
		int err;

		if (E.types[i] < 0)
			continue;
		err = uswap_swapoff_type((unsigned int)E.types[i]);
		if (err) {
			fprintf(stderr, "teardown: swapoff of type %d: %d\n", E.types[i], err);
			ret = -1;
		}
		if (E.paths[i][0])
			unlink(E.paths[i]);
	}
	memset(&E, 0, sizeof(E));
	return ret;
}

/* ---- looking inside ---- */

static pte_t peek_pte(struct uswap_mm *mm, uint64_t addr)
{
	return test_peek_pte(mm, addr);
}

static swp_entry_t page_entry(struct uswap_mm *mm, uint64_t addr)
{
	pte_t p = peek_pte(mm, addr);

	if (!pte_is_swap(p))
		fail_msg("page at %" PRIx64 " is not swapped (pte %" PRIx64 ")", addr, p);
	return pte_to_swp_entry(p);
}

/* Order of the folio a present page is mapped from. Quiet budgets only. */
static unsigned int page_folio_order(struct uswap_mm *mm, uint64_t addr)
{
	pte_t p = peek_pte(mm, addr);

	if (!pte_present(p))
		fail_msg("page at %" PRIx64 " is not present (pte %" PRIx64 ")", addr, p);
	return folio_order(page_folio_pfn(pte_pfn(p)));
}

static void count_ptes(struct uswap_mm *mm, uint64_t addr, uint64_t n, uint64_t *none,
		       uint64_t *present, uint64_t *swap)
{
	uint64_t i;

	*none = *present = *swap = 0;
	for (i = 0; i < n; i++) {
		pte_t p = peek_pte(mm, addr + i * PAGE);

		if (pte_none(p))
			(*none)++;
		else if (pte_present(p))
			(*present)++;
		else if (pte_is_swap(p))
			(*swap)++;
		else
			fail_msg("page %" PRIu64 ": unknown pte %" PRIx64, i, p);
	}
}

static uint64_t shm_slot(struct uswap_shmem *shm, uint64_t pg)
{
	uint64_t v;

	pthread_mutex_lock(&shm->lock);
	v = shm->slots[pg];
	pthread_mutex_unlock(&shm->lock);
	return v;
}

static uint64_t inuse(int type)
{
	struct uswap_swap_stat st;

	assert_int_equal(uswap_swap_stat((unsigned int)type, &st), 0);
	return st.inuse_pages;
}

static struct uswap_swap_stat dstats(int type)
{
	struct uswap_swap_stat st;

	assert_int_equal(uswap_swap_stat((unsigned int)type, &st), 0);
	return st;
}

static struct uswap_mem_stats mstats(void)
{
	struct uswap_mem_stats st;

	uswap_mem_get_stats(E.mem, &st);
	return st;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * Reclaim until nothing more can be freed. Return: pages freed.
 * Asynchronous devices finish writes in the background: a pass may free
 * nothing while writes are in flight, for as long as a loaded machine
 * takes. So a few idle passes end it only once the LRU is empty; with
 * folios left, it waits up to ~2 s for them to become reclaimable.
 */
static uint64_t reclaim_all(void)
{
	return test_reclaim_all(E.mem, E.frames);
}

static uint64_t mm_swap_pages(struct uswap_mm *mm)
{
	struct uswap_mm_stats st;

	uswap_mm_get_stats(mm, &st);
	return st.swap_pages;
}

static uint64_t mm_rss(struct uswap_mm *mm)
{
	struct uswap_mm_stats st;

	uswap_mm_get_stats(mm, &st);
	return st.rss_pages;
}

/* ---- cases ---- */

/* PTEs go none -> present -> swap as pages are touched and reclaimed. */
static void test_pte_states(void **state)
{
	struct uswap_mm *mm;
	uint64_t addr, n, none, present, swap, spare = 64;
	int type;

	(void)state;
	mem_setup(4, 0, true);
	type = dev_zram("zram:64M", 0);
	mm = new_mm();
	n = 3 * E.frames;
	assert_int_equal(uswap_mm_mmap(mm, (n + spare) * PAGE, &addr), 0);
	assert_int_equal(addr % (2 << 20), 0);
	count_ptes(mm, addr, n + spare, &none, &present, &swap);
	assert_int_equal(none, n + spare);

	write_range(mm, addr, 0, n, 1, 1);
	count_ptes(mm, addr, n + spare, &none, &present, &swap);
	assert_int_equal(none, spare);			/* never touched */
	assert_int_equal(present + swap, n);
	assert_true(present <= E.frames);
	assert_true(swap >= n - E.frames);		/* did not fit */
	assert_int_equal(mm_rss(mm), present);
	assert_int_equal(mm_swap_pages(mm), swap);
	/* One slot per swap PTE: nothing else uses the device. */
	assert_int_equal(inuse(type), swap);

	check_range(mm, addr, 0, n, 1, 1);
	/* Reading untouched pages gives zeros and makes them present. */
	check_range(mm, addr, n, spare, 1, 0);
	count_ptes(mm, addr, n + spare, &none, &present, &swap);
	assert_int_equal(none, 0);
	assert_int_equal(present + swap, n + spare);
	/* Past the mapping: nothing. */
	{
		uint8_t b;

		assert_int_equal(uswap_mm_read(mm, addr + (n + spare + 600) * PAGE, &b, 1), -EFAULT);
	}
}

/* Large anon folios on zram: out and back in whole, order kept. */
static void test_large_folio_zram(void **state)
{
	const unsigned int order = 4, nr = 1U << order;
	struct uswap_mem_stats a, b;
	struct uswap_mm *mm;
	uint64_t addr, n, i, off0;
	int type;

	(void)state;
	mem_setup(16, order, true);
	type = dev_zram("zram:64M", 0);
	mm = new_mm();
	n = E.frames / 2;
	assert_int_equal(uswap_mm_mmap(mm, n * PAGE, &addr), 0);
	a = mstats();
	write_range(mm, addr, 0, n, 2, 1);
	b = mstats();
	/* One fault per aligned 2^order run: the first touch maps it whole. */
	assert_int_equal(b.minor_faults - a.minor_faults, n / nr);
	for (i = 0; i < n; i += nr * 7)
		assert_int_equal(page_folio_order(mm, addr + i * PAGE), order);

	reclaim_all();
	assert_int_equal(mm_swap_pages(mm), n);
	assert_int_equal(mm_rss(mm), 0);
	a = mstats();
	assert_int_equal(a.thp_splits - b.thp_splits, 0);	/* slots of the order were there */
	assert_int_equal(a.swapouts - b.swapouts, n);
	assert_int_equal(inuse(type), n);
	/* Each run: consecutive offsets, aligned to the folio size. */
	for (i = 0; i < n; i += nr) {
		uint64_t j;

		off0 = swp_offset(page_entry(mm, addr + i * PAGE));
		assert_int_equal(off0 % nr, 0);
		for (j = 1; j < nr; j++)
			assert_int_equal(swp_offset(page_entry(mm, addr + (i + j) * PAGE)), off0 + j);
	}

	check_range(mm, addr, 0, n, 2, 1);
	b = mstats();
	assert_int_equal(b.major_faults - a.major_faults, n / nr);
	assert_int_equal(b.swapins - a.swapins, n);
	assert_int_equal(b.thp_splits - a.thp_splits, 0);
	for (i = 0; i < n; i += nr * 5)
		assert_int_equal(page_folio_order(mm, addr + i * PAGE), order);
	/* Synchronous device: the cache let go after mapping. */
	assert_int_equal(inuse(type), 0);
	assert_int_equal(mm_swap_pages(mm), 0);
}

/* Large anon folios with a file device: they come back as order 0. */
static void test_large_folio_file(void **state)
{
	const unsigned int order = 4;
	struct uswap_mem_stats a, b, c;
	struct uswap_mm *mm;
	uint64_t addr, n, i;

	(void)state;
	mem_setup(16, order, true);
	dev_file(8 * SWAPFILE_CLUSTER + 1, 0);
	mm = new_mm();
	n = E.frames / 2;
	assert_int_equal(uswap_mm_mmap(mm, n * PAGE, &addr), 0);
	a = mstats();
	write_range(mm, addr, 0, n, 3, 1);
	assert_int_equal(page_folio_order(mm, addr), order);
	reclaim_all();
	b = mstats();
	print_message("file device: swap pages %" PRIu64 " rss %" PRIu64 "\n", mm_swap_pages(mm),
		      mm_rss(mm));
	assert_int_equal(mm_swap_pages(mm), n);
	print_message("file device: thp_splits %" PRIu64 " swapouts %" PRIu64 "\n",
		      b.thp_splits - a.thp_splits, b.swapouts - a.swapouts);
	assert_int_equal(b.swapouts - a.swapouts, n);

	check_range(mm, addr, 0, n, 3, 1);
	c = mstats();
	print_message("file device: majors %" PRIu64 " swapins %" PRIu64 " cache hits %" PRIu64
		      "\n", c.major_faults - b.major_faults, c.swapins - b.swapins,
		      c.swapin_cache_hits - b.swapin_cache_hits);
	/* Every page faulted once: a read (with readahead) or a cache hit. */
	assert_int_equal((c.major_faults - b.major_faults) + (c.swapin_cache_hits -
							     b.swapin_cache_hits), n);
	assert_true(c.major_faults > b.major_faults);
	assert_true(c.swapins - b.swapins >= c.major_faults - b.major_faults);
	assert_true(c.swapins - b.swapins <= n);
	for (i = 0; i < n; i++)
		assert_int_equal(page_folio_order(mm, addr + i * PAGE), 0);
	assert_int_equal(mm_swap_pages(mm), 0);
}

/* Background reclaim: kswapd wakes below the low mark and frees frames. */
static void test_reclaim_kswapd(void **state)
{
	struct uswap_mem_stats st;
	struct uswap_mm *mm;
	uint64_t addr, n;
	int i;

	(void)state;
	mem_setup(8, 0, false);
	dev_zram("zram:64M", 0);
	mm = new_mm();
	n = 3 * E.frames;
	assert_int_equal(uswap_mm_mmap(mm, n * PAGE, &addr), 0);
	write_range(mm, addr, 0, n, 4, 1);
	check_range(mm, addr, 0, n, 4, 1);
	st = mstats();
	assert_true(st.kswapd_wakeups > 0);
	assert_true(st.swapouts >= n - E.frames);
	assert_true(st.reclaimed > 0);
	/* Left alone, kswapd brings free frames back above the low mark. */
	for (i = 0; i < 500; i++) {
		st = mstats();
		if (st.free_frames >= E.mem->wmark_low)
			break;
		sleep_ms(10);
	}
	if (st.free_frames < E.mem->wmark_low)
		fail_msg("kswapd left free frames at %" PRIu64 " (low %zu high %zu) wakeups %"
			 PRIu64 " active %" PRIu64 " inactive %" PRIu64, st.free_frames,
			 E.mem->wmark_low, E.mem->wmark_high, st.kswapd_wakeups, st.nr_active,
			 st.nr_inactive);
	check_range(mm, addr, 0, n, 4, 1);
}

/* No kswapd: allocations reclaim directly. */
static void test_direct_reclaim(void **state)
{
	struct uswap_mem_stats st;
	struct uswap_mm *mm;
	uint64_t addr, n;

	(void)state;
	mem_setup(4, 0, true);
	dev_zram("zram:64M", 0);
	mm = new_mm();
	n = 3 * E.frames;
	assert_int_equal(uswap_mm_mmap(mm, n * PAGE, &addr), 0);
	write_range(mm, addr, 0, n, 5, 1);
	write_range(mm, addr, 0, n / 2, 5, 2);
	check_range(mm, addr, 0, n / 2, 5, 2);
	check_range(mm, addr, n / 2, n - n / 2, 5, 1);
	st = mstats();
	assert_int_equal(st.kswapd_wakeups, 0);
	assert_true(st.direct_reclaims > 0);
	assert_true(st.swapouts >= n - E.frames);
	assert_true(st.swapins > 0);
	assert_true(st.reclaimed > 0);
}

/* Swap-out: slot allocated, one reference per PTE, the folio leaves the
 * cache with a workingset shadow, frames return to the budget. */
static void test_swapout_workflow(void **state)
{
	struct uswap_mem_stats a, b;
	struct uswap_mm *mm;
	uint64_t addr, n = 256, i;
	int type;

	(void)state;
	mem_setup(4, 0, true);
	type = dev_zram("zram:64M", 0);
	mm = new_mm();
	assert_int_equal(uswap_mm_mmap(mm, n * PAGE, &addr), 0);
	write_range(mm, addr, 0, n, 6, 1);
	a = mstats();
	assert_int_equal(a.free_frames, a.nr_frames - n);
	assert_int_equal(inuse(type), 0);
	reclaim_all();
	b = mstats();
	assert_int_equal(b.swapouts - a.swapouts, n);
	assert_int_equal(b.free_frames, b.nr_frames);
	assert_int_equal(b.nr_active + b.nr_inactive, 0);
	assert_int_equal(inuse(type), n);
	assert_int_equal(mm_swap_pages(mm), n);
	assert_int_equal(mm_rss(mm), 0);
	for (i = 0; i < n; i++) {
		pte_t p = peek_pte(mm, addr + i * PAGE);
		swp_entry_t e;
		struct folio *f;

		assert_true(pte_is_swap(p));
		assert_true(pte_swp_exclusive(p));	/* only mapper */
		e = pte_to_swp_entry(p);
		assert_int_equal(swp_type(e), type);
		assert_int_equal(swp_swapcount(e), 1);
		f = swap_cache_get_folio(e);
		if (f) {
			folio_put(f);
			fail_msg("page %" PRIu64 " still in the swap cache", i);
		}
		assert_true(swap_cache_get_shadow(e) != 0);
	}
	check_range(mm, addr, 0, n, 6, 1);
}

/* A fault on a swap PTE goes through swap-in: major fault, data back,
 * slot freed after mapping (synchronous device). */
static void test_fault_swapin(void **state)
{
	struct uswap_mem_stats a, b;
	struct uswap_mm *mm;
	uint64_t addr, n = 128, u;
	swp_entry_t e;
	pte_t p;
	int type;

	(void)state;
	mem_setup(4, 0, true);
	type = dev_zram("zram:64M", 0);
	mm = new_mm();
	assert_int_equal(uswap_mm_mmap(mm, n * PAGE, &addr), 0);
	write_range(mm, addr, 0, n, 7, 1);
	reclaim_all();
	assert_int_equal(mm_swap_pages(mm), n);
	u = inuse(type);
	assert_int_equal(u, n);

	/* Read fault. */
	e = page_entry(mm, addr + 10 * PAGE);
	assert_int_equal(swp_swapcount(e), 1);
	a = mstats();
	check_page(mm, addr, 10, 7, 1);
	b = mstats();
	assert_int_equal(b.major_faults - a.major_faults, 1);
	assert_int_equal(b.swapins - a.swapins, 1);
	assert_int_equal(b.swap_frees_after_map - a.swap_frees_after_map, 1);
	p = peek_pte(mm, addr + 10 * PAGE);
	assert_true(pte_present(p));
	assert_true(pte_write(p));		/* exclusive: writable at once */
	assert_int_equal(inuse(type), u - 1);
	assert_int_equal(mm_swap_pages(mm), n - 1);
	assert_int_equal(mm_rss(mm), 1);

	/* Write fault on a swapped page: swap-in, then reuse (no copy). */
	a = mstats();
	write_page(mm, addr, 20, 7, 2);
	b = mstats();
	assert_int_equal(b.major_faults - a.major_faults, 1);
	assert_int_equal(b.cow_copies - a.cow_copies, 0);
	assert_int_equal(inuse(type), u - 2);
	/* A second read of a present page is no fault. */
	a = mstats();
	check_page(mm, addr, 10, 7, 1);
	b = mstats();
	assert_int_equal(b.major_faults + b.minor_faults, a.major_faults + a.minor_faults);

	check_range(mm, addr, 0, 20, 7, 1);
	check_page(mm, addr, 20, 7, 2);
	check_range(mm, addr, 21, n - 21, 7, 1);
	assert_int_equal(inuse(type), 0);
}

/* Compare [@addr + @pg pages + @off, + @len) of a peek with the pattern. */
static void check_peek(struct uswap_mm *mm, uint64_t addr, uint64_t pg, size_t off, size_t len,
		       uint64_t tag, uint64_t ver)
{
	static uint64_t want[2 * PAGE / 8];
	static uint8_t got[2 * PAGE];
	int err;

	pat_fill(want, tag, pg, ver);
	pat_fill(want + PAGE / 8, tag, pg + 1, ver);
	memset(got, 0xa5, sizeof(got));
	err = uswap_mm_peek(mm, addr + pg * PAGE + off, got, len);
	if (err)
		fail_msg("peek page %" PRIu64 "+%zu: %d", pg, off, err);
	if (memcmp((uint8_t *)want + off, got, len))
		fail_msg("peek mismatch: page %" PRIu64 "+%zu expected v%" PRIu64, pg, off, ver);
}

/*
 * uswap_mm_peek() on @design: a swapped page is read without being
 * mapped, its slot and swap PTE stay, and once reclaim has dropped the
 * read folios (clean) nothing was written again; a later fault, a present
 * page, a page never touched (zeros) and an unmapped address (-EFAULT).
 */
static void peek_case(const char *design)
{
	struct uswap_swap_stat a, b;
	struct uswap_mm *mm;
	uint64_t addr, n = 64, u;
	char err[256] = "";
	uint8_t buf[64];
	int type;

	mem_setup(4, 0, true);
	type = uswap_swapon_spec_design("zram:64M", 0, design, err, sizeof(err));
	if (type < 0)
		fail_msg("swapon %s: %d %s", design, type, err);
	add_type(type);
	mm = new_mm();
	assert_int_equal(uswap_mm_mmap(mm, (n + 4) * PAGE, &addr), 0);
	write_range(mm, addr, 0, n, 11, 1);
	reclaim_all();
	assert_int_equal(mm_swap_pages(mm), n);
	u = inuse(type);
	a = dstats(type);
	for (uint64_t i = 0; i < n; i++)
		check_peek(mm, addr, i, 0, PAGE, 11, 1);
	check_peek(mm, addr, 7, 100, PAGE, 11, 1);	/* across two pages */
	check_peek(mm, addr, 9, 4000, 96, 11, 1);
	assert_int_equal(mm_swap_pages(mm), n);		/* nothing mapped */
	assert_int_equal(mm_rss(mm), 0);
	assert_int_equal(inuse(type), u);		/* every slot kept */
	/* drop-behind: the folios read for the peeks are gone already */
	assert_true(mstats().peek_drops > 0);
	assert_true(mstats().free_frames >= E.frames - 8);
	reclaim_all();
	b = dstats(type);
	assert_true(b.reads > a.reads);
	assert_int_equal(b.writes, a.writes);		/* dropped clean */
	assert_int_equal(inuse(type), u);
	check_peek(mm, addr, 3, 0, PAGE, 11, 1);	/* read again */

	/* A fault after a peek maps the same bytes; a present page peeks as is. */
	check_page(mm, addr, 5, 11, 1);
	write_page(mm, addr, 6, 11, 2);
	check_peek(mm, addr, 6, 0, PAGE, 11, 2);
	check_peek(mm, addr, 5, 0, PAGE, 11, 1);
	assert_int_equal(mm_rss(mm), 2);
	/* Never touched: zeros, nothing faulted in. */
	check_peek(mm, addr, n + 1, 0, PAGE, 11, 0);
	assert_int_equal(mm_rss(mm), 2);
	assert_int_equal(uswap_mm_peek(mm, addr + (n + 8) * PAGE, buf, sizeof(buf)), -EFAULT);
	check_range(mm, addr, 0, 5, 11, 1);
	check_range(mm, addr, 7, n - 7, 11, 1);
}

/* uswap_mm_same() on @design: a swapped page against its bytes and
 * others (read from the device, or its cache folio), a present page, an
 * untouched one (zeros), a zero-flagged slot; no frame taken, nothing
 * mapped, nothing written; -EINVAL, -EFAULT. */
static void same_case(const char *design)
{
	static uint64_t page[PAGE / 8];
	struct uswap_mem_stats m0, m1;
	struct uswap_swap_stat a, b;
	struct uswap_mm *mm;
	uint64_t addr, n = 32;
	char err[256] = "";
	int type;

	mem_setup(4, 0, true);
	type = uswap_swapon_spec_design("zram:64M", 0, design, err, sizeof(err));
	if (type < 0)
		fail_msg("swapon %s: %d %s", design, type, err);
	add_type(type);
	mm = new_mm();
	assert_int_equal(uswap_mm_mmap(mm, (n + 4) * PAGE, &addr), 0);
	write_range(mm, addr, 0, n, 13, 1);
	memset(page, 0, PAGE);
	assert_int_equal(uswap_mm_write(mm, addr + (n - 1) * PAGE, page, PAGE), 0);
	reclaim_all();
	assert_int_equal(mm_swap_pages(mm), n);
	a = dstats(type);
	m0 = mstats();
	for (uint64_t i = 0; i + 1 < n; i++) {
		pat_fill(page, 13, i, 1);
		assert_int_equal(uswap_mm_same(mm, addr + i * PAGE, page), 1);
		page[i % (PAGE / 8)] ^= 1;
		assert_int_equal(uswap_mm_same(mm, addr + i * PAGE, page), 0);
	}
	memset(page, 0, PAGE);
	assert_int_equal(uswap_mm_same(mm, addr + (n - 1) * PAGE, page), 1);	/* zero slot */
	assert_int_equal(uswap_mm_same(mm, addr + n * PAGE, page), 1);		/* untouched */
	page[7] = 1;
	assert_int_equal(uswap_mm_same(mm, addr + (n - 1) * PAGE, page), 0);
	assert_int_equal(uswap_mm_same(mm, addr + n * PAGE, page), 0);
	m1 = mstats();
	b = dstats(type);
	assert_int_equal(m1.free_frames, m0.free_frames);	/* no frame taken */
	assert_int_equal(m1.swapins, m0.swapins);
	assert_int_equal(mm_swap_pages(mm), n);			/* nothing mapped */
	assert_int_equal(mm_rss(mm), 0);
	assert_int_equal(b.writes, a.writes);
	assert_true(b.reads - a.reads >= 2 * (n - 1) - 2);	/* each read, none cached */
	/* A cached folio answers too (a read fault maps one in the cache). */
	check_page(mm, addr, 3, 13, 1);
	pat_fill(page, 13, 3, 1);
	assert_int_equal(uswap_mm_same(mm, addr + 3 * PAGE, page), 1);
	assert_int_equal(uswap_mm_same(mm, addr + 3 * PAGE + 8, page), -EINVAL);
	assert_int_equal(uswap_mm_same(mm, addr + (n + 8) * PAGE, page), -EFAULT);
	check_range(mm, addr, 0, n - 1, 13, 1);
}

static void test_same_table(void **state)
{
	(void)state;
	same_case("table");
}

static void test_same_legacy(void **state)
{
	(void)state;
	same_case("legacy");
}

static void test_peek_table(void **state)
{
	(void)state;
	peek_case("table");
}

/* The old design reads a count-1 slot of a synchronous device around the
 * cache (the bypass): the peek gives its SWAP_HAS_CACHE pin back. */
static void test_peek_legacy(void **state)
{
	(void)state;
	peek_case("legacy");
}

/* COW after fork: each side sees its own data; copies and reuses counted,
 * both for present shared pages and for shared swapped pages. */
static void test_cow_after_fork(void **state)
{
	struct uswap_mem_stats a, b;
	struct uswap_mm *parent, *child, *child2;
	uint64_t addr, n = 256, i;

	(void)state;
	mem_setup(16, 0, true);
	dev_zram("zram:64M", 0);
	parent = new_mm();
	assert_int_equal(uswap_mm_mmap(parent, n * PAGE, &addr), 0);
	write_range(parent, addr, 0, n, 8, 1);
	child = fork_mm(parent);
	assert_false(pte_write(peek_pte(parent, addr)));	/* write-protected */
	assert_false(pte_write(peek_pte(child, addr)));

	a = mstats();
	for (i = 0; i < n; i += 2)
		write_page(child, addr, i, 8, 2);
	b = mstats();
	assert_int_equal(b.cow_copies - a.cow_copies, n / 2);
	check_range(parent, addr, 0, n, 8, 1);
	for (i = 0; i < n; i++)
		check_page(child, addr, i, 8, i % 2 ? 1 : 2);

	/* The parent: even pages are its own now (reuse), odd still shared. */
	a = mstats();
	write_range(parent, addr, 0, n, 8, 3);
	b = mstats();
	assert_int_equal(b.cow_copies - a.cow_copies, n / 2);
	assert_int_equal(b.cow_reuses - a.cow_reuses, n / 2);
	check_range(parent, addr, 0, n, 8, 3);
	for (i = 0; i < n; i++)
		check_page(child, addr, i, 8, i % 2 ? 1 : 2);
	exit_mm(child);
	check_range(parent, addr, 0, n, 8, 3);

	/* Shared pages swapped out, then written by one side. */
	child2 = fork_mm(parent);
	reclaim_all();
	assert_int_equal(mm_swap_pages(parent), n);
	assert_int_equal(mm_swap_pages(child2), n);
	/* Shared when swapped out: no side may reuse the page on swap-in. */
	for (i = 0; i < n; i++) {
		if (pte_swp_exclusive(peek_pte(parent, addr + i * PAGE)) ||
		    pte_swp_exclusive(peek_pte(child2, addr + i * PAGE)))
			fail_msg("page %" PRIu64 " shared by parent and child was swapped out "
				 "with an exclusive swap PTE (parent %d child %d)", i,
				 pte_swp_exclusive(peek_pte(parent, addr + i * PAGE)),
				 pte_swp_exclusive(peek_pte(child2, addr + i * PAGE)));
	}
	a = mstats();
	for (i = 0; i < n / 4; i++)
		write_page(child2, addr, i, 8, 4);
	b = mstats();
	check_range(parent, addr, 0, n, 8, 3);
	assert_int_equal(b.cow_copies - a.cow_copies, n / 4);
	check_range(parent, addr, 0, n, 8, 3);
	check_range(child2, addr, 0, n / 4, 8, 4);
	check_range(child2, addr, n / 4, n - n / 4, 8, 3);
}

/* Fork duplicates swap entries: the slot's count follows the mappings. */
static void test_fork_dup_swap(void **state)
{
	struct uswap_mm *parent, *child;
	uint64_t addr, n = 64, pg = 5;
	swp_entry_t e;
	pte_t p;
	int type;

	(void)state;
	mem_setup(8, 0, true);
	type = dev_zram("zram:64M", 0);
	parent = new_mm();
	assert_int_equal(uswap_mm_mmap(parent, n * PAGE, &addr), 0);
	write_range(parent, addr, 0, n, 9, 1);
	reclaim_all();
	assert_int_equal(inuse(type), n);
	e = page_entry(parent, addr + pg * PAGE);
	assert_true(pte_swp_exclusive(peek_pte(parent, addr + pg * PAGE)));
	assert_int_equal(swp_swapcount(e), 1);

	child = fork_mm(parent);
	assert_int_equal(swp_swapcount(e), 2);
	p = peek_pte(child, addr + pg * PAGE);
	assert_true(pte_is_swap(p));
	assert_int_equal(pte_to_swp_entry(p).val, e.val);
	assert_false(pte_swp_exclusive(p));
	assert_false(pte_swp_exclusive(peek_pte(parent, addr + pg * PAGE)));
	assert_int_equal(inuse(type), n);		/* no new slots */
	assert_int_equal(mm_swap_pages(child), n);
	exit_mm(child);
	assert_int_equal(swp_swapcount(e), 1);
	assert_int_equal(inuse(type), n);

	child = fork_mm(parent);
	assert_int_equal(swp_swapcount(e), 2);
	check_page(child, addr, pg, 9, 1);		/* child maps it: count 1 */
	assert_int_equal(swp_swapcount(e), 1);
	assert_true(pte_is_swap(peek_pte(parent, addr + pg * PAGE)));
	check_page(parent, addr, pg, 9, 1);		/* parent too: slot freed */
	assert_int_equal(swp_swapcount(e), 0);
	assert_int_equal(inuse(type), n - 1);
	check_range(child, addr, 0, n, 9, 1);
	check_range(parent, addr, 0, n, 9, 1);
	assert_int_equal(inuse(type), 0);
}

/* munmap, madvise(DONTNEED) and exit put swap entries and free frames;
 * after the last exit and a reclaim pass nothing is left. */
static void test_exit_munmap_madvise(void **state)
{
	struct uswap_mem_stats st;
	struct uswap_mm *mm, *child;
	uint64_t a, b, c, n, u0, u1, half;
	int type;

	(void)state;
	mem_setup(4, 0, false);
	type = dev_zram("zram:64M", 0);
	mm = new_mm();
	n = E.frames;
	assert_int_equal(uswap_mm_mmap(mm, n * PAGE, &a), 0);
	assert_int_equal(uswap_mm_mmap(mm, n * PAGE, &b), 0);
	assert_int_equal(uswap_mm_mmap(mm, n * PAGE, &c), 0);
	write_range(mm, a, 0, n, 10, 1);
	write_range(mm, b, 0, n, 11, 1);
	write_range(mm, c, 0, n, 12, 1);
	reclaim_all();
	u0 = inuse(type);
	assert_true(u0 >= 2 * n);

	assert_int_equal(uswap_mm_munmap(mm, a), 0);
	assert_int_equal(uswap_mm_munmap(mm, a), -EINVAL);
	u1 = inuse(type);
	assert_true(u1 <= u0 - n + 0);	/* region a was all swapped */
	{
		uint8_t x;

		assert_int_equal(uswap_mm_read(mm, a, &x, 1), -EFAULT);
	}

	half = n / 2;
	assert_int_equal(uswap_mm_madvise_dontneed(mm, b, half * PAGE), 0);
	assert_true(inuse(type) <= u1 - half);
	check_range(mm, b, 0, half, 11, 0);		/* zero-fill again */
	check_range(mm, b, half, n - half, 11, 1);
	assert_int_equal(uswap_mm_madvise_dontneed(mm, b + n * PAGE, PAGE), -EINVAL);

	child = fork_mm(mm);
	exit_mm(mm);
	check_range(child, c, 0, n, 12, 1);
	check_range(child, b, half, n - half, 11, 1);
	exit_mm(child);

	reclaim_all();
	assert_int_equal(inuse(type), 0);
	st = mstats();
	assert_int_equal(st.free_frames, st.nr_frames);
	assert_int_equal(st.nr_active + st.nr_inactive, 0);
}

/* swapoff brings every page back across mms and shmem, then the device
 * is gone and the data intact. */
static void test_swapoff_all(void **state)
{
	struct uswap_swap_stat sst;
	struct uswap_mm *m1, *m2, *m3;
	struct uswap_shmem *shm;
	uint64_t a1, a3, n1, n3, ns, i;
	int type;

	(void)state;
	mem_setup(16, 0, false);
	type = dev_zram("zram:64M", 0);
	n1 = E.frames / 4;
	n3 = E.frames / 8;
	ns = E.frames / 8;
	m1 = new_mm();
	assert_int_equal(uswap_mm_mmap(m1, n1 * PAGE, &a1), 0);
	write_range(m1, a1, 0, n1, 13, 1);
	m2 = fork_mm(m1);
	for (i = 0; i < n1; i += 2)
		write_page(m2, a1, i, 13, 2);
	m3 = new_mm();
	assert_int_equal(uswap_mm_mmap(m3, n3 * PAGE, &a3), 0);
	write_range(m3, a3, 0, n3, 14, 1);
	shm = new_shm(ns);
	for (i = 0; i < ns; i++)
		shm_write(shm, i, 15, 1);
	/*
	 * A shmem page accessed once is never reclaimed (test_shmem_swap):
	 * read each page again so that it is activated, which clears
	 * PG_referenced on the way back to the inactive list, and swapoff
	 * still has shmem entries to bring back.
	 */
	for (i = 0; i < ns; i++)
		shm_check(shm, i, 15, 1);
	reclaim_all();
	assert_true(mm_swap_pages(m1) > 0 && mm_swap_pages(m2) > 0 && mm_swap_pages(m3) > 0);
	for (i = 0; i < ns; i++)
		assert_true(shm_slot(shm, i) & PTE_SWAP);
	assert_true(inuse(type) > 0);

	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	forget_type(type);
	assert_int_not_equal(uswap_swap_stat((unsigned int)type, &sst), 0);	/* gone */
	assert_int_equal(mm_swap_pages(m1), 0);
	assert_int_equal(mm_swap_pages(m2), 0);
	assert_int_equal(mm_swap_pages(m3), 0);
	for (i = 0; i < ns; i++) {
		uint64_t v = shm_slot(shm, i);

		assert_true(v && !(v & PTE_SWAP));
	}
	check_range(m1, a1, 0, n1, 13, 1);
	for (i = 0; i < n1; i++)
		check_page(m2, a1, i, 13, i % 2 ? 1 : 2);
	check_range(m3, a3, 0, n3, 14, 1);
	for (i = 0; i < ns; i++)
		shm_check(shm, i, 15, 1);
}

/* swapoff that cannot fit the pages fails with -ENOMEM and changes
 * nothing; after memory is freed it succeeds. */
static void test_swapoff_enomem(void **state)
{
	struct uswap_swap_stat sst;
	struct uswap_mem_stats a, b;
	struct uswap_mm *mm;
	uint64_t ra, rb, rc, na, nb, u;
	int type;

	(void)state;
	mem_setup(4, 0, true);
	type = dev_zram("zram:64M", 0);
	mm = new_mm();
	na = E.frames / 2;
	nb = E.frames * 5 / 4;
	assert_int_equal(uswap_mm_mmap(mm, na * PAGE, &ra), 0);
	assert_int_equal(uswap_mm_mmap(mm, nb * PAGE, &rb), 0);
	assert_int_equal(uswap_mm_mmap(mm, nb * PAGE, &rc), 0);
	write_range(mm, ra, 0, na, 16, 1);
	write_range(mm, rb, 0, nb, 17, 1);
	write_range(mm, rc, 0, nb, 18, 1);
	u = inuse(type);
	assert_true(u > E.frames);

	assert_int_equal(uswap_swapoff_type((unsigned int)type), -ENOMEM);
	assert_int_equal(uswap_swap_stat((unsigned int)type, &sst), 0);
	assert_true(sst.flags & 2 /* SWP_WRITEOK */);
	assert_int_equal(sst.inuse_pages, u);
	/* Still swapping: more pages go out and come back. */
	a = mstats();
	check_range(mm, ra, 0, na, 16, 1);
	check_range(mm, rb, 0, nb, 17, 1);
	write_range(mm, rc, 0, nb, 18, 2);
	check_range(mm, rc, 0, nb, 18, 2);
	b = mstats();
	assert_true(b.swapouts > a.swapouts);
	assert_true(b.swapins > a.swapins);

	assert_int_equal(uswap_mm_munmap(mm, rb), 0);
	assert_int_equal(uswap_mm_munmap(mm, rc), 0);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	forget_type(type);
	assert_int_equal(mm_swap_pages(mm), 0);
	check_range(mm, ra, 0, na, 16, 1);
}

/* shmem pages swap with one reference each and come back intact. */
static void test_shmem_swap(void **state)
{
	struct uswap_shmem *shm;
	uint64_t n, i, swapped = 0;
	int type;

	(void)state;
	mem_setup(4, 0, true);
	type = dev_zram("zram:64M", 0);
	n = 2 * E.frames;
	shm = new_shm(n);
	for (i = 0; i < n; i++)
		shm_write(shm, i, 19, 1);
	for (i = 0; i < n; i++) {
		uint64_t v = shm_slot(shm, i);

		assert_true(v != 0);
		if (v & PTE_SWAP) {
			assert_int_equal(swp_type(pte_to_swp_entry(v)), type);
			assert_int_equal(swp_swapcount(pte_to_swp_entry(v)), 1);
			swapped++;
		}
	}
	assert_true(swapped >= n - E.frames);
	assert_int_equal(inuse(type), swapped);
	for (i = 0; i < n; i++)
		shm_check(shm, i, 19, 1);
	for (i = 0; i < n; i += 3)
		shm_write(shm, i, 19, 2);
	for (i = 0; i < n; i++)
		shm_check(shm, i, 19, i % 3 ? 1 : 2);
	{
		uint8_t x;

		assert_int_equal(uswap_shmem_read(shm, n * PAGE, &x, 1), -EFAULT);
	}
	uswap_shmem_destroy(shm);
	E.shms[0] = NULL;
	assert_int_equal(inuse(type), 0);
}

/* shmem on a file device: the write is asynchronous, so the folio is
 * still in memory, clean, after the pass that gave it up to its swap
 * entry; the next pass must free it (it belongs to the object no more). */
static void test_shmem_swap_file(void **state)
{
	struct uswap_shmem *shm;
	struct uswap_mem_stats st;
	uint64_t n, i;
	int type;

	(void)state;
	mem_setup(4, 0, true);
	type = dev_file(2 * SWAPFILE_CLUSTER + 1, 0);
	n = E.frames / 2;
	shm = new_shm(n);
	for (i = 0; i < n; i++)
		shm_write(shm, i, 23, 1);
	reclaim_all();
	st = mstats();
	assert_int_equal(st.nr_active + st.nr_inactive, 0);
	assert_int_equal(st.free_frames, st.nr_frames);
	for (i = 0; i < n; i++)
		assert_true(shm_slot(shm, i) & PTE_SWAP);
	assert_int_equal(inuse(type), n);
	for (i = 0; i < n; i++)
		shm_check(shm, i, 23, 1);
	uswap_shmem_destroy(shm);
	E.shms[0] = NULL;
	assert_int_equal(inuse(type), 0);
}

/* The object destroyed while reclaim has given pages up to swap with
 * their writes in flight (one short pass: most are still cached, naming
 * the object): reclaim must then free them as plain swap-cache folios,
 * without reading the freed object (ASan) and without keeping them. */
static void test_shmem_destroy_given_up(void **state)
{
	struct uswap_shmem *shm;
	struct uswap_mem_stats st;
	uint64_t n, i;
	int type;

	(void)state;
	mem_setup(4, 0, true);
	type = dev_file(2 * SWAPFILE_CLUSTER + 1, 0);
	n = E.frames / 2;
	shm = new_shm(n);
	for (i = 0; i < n; i++)
		shm_write(shm, i, 29, 1);
	uswap_mem_reclaim(E.mem, 1);	/* gives pages up, writes in flight */
	uswap_shmem_destroy(shm);
	E.shms[0] = NULL;
	reclaim_all();
	st = mstats();
	assert_int_equal(inuse(type), 0);
	assert_int_equal(st.free_frames, st.nr_frames);
}

/* A hot set re-read under pressure from a cold stream refaults, and the
 * workingset shadows activate the refaulting pages. */
static void test_workingset_refault(void **state)
{
	struct uswap_mem_stats st;
	struct uswap_mm *mm;
	uint64_t hot_addr, cold_addr, hot, cold, chunk, pos = 0, i;
	int round;

	(void)state;
	mem_setup(4, 0, true);
	dev_zram("zram:64M", 0);
	mm = new_mm();
	hot = E.frames / 2;
	cold = 4 * E.frames;
	chunk = E.frames / 4;
	assert_int_equal(uswap_mm_mmap(mm, hot * PAGE, &hot_addr), 0);
	assert_int_equal(uswap_mm_mmap(mm, cold * PAGE, &cold_addr), 0);
	write_range(mm, hot_addr, 0, hot, 20, 1);
	write_range(mm, cold_addr, 0, cold, 21, 1);
	for (round = 0; round < 40; round++) {
		check_range(mm, hot_addr, 0, hot, 20, 1);
		for (i = 0; i < chunk; i++, pos = (pos + 1) % cold)
			check_page(mm, cold_addr, pos, 21, 1);
	}
	st = mstats();
	print_message("refaults %" PRIu64 " activations %" PRIu64 " majors %" PRIu64
		      " active %" PRIu64 " inactive %" PRIu64 "\n", st.refaults,
		      st.refault_activations, st.major_faults, st.nr_active, st.nr_inactive);
	assert_true(st.refaults > 0);
	assert_true(st.refault_activations > 0);
}

/* Exit while reclaim's writes to a file device are in flight: once they
 * complete and a reclaim pass has run, every slot and frame is free. */
static void test_exit_during_writeback(void **state)
{
	struct uswap_mem_stats st;
	struct uswap_mm *mm;
	uint64_t addr, n;
	int type, i;

	(void)state;
	mem_setup(16, 4, true);
	type = dev_file(8 * SWAPFILE_CLUSTER + 1, 0);
	mm = new_mm();
	n = E.frames / 2;
	assert_int_equal(uswap_mm_mmap(mm, n * PAGE, &addr), 0);
	write_range(mm, addr, 0, n, 22, 1);
	for (i = 0; i < 3; i++)
		uswap_mem_reclaim(E.mem, E.frames);	/* writes started, not all done */
	exit_mm(mm);
	reclaim_all();
	st = mstats();
	if (inuse(type) || st.free_frames != st.nr_frames)
		fail_msg("after exit and reclaim: inuse %" PRIu64 ", free frames %" PRIu64
			 " of %" PRIu64 ", lru %" PRIu64 "+%" PRIu64, inuse(type), st.free_frames,
			 st.nr_frames, st.nr_active, st.nr_inactive);
}

/* The same with large folios, and the budget destroyed at once (by the
 * teardown): it must wait for the writes and free every frame. */
static void test_destroy_during_writeback(void **state)
{
	struct uswap_mm *mm;
	uint64_t addr, n;

	(void)state;
	mem_setup(16, 4, true);
	dev_file(8 * SWAPFILE_CLUSTER + 1, 0);
	mm = new_mm();
	n = E.frames / 2;
	assert_int_equal(uswap_mm_mmap(mm, n * PAGE, &addr), 0);
	write_range(mm, addr, 0, n, 23, 1);
	uswap_mem_reclaim(E.mem, E.frames);	/* writes in flight */
	exit_mm(mm);
}

/*
 * A device of @pages slots (header included) whose backend is wrapped in
 * the fault injector, swapped on through uswap_swapon_backend(); *fault is
 * the wrapper, to arm. zram (@file false) is synchronous: no readahead,
 * one read per fault. A file (0600, in /tmp) is read through io_uring
 * (or pread), asynchronously, with readahead.
 */
static int dev_fault(uint64_t pages, bool file, struct swap_backend **fault)
{
	struct swap_backend *inner, *fb;
	char *path = E.paths[E.nr_types];
	void *page = aligned_alloc(PAGE, PAGE);
	char err[256] = "";
	int fd, ret, type;

	assert_non_null(page);
	path[0] = 0;
	if (file) {
		snprintf(path, sizeof(E.paths[0]), "/tmp/uswap-mmtest-XXXXXX");
		fd = mkstemp(path);
		assert_true(fd >= 0);
		assert_int_equal(fchmod(fd, 0600), 0);
		assert_int_equal(ftruncate(fd, (off_t)(pages * PAGE)), 0);
		close(fd);
		ret = swap_backend_file_open(path, 0, &inner);
	} else {
		ret = swap_backend_zram_create(pages, SWAP_ZRAM_LZ4, &inner);
	}
	if (ret)
		fail_msg("backend: %d", ret);
	ret = swap_backend_fault_create(inner, &fb);
	if (ret) {
		swap_backend_destroy(inner);
		free(page);
		fail_msg("fault injection wrapper: %d", ret);
	}
	assert_int_equal(uswap_swap_header_build(page, (uint32_t)(pages - 1), NULL, 0, NULL,
						 "mmtest-fault"), 0);
	assert_int_equal(swap_backend_write(fb, 0, 1, page), 0);
	free(page);
	type = uswap_swapon_backend(fb, 0, err, sizeof(err));
	if (type < 0) {
		swap_backend_destroy(fb);
		fail_msg("uswap_swapon_backend: %d %s", type, err);
	}
	*fault = fb;
	return add_type(type);
}

/*
 * Read errors: a failed device read loses that page only. The fault
 * returns -EIO (SIGBUS in a real process), counted as a read error by the
 * budget and the device; the page stays swapped out in its slot, every
 * other page reads back intact, and once the slot reads again the page
 * does too: the failed read dropped nothing.
 *
 * With readahead (file) a neighbour's fault may read the bad slot ahead:
 * that read fails on its own request, and the bad page's next fault
 * reports it (-EIO, as the kernel's do_swap_page on a !uptodate folio).
 * Each failed read is reported by exactly one fault, so at rest the
 * budget's read errors equal the device's.
 */
static void read_error_case(bool file)
{
	static uint64_t buf[PAGE / 8];
	struct uswap_mem_stats a, b;
	struct uswap_swap_stat da, db;
	struct swap_backend *fb;
	struct uswap_mm *mm;
	uint64_t addr, n = 64, bad = 17;
	swp_entry_t e;
	int type;

	mem_setup(4, 0, true);
	type = dev_fault(4 * SWAPFILE_CLUSTER, file, &fb);
	mm = new_mm();
	assert_int_equal(uswap_mm_mmap(mm, n * PAGE, &addr), 0);
	write_range(mm, addr, 0, n, 41, 1);
	reclaim_all();
	assert_int_equal(mm_swap_pages(mm), n);
	assert_int_equal(inuse(type), n);
	e = page_entry(mm, addr + bad * PAGE);
	assert_int_equal(swp_type(e), type);
	assert_int_equal(swap_backend_fault_fail_offset(fb, SWAP_FAULT_READ, swp_offset(e), -EIO),
			 0);

	/* The bad page: -EIO, for reads and writes alike, counted each time. */
	a = mstats();
	da = dstats(type);
	assert_int_equal(uswap_mm_read(mm, addr + bad * PAGE, buf, PAGE), -EIO);
	b = mstats();
	db = dstats(type);
	assert_int_equal(b.read_errors - a.read_errors, 1);
	assert_int_equal(b.sigbus - a.sigbus, 1);
	assert_int_equal(db.read_errors - da.read_errors, 1);
	assert_int_equal(swap_backend_fault_injected(fb), 1);
	pat_fill(buf, 41, bad, 2);
	assert_int_equal(uswap_mm_write(mm, addr + bad * PAGE, buf, PAGE), -EIO);
	assert_int_equal(mstats().read_errors - a.read_errors, 2);
	assert_int_equal(dstats(type).read_errors - da.read_errors, 2);
	/* Still swapped out in the same slot, which is still held. */
	assert_int_equal(page_entry(mm, addr + bad * PAGE).val, e.val);
	assert_int_equal(swp_swapcount(e), 1);
	assert_int_equal(inuse(type), n);

	/* Every other page: intact, and no fault fails. */
	a = mstats();
	da = dstats(type);
	check_range(mm, addr, 0, bad, 41, 1);
	check_range(mm, addr, bad + 1, n - bad - 1, 41, 1);
	b = mstats();
	db = dstats(type);
	assert_int_equal(b.read_errors - a.read_errors, 0);
	assert_int_equal(b.sigbus - a.sigbus, 0);
	if (!file) {
		assert_int_equal(db.read_errors - da.read_errors, 0);
		assert_int_equal(db.reads - da.reads, n - 1);
		assert_int_equal(b.swapins - a.swapins, n - 1);
	} else {
		/* At most the bad slot read ahead, once (then cached). */
		assert_in_range(db.read_errors - da.read_errors, 0, 1);
	}
	assert_int_equal(mm_swap_pages(mm), 1);
	/* Read faults keep the cache copy of a page on a device that is not
	 * synchronous (should_try_to_free_swap(): no write, swap not full);
	 * a synchronous device's goes once mapped (phase II). */
	if (file)
		assert_int_equal(inuse(type), n);
	else
		assert_int_equal(inuse(type), 1);

	/* The bad page still fails; each failed read reported once. */
	assert_int_equal(uswap_mm_read(mm, addr + bad * PAGE, buf, PAGE), -EIO);
	a = mstats();
	da = dstats(type);
	assert_int_equal(a.read_errors, 3);
	assert_int_equal(a.sigbus, 3);
	assert_int_equal(da.read_errors, 3);

	/* The slot reads again: the page comes back as it was written. */
	swap_backend_fault_clear(fb);
	check_page(mm, addr, bad, 41, 1);
	assert_int_equal(mstats().read_errors, 3);
	assert_int_equal(dstats(type).read_errors, 3);
	assert_int_equal(swap_backend_fault_injected(fb), 3);
	assert_int_equal(dstats(type).reads - da.reads, 1);
	assert_int_equal(mm_swap_pages(mm), 0);
	/* The file device's read-fault copies stay cached (see above). */
	assert_int_equal(inuse(type), file ? n : 0);
}

/* swapoff of a device that fails a shmem page's read: the page is lost
 * (-EIO on access, counted in swapoff_lost), swapoff finishes, every other
 * page comes back intact. */
static void test_swapoff_lost_shmem(void **state)
{
	static uint8_t buf[PAGE];
	struct uswap_mem_stats a;
	struct swap_backend *fb;
	struct uswap_shmem *shm;
	uint64_t n, i, bad = 5;
	swp_entry_t e;
	int type;

	(void)state;
	mem_setup(4, 0, true);
	type = dev_fault(2 * SWAPFILE_CLUSTER, false, &fb);
	n = E.frames / 2;
	shm = new_shm(n);
	for (i = 0; i < n; i++)
		shm_write(shm, i, 29, 1);
	reclaim_all();
	for (i = 0; i < n; i++)
		assert_true(shm_slot(shm, i) & PTE_SWAP);
	e = pte_to_swp_entry(shm_slot(shm, bad));
	assert_int_equal(swap_backend_fault_fail_offset(fb, SWAP_FAULT_READ, swp_offset(e), -EIO),
			 0);
	a = mstats();
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	forget_type(type);
	assert_int_equal(mstats().swapoff_lost - a.swapoff_lost, 1);
	assert_int_equal(uswap_shmem_read(shm, bad * PAGE, buf, PAGE), -EIO);
	assert_int_equal(uswap_shmem_write(shm, bad * PAGE, buf, PAGE), -EIO);
	for (i = 0; i < n; i++)
		if (i != bad)
			shm_check(shm, i, 29, 1);
	uswap_shmem_destroy(shm);
	E.shms[0] = NULL;
}

static void test_read_error(void **state)
{
	(void)state;
	read_error_case(false);
}

static void test_read_error_file(void **state)
{
	(void)state;
	read_error_case(true);
}

#define T(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_pte_states),
		T(test_large_folio_zram),
		T(test_large_folio_file),
		T(test_reclaim_kswapd),
		T(test_direct_reclaim),
		T(test_swapout_workflow),
		T(test_fault_swapin),
		T(test_peek_table),
		T(test_peek_legacy),
		T(test_same_table),
		T(test_same_legacy),
		T(test_cow_after_fork),
		T(test_fork_dup_swap),
		T(test_exit_munmap_madvise),
		T(test_swapoff_all),
		T(test_swapoff_enomem),
		T(test_shmem_swap),
		T(test_shmem_swap_file),
		T(test_shmem_destroy_given_up),
		T(test_swapoff_lost_shmem),
		T(test_workingset_refault),
		T(test_read_error),
		T(test_read_error_file),
		T(test_exit_during_writeback),
		T(test_destroy_during_writeback),
	};

	return cmocka_run_group_tests_name("mm_basic", tests, NULL, NULL);
}
