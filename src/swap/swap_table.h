/* SPDX-License-Identifier: MIT */
/*
 * The swap table entry: the whole state of one swap slot in 64 bits.
 *
 *   NULL    |------------------- 0 ------------------|      free slot
 *   Shadow  | COUNT |-------- shadow value ---------|1|     swapped out
 *   PFN     | COUNT |------------ PFN ------------|10|     cached: a frame holds it
 *   Pointer |----------------- pointer ----------|100|     reserved, unused
 *   Bad     |------------------ 1 ----------------|1000|   header, bad page, tail
 *
 * COUNT is the top SWP_TB_COUNT_BITS bits (USWAP_TB_COUNT_BITS, default 4).
 * Values 0 .. SWP_TB_COUNT_MAX-1 are exact; SWP_TB_COUNT_MAX means the real
 * count lives in the cluster's extend table. Count 0 is legal only for a
 * PFN entry (the slot is pinned by the swap cache alone) and for NULL.
 * The shadow value keeps its low marker bit 1 and leaves COUNT clear; the
 * workingset code packs its fields below SWP_TB_COUNT_SHIFT (commit 48dd39b85542, see
 * mm/workingset.h).
 *
 * No code outside this header open-codes these masks.
 */
#ifndef USWAP_SWAP_TABLE_H
#define USWAP_SWAP_TABLE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/debug.h"

#ifndef USWAP_TB_COUNT_BITS
#define USWAP_TB_COUNT_BITS 4
#endif

/*
 * Frame numbers: 40 bits, as on x86-64 (52 physical address bits minus the
 * page shift), so that the widest count the kernel could use (22 bits) still
 * fits beside the PFN and its 2-bit marker.
 */
#define SWAP_CACHE_PFN_BITS	40

#define SWP_TB_NULL		0ULL
#define SWP_TB_SHADOW_MARK	0x1ULL
#define SWP_TB_PFN_MARK		0x2ULL
#define SWP_TB_PFN_MARK_BITS	2
#define SWP_TB_PFN_MARK_MASK	((1ULL << SWP_TB_PFN_MARK_BITS) - 1)
#define SWP_TB_PTR_MARK		0x4ULL
#define SWP_TB_PTR_MARK_MASK	0x7ULL
#define SWP_TB_BAD		(~0ULL << 3)

#define SWP_TB_COUNT_BITS	USWAP_TB_COUNT_BITS
#define SWP_TB_COUNT_SHIFT	(64 - SWP_TB_COUNT_BITS)
#define SWP_TB_COUNT_MASK	(~(~0ULL >> SWP_TB_COUNT_BITS))
#define SWP_TB_COUNT_MAX	((1U << SWP_TB_COUNT_BITS) - 1)
#define SWP_TB_PFN_BITS		(SWAP_CACHE_PFN_BITS + SWP_TB_PFN_MARK_BITS)

_Static_assert(SWP_TB_COUNT_BITS >= 2,
	       "free, in use and overflow need three count values");
_Static_assert(SWP_TB_COUNT_BITS <= 22, "the count field is at most 22 bits");
_Static_assert(SWAP_CACHE_PFN_BITS + SWP_TB_PFN_MARK_BITS + SWP_TB_COUNT_BITS <= 64,
	       "PFN + marker + count must fit in one 64-bit entry");
_Static_assert(sizeof(unsigned long long) == 8, "entries are 64-bit");

/* ---- type tests ---- */

static inline bool swp_tb_is_null(uint64_t tb)
{
	return tb == SWP_TB_NULL;
}

static inline bool swp_tb_is_shadow(uint64_t tb)
{
	return (tb & SWP_TB_SHADOW_MARK) != 0;
}

static inline bool swp_tb_is_folio(uint64_t tb)
{
	return (tb & SWP_TB_PFN_MARK_MASK) == SWP_TB_PFN_MARK;
}

static inline bool swp_tb_is_ptr(uint64_t tb)
{
	return (tb & SWP_TB_PTR_MARK_MASK) == SWP_TB_PTR_MARK;
}

static inline bool swp_tb_is_bad(uint64_t tb)
{
	return tb == SWP_TB_BAD;
}

/* Only free, shadow and PFN entries carry a count. */
static inline bool swp_tb_is_countable(uint64_t tb)
{
	return swp_tb_is_null(tb) || swp_tb_is_shadow(tb) || swp_tb_is_folio(tb);
}

/* ---- encoders ---- */

static inline uint64_t __count_to_swp_tb(unsigned int count)
{
	uswap_assert(count <= SWP_TB_COUNT_MAX);
	return (uint64_t)count << SWP_TB_COUNT_SHIFT;
}

static inline uint64_t pfn_to_swp_tb(uint64_t pfn, unsigned int count)
{
	uswap_assert(pfn < (1ULL << SWAP_CACHE_PFN_BITS));
	return (pfn << SWP_TB_PFN_MARK_BITS) | SWP_TB_PFN_MARK | __count_to_swp_tb(count);
}

/*
 * A shadow value is an "XA value": its bit 0 is set (or it is 0, the empty
 * placeholder). Its count bits must be clear.
 */
static inline uint64_t shadow_to_swp_tb(uint64_t shadow, unsigned int count)
{
	uswap_assert(!(shadow & SWP_TB_COUNT_MASK));
	uswap_assert(!shadow || (shadow & SWP_TB_SHADOW_MARK));
	return shadow | SWP_TB_SHADOW_MARK | __count_to_swp_tb(count);
}

/* Reserved pointer format: an 8-byte aligned pointer tagged 100. */
static inline uint64_t ptr_to_swp_tb(const void *p)
{
	uswap_assert(!((uintptr_t)p & SWP_TB_PTR_MARK_MASK));
	return (uint64_t)(uintptr_t)p | SWP_TB_PTR_MARK;
}

/* ---- decoders ---- */

static inline uint64_t swp_tb_to_pfn(uint64_t tb)
{
	uswap_assert(swp_tb_is_folio(tb));
	return (tb & ~SWP_TB_COUNT_MASK) >> SWP_TB_PFN_MARK_BITS;
}

static inline uint64_t swp_tb_to_shadow(uint64_t tb)
{
	uswap_assert(swp_tb_is_shadow(tb));
	return tb & ~SWP_TB_COUNT_MASK;
}

static inline void *swp_tb_to_ptr(uint64_t tb)
{
	uswap_assert(swp_tb_is_ptr(tb));
	return (void *)(uintptr_t)(tb & ~SWP_TB_PTR_MARK_MASK);
}

static inline unsigned int __swp_tb_get_count(uint64_t tb)
{
	uswap_assert(swp_tb_is_countable(tb));
	return (unsigned int)((tb & SWP_TB_COUNT_MASK) >> SWP_TB_COUNT_SHIFT);
}

/* The in-table count, or -EINVAL for an entry that carries none. */
static inline int swp_tb_get_count(uint64_t tb)
{
	if (swp_tb_is_countable(tb))
		return (int)__swp_tb_get_count(tb);
	return -EINVAL;
}

/* The same entry with its count field replaced. */
static inline uint64_t __swp_tb_mk_count(uint64_t tb, unsigned int count)
{
	uswap_assert(swp_tb_is_shadow(tb) || swp_tb_is_folio(tb));
	return (tb & ~SWP_TB_COUNT_MASK) | __count_to_swp_tb(count);
}

/* Human-readable type name, for dumps and the demo. */
static inline const char *swp_tb_type_name(uint64_t tb)
{
	if (swp_tb_is_null(tb))
		return "free";
	if (swp_tb_is_bad(tb))
		return "bad";
	if (swp_tb_is_shadow(tb))
		return "shadow";
	if (swp_tb_is_folio(tb))
		return "pfn";
	if (swp_tb_is_ptr(tb))
		return "pointer";
	return "invalid";
}

#endif
