/* SPDX-License-Identifier: MIT */
/*
 * The bench's statistics: medians over runs, and the 95% confidence
 * interval of a table/legacy ratio of medians by a percentile bootstrap of
 * the paired runs (run i of table with run i of legacy: the two ran back to
 * back, so they share the machine's load of the moment, and a resample
 * keeps them together).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench.h"

#define BOOT_RESAMPLES	4000
#define BOOT_SEED	0x9e3779b97f4a7c15ULL	/* fixed: the same runs give the same interval */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/**
 * bench_median() - the median of @n values (sorts @v in place).
 * Context: any. Return: the median, 0 when @n is 0.
 */
double bench_median(double *v, unsigned int n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/**
 * bench_ratio() - @t / @l, where 0/0 is 1 (no difference) and x/0 is
 * infinity. Context: any. Return: the ratio.
 */
double bench_ratio(double t, double l)
{
	return l != 0 ? t / l : (t == 0 ? 1.0 : INFINITY);
}

static uint64_t boot_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

/**
 * bench_ratio_ci95() - 95% interval of median(@t) / median(@l) over @n
 * paired runs: BOOT_RESAMPLES resamples of the pairs with replacement,
 * the 2.5th and 97.5th percentiles of the resampled ratios.
 * Context: any. Return: 0 and *@lo, *@hi (either may be infinite when a
 * legacy median of a resample is 0); -EINVAL with fewer than 2 pairs.
 */
int bench_ratio_ci95(const double *t, const double *l, unsigned int n, double *lo, double *hi)
{
	static double r[BOOT_RESAMPLES];
	double ts[BENCH_MAX_RUNS], ls[BENCH_MAX_RUNS];
	uint64_t s = BOOT_SEED;
	unsigned int b, i;

	if (n < 2 || n > BENCH_MAX_RUNS)
		return -EINVAL;
	for (b = 0; b < BOOT_RESAMPLES; b++) {
		for (i = 0; i < n; i++) {
			unsigned int k = (unsigned int)((boot_next(&s) >> 11) % n);

			ts[i] = t[k];
			ls[i] = l[k];
		}
		r[b] = bench_ratio(bench_median(ts, n), bench_median(ls, n));
	}
	qsort(r, BOOT_RESAMPLES, sizeof(r[0]), cmp_double);
	*lo = r[(unsigned int)(0.025 * BOOT_RESAMPLES)];
	*hi = r[(unsigned int)(0.975 * BOOT_RESAMPLES) - 1];
	return 0;
}
