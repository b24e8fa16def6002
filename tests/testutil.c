/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

#include <uswap/mm.h>
#include "mm/mm_internal.h"
#include "swap/swap_internal.h"
#include "testutil.h"

uint64_t test_seed(const char *test_name)
{
	const char *s = getenv("USWAP_TEST_SEED");
	uint64_t seed = 0;

	if (s && *s)
		seed = strtoull(s, NULL, 0);
	else if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = 0x9e3779b97f4a7c15ULL;
	if (!seed)
		seed = 1;
	printf("%s: USWAP_TEST_SEED=%" PRIu64 "\n", test_name, seed);
	fflush(stdout);
	return seed;
}

uint64_t test_ops(uint64_t def)
{
	const char *s = getenv("USWAP_TEST_OPS");

	if (s && *s)
		return strtoull(s, NULL, 0);
	return def;
}

/* test_reclaim_all(): see testutil.h. */
uint64_t test_reclaim_all(struct uswap_mem *mem, uint64_t frames)
{
	const struct timespec two_ms = { 0, 2000000 };
	struct uswap_mem_stats st;
	uint64_t total = 0;
	int idle = 0;
	long n;

	for (;;) {
		n = uswap_mem_reclaim(mem, frames);
		assert_true(n >= 0);
		if (!n) {
			uswap_mem_get_stats(mem, &st);
			if (++idle >= 3 && (!(st.nr_active + st.nr_inactive) || idle >= 1000))
				break;
			nanosleep(&two_ms, NULL);	/* writeback in flight: look again */
			continue;
		}
		idle = 0;
		total += (uint64_t)n;
	}
	return total;
}

/* test_peek_pte(): see testutil.h. */
uint64_t test_peek_pte(struct uswap_mm *mm, uint64_t addr)
{
	struct uswap_vma *vma;
	pte_t p = 0;

	pthread_rwlock_rdlock(&mm->mmap_lock);
	vma = find_vma(mm, addr >> USWAP_PAGE_SHIFT);
	if (vma)
		p = atomic_load(vma_pte(vma, addr >> USWAP_PAGE_SHIFT));
	pthread_rwlock_unlock(&mm->mmap_lock);
	return p;
}

/* test_run_in_tmpdir(): see testutil.h. */
int test_run_in_tmpdir(const char *name, const struct CMUnitTest *tests, size_t n,
		       const char *prefix, char *dir, size_t dirlen)
{
	char cmd[300];
	int ret;

	snprintf(dir, dirlen, "/tmp/uswap-%s-XXXXXX", prefix);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	ret = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd)) {
		/* best effort: a leftover directory under /tmp */
	}
	return ret;
}

/* test_swap_out_one() - see testutil.h. */
int test_swap_out_one(struct uswap_frame_pool *pool, unsigned int order, swp_entry_t *out)
{
	struct folio *f = uswap_folio_alloc(pool, order);
	int err;

	assert_non_null(f);
	folio_mark_uptodate(f);
	folio_lock(f);
	err = folio_alloc_swap(f);
	if (!err) {
		*out = folio_swap_entry(f);
		assert_int_equal(folio_dup_swap(f, -1), 0);
		assert_int_equal(swap_cache_del_folio(f, 0), 0);
	} else {
		assert_int_equal(err, -ENOMEM);
	}
	folio_unlock(f);
	folio_put(f);
	return err;
}
