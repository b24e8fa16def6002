/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the benchmark programs: a monotonic clock, repeated
 * measurements summarised as median / min / max, a small PRNG, a results
 * table printed both readable and as one JSON object.
 *
 * The machines these run on are noisy small VMs: every figure is measured
 * several times (BENCH_MIN_REPS at least) and reported as a median with its
 * range; comparisons are ratios taken within one run.
 */
#ifndef USWAP_BENCHUTIL_H
#define USWAP_BENCHUTIL_H

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_MIN_REPS	5
#define BENCH_MAX_REPS	101
#define BENCH_MAX_ROWS	64

/* Bind the calling thread to @cpu (the build defines _GNU_SOURCE). */
static inline void bench_pin_cpu(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: reproducible from a seed, cheap next to what is measured. */
static inline uint64_t bench_rand(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ULL;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

struct bench_stat {
	double med, min, max;
	int n;
};

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median, min and max of @n samples (@v is sorted in place). */
static inline struct bench_stat bench_stat_of(double *v, int n)
{
	struct bench_stat s = { 0, 0, 0, n };

	if (n <= 0)
		return s;
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	s.min = v[0];
	s.max = v[n - 1];
	s.med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	return s;
}

/* One line of results: a named figure with its unit. */
struct bench_row {
	char name[64];
	char unit[24];
	struct bench_stat st;
};

struct bench_report {
	const char *program;
	bool json;
	int nr_rows;
	struct bench_row rows[BENCH_MAX_ROWS];
	char params[512];	/* JSON members describing the run, without braces */
};

static inline void bench_add(struct bench_report *r, const char *name, const char *unit,
			     struct bench_stat st)
{
	struct bench_row *row;

	if (r->nr_rows >= BENCH_MAX_ROWS) {
		fprintf(stderr, "%s: too many result rows\n", r->program);
		exit(1);
	}
	row = &r->rows[r->nr_rows++];
	snprintf(row->name, sizeof(row->name), "%s", name);
	snprintf(row->unit, sizeof(row->unit), "%s", unit);
	row->st = st;
}

/* A figure measured once (deterministic): median = min = max. */
static inline void bench_add_value(struct bench_report *r, const char *name, const char *unit,
				   double v)
{
	struct bench_stat st = { v, v, v, 1 };

	bench_add(r, name, unit, st);
}

static inline void bench_print(const struct bench_report *r)
{
	int i;

	if (r->json) {
		printf("{\"program\":\"%s\"", r->program);
		if (r->params[0])
			printf(",%s", r->params);
		printf(",\"results\":[");
		for (i = 0; i < r->nr_rows; i++) {
			const struct bench_row *row = &r->rows[i];

			printf("%s{\"name\":\"%s\",\"unit\":\"%s\",\"median\":%.9g,"
			       "\"min\":%.9g,\"max\":%.9g,\"runs\":%d}",
			       i ? "," : "", row->name, row->unit, row->st.med, row->st.min,
			       row->st.max, row->st.n);
		}
		printf("]}\n");
		return;
	}
	printf("%-40s %14s %14s %14s %5s  %s\n", "measurement", "median", "min", "max", "runs",
	       "unit");
	for (i = 0; i < r->nr_rows; i++) {
		const struct bench_row *row = &r->rows[i];

		/* Rates as whole numbers, ratios and fractions with decimals. */
		int prec = row->st.max >= 1000 ? 0 : 3;

		printf("%-40s %14.*f %14.*f %14.*f %5d  %s\n", row->name, prec, row->st.med,
		       prec, row->st.min, prec, row->st.max, row->st.n, row->unit);
	}
}

/* Parse a positive integer option value or exit with a usage error. */
static inline uint64_t bench_parse_u64(const char *prog, const char *opt, const char *s)
{
	char *end;
	unsigned long long v;

	if (!s) {
		fprintf(stderr, "%s: %s needs a value\n", prog, opt);
		exit(2);
	}
	v = strtoull(s, &end, 0);
	if (*end || end == s) {
		fprintf(stderr, "%s: %s: not a number: %s\n", prog, opt, s);
		exit(2);
	}
	return (uint64_t)v;
}

#endif
