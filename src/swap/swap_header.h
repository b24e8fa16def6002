/* SPDX-License-Identifier: MIT */
/*
 * The on-disk Linux swap header (version 1, "SWAPSPACE2"): parse, check
 * against the area's size, build, read from a file or block device.
 *
 * The header fills page 0 of the area (4096 bytes, the page size uswap
 * uses everywhere). Byte offsets in that page:
 *
 *      0  bootbits[1024]    left for boot loaders and partition tables; zero
 *   1024  u32 version       must be 1
 *   1028  u32 last_page     index of the last page; the area is last_page + 1
 *                           pages, the header page included
 *   1032  u32 nr_badpages   valid entries of badpages[]
 *   1036  u8  uuid[16]      binary UUID
 *   1052  u8  label[16]     volume label, NUL padded
 *   1068  u32 padding[117]  zero
 *   1536  u32 badpages[637] page indices of unusable pages
 *   4086  "SWAPSPACE2"      magic, no NUL, the last 10 bytes of the page
 *
 * Integers are in the byte order of the machine that wrote the header; a
 * header written with the other byte order is accepted and swapped.
 */
#ifndef USWAP_SWAP_HEADER_H
#define USWAP_SWAP_HEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define USWAP_SWAP_HEADER_SIZE		4096
#define USWAP_SWAP_HDR_VERSION_OFF	1024
#define USWAP_SWAP_HDR_LAST_PAGE_OFF	1028
#define USWAP_SWAP_HDR_NR_BAD_OFF	1032
#define USWAP_SWAP_HDR_UUID_OFF		1036
#define USWAP_SWAP_HDR_LABEL_OFF	1052
#define USWAP_SWAP_HDR_BADPAGES_OFF	1536
#define USWAP_SWAP_MAGIC		"SWAPSPACE2"
#define USWAP_SWAP_MAGIC_V0		"SWAP-SPACE"
#define USWAP_SWAP_MAGIC_LEN		10
#define USWAP_SWAP_HDR_MAGIC_OFF	(USWAP_SWAP_HEADER_SIZE - USWAP_SWAP_MAGIC_LEN)
#define USWAP_SWAP_LABEL_SIZE		16	/* bytes on disk, NUL included when shorter */
#define USWAP_SWAP_MIN_PAGES		10	/* mkswap's smallest area */

/* Bad page slots between the bad list's start and the magic. */
#define MAX_SWAP_BADPAGES \
	((USWAP_SWAP_HEADER_SIZE - USWAP_SWAP_MAGIC_LEN - USWAP_SWAP_HDR_BADPAGES_OFF) / 4)
_Static_assert(MAX_SWAP_BADPAGES == 637, "637 bad pages fit a 4 KiB header");

/*
 * A device's slot count is an unsigned int (si->max): an area whose
 * last_page is UINT32_MAX is one slot short of its header, as in the kernel.
 */
#define USWAP_SWAP_MAX_SLOTS		UINT32_MAX

/*
 * A parsed header, in host byte order.
 * Invariants after a successful parse: version == 1, last_page >= 1,
 * nr_badpages <= MAX_SWAP_BADPAGES, badpages[i] == 0 for i >= nr_badpages,
 * label NUL-terminated.
 */
struct uswap_swap_header {
	uint32_t version;			/* 1 */
	uint32_t last_page;			/* last page index; pages = last_page + 1 */
	uint32_t nr_badpages;			/* valid entries of badpages[] */
	uint32_t badpages[MAX_SWAP_BADPAGES];	/* page indices, not yet checked */
	uint8_t uuid[16];			/* binary, all zero when unset */
	char label[USWAP_SWAP_LABEL_SIZE + 1];	/* up to 16 bytes and a NUL */
	bool byteswapped;			/* written with the other byte order */
};

int uswap_swap_header_parse(const void *page, struct uswap_swap_header *out,
			    char *err, size_t errlen);
int uswap_swap_header_validate(const struct uswap_swap_header *h, uint64_t file_pages,
			       uint64_t *usable_pages, uint64_t *max_slots,
			       char *err, size_t errlen);
int uswap_swap_header_build(void *page, uint32_t last_page, const uint32_t *bad,
			    uint32_t nr_bad, const uint8_t uuid[16], const char *label);
int uswap_swap_header_swab(void *page);
int uswap_swap_header_read_file(const char *path, struct uswap_swap_header *out,
				uint64_t *file_pages, char *err, size_t errlen);

#endif
