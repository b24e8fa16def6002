/* SPDX-License-Identifier: MIT */
/*
 * Device specs, as given to `uswap run --swap SPEC`:
 *   zram:SIZE[:lz4|zstd]   SIZE as util/size.h reads it (bytes, or with a
 *                          binary suffix K/M/G/T, any case, then "iB" or
 *                          "B" if wanted); a multiple of 4096 and at
 *                          least SWAP_SPEC_MIN_SLOTS pages
 *   file:PATH[,OPTION...]  a regular file or block device
 *   nbd://HOST[:PORT][/EXPORT][,OPTION...]        an NBD export over TCP
 *   nbd+unix:///[EXPORT]?socket=PATH[,OPTION...]  on a Unix socket
 *   nbds://..., nbds+unix://...   the same over TLS: ?tls-psk-file=FILE
 *                          (and a user name: nbds://USER@HOST/...) or
 *                          ?tls-certificates=DIR, as libnbd takes them
 *                          (NBD URIs as libnbd's nbd_connect_uri() takes
 *                          them; checked here for shape, the rest by libnbd)
 *     OPTIONs of file and NBD devices, at the end, in any order:
 *     ,rotational=0|1      file: forces the disk's kind (else from sysfs)
 *     ,encrypt[=on|off|auto|xchacha20|aes256gcm]  every page sealed with a
 *                          key of this swapon (backend_crypt.c); default on
 *     ,discard=on|off      free clusters discarded (hole punched, TRIM);
 *                          default on
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

/* Does the option @o (@n bytes) read @name, and then what? */
static const char *opt_value(const char *o, size_t n, const char *name)
{
	size_t l = strlen(name);

	if (n < l || memcmp(o, name, l))
		return NULL;
	if (n == l)
		return "";
	return o[l] == '=' ? o + l + 1 : NULL;
}

/*
 * Take the options ",rotational=0|1" (@file only), ",encrypt[=on|off|auto|
 * xchacha20|aes256gcm]" and ",discard=on|off" off the end of @s (*@len
 * bytes; shortened to what is left), into @out. A comma followed by
 * anything else belongs to the path or URI. Context: any. Return: 0 or
 * -EINVAL (a known option with a bad value).
 */
static int parse_options(const char *s, size_t *len, bool file, struct swap_backend_spec *out,
			 char *err, size_t errlen)
{
	out->encrypt = SWAP_CRYPT_AUTO;
	out->discard = true;
	for (;;) {
		const char *c = memrchr(s, ',', *len), *o, *v;
		size_t n;

		if (!c)
			return 0;
		o = c + 1;
		n = (size_t)(s + *len - o);
		if (file && (v = opt_value(o, n, "rotational"))) {
			if (o + n - v != 1 || (*v != '0' && *v != '1'))
				return spec_error(err, errlen, -EINVAL,
						  "rotational: want 0 or 1, got '%.*s'", (int)n, o);
			out->rotational = *v - '0';
		} else if ((v = opt_value(o, n, "encrypt"))) {
			size_t vl = (size_t)(o + n - v);

			if (!vl || (vl == 2 && !memcmp(v, "on", 2)) || (vl == 4 && !memcmp(v, "auto", 4)))
				out->encrypt = SWAP_CRYPT_AUTO;
			else if (vl == 3 && !memcmp(v, "off", 3))
				out->encrypt = SWAP_CRYPT_NONE;
			else if (vl == 9 && !memcmp(v, "xchacha20", 9))
				out->encrypt = SWAP_CRYPT_XCHACHA20;
			else if (vl == 9 && !memcmp(v, "aes256gcm", 9))
				out->encrypt = SWAP_CRYPT_AES256GCM;
			else
				return spec_error(err, errlen, -EINVAL,
						  "encrypt: want on, off, auto, xchacha20 or aes256gcm, got '%.*s'",
						  (int)vl, v);
		} else if ((v = opt_value(o, n, "discard"))) {
			size_t vl = (size_t)(o + n - v);

			if (vl == 2 && !memcmp(v, "on", 2))
				out->discard = true;
			else if (vl == 3 && !memcmp(v, "off", 3))
				out->discard = false;
			else
				return spec_error(err, errlen, -EINVAL,
						  "discard: want on or off, got '%.*s'", (int)vl, v);
		} else {
			return 0;
		}
		*len = (size_t)(c - s);
	}
}

/* The shape of the NBD URI in @out->path; libnbd parses it for real when
 * connecting. Context: any. Return: 0 (@out filled), -EINVAL. */
static int parse_nbd(struct swap_backend_spec *out, char *err, size_t errlen)
{
	const char *spec = out->path;
	bool tls = !strncmp(spec, "nbds", 4);
	bool is_unix = !strncmp(spec + 3 + tls, "+unix://", 8);
	const char *rest = spec + 6 + tls + (is_unix ? 5 : 0);
	const char *at = strchr(rest, '@');
	size_t i;

	/* "USER@" before the host (or the empty host): the TLS user name */
	if (at && at < rest + strcspn(rest, "/?"))
		rest = at + 1;

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
		int ret;

		out->rotational = -1;
		ret = parse_options(path, &len, true, out, err, errlen);
		if (ret)
			return ret;
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
	if (!strncmp(spec, "nbd://", 6) || !strncmp(spec, "nbd+unix://", 11) ||
	    !strncmp(spec, "nbds://", 7) || !strncmp(spec, "nbds+unix://", 12)) {
		size_t len = strlen(spec);
		int ret = parse_options(spec, &len, false, out, err, errlen);

		if (ret)
			return ret;
		if (len >= sizeof(out->path))
			return spec_error(err, errlen, -ENAMETOOLONG,
					  "nbd: URI is longer than %zu bytes", sizeof(out->path) - 1);
		memcpy(out->path, spec, len);
		out->path[len] = '\0';
		return parse_nbd(out, err, errlen);
	}
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

/* Open the backend @sp describes, without the encryption and fault
 * wrappers. Context: may sleep. Return: 0, the backend's create or open error. */
static int open_base(const struct swap_backend_spec *s, struct swap_backend **out,
		     char *err, size_t errlen)
{
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

/**
 * swap_backend_encrypt() - put a backend in the encryption wrapper a spec asks for
 * @be: in: the backend; out: the wrapper owning it (unchanged for
 *      SWAP_CRYPT_NONE, or on failure)
 * @cipher: the spec's encrypt
 * @err: a one-line reason on failure (may be NULL)
 * @errlen: size of @err
 *
 * Context: any thread; allocates. Return: 0 or the error of
 * swap_backend_crypt_create(); on failure *@be is still the caller's.
 */
int swap_backend_encrypt(struct swap_backend **be, enum swap_crypt_cipher cipher,
			 char *err, size_t errlen)
{
	struct swap_backend *w;
	int ret;

	if (cipher == SWAP_CRYPT_NONE)
		return 0;
	ret = swap_backend_crypt_create(*be, cipher, &w);
	if (ret)
		return spec_error(err, errlen, ret, "encrypt=%s: %s", swap_crypt_cipher_name(cipher),
				  ret == -EOPNOTSUPP ? "this CPU has no AES-NI" : strerror(-ret));
	*be = w;
	return 0;
}

/* Open the backend @sp describes, encrypted if it says so (no fault
 * wrapper). Context: may sleep. Return: 0, the backend's create or open error. */
static int open_parsed(const struct swap_backend_spec *sp, struct swap_backend **out,
		       char *err, size_t errlen)
{
	int ret = open_base(sp, out, err, errlen);

	if (ret)
		return ret;
	ret = swap_backend_encrypt(out, sp->encrypt, err, errlen);
	if (ret)
		swap_backend_destroy(*out);
	return ret;
}
