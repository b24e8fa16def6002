/* SPDX-License-Identifier: MIT */
/*
 * Workingset shadows (the kernel's mm/workingset.c, anon side, after commit 48dd39b85542
 * "mm/workingset: leave highest bits empty for anon shadow").
 *
 * When a folio is evicted, its slots keep a shadow: the eviction "time"
 * (a counter of evictions and activations), its memcg id, its node and
 * whether it was in the workingset. Packed LSB first:
 *
 *   | eviction | memcg id (16) | node (NODES_SHIFT) | workingset (1) | 1 |
 *
 * For anonymous pages the eviction field is narrowed by SWP_TB_FLAGS_BITS
 * so that the top of the shadow is free for the swap table's flags (count
 * and zero flag). When the counter has more significant bits than the
 * field, it is stored in
 * buckets of 2^bucket_order evictions, sized from the amount of memory.
 *
 * On refault, distance = now - eviction; the page was "recent" if the
 * distance is within the workingset size, and is then activated at once.
 */
#ifndef USWAP_MM_WORKINGSET_H
#define USWAP_MM_WORKINGSET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WS_NODES_SHIFT		6
#define WS_MEMCG_ID_SHIFT	16
#define WS_WORKINGSET_SHIFT	1
/* Bits below the eviction counter: the value marker, workingset, node, memcg. */
#define WS_EVICTION_SHIFT	(1 + WS_WORKINGSET_SHIFT + WS_NODES_SHIFT + WS_MEMCG_ID_SHIFT)

struct uswap_workingset {
	_Atomic uint64_t nonresident_age;	/* evictions + activations */
	unsigned int bucket_order;		/* anon; from the memory size */
	uint16_t memcg_id;
	uint16_t node;
};

/* Eviction-counter bits an anon shadow can hold. */
unsigned int workingset_anon_timestamp_bits(void);
/* Bucket order for @total_pages of memory (fls(total - 1) - timestamp bits). */
unsigned int workingset_bucket_order(size_t total_pages);

void workingset_init(struct uswap_workingset *ws, size_t total_pages, uint16_t memcg_id,
		     uint16_t node);

/* Pack / unpack an anon shadow; @eviction is the raw counter value. */
uint64_t workingset_pack_shadow(uint16_t memcg_id, uint16_t node, uint64_t eviction,
				bool workingset, unsigned int bucket_order);
void workingset_unpack_shadow(uint64_t shadow, uint16_t *memcg_id, uint16_t *node,
			      uint64_t *eviction, bool *workingset, unsigned int bucket_order);

/* workingset_eviction() - the shadow for a folio of @nr pages being evicted now. */
uint64_t workingset_eviction(struct uswap_workingset *ws, bool workingset, unsigned long nr);
/* Activations age the non-resident clock too. */
void workingset_age_nonresident(struct uswap_workingset *ws, unsigned long nr);
/*
 * workingset_test_recent() - was the page evicted within @workingset_size
 * pages of the clock? Unknown memcg ids are never recent.
 */
bool workingset_test_recent(struct uswap_workingset *ws, uint64_t shadow,
			    unsigned long workingset_size, bool *was_workingset);

#endif
