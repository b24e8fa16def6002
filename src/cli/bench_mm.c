/* SPDX-License-Identifier: MIT */
/*
 * The mm workloads of uswap bench: usemem, bgsave, build, random
 * (src/workload/workload_*.c). Each runs --runs times (1 unless --runs is
 * given), prints medians (with min/max over several runs) and exits 1 if
 * any page read back wrong, any access failed or any slot leaked.
 *
 * Workload options, after the common ones and a "--" (cmd_bench's getopt
 * refuses options it does not know):
 *   --write-pct N   bgsave, random: % of operations that write
 *   --nofork        bgsave: no BGSAVE child (the parent alone, for comparison)
 *   --max-order N   largest anonymous folio order faults use (0..9, default 0)
 *   --multiple X    random: working set = X * --memory when --size is not given
 *   --ops N         random, build: operations (jobs) instead of --seconds
 *   --page-cluster N  vm.page-cluster (0..5, default 3): readahead up to 2^N pages
 *   --zram-charge   count zram's memory (compressed data and metadata) against
 *                   --memory, as the kernel's RAM; by default it is reported
 *                   beside the budget (zram_peak_bytes)
 */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uswap/workload.h>

#include "cli/bench.h"
#include "util/size.h"

#define MM_MAX_RUNS 100

struct mm_bench {
	const char *name;
	uint64_t memory;		/* default budget */
	double seconds;
	unsigned int procs, threads;
	unsigned int write_pct;
	double multiple;		/* default data = multiple * budget */
};

struct mm_progress {
	const char *name;
	unsigned int run, runs;
	double t0;
	bool shown;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Shown only once a run has lasted 2 s: short runs stay silent. */
static void mm_progress_cb(void *arg, const char *phase, double frac)
{
	struct mm_progress *p = arg;

	if (!p->shown && now_s() - p->t0 < 2.0)
		return;
	p->shown = true;
	fprintf(stderr, "\r%s run %u/%u: %-10s %3.0f%%   ", p->name, p->run, p->runs, phase,
		frac * 100);
	fflush(stderr);
}

/*
 * cmd_bench defaults --runs to 5 for swapio; these workloads run once
 * unless the user asked. bench_opts does not say whether --runs was
 * given, so look at our own command line.
 */
static bool runs_given(void)
{
	char buf[8192];
	ssize_t n;
	size_t i;
	int fd = open("/proc/self/cmdline", O_RDONLY);

	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	for (i = 0; i < (size_t)n; i += strlen(buf + i) + 1)
		if (!strcmp(buf + i, "--runs") || !strncmp(buf + i, "--runs=", 7))
			return true;
	return false;
}


static int parse_extra(const struct bench_opts *o, const struct mm_bench *b,
		       struct uswap_workload_config *cfg, double *multiple)
{
	int i;

	for (i = 0; i < o->argc; i++) {
		const char *a = o->argv[i], *v = i + 1 < o->argc ? o->argv[i + 1] : NULL;
		uint64_t x;

		if (!strcmp(a, "--nofork")) {
			cfg->nofork = true;
			continue;
		}
		if (!strcmp(a, "--zram-charge")) {
			cfg->zram_charge = true;
			continue;
		}
		if (!strcmp(a, "--multiple")) {
			char *end;

			*multiple = v ? strtod(v, &end) : 0;
			/* finite, > 0, and small enough that multiple x budget fits */
			if (!v || *end || !(*multiple > 0) || !isfinite(*multiple) || *multiple > 1e6)
				goto bad;
			i++;
			continue;
		}
		if (!strcmp(a, "--group-memory-max") || !strcmp(a, "--group-swap-max")) {
			if (!v || uswap_parse_size(v, &x) || !x)
				goto bad;
			if (!strcmp(a, "--group-memory-max"))
				cfg->group_memory_max = x;
			else
				cfg->group_swap_max = x;
			i++;
			continue;
		}
		if (uswap_parse_count(v, &x))
			goto bad;
		if (!strcmp(a, "--write-pct") && x <= 100)
			cfg->write_pct = (unsigned int)x;
		else if (!strcmp(a, "--zero-pct") && x <= 100 && !strcmp(b->name, "usemem"))
			cfg->zero_pct = (unsigned int)x;
		else if (!strcmp(a, "--groups") && x >= 1 && x <= 64)
			cfg->groups = (unsigned int)x;
		else if (!strcmp(a, "--max-order") && x <= 9)
			cfg->max_order = (unsigned int)x;
		else if (!strcmp(a, "--ops"))
			cfg->ops = x;
		else if (!strcmp(a, "--page-cluster") && x <= 5)
			cfg->page_cluster = x ? (int)x : -1;
		else
			goto bad;
		i++;
		continue;
bad:
		fprintf(stderr, "uswap bench %s: bad option '%s%s%s' (see uswap bench --help)\n",
			b->name, a, v ? " " : "", v ? v : "");
		return -1;
	}
	return 0;
}

static void print_size(FILE *f, uint64_t b)
{
	if (b >= (1ULL << 30) && !(b % (1ULL << 30)))
		fprintf(f, "%" PRIu64 "G", b >> 30);
	else if (b >= (1ULL << 20) && !(b % (1ULL << 20)))
		fprintf(f, "%" PRIu64 "M", b >> 20);
	else
		fprintf(f, "%" PRIu64 "K", b >> 10);
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median, min, max of @n values (copied, not reordered). */
static void stats3(const double *v, unsigned int n, double *med, double *mn, double *mx)
{
	double s[MM_MAX_RUNS];

	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_d);
	*med = n & 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	*mn = s[0];
	*mx = s[n - 1];
}

static void print_num(double v)
{
	if (v == (double)(int64_t)v && v < 1e15 && v > -1e15)
		printf("%" PRId64, (int64_t)v);
	else
		printf("%.6g", v);
}

/* The workload config the options ask for. Return: 0, or 2 (usage error). */
static int mm_bench_config(const struct bench_opts *o, const struct mm_bench *b,
			   struct uswap_workload_config *cfg)
{
	double multiple = b->multiple;
	unsigned int i;

	memset(cfg, 0, sizeof(*cfg));
	cfg->write_pct = b->write_pct;
	if (parse_extra(o, b, cfg, &multiple))
		return 2;
	cfg->budget_bytes = o->memory ? o->memory : b->memory;
	cfg->data_bytes = o->size ? o->size : (uint64_t)((double)cfg->budget_bytes * multiple);
	cfg->data_bytes &= ~(uint64_t)(USWAP_PAGE_SIZE - 1);
	if (o->nr_swap) {
		for (i = 0; i < o->nr_swap && i < USWAP_WL_MAX_SPECS; i++)
			cfg->specs[i] = o->swap[i];
		cfg->nr_specs = i;
	} else {
		cfg->specs[0] = "zram:1G";
		cfg->nr_specs = 1;
	}
	/* No --threads (0): the workload's default. */
	cfg->threads = o->threads ? o->threads : b->threads;
	cfg->procs = o->procs ? o->procs : b->procs;
	cfg->seconds = o->seconds > 0 ? o->seconds : b->seconds;
	return 0;
}

/*
 * --design both: the driver runs table and legacy interleaved; one run of
 * a design is one workload run, its figures converted for the driver.
 */
static const struct mm_bench *both_bench;
static struct uswap_workload_config both_cfg;

static int mm_measure(const struct bench_opts *o, const char *design, struct bench_result *r)
{
	static unsigned int run;
	struct uswap_workload_result res;
	struct uswap_workload_config cfg = both_cfg;
	unsigned int f;
	int ret;

	cfg.design = design;
	bench_devices_design(run < 2 ? NULL : design);	/* runs 0, 1: the warm-up */
	cfg.seed = o->seed + run++ / 2;	/* both designs see the same seed in a pair */
	ret = uswap_workload_run(both_bench->name, &cfg, &res);
	if (ret && ret != -EIO) {
		fprintf(stderr, "uswap bench %s (%s): %s\n", both_bench->name, design,
			res.err[0] ? res.err : strerror(-ret));
		return 1;
	}
	for (f = 0; f < res.nr_figures; f++)
		bench_result_add(r, res.figures[f].name, res.figures[f].value);
	bench_result_add(r, "swapins", (double)res.swapins);
	bench_result_add(r, "swapouts", (double)res.swapouts);
	bench_result_add(r, "major_faults", (double)res.major_faults);
	bench_result_add(r, "elapsed_s", res.elapsed);
	bench_result_add(r, "bad_pages", (double)res.bad_pages);
	bench_result_add(r, "access_errors", (double)res.access_errors);
	return 0;
}

static int mm_bench_both(const struct bench_opts *o, const struct mm_bench *b)
{
	both_bench = b;
	if (mm_bench_config(o, b, &both_cfg))
		return 2;
	bench_devices_start();
	return bench_drive(o, mm_measure);
}

static int mm_bench_run(const struct bench_opts *o, const struct mm_bench *b)
{
	static struct uswap_workload_result res[MM_MAX_RUNS];
	struct uswap_workload_config cfg = { 0 };
	struct mm_progress prog = { .name = b->name };
	double v[MM_MAX_RUNS], med, mn, mx;
	uint64_t bad = 0, leaked = 0, errors = 0;
	unsigned int runs = runs_given() ? o->runs : 1, r, i, f;
	int ret, failed = 0;

	if (!strcmp(o->design, "both"))
		return mm_bench_both(o, b);
	if (runs > MM_MAX_RUNS) {
		fprintf(stderr, "uswap bench %s: at most %d runs\n", b->name, MM_MAX_RUNS);
		return 2;
	}
	if (mm_bench_config(o, b, &cfg))
		return 2;
	cfg.design = o->design;
	if (!o->quiet && !o->json) {
		cfg.progress = mm_progress_cb;
		cfg.progress_arg = &prog;
	}
	prog.runs = runs;
	bench_devices_start();
	for (r = 0; r < runs; r++) {
		cfg.seed = o->seed + r;
		prog.run = r + 1;
		prog.t0 = now_s();
		ret = uswap_workload_run(b->name, &cfg, &res[r]);
		if (prog.shown) {
			fprintf(stderr, "\r%60s\r", "");
			prog.shown = false;
		}
		bad += res[r].bad_pages;
		leaked += res[r].leaked_slots;
		errors += res[r].access_errors;
		if (ret) {
			fprintf(stderr, "uswap bench %s: run %u: %s\n", b->name, r + 1,
				res[r].err[0] ? res[r].err : strerror(-ret));
			failed = 1;
			if (ret != -EBUSY && ret != -EIO) {
				runs = r;	/* nothing to report for this one */
				break;
			}
		}
		if (res[r].bad_pages) {
			fprintf(stderr, "uswap bench %s: run %u (seed %" PRIu64 "): %" PRIu64
				" pages read back wrong\n", b->name, r + 1, cfg.seed,
				res[r].bad_pages);
			failed = 1;
		}
	}
	if (!runs) {
		bench_devices_print(NULL, false);
		return 1;
	}

	if (o->json) {
		printf("{\"workload\":");
		json_str(b->name);
		printf(",\"design\":\"%s\",\"runs\":%u,\"memory\":%" PRIu64 ",\"size\":%" PRIu64
		       ",\"seed\":%" PRIu64 ",\"swap\":[", o->design, runs, cfg.budget_bytes, cfg.data_bytes,
		       o->seed);
		for (i = 0; i < cfg.nr_specs; i++) {
			if (i)
				putchar(',');
			json_str(cfg.specs[i]);
		}
		printf("],\"bad_pages\":%" PRIu64 ",\"access_errors\":%" PRIu64
		       ",\"leaked_slots\":%" PRIu64, bad, errors, leaked);
#define STD(field, key) do { \
		for (r = 0; r < runs; r++) v[r] = (double)res[r].field; \
		stats3(v, runs, &med, &mn, &mx); \
		printf(",\"" key "\":"); print_num(med); \
		if (runs > 1) { printf(",\"" key "_min\":"); print_num(mn); \
				printf(",\"" key "_max\":"); print_num(mx); } \
	} while (0)
		STD(swapins, "swapins");
		STD(swapouts, "swapouts");
		STD(major_faults, "major_faults");
		STD(elapsed, "elapsed_s");
#undef STD
		for (f = 0; f < res[0].nr_figures; f++) {
			const char *name = res[0].figures[f].name;

			for (r = 0; r < runs; r++)
				v[r] = uswap_workload_figure(&res[r], name, 0);
			stats3(v, runs, &med, &mn, &mx);
			printf(",\"%s\":", name);
			print_num(med);
			if (runs > 1) {
				printf(",\"%s_min\":", name);
				print_num(mn);
				printf(",\"%s_max\":", name);
				print_num(mx);
			}
		}
		bench_devices_print(stdout, true);
		printf(",\"ok\":%s}\n", failed ? "false" : "true");
		return failed;
	}

	printf("%s: memory ", b->name);
	print_size(stdout, cfg.budget_bytes);
	printf(", data ");
	print_size(stdout, cfg.data_bytes);
	printf(", swap");
	for (i = 0; i < cfg.nr_specs; i++)
		printf(" %s", cfg.specs[i]);
	printf(", %u run%s, seed %" PRIu64 "\n", runs, runs > 1 ? "s" : "", o->seed);
	printf("  %-28s %14s", "figure", "median");
	if (runs > 1)
		printf(" %14s %14s", "min", "max");
	putchar('\n');
	for (f = 0; f < res[0].nr_figures + 4; f++) {
		const char *name;

		if (f < res[0].nr_figures) {
			name = res[0].figures[f].name;
			for (r = 0; r < runs; r++)
				v[r] = uswap_workload_figure(&res[r], name, 0);
		} else {
			static const char *const std[] = { "swapouts", "swapins", "major_faults",
							   "elapsed_s" };

			name = std[f - res[0].nr_figures];
			for (r = 0; r < runs; r++)
				v[r] = f == res[0].nr_figures ? (double)res[r].swapouts :
				       f == res[0].nr_figures + 1 ? (double)res[r].swapins :
				       f == res[0].nr_figures + 2 ? (double)res[r].major_faults :
				       res[r].elapsed;
		}
		stats3(v, runs, &med, &mn, &mx);
		printf("  %-28s %14.6g", name, med);
		if (runs > 1)
			printf(" %14.6g %14.6g", mn, mx);
		putchar('\n');
	}
	bench_devices_print(stdout, false);
	printf("  bad_pages %" PRIu64 ", access errors %" PRIu64 ", leaked slots %" PRIu64
	       " -> %s\n", bad, errors, leaked, failed ? "FAILED" : "ok");
	return failed;
}

int bench_usemem(const struct bench_opts *o)
{
	static const struct mm_bench b = {
		.name = "usemem", .memory = 128ULL << 20, .multiple = 2.0, .procs = 4,
	};

	return mm_bench_run(o, &b);
}

int bench_bgsave(const struct bench_opts *o)
{
	static const struct mm_bench b = {
		.name = "bgsave", .memory = 128ULL << 20, .multiple = 2.0, .write_pct = 10,
		.seconds = 1.0,
	};

	return mm_bench_run(o, &b);
}

int bench_build(const struct bench_opts *o)
{
	static const struct mm_bench b = {
		.name = "build", .memory = 128ULL << 20, .multiple = 2.0, .threads = 2,
		.seconds = 3.0,
	};

	return mm_bench_run(o, &b);
}

int bench_random(const struct bench_opts *o)
{
	static const struct mm_bench b = {
		.name = "random", .memory = 128ULL << 20, .multiple = 3.0, .write_pct = 20,
		.threads = 1, .seconds = 2.0,
	};

	return mm_bench_run(o, &b);
}

int bench_sharedfault(const struct bench_opts *o)
{
	static const struct mm_bench b = {
		.name = "sharedfault", .memory = 64ULL << 20, .multiple = 1.0 / 16, .procs = 2,
		.threads = 2, .seconds = 1.0,
	};

	return mm_bench_run(o, &b);
}
