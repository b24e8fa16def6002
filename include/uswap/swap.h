/* SPDX-License-Identifier: MIT */
/*
 * The swap slot layer: devices, the folio-based slot workflow, the swap
 * cache and counts. Names follow the kernel's mm/swapfile.c and
 * mm/swap_state.c; calls that are system calls there are uswap_*.
 *
 * Every slot's whole state is one 64-bit swap table entry: free, swapped
 * out (shadow + count), cached (frame + count) or bad. A slot's life:
 *   free -> folio_alloc_swap (cached, count 0, pinned by the cache)
 *        -> folio_dup_swap per mapping (count >= 1)
 *        -> the folio leaves the cache (shadow keeps the count)
 *        -> swap_put_entries_direct / folio_put_swap drop references
 *        -> count 0 and not cached: free again.
 * Two freeing rules: a count-0 slot is freed as soon as its folio leaves
 * the cache; a cached slot whose count reaches 0 stays until the cache is
 * dropped.
 *
 * Errors are negative errno values. Common ones:
 *   -EINVAL  bad slot, out-of-range offset, or a call's precondition unmet
 *            (folio not locked, not in the swap cache, ...);
 *   -ENODEV  the entry's device is not (or no longer) swapped on;
 *   -ENOENT  the slot holds no reference it could take or drop;
 *   -ENOMEM  no slot, or no memory for an extend table.
 */
#ifndef USWAP_SWAP_H
#define USWAP_SWAP_H

#include <uswap/common.h>
#include <uswap/folio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* swapon flags, as swapon(2) */
#define SWAP_FLAG_PREFER	0x8000
#define SWAP_FLAG_PRIO_MASK	0x7fff
#define SWAP_FLAG_DISCARD	0x10000
#define SWAP_FLAG_DISCARD_ONCE	0x20000
#define SWAP_FLAG_DISCARD_PAGES	0x40000
/* uswap's own: treat the device as rotational (one global cluster) */
#define USWAP_FLAG_ROTATIONAL	0x1000000
/* uswap's own: the device is synchronous (SWP_SYNCHRONOUS_IO) */
#define USWAP_FLAG_SYNCHRONOUS	0x2000000
/* uswap's own, uswap_swapon(): seal every page written with a key of this
 * swapon (a spec's ",encrypt", on by default there) */
#define USWAP_FLAG_ENCRYPT	0x4000000
#define USWAP_SWAPON_FLAGS_MASK	(SWAP_FLAG_PREFER | SWAP_FLAG_PRIO_MASK | \
				 SWAP_FLAG_DISCARD | SWAP_FLAG_DISCARD_ONCE | \
				 SWAP_FLAG_DISCARD_PAGES | USWAP_FLAG_ROTATIONAL | \
				 USWAP_FLAG_SYNCHRONOUS | USWAP_FLAG_ENCRYPT)

/**
 * uswap_swapon_mem() - swap on an in-memory device of nr_pages slots
 * (slot 0 is the header slot and is bad; the tail of the last cluster is
 * masked bad).
 * @nr_pages: slots including the header slot (the header's last_page + 1).
 * @flags: SWAP_FLAG_* / USWAP_FLAG_*; SWAP_FLAG_PREFER sets the priority.
 * Context: may sleep; takes the global swap lock.
 * Return: the device type (>= 0), -EINVAL (fewer than 2 slots, unknown
 * flags), -EPERM (all MAX_SWAPFILES types in use), -ENOMEM (no memory for
 * the device's metadata).
 */
USWAP_API int uswap_swapon_mem(uint64_t nr_pages, int flags);

/**
 * uswap_swapon() - swap on a regular file or block device carrying a
 * Linux swap header (util-linux mkswap or uswap mkswap).
 * @path: the file or device.
 * @flags: SWAP_FLAG_* (priority, discard) and USWAP_FLAG_*.
 *
 * The header is checked as the kernel checks it, bad pages are marked in
 * the swap table, and the device takes allocations once it is fully set
 * up. SWAP_FLAG_PREFER with a priority in SWAP_FLAG_PRIO_MASK orders the
 * devices (higher is used first, equal priorities take turns);
 * SWAP_FLAG_DISCARD has freed clusters hole-punched or discarded before
 * they are reused; USWAP_FLAG_ENCRYPT seals every page written (AEAD, a
 * key that dies with the device; a page changed on the device reads as
 * -EIO). The file must be a block device, or a regular file owned by the
 * caller and private to it; its swap lock (an OFD lock) keeps other
 * processes from swapping on it at once.
 *
 * Context: may sleep; takes the global swap lock.
 * Return: the device type (>= 0); -ENOENT (@path does not exist), -EACCES
 * (@path may not be opened for reading and writing),
 * -EINVAL (no swap signature, an old or unknown header version, an empty
 * area, a bad page out of range or listed twice, a file shorter than its
 * header says, unknown flags: the reason is reported as a debug message,
 * see uswap_set_output(); uswap_swapon_ex() returns it), -EBUSY (the file
 * is swapped on, or being swapped on, under this or another name, here or
 * by another process), -EPERM (a file other users can read or write, or
 * owned by another user; all MAX_SWAPFILES types in use), -ENOMEM (no
 * memory for the device's metadata).
 */
USWAP_API int uswap_swapon(const char *path, int flags);

/**
 * uswap_swapon_ex() - uswap_swapon() that puts the reason of a failure in @err.
 * @err: receives a NUL-terminated reason when the call fails (may be NULL).
 * @errlen: the size of @err.
 *
 * Nothing is reported through the output function: the reason is the
 * caller's to print.
 *
 * Context: may sleep; takes the global swap lock.
 * Return: as uswap_swapon(): the device type (>= 0); -ENOENT (@path does
 * not exist), -EACCES (@path may not be opened), -EINVAL (no or bad
 * header, unknown flags: the reason is in @err), -EBUSY (the file is
 * swapped on, or being swapped on, under this or another name), -EPERM
 * (all types in use), -ENOMEM (no memory for the metadata).
 */
USWAP_API int uswap_swapon_ex(const char *path, int flags, char *err, size_t errlen);

/**
 * uswap_swapon_spec() - swap on a device spec: "zram:SIZE[:lz4|zstd]"
 * (compressed memory, synchronous; a header is written to its slot 0) or
 * "file:PATH" (as uswap_swapon()).
 * @err: receives the reason of a failure (may be NULL).
 * @errlen: the size of @err.
 *
 * Context: may sleep; takes the global swap lock.
 * Return: as uswap_swapon(); -EINVAL (a bad spec, with the reason in
 * @err).
 */
USWAP_API int uswap_swapon_spec(const char *spec, int flags, char *err, size_t errlen);

/**
 * uswap_swapon_spec_design() - uswap_swapon_spec() with a slot design:
 * @design "table" (the swap table, as uswap_swapon_spec()) or "legacy"
 * (the old swap_map design, uswap/legacy.h).
 * Context: may sleep; takes the global swap lock.
 * Return: the device type (>= 0); -EINVAL (unknown design or bad spec,
 * with the reason in @err), and the errors of uswap_swapon_spec().
 */
USWAP_API int uswap_swapon_spec_design(const char *spec, int flags, const char *design,
				       char *err, size_t errlen);

/**
 * uswap_swapon_mem_design() - uswap_swapon_mem() with a slot design
 * ("table" or "legacy"): an in-memory device without a backend (no I/O).
 * Context: may sleep; takes the global swap lock.
 * Return: as uswap_swapon_mem(); -EINVAL for an unknown design.
 */
USWAP_API int uswap_swapon_mem_design(uint64_t nr_pages, int flags, const char *design);

/**
 * uswap_swapoff() - swap off the device swapped on from @path.
 * The device is found by the real path of @path, then taken off as
 * uswap_swapoff_type() does.
 * Context: may sleep.
 * Return: 0; -ENOENT (@path does not resolve), -EINVAL (@path NULL, or no
 * device was swapped on from it), or an error of uswap_swapoff_type().
 */
USWAP_API int uswap_swapoff(const char *path);

/**
 * uswap_swapoff_type() - swap off device @type.
 * Stops allocation, waits for every thread pinning the device to leave,
 * asks the registered owner (uswap_swap_set_owner) to give back its
 * entries, and frees the device when no slot is in use. Swapons and
 * swapoffs of other devices may run meanwhile.
 * Context: may sleep. Return: 0, -EINVAL (no such device), -EBUSY (slots
 * still in use: the device is left working), or the owner's error.
 */
USWAP_API int uswap_swapoff_type(unsigned int type);

/**
 * uswap_swap_set_owner() - register (@add) or remove an owner of swap
 * entries: at swapoff, each owner's @unuse(type, arg) must bring every page
 * it has on that device back to memory and drop its references (the
 * kernel's try_to_unuse for the mm layer). Context: takes the owners'
 * lock for writing: a removal waits for the swapoffs running @unuse, and
 * @unuse is not called once it returns. @unuse runs without the swap lock
 * (it may lock folios, swap in, swap other devices on or off) but must not
 * add or remove owners.
 * Return: 0, -EINVAL, -ENOSPC (16 owners already).
 */
USWAP_API int uswap_swap_set_owner(int (*unuse)(unsigned int type, void *arg), void *arg,
				   bool add);

/**
 * uswap_swap_type_active() - whether device @type is swapped on.
 * Unlike the calls that take an entry, reports nothing when it is not.
 * Context: any; lockless.
 * Return: true if @type is swapped on and not being swapped off.
 */
USWAP_API bool uswap_swap_type_active(unsigned int type);

/*
 * Fixed size (USWAP_SWAP_STAT_SIZE): later fields are taken from the
 * front of __reserved, which the library zeroes, so old binaries keep
 * working (see the ABI rule in <uswap/mm.h>).
 */
#define USWAP_SWAP_STAT_SIZE 256

struct uswap_swap_stat {
	uint64_t max;			/* slots including header and bad slots */
	uint64_t pages;			/* usable slots */
	uint64_t inuse_pages;		/* allocated slots */
	uint64_t nr_clusters;
	uint64_t nr_tables;		/* swap tables allocated now */
	uint64_t nr_extend_tables;	/* extend tables allocated now */
	uint64_t nr_bad;		/* bad slots below max (header included) */
	uint64_t static_bytes;		/* metadata allocated at swapon */
	uint64_t dynamic_bytes;		/* swap + extend tables now */
	int prio;
	unsigned int flags;		/* SWP_* */
	uint64_t reads, writes;		/* I/O requests completed */
	uint64_t read_errors, write_errors;
	uint64_t ra_pages, ra_hits;	/* readahead folios added / later used */
	/* Appended from __reserved (the size stays 256 bytes) */
	uint64_t compressed_bytes;	/* a compressed-memory device's store: the
					 * memory holding its data (0 for others) */
	uint64_t sealed_changed;	/* an encrypted device: pages that failed
					 * to open (changed on the device) */
	uint32_t sealed_with;		/* USWAP_SEALED_*: the cipher of an
					 * encrypted device, 0 for others */
	uint32_t __pad;			/* zeroed */
	uint64_t zero_out;		/* pages found all zeros at swap-out: their
					 * slots flagged, nothing written */
	uint64_t zero_in;		/* pages filled with zeros at swap-in, not read */
	uint64_t __reserved[11];	/* zeroed; later fields come from here */
};

/* uswap_swap_stat().sealed_with */
#define USWAP_SEALED_NONE		0
#define USWAP_SEALED_XCHACHA20		2	/* XChaCha20-Poly1305 */
#define USWAP_SEALED_AES256GCM		3	/* AES-256-GCM */

/**
 * uswap_swap_stat() - device @type's figures, copied into *@st.
 * Context: any; lockless, the figures are not one atomic snapshot.
 * Return: 0, -EINVAL (@type out of range), -ENODEV (not swapped on).
 */
USWAP_API int uswap_swap_stat(unsigned int type, struct uswap_swap_stat *st);

/* ---- memory cgroups: the swap side (memory.swap.*) ----
 *
 * A group id names a counter of the swap slots its folios hold. A folio
 * carries the id of its group (folio_set_memcg_id()); folio_alloc_swap()
 * charges the folio's slots to it, and refuses them (-ENOMEM) when the
 * group would go over its limit, as mem_cgroup_try_charge_swap(); each
 * slot keeps its id until it is freed, when the group is uncharged. Id 0
 * is the root: counted nowhere, never refused. Groups are flat (no
 * hierarchy).
 */

#define USWAP_MEMCG_ID_MAX	65535	/* ids are 16-bit, as the kernel's */
#define USWAP_SWAP_MAX_NONE	UINT64_MAX	/* "max": no limit */

struct uswap_swap_cgroup_stat {
	uint64_t usage;		/* slots charged now (memory.swap.current, pages) */
	uint64_t peak;		/* highest usage (memory.swap.peak) */
	uint64_t max;		/* the limit, or USWAP_SWAP_MAX_NONE */
	uint64_t events_max;	/* allocations refused at the limit ("max" event) */
	uint64_t events_fail;	/* allocations that failed ("fail"): at the
				 * limit, or no free slot */
	uint64_t __reserved[3];	/* zeroed */
};

/**
 * uswap_swap_cgroup_create() - a new group with swap limit @max pages.
 * Context: any; takes the registry lock. Return: 0 and *@id (1..65535);
 * -ENOSPC when every id is taken (ids of destroyed groups come back when
 * their last slot is freed).
 */
USWAP_API int uswap_swap_cgroup_create(uint64_t max, uint16_t *id);

/**
 * uswap_swap_cgroup_destroy() - end group @id. Slots still charged to it
 * stay charged (and keep the id taken) until they are freed.
 * Context: any. Return: 0, -EINVAL (not a live group).
 */
USWAP_API int uswap_swap_cgroup_destroy(uint16_t id);

/**
 * uswap_swap_cgroup_set_max() - set group @id's swap limit to @max pages.
 * A lower limit than the usage refuses new slots; it frees none.
 * Context: any. Return: 0, -EINVAL (not a live group).
 */
USWAP_API int uswap_swap_cgroup_set_max(uint16_t id, uint64_t max);

/**
 * uswap_swap_cgroup_stat() - group @id's figures into *@st.
 * Context: any; lockless. Return: 0, -EINVAL (no such group).
 */
USWAP_API int uswap_swap_cgroup_stat(uint16_t id, struct uswap_swap_cgroup_stat *st);

/**
 * uswap_swap_cgroup_full() - whether swap is short for group @id: swap is
 * short overall (uswap_vm_swap_full()), or the group uses half its limit
 * (mem_cgroup_swap_full()).
 * Context: any; lockless. Return: true or false.
 */
USWAP_API bool uswap_swap_cgroup_full(uint16_t id);

/**
 * uswap_swap_cgroup_lookup() - the group slot @entry is charged to
 * (lookup_swap_cgroup_id()): what a swap-in charges its new folio to.
 * Context: any; takes the slot's cluster lock. Return: the id, 0 for the
 * root, a free slot or a bad entry.
 */
USWAP_API uint16_t uswap_swap_cgroup_lookup(swp_entry_t entry);

/* ---- the folio workflow ("mm, swap: cleanup swap entry management
 * workflow") ---- */

/**
 * folio_alloc_swap() - give a locked folio slots on swap and put it in the
 * swap cache: 2^order slots aligned to the order, in one cluster, counts 0.
 * Context: folio locked and uptodate, not in the swap cache; may take
 * device and cluster locks. Return: 0, -EINVAL (folio not locked, not
 * uptodate, already cached, bad order), -ENOMEM (no slots; nothing
 * allocated).
 */
USWAP_API int folio_alloc_swap(struct folio *folio);

/**
 * folio_dup_swap() - one more reference to the folio's slots (all of them,
 * or only page @subpage when subpage >= 0). The only path from count 0 to
 * 1. Context: folio locked and in the swap cache; the caller holds the lock
 * of the container the reference goes to. Return: 0, -EINVAL, -ENOMEM
 * (extend table), -EOVERFLOW. On error no count changed.
 */
USWAP_API int folio_dup_swap(struct folio *folio, long subpage);

/**
 * folio_put_swap() - drop one reference from the folio's slots (all, or
 * @subpage). Never frees a slot: the cache pins them. Context: folio locked
 * and in the swap cache. Return: 0, -EINVAL, -ENOENT (a count is 0; nothing
 * changed).
 */
USWAP_API int folio_put_swap(struct folio *folio, long subpage);

/**
 * folio_free_swap() - drop the folio from the swap cache if no slot is
 * referenced any more; its slots are freed and the folio is marked dirty.
 * Context: folio locked. Return: 1 freed, 0 kept (not cached, under
 * writeback, or some count > 0), -EINVAL (folio not locked).
 */
USWAP_API int folio_free_swap(struct folio *folio);

/**
 * folio_maybe_swapped() - whether any slot of a swap-cache folio has a
 * count. Lockless: may say true when racing with a put.
 * Context: folio locked (pins the slots).
 * Return: true if some slot may have a count; false if none has.
 */
USWAP_API bool folio_maybe_swapped(struct folio *folio);

/**
 * swap_dup_entry_direct() - one more reference to a slot that already has
 * one, without a folio (fork copying a swap PTE).
 * Context: the caller holds the lock of the container of the existing
 * reference. Return: 0, -EINVAL (bad slot / offset), -ENODEV, -ENOENT
 * (count 0), -ENOMEM (extend table), -EOVERFLOW.
 */
USWAP_API int swap_dup_entry_direct(swp_entry_t entry);

/**
 * swap_put_entries_direct() - drop one reference from each of @nr slots
 * (zap, munmap, madvise). A slot reaching 0 is freed if uncached; a cached
 * one is left to its folio, which is reclaimed if nothing else holds it.
 * Context: caller holds the containers' locks. Return: 0, -EINVAL, -ENODEV,
 * -ENOENT (some slot has count 0: checked before any change).
 */
USWAP_API int swap_put_entries_direct(swp_entry_t entry, long nr);

/**
 * swp_swapcount() - a slot's exact count, extend table included.
 * Context: any. Return: count >= 0, -EINVAL (bad slot or offset), -ENODEV.
 */
USWAP_API long swp_swapcount(swp_entry_t entry);

/**
 * swap_entry_swapped() - whether @entry's slot has a count above 0.
 * Context: any; lockless (RCU).
 * Return: true if the count is above 0; false if it is 0, or the entry
 * is bad or its device not swapped on.
 */
USWAP_API bool swap_entry_swapped(swp_entry_t entry);

/**
 * swap_alloc_hibernation_slot() - an order-0 slot with count 1 and no
 * folio, on device @type. Context: may take locks. Return: the entry, or
 * val 0 when none could be had.
 */
USWAP_API swp_entry_t swap_alloc_hibernation_slot(unsigned int type);

/**
 * swap_free_hibernation_slot() - drop a hibernation slot's reference and
 * free it (reclaiming a cache folio readahead may have added).
 * Context: may take device and cluster locks and a folio lock.
 * Return: 0, -EINVAL, -ENODEV, -ENOENT.
 */
USWAP_API int swap_free_hibernation_slot(swp_entry_t entry);

/* ---- the swap cache ---- */

/**
 * swap_cache_get_folio() - the folio cached for @entry, with a reference.
 * The caller locks it and rechecks folio_matches_swap_entry(): it may
 * have left the cache meanwhile.
 * Context: any; lockless (RCU).
 * Return: the folio with a reference taken, or NULL if none is cached
 * (or the entry is bad).
 */
USWAP_API struct folio *swap_cache_get_folio(swp_entry_t entry);

/**
 * folio_matches_swap_entry() - whether @folio is still cached and covers @entry.
 * Context: folio locked (otherwise the answer may be stale at once).
 * Return: true if it does.
 */
USWAP_API bool folio_matches_swap_entry(const struct folio *folio, swp_entry_t entry);

/**
 * swap_cache_add_folio() - put a locked folio in the cache at @entry
 * (aligned to the folio's size): the swap-in synchronization point.
 * @shadowp: if not NULL, receives the first slot's old shadow (0 if none).
 * Context: folio locked, not cached. Return: 0, -EEXIST (another folio is
 * cached there: use it), -ENOENT (a slot is free or has count 0),
 * -EINVAL (bad slot, misalignment, folio state), -ENODEV.
 */
USWAP_API int swap_cache_add_folio(struct folio *folio, swp_entry_t entry,
				   uint64_t *shadowp);

/**
 * swap_cache_del_folio() - take a folio out of the cache: its slots become
 * shadows keeping their counts (@shadow, 0 for none); count-0 slots are
 * freed. Drops the cache's references. Context: folio locked, not under
 * writeback. Return: 0, -EINVAL.
 */
USWAP_API int swap_cache_del_folio(struct folio *folio, uint64_t shadow);

/**
 * swap_cache_replace_folio() - let @new stand in the cache for @old over
 * new's range (migration, split). Both locked; @new not cached, same
 * size or smaller and inside old's range at its swap entry @entry.
 * Context: both folios locked; takes the cluster lock.
 * Return: 0, -EINVAL.
 */
USWAP_API int swap_cache_replace_folio(struct folio *old, struct folio *nfolio,
				       swp_entry_t entry);

/**
 * swap_cache_get_shadow() - the workingset shadow stored for @entry.
 * Context: any; lockless.
 * Return: the shadow, or 0 if the slot holds none (free, cached, or a
 * bad entry).
 */
USWAP_API uint64_t swap_cache_get_shadow(swp_entry_t entry);

/* ---- swap-in ---- */

#define USWAP_SWAPIN_RA_MAX 63

struct uswap_swapin_info {
	uint64_t shadow;	/* the slot's workingset shadow (0 if none) */
	bool major;		/* a read was issued (not a cache hit) */
	unsigned int ra_pages;	/* readahead folios added with it */
	/* in (zero-initialize the struct): if set, an array of
	 * USWAP_SWAPIN_RA_MAX that receives the readahead folios, each with
	 * a reference the caller must drop (an mm puts them on its LRU first) */
	struct folio **ra_folios;
	/* in, optional: VMA readahead (the kernel's swap_vma_readahead()).
	 * ra_entries[i] is the swap entry of the PTE of page ra_first + i (0
	 * where the PTE holds none), for the pages around the faulting page
	 * ra_addr that the window may cover: inside the VMA and its PMD, at
	 * most ra_max_pages - 1 on either side. ra_info is the faulting VMA's
	 * readahead state (vma->swap_readahead_info: last fault page, window,
	 * hits), which swap-in reads and updates. Without ra_info, readahead
	 * is the kernel's cluster readahead around the swap offset. */
	const swp_entry_t *ra_entries;
	unsigned int nr_ra_entries;
	uint64_t ra_addr;
	uint64_t ra_first;
	uint64_t *ra_info;	/* read and written with relaxed __atomic builtins */
	unsigned int ra_max_pages;	/* in: 1 << vm.page-cluster (0: 8) */
	/* in, optional: an array of USWAP_SWAPIN_RA_MAX that receives each
	 * readahead folio's workingset shadow (0 if none) */
	uint64_t *ra_shadows;
	/* out: the fault hit a readahead folio in the cache (PG_readahead) */
	bool ra_hit;
	/* out: the design drops the cache copy after mapping because the
	 * device is synchronous (swap table phase II; not the old design) */
	bool free_sync;
	/* in, optional: readahead allocations may reclaim, as the kernel's
	 * __read_swap_cache_async() allocates with GFP_HIGHUSER_MOVABLE. When
	 * @pool has fewer free frames than the faulting folio and its
	 * readahead folios need, ra_reclaim(ra_reclaim_arg, nr) is called once
	 * (nr: the frames the whole batch needs) before any of them is
	 * allocated: with the device pinned, no swap lock held and no folio
	 * locked by this swap-in. Whatever it frees, allocation then goes on
	 * as without it (a readahead folio that finds no frame ends the
	 * readahead). It may reclaim and write to any swap device; it must not
	 * swap off. Return: ignored (frames freed, or -errno). */
	int (*ra_reclaim)(void *arg, unsigned int nr);
	void *ra_reclaim_arg;
	/* in: zero. Later fields come from here; the size stays
	 * USWAP_SWAPIN_INFO_SIZE (the ABI rule of <uswap/mm.h>). */
	uint64_t __reserved[3];
};

#define USWAP_SWAPIN_INFO_SIZE 128

/**
 * uswap_swapin() - bring @entry's data into a swap-cache folio.
 * A cache hit returns the cached folio. A miss allocates a folio from
 * @pool, adds it to the cache (the loser of a race uses the winner's
 * folio) and reads it; synchronous devices try the largest order of
 * @orders (bit n: an aligned order-n folio is allowed at this entry, the
 * caller having checked its page table) and never read ahead; others read
 * ahead a window around the entry.
 * @out: the folio, with a reference; locked while its read is in flight:
 * call uswap_swapin_lock() next.
 * Context: device pinned inside; may sleep. Return: 0; -ENOMEM (no free
 * frame: reclaim and retry), -ENOENT (the slot has no reference any more:
 * recheck the page table), -EINVAL (also: @info->__reserved not zero),
 * -ENODEV.
 */
USWAP_API int uswap_swapin(swp_entry_t entry, struct uswap_frame_pool *pool,
			   unsigned long orders, struct folio **out,
			   struct uswap_swapin_info *info);

/**
 * uswap_swapin_lock() - lock a folio from uswap_swapin() and check it.
 * Return: 0 (locked, uptodate, still caching @entry); -EAGAIN (unlocked:
 * it left the cache meanwhile, look again); -EIO (unlocked: the read
 * failed; the folio left the cache, the slot keeps its count).
 * The caller still drops its reference with folio_put().
 * Context: may sleep (takes the folio lock).
 */
USWAP_API int uswap_swapin_lock(struct folio *folio, swp_entry_t entry);

/**
 * uswap_swap_synchronous() - whether @entry's device is synchronous
 * (SWP_SYNCHRONOUS_IO).
 * On such a device, after mapping a swapped-in folio and putting its
 * count, drop it from the cache (folio_free_swap()) at once.
 * Context: any; lockless.
 * Return: true if it is; false if not, or the entry is bad.
 */
USWAP_API bool uswap_swap_synchronous(swp_entry_t entry);

/**
 * uswap_swap_stable_writes() - @entry's device needs stable pages
 * (SWP_STABLE_WRITES): it reads a page's data while the page is under
 * writeback (a compressing device does), so the data must not change
 * until writeback ends. A fault that finds a folio under writeback on
 * such a device maps it read-only, whatever its swap PTE says.
 * Context: any; lockless, the answer may be stale when the device goes.
 * Return: true if it does; false if not, or the entry is bad.
 */
USWAP_API bool uswap_swap_stable_writes(swp_entry_t entry);

/**
 * uswap_vm_swap_full() - whether more than half of all swap space is in use.
 * Reclaim then frees the slots of folios it finds in the cache.
 * Context: any; lockless.
 * Return: true if so.
 */
USWAP_API bool uswap_vm_swap_full(void);

/**
 * uswap_swap_writeout() - write a locked swap-cache folio to its slots,
 * unlocking it; with @sync, wait. A failed write leaves the folio dirty
 * in the cache with its data (nothing is lost).
 * Context: folio locked and in the swap cache, not under writeback;
 * returns with it unlocked; with @sync, sleeps until the write completes.
 * Return: 0 (submitted; with @sync, written), -EIO (sync write failed),
 * -EINVAL (folio state), -EOPNOTSUPP (device without a backend), -ENOMEM.
 */
USWAP_API int uswap_swap_writeout(struct folio *folio, bool sync);

/**
 * uswap_remove_mapping() - free a clean, unmapped swap-cache folio: its
 * slots become @shadow entries keeping their counts (count-0 slots are
 * freed) and its frames return to the pool. The kernel's __remove_mapping.
 * Context: folio locked, not under writeback; the caller holds exactly one
 * reference besides the cache's, which this consumes with the lock.
 * Return: 1 freed; 0 busy (other references, or dirty again: nothing
 * changed, still locked); -EINVAL.
 */
USWAP_API int uswap_remove_mapping(struct folio *folio, uint64_t shadow);

/**
 * uswap_swap_tb_peek() - the raw table entry of a slot (0 for a free
 * cluster), and in *count the exact count (-1 if none). For tools, tests
 * and the demo.
 * Context: takes the slot's cluster lock.
 * Return: 0, -EINVAL, -ENODEV.
 */
USWAP_API int uswap_swap_tb_peek(swp_entry_t entry, uint64_t *tb, long *count);

#ifdef __cplusplus
}
#endif
#endif
