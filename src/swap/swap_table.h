/* SPDX-License-Identifier: MIT */
/*
 * The swap table entry: the whole state of one swap slot in 64 bits.
 *
 *   NULL    |------------------- 0 ------------------|      free slot
 *   Shadow  | COUNT |Z|------ shadow value --------|1|     swapped out
 *   PFN     | COUNT |Z|---------- PFN -----------|10|     cached: a frame holds it
 *   Pointer |----------------- pointer ----------|100|     reserved, unused
 *   Bad     |------------------ 1 ----------------|1000|   header, bad page, tail
 *
 * The top SWP_TB_FLAGS_BITS bits of a shadow or PFN entry are its flags:
 * COUNT, the top SWP_TB_COUNT_BITS bits (USWAP_TB_COUNT_BITS, default 4),
 * and below it Z, the zero flag (SWP_TB_ZERO_FLAG, bit 59 at the default
 * width): the slot's page is all zeros and was never written to the
 * device. Values 0 .. SWP_TB_COUNT_MAX-1 of COUNT are exact;
 * SWP_TB_COUNT_MAX means the real count lives in the cluster's extend
 * table. Count 0 is legal only for a PFN entry (the slot is pinned by the
 * swap cache alone) and for NULL. The constructors take the whole flags
 * value, so that what replaces an entry keeps its Z (shadow <-> PFN).
 *
 * Where COUNT + Z + PFN do not fit in 64 bits (a 22-bit count: 22 + 1 + 42)
 * Z lives in a 512-bit bitmap of the cluster's table instead
 * (SWAP_TABLE_HAS_ZEROFLAG is 0), as the kernel does where the word is short.
 *
 * The shadow value keeps its low marker bit 1 and leaves the flags clear;
 * the workingset code packs its fields below SWP_TB_FLAGS_SHIFT (commit
 * 48dd39b85542, see mm/workingset.h).
 *
 * No code outside this header open-codes these masks. The second half of
 * the file is the table itself: struct swap_table and its accessors,
 * static inline because the hot loops read and write an entry per slot.
 * The table also holds the memory cgroup id of each slot (the kernel's
 * per-cluster swap_memcg_table after phase IV).
 */
#ifndef USWAP_SWAP_TABLE_H
#define USWAP_SWAP_TABLE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "swap/cluster.h"
#include "util/debug.h"
#include "util/lock.h"
#include "util/rcu.h"

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

/* The flags field: COUNT, then Z where the word has room for it. */
#if SWP_TB_COUNT_BITS + 1 + SWP_TB_PFN_BITS <= 64
#define SWAP_TABLE_HAS_ZEROFLAG	1
#define SWP_TB_FLAGS_BITS	(SWP_TB_COUNT_BITS + 1)
#else
#define SWAP_TABLE_HAS_ZEROFLAG	0
#define SWP_TB_FLAGS_BITS	SWP_TB_COUNT_BITS
#endif
#define SWP_TB_FLAGS_SHIFT	(64 - SWP_TB_FLAGS_BITS)
#define SWP_TB_FLAGS_MASK	(~(~0ULL >> SWP_TB_FLAGS_BITS))
/* Z in the flags value (entry >> SWP_TB_FLAGS_SHIFT): its lowest bit. */
#define SWP_TB_FLAGS_ZERO	(SWAP_TABLE_HAS_ZEROFLAG ? 1U : 0U)
#define SWP_TB_ZERO_FLAG	((uint64_t)SWP_TB_FLAGS_ZERO << SWP_TB_FLAGS_SHIFT)

_Static_assert(SWP_TB_COUNT_BITS >= 2,
	       "free, in use and overflow need three count values");
_Static_assert(SWP_TB_COUNT_BITS <= 22, "the count field is at most 22 bits");
_Static_assert(SWAP_CACHE_PFN_BITS + SWP_TB_PFN_MARK_BITS + SWP_TB_FLAGS_BITS <= 64,
	       "PFN + marker + flags must fit in one 64-bit entry");
_Static_assert(SWP_TB_FLAGS_SHIFT + SWP_TB_FLAGS_BITS - SWP_TB_COUNT_BITS == SWP_TB_COUNT_SHIFT,
	       "COUNT is the top of the flags field");
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

/*
 * The flags value of a count and a zero flag (Z is dropped where the word
 * has no room for it: SWAP_TABLE_HAS_ZEROFLAG 0).
 */
static inline unsigned int swp_tb_mk_flags(unsigned int count, bool zero)
{
	uswap_assert(count <= SWP_TB_COUNT_MAX);
	return (count << (SWP_TB_FLAGS_BITS - SWP_TB_COUNT_BITS)) | (zero ? SWP_TB_FLAGS_ZERO : 0);
}

static inline uint64_t __flags_to_swp_tb(unsigned int flags)
{
	uswap_assert(SWP_TB_FLAGS_BITS >= 32 || flags < (1U << SWP_TB_FLAGS_BITS));
	return (uint64_t)flags << SWP_TB_FLAGS_SHIFT;
}

/* A PFN entry for frame @pfn with the flags value @flags (swp_tb_mk_flags). */
static inline uint64_t pfn_to_swp_tb(uint64_t pfn, unsigned int flags)
{
	uswap_assert(pfn < (1ULL << SWAP_CACHE_PFN_BITS));
	return (pfn << SWP_TB_PFN_MARK_BITS) | SWP_TB_PFN_MARK | __flags_to_swp_tb(flags);
}

/*
 * A shadow entry with the flags value @flags. A shadow value is an "XA
 * value": its bit 0 is set (or it is 0, the empty placeholder). Its flags
 * bits must be clear.
 */
static inline uint64_t shadow_to_swp_tb(uint64_t shadow, unsigned int flags)
{
	uswap_assert(!(shadow & SWP_TB_FLAGS_MASK));
	uswap_assert(!shadow || (shadow & SWP_TB_SHADOW_MARK));
	return shadow | SWP_TB_SHADOW_MARK | __flags_to_swp_tb(flags);
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
	return (tb & ~SWP_TB_FLAGS_MASK) >> SWP_TB_PFN_MARK_BITS;
}

static inline uint64_t swp_tb_to_shadow(uint64_t tb)
{
	uswap_assert(swp_tb_is_shadow(tb));
	return tb & ~SWP_TB_FLAGS_MASK;
}

/* The flags value of a shadow or PFN entry (0 for NULL). */
static inline unsigned int swp_tb_get_flags(uint64_t tb)
{
	uswap_assert(swp_tb_is_countable(tb));
	return (unsigned int)(tb >> SWP_TB_FLAGS_SHIFT);
}

/* Whether the entry's Z flag is set (always false without the flag). */
static inline bool swp_tb_is_zero(uint64_t tb)
{
	return (swp_tb_is_shadow(tb) || swp_tb_is_folio(tb)) && (tb & SWP_TB_ZERO_FLAG);
}

/* The same shadow or PFN entry with its Z flag set to @zero. */
static inline uint64_t __swp_tb_mk_zero(uint64_t tb, bool zero)
{
	uswap_assert(swp_tb_is_shadow(tb) || swp_tb_is_folio(tb));
	return zero ? tb | SWP_TB_ZERO_FLAG : tb & ~SWP_TB_ZERO_FLAG;
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

/* ---- shadows ---- */

/*
 * The shadow a lookup hands out for entry @tb: the workingset shadow of a
 * shadow entry, 0 for any other entry and for the empty placeholder (a
 * shadow entry stored with shadow 0, which keeps only its marker bit).
 */
static inline uint64_t swp_tb_get_shadow(uint64_t tb)
{
	uint64_t shadow;

	if (!swp_tb_is_shadow(tb))
		return 0;
	shadow = swp_tb_to_shadow(tb);
	return shadow == SWP_TB_SHADOW_MARK ? 0 : shadow;
}

/* Whether @shadow may be stored in a shadow entry: its flags bits are clear. */
static inline bool shadow_fits_swp_tb(uint64_t shadow)
{
	return !(shadow & SWP_TB_FLAGS_MASK);
}

/*
 * The "XA value" form of a shadow (the kernel's xa_mk_value() and friends):
 * a payload @v shifted up by one with the shadow marker in bit 0. The
 * workingset code packs its fields into @v and keeps the flags bits of
 * the result clear itself (shadow_fits_swp_tb()).
 */
static inline uint64_t shadow_mk_value(uint64_t v)
{
	uswap_assert(!(v >> 63));
	return (v << 1) | SWP_TB_SHADOW_MARK;
}

static inline bool shadow_is_value(uint64_t shadow)
{
	return (shadow & SWP_TB_SHADOW_MARK) != 0;
}

static inline uint64_t shadow_to_value(uint64_t shadow)
{
	return shadow >> 1;
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

/* ---- the table of a cluster ---- */

/*
 * A table may serve another cluster as soon as its own empties (the
 * kernel's "swap_table" cache is SLAB_TYPESAFE_BY_RCU: cluster.c), so a
 * lockless reader may hold a pointer to a table that has moved on.
 * @gen tells it: a table's generation changes each time a cluster takes
 * it, and swap_table_get_rcu() rereads it (a seqcount) to keep only
 * entries read while the table was still @ci's.
 */
struct swap_table {
	_Atomic uint64_t entries[SWAPFILE_CLUSTER];
	/* Memory cgroup of each allocated slot, 0 for none: set when the slot
	 * is allocated, cleared (and uncharged) when it frees, so a table that
	 * leaves its cluster holds only zeros. ci->lock. */
	uint16_t memcg[SWAPFILE_CLUSTER];
#if !SWAP_TABLE_HAS_ZEROFLAG
	uint64_t zero[SWAPFILE_CLUSTER / 64];	/* Z of each slot; ci->lock */
#endif
	_Atomic unsigned long gen;	/* + 1 each time a cluster takes the table */
	union {
		struct rcu_head rcu;		/* on its way back to malloc */
		struct swap_table *next_free;	/* in a table cache (cluster.c) */
	};
};

/*
 * The cluster's table, or NULL. Under ci->lock or in an RCU read-side
 * section. Published with release / read with acquire (rcu_assign_pointer /
 * rcu_dereference), as C11 atomics so that ThreadSanitizer sees them.
 */
static inline struct swap_table *swap_cluster_table(struct swap_cluster_info *ci)
{
	return atomic_load_explicit(&ci->table, memory_order_acquire);
}

/* __swap_table_get() - entry @off. Context: ci->lock held. Return: 0 if no table. */
static inline uint64_t __swap_table_get(struct swap_cluster_info *ci, unsigned int off)
{
	struct swap_table *t;

	uswap_assert_held(&ci->lock);
	uswap_assert(off < SWAPFILE_CLUSTER);
	t = swap_cluster_table(ci);
	if (!t)
		return SWP_TB_NULL;
	return atomic_load_explicit(&t->entries[off], memory_order_relaxed);
}

/*
 * __swap_table_set() - store entry @off. Release: a lockless reader that
 * sees a PFN entry sees the folio's swap fields written before it.
 * Context: ci->lock held, table present.
 */
static inline void __swap_table_set(struct swap_cluster_info *ci, unsigned int off, uint64_t tb)
{
	struct swap_table *t = swap_cluster_table(ci);

	uswap_assert_held(&ci->lock);
	uswap_assert(off < SWAPFILE_CLUSTER && t);
	atomic_store_explicit(&t->entries[off], tb, memory_order_release);
}

/*
 * __swap_table_xchg() - store entry @off and return the one it replaces,
 * with __swap_table_set()'s ordering. Context: ci->lock held, table present.
 */
static inline uint64_t __swap_table_xchg(struct swap_cluster_info *ci, unsigned int off,
					 uint64_t tb)
{
	struct swap_table *t = swap_cluster_table(ci);

	uswap_assert_held(&ci->lock);
	uswap_assert(off < SWAPFILE_CLUSTER && t);
	return atomic_exchange_explicit(&t->entries[off], tb, memory_order_acq_rel);
}

/*
 * swap_table_get_rcu() - entry @off without the lock, for a caller that
 * goes on to use what the entry names (a PFN's folio) in the same read
 * section. The entry is one that @ci's slot held: read while the table was
 * @ci's, or NULL (the table left @ci empty). A table taken by another
 * cluster in between bumps its generation, and the read is tried again.
 *
 *   reader                              writer (cluster emptied, refilled)
 *   t = ci->table
 *   g = t->gen                          ci->table = NULL   (ci empty)
 *   ci->table == t ? (else again)       t->gen++ (release), Y->table = t
 *   tb = t->entries[off]   (acquire)    t->entries[off] = Y's entry (release)
 *   t->gen == g ? (else again)
 *
 * If tb is Y's entry, the acquire that read it sees the increment made
 * before it, and the last check fails.
 * Context: RCU read lock held (the table's memory stays a table until a
 * grace period after it leaves the caches). Return: 0 if no table.
 */
static inline uint64_t swap_table_get_rcu(struct swap_cluster_info *ci, unsigned int off)
{
	struct swap_table *t;
	unsigned long gen;
	uint64_t tb;

	uswap_assert(uswap_rcu_read_held());
	uswap_assert(off < SWAPFILE_CLUSTER);
	for (;;) {
		t = swap_cluster_table(ci);
		if (!t)
			return SWP_TB_NULL;
		gen = atomic_load_explicit(&t->gen, memory_order_acquire);
		if (swap_cluster_table(ci) != t)
			continue;
		tb = atomic_load_explicit(&t->entries[off], memory_order_acquire);
		if (atomic_load_explicit(&t->gen, memory_order_relaxed) == gen)
			return tb;
	}
}

/*
 * swap_table_read() - entry @off of table @t, which the caller knows stays
 * its cluster's (a locked cached folio on the slots pins the cluster).
 * Context: RCU read lock held. Return: the entry.
 */
static inline uint64_t swap_table_read(struct swap_table *t, unsigned int off)
{
	uswap_assert(uswap_rcu_read_held());
	uswap_assert(off < SWAPFILE_CLUSTER);
	return atomic_load_explicit(&t->entries[off], memory_order_acquire);
}

/*
 * swap_table_get() - entry @off without the lock: a snapshot, whose PFN
 * (if any) may be stale and must not be turned into a folio.
 * Context: takes the RCU read lock. Return: 0 if no table.
 */
static inline uint64_t swap_table_get(struct swap_cluster_info *ci, unsigned int off)
{
	uint64_t tb;

	uswap_rcu_read_lock();
	tb = swap_table_get_rcu(ci, off);
	uswap_rcu_read_unlock();
	return tb;
}

#endif
