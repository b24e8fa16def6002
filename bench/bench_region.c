/* SPDX-License-Identifier: MIT */
/*
 * The in-process mode's costs (uswap/region.h): a region SIZE MiB under a
 * budget of BUDGET MiB on a zram device against the same accesses on plain
 * memory, side by side in each round: fill MB/s, sequential read MB/s,
 * random page reads p50/p99 (us). Medians [min max] over the rounds.
 * Then, on the same device and design (the second part):
 *  - hot/cold: a hot set of 1/8 of the budget read between the pages of a
 *    cold stream 4x the budget; swap-ins per 1000 page accesses and the
 *    refault rate, the lists (default) against fault order
 *    (USWAP_REGION_EVICT_FIFO), alternating which runs first;
 *  - total: the region filled with pages that compress ~4:1 under the
 *    budget alone and under total_bytes = 1.5x the budget: peaks of
 *    resident + compressed pages;
 *  - fork: fork() time in the parent with the region mostly swapped out,
 *    regions inherited (every page in, back under the budget before fork()
 *    returns) against USWAP_REGION_NOFORK, and resident pages right after.
 * Usage: bench_region [SIZE_MIB [BUDGET_MIB [ROUNDS [table|legacy]]]]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

static void med3(double *v, int n, double *out)
{
	qsort(v, (size_t)n, sizeof(double), cmp_d);
	out[0] = v[n / 2];
	out[1] = v[0];
	out[2] = v[n - 1];
}

/* A pool with @flags (and @total) on its own zram device of @design. */
static struct uswap_region_pool *pool_own(uint64_t budget, uint64_t total, uint64_t flags,
					  const char *design)
{
	struct uswap_region_config cfg = { .budget_bytes = budget, .swap = "zram:1G",
					   .design = design, .total_bytes = total,
					   .flags = flags };
	struct uswap_region_pool *pool;

	if (uswap_region_pool_create(&cfg, &pool)) {
		fprintf(stderr, "bench_region: setup failed (run as root)\n");
		exit(1);
	}
	return pool;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* hot/cold under @flags: swap-ins per 1000 accesses, refault ppm, ns/access
 * (wall), ns/access (CPU time of the process: the handler included) */
static void hot_cold(uint64_t budget, uint64_t flags, const char *design, double *out)
{
	struct uswap_region_pool *pool = pool_own(budget, 0, flags, design);
	size_t hot_pages = budget / PAGE / 8, cold_pages = 4 * budget / PAGE, ops = 0;
	struct uswap_region_stat st;
	volatile uint64_t sum = 0;
	uint64_t *hot, *cold;
	double t, cpu;

	if (uswap_region_create(pool, hot_pages * PAGE, (void **)&hot) ||
	    uswap_region_create(pool, cold_pages * PAGE, (void **)&cold))
		exit(1);
	for (size_t p = 0; p < hot_pages; p++)
		hot[p * (PAGE / 8)] = p;
	for (size_t p = 0; p < cold_pages; p++)
		cold[p * (PAGE / 8)] = p;
	uswap_region_pool_stat(pool, &st);
	uint64_t base = st.swapins, ev0 = st.evicted, rf0 = st.refaults;

	t = now();
	cpu = cpu_s();
	for (int r = 0; r < 3; r++)
		for (size_t p = 0; p < cold_pages; p++) {
			sum += cold[p * (PAGE / 8)];
			ops++;
			if (p % 4 == 0)
				for (size_t h = 0; h < hot_pages; h += 1 + p % 3) {
					sum += hot[h * (PAGE / 8)];
					ops++;
				}
		}
	t = now() - t;
	cpu = cpu_s() - cpu;
	uswap_region_pool_stat(pool, &st);
	out[3] = cpu * 1e9 / (double)ops;
	out[0] = (double)(st.swapins - base) * 1000.0 / (double)ops;
	out[1] = st.evicted > ev0 ? (double)(st.refaults - rf0) * 1e6 /
				    (double)(st.evicted - ev0) : 0;
	out[2] = t * 1e9 / (double)ops;
	uswap_region_pool_destroy(pool);
	(void)sum;
}

/* total: peak resident + compressed pages, peak compressed MiB */
static void total_peak(size_t size, uint64_t budget, uint64_t total, const char *design,
		       double *out)
{
	struct uswap_region_pool *pool = pool_own(budget, total, 0, design);
	struct uswap_region_stat st;
	uint64_t *w;

	if (uswap_region_create(pool, size, (void **)&w))
		exit(1);
	for (int r = 0; r < 2; r++)
		for (size_t i = 0; i < size / 8; i++)
			w[i] = i % 512 < 128 ? i * 0x9E3779B97F4A7C15ULL : 7;
	uswap_region_pool_stat(pool, &st);
	out[0] = (double)st.peak_total_pages;
	out[1] = (double)st.peak_compressed_bytes / (1 << 20);
	out[2] = (double)st.resident_pages;
	uswap_region_pool_destroy(pool);
}

/* fork: fork() ms in the parent, resident pages right after it */
static void fork_time(size_t size, uint64_t budget, uint64_t flags, const char *design,
		      double *out)
{
	struct uswap_region_pool *pool = pool_own(budget, 0, flags, design);
	struct uswap_region_stat st;
	uint64_t *w;
	double t;
	pid_t pid;
	int go[2];
	char c;

	if (uswap_region_create(pool, size, (void **)&w) || pipe(go))
		exit(1);
	for (size_t i = 0; i < size / 8; i++)
		w[i] = i;
	t = now();
	pid = fork();
	if (pid == 0) {		/* holds the shared pages until the parent has measured */
		_exit(read(go[0], &c, 1) != 1);
	}
	t = now() - t;
	uswap_region_pool_stat(pool, &st);
	out[0] = t * 1e3;
	out[1] = (double)st.resident_pages;
	out[2] = (double)st.peak_resident_pages;
	if (write(go[1], "g", 1) != 1 || waitpid(pid, NULL, 0) != pid)
		exit(1);
	close(go[0]);
	close(go[1]);
	uswap_region_pool_destroy(pool);
}

/* The second part: hot/cold, total, fork, each side by side per round. */
static void region_lists(size_t size, uint64_t budget, int rounds, const char *design)
{
	double hc[2][4][64], tp[2][3][64], fk[2][3][64], m[3];
	const char *hc_n[4] = { "swap-ins/1000 accesses", "refaults per M evicted",
				"ns per access (wall)", "ns per access (CPU)" };
	const char *tp_n[3] = { "peak resident+compr. pages", "peak compressed MiB",
				"resident pages at end" };
	const char *fk_n[3] = { "fork() ms", "resident after fork()", "peak resident" };

	for (int r = 0; r < rounds; r++)
		for (int o = 0; o < 2; o++) {
			int which = (r + o) % 2;
			double out[4];

			hot_cold(budget, which ? USWAP_REGION_EVICT_FIFO : 0, design, out);
			for (int k = 0; k < 4; k++)
				hc[which][k][r] = out[k];
			total_peak(size, budget, which ? budget * 3 / 2 : 0, design, out);
			for (int k = 0; k < 3; k++)
				tp[which][k][r] = out[k];
			fork_time(size, budget, which ? USWAP_REGION_NOFORK : 0, design, out);
			for (int k = 0; k < 3; k++)
				fk[which][k][r] = out[k];
		}
	printf("\nregion2: %llu MiB budget (%llu pages), own zram device, design %s, %d rounds\n",
	       (unsigned long long)(budget >> 20), (unsigned long long)(budget / PAGE), design,
	       rounds);
	printf("%-28s %26s %26s %7s\n", "hot/cold", "lists", "fault order (FIFO)", "ratio");
	for (int k = 0; k < 4; k++) {
		double a[3];

		med3(hc[0][k], rounds, a);
		med3(hc[1][k], rounds, m);
		printf("%-28s %10.2f [%.2f %.2f] %10.2f [%.2f %.2f] %7.2f\n", hc_n[k], a[0],
		       a[1], a[2], m[0], m[1], m[2], a[0] ? m[0] / a[0] : 0);
	}
	printf("%-28s %26s %26s\n", "total (region of SIZE)", "budget only",
	       "total_bytes = 1.5x budget");
	for (int k = 0; k < 3; k++) {
		double a[3];

		med3(tp[0][k], rounds, a);
		med3(tp[1][k], rounds, m);
		printf("%-28s %10.1f [%6.1f %6.1f] %10.1f [%6.1f %6.1f]\n", tp_n[k], a[0], a[1],
		       a[2], m[0], m[1], m[2]);
	}
	printf("%-28s %26s %26s\n", "fork (region of SIZE)", "inherited", "USWAP_REGION_NOFORK");
	for (int k = 0; k < 3; k++) {
		double a[3];

		med3(fk[0][k], rounds, a);
		med3(fk[1][k], rounds, m);
		printf("%-28s %10.1f [%6.1f %6.1f] %10.1f [%6.1f %6.1f]\n", fk_n[k], a[0], a[1],
		       a[2], m[0], m[1], m[2]);
	}
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
	fflush(stdout);
	region_lists(size, budget, rounds, design);
	return 0;
}
