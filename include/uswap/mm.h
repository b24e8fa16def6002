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

struct uswap_mem_config {
	uint64_t budget_bytes;		/* frames of memory (>= 1 MiB) */
	unsigned int low_pct;		/* background reclaim below this % free (default 4) */
	unsigned int high_pct;		/* ... until this % free (default 8) */
	unsigned int max_order;		/* largest anon folio order faults use (0..9, default 0) */
	bool no_kswapd;			/* direct reclaim only */
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
};

/**
 * uswap_mem_create() - a memory budget: a frame pool plus LRU, watermarks,
 * a workingset clock and (unless disabled) a background reclaim thread.
 * Registers as a swap owner so that swapoff can bring its pages back.
 * Return: 0, -EINVAL, -ENOMEM.
 */
USWAP_API int uswap_mem_create(const struct uswap_mem_config *cfg, struct uswap_mem **out);
/** uswap_mem_destroy() - every mm and shmem object must be gone. */
USWAP_API void uswap_mem_destroy(struct uswap_mem *mem);
USWAP_API void uswap_mem_get_stats(struct uswap_mem *mem, struct uswap_mem_stats *st);
/** uswap_mem_reclaim() - reclaim up to @nr pages now. Return: pages freed. */
USWAP_API long uswap_mem_reclaim(struct uswap_mem *mem, unsigned long nr);

/** uswap_mm_create() - an empty address space. Return: 0, -ENOMEM. */
USWAP_API int uswap_mm_create(struct uswap_mem *mem, struct uswap_mm **out);
/** uswap_mm_destroy() - exit: unmap everything (swap entries put), free. */
USWAP_API void uswap_mm_destroy(struct uswap_mm *mm);
/**
 * uswap_mm_fork() - a child address space: page tables copied, swap
 * entries duplicated (swap_dup_entry_direct), present pages shared
 * copy-on-write. Context: may sleep; blocks faults of @parent meanwhile.
 * Return: 0, -ENOMEM.
 */
USWAP_API int uswap_mm_fork(struct uswap_mm *parent, struct uswap_mm **child);

/**
 * uswap_mm_mmap() - map @len bytes of anonymous memory (zero-filled on
 * first touch). Return: 0 and *addr (2 MiB aligned), -EINVAL, -ENOMEM.
 */
USWAP_API int uswap_mm_mmap(struct uswap_mm *mm, uint64_t len, uint64_t *addr);
/** uswap_mm_munmap() - unmap a whole mapping made by uswap_mm_mmap(). */
USWAP_API int uswap_mm_munmap(struct uswap_mm *mm, uint64_t addr);
/** uswap_mm_madvise_dontneed() - drop the pages of [addr, addr+len). */
USWAP_API int uswap_mm_madvise_dontneed(struct uswap_mm *mm, uint64_t addr, uint64_t len);

/**
 * uswap_mm_read() / uswap_mm_write() - copy to or from [addr, addr+len)
 * as a program's loads and stores would: faulting pages in (from swap
 * if needed), breaking copy-on-write on writes, marking pages accessed.
 * Context: may sleep (reclaim, I/O). Return: 0; -EFAULT (unmapped),
 * -ENOMEM (out of memory and swap), -EIO (the page's data was lost to a
 * device read error: SIGBUS in a real process).
 */
USWAP_API int uswap_mm_read(struct uswap_mm *mm, uint64_t addr, void *buf, size_t len);
USWAP_API int uswap_mm_write(struct uswap_mm *mm, uint64_t addr, const void *buf, size_t len);
/** uswap_mm_touch() - fault one page in for read or write. */
USWAP_API int uswap_mm_touch(struct uswap_mm *mm, uint64_t addr, bool write);

struct uswap_mm_stats {
	uint64_t rss_pages;		/* present PTEs */
	uint64_t swap_pages;		/* swap PTEs */
};
USWAP_API void uswap_mm_get_stats(struct uswap_mm *mm, struct uswap_mm_stats *st);

/**
 * uswap_shmem_create() - a file-like object of @len bytes whose pages are
 * swapped with one reference per folio. Return: 0, -ENOMEM, -EINVAL.
 */
USWAP_API int uswap_shmem_create(struct uswap_mem *mem, uint64_t len, struct uswap_shmem **out);
USWAP_API void uswap_shmem_destroy(struct uswap_shmem *shm);
USWAP_API int uswap_shmem_read(struct uswap_shmem *shm, uint64_t off, void *buf, size_t len);
USWAP_API int uswap_shmem_write(struct uswap_shmem *shm, uint64_t off, const void *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
