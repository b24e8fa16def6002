/* SPDX-License-Identifier: MIT */
/*
 * The uswap command's subcommands. Each lives in its own cmd_NAME.c and
 * returns the process exit status.
 */
#ifndef USWAP_CLI_COMMANDS_H
#define USWAP_CLI_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bench_opts;
struct uswap_run_config;

struct uswap_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);	/* argv[0] is the subcommand */
	const char *usage;
};

int cmd_demo(int argc, char **argv);
int cmd_mkswap(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_stat(int argc, char **argv);

/*
 * The option parsing of the commands, apart from their work (the fuzz
 * target tests/fuzz/fuzz_cli.c drives them): 0 go on, 1 --help printed,
 * -EINVAL a usage error (printed). mkswap's is parse_args() in its file.
 */
int run_parse_args(int argc, char **argv, struct uswap_run_config *cfg);
int stat_parse_args(int argc, char **argv, bool *json, uint64_t *pid);
int bench_parse_args(int argc, char **argv, struct bench_opts *o, size_t *workload);
int inspect_parse_args(int argc, char **argv, bool *json, const char **design,
		       const char **path);

#endif
