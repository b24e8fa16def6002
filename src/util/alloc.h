/* SPDX-License-Identifier: MIT */
/*
 * The library's one way to allocate: every malloc, calloc, realloc,
 * aligned_alloc and strdup of src/ goes through these, so that a test can
 * fail the N-th of them and check the error path it takes (SQLite's OOM
 * sweep). Memory from them is released with free(): there is no
 * uswap_free().
 *
 * At USWAP_DEBUG >= 1 each call first checks whether a failure is armed
 * (one relaxed atomic load while none is); at 0 they are the libc calls.
 * Allocations inside liburing, libnbd, lz4 and zstd do not pass here.
 *
 * Test hook (internal: not exported by libuswap.so):
 *   uswap_alloc_fail_nth(n, sticky) arms: the n-th allocation from now
 *   (1-based, counted across threads) returns NULL, and with @sticky every
 *   one after it too; n 0 disarms. uswap_alloc_calls() is the number of
 *   allocations since the last arming, uswap_alloc_failures() how many
 *   were failed on purpose since then, uswap_alloc_failed_site() the code
 *   address of the last one (for a coverage report).
 */
#ifndef USWAP_UTIL_ALLOC_H
#define USWAP_UTIL_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/debug.h"

#if USWAP_DEBUG >= 1
#define USWAP_ALLOC_FAULTS 1

bool uswap_alloc_should_fail(void);
void uswap_alloc_fail_nth(uint64_t n, bool sticky);
uint64_t uswap_alloc_calls(void);
uint64_t uswap_alloc_failures(void);
void *uswap_alloc_failed_site(void);
int uswap_alloc_fail_from_env(const char *name);
#else
#define USWAP_ALLOC_FAULTS 0

static inline bool uswap_alloc_should_fail(void)
{
	return false;
}
#endif

static inline void *uswap_malloc(size_t n)
{
	return uswap_alloc_should_fail() ? NULL : malloc(n);
}

static inline void *uswap_calloc(size_t n, size_t size)
{
	return uswap_alloc_should_fail() ? NULL : calloc(n, size);
}

/* On failure @p is left as it was, as realloc() leaves it. */
static inline void *uswap_realloc(void *p, size_t n)
{
	return uswap_alloc_should_fail() ? NULL : realloc(p, n);
}

static inline void *uswap_aligned_alloc(size_t align, size_t n)
{
	return uswap_alloc_should_fail() ? NULL : aligned_alloc(align, n);
}

static inline char *uswap_strdup(const char *s)
{
	return uswap_alloc_should_fail() ? NULL : strdup(s);
}

#endif
