/* SPDX-License-Identifier: MIT */
/*
 * The cluster allocator (the kernel's cluster_alloc_swap_entry() and its
 * helpers in mm/swapfile.c; docs/KERNEL-MAP.md).
 *
 * Slots for a folio of order n are 2^n slots aligned to 2^n in one cluster.
 * A thread first tries its own current cluster for the order (the kernel's
 * per-CPU cluster: here per thread, validated by device generation), then
 * walks the devices with free slots, highest priority first, equal
 * priorities in turn. Within a device (cluster_alloc_swap_entry):
 *   rotational: the device's global cluster for the order first;
 *   (1) page discard: a free cluster;  (2) nonfull[order];
 *   (3) no page discard: a free cluster;  (4) device more than half full:
 *   reclaim cache-only slots of a full cluster;  (5) frag[order];
 *   (6) order > 0 stops here;  (7) order 0 takes from any order's
 *   frag then nonfull clusters.
 * Orders >= 9 (a whole cluster) only get empty clusters.
 *
 * Each device has a worker thread (struct swap_work) for what the kernel
 * defers to workqueues: discarding emptied clusters (discard_work) and,
 * when a device fills up while swap is more than half used, freeing the
 * cache-only slots of full clusters (reclaim_work). An order-0
 * allocation that finds nothing runs pending discards itself.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "io/backend.h"
#include "swap/swap_internal.h"
#include "util/alloc.h"

/*
 * Usage counters. The kernel keeps si->inuse_pages in one atomic word per
 * device and nr_swap_pages in one global atomic word: every allocation and
 * free writes both. Here an alloc+free pair costs a few hundred
 * nanoseconds, and two threads writing those two cache lines spent a fifth
 * of their time waiting for them (bench_alloc, 2 threads). So both are
 * split per CPU as the kernel's percpu_counter is (struct
 * swap_pcpu_counter): a CPU adds to its own slot and folds the slot into
 * the shared count when it reaches SWAP_PCPU_BATCH either way. Readers that
 * need the exact value sum the slots (percpu_counter_sum), and the two
 * decisions taken on the values (device full, swap more than half used)
 * sum only when the shared count is within the slots' slack of the
 * threshold (__percpu_counter_compare).
 *
 * The device-full rule keeps the kernel's SWAP_USAGE_OFFLIST_BIT, as a
 * flag beside the shared count (which may go negative here): under
 * swap_avail_lock, an allocation that may have filled the device sets the
 * flag, then sums; a free adds to its slot, then reads the flag. With
 * sequentially consistent operations on both sides, either the sum sees
 * the free or the free sees the flag and, under the lock, puts the device
 * back: a device is never left off the list with a slot free. Folds take
 * a lock (fbc->lock in the kernel) and mark themselves in a sequence
 * count; a sum that saw a fold run retries, so it never counts a batch
 * twice or not at all, and sums write nothing shared.
 */
/* How far the slots together may be from zero: each holds less than a
 * batch, plus an allocation in flight. */
#define SWAP_PCPU_SLACK	((long)swap_pcpu_nr() * (SWAP_PCPU_BATCH + SWAPFILE_CLUSTER))

/* Devices with free slots, highest priority first. swap_avail_lock. */
static CDS_LIST_HEAD(swap_avail_head);
static pthread_mutex_t swap_avail_lock = PTHREAD_MUTEX_INITIALIZER;

/* Totals over swapped-on devices. */
static _Atomic long total_swap_pages;
static struct swap_pcpu_counter nr_swap_pages;

/*
 * A thread's current cluster per order (the kernel's si->percpu_cluster:
 * here per thread), and the cluster it has marked as its own per order.
 */
struct swap_cluster_hint {
	struct swap_info_struct *si[SWAP_NR_ORDERS];
	uint64_t gen[SWAP_NR_ORDERS];
	uint64_t offset[SWAP_NR_ORDERS];	/* 0: none (slot 0 is never free) */
	struct swap_info_struct *own_si[SWAP_NR_ORDERS];	/* NULL: none */
	uint64_t own_gen[SWAP_NR_ORDERS];
	unsigned long own_idx[SWAP_NR_ORDERS];
	uint32_t me;				/* owner token, 0 until first use */
};
static __thread struct swap_cluster_hint this_thread_cluster;

/*
 * Cluster ownership. On a solid-state device each thread allocates from
 * its current cluster, which sits on frag[order] (and, after its first
 * free, nonfull[order]) where another thread's slow path may isolate it.
 * Two threads then share one cluster: its lock and the same table lines
 * go back and forth on every allocation and free, and as long as both
 * keep slots there neither leaves (bench_alloc: 2 threads at a third of
 * one thread's rate, per CPU). The kernel's per-CPU clusters can meet the
 * same way; here a thread marks its current cluster (ci->owner) and the
 * slow path passes over clusters other threads have marked, as long as
 * something else can serve: a second pass takes them too, so an
 * allocation never fails for a mark. One thread never meets a mark but
 * its own, so its allocation order is unchanged.
 * A mark goes when the cluster is freed or full, when its thread moves to
 * another cluster for that order, and when the thread exits.
 */
static _Atomic uint32_t swap_owner_next;
static pthread_key_t swap_owner_key;
static pthread_once_t swap_owner_once = PTHREAD_ONCE_INIT;

/* Clear this thread's mark for @order, if still there. Context: no
 * cluster locks held; takes a device pin and ci->lock. */
static void swap_cluster_disown(struct swap_cluster_hint *h, unsigned int order)
{
	struct swap_info_struct *si = h->own_si[order];
	struct swap_cluster_info *ci;

	if (!si)
		return;
	h->own_si[order] = NULL;
	if (!swap_device_tryget(si))
		return;
	if (atomic_load(&si->generation) == h->own_gen[order] &&
	    h->own_idx[order] < si->nr_clusters) {
		ci = &si->cluster_info[h->own_idx[order]];
		uswap_spin_lock(&ci->lock);
		if (ci->owner == h->me)
			ci->owner = 0;
		swap_cluster_unlock(ci);
	}
	put_swap_device(si);
}

/* Thread exit: drop the marks. Context: the exiting thread, no locks. */
static void swap_owner_exit(void *arg)
{
	unsigned int o;

	(void)arg;
	for (o = 0; o < SWAP_NR_ORDERS; o++)
		swap_cluster_disown(&this_thread_cluster, o);
}

static void swap_owner_key_init(void)
{
	if (pthread_key_create(&swap_owner_key, swap_owner_exit))
		abort();
}

/*
 * This thread's owner token; the first call registers the exit hook.
 * Context: any. Return: a non-zero token no other live thread has.
 */
static uint32_t swap_owner_token(void)
{
	struct swap_cluster_hint *h = &this_thread_cluster;

	if (h->me)
		return h->me;
	pthread_once(&swap_owner_once, swap_owner_key_init);
	do
		h->me = atomic_fetch_add_explicit(&swap_owner_next, 1, memory_order_relaxed) + 1;
	while (!h->me);
	pthread_setspecific(swap_owner_key, h);
	return h->me;
}

/*
 * This CPU's slot (threads on one CPU share it; the sum stays exact).
 * Context: lockless. Return: the slot.
 */
static inline struct swap_pcpu_slot *swap_pcpu_this(struct swap_pcpu_counter *c)
{
	int cpu = sched_getcpu();

	return &c->cpu[(unsigned int)(cpu < 0 ? 0 : cpu) % swap_pcpu_nr()];
}

/* A leaf lock, held for a fold: two adds.
 * Context: any, no sleeping inside. */
static void swap_pcpu_fold_lock(struct swap_pcpu_counter *c)
{
	while (atomic_exchange_explicit(&c->fold_lock, true, memory_order_acquire))
		sched_yield();
}

static void swap_pcpu_fold_unlock(struct swap_pcpu_counter *c)
{
	atomic_store_explicit(&c->fold_lock, false, memory_order_release);
}

/*
 * percpu_counter_add_batch(): add @d to this CPU's slot; fold the slot
 * into the shared count once it holds a batch. Context: lockless; takes
 * the fold lock for a fold.
 */
static void swap_pcpu_add(struct swap_pcpu_counter *c, long d)
{
	struct swap_pcpu_slot *s = swap_pcpu_this(c);
	long v = atomic_fetch_add(&s->v, d) + d;

	if (v < SWAP_PCPU_BATCH && v > -SWAP_PCPU_BATCH)
		return;
	swap_pcpu_fold_lock(c);
	atomic_fetch_add(&c->fold_seq, 1);
	atomic_fetch_add(&c->count, v);
	atomic_fetch_sub(&s->v, v);
	atomic_fetch_add(&c->fold_seq, 1);
	swap_pcpu_fold_unlock(c);
}

/* percpu_counter_read(). Context: lockless. Return: the shared count
 * alone, within SWAP_PCPU_SLACK of the exact value. */
static long swap_pcpu_read(struct swap_pcpu_counter *c)
{
	return atomic_load_explicit(&c->count, memory_order_relaxed);
}

/* percpu_counter_sum(). Context: lockless; retries while folds run.
 * Return: the exact value (updates running meanwhile may or may not be in
 * it). */
static long swap_pcpu_sum(struct swap_pcpu_counter *c)
{
	unsigned long seq;
	unsigned int i;
	long sum;

	do {
		while ((seq = atomic_load(&c->fold_seq)) & 1)
			sched_yield();
		sum = atomic_load(&c->count);
		for (i = 0; i < swap_pcpu_nr(); i++)
			sum += atomic_load(&c->cpu[i].v);
	} while (atomic_load(&c->fold_seq) != seq);
	return sum;
}

/**
 * vm_swap_full() - is more than half of all swap in use?
 * Context: lockless. Return: true if so.
 */
bool vm_swap_full(void)
{
	long total = atomic_load_explicit(&total_swap_pages, memory_order_relaxed);
	long nr = swap_pcpu_read(&nr_swap_pages);

	/* Far from the line, the shared count decides; near it, the sum. */
	if (nr * 2 + 2 * SWAP_PCPU_SLACK < total)
		return true;
	if (nr * 2 - 2 * SWAP_PCPU_SLACK >= total)
		return false;
	return swap_pcpu_sum(&nr_swap_pages) * 2 < total;
}

/**
 * swap_inuse_pages() - @si's allocated slots.
 * Context: lockless (takes the counter's fold lock). Return: the exact count.
 */
long swap_inuse_pages(struct swap_info_struct *si)
{
	return swap_pcpu_sum(&si->inuse_pages);
}

/**
 * swap_inuse_reset() - zero @si's usage count for a new swapon.
 * Context: swapon, before the device is published.
 */
void swap_inuse_reset(struct swap_info_struct *si)
{
	unsigned int i;

	atomic_store(&si->inuse_pages.count, 0);
	atomic_store(&si->inuse_pages.fold_lock, false);
	atomic_store(&si->inuse_pages.fold_seq, 0);
	atomic_store(&si->inuse_pages.offlist, false);
	for (i = 0; i < SWAP_PCPU_SLOTS; i++)
		atomic_store(&si->inuse_pages.cpu[i].v, 0);
}

/* Insert @si by priority, after the devices of equal priority. */
static void __swap_avail_add(struct swap_info_struct *si)
{
	struct cds_list_head *pos;

	if (si->on_avail)
		return;
	/*
	 * Raw nodes, not cds_list_for_each_entry(): its end test forms an
	 * entry pointer from the list head, misaligned now that the struct
	 * is cache-line aligned (UBSan).
	 */
	cds_list_for_each(pos, &swap_avail_head) {
		struct swap_info_struct *p = caa_container_of(pos, struct swap_info_struct, avail_list);

		if (p->prio < si->prio) {
			cds_list_add_tail(&si->avail_list, pos);
			si->on_avail = true;
			return;
		}
	}
	cds_list_add_tail(&si->avail_list, &swap_avail_head);
	si->on_avail = true;
}

static void __swap_avail_del(struct swap_info_struct *si)
{
	if (!si->on_avail)
		return;
	cds_list_del(&si->avail_list);
	si->on_avail = false;
}

/*
 * The device may have just filled up: if the sum says so, it leaves the
 * avail list with the OFFLIST bit set (see "Usage counters").
 * Context: swap_avail_lock held. Return: true if it left.
 */
static bool __swap_usage_check_full(struct swap_info_struct *si)
{
	if (swap_pcpu_sum(&si->inuse_pages) < (long)si->pages)
		return false;
	atomic_store(&si->inuse_pages.offlist, true);
	if (swap_pcpu_sum(&si->inuse_pages) < (long)si->pages) {
		atomic_store(&si->inuse_pages.offlist, false);
		return false;
	}
	__swap_avail_del(si);
	return true;
}

/** swap_range_alloc() - account @nr new slots; a full device leaves the avail list. */
void swap_range_alloc(struct swap_info_struct *si, unsigned int nr)
{
	bool left;

	swap_pcpu_add(&si->inuse_pages, nr);
	swap_pcpu_add(&nr_swap_pages, -(long)nr);
	/*
	 * Not full: the last of concurrent allocations to sum sees them all,
	 * and takes the lock if they filled the device.
	 */
	if (swap_pcpu_read(&si->inuse_pages) + SWAP_PCPU_SLACK < (long)si->pages ||
	    swap_pcpu_sum(&si->inuse_pages) < (long)si->pages)
		return;
	pthread_mutex_lock(&swap_avail_lock);
	left = __swap_usage_check_full(si);
	pthread_mutex_unlock(&swap_avail_lock);
	/* Full, and swap is short overall: free what only the cache holds. */
	if (left && vm_swap_full())
		swap_schedule_work(si, SWAP_WORK_RECLAIM);
}

/**
 * swap_range_free() - account @nr freed slots of one cluster; uncharge
 * their groups, clear their zero flags; tell the backend; a device that
 * was full rejoins the avail list. Context: ci->lock held.
 */
void swap_range_free(struct swap_info_struct *si, uint64_t offset, unsigned int nr)
{
	struct swap_cluster_info *ci = offset_to_cluster(si, offset);

	/* The slots' groups and zero flags go with them (the kernel's
	 * mem_cgroup_uncharge_swap() and zeromap clear). */
	uswap_assert(offset % SWAPFILE_CLUSTER + nr <= SWAPFILE_CLUSTER);
	swap_cgroup_clear(si, ci, offset, nr);
	si->design->zero_set(si, ci, offset, nr, false);
	swap_pcpu_add(&si->inuse_pages, -(long)nr);
	swap_backend_slots_freed(si, offset, nr);
	swap_pcpu_add(&nr_swap_pages, nr);
	if (!atomic_load(&si->inuse_pages.offlist))
		return;
	pthread_mutex_lock(&swap_avail_lock);
	if (atomic_load(&si->inuse_pages.offlist) &&
	    swap_pcpu_sum(&si->inuse_pages) < (long)si->pages) {
		atomic_store(&si->inuse_pages.offlist, false);
		if (atomic_load(&si->flags) & SWP_WRITEOK)
			__swap_avail_add(si);
	}
	pthread_mutex_unlock(&swap_avail_lock);
}

/*
 * Accounting across swapoff. A device counts pages - inuse in
 * nr_swap_pages while it is writable, and every slot freed at any time
 * adds one back (swap_range_free). So swapoff subtracts all of pages: the
 * inuse slots that unuse frees afterwards bring the device's share to 0.
 * A failed swapoff adds pages back, and the share is pages - inuse again.
 */

/**
 * swap_alloc_device_added() - a device becomes writable: at swapon, or
 * again after a failed swapoff. A full one stays off the avail list with
 * the OFFLIST bit, for the first free to put it back.
 * Context: swap_lock held.
 */
void swap_alloc_device_added(struct swap_info_struct *si)
{
	atomic_fetch_add(&total_swap_pages, si->pages);
	atomic_fetch_add(&nr_swap_pages.count, si->pages);
	pthread_mutex_lock(&swap_avail_lock);
	atomic_fetch_or(&si->flags, SWP_WRITEOK);
	atomic_store(&si->inuse_pages.offlist, false);
	__swap_avail_add(si);
	__swap_usage_check_full(si);
	pthread_mutex_unlock(&swap_avail_lock);
}

/**
 * swap_alloc_device_removed() - stop allocation on @si (swapoff).
 * Context: swap_lock held.
 */
void swap_alloc_device_removed(struct swap_info_struct *si)
{
	pthread_mutex_lock(&swap_avail_lock);
	atomic_fetch_and(&si->flags, ~SWP_WRITEOK);
	__swap_avail_del(si);
	pthread_mutex_unlock(&swap_avail_lock);
	atomic_fetch_sub(&total_swap_pages, si->pages);
	atomic_fetch_sub(&nr_swap_pages.count, si->pages);
}

/* A cluster may serve this order: on a usable list, with a table, and
 * empty or of this order (order 0 fits anywhere). Context: ci->lock. */
static bool cluster_is_usable(struct swap_cluster_info *ci, unsigned int order)
{
	if (ci->flags > CLUSTER_FLAG_USABLE || ci->flags == CLUSTER_FLAG_FREE || !swap_cluster_table(ci))
		return false;
	return !order || !ci->count || ci->order == order;
}

/*
 * Can [off, off+nr) be taken? The design says: free slots can, cache-only
 * ones after reclaim. Context: ci->lock held.
 */
static bool cluster_scan_range(struct swap_info_struct *si, struct swap_cluster_info *ci,
			       unsigned int off, unsigned int nr, bool *need_reclaim)
{
	return si->design->scan_range(si, ci, off, nr, need_reclaim);
}

/*
 * Fill slots [off, off+2^order) the design's way: @folio cached there with
 * counts 0, or for a hibernation slot (@folio NULL) count 1 and no folio.
 * Context: ci->lock held (and the folio lock). Return: false if the device
 * stopped taking allocations.
 */
static bool __swap_cluster_alloc_entries(struct swap_info_struct *si, struct swap_cluster_info *ci,
					 struct folio *folio, unsigned int off, unsigned int order)
{
	unsigned int nr = 1U << order;

	if (!(atomic_load_explicit(&si->flags, memory_order_acquire) & SWP_WRITEOK))
		return false;
	if (!ci->count)
		ci->order = (uint8_t)order;
	si->design->alloc_fill(si, ci, folio, off, order);
	swap_cgroup_record(si, ci, cluster_offset(si, ci) + off, nr, folio ? folio_memcg_id(folio) : 0);
	ci->count += nr;
	swap_range_alloc(si, nr);
	return true;
}

/*
 * Reclaim the cache-only slots of [off, off+nr), a folio at a time; stop
 * at the first folio that stays (the caller rechecks the range anyway).
 * Context: no ci->lock.
 */
static void cluster_reclaim_range(struct swap_info_struct *si, uint64_t base, unsigned int off,
				  unsigned int nr)
{
	unsigned int i = 0;

	while (i < nr) {
		int n = si->design->try_reclaim(si, base + off + i, true);

		if (n < 0)
			return;
		i += n > 0 ? (unsigned int)n : 1;
	}
}

/*
 * Scan the locked cluster @ci from @start for a free aligned range,
 * allocate it, put the cluster on its list and unlock it. Remember where
 * the next allocation of this order should look.
 * Return: the first slot's offset, or 0 for none.
 */
static uint64_t alloc_swap_scan_cluster(struct swap_info_struct *si, struct swap_cluster_info *ci,
					uint64_t start, unsigned int order, struct folio *folio)
{
	unsigned int nr = 1U << order, off;
	uint64_t base = cluster_offset(si, ci), found = 0, next = 0, gen;
	struct swap_cluster_hint *h;
	bool need_reclaim, own;

	if (!cluster_is_usable(ci, order) || ci->count + nr > SWAPFILE_CLUSTER)
		goto out;
	off = (unsigned int)(start - base) & ~(nr - 1);
	for (; off + nr <= SWAPFILE_CLUSTER; off += nr) {
		if (!cluster_scan_range(si, ci, off, nr, &need_reclaim))
			continue;
		if (need_reclaim) {
			/*
			 * Reclaim takes folio locks, which rank above ci->lock.
			 * While unlocked, the cluster may be used or emptied by
			 * others: recheck it all.
			 */
			swap_cluster_unlock(ci);
			cluster_reclaim_range(si, base, off, nr);
			uswap_spin_lock(&ci->lock);
			if (!cluster_is_usable(ci, order))
				goto out;
			if (!cluster_scan_range(si, ci, off, nr, &need_reclaim) || need_reclaim)
				continue;
		}
		if (!__swap_cluster_alloc_entries(si, ci, folio, off, order))
			break;
		found = base + off;
		/* The next slots, if in the cluster and the device. */
		if (off + 2 * nr <= SWAPFILE_CLUSTER && found + nr < si->max)
			next = found + nr;
		break;
	}
out:
	relocate_cluster(si, ci);
	if (!(atomic_load_explicit(&si->flags, memory_order_relaxed) & SWP_SOLIDSTATE)) {
		if (USWAP_DEBUG_WALKS)
			si->design->check_cluster(si, ci);
		swap_cluster_unlock(ci);
		si->global_next[order] = next;
		return found;
	}
	/* The thread comes back here next time: mark it as taken. */
	h = &this_thread_cluster;
	own = next && ci->count < SWAPFILE_CLUSTER;	/* count: only under ci->lock */
	if (own)
		ci->owner = swap_owner_token();
	else if (ci->owner && ci->owner == h->me)
		ci->owner = 0;
	if (USWAP_DEBUG_WALKS)
		si->design->check_cluster(si, ci);
	swap_cluster_unlock(ci);
	gen = atomic_load(&si->generation);
	if (h->own_si[order] && (h->own_si[order] != si || h->own_gen[order] != gen ||
				 h->own_idx[order] != cluster_index(si, ci)))
		swap_cluster_disown(h, order);
	h->own_si[order] = NULL;
	if (own) {
		h->own_si[order] = si;
		h->own_gen[order] = gen;
		h->own_idx[order] = cluster_index(si, ci);
	}
	h->si[order] = si;
	h->gen[order] = gen;
	h->offset[order] = next;
	return found;
}

/*
 * Try the clusters of @list one by one. A cluster that cannot serve the
 * order may go back to the tail of the same list (frag), so the walk is
 * bounded by the number of clusters, as the kernel bounds it. With @me,
 * other threads' current clusters are passed over (*@skipped says so).
 * Context: no locks held.
 */
static uint64_t alloc_from_list(struct swap_info_struct *si, unsigned int list,
				unsigned int order, struct folio *folio, bool just_one,
				uint32_t me, bool *skipped)
{
	unsigned long budget = si->nr_clusters;
	struct swap_cluster_info *ci;
	uint64_t found;

	while (budget-- && (ci = isolate_lock_cluster(si, list, me, skipped))) {
		found = alloc_swap_scan_cluster(si, ci, cluster_offset(si, ci), order, folio);
		if (found || just_one)
			return found;
	}
	return 0;
}

/*
 * The lists of one device in the kernel's order (see the file comment).
 * Context: the device is pinned (and global_cluster_lock held if
 * rotational). Return: offset, or 0.
 */
static uint64_t cluster_alloc_lists(struct swap_info_struct *si, unsigned int fl,
				    unsigned int order, struct folio *folio, uint32_t me,
				    bool *skipped)
{
	uint64_t found;
	unsigned int o;

	if ((fl & SWP_PAGE_DISCARD) &&
	    (found = alloc_from_list(si, free_clusters(si), order, folio, true, 0, NULL)))
		return found;
	if (order < SWAP_NR_ORDERS - 1 &&
	    (found = alloc_from_list(si, nonfull_clusters(si, order), order, folio, false,
				     me, skipped)))
		return found;
	if (!(fl & SWP_PAGE_DISCARD) &&
	    (found = alloc_from_list(si, free_clusters(si), order, folio, true, 0, NULL)))
		return found;
	if (vm_swap_full())
		swap_reclaim_full_clusters(si, false);
	/*
	 * One frag cluster is enough: order 0 cannot fail in it, and a larger
	 * order failing is not critical. Taking the head and relocating it to
	 * the tail keeps the list rotating.
	 */
	if (order < SWAP_NR_ORDERS - 1 &&
	    (found = alloc_from_list(si, frag_clusters(si, order), order, folio, true,
				     me, skipped)))
		return found;
	if (order)
		return 0;
	/* Order 0 takes what larger orders left behind before failing. */
	for (o = 1; o < SWAP_NR_ORDERS; o++) {
		found = alloc_from_list(si, frag_clusters(si, o), 0, folio, false, me, skipped);
		if (!found)
			found = alloc_from_list(si, nonfull_clusters(si, o), 0, folio, false,
						me, skipped);
		if (found)
			return found;
	}
	return 0;
}

/*
 * cluster_alloc_swap_entry() - allocate on one device in the kernel's
 * order; on a solid-state device first passing over other threads'
 * current clusters, then, if that found nothing and some were passed
 * over, taking them too.
 * Context: the device is pinned. Return: offset, or 0.
 */
static uint64_t cluster_alloc_swap_entry(struct swap_info_struct *si, unsigned int order,
					 struct folio *folio)
{
	unsigned int fl = atomic_load_explicit(&si->flags, memory_order_relaxed);
	bool rotational = !(fl & SWP_SOLIDSTATE), skipped = false;
	uint64_t found = 0;

	if (rotational) {
		uswap_mutex_lock(&si->global_cluster_lock);
		if (si->global_next[order]) {
			uint64_t off = si->global_next[order];
			struct swap_cluster_info *ci = swap_cluster_lock(si, off);

			if (cluster_is_usable(ci, order))
				found = alloc_swap_scan_cluster(si, ci, off, order, folio);
			else
				swap_cluster_unlock(ci);
		}
		if (!found)
			found = cluster_alloc_lists(si, fl, order, folio, 0, NULL);
		uswap_mutex_unlock(&si->global_cluster_lock);
		return found;
	}
	found = cluster_alloc_lists(si, fl, order, folio, swap_owner_token(), &skipped);
	if (!found && skipped)
		found = cluster_alloc_lists(si, fl, order, folio, 0, NULL);
	return found;
}

/*
 * A device whose backend failed for good (a lost NBD server) takes no new
 * slots: swap-out moves on to the next device by priority.
 */
static bool swap_device_failed(struct swap_info_struct *si)
{
	return si->bdev && swap_backend_failed(si->bdev);
}

/* The thread's current cluster for @order, if still valid. */
static uint64_t swap_alloc_fast(unsigned int order, struct folio *folio, int only_type,
				struct swap_info_struct **sip)
{
	struct swap_cluster_hint *h = &this_thread_cluster;
	struct swap_info_struct *si = h->si[order];
	struct swap_cluster_info *ci;
	uint64_t off = h->offset[order], found = 0;

	if (!si || !off || (only_type >= 0 && si->type != (unsigned int)only_type))
		return 0;
	if (!swap_device_tryget(si))
		return 0;
	if (atomic_load(&si->generation) != h->gen[order] ||
	    !(atomic_load(&si->flags) & SWP_WRITEOK) || off >= si->max ||
	    swap_device_failed(si)) {
		put_swap_device(si);
		h->si[order] = NULL;
		return 0;
	}
	ci = swap_cluster_lock(si, off);
	if (cluster_is_usable(ci, order)) {
		if (!ci->count)
			off = cluster_offset(si, ci);
		found = alloc_swap_scan_cluster(si, ci, off, order, folio);
	} else {
		swap_cluster_unlock(ci);
	}
	*sip = si;
	if (!found)
		put_swap_device(si);
	return found;
}

/* Snapshot the avail list, rotating the first priority group. */
static unsigned int swap_avail_snapshot(struct swap_info_struct **out, int only_type)
{
	struct swap_info_struct *first = NULL, *last_same = NULL;
	struct cds_list_head *pos;
	unsigned int n = 0;

	pthread_mutex_lock(&swap_avail_lock);
	/* Raw nodes: see __swap_avail_add(). */
	cds_list_for_each(pos, &swap_avail_head) {
		struct swap_info_struct *p = caa_container_of(pos, struct swap_info_struct, avail_list);

		if (only_type >= 0 && p->type != (unsigned int)only_type)
			continue;
		if (swap_device_failed(p))
			continue;
		if (!first)
			first = p;
		if (p->prio == first->prio)
			last_same = p;
		out[n++] = p;
	}
	/* Equal priorities take turns: requeue the first behind its peers. */
	if (first && last_same != first && only_type < 0) {
		cds_list_del(&first->avail_list);
		cds_list_add(&first->avail_list, &last_same->avail_list);
	}
	pthread_mutex_unlock(&swap_avail_lock);
	return n;
}

static uint64_t swap_alloc_slow(unsigned int order, struct folio *folio, int only_type,
				struct swap_info_struct **sip)
{
	struct swap_info_struct *devs[MAX_SWAPFILES];
	unsigned int n = swap_avail_snapshot(devs, only_type), i;
	uint64_t found;

	for (i = 0; i < n; i++) {
		struct swap_info_struct *si = devs[i];

		if (!swap_device_tryget(si))
			continue;
		found = cluster_alloc_swap_entry(si, order, folio);
		if (found) {
			*sip = si;
			return found;
		}
		put_swap_device(si);
		/* A large folio tries one device: the caller splits it. */
		if (order)
			break;
	}
	return 0;
}

/**
 * swap_alloc_slots() - allocate 2^order slots for @folio (cached, count 0)
 * or, with @hibernation, one slot with count 1 and no folio.
 * @only_type: a device type, or -1 for any.
 * Context: folio locked; takes device and cluster locks.
 * Return: 0 and *out, or -ENOMEM with nothing allocated.
 */
int swap_alloc_slots(struct folio *folio, unsigned int order, bool hibernation, int only_type,
		     swp_entry_t *out)
{
	struct swap_info_struct *si = NULL;
	uint64_t found;
	int retried = 0;

	(void)hibernation;
	uswap_assert(hibernation == !folio);
again:
	found = swap_alloc_fast(order, folio, only_type, &si);
	if (!found)
		found = swap_alloc_slow(order, folio, only_type, &si);
	if (!found && !order && !retried++) {
		/*
		 * Clusters waiting for the discard worker are free space too:
		 * rather than fail, discard them here (the kernel's
		 * swap_sync_discard()). Larger orders fail and get split.
		 */
		struct swap_info_struct *devs[MAX_SWAPFILES];
		unsigned int n = swap_avail_snapshot(devs, only_type), i;
		bool any = false;

		for (i = 0; i < n && !any; i++) {
			if (!swap_device_tryget(devs[i]))
				continue;
			if (atomic_load(&devs[i]->flags) & SWP_PAGE_DISCARD)
				any = swap_do_scheduled_discard(devs[i]);
			put_swap_device(devs[i]);
		}
		if (any)
			goto again;
	}
	if (!found)
		return -ENOMEM;
	*out = swp_entry(si->type, found);
	put_swap_device(si);
	return 0;
}

/*
 * Free the cache-only slots of the locked cluster @ci, a folio at a time,
 * dropping the lock around each attempt. Context: ci->lock held, and held
 * again on return.
 */
static void cluster_reclaim_cache_only(struct swap_info_struct *si, struct swap_cluster_info *ci)
{
	uint64_t base = cluster_offset(si, ci);
	unsigned int off = 0;
	int n;

	while (off < SWAPFILE_CLUSTER) {
		if (si->design->cache_only(si, ci, off)) {
			swap_cluster_unlock(ci);
			n = si->design->try_reclaim(si, base + off, true);
			uswap_spin_lock(&ci->lock);
			/* Freed or not, that folio's slots are done with. */
			if (n) {
				off += (unsigned int)abs(n);
				continue;
			}
		}
		off++;
	}
}

/**
 * swap_reclaim_full_clusters() - free the cache-only slots of full
 * clusters: one cluster (the allocator, when swap is more than half
 * used), or with @force as many clusters as the device has in use
 * (the reclaim worker).
 *
 * The allocator isolates the cluster, as the kernel does. The worker
 * neither isolates nor locks the clusters it scans: it picks the full
 * clusters under si->lock, reads their tables under RCU and leaves the
 * rechecks to the design's try_reclaim, which takes ci->lock only after it
 * holds the folio. A cluster the worker held (off-list, or locked while
 * it walked 512 slots) would make allocators, which only trylock, skip
 * slots that other threads free in it meanwhile: an allocation could then
 * fail with free space on the device.
 *
 * Context: device pinned; no locks held; trylocks folios.
 */
void swap_reclaim_full_clusters(struct swap_info_struct *si, bool force)
{
	struct swap_cluster_info *ci;
	unsigned long *idx, n = 0, i;
	unsigned int pos;
	long to_scan;

	if (!force) {
		ci = isolate_lock_cluster(si, full_clusters(si), 0, NULL);
		if (!ci)
			return;
		cluster_reclaim_cache_only(si, ci);
		/* Isolated, it is ours to place; emptied, it may be discarded. */
		relocate_cluster(si, ci);
		swap_cluster_unlock(ci);
		return;
	}
	to_scan = swap_inuse_pages(si) / SWAPFILE_CLUSTER;
	if (to_scan <= 0)
		return;
	idx = uswap_malloc((size_t)to_scan * sizeof(*idx));
	if (!idx)
		return;
	uswap_spin_lock(&si->lock);
	cluster_list_for_each(si, pos, full_clusters(si)) {
		if (n == (unsigned long)to_scan)
			break;
		idx[n++] = pos;
	}
	/*
	 * Rotate the picked ones to the tail, so that the next run starts
	 * with others. Their flag stays FULL, so ci->lock holders still know
	 * their list: si->lock alone is enough to reorder it.
	 */
	for (i = 0; i < n; i++)
		cluster_list_move_tail(si, (unsigned int)idx[i], full_clusters(si));
	uswap_spin_unlock(&si->lock);
	for (i = 0; i < n; i++) {
		uint64_t base = (uint64_t)idx[i] * SWAPFILE_CLUSTER;
		unsigned int off = 0;

		ci = &si->cluster_info[idx[i]];
		while (off < SWAPFILE_CLUSTER) {
			struct folio *folio;
			bool busy;
			uint64_t tb;
			int ret = 0;

			/*
			 * A locked folio is being worked on and would fail the
			 * trylock anyway: leave it without taking a reference.
			 * The entry, the folio it names and its lock bit are
			 * read in one RCU section, which keeps the folio struct
			 * (and its pool) from being freed meanwhile.
			 */
			uswap_rcu_read_lock();
			tb = swap_table_get_rcu(ci, off);
			/*
			 * Only a folio with count 0 in its entry may be cache-only.
			 * A design that counts elsewhere (legacy) keeps these
			 * counts 0: its try_reclaim decides.
			 */
			busy = !swp_tb_is_folio(tb) || __swp_tb_get_count(tb);
			if (!busy) {
				folio = pfn_folio(swp_tb_to_pfn(tb));
				busy = !folio || folio_test_locked(folio);
			}
			uswap_rcu_read_unlock();
			if (busy) {
				off++;
				continue;
			}
			ret = si->design->try_reclaim(si, base + off, true);
			off += ret ? (unsigned int)abs(ret) : 1;
		}
	}
	free(idx);
}

/**
 * swap_do_scheduled_discard() - discard the clusters waiting on the
 * discard list, then free them.
 * Context: device pinned; no locks held; may sleep (backend discard).
 * Return: true if at least one cluster was discarded and freed.
 */
bool swap_do_scheduled_discard(struct swap_info_struct *si)
{
	struct swap_cluster_info *ci;
	unsigned int pos;
	bool any = false;

	for (;;) {
		uswap_spin_lock(&si->lock);
		if (cluster_list_empty(si, discard_clusters(si))) {
			uswap_spin_unlock(&si->lock);
			return any;
		}
		pos = cluster_list_first(si, discard_clusters(si));
		ci = link_cluster(si, pos);
		/*
		 * Off the list but still flagged DISCARD: allocators skip it
		 * and frees leave it alone (free_cluster, relocate_cluster).
		 * Writing the flag needs ci->lock too, which we do not hold.
		 */
		cluster_list_del_init(si, pos);
		uswap_spin_unlock(&si->lock);

		if (si->discard)
			si->discard(si, cluster_offset(si, ci), SWAPFILE_CLUSTER);

		uswap_spin_lock(&ci->lock);
		ci->flags = CLUSTER_FLAG_NONE;
		__free_cluster(si, ci);
		swap_cluster_unlock(ci);
		any = true;
	}
}

/**
 * swap_cluster_schedule_discard() - an emptied cluster waits on the
 * discard list (its table kept, all NULL) for the device's worker.
 * Context: ci->lock held, the cluster off-list or on a list it may leave.
 */
void swap_cluster_schedule_discard(struct swap_info_struct *si, struct swap_cluster_info *ci)
{
	uswap_assert_held(&ci->lock);
	move_cluster(si, ci, discard_clusters(si), CLUSTER_FLAG_DISCARD);
	swap_schedule_work(si, SWAP_WORK_DISCARD);
}

/**
 * swap_schedule_work() - queue @work (SWAP_WORK_*) for @si's worker.
 * Work queued twice before the worker runs is done once.
 * Context: any, even under ci->lock (takes the leaf si->work.lock).
 */
void swap_schedule_work(struct swap_info_struct *si, unsigned int work)
{
	pthread_mutex_lock(&si->work.lock);
	if (si->work.running && !si->work.stop) {
		si->work.pending |= work;
		pthread_cond_signal(&si->work.cond);
	}
	pthread_mutex_unlock(&si->work.lock);
}

/**
 * swap_flush_work() - wait until the work queued so far has run.
 * Context: may sleep; no swap locks held.
 */
void swap_flush_work(struct swap_info_struct *si)
{
	pthread_mutex_lock(&si->work.lock);
	while (si->work.pending || si->work.busy)
		pthread_cond_wait(&si->work.idle, &si->work.lock);
	pthread_mutex_unlock(&si->work.lock);
}

static void *swap_work_fn(void *arg)
{
	struct swap_info_struct *si = arg;
	unsigned int work;

	pthread_mutex_lock(&si->work.lock);
	for (;;) {
		while (!si->work.pending && !si->work.stop)
			pthread_cond_wait(&si->work.cond, &si->work.lock);
		if (!si->work.pending)
			break;	/* stop, and nothing queued */
		work = si->work.pending;
		si->work.pending = 0;
		si->work.busy = true;
		pthread_mutex_unlock(&si->work.lock);
		/* Swapoff past its unuse: it discards and reclaims itself. */
		if (swap_device_tryget(si)) {
			if (work & SWAP_WORK_DISCARD)
				swap_do_scheduled_discard(si);
			if (work & SWAP_WORK_RECLAIM)
				swap_reclaim_full_clusters(si, true);
			put_swap_device(si);
		}
		pthread_mutex_lock(&si->work.lock);
		si->work.busy = false;
		if (!si->work.pending)
			pthread_cond_broadcast(&si->work.idle);
	}
	pthread_mutex_unlock(&si->work.lock);
	return NULL;
}

/**
 * swap_work_start() - start @si's worker. The lock and conditions are
 * set up once per swap_info_struct and reused across swapons.
 * Context: swapon, before the device is published; may sleep.
 * Return: 0, -EAGAIN (no thread).
 */
int swap_work_start(struct swap_info_struct *si)
{
	si->work.pending = 0;
	si->work.busy = false;
	si->work.stop = false;
	if (pthread_create(&si->work.thread, NULL, swap_work_fn, si))
		return -EAGAIN;
	pthread_mutex_lock(&si->work.lock);
	si->work.running = true;
	pthread_mutex_unlock(&si->work.lock);
	return 0;
}

/**
 * swap_work_stop() - let the worker finish what is queued, then join it.
 * Context: swapoff (or a failed swapon) after the device stopped taking
 * pins, so queued work finds no device and is dropped; may sleep.
 */
void swap_work_stop(struct swap_info_struct *si)
{
	pthread_mutex_lock(&si->work.lock);
	if (!si->work.running) {
		pthread_mutex_unlock(&si->work.lock);
		return;
	}
	si->work.stop = true;
	pthread_cond_signal(&si->work.cond);
	pthread_mutex_unlock(&si->work.lock);
	pthread_join(si->work.thread, NULL);
	pthread_mutex_lock(&si->work.lock);
	si->work.running = false;
	si->work.pending = 0;
	pthread_cond_broadcast(&si->work.idle);
	pthread_mutex_unlock(&si->work.lock);
}

/** uswap_vm_swap_full() - see uswap/swap.h. */
USWAP_API bool uswap_vm_swap_full(void)
{
	return vm_swap_full();
}
