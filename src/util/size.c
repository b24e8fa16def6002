/* SPDX-License-Identifier: MIT */
/*
 * The one parser of sizes and counts (grammar in size.h). Every size and
 * count a root user passes on the command line goes through it, so that a
 * sign, a blank or an overflow is an error and never a wrapped value.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "util/size.h"

/*
 * The value of the decimal digits at the start of s[0..len): *@ndigits
 * their number (0 when s[0] is no digit), *@v their value when it fits.
 * The whole run of digits is consumed even past an overflow, so that the
 * caller can still tell a malformed text from a large one.
 * Return: 0, or -ERANGE if the value is above UINT64_MAX.
 */
static int scan_digits(const char *s, size_t len, size_t *ndigits, uint64_t *v)
{
	bool overflow = false;
	uint64_t x = 0;
	size_t i;

	for (i = 0; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		unsigned int d = (unsigned int)(s[i] - '0');

		if (overflow || x > (UINT64_MAX - d) / 10)
			overflow = true;
		else
			x = x * 10 + d;
	}
	*ndigits = i;
	*v = x;
	return overflow ? -ERANGE : 0;
}

/**
 * uswap_parse_size_n() - parse a size that is exactly s[0..len)
 * @s: the text; need not be NUL-terminated (a NUL inside @len is malformed)
 * @len: its length in bytes
 * @out: receives the size in bytes; untouched on error
 *
 * The shape is DIGITS [MULT ["iB" | "B"]], MULT one of kKmMgGtT for
 * 2^10, 2^20, 2^30 or 2^40 (see size.h).
 *
 * Context: any; pure.
 * Return: 0; -EINVAL for a NULL argument, an empty text or any character
 * out of the shape; -ERANGE if the digits, or the digits times MULT, are
 * above UINT64_MAX.
 */
int uswap_parse_size_n(const char *s, size_t len, uint64_t *out)
{
	unsigned int shift = 0;
	size_t i, rest;
	uint64_t v;
	int ret;

	if (!s || !out)
		return -EINVAL;
	ret = scan_digits(s, len, &i, &v);
	if (!i)
		return -EINVAL;
	if (i < len) {
		switch (s[i]) {
		case 'k': case 'K':
			shift = 10;
			break;
		case 'm': case 'M':
			shift = 20;
			break;
		case 'g': case 'G':
			shift = 30;
			break;
		case 't': case 'T':
			shift = 40;
			break;
		default:
			return -EINVAL;
		}
		i++;
		rest = len - i;
		if (rest == 1 && s[i] == 'B')
			rest = 0;
		else if (rest == 2 && s[i] == 'i' && s[i + 1] == 'B')
			rest = 0;
		if (rest)
			return -EINVAL;
	}
	if (ret)
		return ret;
	if (v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

/**
 * uswap_parse_size() - parse a NUL-terminated size
 * @s: the text, e.g. "4096", "16M", "1GiB", "2TB"
 * @out: receives the size in bytes; untouched on error
 *
 * Context: any; pure.
 * Return: as uswap_parse_size_n() on the whole string.
 */
int uswap_parse_size(const char *s, uint64_t *out)
{
	if (!s)
		return -EINVAL;
	return uswap_parse_size_n(s, strlen(s), out);
}

/**
 * uswap_parse_count_n() - parse a count that is exactly s[0..len)
 * @s: decimal digits only; need not be NUL-terminated
 * @len: its length in bytes
 * @out: receives the value; untouched on error
 *
 * Context: any; pure.
 * Return: 0; -EINVAL for a NULL argument, an empty text or anything but
 * digits (a sign, a blank, a suffix, "0x"); -ERANGE if the value is above
 * UINT64_MAX.
 */
int uswap_parse_count_n(const char *s, size_t len, uint64_t *out)
{
	uint64_t v;
	size_t i;
	int ret;

	if (!s || !out)
		return -EINVAL;
	ret = scan_digits(s, len, &i, &v);
	if (!i || i != len)
		return -EINVAL;
	if (ret)
		return ret;
	*out = v;
	return 0;
}

/**
 * uswap_parse_count() - parse a NUL-terminated count
 * @s: decimal digits only
 * @out: receives the value; untouched on error
 *
 * Context: any; pure.
 * Return: as uswap_parse_count_n() on the whole string.
 */
int uswap_parse_count(const char *s, uint64_t *out)
{
	if (!s)
		return -EINVAL;
	return uswap_parse_count_n(s, strlen(s), out);
}
