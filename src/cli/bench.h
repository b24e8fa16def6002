/* SPDX-License-Identifier: MIT */
/*
 * uswap bench: workloads. Each workload lives in bench_NAME.c and is a
 * function taking the bench options; it prints a readable summary, or one
 * JSON object with --json.
 */
#ifndef USWAP_CLI_BENCH_H
#define USWAP_CLI_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define BENCH_MAX_SWAP 8

struct bench_opts {
	const char *workload;
	const char *design;		/* "table", "legacy" or "both" */
	const char *swap[BENCH_MAX_SWAP];	/* device specs */
	unsigned int nr_swap;
	uint64_t memory;		/* budget in bytes (0: workload default) */
	uint64_t size;			/* data size in bytes (0: workload default) */
	unsigned int threads;
	unsigned int procs;
	unsigned int runs;
	uint64_t seed;
	double seconds;			/* duration where a workload runs for a time */
	bool json;
	bool csv;
	const char *plot;		/* --plot's path, for messages */
	int plot_fd;			/* the file it names, opened (-1: none) */
	bool quiet;
	int argc;			/* what remains for the workload */
	char **argv;
};

#define BENCH_MAX_METRICS 64
#define BENCH_MAX_RUNS 64

/* The figures of one run: key -> value, in a stable order. */
struct bench_result {
	unsigned int n;
	struct {
		const char *key;	/* a string literal */
		double value;
	} m[BENCH_MAX_METRICS];
};

void bench_result_add(struct bench_result *r, const char *key, double value);

struct bench_summary {
	double median, min, max;
};

/* bench_driver.c */
unsigned int bench_values(const struct bench_result *runs, unsigned int n, const char *key,
			  double *v);
struct bench_summary bench_figure(const struct bench_result *runs, unsigned int n,
				  const char *key);
int bench_compare(const struct bench_result *t, const struct bench_result *l, unsigned int n,
		  const char *key, double *ratio, double *lo, double *hi);

/* bench_plot.c */
bool bench_plot_headline(const char *key);
int bench_plot_svg(int out_fd, const struct bench_opts *o, const struct bench_result *t,
		   unsigned int nt, const struct bench_result *l, unsigned int nl);

/* bench_stats.c */
double bench_median(double *v, unsigned int n);
double bench_ratio(double t, double l);
int bench_ratio_ci95(const double *t, const double *l, unsigned int n, double *lo, double *hi);
#define BENCH_CI_METHOD "95% interval: percentile bootstrap of the paired runs (4000 resamples)"

/* bench_devices.c: per-device figures of the mm benches */
void bench_devices_start(void);
void bench_devices_design(const char *design);
void bench_devices_print(FILE *f, bool json);

int bench_drive(const struct bench_opts *o,
		int (*measure)(const struct bench_opts *o, const char *design,
			       struct bench_result *r));

struct bench_workload {
	const char *name;
	int (*run)(const struct bench_opts *o);
	const char *help;
};

int bench_swapio(const struct bench_opts *o);
int bench_usemem(const struct bench_opts *o);	/* bench_mm.c */
int bench_bgsave(const struct bench_opts *o);
int bench_build(const struct bench_opts *o);
int bench_random(const struct bench_opts *o);
int bench_sharedfault(const struct bench_opts *o);

#endif
