/* SPDX-License-Identifier: MIT */
/*
 * uswap: the command. Dispatches to the subcommands in cmd_*.c.
 */
#include <stdio.h>
#include <string.h>

#include <uswap/uswap.h>
#include "cli/commands.h"

static const struct uswap_cmd commands[] = {
	{ "demo", cmd_demo, "demo                      swap a folio out and in, printing each table state" },
	{ "mkswap", cmd_mkswap, "mkswap [-f] [-L LABEL] [-U UUID] [--badpages N,..] FILE [SIZE]" },
	{ "inspect", cmd_inspect, "inspect [--json] FILE" },
	{ "bench", cmd_bench, "bench [--workload NAME] [--swap SPEC].. [--json] ...  (bench --help)" },
	{ "run", cmd_run, "run [--memory SIZE] [--swap SPEC].. [--stats] -- CMD ...  (run --help)" },
	{ "stat", cmd_stat, "stat [--json] PID          live counters of a program under uswap run" },
};

static void usage(FILE *out)
{
	size_t i;

	fprintf(out, "usage: uswap COMMAND [ARGS]\n\ncommands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %s\n", commands[i].usage);
	fprintf(out, "  version                   print the version\n");
}

/* The library's messages, as the command's own: on stderr, prefixed. */
static void cli_output(const char *msg, void *arg)
{
	fprintf(stderr, "uswap: %s\n", msg);
}

int main(int argc, char **argv)
{
	size_t i;

	uswap_set_output(cli_output, NULL);

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		printf("uswap %s\n", uswap_version());
		return 0;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "uswap: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
