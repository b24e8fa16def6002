/* SPDX-License-Identifier: MIT */
/*
 * The in-process mode's costs (uswap/region.h): a region SIZE MiB under a
 * budget of BUDGET MiB on a zram device against the same accesses on plain
 * memory, side by side in each round: fill MB/s, sequential read MB/s,
 * random page reads p50/p99 (us). Medians [min max] over the rounds.
 * Usage: bench_region [SIZE_MIB [BUDGET_MIB [ROUNDS [table|legacy]]]]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <uswap/uswap.h>

#define PAGE 4096
#define RAND_READS 4000

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* fill MB/s, sequential read MB/s, random p50 us, random p99 us */
static void run(uint64_t *w, size_t bytes, double *out)
{
	size_t n = bytes / 8, pages = bytes / PAGE;
	double lat[RAND_READS], t;
	volatile uint64_t sum = 0;
	unsigned int seed = 1;

	t = now();
	for (size_t i = 0; i < n; i++)
		w[i] = i;
	out[0] = (double)bytes / 1e6 / (now() - t);
	t = now();
	for (size_t i = 0; i < n; i += 8)
		sum += w[i];
	out[1] = (double)bytes / 1e6 / (now() - t);
	for (int k = 0; k < RAND_READS; k++) {
		size_t p = (size_t)rand_r(&seed) % pages;

		t = now();
		sum += w[p * (PAGE / 8)];
		lat[k] = (now() - t) * 1e6;
	}
	qsort(lat, RAND_READS, sizeof(double), cmp_d);
	out[2] = lat[RAND_READS / 2];
	out[3] = lat[RAND_READS * 99 / 100];
	(void)sum;
}

int main(int argc, char **argv)
{
	size_t size = (argc > 1 ? strtoull(argv[1], NULL, 10) : 48) << 20;
	uint64_t budget = (argc > 2 ? strtoull(argv[2], NULL, 10) : 16) << 20;
	int rounds = argc > 3 ? atoi(argv[3]) : 3;
	const char *design = argc > 4 ? argv[4] : "table";
	const char *names[4] = { "fill MB/s", "seq read MB/s", "random p50 us", "random p99 us" };
	double res[2][4][64];
	char why[256];

	if (rounds < 1 || rounds > 64)
		return 2;
	for (int r = 0; r < rounds; r++) {
		for (int o = 0; o < 2; o++) {	/* alternate the order */
			int which = (r + o) % 2;	/* 0 plain, 1 region */
			struct uswap_region_config cfg = { .budget_bytes = budget };
			struct uswap_region_pool *pool;
			void *m;
			int type, err;

			if (!which) {
				double out[4];

				m = mmap(NULL, size, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
				if (m == MAP_FAILED)
					return 1;

				run(m, size, out);
				for (int k = 0; k < 4; k++)
					res[0][k][r] = out[k];
				munmap(m, size);
				continue;
			}
			type = uswap_swapon_spec_design("zram:1G", 0, design, why, sizeof(why));
			if (type < 0 || (err = uswap_region_pool_create(&cfg, &pool)) ||
			    (err = uswap_region_create(pool, size, &m))) {
				fprintf(stderr, "bench_region: setup failed (run as root)\n");
				return 1;
			}
			double out[4];

			run(m, size, out);
			for (int k = 0; k < 4; k++)
				res[1][k][r] = out[k];
			uswap_region_pool_destroy(pool);
			uswap_swapoff_type((unsigned int)type);
		}
	}
	printf("bench_region: %zu MiB region, %llu MiB budget, zram, design %s, %d rounds\n",
	       size >> 20, (unsigned long long)(budget >> 20), design, rounds);
	printf("%-16s %28s %28s %8s\n", "", "plain memory", "region", "ratio");
	for (int k = 0; k < 4; k++) {
		double *a = res[0][k], *b = res[1][k];

		qsort(a, (size_t)rounds, sizeof(double), cmp_d);
		qsort(b, (size_t)rounds, sizeof(double), cmp_d);
		printf("%-16s %10.1f [%6.1f %6.1f] %10.1f [%6.1f %6.1f] %8.2f\n", names[k],
		       a[rounds / 2], a[0], a[rounds - 1], b[rounds / 2], b[0], b[rounds - 1],
		       b[rounds / 2] / a[rounds / 2]);
	}
	return 0;
}
