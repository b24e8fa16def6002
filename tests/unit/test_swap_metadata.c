/* SPDX-License-Identifier: MIT */
/*
 * A device's metadata: static, the cluster array alone, fixed at swapon
 * whatever the use; dynamic, one swap table per cluster with any non-free
 * entry (bad slots included: the header's cluster and a tail-masked last
 * cluster always have one) and one extend table per cluster with an
 * overflowing slot. Devices whose size is not a multiple of 512 have
 * their last cluster's tail masked bad, never allocated.
 */
#include <errno.h>

#include "swaptest.h"
#include "swap/swap_internal.h"

static uint64_t nr_clusters_of(uint64_t max)
{
	return (max + SWAPFILE_CLUSTER - 1) / SWAPFILE_CLUSTER;
}

/* Clusters holding bad slots on a fresh device: the header's and the tail's. */
static uint64_t bad_clusters_of(uint64_t max)
{
	return 1 + (max % SWAPFILE_CLUSTER && nr_clusters_of(max) > 1);
}

static void expect_static(struct swaptest *t)
{
	struct uswap_swap_stat st = swaptest_stat(t);

	assert_int_equal(st.max, t->max);
	assert_int_equal(st.pages, t->max - 1);
	assert_int_equal(st.nr_bad, 1);
	assert_int_equal(st.nr_clusters, nr_clusters_of(t->max));
	/* The clusters and their list links (cluster.h). */
	assert_int_equal(st.static_bytes, swap_cluster_array_bytes(st.nr_clusters) +
					  st.nr_clusters * sizeof(struct swap_cluster_link));
	assert_true(swap_cluster_array_bytes(st.nr_clusters) -
		    st.nr_clusters * sizeof(struct swap_cluster_info) < SWAP_CLUSTER_ARRAY_ALIGN);
	assert_int_equal(st.dynamic_bytes,
			 st.nr_tables * sizeof(struct swap_table) +
			 st.nr_extend_tables * (SWAPFILE_CLUSTER + 1) * sizeof(unsigned int));
}

/* nr_tables == clusters with a bad or allocated slot, per the caller's map. */
static void expect_tables(struct swaptest *t, const bool *used_cluster)
{
	uint64_t c, n = 0;

	for (c = 0; c < nr_clusters_of(t->max); c++)
		n += used_cluster[c] || c == 0 ||
		     (c == nr_clusters_of(t->max) - 1 && t->max % SWAPFILE_CLUSTER);
	assert_int_equal(swaptest_stat(t).nr_tables, n);
	expect_static(t);
}

/* Read a slot's entry below the API, for the tail that peek refuses. */
static uint64_t raw_entry(struct swaptest *t, uint64_t offset)
{
	struct swap_info_struct *si = get_swap_device(swaptest_entry(t, 0));
	uint64_t tb;

	assert_non_null(si);
	tb = swap_table_get(offset_to_cluster(si, offset), offset % SWAPFILE_CLUSTER);
	put_swap_device(si);
	return tb;
}

static void test_fresh_devices(void **state)
{
	static const uint64_t sizes[] = { 2, 3, 100, 511, 512, 513, 1000, 1024, 1025,
					  4097, 8500, 65536 + 7 };
	unsigned int i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		struct swaptest t;
		struct uswap_swap_stat st;
		uint64_t o;

		swaptest_init(&t, sizes[i], 16);
		st = swaptest_stat(&t);
		expect_static(&t);
		assert_int_equal(st.inuse_pages, 0);
		assert_int_equal(st.nr_extend_tables, 0);
		assert_int_equal(st.nr_tables, bad_clusters_of(t.max));
		expect_bad(swaptest_entry(&t, 0));
		for (o = 1; o < t.max; o++)
			expect_free(swaptest_entry(&t, o));
		for (o = t.max; o < nr_clusters_of(t.max) * SWAPFILE_CLUSTER; o++)
			assert_int_equal(raw_entry(&t, o), SWP_TB_BAD);
		swaptest_fini(&t);
	}
}

static void test_swapon_invalid(void **state)
{
	(void)state;
	assert_int_equal(uswap_swapon_mem(0, 0), -EINVAL);
	assert_int_equal(uswap_swapon_mem(1, 0), -EINVAL);
	assert_int_equal(uswap_swapon_mem(1024, 0x40000000), -EINVAL);
}

/*
 * Filling a device order 0: every usable slot and no other, the tail
 * never; every cluster then has a table; emptying it leaves the tables of
 * the bad slots' clusters only. The static part never moves.
 */
static void fill_and_empty(uint64_t max)
{
	struct swaptest t;
	swp_entry_t *got;
	bool *seen;
	uint64_t n = 0, i, static_bytes;

	swaptest_init(&t, max, 16);
	static_bytes = swaptest_stat(&t).static_bytes;
	got = calloc(max, sizeof(*got));
	seen = calloc(max, sizeof(*seen));
	assert_non_null(got);
	assert_non_null(seen);
	for (;;) {
		swp_entry_t e = swap_alloc_hibernation_slot(t.type);

		if (!e.val)
			break;
		assert_true(n < max - 1);
		assert_int_equal(swp_type(e), t.type);
		assert_true(swp_offset(e) >= 1 && swp_offset(e) < max);
		assert_false(seen[swp_offset(e)]);
		seen[swp_offset(e)] = true;
		got[n++] = e;
	}
	assert_int_equal(n, max - 1);
	assert_int_equal(swaptest_stat(&t).inuse_pages, max - 1);
	assert_int_equal(swaptest_stat(&t).nr_tables, nr_clusters_of(max));
	assert_int_equal(swaptest_stat(&t).static_bytes, static_bytes);
	expect_static(&t);
	for (i = max; i < nr_clusters_of(max) * SWAPFILE_CLUSTER; i++)
		assert_int_equal(raw_entry(&t, i), SWP_TB_BAD);
	for (i = 0; i < n; i++)
		assert_int_equal(swap_free_hibernation_slot(got[i]), 0);
	assert_int_equal(swaptest_stat(&t).inuse_pages, 0);
	assert_int_equal(swaptest_stat(&t).nr_tables, bad_clusters_of(max));
	assert_int_equal(swaptest_stat(&t).static_bytes, static_bytes);
	expect_static(&t);
	free(got);
	free(seen);
	swaptest_fini(&t);
}

static void test_fill_and_empty(void **state)
{
	(void)state;
	fill_and_empty(2);
	fill_and_empty(513);
	fill_and_empty(1000);
	fill_and_empty(2048);
	fill_and_empty(3000);
}

/*
 * Large folios never take a cluster with bad slots: on a 1600-slot device
 * (clusters 0 header, 1 and 2 free, 3 tail-masked) exactly two order-9
 * folios fit, and tables follow the clusters they use.
 */
static void test_tables_follow_use(void **state)
{
	struct swaptest t;
	struct folio *big[3], *small[8];
	bool used[4] = { false };
	swp_entry_t e, e0, e1;
	unsigned int i;

	(void)state;
	swaptest_init(&t, 1600, 2048);
	expect_tables(&t, used);
	for (i = 0; i < 2; i++) {
		big[i] = swaptest_folio(&t, 9, true);
		assert_int_equal(folio_alloc_swap(big[i]), 0);
		e = folio_swap_entry(big[i]);
		assert_int_equal(swp_offset(e) % SWAPFILE_CLUSTER, 0);
		assert_true(swp_offset(e) / SWAPFILE_CLUSTER == 1 ||
			    swp_offset(e) / SWAPFILE_CLUSTER == 2);
		used[swp_offset(e) / SWAPFILE_CLUSTER] = true;
		expect_tables(&t, used);
	}
	big[2] = swaptest_folio(&t, 9, true);
	assert_int_equal(folio_alloc_swap(big[2]), -ENOMEM);
	swaptest_folio_done(big[2]);
	expect_tables(&t, used);
	/* Order 0 goes to the clusters that have tables already. */
	for (i = 0; i < 8; i++) {
		small[i] = swaptest_folio(&t, 0, true);
		assert_int_equal(folio_alloc_swap(small[i]), 0);
		e = folio_swap_entry(small[i]);
		assert_true(swp_offset(e) < t.max);
		used[swp_offset(e) / SWAPFILE_CLUSTER] = true;
		expect_tables(&t, used);
	}
	/* One cluster's folio references its slots and leaves the cache. */
	assert_int_equal(folio_dup_swap(big[0], -1), 0);
	e0 = folio_swap_entry(big[0]);
	assert_int_equal(swap_cache_del_folio(big[0], 0), 0);
	swaptest_folio_done(big[0]);
	expect_tables(&t, used);
	/* The other's cache goes: its cluster is empty and loses its table. */
	e1 = folio_swap_entry(big[1]);
	assert_int_equal(folio_free_swap(big[1]), 1);
	swaptest_folio_done(big[1]);
	used[swp_offset(e1) / SWAPFILE_CLUSTER] = false;
	expect_tables(&t, used);
	/* The first's 512 references dropped in one call. */
	assert_int_equal(swap_put_entries_direct(e0, SWAPFILE_CLUSTER), 0);
	used[swp_offset(e0) / SWAPFILE_CLUSTER] = false;
	expect_tables(&t, used);
	for (i = 0; i < 8; i++) {
		assert_int_equal(folio_free_swap(small[i]), 1);
		swaptest_folio_done(small[i]);
	}
	assert_int_equal(swaptest_stat(&t).inuse_pages, 0);
	assert_int_equal(swaptest_stat(&t).nr_tables, bad_clusters_of(t.max));
	swaptest_fini(&t);
}

/* One extend table per cluster with an overflowing slot, whatever the count. */
static void test_extend_tables_per_cluster(void **state)
{
	struct swaptest t;
	struct folio *f[3];
	swp_entry_t e[3];
	unsigned int i, c;
	uint64_t per_ext = (SWAPFILE_CLUSTER + 1) * sizeof(unsigned int);

	(void)state;
	swaptest_init(&t, 2048, 2048);
	for (i = 0; i < 3; i++) {
		f[i] = swaptest_folio(&t, 9, true);
		assert_int_equal(folio_alloc_swap(f[i]), 0);
		e[i] = folio_swap_entry(f[i]);
	}
	for (i = 0; i < 3; i++) {
		for (c = 0; c < SWP_TB_COUNT_MAX; c++) {
			assert_int_equal(folio_dup_swap(f[i], 7), 0);
			assert_int_equal(folio_dup_swap(f[i], 300), 0);
		}
		assert_int_equal(swaptest_stat(&t).nr_extend_tables, i + 1);
		assert_int_equal(swaptest_stat(&t).dynamic_bytes,
				 swaptest_stat(&t).nr_tables * sizeof(struct swap_table) +
				 (i + 1) * per_ext);
		expect_static(&t);
	}
	for (i = 0; i < 3; i++) {
		assert_int_equal(folio_put_swap(f[i], 7), 0);
		assert_int_equal(swaptest_stat(&t).nr_extend_tables, 3 - i);
		assert_int_equal(folio_put_swap(f[i], 300), 0);
		assert_int_equal(swaptest_stat(&t).nr_extend_tables, 2 - i);
	}
	for (i = 0; i < 3; i++) {
		assert_int_equal(swap_cache_del_folio(f[i], 0), 0);
		swaptest_folio_done(f[i]);
		for (c = 1; c < SWP_TB_COUNT_MAX; c++) {
			assert_int_equal(swap_put_entries_direct(swaptest_entry(&t, swp_offset(e[i]) + 7), 1), 0);
			assert_int_equal(swap_put_entries_direct(swaptest_entry(&t, swp_offset(e[i]) + 300), 1), 0);
		}
	}
	assert_int_equal(swaptest_stat(&t).inuse_pages, 0);
	assert_int_equal(swaptest_stat(&t).nr_tables, 1);
	assert_int_equal(swaptest_stat(&t).nr_extend_tables, 0);
	swaptest_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fresh_devices),
		cmocka_unit_test(test_swapon_invalid),
		cmocka_unit_test(test_fill_and_empty),
		cmocka_unit_test(test_tables_follow_use),
		cmocka_unit_test(test_extend_tables_per_cluster),
	};

	swaptest_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
