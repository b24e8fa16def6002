/* SPDX-License-Identifier: MIT */
/*
 * Swap counts: the count field of a table entry, and the cluster's extend
 * table once a count reaches SWP_TB_COUNT_MAX (commit a3e0dc337cc4, "mm,
 * swap: use the swap table to track the swap count").
 *
 * In-table values 0 .. COUNT_MAX-1 are exact. Going from COUNT_MAX-1 up
 * needs the extend table: extend[slot] takes the real count and the entry
 * says COUNT_MAX. Coming down to COUNT_MAX-1, extend[slot] goes back to 0.
 */
#include <limits.h>
#include <stdlib.h>

#include "swap/swap_internal.h"
#include "util/alloc.h"

/**
 * __swap_cluster_get_count() - exact count of slot @off.
 * Context: ci->lock held. Return: count, or -EINVAL for a bad entry.
 */
long __swap_cluster_get_count(struct swap_cluster_info *ci, unsigned int off)
{
	uint64_t tb = __swap_table_get(ci, off);
	unsigned int c;

	if (!swp_tb_is_countable(tb))
		return -EINVAL;
	c = __swp_tb_get_count(tb);
	if (c == SWP_TB_COUNT_MAX) {
		uswap_assert(ci->extend_table && ci->extend_table[off] >= SWP_TB_COUNT_MAX);
		return ci->extend_table[off];
	}
	return c;
}

/**
 * __swap_cluster_dup_entry() - count + 1 on slot @off.
 * Context: ci->lock held.
 * Return: 0; -EINVAL (bad or uncountable), -ENOENT (count 0 and not cached:
 * only the swap cache may take a slot from 0), -ENOMEM (needs an extend
 * table the cluster does not have), -EOVERFLOW.
 */
int __swap_cluster_dup_entry(struct swap_cluster_info *ci, unsigned int off)
{
	uint64_t tb = __swap_table_get(ci, off);
	unsigned int c;

	if (!swp_tb_is_countable(tb))
		return -EINVAL;
	c = __swp_tb_get_count(tb);
	if (!c && !swp_tb_is_folio(tb))
		return -ENOENT;
	if (c < SWP_TB_COUNT_MAX - 1) {
		__swap_table_set(ci, off, __swp_tb_mk_count(tb, c + 1));
	} else if (c == SWP_TB_COUNT_MAX - 1) {
		if (!ci->extend_table)
			return -ENOMEM;
		ci->extend_table[off] = SWP_TB_COUNT_MAX;
		ci->extend_table[EXTEND_NR]++;
		__swap_table_set(ci, off, __swp_tb_mk_count(tb, SWP_TB_COUNT_MAX));
	} else {
		if (ci->extend_table[off] >= INT_MAX)
			return -EOVERFLOW;
		ci->extend_table[off]++;
	}
	return 0;
}

/**
 * __swap_cluster_put_entry() - count - 1 on slot @off, whose count is >= 1.
 * Does not free the slot or the extend table.
 * Context: ci->lock held.
 */
void __swap_cluster_put_entry(struct swap_cluster_info *ci, unsigned int off)
{
	uint64_t tb = __swap_table_get(ci, off);
	unsigned int c = __swp_tb_get_count(tb);

	uswap_assert(c >= 1);
	if (c == SWP_TB_COUNT_MAX) {
		if (--ci->extend_table[off] == SWP_TB_COUNT_MAX - 1) {
			ci->extend_table[off] = 0;
			ci->extend_table[EXTEND_NR]--;
			__swap_table_set(ci, off, __swp_tb_mk_count(tb, SWP_TB_COUNT_MAX - 1));
		}
	} else {
		__swap_table_set(ci, off, __swp_tb_mk_count(tb, c - 1));
	}
}

/*
 * Tests that include this file may run code in the window where
 * swap_extend_table_alloc() has the cluster unlocked.
 */
#ifndef swap_extend_alloc_unlocked_hook
#define swap_extend_alloc_unlocked_hook(si, ci, off) do { } while (0)
#endif

/*
 * Attach an extend table to @ci for slot @off, whose count field is
 * COUNT_MAX - 1, allocated with the cluster unlocked. Only the slot is
 * pinned across the window; everything else may change meanwhile:
 *
 *   CPU A: dup(off), count MAX-1      CPU B
 *   no table: unlock, calloc
 *                                     put(off): count MAX-2
 *                                     (or dup of another slot: attaches
 *                                      a table of its own)
 *   relock
 *
 * So after relocking, ours is attached only if the cluster still has no
 * table and @off still needs one; otherwise it is dropped (an empty table
 * left attached would break "extend_table != NULL => some slot overflows"
 * until the next put of the cluster). The caller retries @off either way.
 * Context: ci->lock held on entry and exit, dropped inside.
 * Return: 0 (retry the slot), -ENOMEM.
 */
static int swap_extend_table_alloc(struct swap_info_struct *si, struct swap_cluster_info *ci,
				   unsigned int off)
{
	unsigned int *ext;

	uswap_assert_held(&ci->lock);
	swap_cluster_unlock(ci);
	ext = uswap_calloc(SWAPFILE_CLUSTER + 1, sizeof(*ext));
	swap_extend_alloc_unlocked_hook(si, ci, off);
	uswap_spin_lock(&ci->lock);
	if (ci->extend_table ||
	    swp_tb_get_count(__swap_table_get(ci, off)) != (int)SWP_TB_COUNT_MAX - 1) {
		/* Attached by someone else, or no longer needed by @off. */
		free(ext);
		return 0;
	}
	if (!ext)
		return -ENOMEM;
	ci->extend_table = ext;
	atomic_fetch_add_explicit(&si->nr_extend_tables, 1, memory_order_relaxed);
	return 0;
}

/**
 * swap_dup_entries_cluster() - count + 1 on @nr slots from @offset, all in
 * one cluster. @direct: every slot must already have a count (fork);
 * otherwise the slots belong to a locked swap-cache folio.
 * Context: takes ci->lock; the caller pins the slots (folio lock, or the
 * lock of a container holding a reference).
 * Return: 0, or the first error with every count as it was.
 */
int swap_dup_entries_cluster(struct swap_info_struct *si, uint64_t offset, unsigned int nr,
			     bool direct)
{
	unsigned int off = offset % SWAPFILE_CLUSTER, i;
	struct swap_cluster_info *ci;
	int err = 0;

	uswap_assert(off + nr <= SWAPFILE_CLUSTER);
	ci = swap_cluster_lock(si, offset);
	for (i = 0; i < nr; i++) {
		if (direct) {
			long c = __swap_cluster_get_count(ci, off + i);

			if (c <= 0) {
				err = c < 0 ? (int)c : -ENOENT;
				break;
			}
		}
		err = __swap_cluster_dup_entry(ci, off + i);
		if (err == -ENOMEM) {
			/* The slots are pinned, so they survive the unlocked window;
			 * retry the same slot whatever happened meanwhile. */
			err = swap_extend_table_alloc(si, ci, off + i);
			if (!err) {
				i--;
				continue;
			}
		}
		if (err)
			break;
	}
	if (err) {
		while (i--)
			__swap_cluster_put_entry(ci, off + i);
		swap_cluster_try_free_extend(si, ci);
		uswap_dump_slot("dup failed", si, offset);
	}
	if (USWAP_DEBUG_WALKS)
		uswap_check_cluster(si, ci);
	swap_cluster_unlock(ci);
	return err;
}

/**
 * __swap_cluster_free_entries() - @nr slots from @off, each with count 0 and
 * not cached, become free; the cluster moves to the list its usage calls for.
 * Context: ci->lock held.
 */
void __swap_cluster_free_entries(struct swap_info_struct *si, struct swap_cluster_info *ci,
				 unsigned int off, unsigned int nr)
{
	unsigned int i;

	uswap_assert_held(&ci->lock);
	uswap_assert(ci->count >= nr);
	for (i = 0; i < nr; i++) {
		uswap_assert(!ci->extend_table || !ci->extend_table[off + i]);
		__swap_table_set(ci, off + i, SWP_TB_NULL);
	}
	ci->count -= nr;
	swap_range_free(si, cluster_offset(si, ci) + off, nr);
	if (!ci->count)
		free_cluster(si, ci);
	else
		partial_free_cluster(si, ci);
}

/*
 * Check that every slot of [off, off+nr) in a locked cluster has a count.
 * Return: 0, -EINVAL (bad entry), -ENOENT (count 0).
 */
static int swap_check_counted(struct swap_cluster_info *ci, unsigned int off, unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < nr; i++) {
		long c = __swap_cluster_get_count(ci, off + i);

		if (c < 0)
			return (int)c;
		if (!c)
			return -ENOENT;
	}
	return 0;
}

/*
 * Drop one reference from each slot of [offset, offset+nr) in one cluster.
 * Uncached slots reaching 0 are freed in runs; cached ones reaching 0 are
 * reported in @reclaim (a bitmap over the cluster) for the caller to try.
 */
static void swap_put_entries_cluster(struct swap_info_struct *si, struct swap_cluster_info *ci,
				     unsigned int off, unsigned int nr, uint64_t *reclaim)
{
	unsigned int i, run = 0;

	for (i = 0; i < nr; i++) {
		uint64_t tb = __swap_table_get(ci, off + i);

		if (__swp_tb_get_count(tb) == 1 && !swp_tb_is_folio(tb)) {
			/* Its last reference: free with its neighbours in one go. */
			__swap_cluster_put_entry(ci, off + i);
			run++;
			continue;
		}
		if (run) {
			__swap_cluster_free_entries(si, ci, off + i - run, run);
			run = 0;
		}
		__swap_cluster_put_entry(ci, off + i);
		if (swp_tb_is_folio(tb) && __swp_tb_get_count(tb) == 1)
			reclaim[(off + i) / 64] |= 1ULL << ((off + i) % 64);
	}
	if (run)
		__swap_cluster_free_entries(si, ci, off + nr - run, run);
	swap_cluster_try_free_extend(si, ci);
}

/**
 * swap_table_put_direct() - swap_put_entries_direct() on a table device:
 * one reference less on each slot of [@offset, @offset + @nr), a range in
 * the device. The whole range is checked first (cluster by cluster, each
 * under its lock), so that a wrong call changes nothing. A concurrent
 * misuse that drops the same references between the check and the put is
 * caught again per cluster. Slots left held by the cache alone are
 * reclaimed if their folio is unmapped.
 * Context: device pinned; takes ci->lock per cluster, then trylocks folios.
 * Return: 0, -ENOENT (a count is 0), -EINVAL (a bad slot).
 */
int swap_table_put_direct(struct swap_info_struct *si, uint64_t offset, uint64_t nr)
{
	uint64_t end = offset + nr, o;
	int err = 0;

	for (o = offset; o < end;) {
		unsigned int off = o % SWAPFILE_CLUSTER;
		unsigned int n = (unsigned int)USWAP_MIN(end - o, (uint64_t)(SWAPFILE_CLUSTER - off));
		struct swap_cluster_info *ci = swap_cluster_lock(si, o);

		err = swap_check_counted(ci, off, n);
		swap_cluster_unlock(ci);
		if (err) {
			uswap_dump_slot("put of an unreferenced slot", si, o);
			return err;
		}
		o += n;
	}
	for (o = offset; o < end;) {
		unsigned int off = o % SWAPFILE_CLUSTER, i;
		unsigned int n = (unsigned int)USWAP_MIN(end - o, (uint64_t)(SWAPFILE_CLUSTER - off));
		uint64_t reclaim[SWAPFILE_CLUSTER / 64] = { 0 };
		struct swap_cluster_info *ci = swap_cluster_lock(si, o);

		err = swap_check_counted(ci, off, n);
		if (!err)
			swap_put_entries_cluster(si, ci, off, n, reclaim);
		if (USWAP_DEBUG_WALKS)
			uswap_check_cluster(si, ci);
		swap_cluster_unlock(ci);
		if (err)
			break;
		/* Cache-only slots now: free them if their folio is unmapped. */
		for (i = off; i < off + n; i++)
			if (reclaim[i / 64] & (1ULL << (i % 64)))
				__try_to_reclaim_swap(si, o - off + i, false);
		o += n;
	}
	return err;
}

/**
 * swap_table_swapcount() - swp_swapcount() on a table device.
 * Context: device pinned; takes ci->lock. Return: the count, -EINVAL (bad).
 */
long swap_table_swapcount(struct swap_info_struct *si, uint64_t offset)
{
	struct swap_cluster_info *ci = swap_cluster_lock(si, offset);
	long c = __swap_cluster_get_count(ci, offset % SWAPFILE_CLUSTER);

	swap_cluster_unlock(ci);
	return c;
}

/**
 * swap_table_swapped() - swap_entry_swapped() on a table device: count > 0.
 * Context: device pinned; lockless (RCU).
 */
bool swap_table_swapped(struct swap_info_struct *si, uint64_t offset)
{
	uint64_t tb = swap_table_get(offset_to_cluster(si, offset), offset % SWAPFILE_CLUSTER);

	return swp_tb_is_countable(tb) && __swp_tb_get_count(tb) > 0;
}

/**
 * swap_table_peek() - uswap_swap_tb_peek() on a table device: the raw
 * entry and the exact count (-1 for a bad slot).
 * Context: device pinned; takes ci->lock. Return: 0.
 */
int swap_table_peek(struct swap_info_struct *si, uint64_t offset, uint64_t *tbp, long *countp)
{
	struct swap_cluster_info *ci = swap_cluster_lock(si, offset);
	unsigned int off = offset % SWAPFILE_CLUSTER;

	if (tbp)
		*tbp = __swap_table_get(ci, off);
	if (countp) {
		long c = __swap_cluster_get_count(ci, off);

		*countp = c < 0 ? -1 : c;
	}
	swap_cluster_unlock(ci);
	return 0;
}
