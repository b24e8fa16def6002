/* SPDX-License-Identifier: MIT */
/*
 * Swap devices: the table of swapped-on devices, pinning against swapoff,
 * swapon (a type reserved under swap_lock; clusters, bad slots, the
 * design's state and the area discard set up without it; then publish
 * and allow allocation under swap_lock: commit b14ff9cf071e) and swapoff.
 *
 * swap_info[] entries are allocated once and never freed, only reused, so
 * that a lockless reader holding a stale pointer (a thread's cluster hint)
 * reads valid memory; the device generation tells it the device changed.
 */
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/backend.h"
#include "swap/swap_internal.h"
#include "swap/swap_io.h"
#include "util/alloc.h"

_Atomic(struct swap_info_struct *) swap_info[MAX_SWAPFILES];
/*
 * swap_lock: swap_info[] slots, SWP_USED, SWP_WRITEOK (with the totals and
 * the avail list, swap_alloc_device_added/removed). Held only to reserve a
 * type, to publish or unpublish a device and to free its type: never
 * across setup, I/O or the owners' unuse. A device between reservation
 * and publication, or past unpublication, is SWP_USED and not WRITEOK:
 * no other swapon takes its type and no other swapoff starts on it.
 */
static pthread_mutex_t swap_lock = PTHREAD_MUTEX_INITIALIZER;

struct swap_owner {
	int (*unuse)(unsigned int type, void *arg);
	void *arg;
};
/*
 * The owners' table. swapoff holds it for reading across the unuse calls
 * (several swapoffs may run them at once); registering or removing an
 * owner takes it for writing, so an owner is never called after it left.
 * Outermost of the swap locks: unuse takes mmap, folio and swap locks.
 */
static pthread_rwlock_t swap_owners_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct swap_owner swap_owners[16];	/* swap_owners_lock */

/*
 * Files swapped on, by identity (the kernel's S_SWAPFILE on the inode), so
 * that two names for one file collide. A claim is taken before the file is
 * opened and held until swapoff frees the type, or dropped on every
 * failing swapon path. swap_claim_lock is a leaf.
 */
struct swap_claim {
	uint64_t dev, ino;
};
static pthread_mutex_t swap_claim_lock = PTHREAD_MUTEX_INITIALIZER;
static struct swap_claim swap_claims[MAX_SWAPFILES];	/* swap_claim_lock */
static unsigned int nr_swap_claims;			/* swap_claim_lock */

#define DEF_SWAP_PRIO (-1)

static void seterr(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/**
 * swap_inode_claim() - claim the file (@dev, @ino) for a swapon.
 * Context: takes swap_claim_lock.
 * Return: 0, or -EBUSY (claimed: swapped on, or a swapon of it is under
 * way), -EPERM (as many claims as swap types).
 */
int swap_inode_claim(uint64_t dev, uint64_t ino)
{
	unsigned int i;
	int ret = 0;

	pthread_mutex_lock(&swap_claim_lock);
	for (i = 0; i < nr_swap_claims; i++)
		if (swap_claims[i].dev == dev && swap_claims[i].ino == ino)
			ret = -EBUSY;
	if (!ret && nr_swap_claims == MAX_SWAPFILES)
		ret = -EPERM;
	if (!ret)
		swap_claims[nr_swap_claims++] = (struct swap_claim){ dev, ino };
	pthread_mutex_unlock(&swap_claim_lock);
	return ret;
}

/** swap_inode_release() - drop a claim. Context: takes swap_claim_lock. */
void swap_inode_release(uint64_t dev, uint64_t ino)
{
	unsigned int i;
	bool found = false;

	pthread_mutex_lock(&swap_claim_lock);
	for (i = 0; i < nr_swap_claims && !found; i++) {
		if (swap_claims[i].dev == dev && swap_claims[i].ino == ino) {
			swap_claims[i] = swap_claims[--nr_swap_claims];
			found = true;
		}
	}
	pthread_mutex_unlock(&swap_claim_lock);
	USWAP_BUG_ON(!found);
}

/**
 * __swap_pcpu_nr() - the slow half of swap_pcpu_nr() (swap_internal.h):
 * count the possible CPUs once and cache the number.
 * Context: lockless. Return: the number, fixed for the life of the process.
 */
_Atomic unsigned int swap_pcpu_nr_cached;

unsigned int __swap_pcpu_nr(void)
{
	long conf = sysconf(_SC_NPROCESSORS_CONF);
	unsigned int n;

	n = conf < 1 ? 1 : conf > SWAP_PCPU_SLOTS ? SWAP_PCPU_SLOTS : (unsigned int)conf;
	atomic_store_explicit(&swap_pcpu_nr_cached, n, memory_order_relaxed);
	return n;
}

/*
 * The device pin, on the model of the kernel's percpu_ref (si->users is
 * a percpu_ref there): while the device is live, a pin adds one to this
 * CPU's slot of si->pin_cpu[] and an unpin subtracts one from whatever
 * slot its CPU has then (a slot may go negative; only the sum means
 * anything). Two threads pinning one device so write two lines of their
 * own instead of one shared word (the bench_alloc profile blamed that
 * word: an atomic read-modify-write per pin and per unpin, four per
 * alloc+free pair).
 *
 * Swapoff kills the pin (swap_device_kill()): it sets SWAP_USERS_DEAD in
 * si->users, then closes each slot by exchanging its value for
 * SWAP_PIN_CLOSED and adds the values taken to si->users. Every slot
 * operation is one atomic read-modify-write that returns the old value,
 * so each pin and unpin is ordered before or after the exchange of its
 * slot: before, the exchange carries it into si->users; after, it sees
 * the slot closed, undoes its step there and goes to si->users itself (a
 * pin then fails: DEAD is set; an unpin subtracts). Swapoff then waits
 * for si->users to drain to DEAD. The kernel waits for an RCU grace period
 * instead of closing slots; liburcu's read-side section cost more than the
 * whole pin here (one thread's alloc+free rate fell by a fifth).
 * Swapon reopens the slots after clearing DEAD (swap_device_pin_live()),
 * by subtracting SWAP_PIN_CLOSED, so that an operation still undoing its
 * step on a closed slot is not lost.
 */
/*
 * The calling thread's slot: threads are dealt the slots in turn at their
 * first pin, which spreads them as well as their CPUs would while they
 * are no more than the CPUs, without a sched_getcpu() per pin. Where a
 * pin and its unpin land does not matter (only the sum does).
 * Context: lockless. Return: the slot.
 */
static inline _Atomic long *swap_pin_slot(struct swap_info_struct *si)
{
	static _Atomic unsigned int next;
	static __thread unsigned int idx;	/* slot + 1; 0: not dealt yet */

	if (__builtin_expect(!idx, 0))
		idx = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed) % swap_pcpu_nr() + 1;
	return &si->pin_cpu[idx - 1].v;
}

/**
 * swap_device_tryget() - pin @si unless swapoff is tearing it down
 * (percpu_ref_tryget_live()).
 * Context: lockless. Return: true if pinned.
 */
bool swap_device_tryget(struct swap_info_struct *si)
{
	_Atomic long *slot = swap_pin_slot(si);
	long u;

	if (!SWAP_PIN_IS_CLOSED(atomic_fetch_add_explicit(slot, 1, memory_order_acquire)))
		return true;
	atomic_fetch_sub_explicit(slot, 1, memory_order_relaxed);
	u = atomic_load_explicit(&si->users, memory_order_relaxed);
	do {
		if (u & SWAP_USERS_DEAD)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&si->users, &u, u + 1,
							memory_order_acquire,
							memory_order_relaxed));
	return true;
}

/**
 * __get_swap_device() - one more pin; the caller already holds one.
 * Context: lockless. Return: nothing.
 */
void __get_swap_device(struct swap_info_struct *si)
{
	_Atomic long *slot = swap_pin_slot(si);

	if (!SWAP_PIN_IS_CLOSED(atomic_fetch_add_explicit(slot, 1, memory_order_relaxed)))
		return;
	atomic_fetch_sub_explicit(slot, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&si->users, 1, memory_order_relaxed);
}

/**
 * put_swap_device() - drop a pin taken by get_swap_device or tryget.
 * Context: lockless. Return: nothing.
 */
void put_swap_device(struct swap_info_struct *si)
{
	_Atomic long *slot = swap_pin_slot(si);

	if (!SWAP_PIN_IS_CLOSED(atomic_fetch_sub_explicit(slot, 1, memory_order_release)))
		return;
	atomic_fetch_add_explicit(slot, 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&si->users, 1, memory_order_release);
}

/*
 * Make the pin live with no pins held (swapon): clear DEAD, then open
 * the slots. Context: swap_lock held, before allocators can find the
 * device.
 */
static void swap_device_pin_live(struct swap_info_struct *si)
{
	unsigned int i;

	atomic_store_explicit(&si->users, 0, memory_order_release);
	for (i = 0; i < SWAP_PCPU_SLOTS; i++)
		atomic_fetch_sub_explicit(&si->pin_cpu[i].v, SWAP_PIN_CLOSED,
					  memory_order_release);
}

/*
 * Close the slots of a device that was never live (a new
 * swap_info_struct). Context: swap_lock held, not yet published.
 */
static void swap_device_pin_init(struct swap_info_struct *si)
{
	unsigned int i;

	atomic_store(&si->users, SWAP_USERS_DEAD);
	for (i = 0; i < SWAP_PCPU_SLOTS; i++)
		atomic_store(&si->pin_cpu[i].v, SWAP_PIN_CLOSED);
}

/*
 * percpu_ref_kill() and the wait for the last pin: no new pins from here;
 * returns once every pin taken before has been dropped.
 * Context: swapoff; sleeps.
 */
static void swap_device_kill(struct swap_info_struct *si)
{
	struct timespec ts = { 0, 100000 };
	unsigned int i;
	long sum = 0;

	atomic_fetch_or(&si->users, SWAP_USERS_DEAD);
	for (i = 0; i < SWAP_PCPU_SLOTS; i++)
		sum += atomic_exchange_explicit(&si->pin_cpu[i].v, SWAP_PIN_CLOSED,
						memory_order_acq_rel);
	atomic_fetch_add(&si->users, sum);
	while (atomic_load(&si->users) != SWAP_USERS_DEAD)
		nanosleep(&ts, NULL);
}

/**
 * swap_entry_pin() - pin the device of @entry and check the offset.
 * Context: lockless. Return: 0 and *out pinned; -EINVAL (invalid type or
 * offset), -ENODEV (the device is not swapped on: a warning only when it
 * never was, as get_swap_device()'s "Bad swap file entry").
 */
int swap_entry_pin(swp_entry_t entry, struct swap_info_struct **out)
{
	unsigned int type = swp_type(entry);
	struct swap_info_struct *si;

	if (type >= MAX_SWAPFILES) {
		uswap_warn("bad swap file entry %#" PRIx64, entry.val);
		return -EINVAL;
	}
	si = atomic_load_explicit(&swap_info[type], memory_order_acquire);
	if (!si) {
		uswap_warn("swap entry %#" PRIx64 " of device %u that was never swapped on",
			   entry.val, type);
		return -ENODEV;
	}
	/*
	 * A device being swapped off (or gone) fails quietly, as
	 * get_swap_device() does: a lock-free reader holding a stale entry
	 * (a PTE read before a zap or swapoff's unuse) meets this legitimately
	 * and rechecks under its own lock.
	 */
	if (!swap_device_tryget(si))
		return -ENODEV;
	if (swp_offset(entry) >= si->max) {
		uswap_warn("bad swap offset entry %#" PRIx64 " (device %u has %u slots)",
			   entry.val, type, si->max);
		put_swap_device(si);
		return -EINVAL;
	}
	*out = si;
	return 0;
}

/** get_swap_device() - the pinned device of @entry, or NULL. Lockless. */
struct swap_info_struct *get_swap_device(swp_entry_t entry)
{
	struct swap_info_struct *si;

	return swap_entry_pin(entry, &si) ? NULL : si;
}

/** uswap_swap_static_metadata_bytes() - what swapon allocates for @max_slots. */
uint64_t uswap_swap_static_metadata_bytes(uint64_t max_slots)
{
	uint64_t nr = (max_slots + SWAPFILE_CLUSTER - 1) / SWAPFILE_CLUSTER;

	/* The clusters and their list links (cluster.h). */
	return swap_cluster_array_bytes(nr) + nr * sizeof(struct swap_cluster_link);
}

/** swap_backend_slots_freed() - tell the backend that slots are free. ci->lock held. */
void swap_backend_slots_freed(struct swap_info_struct *si, uint64_t offset, unsigned int nr)
{
	if (si->slots_freed)
		si->slots_freed(si, offset, nr);
}

/*
 * Mark one slot bad in the swap table (commit 220ae4d49737). A slot already marked is
 * a duplicate in the header's list.
 */
static int swap_cluster_setup_bad_slot(struct swap_info_struct *si, uint64_t offset)
{
	struct swap_cluster_info *ci = offset_to_cluster(si, offset);
	unsigned int off = offset % SWAPFILE_CLUSTER;
	int err = 0;

	/* Not swap_cluster_lock(): the tail past si->max is marked too. */
	uswap_spin_lock(&ci->lock);
	if (!swap_cluster_table(ci)) {
		err = swap_cluster_alloc_table(ci);
		if (!err)
			atomic_fetch_add(&si->nr_tables, 1);
	}
	if (!err && !swp_tb_is_null(__swap_table_get(ci, off)))
		err = -EEXIST;
	if (!err) {
		__swap_table_set(ci, off, SWP_TB_BAD);
		ci->count++;
	}
	swap_cluster_unlock(ci);
	return err;
}

static int setup_swap_clusters_info(struct swap_info_struct *si,
				    const struct swap_device_params *p, char *err, size_t errlen)
{
	uint64_t last_page = p->nr_pages - 1, i, end;
	int ret;

	si->nr_clusters = (si->max + SWAPFILE_CLUSTER - 1) / SWAPFILE_CLUSTER;
	/* max is 32-bit: cluster and head indices fit the 32-bit links. */
	_Static_assert(sizeof(si->max) <= sizeof(uint32_t), "32-bit slot offsets");
	/* Line-aligned: no cluster straddles two lines. */
	si->cluster_info = uswap_aligned_alloc(SWAP_CLUSTER_ARRAY_ALIGN,
					       swap_cluster_array_bytes(si->nr_clusters));
	if (!si->cluster_info)
		return -ENOMEM;
	memset(si->cluster_info, 0, swap_cluster_array_bytes(si->nr_clusters));
	/* The list links by index, apart from the clusters (cluster.h). */
	si->cluster_list = uswap_malloc(si->nr_clusters * sizeof(*si->cluster_list));
	if (!si->cluster_list)
		return -ENOMEM;
	for (i = 0; i < si->nr_clusters + SWAP_NR_CLUSTER_LISTS; i++)
		cluster_list_init(si, (unsigned int)i);
	for (i = 0; i < si->nr_clusters; i++)
		uswap_spin_init(&si->cluster_info[i].lock);
	si->pages = si->max - 1;
	si->nr_bad = 1;
	/* The header slot. */
	ret = swap_cluster_setup_bad_slot(si, 0);
	if (ret)
		return ret;
	for (i = 0; i < p->nr_badpages; i++) {
		uint64_t page = p->badpages[i];

		if (!page || page > last_page) {
			seterr(err, errlen, "bad page %" PRIu64 " is out of range 1..%" PRIu64,
			       page, last_page);
			return -EINVAL;
		}
		if (page >= si->max) {
			uswap_warn("bad page %" PRIu64 " beyond the usable size ignored", page);
			continue;
		}
		ret = swap_cluster_setup_bad_slot(si, page);
		if (ret == -EEXIST) {
			seterr(err, errlen, "duplicated bad page %" PRIu64, page);
			return -EINVAL;
		}
		if (ret)
			return ret;
		si->pages--;
		si->nr_bad++;
	}
	if (!si->pages) {
		seterr(err, errlen, "empty swap area: no usable page among %u", si->max);
		return -EINVAL;
	}
	/* Mask the tail of the last cluster so that it never looks free. */
	end = si->nr_clusters * SWAPFILE_CLUSTER;
	for (i = si->max; i < end; i++) {
		ret = swap_cluster_setup_bad_slot(si, i);
		if (ret)
			return ret;
	}
	for (i = 0; i < si->nr_clusters; i++) {
		struct swap_cluster_info *ci = &si->cluster_info[i];

		if (ci->count) {
			ci->flags = CLUSTER_FLAG_NONFULL;
			cluster_list_add_tail(si, (unsigned int)i, nonfull_clusters(si, 0));
		} else {
			ci->flags = CLUSTER_FLAG_FREE;
			cluster_list_add_tail(si, (unsigned int)i, free_clusters(si));
		}
	}
	return 0;
}

static void swap_free_clusters_info(struct swap_info_struct *si)
{
	unsigned long i;

	if (!si->cluster_info)
		return;
	for (i = 0; i < si->nr_clusters; i++) {
		struct swap_cluster_info *ci = &si->cluster_info[i];

		free(swap_cluster_table(ci));
		free(ci->extend_table);
		uswap_spin_destroy(&ci->lock);
	}
	free(si->cluster_info);
	si->cluster_info = NULL;
	free(si->cluster_list);
	si->cluster_list = NULL;
	atomic_store(&si->nr_tables, 0);
	atomic_store(&si->nr_extend_tables, 0);
}

/*
 * Reserve a free type for a swapon: SWP_USED, not yet WRITEOK, users DEAD
 * (nobody pins it). Context: takes swap_lock.
 */
static int alloc_swap_info(struct swap_info_struct **out, char *err, size_t errlen)
{
	struct swap_info_struct *si = NULL;
	unsigned int type;

	pthread_mutex_lock(&swap_lock);
	for (type = 0; type < MAX_SWAPFILES; type++) {
		si = atomic_load(&swap_info[type]);
		if (!si || !(atomic_load(&si->flags) & SWP_USED))
			break;
	}
	if (type == MAX_SWAPFILES) {
		pthread_mutex_unlock(&swap_lock);
		seterr(err, errlen, "all %d swap device types are in use", MAX_SWAPFILES);
		return -EPERM;
	}
	if (!si) {
		/* Cache-line aligned: the per-CPU counter slots are. */
		si = uswap_aligned_alloc(_Alignof(struct swap_info_struct), sizeof(*si));
		if (si)
			memset(si, 0, sizeof(*si));
		if (!si) {
			pthread_mutex_unlock(&swap_lock);
			return -ENOMEM;
		}
		swap_device_pin_init(si);
		uswap_spin_init(&si->lock);
		uswap_mutex_init(&si->global_cluster_lock);
		CDS_INIT_LIST_HEAD(&si->avail_list);
		pthread_mutex_init(&si->work.lock, NULL);
		pthread_cond_init(&si->work.cond, NULL);
		pthread_cond_init(&si->work.idle, NULL);
		si->type = type;
		atomic_store_explicit(&swap_info[type], si, memory_order_release);
	}
	atomic_store(&si->flags, SWP_USED);
	pthread_mutex_unlock(&swap_lock);
	*out = si;
	return 0;
}

/* Give a reserved (or swapped-off) type back. Context: takes swap_lock. */
static void free_swap_info(struct swap_info_struct *si)
{
	pthread_mutex_lock(&swap_lock);
	if (si->claimed)
		swap_inode_release(si->claim_dev, si->claim_ino);
	si->claimed = false;
	/* Last: the type may be reused. */
	atomic_store(&si->flags, 0);
	pthread_mutex_unlock(&swap_lock);
}

static unsigned int swap_flags_from(const struct swap_device_params *p)
{
	unsigned int fl = SWP_USED;

	if (!(p->flags & USWAP_FLAG_ROTATIONAL))
		fl |= SWP_SOLIDSTATE;
	if (p->flags & USWAP_FLAG_SYNCHRONOUS)
		fl |= SWP_SYNCHRONOUS_IO;
	if (p->bdev && p->bdev->stable_writes)
		fl |= SWP_STABLE_WRITES;
	if ((p->flags & SWAP_FLAG_DISCARD) && p->discard) {
		fl |= SWP_DISCARDABLE | SWP_AREA_DISCARD | SWP_PAGE_DISCARD;
		if (p->flags & SWAP_FLAG_DISCARD_ONCE)
			fl &= ~SWP_PAGE_DISCARD;
		else if (p->flags & SWAP_FLAG_DISCARD_PAGES)
			fl &= ~SWP_AREA_DISCARD;
	}
	return fl;
}

/**
 * swap_device_create() - swap on a device described by @p. A type is
 * reserved under swap_lock; clusters, bad slots, the design's state, the
 * worker and the area discard are set up without it (nothing can reach
 * the device: users is DEAD and it is not WRITEOK); then the device is
 * published and allowed to allocate under swap_lock (commit b14ff9cf071e).
 * On success the device owns @p->bdev, @p->io and the claim of
 * @p->claim_dev/@p->claim_ino (released at swapoff); on failure they stay
 * the caller's.
 * Context: may sleep; takes swap_lock twice, briefly.
 * Return: the type, or -EINVAL (with a message in @err), -EPERM (no free
 * type), -ENOMEM, -EAGAIN (no worker thread), the design setup's error.
 */
int swap_device_create(const struct swap_device_params *p, char *err, size_t errlen)
{
	struct swap_info_struct *si;
	int ret;

	if (p->flags & ~USWAP_SWAPON_FLAGS_MASK) {
		seterr(err, errlen, "unknown swapon flags %#x", p->flags & ~USWAP_SWAPON_FLAGS_MASK);
		return -EINVAL;
	}
	if (p->nr_pages < 2) {
		seterr(err, errlen, "empty swap area: %" PRIu64 " pages", p->nr_pages);
		return -EINVAL;
	}
	if (p->nr_pages > UINT32_MAX) {
		seterr(err, errlen, "swap area of %" PRIu64 " pages is larger than %u pages",
		       p->nr_pages, UINT32_MAX);
		return -EINVAL;
	}
	ret = alloc_swap_info(&si, err, errlen);
	if (ret)
		return ret;
	/* Reserved and dead: only this thread touches the fields below. */
	si->max = (unsigned int)p->nr_pages;
	si->prio = (p->flags & SWAP_FLAG_PREFER) ? (short)(p->flags & SWAP_FLAG_PRIO_MASK)
						 : DEF_SWAP_PRIO;
	swap_inuse_reset(si);
	memset(si->global_next, 0, sizeof(si->global_next));
	/* The struct is reused across swapons: counters start afresh. */
	atomic_store(&si->nr_reads, 0);
	atomic_store(&si->nr_writes, 0);
	atomic_store(&si->nr_read_errors, 0);
	atomic_store(&si->nr_write_errors, 0);
	atomic_store(&si->nr_ra_pages, 0);
	atomic_store(&si->nr_ra_hits, 0);
	atomic_store(&si->nr_zero_out, 0);
	atomic_store(&si->nr_zero_in, 0);
	ret = setup_swap_clusters_info(si, p, err, errlen);
	if (ret)
		goto fail_clusters;
	si->bdev = p->bdev;
	si->io = p->io;
	USWAP_BUG_ON(!p->design);
	si->design = p->design;
	si->design_priv = NULL;
	if (p->design->setup) {
		ret = p->design->setup(si);
		if (ret) {
			seterr(err, errlen, "setting up the %s design: %s", p->design->name,
			       strerror(-ret));
			goto fail_design;
		}
	}
	ret = swap_work_start(si);
	if (ret) {
		seterr(err, errlen, "starting the device worker: %s", strerror(-ret));
		si->design->teardown(si);
		goto fail_design;
	}
	si->discard = p->discard;
	si->slots_freed = p->slots_freed;
	si->path = p->path ? uswap_strdup(p->path) : NULL;
	atomic_store(&si->flags, swap_flags_from(p));
	/* The whole area at once, before any slot is handed out. */
	if (atomic_load(&si->flags) & SWP_AREA_DISCARD)
		si->discard(si, 1, si->max - 1);
	atomic_fetch_add(&si->generation, 1);

	pthread_mutex_lock(&swap_lock);
	si->claimed = p->claimed;
	si->claim_dev = p->claim_dev;
	si->claim_ino = p->claim_ino;
	/* Publish: pins work from here on, then allocation. */
	swap_device_pin_live(si);
	swap_alloc_device_added(si);
	/* swapon's atomic_inc(&nr_rotate_swap): VMA readahead off meanwhile */
	if (!(atomic_load(&si->flags) & SWP_SOLIDSTATE))
		atomic_fetch_add(&nr_rotate_swap, 1);
	pthread_mutex_unlock(&swap_lock);
	return (int)si->type;

fail_design:
	si->design_priv = NULL;
	si->bdev = NULL;	/* still the caller's */
	si->io = NULL;
fail_clusters:
	swap_free_clusters_info(si);
	free_swap_info(si);
	return ret;
}

/** uswap_swapon_mem() - see uswap/swap.h. */
USWAP_API int uswap_swapon_mem(uint64_t nr_pages, int flags)
{
	struct swap_device_params p = {
		.nr_pages = nr_pages,
		.flags = flags,
		.design = &swap_table_ops,
	};
	char err[160] = "";
	int ret = swap_device_create(&p, err, sizeof(err));

	if (ret < 0 && err[0])
		uswap_warn("swapon: %s", err);
	return ret;
}

/** uswap_swap_set_owner() - register an owner asked to give entries back at
 * swapoff (the mm layer's unuse), or remove one; removal waits for the
 * swapoffs calling it. Context: takes swap_owners_lock for writing; must
 * not be called from an unuse callback.
 * Return: 0, -ENOSPC (too many owners), -EINVAL. */
USWAP_API int uswap_swap_set_owner(int (*unuse)(unsigned int type, void *arg), void *arg,
				   bool add)
{
	unsigned int i;
	int ret = add ? -ENOSPC : -EINVAL;

	if (!unuse)
		return -EINVAL;
	pthread_rwlock_wrlock(&swap_owners_lock);
	for (i = 0; i < ARRAY_SIZE(swap_owners); i++) {
		if (add && !swap_owners[i].unuse) {
			swap_owners[i].unuse = unuse;
			swap_owners[i].arg = arg;
			ret = 0;
			break;
		}
		if (!add && swap_owners[i].unuse == unuse && swap_owners[i].arg == arg) {
			swap_owners[i].unuse = NULL;
			swap_owners[i].arg = NULL;
			ret = 0;
			break;
		}
	}
	pthread_rwlock_unlock(&swap_owners_lock);
	return ret;
}

/* Every allocation that saw WRITEOK has finished once each cluster lock
 * has been free once. */
static void wait_for_allocation(struct swap_info_struct *si)
{
	unsigned long i;

	for (i = 0; i < si->nr_clusters; i++) {
		uswap_spin_lock(&si->cluster_info[i].lock);
		uswap_spin_unlock(&si->cluster_info[i].lock);
	}
}

/*
 * Free every slot held only by the swap cache. Only a cached slot with
 * count 0 in its entry may be; a design that counts elsewhere keeps these
 * counts 0, and its try_reclaim decides. Context: device pinned.
 */
static void swap_reclaim_cache_only(struct swap_info_struct *si)
{
	unsigned long c;
	unsigned int off;

	for (c = 0; c < si->nr_clusters; c++) {
		struct swap_cluster_info *ci = &si->cluster_info[c];

		for (off = 0; off < SWAPFILE_CLUSTER; off++) {
			uint64_t tb = swap_table_get(ci, off);

			if (swp_tb_is_folio(tb) && !__swp_tb_get_count(tb))
				si->design->try_reclaim(si, c * SWAPFILE_CLUSTER + off, true);
		}
	}
}

/* At teardown each cluster holds only its bad slots (commit 2d3f7faf8435). */
static void swapoff_check_clusters(struct swap_info_struct *si)
{
	unsigned long i;
	unsigned int j;

	for (i = 0; i < si->nr_clusters; i++) {
		struct swap_cluster_info *ci = &si->cluster_info[i];
		unsigned int bad = 0;

		uswap_spin_lock(&ci->lock);
		for (j = 0; swap_cluster_table(ci) && j < SWAPFILE_CLUSTER; j++) {
			uint64_t tb = __swap_table_get(ci, j);

			USWAP_BUG_ON(!swp_tb_is_null(tb) && !swp_tb_is_bad(tb));
			bad += swp_tb_is_bad(tb);
		}
		USWAP_BUG_ON(bad != ci->count);
		USWAP_BUG_ON(ci->extend_table);
		swap_cluster_unlock(ci);
	}
}

/* Ask every owner to give @type's entries back. Context: no swap locks. */
static int swap_unuse_owners(unsigned int type)
{
	unsigned int i;
	int err = 0;

	pthread_rwlock_rdlock(&swap_owners_lock);
	for (i = 0; i < ARRAY_SIZE(swap_owners) && !err; i++)
		if (swap_owners[i].unuse)
			err = swap_owners[i].unuse(type, swap_owners[i].arg);
	pthread_rwlock_unlock(&swap_owners_lock);
	return err;
}

/** uswap_swapoff_type() - see uswap/swap.h. */
USWAP_API int uswap_swapoff_type(unsigned int type)
{
	struct swap_info_struct *si;
	int err;

	if (type >= MAX_SWAPFILES)
		return -EINVAL;
	pthread_mutex_lock(&swap_lock);
	si = atomic_load(&swap_info[type]);
	if (!si || !(atomic_load(&si->flags) & SWP_WRITEOK)) {
		pthread_mutex_unlock(&swap_lock);
		return -EINVAL;
	}
	/* Unpublish: no new allocation, and no other swapoff of this type. */
	swap_alloc_device_removed(si);
	pthread_mutex_unlock(&swap_lock);

	/*
	 * The kernel's try_to_unuse: the device is only off the avail list and
	 * not WRITEOK; pins, lookups and frees go on while the owners swap
	 * their pages in, without swap_lock (they take folio locks, which rank
	 * above it, and do I/O). Other swapons and swapoffs run meanwhile.
	 */
	wait_for_allocation(si);
	err = swap_unuse_owners(type);
	if (!err && swap_inuse_pages(si) && swap_device_tryget(si)) {
		/* Cache-only slots (count 0, a folio in the cache) are ours
		 * to drop: readahead, or folios whose owners are gone. */
		swap_reclaim_cache_only(si);
		put_swap_device(si);
	}
	if (!err && swap_inuse_pages(si))
		err = -EBUSY;
	if (err) {
		pthread_mutex_lock(&swap_lock);
		swap_alloc_device_added(si);
		pthread_mutex_unlock(&swap_lock);
		return err;
	}
	if (swap_device_tryget(si)) {
		swap_do_scheduled_discard(si);
		put_swap_device(si);
	}
	/* No new pins; wait for the pinned ones (the worker's too) to leave. */
	swap_device_kill(si);
	swap_work_stop(si);
	uswap_synchronize_rcu();
	si->design->teardown(si);
	if (!(atomic_load(&si->flags) & SWP_SOLIDSTATE))
		atomic_fetch_sub(&nr_rotate_swap, 1);	/* swapoff's atomic_dec() */
	swapoff_check_clusters(si);
	swap_free_clusters_info(si);
	swap_io_ctx_destroy(si->io);
	si->io = NULL;
	if (si->bdev)
		swap_backend_destroy(si->bdev);
	si->bdev = NULL;
	free(si->path);
	si->path = NULL;
	free_swap_info(si);
	return 0;
}

/** uswap_swap_type_active() - see uswap/swap.h. Lockless. */
USWAP_API bool uswap_swap_type_active(unsigned int type)
{
	struct swap_info_struct *si;

	if (type >= MAX_SWAPFILES)
		return false;
	si = atomic_load_explicit(&swap_info[type], memory_order_acquire);
	return si && (atomic_load(&si->flags) & SWP_USED) &&
	       !(atomic_load(&si->users) & SWAP_USERS_DEAD);
}

/** uswap_swap_stat() - see uswap/swap.h. Context: lockless snapshot. */
USWAP_API int uswap_swap_stat(unsigned int type, struct uswap_swap_stat *st)
{
	struct swap_info_struct *si;
	int err = swap_entry_pin(swp_entry(type, 0), &si);

	if (err)
		return err;
	memset(st, 0, sizeof(*st));
	st->max = si->max;
	st->pages = si->pages;
	st->inuse_pages = (uint64_t)swap_inuse_pages(si);
	st->nr_clusters = si->nr_clusters;
	st->nr_tables = (uint64_t)atomic_load(&si->nr_tables);
	st->nr_extend_tables = (uint64_t)atomic_load(&si->nr_extend_tables);
	st->nr_bad = si->nr_bad;
	st->static_bytes = uswap_swap_static_metadata_bytes(si->max);
	st->dynamic_bytes = st->nr_tables * sizeof(struct swap_table) +
			    st->nr_extend_tables * (SWAPFILE_CLUSTER + 1) * sizeof(unsigned int);
	st->prio = si->prio;
	st->flags = atomic_load(&si->flags);
	st->reads = atomic_load(&si->nr_reads);
	st->writes = atomic_load(&si->nr_writes);
	st->read_errors = atomic_load(&si->nr_read_errors);
	st->write_errors = atomic_load(&si->nr_write_errors);
	st->ra_pages = atomic_load(&si->nr_ra_pages);
	st->ra_hits = atomic_load(&si->nr_ra_hits);
	st->zero_out = atomic_load(&si->nr_zero_out);
	st->zero_in = atomic_load(&si->nr_zero_in);
	if (si->bdev) {
		struct swap_zram_stats zs;

		struct swap_crypt_stats cs;

		if (!swap_backend_zram_stats(si->bdev, &zs))
			st->compressed_bytes = zs.pool_bytes;
		if (!swap_backend_crypt_stats(si->bdev, &cs)) {
			_Static_assert(USWAP_SEALED_XCHACHA20 == SWAP_CRYPT_XCHACHA20 &&
				       USWAP_SEALED_AES256GCM == SWAP_CRYPT_AES256GCM, "one numbering");
			st->sealed_with = cs.cipher;
			st->sealed_changed = cs.auth_failures;
		}
	}
	si->design->stat(si, st);
	put_swap_device(si);
	return 0;
}
