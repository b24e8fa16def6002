/* SPDX-License-Identifier: MIT */
/*
 * Device specs, as given to `uswap run --swap SPEC`:
 *   zram:SIZE[:lz4|zstd]   SIZE as util/size.h reads it (bytes, or with a
 *                          binary suffix K/M/G/T, any case, then "iB" or
 *                          "B" if wanted); a multiple of 4096 and at
 *                          least SWAP_SPEC_MIN_SLOTS pages
 *   file:PATH[,rotational=0|1]
 *                          a regular file or block device; rotational
 *                          forces the disk's kind (else read from sysfs)
 *   nbd://HOST[:PORT][/EXPORT]           an NBD export over TCP
 *   nbd+unix:///[EXPORT]?socket=PATH     an NBD export on a Unix socket
 *                          (NBD URIs as libnbd's nbd_connect_uri() takes
 *                          them; checked here for shape, the rest by libnbd)
 *   fault:read_err=N:SPEC  SPEC (zram or nbd) in the fault wrapper
 *                          (backend_fault.c): its N-th read request (1-based,
 *                          the swap header's read included) fails with -EIO,
 *                          once; for tests of lost pages
 *   fault:write_err=N:SPEC the same for its N-th write request
 *   fault:read_err_slot=S:SPEC  the same, every read covering slot S
 *                          (>= 1) fails with -EIO
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "io/backend.h"
#include "util/debug.h"
#include "util/size.h"

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

static int parse_zram(const char *arg, struct swap_backend_spec *out,
		      char *err, size_t errlen)
{
	const char *colon = strchr(arg, ':');
	size_t len = colon ? (size_t)(colon - arg) : strlen(arg);
	uint64_t size;
	int ret;

	ret = uswap_parse_size_n(arg, len, &size);
	if (ret == -ERANGE)
		return spec_error(err, errlen, -EINVAL,
				  "zram: size '%.*s' is too large", (int)len, arg);
	if (ret)
		return spec_error(err, errlen, -EINVAL,
				  "zram: bad size '%.*s' (want decimal digits with an optional K, M, G or T suffix, e.g. zram:1G)",
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

/* The shape of an NBD URI; libnbd parses it for real when connecting.
 * Context: any. Return: 0 (@out filled), -EINVAL, -ENAMETOOLONG. */
static int parse_nbd(const char *spec, struct swap_backend_spec *out, char *err, size_t errlen)
{
	bool is_unix = !strncmp(spec, "nbd+unix://", 11);
	const char *rest = spec + (is_unix ? 11 : 6);
	size_t i;

	if (strlen(spec) >= sizeof(out->path))
		return spec_error(err, errlen, -ENAMETOOLONG,
				  "nbd: URI is longer than %zu bytes", sizeof(out->path) - 1);
	for (i = 0; spec[i]; i++)
		if ((unsigned char)spec[i] <= ' ' || spec[i] == 0x7f)
			return spec_error(err, errlen, -EINVAL,
					  "nbd: URI '%.200s' contains a space or control character",
					  spec);
	if (is_unix) {
		const char *q = strchr(rest, '?');

		if (rest[0] != '/')
			return spec_error(err, errlen, -EINVAL,
					  "nbd+unix: no host allowed (want nbd+unix:///EXPORT?socket=PATH), got '%.200s'",
					  spec);
		if (!q || !strstr(q, "socket=") || !strstr(q, "socket=")[7] ||
		    strstr(q, "socket=")[7] == '&')
			return spec_error(err, errlen, -EINVAL,
					  "nbd+unix: missing ?socket=PATH in '%.200s'", spec);
	} else {
		const char *end = rest + strcspn(rest, "/?");
		const char *colon = memchr(rest, ':', (size_t)(end - rest));

		if (end == rest || colon == rest)
			return spec_error(err, errlen, -EINVAL,
					  "nbd: missing host (want nbd://HOST[:PORT]/EXPORT), got '%.200s'",
					  spec);
		if (rest[0] != '[' && colon) {
			const char *d;

			if (colon + 1 == end)
				return spec_error(err, errlen, -EINVAL,
						  "nbd: empty port in '%.200s'", spec);
			for (d = colon + 1; d < end; d++)
				if (*d < '0' || *d > '9')
					return spec_error(err, errlen, -EINVAL,
							  "nbd: port '%.*s' is not a number",
							  (int)(end - colon - 1), colon + 1);
		}
	}
	out->kind = SWAP_BACKEND_NBD;
	strcpy(out->path, spec);
	return 0;
}

/* "read_err=N:SPEC", "write_err=N:SPEC" or "read_err_slot=S:SPEC" after
 * "fault:"; the inner spec must not be a file (swapon opens files by path,
 * past the wrapper) nor another fault.
 * Context: any. Return: 0 (@out filled), -EINVAL. */
static int parse_fault(const char *arg, struct swap_backend_spec *out, char *err, size_t errlen)
{
	static const char *const keys[] = { "read_err=", "write_err=", "read_err_slot=" };
	const char *colon = strchr(arg, ':');
	size_t klen = 0;
	unsigned int k;
	uint64_t nth;
	int ret;

	for (k = 0; k < ARRAY_SIZE(keys); k++) {
		klen = strlen(keys[k]);
		if (!strncmp(arg, keys[k], klen))
			break;
	}
	if (k == ARRAY_SIZE(keys) || !colon || colon < arg + klen ||
	    uswap_parse_count_n(arg + klen, (size_t)(colon - arg - klen), &nth) || !nth)
		return spec_error(err, errlen, -EINVAL,
				  "fault: want fault:read_err=N:SPEC, fault:write_err=N:SPEC or "
				  "fault:read_err_slot=S:SPEC with decimal N, S >= 1, got 'fault:%.200s'",
				  arg);
	if (!strncmp(colon + 1, "file:", 5) || !strncmp(colon + 1, "fault:", 6))
		return spec_error(err, errlen, -EINVAL,
				  "fault: wraps a zram or nbd device only, got '%.200s'", colon + 1);
	ret = swap_backend_spec_parse(colon + 1, out, err, errlen);
	if (ret)
		return ret;
	if (k == 0)
		out->fault_read_nth = nth;
	else if (k == 1)
		out->fault_write_nth = nth;
	else
		out->fault_read_slot = nth;
	return 0;
}

/**
 * swap_backend_spec_parse() - parse a device spec
 * @spec: "zram:SIZE[:lz4|zstd]", "file:PATH[,rotational=0|1]", "nbd://...",
 *        "nbd+unix://..." or "fault:read_err=N:" (write_err=N:,
 *        read_err_slot=S:) and one of these but file
 * @out: the parsed spec (zeroed first; valid only on success)
 * @err: where a one-line reason goes on failure (may be NULL)
 * @errlen: size of @err
 *
 * Context: any.
 * Return: 0; -EINVAL for a malformed spec (unknown scheme, bad or too small
 * size, unknown algorithm, empty path); -ENAMETOOLONG for a path that does
 * not fit (an NBD URI goes in path).
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
		size_t len = strlen(path);

		out->rotational = -1;
		/* ",rotational=0" or "=1" at the end forces the disk's kind */
		if (len > 13 && !strncmp(path + len - 13, ",rotational=", 12) &&
		    (path[len - 1] == '0' || path[len - 1] == '1')) {
			out->rotational = path[len - 1] - '0';
			len -= 13;
		}
		if (!len)
			return spec_error(err, errlen, -EINVAL,
					  "file: empty path (want file:PATH)");
		if (len >= sizeof(out->path))
			return spec_error(err, errlen, -ENAMETOOLONG,
					  "file: path is longer than %zu bytes",
					  sizeof(out->path) - 1);
		out->kind = SWAP_BACKEND_FILE;
		memcpy(out->path, path, len);
		out->path[len] = '\0';
		return 0;
	}
	if (!strncmp(spec, "nbd://", 6) || !strncmp(spec, "nbd+unix://", 11))
		return parse_nbd(spec, out, err, errlen);
	if (!strncmp(spec, "fault:", 6))
		return parse_fault(spec + 6, out, err, errlen);
	return spec_error(err, errlen, -EINVAL,
			  "unknown device spec '%.200s' (want zram:SIZE[:lz4|zstd], file:PATH, nbd://HOST[:PORT]/EXPORT or nbd+unix:///EXPORT?socket=PATH)",
			  spec);
}

static int open_parsed(const struct swap_backend_spec *sp, struct swap_backend **out,
		       char *err, size_t errlen);

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
	struct swap_backend *inner;
	int ret;

	if (!out)
		return spec_error(err, errlen, -EINVAL, "no output backend");
	ret = swap_backend_spec_parse(spec, &s, err, errlen);
	if (ret)
		return ret;
	if (!s.fault_read_nth && !s.fault_write_nth && !s.fault_read_slot)
		return open_parsed(&s, out, err, errlen);
	ret = open_parsed(&s, &inner, err, errlen);
	if (ret)
		return ret;
	ret = swap_backend_fault_create(inner, out);
	if (ret) {
		swap_backend_destroy(inner);
		return spec_error(err, errlen, ret, "fault: cannot wrap: %s", strerror(-ret));
	}
	if (s.fault_read_nth)
		ret = swap_backend_fault_fail_nth(*out, SWAP_FAULT_READ, s.fault_read_nth, -EIO);
	else if (s.fault_write_nth)
		ret = swap_backend_fault_fail_nth(*out, SWAP_FAULT_WRITE, s.fault_write_nth, -EIO);
	else
		ret = swap_backend_fault_fail_offset(*out, SWAP_FAULT_READ, s.fault_read_slot, -EIO);
	if (ret) {
		swap_backend_destroy(*out);	/* and @inner with it */
		return spec_error(err, errlen, ret, "fault: cannot arm: %s", strerror(-ret));
	}
	return 0;
}

/* Open the backend @sp describes (no fault wrapper). Context: may sleep.
 * Return: 0, the backend's create or open error. */
static int open_parsed(const struct swap_backend_spec *sp, struct swap_backend **out,
		       char *err, size_t errlen)
{
	const struct swap_backend_spec *s = sp;
	int ret;

	switch (s->kind) {
	case SWAP_BACKEND_ZRAM:
		ret = swap_backend_zram_create(s->nr_slots, s->algo, out);
		if (ret)
			return spec_error(err, errlen, ret, "zram: cannot create: %s",
					  strerror(-ret));
		return 0;
	case SWAP_BACKEND_FILE:
		ret = swap_backend_file_open(s->path, 0, out);
		if (ret)
			return spec_error(err, errlen, ret, "file: cannot open '%.200s': %s",
					  s->path, strerror(-ret));
		if (s->rotational >= 0)
			(*out)->rotational = s->rotational;
		return 0;
	case SWAP_BACKEND_NBD:
		return swap_backend_nbd_open(s->path, NULL, out, err, errlen);
	}
	return spec_error(err, errlen, -EOPNOTSUPP, "unsupported device kind");
}
