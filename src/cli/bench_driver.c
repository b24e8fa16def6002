/* SPDX-License-Identifier: MIT */
/*
 * The bench driver: runs a workload's measure() --runs times on one design,
 * or on both designs interleaved (table, legacy, table, ... after one
 * warm-up run of each), and reports per figure the median, min and max,
 * and with both designs the ratio table/legacy of the medians.
 * Output: a readable table, --json, --csv, and --plot FILE.svg (gnuplot).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/bench.h"

/** bench_result_add() - record figure @key of one run. */
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

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct summary {
	double median, min, max;
};

static struct summary summarize(double *v, unsigned int n)
{
	struct summary s = { 0, 0, 0 };

	if (!n)
		return s;
	qsort(v, n, sizeof(*v), cmp_double);
	s.min = v[0];
	s.max = v[n - 1];
	s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	return s;
}

/* Figure @key over the runs of one design. */
static struct summary figure(struct bench_result *runs, unsigned int n, const char *key)
{
	double v[BENCH_MAX_RUNS];
	unsigned int i, j, k = 0;

	for (i = 0; i < n; i++)
		for (j = 0; j < runs[i].n; j++)
			if (!strcmp(runs[i].m[j].key, key))
				v[k++] = runs[i].m[j].value;
	return summarize(v, k);
}

static void print_json_summary(FILE *f, struct bench_result *runs, unsigned int n)
{
	unsigned int j;

	fputc('{', f);
	for (j = 0; n && j < runs[0].n; j++) {
		struct summary s = figure(runs, n, runs[0].m[j].key);

		fprintf(f, "%s\"%s\":{\"median\":%.6g,\"min\":%.6g,\"max\":%.6g}", j ? "," : "",
			runs[0].m[j].key, s.median, s.min, s.max);
	}
	fputc('}', f);
}

static double ratio(double t, double l)
{
	return l != 0 ? t / l : (t == 0 ? 1.0 : INFINITY);
}

static int plot_svg(const char *path, const struct bench_opts *o, struct bench_result *t,
		    unsigned int nt, struct bench_result *l, unsigned int nl)
{
	char dat[] = "/tmp/uswap-plot-XXXXXX";
	int fd = mkstemp(dat);
	FILE *f, *gp;
	unsigned int j;
	int rc;

	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	/* One row per figure: name, table median/min/max, legacy median/min/max,
	 * normalized to the legacy median so that figures share one axis. */
	for (j = 0; nt && j < t[0].n; j++) {
		struct summary a = figure(t, nt, t[0].m[j].key);
		struct summary b = nl ? figure(l, nl, t[0].m[j].key) : a;
		double base = b.median != 0 ? b.median : 1;

		fprintf(f, "\"%s\" %g %g %g %g %g %g\n", t[0].m[j].key, a.median / base,
			a.min / base, a.max / base, b.median / base, b.min / base, b.max / base);
	}
	fclose(f);
	gp = popen("gnuplot", "w");
	if (!gp) {
		unlink(dat);
		return -ENOENT;
	}
	fprintf(gp, "set terminal svg size 1000,500 dynamic\nset output '%s'\n"
		    "set title 'uswap bench %s: table vs legacy (normalized to legacy median)'\n"
		    "set style data histograms\nset style histogram errorbars gap 1 lw 1\n"
		    "set style fill solid 0.6 border -1\nset xtics rotate by -30\n"
		    "set yrange [0:*]\nset grid ytics\n"
		    "plot '%s' using 2:3:4:xtic(1) title 'table', '' using 5:6:7 title 'legacy'\n",
		path, o->workload, dat);
	rc = pclose(gp);
	unlink(dat);
	return rc ? -EIO : 0;
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
		memset(&warm, 0, sizeof(warm));
		if (measure(o, "table", &warm) || (memset(&warm, 0, sizeof(warm)),
						   measure(o, "legacy", &warm)))
			return 1;
	}
	for (i = 0; i < runs; i++) {
		if (!o->quiet && !o->json && !o->csv && runs > 1)
			fprintf(stderr, "run %u/%u\n", i + 1, runs);
		if (both || !strcmp(one, "table")) {
			memset(&t[nt], 0, sizeof(t[nt]));
			if (measure(o, "table", &t[nt]))
				return 1;
			nt++;
		}
		if (both || !strcmp(one, "legacy")) {
			memset(&l[nl], 0, sizeof(l[nl]));
			if (measure(o, "legacy", &l[nl]))
				return 1;
			nl++;
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
					figure(r, n, r[0].m[j].key).median);
		} else {
			fprintf(out, ",\"ratio\":{");
			for (j = 0; j < t[0].n; j++) {
				double q = ratio(figure(t, nt, t[0].m[j].key).median,
						 figure(l, nl, t[0].m[j].key).median);

				/* JSON has no infinity: a figure that is 0 on the
				 * old design and not on the new has no ratio. */
				if (isfinite(q))
					fprintf(out, "%s\"%s\":%.4f", j ? "," : "", t[0].m[j].key, q);
				else
					fprintf(out, "%s\"%s\":null", j ? "," : "", t[0].m[j].key);
			}
			fputc('}', out);
		}
		fprintf(out, "}\n");
	} else if (o->csv) {
		fprintf(out, "workload,figure,design,median,min,max\n");
		for (j = 0; nt && j < t[0].n; j++) {
			struct summary s = figure(t, nt, t[0].m[j].key);

			fprintf(out, "%s,%s,table,%.6g,%.6g,%.6g\n", o->workload, t[0].m[j].key,
				s.median, s.min, s.max);
		}
		for (j = 0; nl && j < l[0].n; j++) {
			struct summary s = figure(l, nl, l[0].m[j].key);

			fprintf(out, "%s,%s,legacy,%.6g,%.6g,%.6g\n", o->workload, l[0].m[j].key,
				s.median, s.min, s.max);
		}
	} else {
		struct bench_result *r0 = nt ? t : l;

		fprintf(out, "workload %s, %u run%s%s\n", o->workload, runs, runs > 1 ? "s" : "",
			both ? " of each design, interleaved" : "");
		fprintf(out, "%-28s %14s %14s %14s", "figure", nt ? "table" : "", "", "");
		if (both)
			fprintf(out, " %14s %14s %14s %8s", "legacy", "", "", "ratio");
		fprintf(out, "\n%-28s %14s %14s %14s", "", "median", "min", "max");
		if (both)
			fprintf(out, " %14s %14s %14s %8s", "median", "min", "max", "t/l");
		fputc('\n', out);
		for (j = 0; j < r0[0].n; j++) {
			const char *key = r0[0].m[j].key;
			struct summary a = figure(r0, nt ? nt : nl, key);

			fprintf(out, "%-28s %14.6g %14.6g %14.6g", key, a.median, a.min, a.max);
			if (both) {
				struct summary b = figure(l, nl, key);

				fprintf(out, " %14.6g %14.6g %14.6g %8.3f", b.median, b.min, b.max,
					ratio(a.median, b.median));
			}
			fputc('\n', out);
		}
	}
	if (o->plot) {
		int err = plot_svg(o->plot, o, nt ? t : l, nt ? nt : nl, nt ? l : NULL, nt ? nl : 0);

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
