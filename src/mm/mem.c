/* SPDX-License-Identifier: MIT */
/*
 * The memory budget: a frame pool, its watermarks, the LRU lists, the
 * workingset clock, background reclaim (kswapd) and direct reclaim when a
 * frame cannot be had; and swapoff's unuse for every mm and shmem object.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mm/mm_internal.h"
#include "util/alloc.h"

/** page_folio_pfn() - the folio a mapped frame belongs to. Lockless. */
struct folio *page_folio_pfn(uint64_t pfn)
{
	struct folio *f = pfn_folio(pfn);

	return f ? f->head : NULL;
}

/*
 * Free frames as the budget sees them: the pool's, less the memory outside
 * it that is charged to the budget (cfg.charged_pages), never below 0.
 */
static size_t mem_free_frames(struct uswap_mem *mem)
{
	size_t free = uswap_frame_pool_free_frames(mem->pool);
	uint64_t charged = mem->cfg.charged_pages ? mem->cfg.charged_pages(mem->cfg.charged_arg) : 0;

	return charged >= free ? 0 : free - (size_t)charged;
}

static bool mem_below(struct uswap_mem *mem, size_t wmark)
{
	return mem_free_frames(mem) < wmark;
}

#define KSWAPD_PASS	32UL	/* pages a kswapd pass reclaims (SWAP_CLUSTER_MAX) */

static void *kswapd_fn(void *arg)
{
	struct uswap_mem *mem = arg;

	pthread_mutex_lock(&mem->kswapd_lock);
	for (;;) {
		while (!mem->kswapd_stop && !mem->kswapd_wake)
			pthread_cond_wait(&mem->kswapd_cond, &mem->kswapd_lock);
		if (mem->kswapd_stop)
			break;
		mem->kswapd_wake = false;
		pthread_mutex_unlock(&mem->kswapd_lock);
		/*
		 * Reclaim in batches until free frames reach the high mark. A
		 * pass that frees nothing may only have aged referenced pages
		 * or found writes in flight: give up after as many of those
		 * in a row as the kernel's kswapd (MAX_RECLAIM_RETRIES). Each
		 * pass is the kernel's SWAP_CLUSTER_MAX pages and ends with a
		 * yield, its cond_resched(): a thread woken onto this CPU (a
		 * program's agent, the program) waits for one pass of
		 * compressions, not for the whole way to the mark.
		 */
		{
			unsigned int idle = 0;

			while (mem_below(mem, mem->wmark_high) && idle < 16) {
				unsigned long want = mem->wmark_high - mem_free_frames(mem);

				if (shrink_memory(mem, USWAP_MIN(want, KSWAPD_PASS), false))
					idle = 0;
				else
					idle++;
				sched_yield();
			}
		}
		pthread_mutex_lock(&mem->kswapd_lock);
	}
	pthread_mutex_unlock(&mem->kswapd_lock);
	return NULL;
}

/** mem_wake_kswapd() - start background reclaim. Context: any. */
void mem_wake_kswapd(struct uswap_mem *mem)
{
	if (!mem->kswapd_running)
		return;
	pthread_mutex_lock(&mem->kswapd_lock);
	if (!mem->kswapd_wake) {
		mem->kswapd_wake = true;
		mem_stat_inc(mem, kswapd_wakeups);
		pthread_cond_signal(&mem->kswapd_cond);
	}
	pthread_mutex_unlock(&mem->kswapd_lock);
}

/**
 * mem_swapin_prepare() - swap-in allocates its folios in the swap layer,
 * from the pool directly: keep background reclaim informed first.
 */
void mem_swapin_prepare(struct uswap_mem *mem)
{
	if (mem_below(mem, mem->wmark_low))
		mem_wake_kswapd(mem);
}

/* The group a swap-in from @entry is charged to, pinned: the group the
 * slot is charged to, or @fallback (the faulting mm's) when that one is
 * gone or the root (mem_cgroup_swapin_charge_folio()). */
static struct uswap_memcg *swapin_memcg(struct uswap_mem *mem, struct uswap_memcg *fallback,
					swp_entry_t entry)
{
	struct uswap_memcg *cg = mem_cgroup_get_by_id(mem, uswap_swap_cgroup_lookup(entry));

	if (!cg && fallback) {
		cg = fallback;
		mem_cgroup_get(cg);
	}
	return cg;
}

/*
 * Charge a swap-in from @entry to group @cg before it reads, as the kernel
 * charges each new folio (mem_cgroup_swapin_charge_folio()): the largest
 * order of *@orders that fits under memory.max without reclaim, else one
 * page with reclaim; and room for the readahead window, without reclaim,
 * or no readahead (a full group reads only what faults). *@orders and
 * info->ra_max_pages are narrowed to what is charged.
 * Context: may sleep (reclaim). Return: 0 and the pages charged for the
 * folio (*@main) and for readahead (*@ra); -ENOMEM (events_oom counted).
 */
static int swapin_precharge(struct uswap_memcg *cg, unsigned long *orders,
			    struct uswap_swapin_info *info, unsigned long *main, unsigned long *ra)
{
	unsigned int k;
	int err;

	*main = 0;
	*ra = 0;
	if (!cg)
		return 0;
	for (k = USWAP_MAX_ORDER; k > 0; k--)
		if ((*orders >> k) & 1 && !mem_cgroup_try_charge_noreclaim(cg, 1UL << k))
			break;
	if (k) {
		*orders &= (2UL << k) - 1;
	} else {
		*orders = 1;
		err = mem_cgroup_try_charge(cg, 1);
		if (err)
			return err;
	}
	*main = 1UL << k;
	if (info->ra_max_pages > 1) {
		if (!mem_cgroup_try_charge_noreclaim(cg, info->ra_max_pages))
			*ra = info->ra_max_pages;
		else
			info->ra_max_pages = 1;
	}
	return 0;
}

/**
 * mem_swapin() - uswap_swapin() for this budget: charge the group of the
 * slot (or @memcg, the faulting mm's, when that group is gone), reclaim and
 * retry while no frame is free, put the readahead folios on the LRU, count
 * the fault.
 * @info: zero-initialized by the caller; its ra_folios must be an array of
 * USWAP_SWAPIN_RA_MAX.
 *
 * The folio and the readahead window are charged before the read, within
 * memory.max (swapin_precharge()); what was not used is given back. Only a
 * readahead folio of another group than the faulting one is charged past
 * its limit, and that group is then reclaimed back under it.
 * Context: may sleep; mmap_lock for read at most. Return: as uswap_swapin();
 * -ENOMEM also when the group's charge fails.
 */
int mem_swapin(struct uswap_mem *mem, struct uswap_memcg *memcg, swp_entry_t entry,
	       unsigned long orders, struct uswap_swapin_info *info, struct folio **out)
{
	struct uswap_memcg *cg = swapin_memcg(mem, memcg, entry);
	unsigned long main_nr, ra_nr;
	unsigned int tries = 0, j;
	int err;

	err = swapin_precharge(cg, &orders, info, &main_nr, &ra_nr);
	if (err) {
		mem_cgroup_put(cg);
		return err;
	}
	for (;;) {
		mem_swapin_prepare(mem);
		err = uswap_swapin(entry, mem->pool, orders, out, info);
		if (err != -ENOMEM || ++tries > 16)
			break;
		if (!shrink_memory(mem, 64, true) && tries > 4)
			break;
	}
	if (err) {
		mem_cgroup_cancel_charge(cg, main_nr + ra_nr);
		mem_cgroup_put(cg);
		return err;
	}
	if (info->major && cg) {
		unsigned long nr = folio_nr_pages(*out);

		if (nr > main_nr)
			mem_cgroup_force_charge(cg, nr - main_nr);
		else
			mem_cgroup_cancel_charge(cg, main_nr - nr);
		mem_cgroup_commit_charge(*out, cg);
		memcg_stat_add(cg, pswpin, nr);
	} else {
		mem_cgroup_cancel_charge(cg, main_nr);
	}
	/* The swap-in took frames after the check above: check again, or the
	 * last fault can leave free frames below the low mark with kswapd
	 * asleep. */
	mem_swapin_prepare(mem);
	for (j = 0; j < info->ra_pages; j++) {
		struct folio *ra = info->ra_folios[j];
		struct uswap_memcg *rcg = swapin_memcg(mem, memcg, ra->swap);
		unsigned long nr = folio_nr_pages(ra);
		bool active = false;

		if (rcg && rcg == cg && ra_nr >= nr)
			ra_nr -= nr;		/* charged before the read */
		else
			mem_cgroup_force_charge(rcg, nr);
		mem_cgroup_commit_charge(ra, rcg);
		memcg_stat_add(rcg, pswpin, nr);
		/* A readahead folio's refault is judged as any other's
		 * (workingset_refault() in __read_swap_cache_async()). */
		if (info->ra_shadows && info->ra_shadows[j])
			active = workingset_refault(mem, ra, info->ra_shadows[j]);
		lru_add(mem, ra, active);
		folio_put(ra);
		if (rcg != cg)
			mem_cgroup_reclaim_over_max(rcg);
		mem_cgroup_put(rcg);
	}
	mem_cgroup_cancel_charge(cg, ra_nr);
	mem_cgroup_reclaim_over_max(cg);
	mem_cgroup_put(cg);
	if (info->major) {
		mem_stat_inc(mem, major_faults);
		mem_stat_add(mem, swapins, folio_nr_pages(*out) + info->ra_pages);
	} else {
		mem_stat_inc(mem, swapin_cache_hits);
		mem_stat_inc(mem, minor_faults);
	}
	return 0;
}

/**
 * mem_alloc_folio() - a folio of @order from the budget, reclaiming
 * directly when none is free. Context: may sleep; no mm locks held except
 * mmap_lock for read. Return: the folio (refcount 1), or NULL when
 * reclaim cannot free enough (out of memory and swap).
 */
struct folio *mem_alloc_folio(struct uswap_mem *mem, unsigned int order)
{
	unsigned int tries, idle = 0;
	struct folio *f;

	for (tries = 0; tries < 16 && idle < 3; tries++) {
		f = uswap_folio_alloc(mem->pool, order);
		if (mem_below(mem, mem->wmark_low))
			mem_wake_kswapd(mem);
		/* With memory outside the pool charged, the budget may be
		 * spent while the pool still has frames: reclaim first, up to
		 * four passes; then the frame is used anyway (a soft limit:
		 * the charge may overshoot by what reclaim could not free). */
		if (f && mem->cfg.charged_pages && !mem_free_frames(mem) && tries < 4) {
			folio_put(f);
			f = NULL;
		}
		if (f)
			return f;
		mem_stat_inc(mem, direct_reclaims);
		/* No progress three times running: out of memory and swap (or,
		 * for a large folio, too fragmented: the caller tries order 0). */
		if (shrink_memory(mem, USWAP_MAX(32UL, 2UL << order), true))
			idle = 0;
		else
			idle++;
	}
	return NULL;
}

static int mem_unuse(unsigned int type, void *arg);

/** uswap_mem_create() - see uswap/mm.h. */
USWAP_API int uswap_mem_create(const struct uswap_mem_config *cfg, struct uswap_mem **out)
{
	struct uswap_mem *mem;
	size_t frames;
	int err;

	if (!cfg || cfg->budget_bytes < (1ULL << 20) || cfg->max_order > USWAP_MAX_ORDER ||
	    cfg->page_cluster < -1 || cfg->page_cluster > 5 ||
	    !uswap_mem_is_zero(cfg->__reserved, sizeof(cfg->__reserved)))
		return -EINVAL;
	mem = uswap_calloc(1, sizeof(*mem));
	if (!mem)
		return -ENOMEM;
	mem->cfg = *cfg;
	if (!mem->cfg.low_pct)
		mem->cfg.low_pct = 4;
	if (!mem->cfg.high_pct || mem->cfg.high_pct <= mem->cfg.low_pct)
		mem->cfg.high_pct = mem->cfg.low_pct * 2;
	frames = cfg->budget_bytes >> USWAP_PAGE_SHIFT;
	err = uswap_frame_pool_create(frames, &mem->pool);
	if (err) {
		free(mem);
		return err;
	}
	mem->nr_frames = frames;
	mem->wmark_low = USWAP_MAX(frames * mem->cfg.low_pct / 100, 16UL);
	mem->wmark_high = USWAP_MAX(frames * mem->cfg.high_pct / 100, 32UL);
	uswap_spin_init(&mem->lru_lock);
	CDS_INIT_LIST_HEAD(&mem->lru_inactive);
	CDS_INIT_LIST_HEAD(&mem->lru_active);
	err = mem_cgroup_init(mem);
	if (err) {
		uswap_frame_pool_destroy(mem->pool);
		free(mem);
		return err;
	}
	pthread_mutex_init(&mem->mmlist_lock, NULL);
	CDS_INIT_LIST_HEAD(&mem->mmlist);
	CDS_INIT_LIST_HEAD(&mem->shmems);
	pthread_mutex_init(&mem->reclaim_lock, NULL);
	pthread_mutex_init(&mem->kswapd_lock, NULL);
	pthread_cond_init(&mem->kswapd_cond, NULL);
	if (!cfg->no_kswapd) {
		if (pthread_create(&mem->kswapd, NULL, kswapd_fn, mem)) {
			mem_cgroup_fini(mem);
			uswap_frame_pool_destroy(mem->pool);
			free(mem);
			return -EAGAIN;
		}
		mem->kswapd_running = true;
	}
	err = uswap_swap_set_owner(mem_unuse, mem, true);
	if (err) {
		uswap_mem_destroy(mem);
		return err;
	}
	*out = mem;
	return 0;
}

/** uswap_mem_destroy() - see uswap/mm.h. Frees what the LRU still holds. */
USWAP_API void uswap_mem_destroy(struct uswap_mem *mem)
{
	struct folio *batch[64];
	unsigned int n, i;

	if (!mem)
		return;
	uswap_swap_set_owner(mem_unuse, mem, false);
	if (mem->kswapd_running) {
		pthread_mutex_lock(&mem->kswapd_lock);
		mem->kswapd_stop = true;
		pthread_cond_signal(&mem->kswapd_cond);
		pthread_mutex_unlock(&mem->kswapd_lock);
		pthread_join(mem->kswapd, NULL);
	}
	USWAP_BUG_ON(!cds_list_empty(&mem->mmlist) || !cds_list_empty(&mem->shmems));
	/* What is left on the LRU is only cached: drop it. */
	for (;;) {
		n = lru_isolate(mem, false, batch, 64);
		n += lru_isolate(mem, true, batch + n, 64 - n);
		if (!n)
			break;
		for (i = 0; i < n; i++) {
			struct folio *f = batch[i];

			folio_lock(f);
			folio_wait_writeback(f);
			if (folio_test_swapcache(f))
				swap_cache_del_folio(f, 0);
			folio_unlock(f);
			folio_put(f);
		}
	}
	/* Write completions may still hold references: let them finish. */
	for (n = 0; uswap_frame_pool_free_frames(mem->pool) != mem->nr_frames && n < 100000; n++) {
		struct timespec ts = { 0, 100000 };

		nanosleep(&ts, NULL);
	}
	mem_cgroup_fini(mem);
	uswap_frame_pool_destroy(mem->pool);
	free(mem);
}

/** uswap_mem_get_stats() - see uswap/mm.h. Lockless snapshot. */
USWAP_API void uswap_mem_get_stats(struct uswap_mem *mem, struct uswap_mem_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->nr_frames = mem->nr_frames;
	st->free_frames = uswap_frame_pool_free_frames(mem->pool);
	st->nr_active = (uint64_t)atomic_load(&mem->nr_active);
	st->nr_inactive = (uint64_t)atomic_load(&mem->nr_inactive);
#define S(x) st->x = atomic_load(&mem->stat.x)
	S(swapouts); S(swapins); S(major_faults); S(minor_faults);
	S(refaults); S(refault_activations); S(cow_copies); S(cow_reuses);
	S(thp_splits); S(write_errors); S(read_errors); S(sigbus);
	S(direct_reclaims); S(kswapd_wakeups); S(reclaimed);
	S(swapin_cache_hits); S(swap_frees_after_map);
	S(swapoff_lost);
	S(peek_drops);
#undef S
}

/** uswap_mem_reclaim() - see uswap/mm.h. */
USWAP_API long uswap_mem_reclaim(struct uswap_mem *mem, unsigned long nr)
{
	return (long)shrink_memory(mem, nr, true);
}

/*
 * Swapoff's unuse for this budget: bring every page of device @type back
 * into memory, in every address space and shmem object. Fails with
 * -ENOMEM, before touching anything, when the pages cannot fit.
 * Context: called by uswap_swapoff_type() without the swap lock (under the
 * owners' lock for reading).
 */
static int mem_unuse(unsigned int type, void *arg)
{
	struct uswap_mem *mem = arg;
	struct uswap_swap_stat st;
	struct uswap_shmem *shm;
	struct uswap_mm *mm;
	uint64_t room, lost0 = atomic_load(&mem->stat.swapoff_lost);
	int err = 0;

	if (uswap_swap_stat(type, &st))
		return 0;
	/* Free frames plus what reclaim could push to the other devices. */
	room = uswap_frame_pool_free_frames(mem->pool);
	{
		unsigned int t;
		uint64_t other = 0;

		for (t = 0; t < MAX_SWAPFILES; t++) {
			struct uswap_swap_stat o;

			if (t != type && uswap_swap_type_active(t) && !uswap_swap_stat(t, &o) &&
			    (o.flags & 2 /* SWP_WRITEOK */))
				other += o.pages - o.inuse_pages;
		}
		room += USWAP_MIN(other, (uint64_t)(atomic_load(&mem->nr_active) +
						    atomic_load(&mem->nr_inactive)));
	}
	if (st.inuse_pages > room)
		return -ENOMEM;
	pthread_mutex_lock(&mem->mmlist_lock);
	cds_list_for_each_entry(shm, &mem->shmems, node) {
		err = shmem_unuse(shm, type);
		if (err)
			goto out;
	}
	cds_list_for_each_entry(mm, &mem->mmlist, mmlist) {
		struct uswap_vma *vma;

		pthread_rwlock_rdlock(&mm->mmap_lock);
		cds_list_for_each_entry(vma, &mm->vmas, node) {
			err = unuse_vma(vma, type);
			if (err)
				break;
		}
		pthread_rwlock_unlock(&mm->mmap_lock);
		if (err)
			break;
	}
out:
	pthread_mutex_unlock(&mem->mmlist_lock);
	if (atomic_load(&mem->stat.swapoff_lost) != lost0)
		uswap_warn("swapoff of device %u: %" PRIu64 " pages lost (the device failed)",
			   type, atomic_load(&mem->stat.swapoff_lost) - lost0);
	return err;
}
