/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the swap header parser. Input: a header page (zero-padded to 4096
 * bytes), then optionally 8 bytes of file size in pages and 1 byte of
 * error buffer length. Checked, any divergence aborting:
 * - a parsed header's fields are the page's, read in the byte order the
 *   parser reported, and every bad list entry past nr_badpages is 0;
 * - the page converted to the other byte order parses the same (or fails
 *   the same), with the byteswapped flag flipped;
 * - validation agrees with a naive reading of swapon's rules (area size,
 *   bad pages in 1..last_page, no duplicate, one usable page left), and
 *   its usable count with a naive recount;
 * - a page that parses is rebuilt from its fields and parses back to them,
 *   in both byte orders;
 * - an area of up to SWAPON_MAX_PAGES pages is swapped on, from a
 *   compressed memory device holding the page: swapon accepts exactly the
 *   headers validation accepts, and marks exactly the bad pages listed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <uswap/swap.h>
#include "io/backend.h"
#include "swap/swap_header.h"
#include "swap/swapon.h"

#define PAGE USWAP_SWAP_HEADER_SIZE
#define CHECK(cond) do { if (!(cond)) abort(); } while (0)
#define SWAPON_MAX_PAGES	2048	/* four clusters: swapon stays fast */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The message is non-empty on error, NUL-terminated within errlen, and
 * nothing past errlen is written. */
static void check_err(int ret, const char *err, size_t errlen, size_t bufsize)
{
	size_t i;

	CHECK(ret == 0 || ret == -EINVAL);
	for (i = errlen; i < bufsize; i++)
		CHECK(err[i] == 'Z');
	if (!errlen)
		return;
	CHECK(memchr(err, '\0', errlen));
	CHECK(ret ? errlen == 1 || err[0] : !err[0]);
}

/* usable pages counted the slow way: distinct bad pages in 1..max-1. */
static uint64_t naive_usable(const struct uswap_swap_header *h, uint64_t max)
{
	uint64_t nr = 0;
	uint32_t i, j;

	for (i = 0; i < h->nr_badpages; i++) {
		if (h->badpages[i] >= max)
			continue;
		for (j = 0; j < i; j++)
			if (h->badpages[j] == h->badpages[i])
				break;
		nr += j == i;
	}
	return max - 1 - nr;
}

static void same_fields(const struct uswap_swap_header *a, const struct uswap_swap_header *b,
			const char *label)
{
	CHECK(a->version == b->version && a->last_page == b->last_page);
	CHECK(a->nr_badpages == b->nr_badpages);
	CHECK(!memcmp(a->badpages, b->badpages, sizeof(a->badpages)));
	CHECK(!memcmp(a->uuid, b->uuid, sizeof(a->uuid)));
	CHECK(!strcmp(b->label, label));
}

static uint32_t raw32(const uint8_t *page, size_t off, bool swapped)
{
	uint32_t v;

	memcpy(&v, page + off, sizeof(v));
	return swapped ? __builtin_bswap32(v) : v;
}

/* The parsed fields are the page's, in the byte order the parser saw. */
static void same_as_page(const struct uswap_swap_header *h, const uint8_t *p)
{
	bool sw = h->byteswapped;
	uint32_t i;

	CHECK(raw32(p, USWAP_SWAP_HDR_VERSION_OFF, sw) == 1);
	CHECK(raw32(p, USWAP_SWAP_HDR_VERSION_OFF, !sw) != 1);
	CHECK(h->last_page == raw32(p, USWAP_SWAP_HDR_LAST_PAGE_OFF, sw));
	CHECK(h->nr_badpages == raw32(p, USWAP_SWAP_HDR_NR_BAD_OFF, sw));
	for (i = 0; i < MAX_SWAP_BADPAGES; i++)
		CHECK(h->badpages[i] == (i < h->nr_badpages ?
			raw32(p, USWAP_SWAP_HDR_BADPAGES_OFF + 4 * (size_t)i, sw) : 0));
	CHECK(!memcmp(h->uuid, p + USWAP_SWAP_HDR_UUID_OFF, sizeof(h->uuid)));
	CHECK(!strncmp(h->label, (const char *)p + USWAP_SWAP_HDR_LABEL_OFF,
		       USWAP_SWAP_LABEL_SIZE));
	CHECK(memchr(h->label, '\0', sizeof(h->label)));
}

/* swapon's rules read plainly: whether validation must accept. */
static bool naive_valid(const struct uswap_swap_header *h, uint64_t file_pages)
{
	uint64_t max = (uint64_t)h->last_page + 1;
	uint32_t i, j;

	if (file_pages < max)
		return false;
	if (max > UINT32_MAX)
		max = UINT32_MAX;
	for (i = 0; i < h->nr_badpages; i++) {
		if (!h->badpages[i] || h->badpages[i] > h->last_page)
			return false;
		for (j = 0; j < i; j++)
			if (h->badpages[i] < max && h->badpages[j] == h->badpages[i])
				return false;
	}
	return naive_usable(h, max) > 0;
}

/*
 * Swap on the header page from a compressed memory device of @file_pages
 * slots (small areas only): it must succeed exactly when validation did,
 * with the slot counts validation gave and every listed bad page marked.
 */
static void check_swapon(const uint8_t *page, const struct uswap_swap_header *h,
			 uint64_t file_pages, int vret, uint64_t usable, uint64_t max)
{
	struct uswap_swap_stat st;
	struct swap_backend *be;
	char err[256];
	int type;

	if (file_pages > SWAPON_MAX_PAGES || file_pages < 2)
		return;
	CHECK(!swap_backend_zram_create(file_pages, SWAP_ZRAM_LZ4, &be));
	CHECK(!swap_backend_write(be, 0, 1, page));
	type = uswap_swapon_backend(be, 0, err, sizeof(err));
	if (vret) {
		CHECK(type == -EINVAL && err[0]);
		swap_backend_destroy(be);
		return;
	}
	CHECK(type >= 0);
	CHECK(!uswap_swap_stat((unsigned int)type, &st));
	CHECK(st.max == max && st.pages == usable && st.inuse_pages == 0);
	CHECK(st.nr_bad == max - usable);
	CHECK(!uswap_swapoff_type((unsigned int)type));
	(void)h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t page[PAGE], page2[PAGE], page3[PAGE];
	static struct uswap_swap_header h, h2, h3;
	uint64_t file_pages, usable = 0, max = 0, usable2 = 0, max2 = 0;
	char err[300], label[USWAP_SWAP_LABEL_SIZE];
	size_t errlen = 256;
	int ret, ret2;

	setenv("USWAP_QUIET", "1", 0);
	memset(page, 0, PAGE);
	if (size)
		memcpy(page, data, size < PAGE ? size : PAGE);
	if (size > PAGE + 8)
		errlen = data[PAGE + 8];

	memset(err, 'Z', sizeof(err));
	ret = uswap_swap_header_parse(page, &h, err, errlen);
	check_err(ret, err, errlen, sizeof(err));

	/* The same page in the other byte order: the same verdict. */
	memcpy(page3, page, PAGE);
	if (!uswap_swap_header_swab(page3)) {
		ret2 = uswap_swap_header_parse(page3, &h3, NULL, 0);
		CHECK(ret2 == ret);
		if (!ret) {
			CHECK(h3.byteswapped == !h.byteswapped);
			same_fields(&h, &h3, h.label);
			same_as_page(&h3, page3);
		}
	}
	if (ret)
		return 0;
	CHECK(h.version == 1 && h.last_page && h.nr_badpages <= MAX_SWAP_BADPAGES);
	same_as_page(&h, page);

	file_pages = (uint64_t)h.last_page + 1;
	if (size >= PAGE + 8)
		memcpy(&file_pages, data + PAGE, 8);
	memset(err, 'Z', sizeof(err));
	ret = uswap_swap_header_validate(&h, file_pages, &usable, &max, err, errlen);
	check_err(ret, err, errlen, sizeof(err));
	CHECK(!ret == naive_valid(&h, file_pages));
	check_swapon(page, &h, file_pages, ret, usable, max);
	if (!ret) {
		CHECK(file_pages > h.last_page);
		CHECK(max == ((uint64_t)h.last_page + 1 < UINT32_MAX ?
			      (uint64_t)h.last_page + 1 : UINT32_MAX));
		CHECK(usable >= 1 && usable == naive_usable(&h, max));
	}

	/* Rebuild. A 16-byte label has no room for its NUL: refused, then cut. */
	if (strlen(h.label) >= USWAP_SWAP_LABEL_SIZE)
		CHECK(uswap_swap_header_build(page2, h.last_page, h.badpages, h.nr_badpages,
					      h.uuid, h.label) == -EINVAL);
	memcpy(label, h.label, sizeof(label) - 1);
	label[sizeof(label) - 1] = '\0';
	CHECK(!uswap_swap_header_build(page2, h.last_page, h.badpages, h.nr_badpages,
				       h.uuid, label));
	CHECK(!uswap_swap_header_parse(page2, &h2, NULL, 0));
	CHECK(!h2.byteswapped);
	same_fields(&h, &h2, label);
	ret2 = uswap_swap_header_validate(&h2, file_pages, &usable2, &max2, NULL, 0);
	CHECK(ret == ret2 && usable == usable2 && max == max2);

	/* Building is deterministic: the rebuilt header rebuilds to itself. */
	CHECK(!uswap_swap_header_build(page3, h2.last_page, h2.badpages, h2.nr_badpages,
				       h2.uuid, h2.label));
	CHECK(!memcmp(page2, page3, PAGE));

	/* The other byte order parses to the same fields, and swaps back. */
	CHECK(!uswap_swap_header_swab(page3));
	CHECK(!uswap_swap_header_parse(page3, &h3, NULL, 0));
	CHECK(h3.byteswapped);
	same_fields(&h, &h3, label);
	CHECK(!uswap_swap_header_swab(page3));
	CHECK(!memcmp(page2, page3, PAGE));

	return 0;
}
