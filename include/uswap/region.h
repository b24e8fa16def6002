/* SPDX-License-Identifier: MIT */
/*
 * The in-process mode: a program that links libuswap swaps its own memory.
 * A region pool has one budget of resident bytes, a userfaultfd and a
 * handler thread; its regions are private anonymous mappings the library
 * makes. Pages over the budget are moved out (UFFDIO_MOVE) and written to
 * swap through the mm and swap layers; an access brings them back
 * (UFFDIO_COPY), as kernel swap would. docs/RUNTIME.md, "The in-process
 * mode", gives the threads and the races.
 */
#ifndef USWAP_REGION_H
#define USWAP_REGION_H

#include <uswap/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct uswap_region_pool;

/* Fixed sizes, as the other public structs (see <uswap/mm.h>). */
#define USWAP_REGION_CONFIG_SIZE 64
#define USWAP_REGION_STAT_SIZE 256

struct uswap_region_config {
	uint64_t budget_bytes;		/* resident bytes of all the pool's regions
					 * together (>= 64 KiB) */
	const char *swap;		/* a device spec (uswap_swapon_spec()), turned on
					 * for the pool and off at its destroy; NULL: the
					 * devices already on */
	const char *design;		/* with @swap: "table" (NULL) or "legacy" */
	/* Appended from __reserved (the size stays 64 bytes) */
	uint64_t total_bytes;		/* 0, or a bound on resident + compressed
					 * bytes together (needs @swap: the pool's
					 * own device's compressed store counts) */
	uint64_t flags;			/* USWAP_REGION_* below */
	uint64_t __reserved[3];		/* must be zero */
};

/* flags: the regions are not inherited by a fork()ed child (MADV_DONTFORK):
 * a fork then brings nothing in and the budget holds throughout. */
#define USWAP_REGION_NOFORK	(1ULL << 0)
/* flags: cold pages in fault order, without refault activation or written
 * bits (for comparison, as `uswap run --evict fifo`). */
#define USWAP_REGION_EVICT_FIFO	(1ULL << 1)

struct uswap_region_stat {
	uint64_t regions, region_bytes;	/* the pool's regions and their size */
	uint64_t budget_pages;
	uint64_t resident_pages;	/* present in the regions, as the pool counts */
	uint64_t swapped_pages;		/* moved out: in the mirror or on a device */
	uint64_t peak_resident_pages;
	uint64_t faults;		/* faults the handler read */
	uint64_t zero_fills, zero_pages;	/* first touches: runs and pages */
	uint64_t swapins, prefetched;	/* swap-in runs; pages beyond the faulting one */
	uint64_t evict_batches, evicted;
	uint64_t evict_busy;		/* pages the kernel refused (shared after fork) */
	uint64_t evict_failed;		/* pages kept resident: swap full */
	uint64_t poisoned;		/* pages lost to a device read error (SIGBUS) */
	uint64_t removes, unmaps;	/* MADV_DONTNEED and munmap events */
	uint64_t forks;			/* fork()s prepared (every page brought in) */
	uint64_t fault_p50_us, fault_p99_us;	/* handler service time, upper bounds of
						 * power-of-two buckets */
	/* Appended from __reserved (the size stays 256 bytes) */
	uint64_t total_pages;		/* the resident + compressed bound (0: none) */
	uint64_t compressed_bytes;	/* the pool's own device's compressed store
					 * (zram's pool bytes; 0 without @swap) */
	uint64_t peak_compressed_bytes;
	uint64_t peak_total_pages;	/* peak of resident + compressed (in pages,
					 * rounded up) */
	uint64_t refaults;		/* pages swapped back in (all were evicted) */
	uint64_t refaults_activated;	/* ... within the active list's room */
	uint64_t refault_ppm;		/* refaults per million pages evicted */
	uint64_t written;		/* resident pages found written (PAGEMAP_SCAN) */
	uint64_t remaps;		/* mremap()s of a region followed */
	uint64_t cow_unshared;		/* pages shared with a forked child that the
					 * handler unshared to evict them */
	uint64_t __reserved[1];		/* zeroed; later fields come from here */
};

/**
 * uswap_region_pool_create() - a set of regions with one budget.
 * @cfg: the budget, and optionally a swap device for the pool.
 * @out: receives the pool.
 *
 * Creates a userfaultfd (UFFDIO_MOVE and the REMOVE, UNMAP and REMAP
 * events are required), a mirror address space in the mm layer through which evicted
 * pages reach the swap devices, and the pool's handler thread, which
 * serves the regions' faults and evicts when the budget is exceeded. Cold
 * pages are chosen from an inactive and an active list, with the refault
 * distance of the kernel's workingset and, where the kernel has
 * UFFD_FEATURE_WP_ASYNC, the written bits of PAGEMAP_SCAN.
 *
 * With @cfg->total_bytes, the resident budget shrinks by what the pool's
 * device holds compressed, so that resident + compressed stays within the
 * bound (never below 16 resident pages: a store that fills the bound on
 * its own shows in the stat's peak_total_pages).
 *
 * A fork() of the caller brings every page of every pool in first (the
 * child's copies are not registered and would read zeros otherwise); fork()
 * returns in the parent once the pool is back within its budget (pages
 * still shared with the child are unshared by MADV_POPULATE_WRITE to be
 * moved out). With USWAP_REGION_NOFORK the child gets no regions and the
 * budget holds throughout. In the child the pools are inert.
 *
 * Context: may sleep; starts a thread; needs the right to create a
 * userfaultfd (CAP_SYS_PTRACE, or access to /dev/userfaultfd).
 * Return: 0 and *@out; -EINVAL (@cfg or @out NULL, budget under 64 KiB,
 * @cfg->__reserved not zero, @cfg->design unknown or without @cfg->swap,
 * @cfg->total_bytes under 64 KiB or without @cfg->swap, an unknown flag),
 * -EPERM (no userfaultfd), -EOPNOTSUPP (the kernel lacks UFFDIO_MOVE or
 * the events), -ENOMEM, or the error of turning @cfg->swap on.
 */
USWAP_API int uswap_region_pool_create(const struct uswap_region_config *cfg,
				       struct uswap_region_pool **out);

/**
 * uswap_region_pool_destroy() - destroy the pool's regions (their swapped
 * pages freed on the devices), stop its thread, turn its device off.
 * @pool: the pool, or NULL (nothing is done).
 *
 * In a child forked from the pool's owner this only unmaps the regions:
 * the child has no handler and must not use the swap layer.
 *
 * Context: may sleep; no other thread may use @pool or its regions.
 */
USWAP_API void uswap_region_pool_destroy(struct uswap_region_pool *pool);

/**
 * uswap_region_create() - map a region of @len bytes, under @pool's budget.
 * @pool: the pool.
 * @len: the size, rounded up to whole pages.
 * @addr: receives the region's address.
 *
 * The region is private anonymous memory that reads as zeros until
 * written. The caller may read, write and MADV_DONTNEED it from any thread;
 * kernel accesses (read(2) into it) work too. It may be mremap()ed as a
 * whole: moved (MREMAP_MAYMOVE, MREMAP_FIXED: the region is then at the
 * new address for uswap_region_destroy()), grown (in place or moved: the
 * new pages are part of the region, under the budget) or shrunk (the
 * pool follows the kernel's REMAP and UNMAP events). Moving a part of a
 * region out of it is not supported: the program is aborted with a
 * message rather than lose that part's swapped pages. It must not be
 * mprotect()ed or partly unmapped other than at its end.
 *
 * Context: may sleep; any thread; not in a forked child of the pool's
 * owner.
 * Return: 0 and *@addr; -EINVAL (@pool or @addr NULL, @len 0 or above
 * 64 GiB), -ECHILD (in a forked child), -ENOMEM.
 */
USWAP_API int uswap_region_create(struct uswap_region_pool *pool, uint64_t len, void **addr);

/**
 * uswap_region_destroy() - unmap the region at @addr; its swapped pages
 * are freed on the devices.
 * @pool: the pool the region belongs to.
 * @addr: the address uswap_region_create() gave.
 *
 * A thread still touching the region is woken and faults like on any
 * unmapped memory.
 *
 * Context: may sleep; any thread.
 * Return: 0; -EINVAL (@pool NULL, @addr not a region of @pool).
 */
USWAP_API int uswap_region_destroy(struct uswap_region_pool *pool, void *addr);

/**
 * uswap_region_pool_stat() - @pool's counters, copied into *@st.
 * Context: any thread; waits while the handler serves a round of faults.
 * Return: 0; -EINVAL (@pool or @st NULL).
 */
USWAP_API int uswap_region_pool_stat(struct uswap_region_pool *pool,
				     struct uswap_region_stat *st);

#ifdef __cplusplus
}
#endif
#endif
