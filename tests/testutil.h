/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the tests: reproducible seeds and operation counts from
 * the environment, a small fast PRNG.
 */
#ifndef USWAP_TESTUTIL_H
#define USWAP_TESTUTIL_H

#include <stdint.h>

#include <uswap/common.h>

/* USWAP_TEST_SEED if set, else a random seed; always printed. */
uint64_t test_seed(const char *test_name);
/* USWAP_TEST_OPS if set, else def. */
uint64_t test_ops(uint64_t def);

/* xorshift64*: small, fast, good enough for test sequences. A state of 0
 * would stay 0 (a stream of zeros: a test seed XORed with its own value,
 * USWAP_TEST_SEED=11 in a test deriving seed ^ 11): it is taken as 1. */
static inline uint64_t test_rand(uint64_t *s)
{
	uint64_t x = *s ? *s : 1;

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

/* ---- mm and cmocka helpers (testutil.c) ---- */

struct uswap_mem;
struct uswap_mm;
struct CMUnitTest;
struct uswap_frame_pool;

/*
 * Reclaim until nothing is left to take: uswap_mem_reclaim() of @frames
 * until it frees nothing three times in a row with the LRU empty, waiting
 * (2 ms at a time, up to ~2 s) for folios still under writeback (an
 * asynchronous device) to become reclaimable. Fails the test on an error.
 * Context: a cmocka test. Return: the frames reclaimed.
 */
uint64_t test_reclaim_all(struct uswap_mem *mem, uint64_t frames);

/*
 * The PTE (a pte_t, <mm/pte.h>) of @addr in @mm, read under the mmap lock;
 * 0 (pte_none) when no VMA covers @addr.
 * Context: any thread. Return: the PTE.
 */
uint64_t test_peek_pte(struct uswap_mm *mm, uint64_t addr);

/*
 * Run the cmocka group @name (@n tests) with a temporary directory made
 * for it, /tmp/uswap-@prefix-XXXXXX, its path in @dir (at least 64 bytes),
 * removed with what is in it afterwards.
 * Context: main(). Return: the group's result (0: all passed), or 1 if
 * the directory could not be made.
 */
/*
 * Give 2^@order slots to a fresh folio from @pool and swap it out: the
 * slots stay with count 1 and no folio (folio_dup_swap, then out of the
 * swap cache). *@out is the first slot's entry.
 * Context: a cmocka test. Return: 0, or -ENOMEM (no room: nothing held).
 */
int test_swap_out_one(struct uswap_frame_pool *pool, unsigned int order, swp_entry_t *out);

int test_run_in_tmpdir(const char *name, const struct CMUnitTest *tests, size_t n,
		       const char *prefix, char *dir, size_t dirlen);

#endif
