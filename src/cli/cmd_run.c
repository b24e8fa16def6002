/* SPDX-License-Identifier: MIT */
/*
 * uswap run: run a program under a memory budget, its cold anonymous pages
 * swapped through userfaultfd (docs/RUNTIME.md).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/outfile.h"
#include "runtime/runtime.h"
#include "util/size.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: uswap run [--memory SIZE] [--swap SPEC[,prio=N]]... "
		"[--design table|legacy] [--memory-total SIZE] [--swap-max SIZE] [--evict lru|fifo] [--poll-us N] "
		"[--no-fork-events] [--no-keep-clean] [--no-colocate] [--stats] "
		"[--json FILE] [-v] -- CMD ARGS...\n"
		"  --memory SIZE   budget of resident anonymous memory (default 256M)\n"
		"  --swap SPEC     zram:SIZE[:lz4|zstd] or file:PATH (default zram:4G)\n"
		"                  fault:read_err=N:SPEC fails the N-th read of SPEC (zram or nbd),\n"
		"                  fault:read_err_slot=S:SPEC every read of slot S (for tests);\n"
		"                  SPEC[,prio=N] at most 511 bytes\n"
		"  --design D      slot design of the devices: table (default) or legacy\n"
		"  --memory-total SIZE  bound resident pages plus the compressed devices'\n"
		"                  memory together (for hosts without swap of their own);\n"
		"                  the resident budget shrinks as the store grows (default: none)\n"
		"  --swap-max SIZE the program tree's swap limit (memory.swap.max of its\n"
		"                  group); at the limit pages stay in the program, whose\n"
		"                  resident set grows past --memory (default: none)\n"
		"  --evict P       cold-page choice: lru (default; active/inactive lists with\n"
		"                  refault activation) or fifo (fault order, for comparison)\n"
		"  --stats         print the counters at the end\n"
		"  --json FILE     write the counters to FILE: a new file (mode 0600), or an\n"
		"                  existing regular file of yours with no other hard link;\n"
		"                  never through a symbolic link\n"
		"  -v, --verbose   print the start-up check (kernel features, privileges,\n"
		"                  guarantees) even when everything is there\n"
		"  --no-fork-events  bring a parent's pages in before fork() instead of\n"
		"                  following the child with fork events\n"
		"  --no-keep-clean   store every evicted page anew: no swapped-in page keeps\n"
		"                  its stored copy to be evicted again without a write\n"
		"  --no-colocate   never bind the serving thread to the CPU of a thread that\n"
		"                  faults alone (default: follow it, so that a fault wakes\n"
		"                  no idle CPU)\n"
		"  --poll-us N     after serving a fault, poll for the next one for up to N us\n"
		"                  (0-10000) before sleeping, while one process faults in a\n"
		"                  tight loop: lower fault latency for a CPU spent spinning\n"
		"                  (default 0: off)\n");
}

/*
 * The longest --swap SPEC[,prio=N] the runtime takes whole: swapon_one()
 * in runtime/supervisor.c copies it into a 512-byte buffer.
 */
#define RUN_SWAP_ARG_MAX	511

/*
 * A size option of at least 1 MiB into *@out, or a message naming the
 * option and its value. Context: option parsing. Return: 0, -EINVAL
 * (malformed), -ERANGE (above 2^64 - 1 or below 1 MiB).
 */
static int run_size_arg(const char *opt, const char *arg, uint64_t *out)
{
	uint64_t v;
	int ret = uswap_parse_size(arg, &v);

	if (ret == -EINVAL) {
		fprintf(stderr, "uswap run: %s '%s': not a size (decimal digits with an optional "
			"K, M, G or T suffix, e.g. 256M)\n", opt, arg);
		return ret;
	}
	if (ret == -ERANGE || v < (1ULL << 20)) {
		fprintf(stderr, "uswap run: %s '%s': %s\n", opt, arg,
			ret ? "too large (above 2^64 - 1 bytes)" : "a size of at least 1M");
		return -ERANGE;
	}
	*out = v;
	return 0;
}

/**
 * run_parse_args() - the options of "uswap run" into @cfg
 * @argc: argument count, argv[0] ("run") included
 * @argv: the arguments; getopt_long() state is global (optind)
 * @cfg: filled from the defaults and the options; cfg->argv is the
 *       program's command line; cfg->json the --json path (not opened)
 *
 * Parses only: opens, creates and runs nothing.
 * Context: option parsing. Return: 0 (run it), 1 (--help printed), or
 * -EINVAL (the message or the usage printed).
 */
int run_parse_args(int argc, char **argv, struct uswap_run_config *cfg)
{
	static const struct option opts[] = {
		{ "memory", required_argument, NULL, 'm' },
		{ "swap", required_argument, NULL, 's' },
		{ "design", required_argument, NULL, 'd' },
		{ "stats", no_argument, NULL, 'S' },
		{ "json", required_argument, NULL, 'j' },
		{ "no-fork-events", no_argument, NULL, 'F' },
		{ "no-keep-clean", no_argument, NULL, 'K' },
		{ "no-colocate", no_argument, NULL, 'C' },
		{ "memory-total", required_argument, NULL, 'T' },
		{ "swap-max", required_argument, NULL, 'X' },
		{ "evict", required_argument, NULL, 'E' },
		{ "poll-us", required_argument, NULL, 'P' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c;

	*cfg = (struct uswap_run_config){ .memory = 256ULL << 20, .design = "table",
					  .json_fd = -1 };
	while ((c = getopt_long(argc, argv, "+m:s:d:j:Svh", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (run_size_arg("--memory", optarg, &cfg->memory))
				return -EINVAL;
			break;
		case 's':
			if (cfg->nr_swap == RT_MAX_SWAP) {
				fprintf(stderr, "uswap run: at most %d --swap\n", RT_MAX_SWAP);
				return -EINVAL;
			}
			if (strlen(optarg) > RUN_SWAP_ARG_MAX) {
				fprintf(stderr, "uswap run: --swap '%.40s...': %zu bytes long, "
					"at most %d\n", optarg, strlen(optarg), RUN_SWAP_ARG_MAX);
				return -EINVAL;
			}
			cfg->swap[cfg->nr_swap++] = optarg;
			break;
		case 'd':
			if (strcmp(optarg, "table") && strcmp(optarg, "legacy")) {
				fprintf(stderr, "uswap run: --design %s: table or legacy\n", optarg);
				return -EINVAL;
			}
			cfg->design = optarg;
			break;
		case 'T':
			if (run_size_arg("--memory-total", optarg, &cfg->memory_total))
				return -EINVAL;
			break;
		case 'X':
			if (run_size_arg("--swap-max", optarg, &cfg->swap_max))
				return -EINVAL;
			if (cfg->swap_max < 2 * RT_BATCH * RT_PAGE) {
				fprintf(stderr, "uswap run: --swap-max %s: at least 512K\n", optarg);
				return -EINVAL;
			}
			break;
		case 'E':
			if (strcmp(optarg, "lru") && strcmp(optarg, "fifo")) {
				fprintf(stderr, "uswap run: --evict %s: lru or fifo\n", optarg);
				return -EINVAL;
			}
			cfg->policy = strcmp(optarg, "fifo") ? RT_EVICT_LRU : RT_EVICT_FIFO;
			break;
		case 'P': {
			uint64_t us;

			if (uswap_parse_count(optarg, &us) || us > 10000) {
				fprintf(stderr, "uswap run: --poll-us '%s': a number of "
					"microseconds from 0 to 10000\n", optarg);
				return -EINVAL;
			}
			cfg->poll_us = us;
			break;
		}
		case 'S':
			cfg->stats = true;
			break;
		case 'j':
			cfg->json = optarg;
			break;
		case 'C':
			cfg->no_colocate = true;
			break;
		case 'F':
			cfg->no_fork_events = true;
			break;
		case 'K':
			cfg->no_keep_clean = true;
			break;
		case 'v':
			cfg->verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return -EINVAL;
	}
	cfg->argv = argv + optind;
	return 0;
}

/* cmd_run() - see cli/commands.h. */
int cmd_run(int argc, char **argv)
{
	struct uswap_run_config cfg;
	int ret = run_parse_args(argc, argv, &cfg);

	if (ret)
		return ret > 0 ? 0 : 2;
	if (cfg.json) {
		cfg.json_fd = cli_open_output("uswap run: --json", cfg.json, NULL);
		if (cfg.json_fd < 0)
			return 2;
	}
	return uswap_runtime_run(&cfg);
}

/**
 * stat_parse_args() - the arguments of "uswap stat [--json] PID"
 * @argc: argument count, argv[0] ("stat") included
 * @argv: the arguments
 * @json: set if --json was given
 * @pid: the PID, 1..INT_MAX
 *
 * Context: option parsing. Return: 0, or -EINVAL (the usage printed).
 */
int stat_parse_args(int argc, char **argv, bool *json, uint64_t *pid)
{
	int i = 1;

	*json = false;
	if (i < argc && !strcmp(argv[i], "--json")) {
		*json = true;
		i++;
	}
	if (i != argc - 1 || uswap_parse_count(argv[i], pid) || !*pid || *pid > INT_MAX) {
		fprintf(stderr, "usage: uswap stat [--json] PID\n");
		return -EINVAL;
	}
	return 0;
}

/* cmd_stat() - see cli/commands.h: uswap stat [--json] PID. */
int cmd_stat(int argc, char **argv)
{
	bool json;
	uint64_t pid;
	int err;

	if (stat_parse_args(argc, argv, &json, &pid))
		return 2;
	err = uswap_runtime_stat((pid_t)pid, json);
	if (err) {
		fprintf(stderr, "uswap stat: %llu: %s\n", (unsigned long long)pid,
			err == -ENOENT ? "not a process under uswap run" :
			err == -EPROTO ? "the answer is not a supervisor's: nothing printed" :
			err == -EACCES ? "permission denied: the supervisor answers its own user "
					 "and root" : strerror(-err));
		return 1;
	}
	return 0;
}
