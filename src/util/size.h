/* SPDX-License-Identifier: MIT */
/*
 * Sizes and counts as the command line and the device specs write them.
 *
 *   size:  DIGITS [ MULT [ "iB" | "B" ] ]
 *          MULT one of k K m M g G t T, a power of 1024 (16M = 16 MiB)
 *   count: DIGITS
 *
 * DIGITS are one or more of 0-9 and nothing else: no sign, no blank, no
 * "0x", no fraction. The text ends right after the last accepted
 * character. A value above UINT64_MAX, in the digits or after the
 * multiplication, is -ERANGE; any other departure from the shape is
 * -EINVAL, even where the digits alone would also overflow.
 */
#ifndef USWAP_UTIL_SIZE_H
#define USWAP_UTIL_SIZE_H

#include <stddef.h>
#include <stdint.h>

int uswap_parse_size(const char *s, uint64_t *out);
int uswap_parse_size_n(const char *s, size_t len, uint64_t *out);
int uswap_parse_count(const char *s, uint64_t *out);
int uswap_parse_count_n(const char *s, size_t len, uint64_t *out);

#endif
