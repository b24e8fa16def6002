/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>

#include "testutil.h"

uint64_t test_seed(const char *test_name)
{
	const char *s = getenv("USWAP_TEST_SEED");
	uint64_t seed = 0;

	if (s && *s)
		seed = strtoull(s, NULL, 0);
	else if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = 0x9e3779b97f4a7c15ULL;
	if (!seed)
		seed = 1;
	printf("%s: USWAP_TEST_SEED=%" PRIu64 "\n", test_name, seed);
	fflush(stdout);
	return seed;
}

uint64_t test_ops(uint64_t def)
{
	const char *s = getenv("USWAP_TEST_OPS");

	if (s && *s)
		return strtoull(s, NULL, 0);
	return def;
}
