/* SPDX-License-Identifier: MIT */
/*
 * The ABI of the structs a caller allocates: their sizes and the offsets of
 * their fields are fixed (a change here breaks binaries built against an
 * earlier release and must fail this build), the library zeroes __reserved
 * in what it fills, and refuses a config whose __reserved is not zero.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <uswap/uswap.h>
#include <uswap/workload.h>

/* Sizes: a new field takes its place from __reserved, never grows these. */
_Static_assert(sizeof(struct uswap_swap_stat) == USWAP_SWAP_STAT_SIZE, "uswap_swap_stat size");
_Static_assert(sizeof(struct uswap_legacy_stat) == USWAP_LEGACY_STAT_SIZE,
	       "uswap_legacy_stat size");
_Static_assert(sizeof(struct uswap_mem_config) == USWAP_MEM_CONFIG_SIZE, "uswap_mem_config size");
_Static_assert(sizeof(struct uswap_mem_stats) == USWAP_MEM_STATS_SIZE, "uswap_mem_stats size");
_Static_assert(sizeof(struct uswap_mm_stats) == USWAP_MM_STATS_SIZE, "uswap_mm_stats size");
_Static_assert(sizeof(struct uswap_memcg_config) == USWAP_MEMCG_CONFIG_SIZE,
	       "uswap_memcg_config size");
_Static_assert(sizeof(struct uswap_memcg_stats) == USWAP_MEMCG_STATS_SIZE,
	       "uswap_memcg_stats size");
_Static_assert(sizeof(struct uswap_swapin_info) == USWAP_SWAPIN_INFO_SIZE,
	       "uswap_swapin_info size");

_Static_assert(sizeof(struct uswap_region_config) == USWAP_REGION_CONFIG_SIZE,
	       "uswap_region_config size");
_Static_assert(sizeof(struct uswap_region_stat) == USWAP_REGION_STAT_SIZE,
	       "uswap_region_stat size");
_Static_assert(offsetof(struct uswap_region_config, design) == 16, "uswap_region_config.design");
_Static_assert(offsetof(struct uswap_region_config, total_bytes) == 24,
	       "uswap_region_config.total_bytes");
_Static_assert(offsetof(struct uswap_region_config, __reserved) == 40,
	       "uswap_region_config.__reserved");
_Static_assert(offsetof(struct uswap_region_stat, faults) == 48, "uswap_region_stat.faults");
_Static_assert(offsetof(struct uswap_region_stat, fault_p99_us) == 160,
	       "uswap_region_stat.fault_p99_us");
_Static_assert(offsetof(struct uswap_region_stat, total_pages) == 168,
	       "uswap_region_stat.total_pages");
_Static_assert(offsetof(struct uswap_region_stat, __reserved) == 248,
	       "uswap_region_stat.__reserved");

/* Offsets of release 0.1's fields: fields are never moved or reordered. */
_Static_assert(offsetof(struct uswap_swap_stat, prio) == 72, "uswap_swap_stat.prio");
_Static_assert(offsetof(struct uswap_swap_stat, ra_hits) == 120, "uswap_swap_stat.ra_hits");
_Static_assert(offsetof(struct uswap_legacy_stat, cache_retries) == 40,
	       "uswap_legacy_stat.cache_retries");
_Static_assert(offsetof(struct uswap_mem_config, no_kswapd) == 20, "uswap_mem_config.no_kswapd");
_Static_assert(offsetof(struct uswap_mem_config, __reserved) == 48,
	       "uswap_mem_config.__reserved");
_Static_assert(offsetof(struct uswap_mem_stats, swap_frees_after_map) == 160,
	       "uswap_mem_stats.swap_frees_after_map");
_Static_assert(offsetof(struct uswap_mm_stats, swap_pages) == 8, "uswap_mm_stats.swap_pages");

#define POISON 0xa5

static void assert_zero(const void *p, size_t len)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < len; i++)
		assert_int_equal(c[i], 0);
}

/* A device's figures, table and legacy: __reserved comes back zeroed. */
static void test_swap_stat_reserved(void **state)
{
	const char *designs[] = { "table", "legacy" };
	unsigned int d;

	(void)state;
	for (d = 0; d < 2; d++) {
		struct uswap_swap_stat st;
		int type = uswap_swapon_mem_design(4096, 0, designs[d]);

		assert_true(type >= 0);
		memset(&st, POISON, sizeof(st));
		assert_int_equal(uswap_swap_stat((unsigned int)type, &st), 0);
		assert_int_equal(st.max, 4096);
		assert_zero(st.__reserved, sizeof(st.__reserved));
		if (d == 1) {
			struct uswap_legacy_stat ls;

			memset(&ls, POISON, sizeof(ls));
			assert_int_equal(uswap_legacy_stat((unsigned int)type, &ls), 0);
			assert_int_equal(ls.map_bytes, 4096);
			assert_zero(ls.__reserved, sizeof(ls.__reserved));
		}
		assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	}
}

/* A config with anything in __reserved is refused; a zeroed one works,
 * and the budget's and an mm's figures come back with __reserved zeroed. */
static void test_mem_reserved(void **state)
{
	struct uswap_mem_config cfg = { .budget_bytes = 4u << 20, .no_kswapd = true };
	struct uswap_mem *mem = NULL;
	struct uswap_mem_stats ms;
	struct uswap_mm_stats mst;
	struct uswap_mm *mm = NULL;
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(cfg.__reserved) / sizeof(cfg.__reserved[0]); i++) {
		cfg.__reserved[i] = 1;
		assert_int_equal(uswap_mem_create(&cfg, &mem), -EINVAL);
		assert_null(mem);
		cfg.__reserved[i] = 0;
	}
	assert_int_equal(uswap_mem_create(&cfg, &mem), 0);
	assert_non_null(mem);
	memset(&ms, POISON, sizeof(ms));
	uswap_mem_get_stats(mem, &ms);
	assert_int_equal(ms.nr_frames, 1024);
	assert_zero(ms.__reserved, sizeof(ms.__reserved));

	assert_int_equal(uswap_mm_create(mem, &mm), 0);
	memset(&mst, POISON, sizeof(mst));
	uswap_mm_get_stats(mm, &mst);
	assert_int_equal(mst.rss_pages, 0);
	assert_zero(mst.__reserved, sizeof(mst.__reserved));
	uswap_mm_destroy(mm);
	uswap_mem_destroy(mem);
}

/* A swap-in whose info carries anything in __reserved is refused. */
static void test_swapin_info_reserved(void **state)
{
	struct uswap_swapin_info info = { 0 };
	struct folio *f = NULL;
	swp_entry_t e = swp_entry(0, 1);

	(void)state;
	info.__reserved[sizeof(info.__reserved) / sizeof(info.__reserved[0]) - 1] = 1;
	assert_int_equal(uswap_swapin(e, NULL, 1, &f, &info), -EINVAL);
	assert_null(f);
}

/* A workload config with anything in __reserved is refused, with the reason. */
static void test_workload_reserved(void **state)
{
	struct uswap_workload_config cfg = {
		.budget_bytes = 4u << 20, .data_bytes = 1u << 20,
		.specs = { "zram:16M" }, .nr_specs = 1,
	};
	static struct uswap_workload_result res;

	(void)state;
	cfg.__reserved[4] = 1;
	assert_int_equal(uswap_workload_usemem(&cfg, &res), -EINVAL);
	assert_non_null(strstr(res.err, "__reserved"));
	assert_zero(res.__reserved, sizeof(res.__reserved));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_swap_stat_reserved),
		cmocka_unit_test(test_mem_reserved),
		cmocka_unit_test(test_swapin_info_reserved),
		cmocka_unit_test(test_workload_reserved),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
