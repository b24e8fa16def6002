/* SPDX-License-Identifier: MIT */
/*
 * The input of a fuzz target read as a stream of choices: the target sets
 * fz_data and fz_left, then takes numbers from them; past the end every
 * number is 0, so that any input, however short, is a complete run.
 * Included by one target file each (static state).
 */
#ifndef USWAP_FUZZ_INPUT_H
#define USWAP_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

static const uint8_t *fz_data;
static size_t fz_left;

/* The next @n bytes of the input as a little-endian number (0 past the end). */
static uint64_t fz_bytes(unsigned int n)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < n && fz_left; i++, fz_left--)
		v |= (uint64_t)*fz_data++ << (8 * i);
	return v;
}

/* A choice in [0, n): as few bytes as n needs. */
static uint64_t fz_below(uint64_t n)
{
	if (n <= 1)
		return 0;
	return fz_bytes(n <= 1ULL << 8 ? 1 : n <= 1ULL << 16 ? 2 : n <= 1ULL << 32 ? 4 : 8) % n;
}

#endif
