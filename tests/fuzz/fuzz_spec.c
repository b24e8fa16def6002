/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the device spec parser (swap_backend_spec_parse) and the size and
 * count parsers under it (util/size.h). Input: one byte of error buffer
 * length, then the text. Every text goes through all three. Checked, any
 * divergence aborting:
 * - sizes and counts: the result is the one of a plain reference parser
 *   (the grammar of size.h, values in 128 bits): 0 and the value, -EINVAL
 *   or -ERANGE; the output is untouched on error; the _n form on the bytes
 *   and the NUL-terminated form agree; a parsed value printed back (in
 *   bytes, and with the largest suffix that divides it) parses to itself;
 * - specs: 0, -EINVAL or -ENAMETOOLONG; an error has a message, NUL-
 *   terminated within the buffer and nothing written past it; a parsed
 *   spec is in range for its kind (zram: a multiple of 4096 bytes, at
 *   least SWAP_SPEC_MIN_SLOTS pages, nr_slots = size / 4096, no cipher;
 *   file: a path that fits, rotational -1, 0 or 1; nbd: the URI, no blank
 *   or control character; file and nbd: a known cipher; at most one fault)
 *   and printed back as a spec (options and fault included) parses to the
 *   same fields.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/backend.h"
#include "util/size.h"

#define CHECK(cond) do { if (!(cond)) abort(); } while (0)
#define MAX_TEXT	(sizeof(((struct swap_backend_spec *)0)->path) + 64)
#define SENTINEL	0x5eed5eed5eed5eedULL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* size.h's grammar read plainly. Return: 0 (*@v set), -EINVAL, -ERANGE. */
static int ref_parse(const char *s, size_t len, bool size_ok, uint64_t *v)
{
	static const char mults[] = "kKmMgGtT";
	unsigned __int128 x = 0;
	unsigned int shift = 0;
	bool big = false;
	size_t i = 0;

	while (i < len && s[i] >= '0' && s[i] <= '9') {
		x = x * 10 + (unsigned int)(s[i++] - '0');
		if (x > UINT64_MAX) {
			big = true;
			x = (unsigned __int128)UINT64_MAX + 1;	/* stays above */
		}
	}
	if (!i)
		return -EINVAL;
	if (i < len) {
		const char *m = s[i] ? strchr(mults, s[i]) : NULL;
		size_t rest = len - i - 1;

		if (!size_ok || !m)
			return -EINVAL;
		shift = 10 * (unsigned int)(1 + (m - mults) / 2);
		if (!(rest == 0 || (rest == 1 && s[i + 1] == 'B') ||
		      (rest == 2 && s[i + 1] == 'i' && s[i + 2] == 'B')))
			return -EINVAL;
	}
	if (big || (x << shift) > UINT64_MAX)
		return -ERANGE;
	*v = (uint64_t)(x << shift);
	return 0;
}

static void check_number(const char *s, size_t len, bool is_size)
{
	uint64_t v = SENTINEL, vz = SENTINEL, ref = 0, back = SENTINEL;
	int ret, retz, want;
	char buf[48];

	ret = is_size ? uswap_parse_size_n(s, len, &v) : uswap_parse_count_n(s, len, &v);
	want = ref_parse(s, len, is_size, &ref);
	CHECK(ret == want);
	CHECK(ret ? v == SENTINEL : v == ref);
	if (strlen(s) == len) {
		retz = is_size ? uswap_parse_size(s, &vz) : uswap_parse_count(s, &vz);
		CHECK(retz == ret && vz == v);
	}
	if (ret)
		return;
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	CHECK(!uswap_parse_count(buf, &back) && back == v);
	CHECK(!uswap_parse_size(buf, &back) && back == v);
	if (is_size && v) {
		static const char sfx[] = "KMGT";
		int k = 4;

		while (k && v % (1ULL << (10 * k)))
			k--;
		if (k) {
			snprintf(buf, sizeof(buf), "%" PRIu64 "%ciB", v >> (10 * k), sfx[k - 1]);
			CHECK(!uswap_parse_size(buf, &back) && back == v);
		}
	}
}

static const char *cipher_name(enum swap_crypt_cipher c)
{
	switch (c) {
	case SWAP_CRYPT_NONE: return "off";
	case SWAP_CRYPT_AUTO: return "auto";
	case SWAP_CRYPT_XCHACHA20: return "xchacha20";
	case SWAP_CRYPT_AES256GCM: return "aes256gcm";
	}
	abort();
}

/* The fields of a parsed spec, printed back as a spec, parse the same. */
static void check_spec_roundtrip(const struct swap_backend_spec *a)
{
	static char text[MAX_TEXT + 128];
	static struct swap_backend_spec b;
	size_t n = 0;

	if (a->fault_read_nth)
		n = (size_t)snprintf(text, sizeof(text), "fault:read_err=%" PRIu64 ":",
				     a->fault_read_nth);
	else if (a->fault_write_nth)
		n = (size_t)snprintf(text, sizeof(text), "fault:write_err=%" PRIu64 ":",
				     a->fault_write_nth);
	else if (a->fault_read_slot)
		n = (size_t)snprintf(text, sizeof(text), "fault:read_err_slot=%" PRIu64 ":",
				     a->fault_read_slot);
	if (a->kind == SWAP_BACKEND_ZRAM) {
		snprintf(text + n, sizeof(text) - n, "zram:%" PRIu64 ":%s", a->size,
			 a->algo == SWAP_ZRAM_ZSTD ? "zstd" : "lz4");
	} else {
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%s%s",
				      a->kind == SWAP_BACKEND_FILE ? "file:" : "", a->path);
		if (a->kind == SWAP_BACKEND_FILE && a->rotational >= 0)
			n += (size_t)snprintf(text + n, sizeof(text) - n, ",rotational=%d",
					      a->rotational);
		snprintf(text + n, sizeof(text) - n, ",encrypt=%s,discard=%s",
			 cipher_name(a->encrypt), a->discard ? "on" : "off");
	}
	CHECK(!swap_backend_spec_parse(text, &b, NULL, 0));
	CHECK(a->kind == b.kind && a->fault_read_nth == b.fault_read_nth &&
	      a->fault_write_nth == b.fault_write_nth &&
	      a->fault_read_slot == b.fault_read_slot && !strcmp(a->path, b.path));
	if (a->kind == SWAP_BACKEND_ZRAM)
		CHECK(a->size == b.size && a->nr_slots == b.nr_slots && a->algo == b.algo);
	else
		CHECK(a->encrypt == b.encrypt && a->discard == b.discard);
	if (a->kind == SWAP_BACKEND_FILE)
		CHECK(a->rotational == b.rotational);
}

static void check_spec(const char *s, size_t errlen)
{
	static struct swap_backend_spec sp;
	const char *prefix;
	char err[300];
	int ret, faults;
	size_t i;

	memset(err, 'Z', sizeof(err));
	ret = swap_backend_spec_parse(s, &sp, err, errlen);
	CHECK(ret == 0 || ret == -EINVAL || ret == -ENAMETOOLONG);
	for (i = errlen; i < sizeof(err); i++)
		CHECK(err[i] == 'Z');
	if (errlen)
		CHECK(memchr(err, '\0', errlen) && (ret ? errlen == 1 || err[0] : !err[0]));
	if (ret)
		return;
	faults = !!sp.fault_read_nth + !!sp.fault_write_nth + !!sp.fault_read_slot;
	CHECK(faults <= 1);
	prefix = faults ? "fault:" : sp.kind == SWAP_BACKEND_ZRAM ? "zram:" :
		 sp.kind == SWAP_BACKEND_FILE ? "file:" : "nbd";
	CHECK(!strncmp(s, prefix, strlen(prefix)));
	switch (sp.kind) {
	case SWAP_BACKEND_ZRAM:
		CHECK(sp.size % SWAP_BACKEND_PAGE_SIZE == 0 &&
		      sp.nr_slots == sp.size / SWAP_BACKEND_PAGE_SIZE &&
		      sp.nr_slots >= SWAP_SPEC_MIN_SLOTS);
		CHECK(sp.algo == SWAP_ZRAM_LZ4 || sp.algo == SWAP_ZRAM_ZSTD);
		CHECK(sp.encrypt == SWAP_CRYPT_NONE);
		break;
	case SWAP_BACKEND_FILE:
		CHECK(!faults);
		CHECK(sp.path[0] && strlen(sp.path) < sizeof(sp.path));
		CHECK(sp.rotational >= -1 && sp.rotational <= 1);
		break;
	case SWAP_BACKEND_NBD:
		CHECK(!strncmp(sp.path, "nbd://", 6) || !strncmp(sp.path, "nbd+unix://", 11) ||
		      !strncmp(sp.path, "nbds://", 7) || !strncmp(sp.path, "nbds+unix://", 12));
		for (i = 0; sp.path[i]; i++)
			CHECK((unsigned char)sp.path[i] > ' ' && sp.path[i] != 0x7f);
		break;
	default:
		abort();
	}
	if (sp.kind != SWAP_BACKEND_ZRAM)
		CHECK(sp.encrypt == SWAP_CRYPT_NONE || sp.encrypt == SWAP_CRYPT_AUTO ||
		      sp.encrypt == SWAP_CRYPT_XCHACHA20 || sp.encrypt == SWAP_CRYPT_AES256GCM);
	check_spec_roundtrip(&sp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char text[MAX_TEXT + 1];
	size_t errlen, len;

	if (!size)
		return 0;
	errlen = data[0] == 0xff ? 256 : data[0] % 64;
	len = size - 1 < MAX_TEXT ? size - 1 : MAX_TEXT;
	memcpy(text, data + 1, len);
	text[len] = '\0';
	check_number(text, len, true);
	check_number(text, len, false);
	check_spec(text, errlen);
	return 0;
}
