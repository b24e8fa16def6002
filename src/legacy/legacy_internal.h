/* SPDX-License-Identifier: MIT */
/*
 * The old swap_map design (pre swap-table-phase-II kernels), private view.
 *
 * One byte per slot, si->max bytes allocated at swapon:
 *   0             free
 *   1..0x3e       count (SWAP_MAP_MAX 62)
 *   0x3f          SWAP_MAP_BAD (header, bad page, cluster tail)
 *   | 0x40        SWAP_HAS_CACHE: a folio holds the slot, in the swap cache
 *                 or being read around it (bypass); also the bit lock that
 *                 decides which racing swap-in reads the slot
 *   | 0x80        COUNT_CONTINUED: higher digits live in continuation pages
 *
 * Continuation: each 4096-entry page of the map has a chain of 4096-byte
 * continuation pages, one byte per entry of that map page: a 7-bit digit
 * (SWAP_CONT_MAX 0x7f) plus its own 0x80 "higher digits follow" flag.
 *   count = low + 63 * (d1 + 128 * d2 + 128^2 * d3 ...)
 * The flag of a byte is set iff some higher digit is non-zero, so a count
 * has exactly one representation. Pages are added on demand and freed only
 * at swapoff.
 *
 * Beside the map, per slot: a memcg id (swap_cgroup array) and a zero bit
 * (zeromap), static as the map (legacy_ops.c).
 *
 * The swap cache (phase I): the cluster's swap table word of a slot holds
 * the cached folio's PFN (pfn_to_swp_tb(pfn, 0)), a workingset shadow
 * (shadow_to_swp_tb(shadow, 0)), NULL (not cached, no shadow; also free),
 * or SWP_TB_BAD. Table words carry no count: counts live in the map only.
 *
 * Invariants (ci->lock held, for the slots of ci):
 *   ci->count == number of slots with map != 0 (allocated + bad);
 *   map == SWAP_MAP_BAD  <=>  word == SWP_TB_BAD;
 *   word is a PFN  =>  map & SWAP_HAS_CACHE;
 *   map == 0  =>  word == NULL (shadows are cleared when a slot is freed);
 *   a slot with count 0 is allocated only while SWAP_HAS_CACHE is set.
 *
 * Lock order: folio lock -> ci->lock -> li->cont_lock. Map bytes are
 * written under ci->lock and read locklessly (relaxed atomics, the kernel's
 * READ_ONCE) where the old code read them without a lock.
 */
#ifndef USWAP_LEGACY_INTERNAL_H
#define USWAP_LEGACY_INTERNAL_H

#include <stdatomic.h>

#include "swap/swap_internal.h"

#define SWAP_MAP_MAX	0x3e	/* max count in the map byte */
#define SWAP_MAP_BAD	0x3f
#define SWAP_HAS_CACHE	0x40
#define COUNT_CONTINUED	0x80
#define SWAP_CONT_MAX	0x7f	/* max digit in a continuation byte */
#define SWAP_COUNT_MASK	0x3f	/* the count part of a map byte */

#define LEGACY_MAP_PAGE	4096	/* entries per map page = bytes per continuation page */
#define LEGACY_COUNT_LIMIT 0x7fffffffL	/* as the table design: -EOVERFLOW beyond */

_Static_assert(SWAP_MAP_MAX + 1 == 63, "the map byte counts in base 63");
_Static_assert(SWAP_CONT_MAX + 1 == 128, "a continuation digit is 7 bits");
_Static_assert(LEGACY_MAP_PAGE % SWAPFILE_CLUSTER == 0, "a map page holds whole clusters");

/* A continuation page: one digit byte per entry of its map page. */
struct legacy_cont_page {
	unsigned char digit[LEGACY_MAP_PAGE];
	struct legacy_cont_page *next;	/* the kernel's page->lru; cont_lock */
};

struct legacy_info {
	_Atomic unsigned char *swap_map;	/* si->max bytes; ci->lock for writes */
	unsigned long nr_map_pages;		/* ceil(max / LEGACY_MAP_PAGE) */
	struct uswap_spinlock cont_lock;	/* cont_heads and every digit */
	struct legacy_cont_page **cont_heads;	/* nr_map_pages chains, allocated lazily */
	_Atomic long nr_cont_pages;
	_Atomic bool has_cont_heads;		/* cont_heads allocated (for stat) */
	_Atomic uint64_t bypass_swapins, bypass_retries, cache_retries;
	/* What the kernel before the table's phase IV allocated beside the
	 * map at swapon: the memcg id of each slot (swap_cgroup, 2 bytes) and
	 * the zero map (a bit per slot: the page is all zeros, not written).
	 * Both si->max long, written under ci->lock. */
	uint16_t *swap_cgroup;
	uint64_t *zeromap;
};

extern const struct swap_design_ops swap_legacy_ops;

static inline struct legacy_info *legacy_info(struct swap_info_struct *si)
{
	return si->design_priv;
}

static inline unsigned char legacy_map_get(struct swap_info_struct *si, uint64_t offset)
{
	return atomic_load_explicit(&legacy_info(si)->swap_map[offset], memory_order_relaxed);
}

/* Context: ci->lock of @offset held. */
static inline void legacy_map_set(struct swap_info_struct *si, uint64_t offset, unsigned char v)
{
	atomic_store_explicit(&legacy_info(si)->swap_map[offset], v, memory_order_relaxed);
}

/* The kernel's swap_count(): everything but SWAP_HAS_CACHE. */
static inline unsigned char swap_count(unsigned char ent)
{
	return ent & (unsigned char)~SWAP_HAS_CACHE;
}

/* ---- legacy_map.c ---- */
long __legacy_get_count(struct swap_info_struct *si, struct swap_cluster_info *ci,
			uint64_t offset);
int legacy_dup(struct swap_info_struct *si, uint64_t offset, unsigned int nr, bool direct);
int legacy_folio_put(struct swap_info_struct *si, struct folio *folio, uint64_t offset,
		     unsigned int nr);
int legacy_put_direct(struct swap_info_struct *si, uint64_t offset, uint64_t nr);
long legacy_swapcount(struct swap_info_struct *si, uint64_t offset);
bool legacy_swapped(struct swap_info_struct *si, uint64_t offset);
bool legacy_maybe_swapped(struct swap_info_struct *si, struct folio *folio);
void __legacy_free_entries(struct swap_info_struct *si, struct swap_cluster_info *ci,
			   uint64_t offset, unsigned int nr);
void __legacy_put_cache(struct swap_info_struct *si, struct swap_cluster_info *ci,
			uint64_t offset, unsigned int nr);
int __legacy_swapcache_prepare(struct swap_info_struct *si, struct swap_cluster_info *ci,
			       uint64_t offset, unsigned int nr);
void legacy_swapcache_clear(struct swap_info_struct *si, uint64_t offset, unsigned int nr);
void legacy_free_cont_pages(struct legacy_info *li);
void legacy_check_cluster(struct swap_info_struct *si, struct swap_cluster_info *ci);

/* ---- legacy_cache.c ---- */
void __legacy_cache_add(struct swap_info_struct *si, struct swap_cluster_info *ci,
			struct folio *folio, swp_entry_t entry, uint64_t *shadowp);
void __legacy_cache_del(struct swap_info_struct *si, struct swap_cluster_info *ci,
			struct folio *folio, uint64_t shadow);
bool legacy_scan_range(struct swap_info_struct *si, struct swap_cluster_info *ci,
		       unsigned int off, unsigned int nr, bool *need_reclaim);
void legacy_alloc_fill(struct swap_info_struct *si, struct swap_cluster_info *ci,
		       struct folio *folio, unsigned int off, unsigned int order);
bool legacy_cache_only(struct swap_info_struct *si, struct swap_cluster_info *ci,
		       unsigned int off);
int legacy_free_swap(struct swap_info_struct *si, struct folio *folio);
int legacy_cache_add(struct swap_info_struct *si, struct folio *folio, swp_entry_t entry,
		     uint64_t *shadowp);
int legacy_cache_del(struct swap_info_struct *si, struct folio *folio, uint64_t shadow);
struct folio *legacy_cache_get(struct swap_info_struct *si, swp_entry_t entry);
uint64_t legacy_cache_shadow(struct swap_info_struct *si, swp_entry_t entry);
int legacy_try_reclaim(struct swap_info_struct *si, uint64_t offset, bool anyway);
int legacy_cache_replace(struct swap_info_struct *si, struct folio *old, struct folio *new,
			 swp_entry_t entry);
int legacy_peek(struct swap_info_struct *si, uint64_t offset, uint64_t *tb, long *count);

/* ---- legacy_swapin.c ---- */
int legacy_swapin(struct swap_info_struct *si, swp_entry_t entry, struct uswap_frame_pool *pool,
		  unsigned long orders, struct folio **out, struct uswap_swapin_info *info);
int legacy_swapin_lock(struct swap_info_struct *si, struct folio *folio, swp_entry_t entry);

#endif
