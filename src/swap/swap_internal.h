/* SPDX-License-Identifier: MIT */
/*
 * Private structures of the swap layer: devices (swap_info_struct) and
 * clusters (swap_cluster_info), and the functions the layer's files share.
 *
 * Lock order (outermost first):
 *   swap_owners_lock (read side held by swapoff across the owners' unuse)
 *     -> folio lock
 *     -> swap_lock (global mutex: swap_info[], SWP_USED, SWP_WRITEOK, totals)
 *     -> si->global_cluster_lock (rotational devices)
 *     -> ci->lock (cluster fields, table entries, extend table)
 *     -> si->lock (cluster lists)
 *     -> swap_avail_lock (list of devices with free slots)
 *     -> si->work.lock (leaf: the device worker's queue)
 * swap_claim_lock (files swapped on) is a leaf, taken under nothing else.
 * isolate_lock_cluster() holds si->lock and only trylocks ci->lock.
 * swap_lock is held only for short publish/unpublish steps: swapon sets a
 * device up before taking it, and swapoff runs the owners' unuse (which
 * takes mmap and folio locks and does swap-in I/O) without it.
 * Other pins: a locked swap-cache folio pins its slots, hence its cluster
 * and table; get_swap_device() holds off swapoff; RCU protects lockless
 * table reads.
 */
#ifndef USWAP_SWAP_INTERNAL_H
#define USWAP_SWAP_INTERNAL_H

#include <limits.h>
#include <stdatomic.h>
#include <urcu/list.h>

#include <uswap/swap.h>
#include "swap/folio_internal.h"
#include "swap/swap_table.h"
#include "util/lock.h"
#include "util/rcu.h"

/* swap_info_struct flags (SWP_*), the kernel's values */
#define SWP_USED		(1U << 0)
#define SWP_WRITEOK		(1U << 1)
#define SWP_DISCARDABLE		(1U << 2)
#define SWP_DISCARDING		(1U << 3)
#define SWP_SOLIDSTATE		(1U << 4)
#define SWP_BLKDEV		(1U << 6)
#define SWP_AREA_DISCARD	(1U << 9)
#define SWP_PAGE_DISCARD	(1U << 10)
#define SWP_STABLE_WRITES	(1U << 11)	/* the backend's stable_writes */
#define SWP_SYNCHRONOUS_IO	(1U << 12)

/* si->users: a pin count, with this bit set once swapoff has started. */
#define SWAP_USERS_DEAD		(1L << 40)
/* A closed per-CPU pin slot (swap_device.c): pins go to si->users. */
#define SWAP_PIN_CLOSED		(LONG_MIN / 2)
#define SWAP_PIN_IS_CLOSED(v)	((v) < LONG_MIN / 4)

struct swap_backend;	/* io/backend.h */

/* Deferred work of one device (the kernel's discard_work, reclaim_work). */
#define SWAP_WORK_DISCARD	(1U << 0)
#define SWAP_WORK_RECLAIM	(1U << 1)

/*
 * One worker thread per swapped-on device. Invariant (lock held):
 * pending != 0 or busy  =>  the worker has been or will be woken.
 */
struct swap_work {
	pthread_mutex_t lock;		/* leaf */
	pthread_cond_t cond;		/* worker waits for pending or stop */
	pthread_cond_t idle;		/* swap_flush_work() waits for !pending && !busy */
	pthread_t thread;
	unsigned int pending;		/* SWAP_WORK_* queued */
	bool busy;			/* the worker is running a batch */
	bool stop;			/* swapoff: exit once idle */
	bool running;			/* the thread exists (swap_lock-free: swapon/off own it) */
};
struct swap_info_struct;
struct uswap_swapin_info;

/*
 * A slot-state design behind the API: the swap table design of this
 * directory (swap_table_ops, swap_table_ops.c) or the old swap_map one
 * (swap_legacy_ops, src/legacy/). Every device has one; the exported
 * entry points (swap_api.c) check what the API's comment promises to
 * check (folio locked / cached, offset range), pin the device and call
 * the op, which returns what the entry point returns. Generic code that
 * already holds a pin (the allocator, swapoff, the worker) calls the ops
 * directly. The allocator hooks and check_cluster run under ci->lock.
 */
struct swap_design_ops {
	const char *name;
	/* allocator: may [off, off+nr) be taken? cache-only slots need reclaim */
	bool (*scan_range)(struct swap_info_struct *si, struct swap_cluster_info *ci,
			   unsigned int off, unsigned int nr, bool *need_reclaim);
	/* allocator: fill [off, off+2^order) for @folio (NULL: hibernation) */
	void (*alloc_fill)(struct swap_info_struct *si, struct swap_cluster_info *ci,
			   struct folio *folio, unsigned int off, unsigned int order);
	/* a slot held only by the swap cache (ci->lock held) */
	bool (*cache_only)(struct swap_info_struct *si, struct swap_cluster_info *ci,
			   unsigned int off);
	/* debug walk (USWAP_DEBUG >= 3): recount @ci, abort on a broken invariant */
	void (*check_cluster)(struct swap_info_struct *si, struct swap_cluster_info *ci);
	int (*dup)(struct swap_info_struct *si, uint64_t offset, unsigned int nr, bool direct);
	int (*folio_put)(struct swap_info_struct *si, struct folio *folio, uint64_t offset,
			 unsigned int nr);
	int (*put_direct)(struct swap_info_struct *si, uint64_t offset, uint64_t nr);
	long (*swapcount)(struct swap_info_struct *si, uint64_t offset);
	bool (*swapped)(struct swap_info_struct *si, uint64_t offset);
	bool (*maybe_swapped)(struct swap_info_struct *si, struct folio *folio);
	int (*free_swap)(struct swap_info_struct *si, struct folio *folio);
	int (*cache_add)(struct swap_info_struct *si, struct folio *folio, swp_entry_t entry,
			 uint64_t *shadowp);
	/* delete a cached folio leaving @shadow; the cache's references stay
	 * (the caller drops them, or has frozen them: uswap_remove_mapping) */
	int (*cache_del)(struct swap_info_struct *si, struct folio *folio, uint64_t shadow);
	struct folio *(*cache_get)(struct swap_info_struct *si, swp_entry_t entry);
	uint64_t (*cache_shadow)(struct swap_info_struct *si, swp_entry_t entry);
	int (*cache_replace)(struct swap_info_struct *si, struct folio *old, struct folio *new,
			     swp_entry_t entry);
	int (*try_reclaim)(struct swap_info_struct *si, uint64_t offset, bool anyway);
	int (*swapin)(struct swap_info_struct *si, swp_entry_t entry,
		      struct uswap_frame_pool *pool, unsigned long orders, struct folio **out,
		      struct uswap_swapin_info *info);
	int (*swapin_lock)(struct swap_info_struct *si, struct folio *folio, swp_entry_t entry);
	int (*peek)(struct swap_info_struct *si, uint64_t offset, uint64_t *tb, long *count);
	/* the memcg ids of slot @offset and the rest of its cluster, one u16
	 * each, or NULL where the design keeps none now (a cluster without
	 * a table: no slot allocated). ci->lock held. */
	uint16_t *(*memcg_ids)(struct swap_info_struct *si, struct swap_cluster_info *ci,
			       uint64_t offset);
	/* the zero flag of [offset, offset+nr), one cluster's allocated
	 * slots: set to @zero, or counted. ci->lock held. */
	void (*zero_set)(struct swap_info_struct *si, struct swap_cluster_info *ci, uint64_t offset,
			 unsigned int nr, bool zero);
	unsigned int (*zero_count)(struct swap_info_struct *si, struct swap_cluster_info *ci,
				   uint64_t offset, unsigned int nr);
	/* swapon, after the clusters exist and before publication: the
	 * design's own memory (NULL: none). Return: 0 or -errno. */
	int (*setup)(struct swap_info_struct *si);
	/* swapoff: every slot back to free or bad; free the design's memory */
	void (*teardown)(struct swap_info_struct *si);
	/* add the design's own figures to @st */
	void (*stat)(struct swap_info_struct *si, struct uswap_swap_stat *st);
};

/*
 * A count split per CPU, as the kernel's percpu_counter (swap_alloc.c):
 * each CPU adds to its own slot and folds the slot into @count once it
 * reaches SWAP_PCPU_BATCH either way. swap_pcpu_sum() is the exact value.
 */
#define SWAP_PCPU_SLOTS	32
#define SWAP_PCPU_BATCH	(8 * SWAPFILE_CLUSTER)
/* 128 bytes: x86 prefetches lines in 128-byte pairs, so two slots in one
 * pair would still be fetched back and forth between two CPUs. */
struct swap_pcpu_slot {
	_Atomic long v;
} __attribute__((aligned(128)));
struct swap_pcpu_counter {
	_Atomic long count;		/* folded part */
	_Atomic bool fold_lock;		/* serializes folds (fbc->lock) */
	_Atomic unsigned long fold_seq;	/* odd during a fold: sums retry */
	_Atomic bool offlist;		/* inuse_pages: full, off the avail list */
	struct swap_pcpu_slot cpu[SWAP_PCPU_SLOTS];
};

/*
 * Invariants:
 *   pages == max - nr_bad (slot 0 and listed bad pages below max);
 *   inuse_pages == sum over clusters of (count - bad slots of the cluster);
 *   a device is on swap_avail_list iff WRITEOK and inuse_pages < pages.
 */
struct swap_info_struct {
	/* First line: read on every operation, written only by swapon/off. */
	_Atomic unsigned int flags;	/* SWP_*; swap_lock for USED/WRITEOK */
	short prio;			/* higher is used first */
	unsigned int type;		/* index in swap_info[] */
	unsigned int max;		/* slots incl. header, bad and tail-masked */
	unsigned int pages;		/* usable slots */
	unsigned int nr_bad;		/* bad slots below max, header included */
	unsigned long nr_clusters;
	struct swap_cluster_info *cluster_info;	/* nr_clusters, static */
	struct swap_cluster_link *cluster_list;	/* nr_clusters list links (cluster.h), lock */
	_Atomic uint64_t generation;	/* bumped at each swapon of this type */
	struct swap_pcpu_counter inuse_pages;	/* allocated slots: swap_inuse_pages() */
	/* The device pin, as the kernel's percpu_ref: per-CPU counts while
	 * live, one atomic (users) once swapoff kills it (swap_device.c);
	 * each slot SWAP_PIN_CLOSED while the device is not live. */
	struct swap_pcpu_slot pin_cpu[SWAP_PCPU_SLOTS];
	_Atomic long users __attribute__((aligned(64)));	/* atomic-mode pins; SWAP_USERS_DEAD */
	struct uswap_spinlock lock __attribute__((aligned(64)));	/* cluster lists below */
	/* Swap tables allocated now: written under lock (on its line), read
	 * lockless; swapon counts its own before publication. */
	_Atomic long nr_tables;
	/* The cluster lists' heads, by SWAP_LIST_*: on the lock's line, as
	 * the kernel's free_clusters and full_clusters are, the hot ones
	 * first. A list is named by its index, nr_clusters + SWAP_LIST_*
	 * (free_clusters() and the others). */
	struct swap_cluster_link cluster_heads[SWAP_NR_CLUSTER_LISTS];
	struct uswap_mutex global_cluster_lock;	/* rotational devices */
	unsigned int global_next[SWAP_NR_ORDERS];	/* global_cluster_lock */
	struct cds_list_head avail_list;	/* swap_avail_lock */
	bool on_avail;			/* swap_avail_lock */
	struct swap_backend *bdev;	/* I/O backend, or NULL (memory only) */
	struct swap_io_ctx *io;		/* completion thread, or NULL */
	const struct swap_design_ops *design;	/* never NULL while swapped on */
	void *design_priv;		/* the design's per-device state */
	/* Called for slots that became free (ci->lock held; must not sleep). */
	void (*slots_freed)(struct swap_info_struct *si, uint64_t offset, unsigned int nr);
	/* Called on each freed cluster when PAGE_DISCARD (outside ci->lock). */
	int (*discard)(struct swap_info_struct *si, uint64_t offset, uint64_t nr);
	char *path;			/* swapped-on file, or NULL */
	bool claimed;			/* claim_dev/claim_ino are in the claimed set */
	uint64_t claim_dev, claim_ino;	/* the file's identity (swap_inode_claim) */
	struct swap_work work;		/* discard and reclaim worker */
	/* Written as extend tables come and go: a line apart from what every
	 * operation reads (design, bdev, slots_freed). */
	_Atomic long nr_extend_tables __attribute__((aligned(64)));	/* extend tables allocated now */
	/* I/O counters (swap_io.c) */
	_Atomic uint64_t nr_reads, nr_writes, nr_read_errors, nr_write_errors;
	_Atomic uint64_t nr_ra_pages, nr_ra_hits;
	_Atomic uint64_t nr_zero_out, nr_zero_in;	/* zero pages: not written, not read */
};

extern _Atomic(struct swap_info_struct *) swap_info[MAX_SWAPFILES];

static inline struct swap_cluster_info *
offset_to_cluster(struct swap_info_struct *si, uint64_t offset)
{
	return &si->cluster_info[offset / SWAPFILE_CLUSTER];
}

static inline unsigned long cluster_index(struct swap_info_struct *si,
					  struct swap_cluster_info *ci)
{
	return (unsigned long)(ci - si->cluster_info);
}

/* The cluster at list position @pos (a cluster index, not a head).
 * Context: si->lock (the position came off a list). */
static inline struct swap_cluster_info *link_cluster(struct swap_info_struct *si,
						     unsigned int pos)
{
	uswap_assert(pos < si->nr_clusters);
	return &si->cluster_info[pos];
}

/* ---- cluster lists by index (list.h's helpers; cluster.h) ---- */

/* The lists, by name: their heads' indices. Context: any. */
static inline unsigned int free_clusters(struct swap_info_struct *si)
{
	return (unsigned int)si->nr_clusters + SWAP_LIST_FREE;
}

static inline unsigned int full_clusters(struct swap_info_struct *si)
{
	return (unsigned int)si->nr_clusters + SWAP_LIST_FULL;
}

static inline unsigned int discard_clusters(struct swap_info_struct *si)
{
	return (unsigned int)si->nr_clusters + SWAP_LIST_DISCARD;
}

static inline unsigned int nonfull_clusters(struct swap_info_struct *si, unsigned int order)
{
	return (unsigned int)si->nr_clusters + SWAP_LIST_NONFULL(order);
}

static inline unsigned int frag_clusters(struct swap_info_struct *si, unsigned int order)
{
	return (unsigned int)si->nr_clusters + SWAP_LIST_FRAG(order);
}

/* Return: the links of entry @n, a cluster's or a head's. Context: si->lock,
 * or the device not published. */
static inline struct swap_cluster_link *cluster_list_entry(struct swap_info_struct *si,
							   unsigned int n)
{
	if (n < si->nr_clusters)
		return &si->cluster_list[n];
	uswap_assert(n - si->nr_clusters < SWAP_NR_CLUSTER_LISTS);
	return &si->cluster_heads[n - si->nr_clusters];
}

/* Make entry @n an empty list, or an off-list node. Context: si->lock,
 * or the device not published. */
static inline void cluster_list_init(struct swap_info_struct *si, unsigned int n)
{
	struct swap_cluster_link *l = cluster_list_entry(si, n);

	l->prev = l->next = n;
}

/* Return: the first entry of list @head (== @head when it is empty).
 * Context: si->lock. */
static inline unsigned int cluster_list_first(struct swap_info_struct *si, unsigned int head)
{
	return cluster_list_entry(si, head)->next;
}

/* Return: true if list @head holds no cluster. Context: si->lock. */
static inline bool cluster_list_empty(struct swap_info_struct *si, unsigned int head)
{
	return cluster_list_first(si, head) == head;
}

/* Link @n before @next (list_add_tail with @next the head). Context: si->lock. */
static inline void cluster_list_add_tail(struct swap_info_struct *si, unsigned int n,
					 unsigned int next)
{
	struct swap_cluster_link *ln = cluster_list_entry(si, n);
	struct swap_cluster_link *lnext = cluster_list_entry(si, next);
	unsigned int prev = lnext->prev;

	ln->prev = prev;
	ln->next = next;
	cluster_list_entry(si, prev)->next = n;
	lnext->prev = n;
}

/* Unlink @n; its own links are left as they were (list_del without the
 * poison). Context: si->lock. */
static inline void cluster_list_del(struct swap_info_struct *si, unsigned int n)
{
	struct swap_cluster_link *l = cluster_list_entry(si, n);

	cluster_list_entry(si, l->prev)->next = l->next;
	cluster_list_entry(si, l->next)->prev = l->prev;
}

/* Unlink @n and make it an off-list node. Context: si->lock. */
static inline void cluster_list_del_init(struct swap_info_struct *si, unsigned int n)
{
	cluster_list_del(si, n);
	cluster_list_init(si, n);
}

/* Move @n to the tail of list @head. Context: si->lock. */
static inline void cluster_list_move_tail(struct swap_info_struct *si, unsigned int n,
					  unsigned int head)
{
	cluster_list_del(si, n);
	cluster_list_add_tail(si, n, head);
}

/* Walk list @head: @pos takes each cluster index in turn (list_for_each).
 * Context: si->lock; the walk must not unlink @pos before it steps on. */
#define cluster_list_for_each(si, pos, head) \
	for ((pos) = cluster_list_first((si), (head)); (pos) != (head); \
	     (pos) = (si)->cluster_list[(pos)].next)

static inline uint64_t cluster_offset(struct swap_info_struct *si,
				      struct swap_cluster_info *ci)
{
	return (uint64_t)cluster_index(si, ci) * SWAPFILE_CLUSTER;
}

/* ---- cluster locks (static inline, as the kernel's mm/swap.h) ---- */

/**
 * swap_cluster_lock() - lock the cluster holding slot @offset. Checks at
 * USWAP_DEBUG >= 2 what the kernel's warns about: the device is pinned
 * (or not published: swapon setting it up, swapoff tearing it down, where
 * the one thread that owns it locks its clusters) and @offset is a slot
 * of the device.
 * Context: takes ci->lock. Return: the locked cluster.
 */
static inline struct swap_cluster_info *swap_cluster_lock(struct swap_info_struct *si,
							  uint64_t offset)
{
	struct swap_cluster_info *ci = offset_to_cluster(si, offset);

#if USWAP_DEBUG >= 2
	/* users == 0 with the slots closed: published, and nobody holds a
	 * pin (a race with swapoff). Open slots cannot tell: no check. */
	uswap_assert(!SWAP_PIN_IS_CLOSED(atomic_load_explicit(&si->pin_cpu[0].v,
							      memory_order_relaxed)) ||
		     atomic_load_explicit(&si->users, memory_order_relaxed) != 0);
	uswap_assert(offset < si->max);
#endif
	uswap_spin_lock(&ci->lock);
	return ci;
}

/** swap_cluster_unlock() - release a cluster lock. Context: ci->lock held. */
static inline void swap_cluster_unlock(struct swap_cluster_info *ci)
{
	uswap_spin_unlock(&ci->lock);
}

/* ---- swap_device.c ---- */
extern _Atomic unsigned int swap_pcpu_nr_cached;
unsigned int __swap_pcpu_nr(void);

/*
 * swap_pcpu_nr() - the per-CPU slots in use in counters and pins: one per
 * possible CPU, at most SWAP_PCPU_SLOTS (more CPUs share them). Inline:
 * every counter update asks. Context: lockless. Return: the number, fixed
 * for the life of the process.
 */
static inline unsigned int swap_pcpu_nr(void)
{
	unsigned int n = atomic_load_explicit(&swap_pcpu_nr_cached, memory_order_relaxed);

	return n ? n : __swap_pcpu_nr();
}
struct swap_info_struct *get_swap_device(swp_entry_t entry);
void put_swap_device(struct swap_info_struct *si);
void __get_swap_device(struct swap_info_struct *si);
/* swap_entry_pin() - pin entry's device; -ENODEV / -EINVAL (offset). */
int swap_entry_pin(swp_entry_t entry, struct swap_info_struct **out);
bool swap_device_tryget(struct swap_info_struct *si);
uint64_t uswap_swap_static_metadata_bytes(uint64_t max_slots);
void swap_backend_slots_freed(struct swap_info_struct *si, uint64_t offset, unsigned int nr);

/* What swapon needs to know about a device, whatever it is backed by. */
struct swap_device_params {
	uint64_t nr_pages;		/* header last_page + 1 */
	const uint32_t *badpages;	/* header bad-page list */
	unsigned int nr_badpages;
	int flags;			/* SWAP_FLAG_* / USWAP_FLAG_* */
	struct swap_backend *bdev;	/* taken over on success */
	struct swap_io_ctx *io;		/* taken over on success */
	const struct swap_design_ops *design;	/* &swap_table_ops or another design */
	const char *path;		/* for swapoff by path, or NULL */
	bool claimed;			/* claim_dev/claim_ino claimed by the caller;
					 * released by swapoff from then on */
	uint64_t claim_dev, claim_ino;
	int (*discard)(struct swap_info_struct *si, uint64_t offset, uint64_t nr);
	void (*slots_freed)(struct swap_info_struct *si, uint64_t offset, unsigned int nr);
};
int swap_device_create(const struct swap_device_params *p, char *err, size_t errlen);
int swap_inode_claim(uint64_t dev, uint64_t ino);
void swap_inode_release(uint64_t dev, uint64_t ino);

/* ---- swap_cgroup.c ---- */
int swap_cgroup_try_charge(uint16_t id, unsigned int nr);
void swap_cgroup_uncharge(uint16_t id, unsigned int nr);
void swap_cgroup_count_fail(uint16_t id);
void swap_cgroup_record(struct swap_info_struct *si, struct swap_cluster_info *ci,
			uint64_t offset, unsigned int nr, uint16_t id);
void swap_cgroup_clear(struct swap_info_struct *si, struct swap_cluster_info *ci,
		       uint64_t offset, unsigned int nr);

/* ---- swap_design.c: the slot designs a device may have, by name ---- */
extern const struct swap_design_ops swap_legacy_ops;	/* src/legacy/legacy_ops.c */
const struct swap_design_ops *swap_design_lookup(const char *name);

/* ---- swapon.c ---- */
int swapon_path_design(const char *path, int flags, const struct swap_design_ops *design,
		       char *err, size_t errlen);
int swapon_spec_design(const char *spec, int flags, const struct swap_design_ops *design,
		       char *err, size_t errlen);

/* ---- cluster.c ---- */
int swap_cluster_alloc_table(struct swap_cluster_info *ci);
void move_cluster(struct swap_info_struct *si, struct swap_cluster_info *ci,
		  unsigned int list, uint8_t new_flags);
void __free_cluster(struct swap_info_struct *si, struct swap_cluster_info *ci);
void free_cluster(struct swap_info_struct *si, struct swap_cluster_info *ci);
void partial_free_cluster(struct swap_info_struct *si, struct swap_cluster_info *ci);
void relocate_cluster(struct swap_info_struct *si, struct swap_cluster_info *ci);
struct swap_cluster_info *isolate_lock_cluster(struct swap_info_struct *si,
					       unsigned int list, uint32_t me,
					       bool *skipped);
void uswap_check_cluster(struct swap_info_struct *si, struct swap_cluster_info *ci);
void swap_cluster_try_free_extend(struct swap_info_struct *si, struct swap_cluster_info *ci);
void uswap_dump_slot(const char *why, struct swap_info_struct *si, uint64_t offset);

/* ---- swap_alloc.c ---- */
bool vm_swap_full(void);
long swap_inuse_pages(struct swap_info_struct *si);
void swap_inuse_reset(struct swap_info_struct *si);

/*
 * The kernel's __try_to_reclaim_swap() gate, shared by both designs: the
 * locked @folio still caches @entry, no write is in flight, and it may go
 * (@anyway, or nothing maps it, or swap is full). The design then checks
 * that no slot of the folio is referenced.
 * Context: folio locked. Return: true if the design may drop it.
 */
static inline bool folio_swap_reclaimable(struct folio *folio, swp_entry_t entry, bool anyway)
{
	if (!folio_matches_swap_entry(folio, entry) || folio_test_writeback(folio))
		return false;
	return anyway || atomic_load_explicit(&folio->mapcount, memory_order_relaxed) <= 0 ||
	       vm_swap_full();
}
void swap_range_alloc(struct swap_info_struct *si, unsigned int nr);
void swap_range_free(struct swap_info_struct *si, uint64_t offset, unsigned int nr);
int swap_alloc_slots(struct folio *folio, unsigned int order, bool hibernation,
		     int only_type, swp_entry_t *out);
void swap_reclaim_full_clusters(struct swap_info_struct *si, bool force);
bool swap_do_scheduled_discard(struct swap_info_struct *si);
void swap_cluster_schedule_discard(struct swap_info_struct *si, struct swap_cluster_info *ci);
void swap_schedule_work(struct swap_info_struct *si, unsigned int work);
void swap_flush_work(struct swap_info_struct *si);
int swap_work_start(struct swap_info_struct *si);
void swap_work_stop(struct swap_info_struct *si);
void swap_alloc_device_added(struct swap_info_struct *si);
void swap_alloc_device_removed(struct swap_info_struct *si);

/* ---- swap_table_ops.c: the swap table design's ops ---- */
extern const struct swap_design_ops swap_table_ops;

/* ---- swap_count.c (table design) ---- */
long __swap_cluster_get_count(struct swap_cluster_info *ci, unsigned int off);
int __swap_cluster_dup_entry(struct swap_cluster_info *ci, unsigned int off);
void __swap_cluster_put_entry(struct swap_cluster_info *ci, unsigned int off);
int swap_dup_entries_cluster(struct swap_info_struct *si, uint64_t offset, unsigned int nr,
			     bool direct);
void __swap_cluster_free_entries(struct swap_info_struct *si, struct swap_cluster_info *ci,
				 unsigned int off, unsigned int nr);
int swap_table_put_direct(struct swap_info_struct *si, uint64_t offset, uint64_t nr);
long swap_table_swapcount(struct swap_info_struct *si, uint64_t offset);
bool swap_table_swapped(struct swap_info_struct *si, uint64_t offset);
int swap_table_peek(struct swap_info_struct *si, uint64_t offset, uint64_t *tb, long *count);

/* ---- swap_folio.c (table design) ---- */
int swap_table_folio_put(struct swap_info_struct *si, struct folio *folio, uint64_t offset,
			 unsigned int nr);
bool swap_table_maybe_swapped(struct swap_info_struct *si, struct folio *folio);
int swap_table_free_swap(struct swap_info_struct *si, struct folio *folio);
int __try_to_reclaim_swap(struct swap_info_struct *si, uint64_t offset, bool anyway);

/* ---- swap_cache.c (table design) ---- */
void __swap_cache_add_folio(struct swap_cluster_info *ci, struct folio *folio,
			    swp_entry_t entry);
void __swap_cache_del_folio(struct swap_info_struct *si, struct swap_cluster_info *ci,
			    struct folio *folio, swp_entry_t entry, uint64_t shadow);
int swap_table_cache_add(struct swap_info_struct *si, struct folio *folio, swp_entry_t entry,
			 uint64_t *shadowp);
int swap_table_cache_del(struct swap_info_struct *si, struct folio *folio, uint64_t shadow);
struct folio *swap_table_cache_get(struct swap_info_struct *si, swp_entry_t entry);
uint64_t swap_table_cache_shadow(struct swap_info_struct *si, swp_entry_t entry);
int swap_table_cache_replace(struct swap_info_struct *si, struct folio *old, struct folio *new,
			     swp_entry_t entry);

/* ---- swap_state.c (readahead: both designs; swap-in: table design) ---- */
unsigned int __swapin_nr_pages(uint64_t prev, uint64_t offset, unsigned int hits,
			       unsigned int max_pages, unsigned int prev_win);
unsigned int swapin_nr_pages(uint64_t offset, unsigned int max);
unsigned int swap_cluster_ra_last_pages(void);
bool swap_use_vma_readahead(void);
extern _Atomic int nr_rotate_swap;
unsigned int swap_vma_ra_win(const struct uswap_swapin_info *info, uint64_t *start,
			     uint64_t *end);
void swap_update_readahead(struct swap_info_struct *si, struct folio *folio,
			   struct uswap_swapin_info *info);
void swapin_read_batch(struct swap_info_struct *si, struct folio **batch, unsigned int n,
		       uint64_t shadow, struct uswap_swapin_info *info);
unsigned int swapin_ra_offsets(struct swap_info_struct *si, swp_entry_t entry,
			       struct uswap_swapin_info *info, uint64_t *offs, unsigned int max);
void swapin_ra_reserve(struct uswap_frame_pool *pool, struct uswap_swapin_info *info,
		       unsigned int nra);
int swap_table_swapin(struct swap_info_struct *si, swp_entry_t entry,
		      struct uswap_frame_pool *pool, unsigned long orders, struct folio **out,
		      struct uswap_swapin_info *info);
int swap_table_swapin_lock(struct swap_info_struct *si, struct folio *folio, swp_entry_t entry);

#endif
