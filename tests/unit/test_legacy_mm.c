/* SPDX-License-Identifier: MIT */
/*
 * The mm layer on a legacy device: 32 MiB written through an 8 MiB budget
 * onto a legacy zram device, read back, forked (the child reads, then
 * writes half the pages copy-on-write), exit. Data intact throughout; after every mm and
 * the budget are gone the device is empty and swaps off.
 */
#include <errno.h>
#include <string.h>

#include "swaptest.h"

#define MIB		(1024ULL * 1024)
#define SPACE		(32 * MIB)
#define PAGE		USWAP_PAGE_SIZE

static void fill(unsigned char *buf, uint64_t pg, unsigned int gen)
{
	uint64_t i;

	for (i = 0; i < PAGE; i += 8) {
		uint64_t v = pg * 0x9e3779b97f4a7c15ULL + i + gen;

		memcpy(buf + i, &v, 8);
	}
}

static void check_space(struct uswap_mm *mm, uint64_t addr, unsigned int gen, uint64_t step)
{
	static unsigned char got[PAGE], want[PAGE];
	uint64_t pg;

	for (pg = 0; pg < SPACE / PAGE; pg += step) {
		assert_int_equal(uswap_mm_read(mm, addr + pg * PAGE, got, PAGE), 0);
		fill(want, pg, gen);
		if (memcmp(got, want, PAGE))
			fail_msg("page %llu differs (gen %u)", (unsigned long long)pg, gen);
	}
}

static void test_legacy_mm(void **state)
{
	struct uswap_mem_config cfg = { .budget_bytes = 8 * MIB };
	static unsigned char buf[PAGE];
	struct uswap_legacy_stat ls;
	struct uswap_swap_stat st;
	struct uswap_mem_stats ms;
	struct uswap_mem *mem;
	struct uswap_mm *mm, *child;
	char err[160] = "";
	uint64_t addr, pg;
	int type;

	(void)state;
	swaptest_quiet();
	type = uswap_swapon_spec_design("zram:64M", SWAP_FLAG_PREFER | 300, "legacy", err,
					sizeof(err));
	if (type < 0)
		fail_msg("swapon: %d %s", type, err);
	assert_int_equal(uswap_mem_create(&cfg, &mem), 0);
	assert_int_equal(uswap_mm_create(mem, &mm), 0);
	assert_int_equal(uswap_mm_mmap(mm, SPACE, &addr), 0);
	for (pg = 0; pg < SPACE / PAGE; pg++) {
		fill(buf, pg, 0);
		assert_int_equal(uswap_mm_write(mm, addr + pg * PAGE, buf, PAGE), 0);
	}
	check_space(mm, addr, 0, 1);
	assert_int_equal(uswap_swap_stat((unsigned int)type, &st), 0);
	assert_true(st.inuse_pages > 0);

	assert_int_equal(uswap_mm_fork(mm, &child), 0);
	check_space(child, addr, 0, 1);
	/* Copy-on-write: the child writes the even pages; the parent must
	 * keep seeing its own data, the child its new data. */
	for (pg = 0; pg < SPACE / PAGE; pg += 2) {
		fill(buf, pg, 7);
		assert_int_equal(uswap_mm_write(child, addr + pg * PAGE, buf, PAGE), 0);
	}
	check_space(mm, addr, 0, 1);
	for (pg = 0; pg < SPACE / PAGE; pg++) {
		unsigned char got[PAGE];

		assert_int_equal(uswap_mm_read(child, addr + pg * PAGE, got, PAGE), 0);
		fill(buf, pg, pg % 2 ? 0 : 7);
		if (memcmp(got, buf, PAGE))
			fail_msg("child page %llu differs", (unsigned long long)pg);
	}
	uswap_mm_destroy(child);
	check_space(mm, addr, 0, 3);
	uswap_mem_get_stats(mem, &ms);
	assert_true(ms.swapouts > 0 && ms.swapins > 0);
	assert_int_equal(uswap_legacy_stat((unsigned int)type, &ls), 0);
	print_message("legacy mm: swapouts %llu swapins %llu bypass %llu ra-cache-retries %llu "
		      "bypass-retries %llu\n", (unsigned long long)ms.swapouts,
		      (unsigned long long)ms.swapins, (unsigned long long)ls.bypass_swapins,
		      (unsigned long long)ls.cache_retries, (unsigned long long)ls.bypass_retries);
	assert_true(ls.bypass_swapins > 0);
	uswap_mm_destroy(mm);
	uswap_mem_destroy(mem);
	assert_int_equal(uswap_swap_stat((unsigned int)type, &st), 0);
	assert_int_equal(st.inuse_pages, 0);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_legacy_mm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
