/* SPDX-License-Identifier: MIT */
#include "mm/workingset.h"
#include "swap/swap_table.h"

#define WS_EVICTION_SHIFT_ANON	(WS_EVICTION_SHIFT + SWP_TB_FLAGS_BITS)
#define WS_EVICTION_MASK_ANON	(~0ULL >> WS_EVICTION_SHIFT_ANON)

_Static_assert(WS_EVICTION_SHIFT_ANON < 64, "an anon shadow needs eviction bits");

/** workingset_anon_timestamp_bits() - eviction bits left in an anon shadow. */
unsigned int workingset_anon_timestamp_bits(void)
{
	return 64 - WS_EVICTION_SHIFT_ANON;
}

static unsigned int fls64(uint64_t x)
{
	return x ? 64 - (unsigned int)__builtin_clzll(x) : 0;
}

/** workingset_bucket_order() - see workingset.h. */
unsigned int workingset_bucket_order(size_t total_pages)
{
	unsigned int max_order = fls64(total_pages ? total_pages - 1 : 0);
	unsigned int bits = workingset_anon_timestamp_bits();

	return max_order > bits ? max_order - bits : 0;
}

/** workingset_init() - a clock for memory of @total_pages pages. */
void workingset_init(struct uswap_workingset *ws, size_t total_pages, uint16_t memcg_id,
		     uint16_t node)
{
	atomic_init(&ws->nonresident_age, 0);
	ws->bucket_order = workingset_bucket_order(total_pages);
	ws->memcg_id = memcg_id;
	ws->node = node & ((1U << WS_NODES_SHIFT) - 1);
}

/** workingset_pack_shadow() - see workingset.h. Context: pure. */
uint64_t workingset_pack_shadow(uint16_t memcg_id, uint16_t node, uint64_t eviction,
				bool workingset, unsigned int bucket_order)
{
	uint64_t v = (eviction >> bucket_order) & WS_EVICTION_MASK_ANON;

	v = (v << WS_MEMCG_ID_SHIFT) | memcg_id;
	v = (v << WS_NODES_SHIFT) | (node & ((1U << WS_NODES_SHIFT) - 1));
	v = (v << WS_WORKINGSET_SHIFT) | workingset;
	/* The value marker: bit 0, as a swap table shadow entry wants. */
	return shadow_mk_value(v);
}

/** workingset_unpack_shadow() - see workingset.h. Context: pure. */
void workingset_unpack_shadow(uint64_t shadow, uint16_t *memcg_id, uint16_t *node,
			      uint64_t *eviction, bool *workingset, unsigned int bucket_order)
{
	uint64_t v = shadow_to_value(shadow);

	*workingset = v & 1;
	v >>= WS_WORKINGSET_SHIFT;
	*node = (uint16_t)(v & ((1U << WS_NODES_SHIFT) - 1));
	v >>= WS_NODES_SHIFT;
	*memcg_id = (uint16_t)(v & 0xffff);
	v >>= WS_MEMCG_ID_SHIFT;
	*eviction = (v & WS_EVICTION_MASK_ANON) << bucket_order;
}

/** workingset_age_nonresident() - advance the clock by @nr. Lockless. */
void workingset_age_nonresident(struct uswap_workingset *ws, unsigned long nr)
{
	atomic_fetch_add_explicit(&ws->nonresident_age, nr, memory_order_relaxed);
}

/** workingset_eviction() - see workingset.h. Lockless. */
uint64_t workingset_eviction(struct uswap_workingset *ws, bool workingset, unsigned long nr)
{
	uint64_t eviction = atomic_load_explicit(&ws->nonresident_age, memory_order_relaxed);

	workingset_age_nonresident(ws, nr);
	return workingset_pack_shadow(ws->memcg_id, ws->node, eviction, workingset,
				      ws->bucket_order);
}

/** workingset_test_recent() - see workingset.h. Lockless. */
bool workingset_test_recent(struct uswap_workingset *ws, uint64_t shadow,
			    unsigned long workingset_size, bool *was_workingset)
{
	uint64_t eviction, now, distance;
	uint16_t memcg, node;
	bool ws_bit;

	if (!shadow_is_value(shadow))
		return false;
	workingset_unpack_shadow(shadow, &memcg, &node, &eviction, &ws_bit, ws->bucket_order);
	if (was_workingset)
		*was_workingset = ws_bit;
	if (memcg != ws->memcg_id)
		return false;
	now = atomic_load_explicit(&ws->nonresident_age, memory_order_relaxed);
	/*
	 * The difference is taken in buckets, within the field's width, then
	 * scaled back to pages. The kernel masks the page difference with the
	 * field's mask instead, which truncates distances longer than the
	 * field holds when buckets are in use; both agree below that.
	 */
	distance = ((now >> ws->bucket_order) - (eviction >> ws->bucket_order)) &
		   WS_EVICTION_MASK_ANON;
	return (distance << ws->bucket_order) <= workingset_size;
}
