/* SPDX-License-Identifier: MIT */
/*
 * uswap bench [--workload NAME] [--swap SPEC]... [--memory SIZE] [--size SIZE]
 *             [--threads N] [--procs N] [--runs N] [--seed N] [--seconds S]
 *             [--design table|legacy|both] [--json] [--csv] [--plot FILE]
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/bench.h"
#include "cli/commands.h"

static const struct bench_workload workloads[] = {
	{ "swapio", bench_swapio, "swap-out and swap-in pages per second beside memcpy/lz4/zstd" },
	{ "usemem", bench_usemem,
	  "vm-scalability usemem: --procs N (4) fill data/N each, read back [--max-order N]" },
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
	  "             beside it, zram_peak_bytes); defaults --memory 128M,\n"
	  "             --swap zram:1G, 1 run" },
};

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	double v = strtod(s, &end);
	uint64_t mult = 1;

	if (end == s || v < 0)
		return -1;
	switch (*end) {
	case 'k': case 'K': mult = 1ULL << 10; end++; break;
	case 'm': case 'M': mult = 1ULL << 20; end++; break;
	case 'g': case 'G': mult = 1ULL << 30; end++; break;
	case 't': case 'T': mult = 1ULL << 40; end++; break;
	}
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end)
		return -1;
	*out = (uint64_t)(v * (double)mult);
	return 0;
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

int cmd_bench(int argc, char **argv)
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
	/* The main job by default: the BGSAVE shape on both designs. */
	struct bench_opts o = { .workload = "bgsave", .design = NULL, .runs = 5 };
	size_t i;
	int c;

	o.seed = (uint64_t)time(NULL);
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'w': o.workload = optarg; break;
		case 's':
			if (o.nr_swap == BENCH_MAX_SWAP) {
				fprintf(stderr, "uswap bench: at most %d --swap\n", BENCH_MAX_SWAP);
				return 2;
			}
			o.swap[o.nr_swap++] = optarg;
			break;
		case 'm':
			if (parse_size(optarg, &o.memory) || !o.memory) {
				fprintf(stderr, "uswap bench: bad --memory '%s'\n", optarg);
				return 2;
			}
			break;
		case 'z':
			if (parse_size(optarg, &o.size) || !o.size) {
				fprintf(stderr, "uswap bench: bad --size '%s'\n", optarg);
				return 2;
			}
			break;
		case 't':
			/* 0 is refused below; unset (0) means the workload's default. */
			o.threads = (unsigned int)strtoul(optarg, NULL, 0);
			if (!o.threads) {
				fprintf(stderr, "uswap bench: --threads must be at least 1\n");
				return 2;
			}
			break;
		case 'p': o.procs = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'r': o.runs = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'S': o.seed = strtoull(optarg, NULL, 0); break;
		case 'T': o.seconds = strtod(optarg, NULL); break;
		case 'd':
			if (strcmp(optarg, "table") && strcmp(optarg, "legacy") &&
			    strcmp(optarg, "both")) {
				fprintf(stderr, "uswap bench: --design must be table, legacy or both\n");
				return 2;
			}
			o.design = optarg;
			break;
		case 'j': o.json = true; break;
		case 'c': o.csv = true; break;
		case 'P': o.plot = optarg; break;
		case 'q': o.quiet = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!o.runs) {
		fprintf(stderr, "uswap bench: --runs must be at least 1\n");
		return 2;
	}
	/* Both designs unless asked otherwise; swapio measures the I/O path,
	 * which the designs share. */
	if (!o.design)
		o.design = strcmp(o.workload, "swapio") ? "both" : "table";
	if (!strcmp(o.workload, "swapio") && strcmp(o.design, "table")) {
		fprintf(stderr, "uswap bench: swapio measures the swap I/O paths, which both "
			"designs share: --design table only\n");
		return 2;
	}
	o.argc = argc - optind;
	o.argv = argv + optind;
	for (i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++)
		if (!strcmp(o.workload, workloads[i].name))
			return workloads[i].run(&o);
	fprintf(stderr, "uswap bench: unknown workload '%s'\n", o.workload);
	usage(stderr);
	return 2;
}
