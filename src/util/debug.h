/* SPDX-License-Identifier: MIT */
/*
 * Debug levels (USWAP_DEBUG, fixed at build time):
 *   0  release: no checks beyond what the API promises;
 *   1  input validation messages and cheap asserts (uswap_warn, misuse dumps);
 *   2  internal asserts (uswap_assert, lock-held assertions);
 *   3  expensive consistency walks (uswap_check_cluster and friends).
 * A failed assert prints where and aborts: it is CONFIG_DEBUG_VM, loud.
 */
#ifndef USWAP_UTIL_DEBUG_H
#define USWAP_UTIL_DEBUG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef USWAP_DEBUG
#define USWAP_DEBUG 1
#endif

void uswap_die(const char *file, int line, const char *what) __attribute__((noreturn));
/*
 * Library messages go through the caller's output function
 * (uswap_set_output()), or by default to stderr: debug messages only at
 * level >= 1 and without USWAP_QUIET; err messages always.
 */
void uswap_dbg_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void uswap_err_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#if USWAP_DEBUG >= 2
#define uswap_assert(cond) \
	do { if (__builtin_expect(!(cond), 0)) uswap_die(__FILE__, __LINE__, #cond); } while (0)
#else
#define uswap_assert(cond) do { (void)sizeof(!(cond)); } while (0)
#endif

/* Always checked: a broken invariant that would corrupt state if ignored. */
#define USWAP_BUG_ON(cond) \
	do { if (__builtin_expect(!!(cond), 0)) uswap_die(__FILE__, __LINE__, #cond); } while (0)

/* Level >= 1: report misuse (the caller still gets its -errno). */
#if USWAP_DEBUG >= 1
#define uswap_warn(...) uswap_dbg_printf(__VA_ARGS__)
#else
#define uswap_warn(...) do { } while (0)
#endif

#define USWAP_DEBUG_WALKS (USWAP_DEBUG >= 3)

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define USWAP_MIN(a, b) ((a) < (b) ? (a) : (b))
#define USWAP_MAX(a, b) ((a) > (b) ? (a) : (b))
#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Whether @len bytes at @p are all zero (a public struct's __reserved). */
static inline bool uswap_mem_is_zero(const void *p, size_t len)
{
	const unsigned char *c = p;

	while (len--)
		if (*c++)
			return false;
	return true;
}

#endif
