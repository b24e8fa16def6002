/* SPDX-License-Identifier: MIT */
/*
 * Clusters: 512 slots with a lock, a usage count, an order, a list flag,
 * an RCU-protected swap table (present only while the cluster is in use)
 * and an extend table for overflowing counts (present only while some
 * slot needs it).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "swap/swap_internal.h"
#include "util/alloc.h"

/*
 * Table memory, on the model of the kernel's "swap_table" kmem_cache with
 * SLAB_TYPESAFE_BY_RCU and its per-CPU slabs. A table freed by an emptied
 * cluster goes to the freeing thread's cache at once and may serve the
 * next cluster that thread takes, without waiting for a grace period;
 * only memory that leaves the caches for malloc waits for one (call_rcu).
 * A lockless reader holding a stale pointer so reads a table that may
 * belong to another cluster now: swap_table_get_rcu() checks the table's
 * generation and retries, so it returns only entries of its own cluster.
 *
 * Why not a grace period per table, as before: a thread that empties and
 * refills a cluster per 64 folios retires tens of thousands of tables a
 * second, and liburcu's call_rcu thread returns them in batches every
 * 10 ms or more, later still when real-time threads keep the CPUs busy
 * (bench_alloc under chrt: it ran only when a worker blocked). The pool
 * ran dry, so every cluster took a fresh calloc() (page faults), and the
 * late batches overflowed the pool into free(), which trimmed the heap
 * (madvise: TLB shootdowns to both threads' CPUs). Per thread, the tables
 * also stay in that thread's CPU cache.
 *
 * A thread keeps up to SWAP_TABLE_CACHE_MAX tables and exchanges them with
 * the shared pool SWAP_TABLE_CACHE_BATCH at a time (the pool's mutex once
 * per batch); a thread that exits gives its tables to the pool. The pool
 * keeps up to SWAP_TABLE_POOL_MAX tables (8 MiB); more go back to malloc
 * after a grace period. A table comes back all NULL (swap_cluster_free_table()
 * checks it at USWAP_DEBUG >= 2), so reuse needs no clearing. Cached tables
 * are not poisoned for AddressSanitizer (stale readers may read them, as
 * the kernel's KASAN allows for type-safe objects); a read after free() is
 * still caught.
 */
#define SWAP_TABLE_POOL_MAX	2048
#define SWAP_TABLE_CACHE_MAX	64
#define SWAP_TABLE_CACHE_BATCH	32

static struct {
	pthread_mutex_t lock;	/* a leaf: taken under ci->lock */
	unsigned int nr;
	struct swap_table *tables[SWAP_TABLE_POOL_MAX];
} swap_table_pool = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* A thread's tables (the kernel's per-CPU slab), linked by next_free. */
struct swap_table_cache {
	struct swap_table *head;
	unsigned int nr;
	bool registered;	/* the exit hook is set */
};
static __thread struct swap_table_cache swap_table_cache;
static pthread_key_t swap_table_cache_key;
static pthread_once_t swap_table_cache_once = PTHREAD_ONCE_INIT;

/* After the grace period: back to malloc. Context: liburcu's call_rcu thread. */
static void swap_table_free_rcu(struct rcu_head *head)
{
	struct swap_table *t = caa_container_of(head, struct swap_table, rcu);

	uswap_rcu_tsan_acquire();
	free(t);
}

/*
 * Move up to @nr tables from the thread's cache to the pool; what the
 * pool has no room for goes back to malloc after a grace period.
 * Context: any; takes the pool's leaf lock.
 */
static void swap_table_cache_drain(struct swap_table_cache *c, unsigned int nr)
{
	struct swap_table *t;

	pthread_mutex_lock(&swap_table_pool.lock);
	while (nr-- && (t = c->head)) {
		c->head = t->next_free;
		c->nr--;
		if (swap_table_pool.nr < SWAP_TABLE_POOL_MAX) {
			swap_table_pool.tables[swap_table_pool.nr++] = t;
			continue;
		}
		uswap_call_rcu(&t->rcu, swap_table_free_rcu);
	}
	pthread_mutex_unlock(&swap_table_pool.lock);
}

/*
 * Thread exit: its tables go to the pool. A later exit hook that empties
 * a cluster registers again (pthread runs hooks whose value was set anew).
 * Context: the exiting thread.
 */
static void swap_table_cache_exit(void *arg)
{
	struct swap_table_cache *c = arg;

	c->registered = false;
	swap_table_cache_drain(c, c->nr);
}

static void swap_table_cache_key_init(void)
{
	if (pthread_key_create(&swap_table_cache_key, swap_table_cache_exit))
		abort();
}

/* Push @t on the thread's cache, registering the exit hook once. */
static void swap_table_cache_push(struct swap_table_cache *c, struct swap_table *t)
{
	if (__builtin_expect(!c->registered, 0)) {
		pthread_once(&swap_table_cache_once, swap_table_cache_key_init);
		pthread_setspecific(swap_table_cache_key, c);
		c->registered = true;
	}
	t->next_free = c->head;
	c->head = t;
	c->nr++;
}

/*
 * An all-NULL table: from the thread's cache, refilled a batch at a time
 * from the pool, else a new one. Context: any; may take the pool's leaf
 * lock. Return: the table, or NULL (no memory).
 */
static struct swap_table *swap_table_alloc(void)
{
	struct swap_table_cache *c = &swap_table_cache;
	struct swap_table *t;

	if (!c->head) {
		pthread_mutex_lock(&swap_table_pool.lock);
		while (swap_table_pool.nr && c->nr < SWAP_TABLE_CACHE_BATCH)
			swap_table_cache_push(c, swap_table_pool.tables[--swap_table_pool.nr]);
		pthread_mutex_unlock(&swap_table_pool.lock);
	}
	t = c->head;
	if (!t)
		return uswap_calloc(1, sizeof(*t));
	c->head = t->next_free;
	c->nr--;
	return t;
}

/**
 * swap_cluster_alloc_table() - give an unused cluster its swap table,
 * a cached one if there is one.
 * Context: ci->lock held. Return: 0, -ENOMEM.
 */
int swap_cluster_alloc_table(struct swap_cluster_info *ci)
{
	struct swap_table *t;

	uswap_assert_held(&ci->lock);
	if (swap_cluster_table(ci))
		return 0;
	t = swap_table_alloc();
	if (!t)
		return -ENOMEM;
	/* A new generation before the first entry: swap_table_get_rcu(). */
	atomic_fetch_add_explicit(&t->gen, 1, memory_order_release);
	atomic_store_explicit(&ci->table, t, memory_order_release);
	return 0;
}

/*
 * Unpublish the table of an emptied cluster and keep it in the thread's
 * cache; lockless readers that still hold it see its entries NULL until
 * another cluster takes it, then a new generation.
 * Context: ci->lock held; may take the pool's leaf lock. Return: true if
 * the cluster had a table (the caller counts it in si->nr_tables).
 */
static bool swap_cluster_free_table(struct swap_cluster_info *ci)
{
	struct swap_table_cache *c = &swap_table_cache;
	struct swap_table *t = swap_cluster_table(ci);
	unsigned int i;

	if (!t)
		return false;
	if (USWAP_DEBUG >= 2)
		for (i = 0; i < SWAPFILE_CLUSTER; i++)
			USWAP_BUG_ON(atomic_load_explicit(&t->entries[i], memory_order_relaxed));
	atomic_store_explicit(&ci->table, NULL, memory_order_release);
	swap_table_cache_push(c, t);
	if (c->nr > SWAP_TABLE_CACHE_MAX)
		swap_table_cache_drain(c, SWAP_TABLE_CACHE_BATCH);
	return true;
}

/*
 * si->nr_tables += @d. Its writers hold si->lock, which they take anyway
 * to move the cluster, and it shares the lock's cache line: no atomic
 * read-modify-write on a line of its own per cluster filled or emptied.
 * Context: si->lock held.
 */
static void __swap_nr_tables_add(struct swap_info_struct *si, long d)
{
	uswap_assert_held(&si->lock);
	atomic_store_explicit(&si->nr_tables,
			      atomic_load_explicit(&si->nr_tables, memory_order_relaxed) + d,
			      memory_order_relaxed);
}

/* move_cluster(), and si->nr_tables += @tables under the same lock. */
static void move_cluster_count(struct swap_info_struct *si, struct swap_cluster_info *ci,
			       unsigned int list, uint8_t new_flags, long tables)
{
	unsigned int n = (unsigned int)cluster_index(si, ci);

	uswap_assert_held(&ci->lock);
	uswap_spin_lock(&si->lock);
	if (ci->flags != CLUSTER_FLAG_NONE)
		cluster_list_del(si, n);
	cluster_list_add_tail(si, n, list);
	ci->flags = new_flags;
	if (tables)
		__swap_nr_tables_add(si, tables);
	uswap_spin_unlock(&si->lock);
}

/**
 * move_cluster() - relink @ci on @list with @new_flags.
 * Context: ci->lock held; takes si->lock.
 */
void move_cluster(struct swap_info_struct *si, struct swap_cluster_info *ci,
		  unsigned int list, uint8_t new_flags)
{
	move_cluster_count(si, ci, list, new_flags, 0);
}

/**
 * __free_cluster() - an empty cluster loses its table and joins the free
 * list. Context: ci->lock held.
 */
void __free_cluster(struct swap_info_struct *si, struct swap_cluster_info *ci)
{
	bool had;

	uswap_assert_held(&ci->lock);
	USWAP_BUG_ON(ci->count);
	USWAP_BUG_ON(ci->extend_table);
	had = swap_cluster_free_table(ci);
	ci->order = 0;
	ci->owner = 0;
	move_cluster_count(si, ci, free_clusters(si), CLUSTER_FLAG_FREE, had ? -1 : 0);
}

/* An emptied cluster is discarded before reuse while the device is in use. */
static void free_or_discard_cluster(struct swap_info_struct *si, struct swap_cluster_info *ci)
{
	unsigned int fl = atomic_load_explicit(&si->flags, memory_order_relaxed);

	if ((fl & SWP_PAGE_DISCARD) && (fl & SWP_WRITEOK) && si->discard) {
		swap_cluster_schedule_discard(si, ci);
		return;
	}
	__free_cluster(si, ci);
}

/*
 * free_cluster() - a cluster has just become empty. With page discard it
 * waits on the discard list (its table kept, all NULL) for the device's
 * worker. An isolated cluster (flag NONE) belongs to the allocator
 * holding it, which relocates it itself; one being discarded (flag
 * DISCARD) is already on its way.
 */
void free_cluster(struct swap_info_struct *si, struct swap_cluster_info *ci)
{
	if (ci->flags == CLUSTER_FLAG_NONE || ci->flags == CLUSTER_FLAG_DISCARD)
		return;
	free_or_discard_cluster(si, ci);
}

/**
 * partial_free_cluster() - slots were freed in a used cluster: make it
 * visible on nonfull[order]. Context: ci->lock held.
 */
void partial_free_cluster(struct swap_info_struct *si, struct swap_cluster_info *ci)
{
	uswap_assert_held(&ci->lock);
	uswap_assert(ci->count && ci->count < SWAPFILE_CLUSTER);
	if (ci->flags == CLUSTER_FLAG_NONE || ci->flags == CLUSTER_FLAG_NONFULL ||
	    ci->flags == CLUSTER_FLAG_DISCARD)
		return;
	move_cluster(si, ci, nonfull_clusters(si, ci->order), CLUSTER_FLAG_NONFULL);
}

/**
 * relocate_cluster() - after an allocation attempt, put the cluster on the
 * list its usage calls for: free, frag[order] or full.
 * Context: ci->lock held.
 */
void relocate_cluster(struct swap_info_struct *si, struct swap_cluster_info *ci)
{
	uswap_assert_held(&ci->lock);
	if (ci->flags == CLUSTER_FLAG_DISCARD)
		return;
	if (!ci->count) {
		/* Emptied while isolated: ours to free, or to discard first. */
		if (ci->flags != CLUSTER_FLAG_FREE)
			free_or_discard_cluster(si, ci);
	} else if (ci->count < SWAPFILE_CLUSTER) {
		if (ci->flags != CLUSTER_FLAG_FRAG)
			move_cluster(si, ci, frag_clusters(si, ci->order), CLUSTER_FLAG_FRAG);
	} else if (ci->flags != CLUSTER_FLAG_FULL) {
		ci->owner = 0;	/* no thread's current cluster any more */
		move_cluster(si, ci, full_clusters(si), CLUSTER_FLAG_FULL);
	}
}

/**
 * isolate_lock_cluster() - take the first cluster of @list whose lock is
 * free off the list, locked, flag NONE; a cluster from the free list gets
 * its table. With @me != 0, a cluster that is another thread's current
 * one (owner neither 0 nor @me) is passed over and *@skipped set.
 * Context: takes si->lock, trylocks ci->lock.
 * Return: the locked cluster, or NULL (the list may be non-empty: busy ones
 * are skipped).
 */
struct swap_cluster_info *isolate_lock_cluster(struct swap_info_struct *si,
					       unsigned int list, uint32_t me,
					       bool *skipped)
{
	struct swap_cluster_info *ci, *found = NULL;
	unsigned int pos;
	uint8_t was = CLUSTER_FLAG_NONE;

	uswap_spin_lock(&si->lock);
	/* Positions, not clusters: the links are not in the cluster (cluster.h). */
	cluster_list_for_each(si, pos, list) {
		ci = link_cluster(si, pos);
		if (!uswap_spin_trylock(&ci->lock))
			continue;
		if (me && ci->owner && ci->owner != me) {
			uswap_spin_unlock(&ci->lock);
			*skipped = true;
			continue;
		}
		cluster_list_del_init(si, pos);
		was = ci->flags;
		ci->flags = CLUSTER_FLAG_NONE;
		found = ci;
		/* Counted now, while si->lock is held; undone below on failure. */
		if (was == CLUSTER_FLAG_FREE)
			__swap_nr_tables_add(si, 1);
		break;
	}
	uswap_spin_unlock(&si->lock);
	if (found && was == CLUSTER_FLAG_FREE && swap_cluster_alloc_table(found)) {
		/* No memory for a table: give the cluster back. */
		move_cluster_count(si, found, free_clusters(si), CLUSTER_FLAG_FREE, -1);
		uswap_spin_unlock(&found->lock);
		return NULL;
	}
	return found;
}

/**
 * swap_cluster_try_free_extend() - free the extend table once no slot of
 * the cluster overflows. Context: ci->lock held.
 */
void swap_cluster_try_free_extend(struct swap_info_struct *si, struct swap_cluster_info *ci)
{
	uswap_assert_held(&ci->lock);
	if (!ci->extend_table || ci->extend_table[EXTEND_NR])
		return;
	free(ci->extend_table);
	ci->extend_table = NULL;
	atomic_fetch_sub_explicit(&si->nr_extend_tables, 1, memory_order_relaxed);
}

/** uswap_dump_slot() - print a slot's state after misuse (debug). */
void uswap_dump_slot(const char *why, struct swap_info_struct *si, uint64_t offset)
{
#if USWAP_DEBUG >= 1
	struct swap_cluster_info *ci;
	uint64_t tb;

	if (!si || offset >= si->max) {
		uswap_warn("%s: type %u offset %" PRIu64 " out of range", why,
			   si ? si->type : ~0U, offset);
		return;
	}
	ci = offset_to_cluster(si, offset);
	tb = swap_table_get(ci, offset % SWAPFILE_CLUSTER);
	uswap_warn("%s: type %u offset %" PRIu64 ": %s entry %#" PRIx64 " count %d",
		   why, si->type, offset, swp_tb_type_name(tb), tb, swp_tb_get_count(tb));
#else
	(void)why; (void)si; (void)offset;
#endif
}

/**
 * uswap_check_cluster() - recount a cluster and check every invariant of
 * struct swap_cluster_info; abort on the first broken one.
 * Context: ci->lock held. Used at USWAP_DEBUG >= 3 and by tests.
 */
void uswap_check_cluster(struct swap_info_struct *si, struct swap_cluster_info *ci)
{
	unsigned int i, used = 0;
	bool overflow = false;

	uswap_assert_held(&ci->lock);
	USWAP_BUG_ON(ci->owner && ci->count >= SWAPFILE_CLUSTER);
	if (!swap_cluster_table(ci)) {
		USWAP_BUG_ON(ci->count);
		USWAP_BUG_ON(ci->extend_table);
		return;
	}
	for (i = 0; i < SWAPFILE_CLUSTER; i++) {
		uint64_t tb = __swap_table_get(ci, i);

		USWAP_BUG_ON(!swp_tb_is_countable(tb) && !swp_tb_is_bad(tb));
		if (swp_tb_is_null(tb))
			continue;
		used++;
		if (swp_tb_is_shadow(tb))
			USWAP_BUG_ON(__swp_tb_get_count(tb) == 0);
		if (swp_tb_is_countable(tb) && __swp_tb_get_count(tb) == SWP_TB_COUNT_MAX) {
			overflow = true;
			USWAP_BUG_ON(!ci->extend_table);
			USWAP_BUG_ON(ci->extend_table[i] < SWP_TB_COUNT_MAX);
		} else if (ci->extend_table) {
			USWAP_BUG_ON(ci->extend_table[i]);
		}
	}
	USWAP_BUG_ON(used != ci->count);
	if (ci->extend_table) {
		unsigned int nz = 0;

		for (i = 0; i < SWAPFILE_CLUSTER; i++)
			nz += ci->extend_table[i] != 0;
		USWAP_BUG_ON(nz != ci->extend_table[EXTEND_NR]);
	}
	/* The extend table is freed as soon as no slot overflows. */
	USWAP_BUG_ON(ci->extend_table && !overflow);
	(void)si;
}
