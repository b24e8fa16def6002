/* SPDX-License-Identifier: MIT */
/*
 * Device specs, as given to `uswap run --swap SPEC`:
 *   zram:SIZE[:lz4|zstd]   SIZE in bytes, or with a binary suffix K/M/G/T
 *                          (case-insensitive); a multiple of 4096 and at
 *                          least SWAP_SPEC_MIN_SLOTS pages
 *   file:PATH              a regular file or block device
 *   nbd://HOST[:PORT]/EXPORT   reserved: not supported yet
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "io/backend.h"
#include "util/debug.h"

static int spec_error(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int spec_error(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

/* Parse [0-9]+[KMGT]? from s[0..len); 0 or -EINVAL / -ERANGE. */
static int parse_size(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	size_t i = 0;

	if (!len)
		return -EINVAL;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		unsigned int d = (unsigned int)(s[i] - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (!i)
		return -EINVAL;
	if (i < len) {
		switch (s[i]) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		case 't': case 'T': shift = 40; break;
		default:
			return -EINVAL;
		}
		if (++i != len)
			return -EINVAL;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

static int parse_zram(const char *arg, struct swap_backend_spec *out,
		      char *err, size_t errlen)
{
	const char *colon = strchr(arg, ':');
	size_t len = colon ? (size_t)(colon - arg) : strlen(arg);
	uint64_t size;
	int ret;

	ret = parse_size(arg, len, &size);
	if (ret == -ERANGE)
		return spec_error(err, errlen, -EINVAL,
				  "zram: size '%.*s' is too large", (int)len, arg);
	if (ret)
		return spec_error(err, errlen, -EINVAL,
				  "zram: bad size '%.*s' (want a number with an optional K, M, G or T suffix, e.g. zram:1G)",
				  (int)len, arg);
	if (size & (SWAP_BACKEND_PAGE_SIZE - 1))
		return spec_error(err, errlen, -EINVAL,
				  "zram: size %" PRIu64 " is not a multiple of %u bytes",
				  size, SWAP_BACKEND_PAGE_SIZE);
	if (size < (uint64_t)SWAP_SPEC_MIN_SLOTS * SWAP_BACKEND_PAGE_SIZE)
		return spec_error(err, errlen, -EINVAL,
				  "zram: size %" PRIu64 " is below the minimum of %u pages (%u bytes)",
				  size, SWAP_SPEC_MIN_SLOTS,
				  SWAP_SPEC_MIN_SLOTS * SWAP_BACKEND_PAGE_SIZE);
	out->algo = SWAP_ZRAM_LZ4;
	if (colon) {
		const char *a = colon + 1;

		if (!strcmp(a, "lz4"))
			out->algo = SWAP_ZRAM_LZ4;
		else if (!strcmp(a, "zstd"))
			out->algo = SWAP_ZRAM_ZSTD;
		else
			return spec_error(err, errlen, -EINVAL,
					  "zram: unknown algorithm '%s' (want lz4 or zstd)", a);
	}
	out->kind = SWAP_BACKEND_ZRAM;
	out->size = size;
	out->nr_slots = size >> SWAP_BACKEND_PAGE_SHIFT;
	return 0;
}

/**
 * swap_backend_spec_parse() - parse a device spec
 * @spec: "zram:SIZE[:lz4|zstd]", "file:PATH" or "nbd://..."
 * @out: the parsed spec (zeroed first; valid only on success)
 * @err: where a one-line reason goes on failure (may be NULL)
 * @errlen: size of @err
 *
 * Context: any.
 * Return: 0; -EINVAL for a malformed spec (unknown scheme, bad or too small
 * size, unknown algorithm, empty path); -ENAMETOOLONG for a path that does
 * not fit; -EOPNOTSUPP for nbd://, which is reserved.
 */
int swap_backend_spec_parse(const char *spec, struct swap_backend_spec *out,
			    char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	if (!spec || !out)
		return spec_error(err, errlen, -EINVAL, "no device spec");
	memset(out, 0, sizeof(*out));
	if (!strncmp(spec, "zram:", 5))
		return parse_zram(spec + 5, out, err, errlen);
	if (!strncmp(spec, "file:", 5)) {
		const char *path = spec + 5;

		if (!*path)
			return spec_error(err, errlen, -EINVAL,
					  "file: empty path (want file:PATH)");
		if (strlen(path) >= sizeof(out->path))
			return spec_error(err, errlen, -ENAMETOOLONG,
					  "file: path is longer than %zu bytes",
					  sizeof(out->path) - 1);
		out->kind = SWAP_BACKEND_FILE;
		strcpy(out->path, path);
		return 0;
	}
	if (!strncmp(spec, "nbd://", 6)) {
		if (strlen(spec) < sizeof(out->path))
			strcpy(out->path, spec);
		out->kind = SWAP_BACKEND_NBD;
		return spec_error(err, errlen, -EOPNOTSUPP,
				  "nbd: NBD devices are not supported yet (spec '%.200s')",
				  spec);
	}
	return spec_error(err, errlen, -EINVAL,
			  "unknown device spec '%.200s' (want zram:SIZE[:lz4|zstd], file:PATH or nbd://HOST[:PORT]/EXPORT)",
			  spec);
}

/**
 * swap_backend_open_spec() - parse a device spec and open its backend
 * @spec: see swap_backend_spec_parse()
 * @out: the new backend
 * @err: a one-line reason on failure (may be NULL)
 * @errlen: size of @err
 *
 * Context: any thread; sleeps, allocates.
 * Return: 0; the parse errors of swap_backend_spec_parse(); the create or
 * open error of the backend (-ENOMEM, -ENOENT, -EACCES, ...).
 */
int swap_backend_open_spec(const char *spec, struct swap_backend **out,
			   char *err, size_t errlen)
{
	struct swap_backend_spec s;
	int ret;

	if (!out)
		return spec_error(err, errlen, -EINVAL, "no output backend");
	ret = swap_backend_spec_parse(spec, &s, err, errlen);
	if (ret)
		return ret;
	switch (s.kind) {
	case SWAP_BACKEND_ZRAM:
		ret = swap_backend_zram_create(s.nr_slots, s.algo, out);
		if (ret)
			return spec_error(err, errlen, ret, "zram: cannot create: %s",
					  strerror(-ret));
		return 0;
	case SWAP_BACKEND_FILE:
		ret = swap_backend_file_open(s.path, 0, out);
		if (ret)
			return spec_error(err, errlen, ret, "file: cannot open '%.200s': %s",
					  s.path, strerror(-ret));
		return 0;
	case SWAP_BACKEND_NBD:
		break;
	}
	return spec_error(err, errlen, -EOPNOTSUPP, "unsupported device kind");
}
