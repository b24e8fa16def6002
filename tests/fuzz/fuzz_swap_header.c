/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the swap header parser. Input: a header page (zero-padded to 4096
 * bytes), then optionally 8 bytes of file size in pages and 1 byte of
 * error buffer length. A page that parses is rebuilt from its fields and
 * must parse back to the same fields, in both byte orders; validation must
 * agree with a naive recount. Any divergence aborts.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "swap/swap_header.h"

#define PAGE USWAP_SWAP_HEADER_SIZE
#define CHECK(cond) do { if (!(cond)) abort(); } while (0)

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t page[PAGE], page2[PAGE], page3[PAGE];
	struct uswap_swap_header h, h2, h3;
	uint64_t file_pages, usable = 0, max = 0, usable2 = 0, max2 = 0;
	char err[300], label[USWAP_SWAP_LABEL_SIZE];
	size_t errlen = 256;
	int ret, ret2;

	memset(page, 0, PAGE);
	if (size)
		memcpy(page, data, size < PAGE ? size : PAGE);
	if (size > PAGE + 8)
		errlen = data[PAGE + 8];

	memset(err, 'Z', sizeof(err));
	ret = uswap_swap_header_parse(page, &h, err, errlen);
	check_err(ret, err, errlen, sizeof(err));
	if (ret)
		return 0;
	CHECK(h.version == 1 && h.last_page && h.nr_badpages <= MAX_SWAP_BADPAGES);

	file_pages = (uint64_t)h.last_page + 1;
	if (size >= PAGE + 8)
		memcpy(&file_pages, data + PAGE, 8);
	memset(err, 'Z', sizeof(err));
	ret = uswap_swap_header_validate(&h, file_pages, &usable, &max, err, errlen);
	check_err(ret, err, errlen, sizeof(err));
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
