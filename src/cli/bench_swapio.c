/* SPDX-License-Identifier: MIT */
/* The swapio workload: placeholder until the I/O bench lands. */
#include <stdio.h>

#include "cli/bench.h"

int bench_swapio(const struct bench_opts *o)
{
	(void)o;
	fprintf(stderr, "uswap bench: swapio is not built yet\n");
	return 1;
}
