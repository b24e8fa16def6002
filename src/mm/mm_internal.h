/* SPDX-License-Identifier: MIT */
/*
 * Private structures of the mm layer.
 *
 * Reference counting of a folio mapped by the mm:
 *   refcount = mapped PTEs + (PG_lru ? 1 : 0) + (PG_swapcache ? nr : 0)
 *              + (shmem slot ? 1 : 0) + transient references;
 *   mapcount = PTEs mapping any page of the folio.
 * The LRU holds a reference so that reclaim can always take one; a folio
 * with no mapping and no cache is dropped from the LRU by whoever unmapped
 * it last, or by reclaim when it finds it isolated.
 *
 * folio->mapping: the anon_vma of anonymous folios; the shmem object,
 * tagged with MAPPING_SHMEM, for shmem folios. folio->index: the page
 * number (address >> 12) of the head page, or the shmem page offset.
 */
#ifndef USWAP_MM_INTERNAL_H
#define USWAP_MM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <urcu/list.h>

#include <uswap/mm.h>
#include <uswap/swap.h>
#include "mm/pte.h"
#include "mm/workingset.h"
#include "swap/folio_internal.h"
#include "util/lock.h"
#include "util/rcu.h"

#define MAPPING_SHMEM	1UL
#define PTES_PER_PTL	512

/* All vmas of a family of processes related by fork (the kernel's
 * anon_vma, without chains: one per family). */
struct anon_vma {
	pthread_mutex_t lock;		/* vmas */
	struct cds_list_head vmas;
	_Atomic long refcount;		/* one per vma; freed after RCU */
	struct rcu_head rcu;
};

struct uswap_vma {
	struct uswap_mm *mm;
	uint64_t start, end;		/* page numbers [start, end) */
	_Atomic pte_t *ptes;		/* end - start entries */
	struct uswap_spinlock *ptl;	/* one per PTES_PER_PTL entries */
	struct anon_vma *anon;
	struct cds_list_head node;	/* mm->vmas (mmap_lock) */
	struct cds_list_head anon_node;	/* anon->vmas (anon->lock) */
	/* swap-in readahead state (the kernel's vma->swap_readahead_info:
	 * last fault page, window, hits; swap_state.c packs it); copied at
	 * fork as vm_area_dup() copies it. Lockless: relaxed __atomic
	 * builtins only (the public uswap_swapin_info points at it). */
	uint64_t swap_readahead_info;
	/* VM_LOCKED (uswap_mm_mlock()); mmap_lock; not copied at fork */
	bool locked;
};

struct uswap_mm {
	struct uswap_mem *mem;
	struct uswap_memcg *memcg;	/* the group it belongs to; NULL: the root */
	pthread_rwlock_t mmap_lock;	/* vmas list and layout */
	struct cds_list_head vmas;
	uint64_t next_addr;		/* page number for the next mmap */
	struct cds_list_head mmlist;	/* mem->mmlist */
	_Atomic long rss, swapents;
	/* readahead by this mm's faults, and its faults that hit a readahead
	 * folio (relaxed counters, uswap_mm_get_stats()) */
	_Atomic uint64_t ra_pages, ra_hits;
};

struct uswap_shmem {
	struct uswap_mem *mem;
	pthread_mutex_t lock;		/* slots */
	uint64_t nr_pages;
	uint64_t *slots;		/* folio pointer, or swap pte, or 0 */
	struct cds_list_head node;	/* mem->shmems */
};

struct uswap_mem {
	struct uswap_mem_config cfg;
	struct uswap_frame_pool *pool;
	size_t nr_frames;
	size_t wmark_low, wmark_high;
	struct uswap_spinlock lru_lock;
	struct cds_list_head lru_inactive, lru_active;
	_Atomic long nr_inactive, nr_active;
	struct uswap_workingset ws;	/* the root's */
	uint16_t root_memcg_id;		/* the root's id in shadows (never a group's) */
	pthread_mutex_t memcg_lock;	/* memcgs */
	struct cds_list_head memcgs;	/* live groups (uswap_memcg.node) */
	pthread_mutex_t mmlist_lock;	/* mmlist, shmems */
	struct cds_list_head mmlist;
	struct cds_list_head shmems;
	pthread_mutex_t reclaim_lock;	/* one reclaimer scans at a time */
	pthread_t kswapd;
	pthread_mutex_t kswapd_lock;
	pthread_cond_t kswapd_cond;
	bool kswapd_stop, kswapd_wake, kswapd_running;
	struct {
		_Atomic uint64_t swapouts, swapins, major_faults, minor_faults;
		_Atomic uint64_t refaults, refault_activations, cow_copies, cow_reuses;
		_Atomic uint64_t thp_splits, write_errors, read_errors, sigbus;
		_Atomic uint64_t direct_reclaims, kswapd_wakeups, reclaimed;
		_Atomic uint64_t swapin_cache_hits, swap_frees_after_map;
		_Atomic uint64_t swapoff_lost;
		_Atomic uint64_t peek_drops;
	} stat;
};

/*
 * A memory cgroup of a budget (memcontrol.c). Its memory counter holds the
 * pages of the folios charged to it: a charged folio points at its group
 * (folio->private) from its allocation or swap-in until it is freed (the
 * pool's free hook uncharges it). Its swap counter is the swap layer's
 * group of the same id.
 *   memory_current == pages of the folios whose private is this group
 *                     + charges taken and not yet committed to a folio;
 *   pins == memory_current + nr_mms + temporary pins + (1 until destroyed);
 *   the struct is freed when pins reaches 0.
 * nr_active / nr_inactive: pages of the group's folios on each LRU list
 * (under mem->lru_lock).
 */
struct uswap_memcg {
	struct uswap_mem *mem;
	uint16_t id;			/* the swap layer's group id (1..65535) */
	bool dead;			/* destroyed (memcg_lock) */
	struct cds_list_head node;	/* mem->memcgs (mem->memcg_lock) */
	_Atomic uint64_t memory_max;	/* pages */
	_Atomic long memory_current, memory_peak;
	_Atomic long pins;
	_Atomic long nr_mms;		/* address spaces in the group */
	_Atomic long nr_active, nr_inactive;
	struct uswap_workingset ws;	/* this group's nonresident age (its lruvec) */
	struct {
		_Atomic uint64_t events_max, events_oom, pgscan, pgsteal;
		_Atomic uint64_t pswpout, pswpin, workingset_refault, workingset_activate;
	} stat;
};

#define memcg_stat_add(cg, field, n) \
	do { if (cg) atomic_fetch_add_explicit(&(cg)->stat.field, (n), memory_order_relaxed); } while (0)

/* The group a folio is charged to, or NULL (the root). Lockless. */
static inline struct uswap_memcg *folio_memcg(const struct folio *f)
{
	return __atomic_load_n((struct uswap_memcg *const *)(const void *)&f->private,
			       __ATOMIC_ACQUIRE);
}

#define mem_stat_inc(mem, field) \
	atomic_fetch_add_explicit(&(mem)->stat.field, 1, memory_order_relaxed)
#define mem_stat_add(mem, field, n) \
	atomic_fetch_add_explicit(&(mem)->stat.field, (n), memory_order_relaxed)

static inline bool folio_is_shmem(const struct folio *f)
{
	return (uintptr_t)f->mapping & MAPPING_SHMEM;
}

static inline struct uswap_shmem *folio_shmem(const struct folio *f)
{
	return (struct uswap_shmem *)((uintptr_t)f->mapping & ~MAPPING_SHMEM);
}

static inline struct uswap_spinlock *vma_ptl(struct uswap_vma *vma, uint64_t pgno)
{
	return &vma->ptl[(pgno - vma->start) / PTES_PER_PTL];
}

static inline _Atomic pte_t *vma_pte(struct uswap_vma *vma, uint64_t pgno)
{
	return &vma->ptes[pgno - vma->start];
}

/* folio of the page a present PTE maps: its head. */
struct folio *page_folio_pfn(uint64_t pfn);

/* ---- mem.c ---- */
struct folio *mem_alloc_folio(struct uswap_mem *mem, unsigned int order);
void mem_wake_kswapd(struct uswap_mem *mem);
void mem_swapin_prepare(struct uswap_mem *mem);
int mem_swapin(struct uswap_mem *mem, struct uswap_memcg *memcg, swp_entry_t entry,
	       unsigned long orders, struct uswap_swapin_info *info, struct folio **out);

/* ---- memcontrol.c ---- */
int mem_cgroup_init(struct uswap_mem *mem);
void mem_cgroup_fini(struct uswap_mem *mem);
int mem_cgroup_try_charge(struct uswap_memcg *cg, unsigned long nr);
int mem_cgroup_try_charge_noreclaim(struct uswap_memcg *cg, unsigned long nr);
void mem_cgroup_force_charge(struct uswap_memcg *cg, unsigned long nr);
void mem_cgroup_cancel_charge(struct uswap_memcg *cg, unsigned long nr);
void mem_cgroup_commit_charge(struct folio *folio, struct uswap_memcg *cg);
struct uswap_memcg *mem_cgroup_get_by_id(struct uswap_mem *mem, uint16_t id);
void mem_cgroup_get(struct uswap_memcg *cg);
void mem_cgroup_put(struct uswap_memcg *cg);
void mem_cgroup_reclaim_over_max(struct uswap_memcg *cg);
struct uswap_workingset *folio_workingset(struct uswap_mem *mem, const struct folio *folio);
bool workingset_refault(struct uswap_mem *mem, struct folio *folio, uint64_t shadow);
struct folio *mem_alloc_folio_memcg(struct uswap_mem *mem, struct uswap_memcg *cg,
				    unsigned int order, int *err);

/* ---- lru.c ---- */
void lru_add(struct uswap_mem *mem, struct folio *folio, bool active);
bool lru_del(struct uswap_mem *mem, struct folio *folio);
unsigned int lru_isolate(struct uswap_mem *mem, bool active, struct folio **out, unsigned int max);
unsigned int lru_isolate_memcg(struct uswap_mem *mem, struct uswap_memcg *cg, bool active,
			       struct folio **out, unsigned int max);
void lru_putback(struct uswap_mem *mem, struct folio *folio, bool active);
void folio_mark_accessed(struct uswap_mem *mem, struct folio *folio);

/* ---- rmap.c ---- */
struct anon_vma *anon_vma_alloc(void);
void anon_vma_get(struct anon_vma *av);
void anon_vma_put(struct anon_vma *av);
void anon_vma_link(struct anon_vma *av, struct uswap_vma *vma);
void anon_vma_unlink(struct uswap_vma *vma);
void folio_add_anon_rmap(struct folio *folio, struct uswap_vma *vma, unsigned long nr);
void folio_remove_rmap(struct uswap_mem *mem, struct folio *folio, unsigned long nr);
int folio_referenced(struct folio *folio);
bool try_to_unmap(struct uswap_mem *mem, struct folio *folio);
int split_folio(struct uswap_mem *mem, struct folio *folio);

/* ---- vmscan.c ---- */
unsigned long shrink_memory(struct uswap_mem *mem, unsigned long nr_to_reclaim, bool direct);
unsigned long try_to_free_mem_cgroup_pages(struct uswap_memcg *cg, unsigned long nr_to_reclaim);

/* ---- memory.c ---- */
int handle_mm_fault(struct uswap_mm *mm, struct uswap_vma *vma, uint64_t pgno, bool write);
int peek_swap_page(struct uswap_mm *mm, struct uswap_vma *vma, uint64_t pgno, pte_t orig,
		   void *buf, size_t off, size_t len);
void zap_pte_range(struct uswap_vma *vma, uint64_t start, uint64_t end);
int copy_vma_ptes(struct uswap_vma *dst, struct uswap_vma *src);
struct uswap_vma *find_vma(struct uswap_mm *mm, uint64_t pgno);
int unuse_vma(struct uswap_vma *vma, unsigned int type);

/* ---- shmem.c ---- */
bool shmem_unmap_folio(struct uswap_shmem *shm, struct folio *folio);
int shmem_unuse(struct uswap_shmem *shm, unsigned int type);

#endif
