/* SPDX-License-Identifier: MIT */
/*
 * uswap run: run a program under a memory budget, its cold anonymous pages
 * swapped through userfaultfd (docs/RUNTIME.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "runtime/runtime.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: uswap run [--memory SIZE] [--swap SPEC[,prio=N]]... "
		"[--design table|legacy] [--memory-total SIZE] [--evict lru|fifo] [--poll-us N] [--stats] "
		"[--json FILE] [-v] -- CMD ARGS...\n"
		"  --memory SIZE   budget of resident anonymous memory (default 256M)\n"
		"  --swap SPEC     zram:SIZE[:lz4|zstd] or file:PATH (default zram:4G)\n"
		"                  fault:read_err=N:SPEC fails the N-th read of SPEC (zram or nbd),\n"
		"                  fault:read_err_slot=S:SPEC every read of slot S (for tests)\n"
		"  --design D      slot design of the devices: table (default) or legacy\n"
		"  --memory-total SIZE  bound resident pages plus the compressed devices'\n"
		"                  memory together (for hosts without swap of their own);\n"
		"                  the resident budget shrinks as the store grows (default: none)\n"
		"  --evict P       cold-page choice: lru (default; active/inactive lists with\n"
		"                  refault activation) or fifo (fault order, for comparison)\n"
		"  --stats         print the counters at the end\n"
		"  --json FILE     write the counters to FILE\n"
		"  -v, --verbose   print the start-up check (kernel features, privileges,\n"
		"                  guarantees) even when everything is there\n"
		"  --no-fork-events  bring a parent's pages in before fork() instead of\n"
		"                  following the child with fork events\n"
		"  --poll-us N     after serving a fault, poll for the next one for up to N us\n"
		"                  (0-10000) before sleeping, while one process faults in a\n"
		"                  tight loop: lower fault latency for a CPU spent spinning\n"
		"                  (default 0: off)\n");
}

static int parse_size(const char *s, unsigned long long *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	if (*end)
		return -1;
	*out = v;
	return 0;
}

/* cmd_run() - see cli/commands.h. */
int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "memory", required_argument, NULL, 'm' },
		{ "swap", required_argument, NULL, 's' },
		{ "design", required_argument, NULL, 'd' },
		{ "stats", no_argument, NULL, 'S' },
		{ "json", required_argument, NULL, 'j' },
		{ "no-fork-events", no_argument, NULL, 'F' },
		{ "memory-total", required_argument, NULL, 'T' },
		{ "evict", required_argument, NULL, 'E' },
		{ "poll-us", required_argument, NULL, 'P' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct uswap_run_config cfg = { .memory = 256ULL << 20, .design = "table", .json_fd = -1 };
	unsigned long long mem;
	int c;

	while ((c = getopt_long(argc, argv, "+m:s:d:j:Svh", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (parse_size(optarg, &mem) || mem < (1ULL << 20)) {
				fprintf(stderr, "uswap run: --memory %s: a size of at least 1M\n", optarg);
				return 2;
			}
			cfg.memory = mem;
			break;
		case 's':
			if (cfg.nr_swap == RT_MAX_SWAP) {
				fprintf(stderr, "uswap run: at most %d --swap\n", RT_MAX_SWAP);
				return 2;
			}
			cfg.swap[cfg.nr_swap++] = optarg;
			break;
		case 'd':
			if (strcmp(optarg, "table") && strcmp(optarg, "legacy")) {
				fprintf(stderr, "uswap run: --design %s: table or legacy\n", optarg);
				return 2;
			}
			cfg.design = optarg;
			break;
		case 'T':
			if (parse_size(optarg, &mem) || mem < (1ULL << 20)) {
				fprintf(stderr, "uswap run: --memory-total %s: a size of at least 1M\n",
					optarg);
				return 2;
			}
			cfg.memory_total = mem;
			break;
		case 'E':
			if (strcmp(optarg, "lru") && strcmp(optarg, "fifo")) {
				fprintf(stderr, "uswap run: --evict %s: lru or fifo\n", optarg);
				return 2;
			}
			cfg.policy = strcmp(optarg, "fifo") ? RT_EVICT_LRU : RT_EVICT_FIFO;
			break;
		case 'P': {
			char *end;
			unsigned long long us = strtoull(optarg, &end, 10);

			if (end == optarg || *end || us > 10000) {
				fprintf(stderr, "uswap run: --poll-us %s: 0 to 10000\n", optarg);
				return 2;
			}
			cfg.poll_us = us;
			break;
		}
		case 'S':
			cfg.stats = true;
			break;
		case 'j':
			cfg.json = optarg;
			if (cfg.json_fd >= 0)
				close(cfg.json_fd);
			cfg.json_fd = open(optarg, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
			if (cfg.json_fd < 0) {
				fprintf(stderr, "uswap run: --json %s: %s\n", optarg, strerror(errno));
				return 2;
			}
			break;
		case 'F':
			cfg.no_fork_events = true;
			break;
		case 'v':
			cfg.verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	cfg.argv = argv + optind;
	return uswap_runtime_run(&cfg);
}

/* cmd_stat() - see cli/commands.h: uswap stat [--json] PID. */
int cmd_stat(int argc, char **argv)
{
	bool json = false;
	char *end;
	long pid;
	int i = 1, err;

	if (i < argc && !strcmp(argv[i], "--json")) {
		json = true;
		i++;
	}
	if (i != argc - 1 || (pid = strtol(argv[i], &end, 10)) <= 0 || *end) {
		fprintf(stderr, "usage: uswap stat [--json] PID\n");
		return 2;
	}
	err = uswap_runtime_stat((pid_t)pid, json);
	if (err) {
		fprintf(stderr, "uswap stat: %ld: %s\n", pid,
			err == -ENOENT ? "not a process under uswap run" : strerror(-err));
		return 1;
	}
	return 0;
}
