/* SPDX-License-Identifier: MIT */
/*
 * The bench driver: runs a workload's measure() --runs times on one design,
 * or on both designs in pairs (after one warm-up run of each), the order of
 * the two alternating from pair to pair (table first, then legacy first, ...)
 * so that neither always runs on the warmer or the quieter machine. It
 * reports per figure the median, min and max, and with both designs the
 * ratio table/legacy of the medians with its 95% interval (bench_stats.c);
 * a ratio whose interval contains 1 is "no difference".
 * Output: a readable table, --json, --csv, and --plot FILE.svg (bench_plot.c).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/bench.h"

/**
 * bench_result_add() - record figure @key (a string that outlives @r) of
 * one run; a figure past BENCH_MAX_METRICS is dropped.
 * Context: any. Return: nothing.
 */
void bench_result_add(struct bench_result *r, const char *key, double value)
{
	unsigned int i;

	for (i = 0; i < r->n; i++) {
		if (!strcmp(r->m[i].key, key)) {
			r->m[i].value = value;
			return;
		}
	}
	if (r->n == BENCH_MAX_METRICS)
		return;
	r->m[r->n].key = key;
	r->m[r->n].value = value;
	r->n++;
}

/**
 * bench_figure() - figure @key over the @n runs of one design.
 * Context: any. Return: its median, min and max (zeros when @n is 0).
 */
struct bench_summary bench_figure(const struct bench_result *runs, unsigned int n, const char *key)
{
	struct bench_summary sm = { 0, 0, 0 };
	double v[BENCH_MAX_RUNS];
	unsigned int k;

	k = bench_values(runs, n, key, v);
	if (!k)
		return sm;
	sm.median = bench_median(v, k);	/* sorts */
	sm.min = v[0];
	sm.max = v[k - 1];
	return sm;
}

/**
 * bench_values() - figure @key of each of the @n runs, in run order, into
 * @v (a run without it gives 0, so that pairs stay aligned).
 * Context: any. Return: @n.
 */
unsigned int bench_values(const struct bench_result *runs, unsigned int n, const char *key,
			  double *v)
{
	unsigned int i, j;

	for (i = 0; i < n; i++) {
		v[i] = 0;
		for (j = 0; j < runs[i].n; j++)
			if (!strcmp(runs[i].m[j].key, key))
				v[i] = runs[i].m[j].value;
	}
	return n;
}

/**
 * bench_compare() - ratio of the medians of figure @key (table over
 * legacy) and its 95% interval over the paired runs.
 * Context: any. Return: 0, or -EINVAL when there are fewer than two pairs
 * (*@lo and *@hi are then NAN).
 */
int bench_compare(const struct bench_result *t, const struct bench_result *l, unsigned int n,
		  const char *key, double *ratio, double *lo, double *hi)
{
	double tv[BENCH_MAX_RUNS], lv[BENCH_MAX_RUNS];

	*ratio = bench_ratio(bench_figure(t, n, key).median, bench_figure(l, n, key).median);
	bench_values(t, n, key, tv);
	bench_values(l, n, key, lv);
	if (bench_ratio_ci95(tv, lv, n, lo, hi)) {
		*lo = *hi = NAN;
		return -EINVAL;
	}
	return 0;
}

static void print_json_summary(FILE *f, struct bench_result *runs, unsigned int n)
{
	unsigned int j;

	fputc('{', f);
	for (j = 0; n && j < runs[0].n; j++) {
		struct bench_summary s = bench_figure(runs, n, runs[0].m[j].key);

		fprintf(f, "%s\"%s\":{\"median\":%.6g,\"min\":%.6g,\"max\":%.6g}", j ? "," : "",
			runs[0].m[j].key, s.median, s.min, s.max);
	}
	fputc('}', f);
}

/* A number in JSON, or null (JSON has no infinity). */
static void json_num(FILE *f, double v, const char *fmt)
{
	if (isfinite(v))
		fprintf(f, fmt, v);
	else
		fputs("null", f);
}

/* Run @design once into @r. Return: 0, or 1 when the workload failed. */
static int measure_one(const struct bench_opts *o, const char *design, struct bench_result *r,
		       int (*measure)(const struct bench_opts *o, const char *design,
				      struct bench_result *r))
{
	memset(r, 0, sizeof(*r));
	return measure(o, design, r) ? 1 : 0;
}

/**
 * bench_drive() - run @measure as the options say and report.
 * Return: the process exit status.
 */
int bench_drive(const struct bench_opts *o,
		int (*measure)(const struct bench_opts *o, const char *design,
			       struct bench_result *r))
{
	static struct bench_result t[BENCH_MAX_RUNS], l[BENCH_MAX_RUNS];
	bool both = !strcmp(o->design, "both");
	unsigned int runs = o->runs, nt = 0, nl = 0, i, j;
	const char *one = both ? NULL : o->design;
	struct bench_result warm;
	FILE *out = stdout;

	if (runs > BENCH_MAX_RUNS)
		runs = BENCH_MAX_RUNS;
	if (both && runs < 5)
		runs = 5;	/* the comparison needs at least five of each */
	if (both) {
		if (!o->quiet && !o->json && !o->csv)
			fprintf(stderr, "warm-up: table, legacy\n");
		if (measure_one(o, "table", &warm, measure) ||
		    measure_one(o, "legacy", &warm, measure))
			return 1;
	}
	for (i = 0; i < runs; i++) {
		/* Pair i: table first when i is even, legacy first when odd. */
		bool legacy_first = both && (i & 1);

		if (!o->quiet && !o->json && !o->csv && runs > 1)
			fprintf(stderr, "run %u/%u%s\n", i + 1, runs,
				both ? (legacy_first ? " (legacy, table)" : " (table, legacy)") : "");
		if (legacy_first) {
			if (measure_one(o, "legacy", &l[nl++], measure))
				return 1;
		}
		if (both || !strcmp(one, "table")) {
			if (measure_one(o, "table", &t[nt++], measure))
				return 1;
		}
		if (!legacy_first && (both || !strcmp(one, "legacy"))) {
			if (measure_one(o, "legacy", &l[nl++], measure))
				return 1;
		}
	}
	if (o->json) {
		fprintf(out, "{\"workload\":\"%s\",\"design\":\"%s\",\"runs\":%u", o->workload,
			o->design, runs);
		if (nt) {
			fprintf(out, ",\"table\":");
			print_json_summary(out, t, nt);
		}
		if (nl) {
			fprintf(out, ",\"legacy\":");
			print_json_summary(out, l, nl);
		}
		/* Single design: each figure's median at top level too. */
		if (!both) {
			struct bench_result *r = nt ? t : l;
			unsigned int n = nt ? nt : nl;

			for (j = 0; j < r[0].n; j++)
				fprintf(out, ",\"%s\":%.6g", r[0].m[j].key,
					bench_figure(r, n, r[0].m[j].key).median);
		} else {
			double q, lo, hi;

			/* A figure that is 0 on the old design and not on the
			 * new has no ratio: null. */
			fprintf(out, ",\"ratio\":{");
			for (j = 0; j < t[0].n; j++) {
				bench_compare(t, l, nt, t[0].m[j].key, &q, &lo, &hi);
				fprintf(out, "%s\"%s\":", j ? "," : "", t[0].m[j].key);
				json_num(out, q, "%.4f");
			}
			fprintf(out, "},\"ratio_ci95_method\":\"paired percentile bootstrap\","
				     "\"ratio_ci95\":{");
			for (j = 0; j < t[0].n; j++) {
				bench_compare(t, l, nt, t[0].m[j].key, &q, &lo, &hi);
				fprintf(out, "%s\"%s\":[", j ? "," : "", t[0].m[j].key);
				json_num(out, lo, "%.4f");
				fputc(',', out);
				json_num(out, hi, "%.4f");
				fputc(']', out);
			}
			fputc('}', out);
		}
		bench_devices_print(out, true);
		fprintf(out, "}\n");
	} else if (o->csv) {
		fprintf(out, "workload,figure,design,median,min,max\n");
		for (j = 0; nt && j < t[0].n; j++) {
			struct bench_summary s = bench_figure(t, nt, t[0].m[j].key);

			fprintf(out, "%s,%s,table,%.6g,%.6g,%.6g\n", o->workload, t[0].m[j].key,
				s.median, s.min, s.max);
		}
		for (j = 0; nl && j < l[0].n; j++) {
			struct bench_summary s = bench_figure(l, nl, l[0].m[j].key);

			fprintf(out, "%s,%s,legacy,%.6g,%.6g,%.6g\n", o->workload, l[0].m[j].key,
				s.median, s.min, s.max);
		}
	} else {
		struct bench_result *r0 = nt ? t : l;

		fprintf(out, "workload %s, %u run%s%s\n", o->workload, runs, runs > 1 ? "s" : "",
			both ? " of each design, in pairs, the order alternating" : "");
		if (both)
			fprintf(out, "ratio t/l: of the medians; %s\n", BENCH_CI_METHOD);
		fprintf(out, "%-28s %12s %12s %12s", "figure", nt ? "table" : "", "", "");
		if (both)
			fprintf(out, " %12s %12s %12s %7s %17s", "legacy", "", "", "ratio", "95% interval");
		fprintf(out, "\n%-28s %12s %12s %12s", "", "median", "min", "max");
		if (both)
			fprintf(out, " %12s %12s %12s %7s", "median", "min", "max", "t/l");
		fputc('\n', out);
		for (j = 0; j < r0[0].n; j++) {
			const char *key = r0[0].m[j].key;
			struct bench_summary a = bench_figure(r0, nt ? nt : nl, key);

			fprintf(out, "%-28s %12.6g %12.6g %12.6g", key, a.median, a.min, a.max);
			if (both) {
				struct bench_summary b = bench_figure(l, nl, key);
				double q, lo, hi;

				bench_compare(t, l, nt, key, &q, &lo, &hi);
				fprintf(out, " %12.6g %12.6g %12.6g %7.3f [%6.3f, %6.3f]%s", b.median,
					b.min, b.max, q, lo, hi,
					lo <= 1 && hi >= 1 ? " no difference" : "");
			}
			fputc('\n', out);
		}
		bench_devices_print(out, false);
	}
	if (o->plot) {
		int err = bench_plot_svg(o->plot_fd, o, nt ? t : l, nt ? nt : nl, nt ? l : NULL, nt ? nl : 0);

		if (err) {
			fprintf(stderr, "uswap bench: --plot %s: gnuplot failed (%s)\n", o->plot,
				strerror(-err));
			return 1;
		}
		if (!o->json && !o->csv)
			fprintf(stderr, "plot written to %s\n", o->plot);
	}
	/* Every workload reports bad_pages: any is a failure. */
	for (i = 0; i < nt; i++)
		for (j = 0; j < t[i].n; j++)
			if (!strcmp(t[i].m[j].key, "bad_pages") && t[i].m[j].value != 0)
				return 1;
	for (i = 0; i < nl; i++)
		for (j = 0; j < l[i].n; j++)
			if (!strcmp(l[i].m[j].key, "bad_pages") && l[i].m[j].value != 0)
				return 1;
	return 0;
}
