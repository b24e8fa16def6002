/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the tests: reproducible seeds and operation counts from
 * the environment, a small fast PRNG.
 */
#ifndef USWAP_TESTUTIL_H
#define USWAP_TESTUTIL_H

#include <stdint.h>

/* USWAP_TEST_SEED if set, else a random seed; always printed. */
uint64_t test_seed(const char *test_name);
/* USWAP_TEST_OPS if set, else def. */
uint64_t test_ops(uint64_t def);

/* xorshift64*: small, fast, good enough for test sequences. */
static inline uint64_t test_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static inline uint64_t test_rand_below(uint64_t *s, uint64_t n)
{
	return n ? test_rand(s) % n : 0;
}

#endif
