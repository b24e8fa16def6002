/* SPDX-License-Identifier: MIT */
/*
 * The mm layer: address spaces with page tables over a memory budget (a
 * frame pool), with LRU reclaim to swap, swap-in faults, copy-on-write,
 * fork, zap and swapoff's unuse — the kernel's mm as it uses swap.
 *
 * Emulated mode: accesses are calls (uswap_mm_read/write/touch); the data
 * lives in frames of the budget and in swap.
 *
 * Lock order (outermost first): mm->mmap_lock (rw) -> folio lock ->
 * anon_vma lock -> page-table lock (one per 512 pages) -> swap layer
 * (cluster locks) ; the LRU lock and shmem locks are leaves except that
 * the shmem lock is taken before swap-layer calls.
 */
#ifndef USWAP_MM_H
#define USWAP_MM_H

#include <uswap/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct uswap_mem;
struct uswap_mm;
struct uswap_shmem;
struct uswap_memcg;

/*
 * ABI rule for the structs of this header: each has a fixed size
 * (USWAP_*_SIZE, checked by the abi_layout test). A later release adds
 * fields by taking them from the front of __reserved, so that a binary
 * built against this header keeps working: the library zeroes __reserved
 * in what it fills, and refuses (-EINVAL) a config whose __reserved is not
 * zero, so a zero-initialized config keeps meaning "defaults" forever.
 */
#define USWAP_MEM_CONFIG_SIZE 64
#define USWAP_MEM_STATS_SIZE 320
#define USWAP_MM_STATS_SIZE 128
#define USWAP_MEMCG_CONFIG_SIZE 64
#define USWAP_MEMCG_STATS_SIZE 256

struct uswap_mem_config {
	uint64_t budget_bytes;		/* frames of memory (>= 1 MiB) */
	unsigned int low_pct;		/* background reclaim below this % free (default 4) */
	unsigned int high_pct;		/* ... until this % free (default 8) */
	unsigned int max_order;		/* largest anon folio order faults use (0..9, default 0) */
	bool no_kswapd;			/* direct reclaim only */
	int page_cluster;		/* vm.page-cluster 1..5: readahead windows up to
					 * 2^N pages; 0: the default, 3; -1: page-cluster 0
					 * (no readahead) */
	/* optional: pages of memory outside the frame pool charged to the
	 * budget (a compressed swap device's store, which the kernel keeps
	 * in RAM); reclaim keeps free frames minus these above the marks.
	 * Called from allocation and reclaim paths: lockless, cheap. */
	uint64_t (*charged_pages)(void *arg);
	void *charged_arg;
	uint64_t __reserved[2];		/* must be zero */
};

struct uswap_mem_stats {
	uint64_t nr_frames, free_frames;
	uint64_t nr_active, nr_inactive;
	uint64_t swapouts, swapins;	/* pages written / read */
	uint64_t major_faults, minor_faults;
	uint64_t refaults, refault_activations;
	uint64_t cow_copies, cow_reuses;
	uint64_t thp_splits, write_errors, read_errors, sigbus;
	uint64_t direct_reclaims, kswapd_wakeups, reclaimed;
	uint64_t swapin_cache_hits, swap_frees_after_map;
	uint64_t swapoff_lost;		/* pages swapoff could not read back (a
					 * failed device): now -EIO on access */
	uint64_t peek_drops;		/* folios uswap_mm_peek() read and freed
					 * after copying (drop-behind) */
	uint64_t __reserved[17];	/* zeroed; later fields come from here */
};

/**
 * uswap_mem_create() - a memory budget: a frame pool plus LRU, watermarks,
 * a workingset clock and (unless disabled) a background reclaim thread.
 * @cfg: the budget's size and reclaim settings (zeros take the defaults).
 * @out: receives the budget.
 *
 * The budget registers as a swap owner (uswap_swap_set_owner()) so that
 * uswap_swapoff_type() can bring its pages back into memory.
 *
 * Context: may sleep; starts a thread unless @cfg->no_kswapd.
 * Return: 0 and *@out; -EINVAL (@cfg NULL, budget under 1 MiB, max_order
 * above USWAP_MAX_ORDER, page_cluster outside -1..5, @cfg->__reserved not
 * zero), -ENOMEM.
 */
USWAP_API int uswap_mem_create(const struct uswap_mem_config *cfg, struct uswap_mem **out);

/**
 * uswap_mem_destroy() - stop the budget's reclaim thread and free it.
 * @mem: the budget, or NULL (nothing is done).
 *
 * Every address space and shmem object of the budget must have been
 * destroyed first; the pages its LRU still holds are freed.
 *
 * Context: may sleep; no other thread may use @mem.
 */
USWAP_API void uswap_mem_destroy(struct uswap_mem *mem);

/**
 * uswap_mem_get_stats() - the budget's counters, copied into *@st.
 * Context: any; lockless, the figures are not one atomic snapshot.
 */
USWAP_API void uswap_mem_get_stats(struct uswap_mem *mem, struct uswap_mem_stats *st);

/**
 * uswap_mem_reclaim() - reclaim up to @nr pages now.
 * Reclaim as an allocation under pressure would: age the LRU, write
 * pages out to swap and free them.
 * Context: may sleep; one reclaimer at a time per budget.
 * Return: the number of pages freed (0 when nothing could be).
 */
USWAP_API long uswap_mem_reclaim(struct uswap_mem *mem, unsigned long nr);

/**
 * uswap_mm_create() - an empty address space charged to budget @mem.
 * Context: may sleep.
 * Return: 0 and *@out, -ENOMEM.
 */
USWAP_API int uswap_mm_create(struct uswap_mem *mem, struct uswap_mm **out);

/**
 * uswap_mm_destroy() - exit: unmap everything (swap entries put), free.
 * Context: may sleep; no other thread may use @mm.
 */
USWAP_API void uswap_mm_destroy(struct uswap_mm *mm);

/**
 * uswap_mm_fork() - a child address space in the parent's group: page
 * tables copied, swap entries duplicated (swap_dup_entry_direct()), present
 * pages shared copy-on-write.
 * Context: may sleep; blocks faults of @parent meanwhile.
 * Return: 0 and *@child, -ENOMEM.
 */
USWAP_API int uswap_mm_fork(struct uswap_mm *parent, struct uswap_mm **child);

/**
 * uswap_mm_mmap() - map @len bytes of anonymous memory (zero-filled on
 * first touch).
 * Context: may sleep; takes @mm's mmap lock for writing.
 * Return: 0 and *@addr (2 MiB aligned), -EINVAL (@len 0 or too large),
 * -ENOMEM.
 */
USWAP_API int uswap_mm_mmap(struct uswap_mm *mm, uint64_t len, uint64_t *addr);

/**
 * uswap_mm_munmap() - unmap a whole mapping made by uswap_mm_mmap().
 * Its pages are freed and its swap entries put.
 * Context: may sleep; takes @mm's mmap lock for writing.
 * Return: 0, -EINVAL (no mapping starts at @addr).
 */
USWAP_API int uswap_mm_munmap(struct uswap_mm *mm, uint64_t addr);

/**
 * uswap_mm_madvise_dontneed() - drop the pages of [@addr, @addr + @len).
 * As madvise(MADV_DONTNEED): present pages are unmapped and swap entries
 * put; the range reads back as zeros.
 * Context: may sleep; takes @mm's mmap lock for writing.
 * Return: 0, -EINVAL (@len 0, or the range is not inside one mapping).
 */
USWAP_API int uswap_mm_madvise_dontneed(struct uswap_mm *mm, uint64_t addr, uint64_t len);

/**
 * uswap_mm_mlock() - set or clear VM_LOCKED on the whole mapping that
 * starts at @addr, as mlock2(MLOCK_ONFAULT) and munlock() do: nothing is
 * faulted in, and later swap-ins into a locked mapping drop the swap copy
 * once mapped (should_try_to_free_swap()). Not inherited by fork, as the
 * kernel's dup_mmap() clears VM_LOCKED. Reclaim does not yet keep a locked
 * mapping's pages resident (no unevictable list).
 * Context: may sleep; takes @mm's mmap lock for writing.
 * Return: 0, -EINVAL (no mapping starts at @addr).
 */
USWAP_API int uswap_mm_mlock(struct uswap_mm *mm, uint64_t addr, bool locked);

/**
 * uswap_mm_read() - copy [@addr, @addr + @len) of @mm into @buf.
 * As a program's loads would: faulting pages in (from swap if needed)
 * and marking them accessed.
 * Context: may sleep (reclaim, I/O).
 * Return: 0; -EFAULT (unmapped), -ENOMEM (out of memory and swap), -EIO
 * (the page's data was lost to a device read error: SIGBUS in a real
 * process).
 */
USWAP_API int uswap_mm_read(struct uswap_mm *mm, uint64_t addr, void *buf, size_t len);

/**
 * uswap_mm_peek() - copy [@addr, @addr + @len) of @mm into @buf without
 * faulting anything in. A present page is copied as it is; a page never
 * touched reads as zeros; a swapped-out page is read as MADV_WILLNEED
 * reads it, into the swap cache (clean, unmapped, on the LRU for reclaim
 * to drop without I/O), and its swap entry stays: the slot keeps the
 * data, so a page peeked and then left alone is never written again.
 * Context: may sleep (reclaim, I/O).
 * Return: 0; -EFAULT (unmapped), -ENOMEM (no frame to read into), -EIO
 * (the page's data was lost to a device read error).
 */
USWAP_API int uswap_mm_peek(struct uswap_mm *mm, uint64_t addr, void *buf, size_t len);

/**
 * uswap_mm_same() - whether the page at @addr (page-aligned) of @mm holds
 * exactly the page of bytes at @buf. Nothing is faulted in or mapped and
 * no frame is taken: a present page is compared as it is, a page never
 * touched as zeros, a swapped-out page with its swap-cache folio if one
 * is cached, else with its slot read straight from the device.
 * The caller is the only writer of @mm's pages (a concurrent write to
 * the page may be seen half done).
 * Context: may sleep (I/O).
 * Return: 1 the same, 0 different; -EINVAL (@addr not aligned), -EFAULT
 * (unmapped), -EIO (the page's data was lost to a device read error),
 * -EOPNOTSUPP (a swapped page of a device without a backend).
 */
USWAP_API int uswap_mm_same(struct uswap_mm *mm, uint64_t addr, const void *buf);

/**
 * uswap_mm_write() - copy @buf into [@addr, @addr + @len) of @mm.
 * As a program's stores would: faulting pages in (from swap if needed),
 * breaking copy-on-write, marking pages accessed and dirty.
 * Context: may sleep (reclaim, I/O).
 * Return: 0; -EFAULT (unmapped), -ENOMEM (out of memory and swap), -EIO
 * (the page's data was lost to a device read error).
 */
USWAP_API int uswap_mm_write(struct uswap_mm *mm, uint64_t addr, const void *buf, size_t len);

/**
 * uswap_mm_touch() - fault the page at @addr in, for read or (@write) write.
 * Context: may sleep (reclaim, I/O).
 * Return: 0; -EFAULT, -ENOMEM, -EIO as uswap_mm_read().
 */
USWAP_API int uswap_mm_touch(struct uswap_mm *mm, uint64_t addr, bool write);

struct uswap_mm_stats {
	uint64_t rss_pages;		/* present PTEs */
	uint64_t swap_pages;		/* swap PTEs */
	uint64_t readahead_pages;	/* folios read ahead by this mm's faults */
	uint64_t readahead_hits;	/* this mm's faults that hit a readahead folio */
	uint64_t __reserved[12];	/* zeroed; later fields come from here */
};

/**
 * uswap_mm_get_stats() - @mm's page counts, copied into *@st.
 * Context: any; lockless.
 */
USWAP_API void uswap_mm_get_stats(struct uswap_mm *mm, struct uswap_mm_stats *st);

/**
 * uswap_shmem_create() - a file-like object of @len bytes whose pages are
 * swapped with one reference per folio.
 * Its pages read as zeros until written; they are charged to @mem.
 * Context: may sleep.
 * Return: 0 and *@out, -EINVAL (@len 0), -ENOMEM.
 */
USWAP_API int uswap_shmem_create(struct uswap_mem *mem, uint64_t len, struct uswap_shmem **out);

/**
 * uswap_shmem_destroy() - free a shmem object: its folios and swap entries.
 * Context: may sleep; no access to @shm may run; excludes reclaim meanwhile.
 */
USWAP_API void uswap_shmem_destroy(struct uswap_shmem *shm);

/**
 * uswap_shmem_read() - copy [@off, @off + @len) of @shm into @buf.
 * Pages are brought in from swap as needed.
 * Context: may sleep (reclaim, I/O).
 * Return: 0; -EFAULT (past the end of the object), -ENOMEM, -EIO.
 */
USWAP_API int uswap_shmem_read(struct uswap_shmem *shm, uint64_t off, void *buf, size_t len);

/**
 * uswap_shmem_write() - copy @buf into [@off, @off + @len) of @shm.
 * Pages are brought in from swap as needed and marked dirty.
 * Context: may sleep (reclaim, I/O).
 * Return: 0; -EFAULT (past the end of the object), -ENOMEM, -EIO.
 */
USWAP_API int uswap_shmem_write(struct uswap_shmem *shm, uint64_t off, const void *buf, size_t len);

/* ---- memory cgroups ----
 *
 * A group of address spaces of one budget with a memory limit (memory.max)
 * and a swap limit (memory.swap.max), flat (no hierarchy), as the kernel's
 * cgroup v2 memory controller. An address space belongs to one group for
 * its life, and its children (uswap_mm_fork()) to the same. The folios it
 * allocates are charged to the group's memory counter until freed; a
 * folio swapped in is charged to the group its slot is charged to. A
 * charge over memory.max reclaims from the group's folios first and fails
 * (-ENOMEM from the access) only when nothing of the group can be
 * reclaimed. At swap.max the group's folios stay in memory: reclaim skips
 * them. Refaults are judged at the group that evicted the page. Shmem
 * objects belong to the root (no group).
 */

struct uswap_memcg_config {
	uint64_t memory_max;	/* pages; UINT64_MAX: no limit (memory.max) */
	uint64_t swap_max;	/* pages; UINT64_MAX: no limit (memory.swap.max) */
	uint64_t __reserved[6];	/* must be zero */
};

struct uswap_memcg_stats {
	uint64_t memory_current, memory_peak, memory_max;	/* pages */
	uint64_t swap_current, swap_peak, swap_max;		/* pages (from uswap_swap_cgroup_stat) */
	uint64_t events_max;		/* charges that hit memory.max and reclaimed */
	uint64_t events_oom;		/* charges refused: nothing left to reclaim */
	uint64_t swap_events_max, swap_events_fail;
	uint64_t pgscan, pgsteal;	/* reclaim in this group (any reclaim) */
	uint64_t pswpout, pswpin;	/* pages swapped out / in for this group */
	uint64_t workingset_refault, workingset_activate;	/* refaults judged at this group */
	uint64_t __reserved[16];	/* zeroed */
};

/**
 * uswap_memcg_create() - a memory cgroup of budget @mem.
 * @mem: the budget whose address spaces may join the group.
 * @cfg: its limits, or NULL for none (UINT64_MAX in a field: no limit).
 * @out: receives the group.
 *
 * The group takes a swap-layer group id (uswap_swap_cgroup_create()),
 * which uswap_memcg_id() returns.
 *
 * Context: may sleep.
 * Return: 0 and *@out; -EINVAL (@mem or @out NULL, @cfg->__reserved not
 * zero), -ENOMEM, -ENOSPC (every group id is taken).
 */
USWAP_API int uswap_memcg_create(struct uswap_mem *mem, const struct uswap_memcg_config *cfg,
				 struct uswap_memcg **out);

/**
 * uswap_memcg_destroy() - end a group that no address space belongs to.
 * @cg: the group.
 *
 * Its folios still in memory stay charged to it, and its slots to its id,
 * until freed; @cg may not be used again. Groups left at
 * uswap_mem_destroy() are destroyed with the budget.
 *
 * Context: may sleep.
 * Return: 0; -EBUSY (an address space is in the group), -EINVAL (@cg NULL).
 */
USWAP_API int uswap_memcg_destroy(struct uswap_memcg *cg);

/**
 * uswap_memcg_set_memory_max() - set memory.max to @pages; a group over
 * the new limit is reclaimed down to it as far as reclaim can.
 * Context: may sleep (reclaim).
 * Return: 0, -EINVAL (@cg NULL).
 */
USWAP_API int uswap_memcg_set_memory_max(struct uswap_memcg *cg, uint64_t pages);

/**
 * uswap_memcg_set_swap_max() - set memory.swap.max to @pages. A limit
 * below the usage refuses new slots and frees none.
 * Context: any.
 * Return: 0, -EINVAL (@cg NULL).
 */
USWAP_API int uswap_memcg_set_swap_max(struct uswap_memcg *cg, uint64_t pages);

/**
 * uswap_memcg_id() - the group's id, as folios, slots and shadows carry it.
 * Context: any.
 * Return: the id (1..65535), 0 for NULL (the root).
 */
USWAP_API uint16_t uswap_memcg_id(const struct uswap_memcg *cg);

/**
 * uswap_memcg_get_stats() - the group's counters, copied into *@st.
 * Context: any; lockless, the figures are not one atomic snapshot.
 * Return: nothing.
 */
USWAP_API void uswap_memcg_get_stats(struct uswap_memcg *cg, struct uswap_memcg_stats *st);

/**
 * uswap_mm_create_memcg() - an empty address space of budget @mem in
 * group @cg (NULL: the root, as uswap_mm_create()).
 * Context: may sleep.
 * Return: 0 and *@out; -EINVAL (@cg of another budget, or destroyed),
 * -ENOMEM.
 */
USWAP_API int uswap_mm_create_memcg(struct uswap_mem *mem, struct uswap_memcg *cg,
				    struct uswap_mm **out);

#ifdef __cplusplus
}
#endif
#endif
