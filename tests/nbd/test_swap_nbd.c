/* SPDX-License-Identifier: MIT */
/*
 * Swap over NBD, through the swap and mm layers: an mm workload striped
 * over two nbdkit servers at one priority (pages split between them, every
 * page read back, racing readers), then one server killed: only the pages
 * on the dead device see -EIO, new swap-out goes to the live one, and
 * swapoff of the dead device finishes, counting exactly those pages as
 * lost. Also the same workload through nbd-server, and swapon's bad input
 * (a bad URI, an export without a header, an export too small): a clear
 * error and nothing changed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <uswap/legacy.h>
#include <uswap/mm.h>
#include <uswap/swap.h>
#include "io/backend.h"
#include "mm/mm_internal.h"
#include "nbd_server.h"
#include "testutil.h"
#include "swap/swap_header.h"

#define PAGE		USWAP_PAGE_SIZE
#define NR_PAGES	6000U		/* 23 MiB of data, budget 4 MiB */
#define SHM_PAGES	800U		/* a shmem object beside them */

static char dir[128];

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static void pat_fill(void *buf, uint64_t pg, uint64_t ver)
{
	uint64_t *w = buf, s = mix64(pg ^ mix64(ver + 0x77)), i;

	for (i = 0; i < PAGE / 8; i++)
		w[i] = s + i * 0x9e3779b97f4a7c15ULL;
}

/* Format the export as `uswap mkswap URI` does: a header in slot 0. */
static void format_export(const char *uri)
{
	struct swap_backend *be;
	uint8_t uuid[16] = { 1, 2, 3 };
	void *page = aligned_alloc(PAGE, PAGE);
	char err[256];

	assert_int_equal(swap_backend_nbd_open(uri, NULL, &be, err, sizeof(err)), 0);
	assert_int_equal(uswap_swap_header_build(page, (uint32_t)(be->nr_slots - 1), NULL, 0,
						 uuid, "nbdtest"), 0);
	assert_int_equal(swap_backend_write(be, 0, 1, page), 0);
	swap_backend_destroy(be);
	free(page);
}

static int swapon_nbd_design(const char *uri, int prio, const char *design)
{
	char err[256] = "";
	int type = uswap_swapon_spec_design(uri, SWAP_FLAG_PREFER | prio, design, err,
					    sizeof(err));

	if (type < 0)
		fprintf(stderr, "swapon %s: %d %s\n", uri, type, err);
	assert_true(type >= 0);
	return type;
}

static int swapon_nbd(const char *uri, int prio)
{
	return swapon_nbd_design(uri, prio, "table");
}

struct checker {
	struct uswap_mm *mm;
	uint64_t addr, first, n, ver;
	unsigned long bad;
};

static void *check_fn(void *arg)
{
	struct checker *c = arg;
	char *buf = malloc(PAGE), *want = malloc(PAGE);
	uint64_t i;

	for (i = c->first; i < c->first + c->n; i++) {
		pat_fill(want, i, c->ver);
		if (uswap_mm_read(c->mm, c->addr + i * PAGE, buf, PAGE) ||
		    memcmp(buf, want, PAGE))
			c->bad++;
	}
	free(buf);
	free(want);
	return NULL;
}

/* Read every page back, from two racing threads; return the bad ones. */
static unsigned long check_all(struct uswap_mm *mm, uint64_t addr, uint64_t ver)
{
	struct checker c[2] = {
		{ mm, addr, 0, NR_PAGES / 2, ver, 0 },
		{ mm, addr, NR_PAGES / 2, NR_PAGES - NR_PAGES / 2, ver, 0 },
	};
	pthread_t t[2];
	int i;

	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, check_fn, &c[i]), 0);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return c[0].bad + c[1].bad;
}

static void write_all(struct uswap_mm *mm, uint64_t addr, uint64_t ver)
{
	char *buf = malloc(PAGE);
	uint64_t i;

	for (i = 0; i < NR_PAGES; i++) {
		pat_fill(buf, i, ver);
		assert_int_equal(uswap_mm_write(mm, addr + i * PAGE, buf, PAGE), 0);
	}
	free(buf);
}

static uint64_t inuse(int type)
{
	struct uswap_swap_stat st;

	assert_int_equal(uswap_swap_stat((unsigned int)type, &st), 0);
	return st.inuse_pages;
}

/* Integrity of the mm workload over one server, all orders of folios. */
static void mm_workload_one(struct nbd_srv *s)
{
	struct uswap_mem_config cfg = { .budget_bytes = 4 << 20, .max_order = 4 };
	struct uswap_mem *mem;
	struct uswap_mm *mm;
	uint64_t addr;
	int type;

	format_export(s->uri);
	type = swapon_nbd(s->uri, 7);
	assert_int_equal(uswap_mem_create(&cfg, &mem), 0);
	assert_int_equal(uswap_mm_create(mem, &mm), 0);
	assert_int_equal(uswap_mm_mmap(mm, (uint64_t)NR_PAGES * PAGE, &addr), 0);
	write_all(mm, addr, 1);
	test_reclaim_all(mem, 1024);
	assert_true(inuse(type) > NR_PAGES / 2);
	assert_int_equal(check_all(mm, addr, 1), 0);
	write_all(mm, addr, 2);		/* dirty again, swapped out again */
	test_reclaim_all(mem, 1024);
	assert_int_equal(check_all(mm, addr, 2), 0);
	uswap_mm_destroy(mm);
	uswap_mem_destroy(mem);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
}

static void test_mm_nbdkit(void **state)
{
	struct nbd_srv s;

	(void)state;
	assert_int_equal(nbd_srv_nbdkit(&s, dir, "mm", "memory", "64M", NULL), 0);
	mm_workload_one(&s);
	nbd_srv_kill(&s);
}

static void test_mm_nbd_server(void **state)
{
	struct nbd_srv s;

	(void)state;
	assert_int_equal(nbd_srv_nbd_server(&s, dir, "mmns", 64ULL << 20), 0);
	/* nbd-server -d serves one connection, kept for swapon: the header
	 * goes straight into the exported file */
	{
		struct swap_backend *be;
		uint8_t uuid[16] = { 4, 5, 6 };
		void *page = aligned_alloc(PAGE, PAGE);
		char spec[300], err[256];

		snprintf(spec, sizeof(spec), "file:%s", s.file);
		assert_int_equal(swap_backend_open_spec(spec, &be, err, sizeof(err)), 0);
		assert_int_equal(uswap_swap_header_build(page, (uint32_t)(be->nr_slots - 1), NULL,
							 0, uuid, "nbdtest"), 0);
		assert_int_equal(swap_backend_write(be, 0, 1, page), 0);
		swap_backend_destroy(be);
		free(page);
	}
	{
		struct uswap_mem_config cfg = { .budget_bytes = 4 << 20 };
		struct uswap_mem *mem;
		struct uswap_mm *mm;
		uint64_t addr;
		int type = swapon_nbd(s.uri, 7);

		assert_int_equal(uswap_mem_create(&cfg, &mem), 0);
		assert_int_equal(uswap_mm_create(mem, &mm), 0);
		assert_int_equal(uswap_mm_mmap(mm, (uint64_t)NR_PAGES * PAGE, &addr), 0);
		write_all(mm, addr, 3);
		test_reclaim_all(mem, 1024);
		assert_true(inuse(type) > NR_PAGES / 2);
		assert_int_equal(check_all(mm, addr, 3), 0);
		uswap_mm_destroy(mm);
		uswap_mem_destroy(mem);
		assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	}
	nbd_srv_kill(&s);
}

/*
 * Two servers at one priority: the pages split; one dies: exactly its
 * pages are lost (anonymous and shmem), the rest reads back, swap-out
 * moves to the live one, and swapoff of the dead one finishes counting
 * the lost pages, which read as -EIO from then on.
 */
static void two_servers(const char *design)
{
	/* room for swapoff's unuse: its check counts the lost pages too */
	struct uswap_mem_config cfg = { .budget_bytes = 16 << 20 };
	struct uswap_swap_stat sa0, sa1, sb0, sb1;
	struct uswap_mem_stats ms;
	struct nbd_srv a, b;
	struct uswap_mem *mem;
	struct uswap_mm *mm;
	struct uswap_shmem *shm;
	uint64_t addr, addr2, i, expect_lost = 0, ia, ib, nr_shm_lost = 0;
	bool *lost = calloc(NR_PAGES, sizeof(bool)), shm_lost[SHM_PAGES] = { false };
	char *buf = malloc(PAGE), *want = malloc(PAGE);
	int ta, tb;

	assert_int_equal(setenv("USWAP_NBD_RECONNECT_MS", "200", 1), 0);
	assert_int_equal(nbd_srv_nbdkit(&a, dir, "sa", "memory", "64M", NULL), 0);
	assert_int_equal(nbd_srv_nbdkit(&b, dir, "sb", "memory", "64M", NULL), 0);
	format_export(a.uri);
	format_export(b.uri);
	ta = swapon_nbd_design(a.uri, 5, design);
	tb = swapon_nbd_design(b.uri, 5, design);
	unsetenv("USWAP_NBD_RECONNECT_MS");
	assert_int_equal(uswap_mem_create(&cfg, &mem), 0);
	assert_int_equal(uswap_mm_create(mem, &mm), 0);
	assert_int_equal(uswap_mm_mmap(mm, (uint64_t)NR_PAGES * PAGE, &addr), 0);
	assert_int_equal(uswap_shmem_create(mem, (uint64_t)SHM_PAGES * PAGE, &shm), 0);
	for (i = 0; i < SHM_PAGES; i++) {
		pat_fill(buf, i + 50000, 1);
		assert_int_equal(uswap_shmem_write(shm, i * PAGE, buf, PAGE), 0);
	}
	write_all(mm, addr, 1);
	test_reclaim_all(mem, 4096);
	assert_int_equal(check_all(mm, addr, 1), 0);
	test_reclaim_all(mem, 4096);
	/* equal priorities take turns: each device holds a fair share */
	ia = inuse(ta);
	ib = inuse(tb);
	assert_true(ia > (ia + ib) / 4 && ib > (ia + ib) / 4);

	/* the pages that only the dead device will hold */
	for (i = 0; i < NR_PAGES; i++) {
		pte_t p = test_peek_pte(mm, addr + i * PAGE);
		struct folio *f;

		if (!pte_is_swap(p) || swp_type(pte_to_swp_entry(p)) != (unsigned int)tb)
			continue;
		f = swap_cache_get_folio(pte_to_swp_entry(p));
		if (f) {
			folio_put(f);	/* in memory still: not lost */
			continue;
		}
		lost[i] = true;
		expect_lost++;
	}
	assert_true(expect_lost > 0);
	for (i = 0; i < SHM_PAGES; i++) {
		uint64_t v;
		struct folio *f;

		pthread_mutex_lock(&shm->lock);
		v = shm->slots[i];
		pthread_mutex_unlock(&shm->lock);
		if (!(v & PTE_SWAP) || swp_type(pte_to_swp_entry(v)) != (unsigned int)tb)
			continue;
		f = swap_cache_get_folio(pte_to_swp_entry(v));
		if (f) {
			folio_put(f);
			continue;
		}
		shm_lost[i] = true;
		expect_lost++;
		nr_shm_lost++;
	}
	/*
	 * shmem pages whose folio reclaim freed after the asynchronous write
	 * are lost with the server: -EIO on access, and swapoff counts them
	 * (shmem_unuse_lost()). Whether any is depends on how far reclaim got.
	 */
	print_message("shmem pages only on the dead server: %" PRIu64 "\n", nr_shm_lost);
	assert_int_equal(uswap_swap_stat((unsigned int)tb, &sb0), 0);
	nbd_srv_kill(&b);

	for (i = 0; i < NR_PAGES; i++) {
		int ret = uswap_mm_read(mm, addr + i * PAGE, buf, PAGE);

		if (lost[i]) {
			assert_int_equal(ret, -EIO);
		} else {
			assert_int_equal(ret, 0);
			pat_fill(want, i, 1);
			assert_memory_equal(buf, want, PAGE);
		}
	}
	for (i = 0; i < SHM_PAGES; i++) {
		int ret = uswap_shmem_read(shm, i * PAGE, buf, PAGE);

		if (shm_lost[i]) {
			assert_int_equal(ret, -EIO);
		} else {
			assert_int_equal(ret, 0);
			pat_fill(want, i + 50000, 1);
			assert_memory_equal(buf, want, PAGE);
		}
	}
	/* new swap-out goes to the live device */
	assert_int_equal(uswap_swap_stat((unsigned int)ta, &sa0), 0);
	assert_int_equal(uswap_mm_mmap(mm, 2000ULL * PAGE, &addr2), 0);
	for (i = 0; i < 2000; i++) {
		pat_fill(buf, i + 100000, 9);
		assert_int_equal(uswap_mm_write(mm, addr2 + i * PAGE, buf, PAGE), 0);
	}
	test_reclaim_all(mem, 1024);
	assert_int_equal(uswap_swap_stat((unsigned int)ta, &sa1), 0);
	assert_int_equal(uswap_swap_stat((unsigned int)tb, &sb1), 0);
	assert_true(sa1.writes > sa0.writes);
	assert_true(sb1.inuse_pages <= sb0.inuse_pages);
	for (i = 0; i < 2000; i++) {
		pat_fill(want, i + 100000, 9);
		assert_int_equal(uswap_mm_read(mm, addr2 + i * PAGE, buf, PAGE), 0);
		assert_memory_equal(buf, want, PAGE);
	}

	/* swapoff of the dead device finishes; the lost pages are counted */
	uswap_mem_get_stats(mem, &ms);
	assert_int_equal(ms.swapoff_lost, 0);
	assert_int_equal(uswap_swapoff_type((unsigned int)tb), 0);
	uswap_mem_get_stats(mem, &ms);
	assert_int_equal(ms.swapoff_lost, expect_lost);
	for (i = 0; i < NR_PAGES; i++) {
		int ret = uswap_mm_read(mm, addr + i * PAGE, buf, PAGE);

		assert_int_equal(ret, lost[i] ? -EIO : 0);
	}
	for (i = 0; i < SHM_PAGES; i++) {
		int ret = uswap_shmem_read(shm, i * PAGE, buf, PAGE);

		assert_int_equal(ret, shm_lost[i] ? -EIO : 0);
	}
	uswap_shmem_destroy(shm);
	uswap_mm_destroy(mm);
	uswap_mem_destroy(mem);
	assert_int_equal(uswap_swapoff_type((unsigned int)ta), 0);
	nbd_srv_kill(&a);
	free(lost);
	free(buf);
	free(want);
}

static void test_two_servers(void **state)
{
	(void)state;
	two_servers("table");
}

/* The same on the old swap_map design: the hooks are the designs' shared
 * allocator walk and the mm's unuse. */
static void test_two_servers_legacy(void **state)
{
	(void)state;
	two_servers("legacy");
}

static unsigned int active_types(void)
{
	unsigned int t, n = 0;

	for (t = 0; t < MAX_SWAPFILES; t++)
		n += uswap_swap_type_active(t);
	return n;
}

static void test_bad_swapon(void **state)
{
	char err[256], uri[300];
	char *page = aligned_alloc(PAGE, PAGE), *zero = calloc(1, PAGE);
	struct swap_backend *be;
	unsigned int before = active_types();
	struct nbd_srv s;

	(void)state;
	assert_int_equal(uswap_swapon_spec("nbd://", 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "missing host"));
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s/none.sock", dir);
	assert_true(uswap_swapon_spec(uri, 0, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "cannot connect"));
	/* an export without a header: refused, and left as it was */
	assert_int_equal(nbd_srv_nbdkit(&s, dir, "nohdr", "memory", "64M", NULL), 0);
	assert_int_equal(uswap_swapon_spec(s.uri, 0, err, sizeof(err)), -EINVAL);
	assert_true(strlen(err) > 0);
	assert_int_equal(swap_backend_nbd_open(s.uri, NULL, &be, err, sizeof(err)), 0);
	assert_int_equal(swap_backend_read(be, 0, 1, page), 0);
	assert_memory_equal(page, zero, PAGE);
	swap_backend_destroy(be);
	nbd_srv_kill(&s);
	/* too small for a header */
	assert_int_equal(nbd_srv_nbdkit(&s, dir, "small", "memory", "2048", NULL), 0);
	assert_int_equal(uswap_swapon_spec(s.uri, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "smaller than one page"));
	nbd_srv_kill(&s);
	assert_int_equal(active_types(), before);
	free(page);
	free(zero);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mm_nbdkit),
		cmocka_unit_test(test_mm_nbd_server),
		cmocka_unit_test(test_two_servers),
		cmocka_unit_test(test_two_servers_legacy),
		cmocka_unit_test(test_bad_swapon),
	};

	return test_run_in_tmpdir("swap_nbd", tests, sizeof(tests) / sizeof(tests[0]), "nbd", dir,
				  sizeof(dir));
}
