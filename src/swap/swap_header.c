/* SPDX-License-Identifier: MIT */
/*
 * The on-disk swap header: parse and check it the way swapon does, build
 * it the way util-linux mkswap writes it (see swap_header.h for the layout).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>

#include "swap/swap_header.h"

_Static_assert(USWAP_SWAP_HDR_LABEL_OFF + USWAP_SWAP_LABEL_SIZE + 117 * 4 ==
	       USWAP_SWAP_HDR_BADPAGES_OFF, "label and padding end at the bad list");
_Static_assert(USWAP_SWAP_HDR_UUID_OFF + 16 == USWAP_SWAP_HDR_LABEL_OFF,
	       "the label follows the uuid");
_Static_assert(sizeof(USWAP_SWAP_MAGIC) - 1 == USWAP_SWAP_MAGIC_LEN &&
	       sizeof(USWAP_SWAP_MAGIC_V0) - 1 == USWAP_SWAP_MAGIC_LEN,
	       "both magics are 10 bytes");

static void __attribute__((format(printf, 3, 4)))
set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* The header's integers may sit at any alignment of the caller's buffer. */
static uint32_t get32(const uint8_t *page, size_t off)
{
	uint32_t v;

	memcpy(&v, page + off, sizeof(v));
	return v;
}

static void put32(uint8_t *page, size_t off, uint32_t v)
{
	memcpy(page + off, &v, sizeof(v));
}

static uint32_t swab32(uint32_t v)
{
	return __builtin_bswap32(v);
}

/* Render the 10 magic bytes for a message: printable as is, others \xNN. */
static void magic_text(const uint8_t *magic, char *buf, size_t len)
{
	size_t i, pos = 0;

	buf[0] = '\0';
	for (i = 0; i < USWAP_SWAP_MAGIC_LEN && pos < len; i++) {
		int n;

		if (magic[i] >= 0x20 && magic[i] < 0x7f && magic[i] != '"' && magic[i] != '\\')
			n = snprintf(buf + pos, len - pos, "%c", magic[i]);
		else
			n = snprintf(buf + pos, len - pos, "\\x%02x", magic[i]);
		if (n < 0)
			break;
		pos += (size_t)n;
	}
}

/**
 * uswap_swap_header_parse() - decode a swap header page
 * @page: USWAP_SWAP_HEADER_SIZE bytes, any alignment
 * @out: receives the header in host byte order; zeroed first
 * @err: receives a message naming the problem and the offending value on
 *       error (an empty string on success); may be NULL
 * @errlen: size of @err
 *
 * Checks, in swapon's order: the magic ("SWAPSPACE2"; the old v0
 * "SWAP-SPACE" is refused by name), the byte order (a header whose version
 * reads 1 once byte-swapped is swapped to host order, its bad list too),
 * the version, last_page != 0 and nr_badpages <= MAX_SWAP_BADPAGES. The bad
 * list's entries and the area's size are checked by
 * uswap_swap_header_validate().
 *
 * Context: any; pure.
 * Return: 0, or -EINVAL if the page is not a usable version 1 header (or
 * @page or @out is NULL).
 */
int uswap_swap_header_parse(const void *page, struct uswap_swap_header *out,
			    char *err, size_t errlen)
{
	const uint8_t *p = page;
	uint32_t version, last_page, nr_bad, i;
	bool swapped;

	if (err && errlen)
		err[0] = '\0';
	if (!p || !out) {
		set_err(err, errlen, "no header page or no output");
		return -EINVAL;
	}
	memset(out, 0, sizeof(*out));

	if (memcmp(p + USWAP_SWAP_HDR_MAGIC_OFF, USWAP_SWAP_MAGIC, USWAP_SWAP_MAGIC_LEN)) {
		char found[4 * USWAP_SWAP_MAGIC_LEN + 1];

		if (!memcmp(p + USWAP_SWAP_HDR_MAGIC_OFF, USWAP_SWAP_MAGIC_V0,
			    USWAP_SWAP_MAGIC_LEN)) {
			set_err(err, errlen,
				"old swap format SWAP-SPACE (v0) is not supported");
			return -EINVAL;
		}
		magic_text(p + USWAP_SWAP_HDR_MAGIC_OFF, found, sizeof(found));
		set_err(err, errlen,
			"no swap signature (SWAPSPACE2) found: bytes %d..%d are \"%s\"",
			USWAP_SWAP_HDR_MAGIC_OFF, USWAP_SWAP_HEADER_SIZE - 1, found);
		return -EINVAL;
	}

	version = get32(p, USWAP_SWAP_HDR_VERSION_OFF);
	last_page = get32(p, USWAP_SWAP_HDR_LAST_PAGE_OFF);
	nr_bad = get32(p, USWAP_SWAP_HDR_NR_BAD_OFF);
	swapped = swab32(version) == 1;
	if (swapped) {
		version = 1;
		last_page = swab32(last_page);
		nr_bad = swab32(nr_bad);
		/* swapon bounds the count before it swaps that many entries. */
		if (nr_bad > MAX_SWAP_BADPAGES)
			goto too_many;
	}
	if (version != 1) {
		set_err(err, errlen,
			"unsupported swap header version %u (0x%08x): only version 1 is supported",
			version, version);
		return -EINVAL;
	}
	if (!last_page) {
		set_err(err, errlen, "empty swap area: last_page is 0");
		return -EINVAL;
	}
	if (nr_bad > MAX_SWAP_BADPAGES)
		goto too_many;

	out->version = version;
	out->last_page = last_page;
	out->nr_badpages = nr_bad;
	for (i = 0; i < nr_bad; i++) {
		uint32_t b = get32(p, USWAP_SWAP_HDR_BADPAGES_OFF + 4 * (size_t)i);

		out->badpages[i] = swapped ? swab32(b) : b;
	}
	memcpy(out->uuid, p + USWAP_SWAP_HDR_UUID_OFF, sizeof(out->uuid));
	memcpy(out->label, p + USWAP_SWAP_HDR_LABEL_OFF, USWAP_SWAP_LABEL_SIZE);
	out->label[USWAP_SWAP_LABEL_SIZE] = '\0';
	out->byteswapped = swapped;
	return 0;

too_many:
	set_err(err, errlen, "too many bad pages: nr_badpages %u exceeds the maximum %u",
		nr_bad, (unsigned int)MAX_SWAP_BADPAGES);
	return -EINVAL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/**
 * uswap_swap_header_validate() - check a parsed header against its area
 * @h: a header from uswap_swap_header_parse() (or filled by hand)
 * @file_pages: size of the file or device in whole pages
 * @usable_pages: receives the number of slots that can hold data (the
 *                header and the bad pages excluded); may be NULL
 * @max_slots: receives the device's slot count, last_page + 1 (capped at
 *             USWAP_SWAP_MAX_SLOTS); may be NULL
 * @err: receives a message naming the problem and the value on error; may
 *       be NULL
 * @errlen: size of @err
 *
 * The rules are swapon's: the area must be at least last_page + 1 pages
 * long; each bad page must lie in 1..last_page and appear once; a bad page
 * at or beyond max_slots (only possible when last_page is UINT32_MAX and
 * the slot count is capped) is ignored; at least one slot must stay usable.
 *
 * Unlike the kernel, bad pages are accepted on a regular file: uswap uses
 * files where the kernel uses block devices, so a file may legitimately
 * carry a bad list (e.g. one copied from a device image).
 *
 * The swap table applies the same rules again when it marks bad slots;
 * this function only reads @h and touches nothing else.
 *
 * Context: any; pure.
 * Return: 0 (outputs set), or -EINVAL (outputs untouched).
 */
int uswap_swap_header_validate(const struct uswap_swap_header *h, uint64_t file_pages,
			       uint64_t *usable_pages, uint64_t *max_slots,
			       char *err, size_t errlen)
{
	uint32_t sorted[MAX_SWAP_BADPAGES];
	uint64_t needed, max, usable;
	uint32_t i, nr = 0;

	if (err && errlen)
		err[0] = '\0';
	if (!h) {
		set_err(err, errlen, "no header");
		return -EINVAL;
	}
	if (h->version != 1) {
		set_err(err, errlen,
			"unsupported swap header version %u: only version 1 is supported",
			h->version);
		return -EINVAL;
	}
	if (!h->last_page) {
		set_err(err, errlen, "empty swap area: last_page is 0");
		return -EINVAL;
	}
	if (h->nr_badpages > MAX_SWAP_BADPAGES) {
		set_err(err, errlen, "too many bad pages: nr_badpages %u exceeds the maximum %u",
			h->nr_badpages, (unsigned int)MAX_SWAP_BADPAGES);
		return -EINVAL;
	}
	needed = (uint64_t)h->last_page + 1;
	if (file_pages < needed) {
		set_err(err, errlen,
			"swap area shorter than its header says: header last_page %u needs %llu pages, file has %llu",
			h->last_page, (unsigned long long)needed,
			(unsigned long long)file_pages);
		return -EINVAL;
	}
	max = needed < USWAP_SWAP_MAX_SLOTS ? needed : USWAP_SWAP_MAX_SLOTS;

	for (i = 0; i < h->nr_badpages; i++) {
		uint32_t b = h->badpages[i];

		if (!b || b > h->last_page) {
			set_err(err, errlen,
				"bad page %u (entry %u) out of range: must be 1..last_page %u",
				b, i, h->last_page);
			return -EINVAL;
		}
		if (b >= max)
			continue;	/* beyond the slots the device can have */
		sorted[nr++] = b;
	}
	qsort(sorted, nr, sizeof(sorted[0]), cmp_u32);
	for (i = 1; i < nr; i++) {
		if (sorted[i] == sorted[i - 1]) {
			set_err(err, errlen, "duplicated bad page %u", sorted[i]);
			return -EINVAL;
		}
	}

	usable = max - 1 - nr;
	if (!usable) {
		set_err(err, errlen,
			"no usable page left: %llu pages, the header page and %u bad pages",
			(unsigned long long)max, nr);
		return -EINVAL;
	}
	if (usable_pages)
		*usable_pages = usable;
	if (max_slots)
		*max_slots = max;
	return 0;
}

/**
 * uswap_swap_header_build() - write a version 1 swap header page
 * @page: USWAP_SWAP_HEADER_SIZE bytes to fill, any alignment
 * @last_page: index of the area's last page (pages - 1), at least 1
 * @bad: @nr_bad page indices to list as bad (not checked here; see
 *       uswap_swap_header_validate()); may be NULL when @nr_bad is 0
 * @nr_bad: number of bad pages, at most MAX_SWAP_BADPAGES
 * @uuid: 16 bytes, or NULL for the all-zero UUID
 * @label: at most 15 characters (16 bytes with its NUL), or NULL for none;
 *         a longer label is refused, not cut (the CLI cuts it and warns)
 *
 * The page is byte for byte what util-linux mkswap writes in host byte
 * order: zero boot bits, version, last_page, nr_badpages, uuid, label,
 * zero padding, the bad list, zeros, then "SWAPSPACE2" in the last 10 bytes.
 *
 * Context: any; pure.
 * Return: 0, or -EINVAL (NULL @page, @last_page 0, too many bad pages,
 * NULL @bad with @nr_bad > 0, label too long); @page is untouched on error.
 */
int uswap_swap_header_build(void *page, uint32_t last_page, const uint32_t *bad,
			    uint32_t nr_bad, const uint8_t uuid[16], const char *label)
{
	uint8_t *p = page;
	size_t label_len = 0;
	uint32_t i;

	if (!p || !last_page || nr_bad > MAX_SWAP_BADPAGES || (nr_bad && !bad))
		return -EINVAL;
	if (label) {
		label_len = strnlen(label, USWAP_SWAP_LABEL_SIZE);
		if (label_len >= USWAP_SWAP_LABEL_SIZE)
			return -EINVAL;
	}

	memset(p, 0, USWAP_SWAP_HEADER_SIZE);
	put32(p, USWAP_SWAP_HDR_VERSION_OFF, 1);
	put32(p, USWAP_SWAP_HDR_LAST_PAGE_OFF, last_page);
	put32(p, USWAP_SWAP_HDR_NR_BAD_OFF, nr_bad);
	if (uuid)
		memcpy(p + USWAP_SWAP_HDR_UUID_OFF, uuid, 16);
	if (label_len)
		memcpy(p + USWAP_SWAP_HDR_LABEL_OFF, label, label_len);
	for (i = 0; i < nr_bad; i++)
		put32(p, USWAP_SWAP_HDR_BADPAGES_OFF + 4 * (size_t)i, bad[i]);
	memcpy(p + USWAP_SWAP_HDR_MAGIC_OFF, USWAP_SWAP_MAGIC, USWAP_SWAP_MAGIC_LEN);
	return 0;
}

/**
 * uswap_swap_header_swab() - convert a header page to the other byte order
 * @page: a header page whose version reads 1 in either byte order
 *
 * Swaps version, last_page, nr_badpages and the nr_badpages listed bad
 * pages in place: a header built here becomes what a machine of the other
 * endianness would have written (mkswap --endianness), and back.
 *
 * Context: any; pure.
 * Return: 0, or -EINVAL if the version is 1 in neither byte order or the
 * bad count exceeds MAX_SWAP_BADPAGES (@page untouched).
 */
int uswap_swap_header_swab(void *page)
{
	uint8_t *p = page;
	uint32_t version, nr_bad, i;

	if (!p)
		return -EINVAL;
	version = get32(p, USWAP_SWAP_HDR_VERSION_OFF);
	nr_bad = get32(p, USWAP_SWAP_HDR_NR_BAD_OFF);
	if (version != 1) {
		if (swab32(version) != 1)
			return -EINVAL;
		nr_bad = swab32(nr_bad);
	}
	if (nr_bad > MAX_SWAP_BADPAGES)
		return -EINVAL;
	put32(p, USWAP_SWAP_HDR_VERSION_OFF, swab32(version));
	put32(p, USWAP_SWAP_HDR_LAST_PAGE_OFF, swab32(get32(p, USWAP_SWAP_HDR_LAST_PAGE_OFF)));
	put32(p, USWAP_SWAP_HDR_NR_BAD_OFF, swab32(get32(p, USWAP_SWAP_HDR_NR_BAD_OFF)));
	for (i = 0; i < nr_bad; i++) {
		size_t off = USWAP_SWAP_HDR_BADPAGES_OFF + 4 * (size_t)i;

		put32(p, off, swab32(get32(p, off)));
	}
	return 0;
}

static const char *errno_text(int errnum, char *buf, size_t len)
{
	return strerror_r(errnum, buf, len);	/* GNU: may return a static string */
}

/**
 * uswap_swap_header_read_file() - read and parse the header of a swap area
 * @path: a regular file or a block device
 * @out: receives the parsed header (zeroed if the page was read but did not
 *       parse; undefined content on earlier errors)
 * @file_pages: receives the area's size in whole pages as soon as it is
 *              known, so that a caller can report it even when the header
 *              is bad; may be NULL
 * @err: receives the reason on error; may be NULL
 * @errlen: size of @err
 *
 * Opens @path read-only, sizes it (st_size for a file, BLKGETSIZE64 for a
 * block device) and reads page 0 with pread(). It does not call
 * uswap_swap_header_validate(): the caller decides how to treat the size.
 *
 * Context: process context; does blocking I/O.
 * Return: 0; -errno from open(), fstat(), ioctl() or pread(); -EINVAL if
 * @path is neither a regular file nor a block device, is shorter than one
 * page, or holds no valid header; -EIO on a short read.
 */
int uswap_swap_header_read_file(const char *path, struct uswap_swap_header *out,
				uint64_t *file_pages, char *err, size_t errlen)
{
	uint8_t page[USWAP_SWAP_HEADER_SIZE];
	char ebuf[128];
	struct stat st;
	uint64_t size;
	size_t done = 0;
	int fd, ret;

	if (err && errlen)
		err[0] = '\0';
	if (!path || !out) {
		set_err(err, errlen, "no path or no output");
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		set_err(err, errlen, "cannot open: %s", errno_text(-ret, ebuf, sizeof(ebuf)));
		return ret;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		set_err(err, errlen, "cannot stat: %s", errno_text(-ret, ebuf, sizeof(ebuf)));
		goto out;
	}
	if (S_ISREG(st.st_mode)) {
		size = (uint64_t)st.st_size;
	} else if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size) < 0) {
			ret = -errno;
			set_err(err, errlen, "cannot get the block device size: %s",
				errno_text(-ret, ebuf, sizeof(ebuf)));
			goto out;
		}
	} else {
		ret = -EINVAL;
		set_err(err, errlen, "not a regular file or block device (mode 0%o)",
			(unsigned int)st.st_mode);
		goto out;
	}
	if (file_pages)
		*file_pages = size / USWAP_SWAP_HEADER_SIZE;
	if (size < USWAP_SWAP_HEADER_SIZE) {
		ret = -EINVAL;
		set_err(err, errlen, "too small for a swap header: %llu bytes, need %d",
			(unsigned long long)size, USWAP_SWAP_HEADER_SIZE);
		goto out;
	}
	while (done < sizeof(page)) {
		ssize_t n = pread(fd, page + done, sizeof(page) - done, (off_t)done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			set_err(err, errlen, "cannot read the header page: %s",
				errno_text(-ret, ebuf, sizeof(ebuf)));
			goto out;
		}
		if (!n) {
			ret = -EIO;
			set_err(err, errlen, "short read of the header page: %zu of %d bytes",
				done, USWAP_SWAP_HEADER_SIZE);
			goto out;
		}
		done += (size_t)n;
	}
	ret = uswap_swap_header_parse(page, out, err, errlen);
out:
	close(fd);
	return ret;
}
