/* SPDX-License-Identifier: MIT */
/*
 * Output files named on the command line (uswap run --json FILE, uswap
 * bench --plot FILE), opened the way a root user can safely open a path
 * in a directory others write to: never through a final symlink, a new
 * file created exclusively with mode 0600, an existing one taken only if
 * it is a regular file of the caller's with no other hard link.
 */
#ifndef USWAP_CLI_OUTFILE_H
#define USWAP_CLI_OUTFILE_H

#include <stdbool.h>

int cli_open_output(const char *what, const char *path, bool *created);

#endif
