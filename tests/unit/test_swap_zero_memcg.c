/* SPDX-License-Identifier: MIT */
/*
 * Phase IV, swap side, in both slot designs: zero-filled folios never
 * reach the device (the table entry's Z flag, the old design's zeromap)
 * and come back as zeros; a page written after a zero swap-in is written
 * and read back as itself; memory cgroup ids ride with the slots, charge
 * their group, hold its swap.max and uncharge when the slots free.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "swaptest.h"
#include "swap/swap_header.h"

static int next_prio = 300;

struct zt {
	struct uswap_frame_pool *pool;
	unsigned int type;
	const char *design;
};

static void zt_init(struct zt *t, const char *spec, const char *design)
{
	char err[200] = "";
	int type;

	swaptest_quiet();
	assert_int_equal(uswap_frame_pool_create(64, &t->pool), 0);
	type = uswap_swapon_spec_design(spec, SWAP_FLAG_PREFER | next_prio++, design, err,
					sizeof(err));
	if (type < 0)
		fail_msg("swapon %s (%s): %d %s", spec, design, type, err);
	t->type = (unsigned int)type;
	t->design = design;
}

static void zt_fini(struct zt *t)
{
	assert_int_equal(uswap_swapoff_type(t->type), 0);
	assert_int_equal(uswap_frame_pool_free_frames(t->pool), uswap_frame_pool_nr_frames(t->pool));
	uswap_frame_pool_destroy(t->pool);
}

static struct uswap_swap_stat zt_stat(struct zt *t)
{
	struct uswap_swap_stat st;

	assert_int_equal(uswap_swap_stat(t->type, &st), 0);
	return st;
}

/* A locked folio of @order with slots and one count, holding @fill (0: zeros). */
static struct folio *zt_cached(struct zt *t, unsigned int order, int fill, uint16_t memcg,
			       swp_entry_t *e)
{
	struct folio *f = uswap_folio_alloc(t->pool, order);

	assert_non_null(f);
	memset(folio_address(f), fill, folio_nr_pages(f) * USWAP_PAGE_SIZE);
	folio_mark_uptodate(f);
	folio_set_memcg_id(f, memcg);
	folio_lock(f);
	assert_int_equal(folio_alloc_swap(f), 0);
	assert_int_equal(folio_dup_swap(f, -1), 0);
	*e = folio_swap_entry(f);
	assert_int_equal(swp_type(*e), t->type);
	return f;
}

/* A folio of @order in group @memcg gets no slots (-ENOMEM) and stays as it was. */
static void zt_refused(struct zt *t, unsigned int order, uint16_t memcg)
{
	struct folio *f = uswap_folio_alloc(t->pool, order);

	assert_non_null(f);
	folio_mark_uptodate(f);
	folio_set_memcg_id(f, memcg);
	folio_lock(f);
	assert_int_equal(folio_alloc_swap(f), -ENOMEM);
	assert_false(folio_test_swapcache(f));
	folio_unlock(f);
	folio_put(f);
}

/* Write @f out, drop it from the cache and free it (lock and reference consumed). */
static void zt_evict(struct folio *f)
{
	folio_mark_dirty(f);
	assert_int_equal(uswap_swap_writeout(f, true), 0);
	folio_lock(f);
	assert_int_equal(uswap_remove_mapping(f, 0), 1);
}

/* Whether slot @e has the zero flag, as the design keeps it. */
static bool zt_zero_flag(struct zt *t, swp_entry_t e)
{
	uint64_t tb = 0;
	long c = 0;

	assert_int_equal(uswap_swap_tb_peek(e, &tb, &c), 0);
	if (strcmp(t->design, "table") || !SWAP_TABLE_HAS_ZEROFLAG)
		return false;	/* the zeromap or the table's bitmap: not in the word */
	return swp_tb_is_zero(tb);
}

static bool all_bytes(const void *p, size_t n, int v)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (c[i] != (unsigned char)v)
			return false;
	return true;
}

/* Swap @e in (order 0 only), locked in the cache, and return it. */
static struct folio *zt_swapin(struct zt *t, swp_entry_t e)
{
	struct uswap_swapin_info info = { 0 };
	struct folio *f;

	assert_int_equal(uswap_swapin(e, t->pool, 1, &f, &info), 0);
	assert_int_equal(uswap_swapin_lock(f, e), 0);
	return f;
}

/* Release a swapped-in folio and its slot's count. */
static void zt_release(struct folio *f)
{
	assert_int_equal(folio_put_swap(f, -1), 0);
	folio_free_swap(f);
	folio_unlock(f);
	folio_put(f);
}

static void zero_case(const char *spec, const char *design)
{
	struct uswap_swap_stat a, b;
	struct zt t;
	struct folio *f;
	swp_entry_t e, e2;

	zt_init(&t, spec, design);
	/* A folio of zeros: flagged, nothing written. */
	f = zt_cached(&t, 0, 0, 0, &e);
	a = zt_stat(&t);
	zt_evict(f);
	b = zt_stat(&t);
	assert_int_equal(b.writes, a.writes);
	assert_int_equal(b.zero_out - a.zero_out, 1);
	if (!strcmp(design, "table") && SWAP_TABLE_HAS_ZEROFLAG)
		assert_true(zt_zero_flag(&t, e));
	/* It comes back as zeros, without a read. */
	f = zt_swapin(&t, e);
	a = zt_stat(&t);
	assert_int_equal(a.reads, b.reads);
	assert_int_equal(a.zero_in - b.zero_in, 1);
	assert_true(all_bytes(folio_address(f), USWAP_PAGE_SIZE, 0));
	/* Written after the zero swap-in: it is no longer zero, and must not
	 * read back as zeros. Non-synchronous devices keep it cached; the
	 * write drops the cache's copy as the kernel's do_swap_page does. */
	memset(folio_address(f), 0x6b, USWAP_PAGE_SIZE);
	folio_unlock(f);
	folio_lock(f);
	if (folio_test_swapcache(f) && folio_matches_swap_entry(f, e)) {
		zt_evict(f);
		b = zt_stat(&t);
		assert_int_equal(b.writes - a.writes, 1);
		assert_int_equal(b.zero_out, a.zero_out);
		assert_false(zt_zero_flag(&t, e));
		f = zt_swapin(&t, e);
		assert_true(all_bytes(folio_address(f), USWAP_PAGE_SIZE, 0x6b));
		assert_int_equal(zt_stat(&t).reads - b.reads, 1);
	}
	zt_release(f);
	/* A large folio with one page of data is written whole, unflagged. */
	f = zt_cached(&t, 2, 0, 0, &e2);
	memset((char *)folio_address(f) + USWAP_PAGE_SIZE, 0x11, USWAP_PAGE_SIZE);
	a = zt_stat(&t);
	zt_evict(f);
	b = zt_stat(&t);
	assert_int_equal(b.writes - a.writes, 1);
	assert_int_equal(b.zero_out, a.zero_out);
	f = zt_swapin(&t, swp_entry(t.type, swp_offset(e2) + 1));
	assert_true(all_bytes(folio_address(f), USWAP_PAGE_SIZE, 0x11));
	zt_release(f);
	assert_int_equal(swap_put_entries_direct(e2, 1), 0);
	assert_int_equal(swap_put_entries_direct(swp_entry(t.type, swp_offset(e2) + 2), 2), 0);
	/* A large folio of zeros: four flagged slots, no write. */
	f = zt_cached(&t, 2, 0, 0, &e2);
	a = zt_stat(&t);
	zt_evict(f);
	b = zt_stat(&t);
	assert_int_equal(b.writes, a.writes);
	assert_int_equal(b.zero_out - a.zero_out, 4);
	f = zt_swapin(&t, swp_entry(t.type, swp_offset(e2) + 3));
	assert_true(all_bytes(folio_address(f), USWAP_PAGE_SIZE, 0));
	zt_release(f);
	assert_int_equal(swap_put_entries_direct(e2, 3), 0);
	/* A freed zero slot, allocated again, is not zero any more. */
	f = zt_cached(&t, 0, 0x22, 0, &e);
	zt_evict(f);
	f = zt_swapin(&t, e);
	assert_true(all_bytes(folio_address(f), USWAP_PAGE_SIZE, 0x22));
	zt_release(f);
	assert_int_equal(zt_stat(&t).inuse_pages, 0);
	zt_fini(&t);
}

static void test_zero_zram(void **state)
{
	(void)state;
	zero_case("zram:4M", "table");
	zero_case("zram:4M", "legacy");
}

/* A swap file of @pages pages at @path, mode 0600. */
static void zt_mkswap(const char *path, uint64_t pages)
{
	void *page = aligned_alloc(USWAP_PAGE_SIZE, USWAP_PAGE_SIZE);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	assert_non_null(page);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)(pages * USWAP_PAGE_SIZE)), 0);
	assert_int_equal(uswap_swap_header_build(page, (uint32_t)(pages - 1), NULL, 0, NULL, "zt"), 0);
	assert_int_equal(pwrite(fd, page, USWAP_PAGE_SIZE, 0), (ssize_t)USWAP_PAGE_SIZE);
	close(fd);
	free(page);
}

static void test_zero_file(void **state)
{
	char path[256], spec[300];

	(void)state;
	swaptest_path(path, "zero.swap");
	zt_mkswap(path, 2048);	/* clusters for each order */
	snprintf(spec, sizeof(spec), "file:%s,rotational=0", path);	/* large folios */
	zero_case(spec, "table");
	zero_case(spec, "legacy");
	unlink(path);
}

static void memcg_case(const char *design)
{
	struct uswap_swap_cgroup_stat cs;
	struct folio *f, *g;
	struct zt t;
	swp_entry_t e[6], big;
	uint16_t id, id2;
	int i;

	zt_init(&t, "zram:4M", design);
	assert_int_equal(uswap_swap_cgroup_create(4, &id), 0);
	assert_int_equal(uswap_swap_cgroup_create(USWAP_SWAP_MAX_NONE, &id2), 0);
	assert_true(id && id2 && id != id2);
	for (i = 0; i < 4; i++) {
		f = zt_cached(&t, 0, 0x30 + i, id, &e[i]);
		assert_int_equal(uswap_swap_cgroup_lookup(e[i]), id);
		zt_evict(f);
	}
	assert_int_equal(uswap_swap_cgroup_stat(id, &cs), 0);
	assert_int_equal(cs.usage, 4);
	assert_int_equal(cs.peak, 4);
	assert_true(uswap_swap_cgroup_full(id));
	/* At the limit: no slots, the folio stays as it was. */
	g = uswap_folio_alloc(t.pool, 0);
	assert_non_null(g);
	folio_mark_uptodate(g);
	folio_set_memcg_id(g, id);
	folio_lock(g);
	assert_int_equal(folio_alloc_swap(g), -ENOMEM);
	assert_false(folio_test_swapcache(g));
	assert_int_equal(uswap_swap_cgroup_stat(id, &cs), 0);
	assert_int_equal(cs.events_max, 1);
	assert_int_equal(cs.events_fail, 1);	/* memcg counts both */
	assert_int_equal(cs.usage, 4);
	/* Another group is not held by the first one's limit. */
	folio_set_memcg_id(g, id2);
	assert_int_equal(folio_alloc_swap(g), 0);
	assert_int_equal(uswap_swap_cgroup_lookup(folio_swap_entry(g)), id2);
	assert_int_equal(folio_dup_swap(g, -1), 0);
	e[4] = folio_swap_entry(g);
	zt_evict(g);
	/* A slot freed gives its room back; a large folio needs all of its. */
	assert_int_equal(swap_put_entries_direct(e[0], 1), 0);
	assert_int_equal(uswap_swap_cgroup_lookup(e[0]), 0);
	assert_int_equal(uswap_swap_cgroup_stat(id, &cs), 0);
	assert_int_equal(cs.usage, 3);
	zt_refused(&t, 2, id);
	assert_int_equal(uswap_swap_cgroup_stat(id, &cs), 0);
	assert_int_equal(cs.events_max, 2);
	assert_int_equal(cs.events_fail, 2);
	f = zt_cached(&t, 0, 0x55, id, &e[0]);
	zt_evict(f);
	/* Destroyed with slots charged: the id stays taken until they free. */
	assert_int_equal(uswap_swap_cgroup_destroy(id), 0);
	assert_int_equal(uswap_swap_cgroup_destroy(id), -EINVAL);
	assert_int_equal(uswap_swap_cgroup_stat(id, &cs), 0);
	assert_int_equal(cs.usage, 4);
	assert_int_equal(uswap_swap_cgroup_set_max(id, 100), -EINVAL);
	/* The data is still there, charged where it was. */
	f = zt_swapin(&t, e[2]);
	assert_true(all_bytes(folio_address(f), USWAP_PAGE_SIZE, 0x32));
	assert_int_equal(uswap_swap_cgroup_lookup(e[2]), id);
	zt_release(f);
	for (i = 0; i < 4; i++)
		if (i != 2)
			assert_int_equal(swap_put_entries_direct(e[i], 1), 0);
	assert_int_equal(uswap_swap_cgroup_stat(id, &cs), -EINVAL);	/* free again */
	assert_int_equal(swap_put_entries_direct(e[4], 1), 0);
	assert_int_equal(uswap_swap_cgroup_stat(id2, &cs), 0);
	assert_int_equal(cs.usage, 0);
	assert_int_equal(cs.peak, 1);
	assert_int_equal(uswap_swap_cgroup_destroy(id2), 0);
	/* An id no group holds is charged nowhere, as the root. */
	f = zt_cached(&t, 0, 0x44, id2, &big);
	assert_int_equal(uswap_swap_cgroup_lookup(big), 0);
	assert_int_equal(folio_memcg_id(f), 0);
	zt_evict(f);
	assert_int_equal(swap_put_entries_direct(big, 1), 0);
	assert_int_equal(zt_stat(&t).inuse_pages, 0);
	zt_fini(&t);
}

/*
 * A device with no free slot: the group's "fail" event without "max"
 * (the kernel's mem_cgroup_try_charge_swap() with an empty entry), and
 * nothing stays charged.
 */
static void memcg_full_case(const char *design)
{
	swp_entry_t e[16];
	struct uswap_swap_cgroup_stat cs;
	struct folio *f;
	uint64_t n = 0, i;
	uint16_t id;
	struct zt t;

	zt_init(&t, "zram:64K", design);
	assert_int_equal(uswap_swap_cgroup_create(USWAP_SWAP_MAX_NONE, &id), 0);
	assert_true(zt_stat(&t).pages <= 16);
	while (n < zt_stat(&t).pages) {
		f = zt_cached(&t, 0, 0x60 + (int)n, id, &e[n]);
		zt_evict(f);
		n++;
	}
	zt_refused(&t, 0, id);
	assert_int_equal(uswap_swap_cgroup_stat(id, &cs), 0);
	assert_int_equal(cs.events_fail, 1);
	assert_int_equal(cs.events_max, 0);
	assert_int_equal(cs.usage, n);
	for (i = 0; i < n; i++)
		assert_int_equal(swap_put_entries_direct(e[i], 1), 0);
	assert_int_equal(uswap_swap_cgroup_stat(id, &cs), 0);
	assert_int_equal(cs.usage, 0);
	assert_int_equal(uswap_swap_cgroup_destroy(id), 0);
	zt_fini(&t);
}

static void test_memcg_full(void **state)
{
	(void)state;
	memcg_full_case("table");
	memcg_full_case("legacy");
}

static void test_memcg_table(void **state)
{
	(void)state;
	memcg_case("table");
}

static void test_memcg_legacy(void **state)
{
	(void)state;
	memcg_case("legacy");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zero_zram),
		cmocka_unit_test_setup_teardown(test_zero_file, swaptest_dir_setup,
						swaptest_dir_teardown),
		cmocka_unit_test(test_memcg_table),
		cmocka_unit_test(test_memcg_legacy),
		cmocka_unit_test(test_memcg_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
