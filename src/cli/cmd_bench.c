/* SPDX-License-Identifier: MIT */
/*
 * uswap bench [--workload NAME] [--swap SPEC]... [--memory SIZE] [--size SIZE]
 *             [--threads N] [--procs N] [--runs N] [--seed N] [--seconds S]
 *             [--design table|legacy|both] [--json] [--csv] [--plot FILE]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli/bench.h"
#include "cli/commands.h"
#include "cli/outfile.h"
#include "util/size.h"

static const struct bench_workload workloads[] = {
	{ "swapio", bench_swapio, "swap-out and swap-in pages per second beside memcpy/lz4/zstd" },
	{ "usemem", bench_usemem,
	  "vm-scalability usemem: --procs N (4) fill data/N each, read back [--max-order N]\n"
	  "             [--zero-pct N (0): pages written as zeros]" },
	{ "bgsave", bench_bgsave,
	  "Redis BGSAVE: parent serves random pages from --threads N (1) threads\n"
	  "             [--write-pct N (10)] while a\n"
	  "             forked child reads all once [--nofork] [--max-order N]" },
	{ "build", bench_build,
	  "kernel build: --threads N (2) workers fork short-lived children of a parent\n"
	  "             [--ops JOBS] [--max-order N]" },
	{ "random", bench_random,
	  "uniform random pages over [--multiple X (3)] x --memory [--write-pct N (20)]\n"
	  "             [--ops N] [--max-order N]" },
	{ "sharedfault", bench_sharedfault,
	  "--threads N (2) in each of --procs N (2) forked processes fault the same\n"
	  "             swapped-out pages at once, round after round for --seconds (1);\n"
	  "             --memory 64M, data 4M\n"
	  "             mm workloads: options in [] go after '--', and [--page-cluster N (3)]\n"
	  "             (vm.page-cluster: readahead up to 2^N pages) and [--zram-charge]\n"
	  "             (zram's memory counted against --memory; by default reported\n"
	  "             beside it, zram_peak_bytes), [--groups N] (address spaces in N\n"
	  "             memory cgroups, in turn) with [--group-memory-max SIZE] (each\n"
	  "             group's memory.max) and [--group-swap-max SIZE] (group i of N:\n"
	  "             swap.max (i+1)/N of it); defaults --memory 128M,\n"
	  "             --swap zram:1G, 1 run" },
};

/*
 * A size option (util/size.h) of at least one byte into *@out, or a
 * message naming the option and its value. Context: option parsing.
 * Return: 0, -EINVAL (malformed or 0), -ERANGE (above 2^64 - 1).
 */
static int bench_size_arg(const char *opt, const char *arg, uint64_t *out)
{
	uint64_t v;
	int ret = uswap_parse_size(arg, &v);

	if (!ret && !v)
		ret = -EINVAL;
	if (ret) {
		fprintf(stderr, "uswap bench: %s '%s': %s\n", opt, arg,
			ret == -ERANGE ? "too large (above 2^64 - 1 bytes)" :
			"not a size above 0 (decimal digits with an optional K, M, G or "
			"T suffix, e.g. 64M)");
		return ret;
	}
	*out = v;
	return 0;
}

/*
 * A count option from @min to @max (decimal digits only) into *@out, or
 * a message naming the option and its value. Context: option parsing.
 * Return: 0, -EINVAL (malformed), -ERANGE (out of [@min, @max]).
 */
static int bench_count_arg(const char *opt, const char *arg, uint64_t min, uint64_t max,
			   uint64_t *out)
{
	uint64_t v;
	int ret = uswap_parse_count(arg, &v);

	if (!ret && (v < min || v > max))
		ret = -ERANGE;
	if (ret) {
		fprintf(stderr, "uswap bench: %s '%s': want a decimal number from %llu to %llu\n",
			opt, arg, (unsigned long long)min, (unsigned long long)max);
		return ret;
	}
	*out = v;
	return 0;
}

/*
 * --seconds: a finite number of seconds, at least 0 (0: the workload's
 * default), written with digits first ("0.3", "2", "1e1"): no sign, no
 * blank, no "inf", "nan" or hex float. Context: option parsing.
 * Return: 0 or -EINVAL (with a message).
 */
static int bench_seconds_arg(const char *arg, double *out)
{
	char *end;
	double v;

	if (arg[0] >= '0' && arg[0] <= '9') {
		v = strtod(arg, &end);
		if (!*end && isfinite(v) && !(arg[0] == '0' && (arg[1] == 'x' || arg[1] == 'X'))) {
			*out = v;
			return 0;
		}
	}
	fprintf(stderr, "uswap bench: --seconds '%s': want a decimal number of seconds, "
		"e.g. 0.5\n", arg);
	return -EINVAL;
}

/*
 * --plot FILE: opened as an output file (cli/outfile.h), so that a
 * symlink, a hard link or another user's file there is refused before the
 * workload runs. The descriptor is kept: gnuplot writes to it as its
 * standard output (bench_plot.c), and the path is not opened again.
 * Context: option parsing. Return: the descriptor (above 2), or
 * cli_open_output()'s error (with a message); *@created whether the file
 * is new.
 */
static int bench_plot_arg(const char *arg, bool *created)
{
	int fd = cli_open_output("uswap bench: --plot", arg, created), hi;

	if (fd < 0 || fd > 2)
		return fd;
	/* With a standard descriptor closed it could be one of them, which
	 * gnuplot's would replace. */
	hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (hi < 0)
		hi = -errno;
	close(fd);
	return hi;
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: uswap bench [--workload NAME] [--swap SPEC]... [--memory SIZE]\n"
		   "                   [--size SIZE] [--threads N] [--procs N] [--runs N]\n"
		   "                   [--seed N] [--seconds S] [--design table|legacy|both]\n"
		   "                   [--json] [--csv] [--plot FILE.svg]\n"
		   "specs: zram:SIZE[:lz4|zstd], file:PATH[,rotational=0|1] (a rotational\n"
		   "  disk, from sysfs or forced, turns swap-in to cluster readahead)\n"
		   "--design both: pairs of runs, the order alternating pair to pair; each\n"
		   "  ratio table/legacy (of the medians) with its\n  %s;\n"
		   "  an interval that contains 1 reads \"no difference\"\n"
		   "--plot: headline figures side by side, min..max bars, ratios with intervals\n"
		   "workloads:\n", BENCH_CI_METHOD);
	for (i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++)
		fprintf(f, "  %-10s %s\n", workloads[i].name, workloads[i].help);
}

/**
 * bench_parse_args() - the options of "uswap bench" into @o
 * @argc: argument count, argv[0] ("bench") included
 * @argv: the arguments; getopt_long() state is global (optind)
 * @o: filled from the defaults and the options; o->argc/argv what remains
 *     for the workload
 * @workload: receives the index of the workload in workloads[]
 *
 * Parses only: opens, creates and runs nothing (--plot is checked later).
 * Context: option parsing. Return: 0 (run it), 1 (--help printed), or
 * -EINVAL (the message or the usage printed).
 */
int bench_parse_args(int argc, char **argv, struct bench_opts *o, size_t *workload)
{
	static const struct option longopts[] = {
		{ "workload", required_argument, NULL, 'w' },
		{ "swap", required_argument, NULL, 's' },
		{ "memory", required_argument, NULL, 'm' },
		{ "size", required_argument, NULL, 'z' },
		{ "threads", required_argument, NULL, 't' },
		{ "procs", required_argument, NULL, 'p' },
		{ "runs", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 'S' },
		{ "seconds", required_argument, NULL, 'T' },
		{ "design", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "csv", no_argument, NULL, 'c' },
		{ "plot", required_argument, NULL, 'P' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	size_t i;
	int c;

	/* The main job by default: the BGSAVE shape on both designs. */
	*o = (struct bench_opts){ .workload = "bgsave", .design = NULL, .runs = 5, .plot_fd = -1 };
	o->seed = (uint64_t)time(NULL);
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'w': o->workload = optarg; break;
		case 's':
			if (o->nr_swap == BENCH_MAX_SWAP) {
				fprintf(stderr, "uswap bench: at most %d --swap\n", BENCH_MAX_SWAP);
				return -EINVAL;
			}
			o->swap[o->nr_swap++] = optarg;
			break;
		case 'm':
			if (bench_size_arg("--memory", optarg, &o->memory))
				return -EINVAL;
			break;
		case 'z':
			if (bench_size_arg("--size", optarg, &o->size))
				return -EINVAL;
			break;
		case 't':
			/* unset (0) means the workload's default */
			if (bench_count_arg("--threads", optarg, 1, UINT_MAX, &v))
				return -EINVAL;
			o->threads = (unsigned int)v;
			break;
		case 'p':
			if (bench_count_arg("--procs", optarg, 1, UINT_MAX, &v))
				return -EINVAL;
			o->procs = (unsigned int)v;
			break;
		case 'r':
			if (bench_count_arg("--runs", optarg, 1, UINT_MAX, &v))
				return -EINVAL;
			o->runs = (unsigned int)v;
			break;
		case 'S':
			if (bench_count_arg("--seed", optarg, 0, UINT64_MAX, &o->seed))
				return -EINVAL;
			break;
		case 'T':
			if (bench_seconds_arg(optarg, &o->seconds))
				return -EINVAL;
			break;
		case 'd':
			if (strcmp(optarg, "table") && strcmp(optarg, "legacy") &&
			    strcmp(optarg, "both")) {
				fprintf(stderr, "uswap bench: --design must be table, legacy or both\n");
				return -EINVAL;
			}
			o->design = optarg;
			break;
		case 'j': o->json = true; break;
		case 'c': o->csv = true; break;
		case 'P': o->plot = optarg; break;
		case 'q': o->quiet = true; break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return -EINVAL;
		}
	}
	/* Both designs unless asked otherwise; swapio measures the I/O path,
	 * which the designs share. */
	if (!o->design)
		o->design = strcmp(o->workload, "swapio") ? "both" : "table";
	if (!strcmp(o->workload, "swapio") && strcmp(o->design, "table")) {
		fprintf(stderr, "uswap bench: swapio measures the swap I/O paths, which both "
			"designs share: --design table only\n");
		return -EINVAL;
	}
	o->argc = argc - optind;
	o->argv = argv + optind;
	for (i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++)
		if (!strcmp(o->workload, workloads[i].name))
			break;
	if (i == sizeof(workloads) / sizeof(workloads[0])) {
		fprintf(stderr, "uswap bench: unknown workload '%s'\n", o->workload);
		usage(stderr);
		return -EINVAL;
	}
	*workload = i;
	return 0;
}

int cmd_bench(int argc, char **argv)
{
	struct bench_opts o;
	bool plot_created = false;
	struct stat st, fst;
	size_t i;
	int ret;

	ret = bench_parse_args(argc, argv, &o, &i);
	if (ret)
		return ret > 0 ? 0 : 2;
	if (o.plot) {
		o.plot_fd = bench_plot_arg(o.plot, &plot_created);
		if (o.plot_fd < 0)
			return 2;
	}
	ret = workloads[i].run(&o);
	/* A plot file made above that gnuplot never wrote goes again, if the
	 * path still names it. */
	if (o.plot_fd >= 0) {
		if (plot_created && !fstat(o.plot_fd, &fst) && !fst.st_size &&
		    !lstat(o.plot, &st) && st.st_dev == fst.st_dev && st.st_ino == fst.st_ino)
			unlink(o.plot);
		close(o.plot_fd);
	}
	return ret;
}
