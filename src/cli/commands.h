/* SPDX-License-Identifier: MIT */
/*
 * The uswap command's subcommands. Each lives in its own cmd_NAME.c and
 * returns the process exit status.
 */
#ifndef USWAP_CLI_COMMANDS_H
#define USWAP_CLI_COMMANDS_H

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

#endif
