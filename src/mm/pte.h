/* SPDX-License-Identifier: MIT */
/*
 * Page table entries of the emulated (and runtime) mm: one 64-bit word per
 * 4 KiB page.
 *
 *   none     0
 *   present  | pfn (52) | .. | excl | dirty | young | write | 1 |
 *   swap     | offset (56) | excl | type (5) | 1 | 0 |
 *
 * A large folio is mapped by a run of present entries with consecutive
 * frame numbers.
 *
 * "excl" on a present entry is the kernel's PageAnonExclusive of the page
 * it maps: the page belongs to this process alone. An exclusive page has
 * exactly one mapping, so the flag can live in that mapping. It is set
 * when a fault gives the process a page of its own (a new zeroed page, a
 * copy, a page proven unshared), cleared on both sides by fork, and
 * moved into the swap entry by try_to_unmap. Only an exclusive page may
 * be mapped writable. "excl" on a swap entry says the page was exclusive
 * when it went out, so that swap-in may map it writable at once.
 */
#ifndef USWAP_MM_PTE_H
#define USWAP_MM_PTE_H

#include <stdbool.h>
#include <stdint.h>

#include <uswap/common.h>

typedef uint64_t pte_t;

#define PTE_PRESENT	0x1ULL
#define PTE_WRITE	0x2ULL
#define PTE_YOUNG	0x4ULL
#define PTE_DIRTY	0x8ULL
#define PTE_EXCL	0x10ULL		/* PageAnonExclusive of the mapped page */
#define PTE_PFN_SHIFT	12

#define PTE_SWAP	0x2ULL		/* with PTE_PRESENT clear */
#define PTE_SWP_TYPE_SHIFT 2
#define PTE_SWP_EXCL	(1ULL << 7)
#define PTE_SWP_OFF_SHIFT 8

_Static_assert(MAX_SWAPFILES <= 32, "swap type fits 5 bits");

/*
 * A page whose data is gone: swapoff could not read it from a failed
 * device (the kernel's poisoned PTE marker in unuse_pte()). Neither
 * present nor swap nor none; every access is -EIO (SIGBUS), zap clears
 * it, fork copies it.
 */
#define PTE_POISON	0x4ULL

static inline bool pte_is_poison(pte_t p)
{
	return p == PTE_POISON;
}

static inline bool pte_none(pte_t p)
{
	return p == 0;
}

static inline bool pte_present(pte_t p)
{
	return p & PTE_PRESENT;
}

static inline bool pte_is_swap(pte_t p)
{
	return !(p & PTE_PRESENT) && (p & PTE_SWAP);
}

static inline pte_t pfn_pte(uint64_t pfn, bool write)
{
	return (pfn << PTE_PFN_SHIFT) | PTE_PRESENT | (write ? PTE_WRITE : 0);
}

static inline uint64_t pte_pfn(pte_t p)
{
	return p >> PTE_PFN_SHIFT;
}

static inline bool pte_write(pte_t p)
{
	return p & PTE_WRITE;
}

/* A present PTE mapping a page exclusively: writable, or reusable by a
 * write fault without a copy. */
static inline pte_t pfn_pte_excl(uint64_t pfn)
{
	return pfn_pte(pfn, true) | PTE_EXCL;
}

static inline bool pte_excl(pte_t p)
{
	return (p & (PTE_PRESENT | PTE_EXCL)) == (PTE_PRESENT | PTE_EXCL);
}

static inline pte_t swp_entry_to_pte(swp_entry_t e, bool exclusive)
{
	return (swp_offset(e) << PTE_SWP_OFF_SHIFT) |
	       ((uint64_t)swp_type(e) << PTE_SWP_TYPE_SHIFT) |
	       (exclusive ? PTE_SWP_EXCL : 0) | PTE_SWAP;
}

static inline swp_entry_t pte_to_swp_entry(pte_t p)
{
	return swp_entry((unsigned int)((p >> PTE_SWP_TYPE_SHIFT) & 0x1f),
			 p >> PTE_SWP_OFF_SHIFT);
}

static inline bool pte_swp_exclusive(pte_t p)
{
	return p & PTE_SWP_EXCL;
}

#endif
