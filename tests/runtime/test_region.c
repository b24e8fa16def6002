/* SPDX-License-Identifier: MIT */
/*
 * The in-process mode (uswap/region.h) on both slot designs: regions three
 * times their pool's budget filled and verified (sequential, random,
 * read(2) into an evicted page, MADV_DONTNEED), threads doing atomic
 * increments while eviction runs (exact counts), fork (the child reads the
 * parent's data), destroy with pages swapped out (the device empty after),
 * and the argument checks.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uswap/uswap.h>

#define KIB		1024ULL
#define MIB		(1024 * KIB)
#define PAGE_WORDS	512

static uint64_t val(uint64_t i, uint64_t seed)
{
	return (i + 1) * 0x9E3779B97F4A7C15ULL ^ seed;
}

/* A zram device of the design, and a pool on the devices that are on. */
static int pool_on(const char *design, uint64_t budget, struct uswap_region_pool **pool)
{
	struct uswap_region_config cfg = { .budget_bytes = budget };
	char why[256] = "";
	int type = uswap_swapon_spec_design("zram:64M", 0, design, why, sizeof(why));

	assert_true(type >= 0);
	assert_int_equal(uswap_region_pool_create(&cfg, pool), 0);
	return type;
}

static uint64_t inuse(int type)
{
	struct uswap_swap_stat ss = { 0 };

	assert_int_equal(uswap_swap_stat((unsigned int)type, &ss), 0);
	return ss.inuse_pages;
}

static size_t wrong_words(const uint64_t *w, size_t n, uint64_t seed)
{
	size_t bad = 0;

	for (size_t i = 0; i < n; i++)
		bad += w[i] != val(i, seed);
	return bad;
}

/* Two regions (2 MiB + 1 MiB) under one 1 MiB budget. */
static void fill_verify(const char *design)
{
	struct uswap_region_pool *pool;
	struct uswap_region_stat st;
	uint64_t *a, *b, *shadow;
	size_t na = 2 * MIB / 8, nb = MIB / 8;
	unsigned int seed = 7;
	int type = pool_on(design, MIB, &pool), fds[2];
	char page[4096];

	assert_int_equal(uswap_region_create(pool, 2 * MIB, (void **)&a), 0);
	assert_int_equal(uswap_region_create(pool, MIB, (void **)&b), 0);
	for (size_t i = 0; i < na; i++)
		a[i] = val(i, 1);
	for (size_t i = 0; i < nb; i++)
		b[i] = val(i, 2);
	assert_int_equal(wrong_words(a, na, 1), 0);
	assert_int_equal(wrong_words(b, nb, 2), 0);
	assert_int_equal(uswap_region_pool_stat(pool, &st), 0);
	assert_int_equal(st.regions, 2);
	assert_int_equal(st.region_bytes, 3 * MIB);
	assert_int_equal(st.budget_pages, MIB / 4096);
	assert_true(st.swapped_pages > 0);
	assert_true(st.evicted >= 2 * MIB / 4096);
	assert_true(st.swapins > 0);
	assert_true(st.prefetched > 0);	/* the sequential verify read ahead */
	assert_true(st.peak_resident_pages <= st.budget_pages);

	/* Random reads and writes against a copy in ordinary memory. */
	shadow = malloc(na * 8);
	assert_non_null(shadow);
	for (size_t i = 0; i < na; i++)
		shadow[i] = val(i, 1);
	for (int k = 0; k < 20000; k++) {
		size_t j = (size_t)rand_r(&seed) % na;

		if (rand_r(&seed) & 1) {
			a[j] = shadow[j] = (uint64_t)rand_r(&seed) << 20 | (uint64_t)k;
		} else if (a[j] != shadow[j]) {
			fail_msg("word %zu: %llx, not %llx", j, (unsigned long long)a[j],
				 (unsigned long long)shadow[j]);
		}
	}
	assert_int_equal(memcmp(a, shadow, na * 8), 0);

	/* A kernel access: read(2) into a page that was just evicted. */
	for (size_t i = 0; i < nb; i++)
		b[i] = val(i, 2);	/* a's first pages go out again */
	memset(page, 0x5c, sizeof(page));
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(write(fds[1], page, sizeof(page)), sizeof(page));
	assert_int_equal(read(fds[0], a, sizeof(page)), sizeof(page));
	close(fds[0]);
	close(fds[1]);
	assert_int_equal(memcmp(a, page, sizeof(page)), 0);
	memcpy(shadow, page, sizeof(page));

	/* MADV_DONTNEED over swapped and resident pages: zeros there only. */
	assert_int_equal(madvise(a + 64 * PAGE_WORDS, 128 * 4096, MADV_DONTNEED), 0);
	memset(shadow + 64 * PAGE_WORDS, 0, 128 * 4096);
	assert_int_equal(memcmp(a, shadow, na * 8), 0);
	assert_int_equal(wrong_words(b, nb, 2), 0);
	assert_int_equal(uswap_region_pool_stat(pool, &st), 0);
	assert_true(st.removes >= 1);
	assert_true(st.peak_resident_pages <= st.budget_pages);

	/* Destroy with pages swapped out: their slots are freed. */
	assert_true(st.swapped_pages > 0);
	assert_int_equal(uswap_region_destroy(pool, a), 0);
	assert_int_equal(uswap_region_destroy(pool, a), -EINVAL);
	assert_int_equal(uswap_region_destroy(pool, b), 0);
	assert_int_equal(uswap_region_pool_stat(pool, &st), 0);
	assert_int_equal(st.regions, 0);
	assert_int_equal(st.swapped_pages, 0);
	assert_int_equal(st.resident_pages, 0);
	uswap_region_pool_destroy(pool);
	assert_int_equal(inuse(type), 0);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	free(shadow);
}

static void test_fill_table(void **state)
{
	(void)state;
	fill_verify("table");
}

static void test_fill_legacy(void **state)
{
	(void)state;
	fill_verify("legacy");
}

struct incr_arg {
	uint64_t *w;
	size_t nwords;
	uint32_t *mine;		/* increments this thread made, per word */
	unsigned int seed;
	int rounds;
};

/* Pick a page, do 64 increments in it; again. */
static void *incr_main(void *p)
{
	struct incr_arg *a = p;
	size_t npages = a->nwords / PAGE_WORDS;

	for (int r = 0; r < a->rounds; r++) {
		size_t pg = (size_t)rand_r(&a->seed) % npages;

		for (int k = 0; k < 64; k++) {
			size_t j = pg * PAGE_WORDS + (size_t)rand_r(&a->seed) % PAGE_WORDS;

			__atomic_fetch_add(&a->w[j], 1, __ATOMIC_RELAXED);
			a->mine[j]++;
		}
	}
	return NULL;
}

/* Four threads increment words of a region twice its budget while pages
 * are moved out under them: not one increment may be lost. */
static void atomic_increments(const char *design)
{
	enum { THREADS = 4 };
	struct uswap_region_pool *pool;
	struct uswap_region_stat st;
	struct incr_arg args[THREADS];
	pthread_t t[THREADS];
	size_t n = MIB / 8, lost = 0;
	uint64_t *w, total = 0;
	int type = pool_on(design, 512 * KIB, &pool);

	assert_int_equal(uswap_region_create(pool, MIB, (void **)&w), 0);
	for (int i = 0; i < THREADS; i++) {
		args[i] = (struct incr_arg){ .w = w, .nwords = n, .seed = 11u + (unsigned int)i,
					     .rounds = 3000 };
		args[i].mine = calloc(n, sizeof(uint32_t));
		assert_non_null(args[i].mine);
		assert_int_equal(pthread_create(&t[i], NULL, incr_main, &args[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	for (size_t j = 0; j < n; j++) {
		uint64_t want = 0;

		for (int i = 0; i < THREADS; i++)
			want += args[i].mine[j];
		lost += w[j] != want;
		total += w[j];
	}
	assert_int_equal(lost, 0);
	assert_int_equal(total, (uint64_t)THREADS * 3000 * 64);
	assert_int_equal(uswap_region_pool_stat(pool, &st), 0);
	assert_true(st.evicted > 256);		/* eviction ran under the threads */
	assert_true(st.swapins > 0);
	assert_true(st.peak_resident_pages <= st.budget_pages);
	uswap_region_pool_destroy(pool);
	assert_int_equal(inuse(type), 0);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	for (int i = 0; i < THREADS; i++)
		free(args[i].mine);
}

static void test_atomic_table(void **state)
{
	(void)state;
	atomic_increments("table");
}

static void test_atomic_legacy(void **state)
{
	(void)state;
	atomic_increments("legacy");
}

/* fork(): the child reads the parent's data (brought in first) and writes
 * half of it; the parent keeps its own. The pool has its own device here. */
static void test_fork(void **state)
{
	struct uswap_region_config cfg = { .budget_bytes = 256 * KIB, .swap = "zram:16M",
					   .design = "legacy" };
	struct uswap_region_pool *pool;
	struct uswap_region_stat st;
	size_t n = 768 * KIB / 8;
	uint64_t *w;
	int status;
	pid_t pid;

	(void)state;
	assert_int_equal(uswap_region_pool_create(&cfg, &pool), 0);
	assert_int_equal(uswap_region_create(pool, 768 * KIB, (void **)&w), 0);
	for (size_t i = 0; i < n; i++)
		w[i] = val(i, 3);
	assert_int_equal(uswap_region_pool_stat(pool, &st), 0);
	assert_true(st.swapped_pages > 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		void *x;
		int bad = wrong_words(w, n, 3) != 0;

		for (size_t i = 0; i < n; i += 2 * PAGE_WORDS)
			for (size_t k = 0; k < PAGE_WORDS; k++)
				w[i + k] = 0;
		for (size_t i = 0; i < n; i++)
			bad |= w[i] != ((i / PAGE_WORDS) % 2 ? val(i, 3) : 0);
		bad |= uswap_region_create(pool, 4096, &x) != -ECHILD;
		_exit(bad);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(wrong_words(w, n, 3), 0);
	assert_int_equal(uswap_region_pool_stat(pool, &st), 0);
	assert_int_equal(st.forks, 1);
	/* The pages were shared with the child: the kernel refuses to move
	 * them until written. Written, they go out again. */
	for (size_t i = 0; i < n; i++)
		w[i] = val(i, 4);
	assert_int_equal(wrong_words(w, n, 4), 0);
	for (int k = 0; k < 400; k++) {	/* the handler retries every 10 ms */
		assert_int_equal(uswap_region_pool_stat(pool, &st), 0);
		if (st.swapped_pages)
			break;
		usleep(5000);
	}
	assert_true(st.swapped_pages > 0);
	assert_int_equal(wrong_words(w, n, 4), 0);
	assert_true(st.peak_resident_pages >= n / PAGE_WORDS);	/* all in for the fork */
	uswap_region_pool_destroy(pool);
}

static void test_bad_args(void **state)
{
	struct uswap_region_config cfg = { .budget_bytes = MIB };
	struct uswap_region_pool *pool = NULL;
	struct uswap_region_stat st;
	void *p;
	int x;

	(void)state;
	assert_int_equal(uswap_region_pool_create(NULL, &pool), -EINVAL);
	assert_int_equal(uswap_region_pool_create(&cfg, NULL), -EINVAL);
	cfg.budget_bytes = 60 * KIB;
	assert_int_equal(uswap_region_pool_create(&cfg, &pool), -EINVAL);
	cfg.budget_bytes = MIB;
	cfg.__reserved[4] = 1;
	assert_int_equal(uswap_region_pool_create(&cfg, &pool), -EINVAL);
	cfg.__reserved[4] = 0;
	cfg.design = "legacy";		/* a design without a device */
	assert_int_equal(uswap_region_pool_create(&cfg, &pool), -EINVAL);
	cfg.swap = "zram:16M";
	cfg.design = "tree";
	assert_int_equal(uswap_region_pool_create(&cfg, &pool), -EINVAL);
	cfg.swap = "nosuch:16M";
	cfg.design = NULL;
	assert_true(uswap_region_pool_create(&cfg, &pool) < 0);
	assert_null(pool);
	uswap_region_pool_destroy(NULL);

	cfg.swap = NULL;
	assert_int_equal(uswap_region_pool_create(&cfg, &pool), 0);
	assert_int_equal(uswap_region_create(NULL, 4096, &p), -EINVAL);
	assert_int_equal(uswap_region_create(pool, 0, &p), -EINVAL);
	assert_int_equal(uswap_region_create(pool, 4096, NULL), -EINVAL);
	assert_int_equal(uswap_region_create(pool, (64ULL << 30) + 1, &p), -EINVAL);
	assert_int_equal(uswap_region_destroy(NULL, &x), -EINVAL);
	assert_int_equal(uswap_region_destroy(pool, &x), -EINVAL);
	assert_int_equal(uswap_region_pool_stat(NULL, &st), -EINVAL);
	assert_int_equal(uswap_region_pool_stat(pool, NULL), -EINVAL);
	/* A size that is not whole pages is rounded up; the region reads zeros. */
	assert_int_equal(uswap_region_create(pool, 100, &p), 0);
	assert_int_equal(((char *)p)[4095], 0);
	memset(&st, 0xa5, sizeof(st));
	assert_int_equal(uswap_region_pool_stat(pool, &st), 0);
	assert_int_equal(st.region_bytes, 4096);
	for (size_t i = 0; i < sizeof(st.__reserved) / sizeof(st.__reserved[0]); i++)
		assert_int_equal(st.__reserved[i], 0);
	assert_int_equal(uswap_region_destroy(pool, (char *)p + 4096), -EINVAL);
	assert_int_equal(uswap_region_destroy(pool, p), 0);
	uswap_region_pool_destroy(pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_fill_table),
		cmocka_unit_test(test_fill_legacy),
		cmocka_unit_test(test_atomic_table),
		cmocka_unit_test(test_atomic_legacy),
		cmocka_unit_test(test_fork),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
