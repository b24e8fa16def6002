/* SPDX-License-Identifier: MIT */
/*
 * A cluster: 512 slots with a lock, a usage count, an order, a list flag,
 * an RCU-protected swap table (swap/swap_table.h) and, while some slot's
 * count overflows, an extend table. The functions on clusters are in
 * cluster.c, declared in swap_internal.h.
 */
#ifndef USWAP_SWAP_CLUSTER_H
#define USWAP_SWAP_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include <uswap/common.h>
#include "util/lock.h"

_Static_assert(SWAPFILE_CLUSTER == 512, "clusters are 512 slots");
_Static_assert((1 << (SWAP_NR_ORDERS - 1)) == SWAPFILE_CLUSTER,
	       "the largest folio order fills one cluster");

/* Cluster list flags: the flag always names the list the cluster is on. */
enum {
	CLUSTER_FLAG_NONE = 0,	/* off-list: isolated by an allocator, or discarding */
	CLUSTER_FLAG_FREE,
	CLUSTER_FLAG_NONFULL,
	CLUSTER_FLAG_FRAG,
	CLUSTER_FLAG_FULL,
	CLUSTER_FLAG_DISCARD,
	CLUSTER_FLAG_MAX,
};
#define CLUSTER_FLAG_USABLE CLUSTER_FLAG_FRAG	/* flags <= this may be allocated from */

struct swap_table;

/*
 * Invariants (ci->lock held):
 *   count == number of non-NULL entries (allocated + bad);
 *   table == NULL  <=>  count == 0 and the cluster is free (or never used);
 *   extend_table != NULL  =>  some entry's count field is SWP_TB_COUNT_MAX;
 *   extend_table[i] != 0  <=>  entry i's count field is SWP_TB_COUNT_MAX,
 *     and then extend_table[i] is the slot's real count (>= COUNT_MAX);
 *   owner != 0  =>  count < SWAPFILE_CLUSTER (not full; freeing clears it).
 */
struct swap_cluster_info {
	struct uswap_spinlock lock;	/* protects all but the list links */
	uint16_t count;			/* non-NULL entries */
	uint8_t flags;			/* CLUSTER_FLAG_*; written under ci->lock + si->lock */
	uint8_t order;			/* folio order it serves; 0 when free */
	uint32_t owner;			/* token of the thread whose current cluster
					 * this is (swap_alloc.c), or 0 */
	_Atomic(struct swap_table *) table;	/* RCU pointer: swap_cluster_table() */
	unsigned int *extend_table;	/* SWAPFILE_CLUSTER overflow counts, then
					 * [EXTEND_NR]: how many are non-zero */
};
#if USWAP_DEBUG < 2
/* lock 4, count 2, flags 1, order 1, owner 4, hole 4, table 8, extend 8;
 * debug builds add the lock's owner. */
_Static_assert(sizeof(struct swap_cluster_info) == 32, "a cluster is 32 bytes");
#endif

/*
 * Static metadata: 32 bytes of cluster and 8 of list links per 512 slots,
 * 40 bytes or 0.078 bytes a slot (uswap_swap_static_metadata_bytes()).
 * The kernel's cluster is 48 bytes (lock 4, count 2, flags 1, order 1,
 * list 16, table, extend table and memcg table pointers 8 each). The
 * memcg ids here live in struct swap_table, not behind a pointer of their
 * own; counting such a pointer, ours would be 48 bytes too.
 *
 * Two clusters share a line. Threads in neighbouring clusters (the free
 * list hands out neighbours in turn) then write one line with their
 * locks; bench_alloc's two-thread rates did not move with it, nor with a
 * layout that put neighbours on different lines.
 *
 * The kernel's ci->list is kept apart from the clusters in
 * si->cluster_list[] and linked by index: 8 bytes a cluster instead of a
 * 16-byte list_head. Entry n < nr_clusters is cluster n's links; entry
 * nr_clusters + SWAP_LIST_* is a list head, in si->cluster_heads[] on
 * si->lock's line, and a list is named by its head's index
 * (free_clusters(si) and the others). Apart, the links are written only
 * under si->lock, and a list move does not write the lines of its list
 * neighbours' locks (a neighbour is often another thread's current
 * cluster). The lists, their order and their locking are the kernel's;
 * the helpers (cluster_list_*() in swap_internal.h) are list.h's on
 * indices.
 */
struct swap_cluster_link {
	uint32_t prev, next;	/* entry indices in si->cluster_list[]; si->lock */
};
/* The heads in si->cluster_heads[]: the lists every allocation of order
 * 0 or a whole cluster moves clusters on come first. */
#define SWAP_LIST_FREE		0
#define SWAP_LIST_FULL		1
#define SWAP_LIST_NONFULL(o)	(2 + 2 * (o))
#define SWAP_LIST_FRAG(o)	(3 + 2 * (o))
#define SWAP_LIST_DISCARD	(2 + 2 * SWAP_NR_ORDERS)
#define SWAP_NR_CLUSTER_LISTS	(3 + 2 * SWAP_NR_ORDERS)
_Static_assert(sizeof(struct swap_cluster_link) == 8, "two 32-bit links per cluster");

/* The cluster array: line-aligned and whole lines (aligned_alloc wants a
 * multiple of the alignment), so that no 32-byte cluster straddles two. */
#define SWAP_CLUSTER_ARRAY_ALIGN	64
static inline size_t swap_cluster_array_bytes(uint64_t nr_clusters)
{
	size_t n = (size_t)nr_clusters * sizeof(struct swap_cluster_info);

	return (n + SWAP_CLUSTER_ARRAY_ALIGN - 1) & ~(size_t)(SWAP_CLUSTER_ARRAY_ALIGN - 1);
}

/* The extend table's last word counts its non-zero entries, so that
 * "can it be freed?" is one load, not a 512-entry scan on every put. */
#define EXTEND_NR SWAPFILE_CLUSTER

#endif
