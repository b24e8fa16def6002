/* SPDX-License-Identifier: MIT */
/*
 * The in-process mode: eviction by UFFDIO_MOVE into the staging area, the
 * written bits, the resident + compressed bound (docs/RUNTIME.md).
 */
#include "runtime/region_internal.h"


/*
 * Register [@start, @start + @len) for MISSING faults, and for WP_ASYNC
 * written bits where the pool has them (the staging area too: UFFDIO_MOVE
 * wants both sides with the same protection).
 * Context: any. Return: 0, -errno.
 */
int rg_register(struct uswap_region_pool *pool, uint64_t start, uint64_t len)
{
	struct uffdio_register r = {
		.range = { .start = start, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING | (pool->wp ? UFFDIO_REGISTER_MODE_WP : 0),
	};

	return ioctl(pool->uffd, UFFDIO_REGISTER, &r) ? -errno : 0;
}

/* Empty the staging area: unregistered first, so that no REMOVE event
 * (which this thread would have to read itself) is raised. */
static void staging_clear(struct uswap_region_pool *pool)
{
	uint64_t s = (uint64_t)(uintptr_t)pool->staging;

	rt_uffd_unregister(pool->uffd, s, RG_BATCH * PAGE);
	madvise(pool->staging, RG_BATCH * PAGE, MADV_DONTNEED);
	if (rg_register(pool, s, RG_BATCH * PAGE)) {
		fprintf(stderr, "uswap: cannot register a region pool's staging area again\n");
		abort();
	}
}

/*
 * The compressed bytes of the pool's own device (zram's pool: the memory
 * that holds the data), and the resident budget the total bound leaves:
 * pool->limit = min(budget, total - compressed pages), at least RG_FLOOR.
 * Without a device of its own the pool cannot tell its share of the
 * store: limit = budget (total_bytes needs @swap).
 * Context: pool->lock held; the device stays on while the pool lives.
 */
static void bound_total(struct uswap_region_pool *pool)
{
	struct swap_info_struct *si;
	struct swap_zram_stats zs;
	uint64_t room;

	pool->limit = pool->budget;
	if (pool->swap_type < 0)
		return;
	si = atomic_load(&swap_info[pool->swap_type]);
	if (!si || !si->bdev || swap_backend_zram_stats(si->bdev, &zs))
		return;
	pool->st.compressed_bytes = zs.pool_bytes;
	if (zs.pool_bytes > pool->st.peak_compressed_bytes)
		pool->st.peak_compressed_bytes = zs.pool_bytes;
	pool->cp_pages = (zs.pool_bytes + PAGE - 1) / PAGE;
	peak_total(pool);
	if (!pool->total)
		return;
	room = pool->total > pool->cp_pages ? pool->total - pool->cp_pages : 0;
	if (room < RG_FLOOR)
		room = RG_FLOOR;
	if (room < pool->limit)
		pool->limit = room;
}

/*
 * Read the written bits of the regions when a quarter of the resident
 * pages (at least a batch) was evicted since the last read, as the
 * supervisor does (session.c, scan_written()).
 * Context: handler, pool->lock held.
 */
static void scan_written(struct uswap_region_pool *pool)
{
	uint64_t every = pool->resident / 4 > RG_BATCH ? pool->resident / 4 : RG_BATCH;

	if (!pool->wp || pool->pagemap < 0 || (pool->flags & USWAP_REGION_EVICT_FIFO) ||
	    pool->st.evicted - pool->scan_clock < every)
		return;
	pool->scan_clock = pool->st.evicted;
	pool->lru_st.scans++;
	for (struct rg_region *r = pool->regions; r; r = r->next) {
		long n = rt_lru_scan(pool->pagemap, &pool->tab, r->start,
				     r->start + r->npages * PAGE);

		if (n > 0)
			pool->st.written += (uint64_t)n;
	}
}

/*
 * Put a moved page whose bytes could not be stored back where it is now
 * (page @i of region @id: an mremap may have moved it meanwhile).
 * Context: handler, pool->lock held.
 */
static void evict_undo(struct uswap_region_pool *pool, uint64_t id, uint64_t i,
		       const char *bytes)
{
	for (;;) {
		struct rg_region *r = region_by_id(pool, id);
		uint64_t done;
		int err;

		if (!r || i >= r->npages || r->state[i] != RG_MOVING)
			return;		/* dropped meanwhile: zeros, as asked */
		err = rt_uffd_copy(pool->uffd, r->start + i * PAGE, bytes, PAGE, &done);
		if (!err || err == -EEXIST || (err != -EAGAIN && done == 0)) {
			/* counted resident still; back on the inactive list */
			r->state[i] = RG_RESIDENT;
			rt_lru_add(&pool->lru, &pool->tab, r->start + i * PAGE, false);
			return;
		}
		rg_read_msgs(pool);	/* EAGAIN: an event is pending */
		usleep(20);
	}
}

struct rg_cand {
	uint64_t addr, id, i;
	struct rg_region *r;
};

static int cand_cmp(const void *a, const void *b)
{
	const struct rg_cand *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * Move up to @want resident pages (<= RG_BATCH) out, the coldest by the
 * lists, and store them in the mirror. A page the kernel refuses because
 * it is shared with a forked child (EBUSY) is unshared once with
 * MADV_POPULATE_WRITE (a write fault without a write: the parent gets its
 * own copy, or the page back if the child is gone) and moved then.
 * *@again is set when a pending event stopped it.
 * Return: the pages evicted. Context: handler, pool->lock held.
 */
uint64_t rg_evict_batch(struct uswap_region_pool *pool, uint64_t want, bool *again)
{
	struct rg_cand c[RG_BATCH];
	bool moved[RG_BATCH] = { false }, unshared[RG_BATCH] = { false };
	uint64_t n = 0, evicted = 0, a;
	bool any = false;

	if (want > RG_BATCH)
		want = RG_BATCH;
	scan_written(pool);
	/* Pick: the inactive list's oldest (rt_lru_pop() ages and rotates). */
	while (n < want && rt_lru_pop(&pool->lru, &pool->tab, &a, pool->resident,
				      &pool->lru_st)) {
		struct rg_region *r = region_of(pool, a);
		uint64_t i;

		pt_del(&pool->tab, a);	/* off the lists while in the batch */
		if (!r || r->state[i = (a - r->start) / PAGE] != RG_RESIDENT)
			continue;	/* cannot happen: tab holds RESIDENT pages only */
		c[n++] = (struct rg_cand){ a, r->id, i, r };
	}
	/* Move, in runs of neighbouring pages. */
	qsort(c, n, sizeof(c[0]), cand_cmp);
	for (uint64_t s = 0; s < n;) {
		uint64_t k = 1, done;
		int err;

		while (s + k < n && c[s + k].r == c[s].r && c[s + k].i == c[s].i + k)
			k++;
		err = rt_uffd_move(pool->uffd, (uint64_t)(uintptr_t)pool->staging + s * PAGE,
				   c[s].addr, k * PAGE, 0, &done);
		done /= PAGE;
		for (uint64_t j = 0; j < done; j++) {
			moved[s + j] = true;
			c[s + j].r->state[c[s + j].i] = RG_MOVING;
			any = true;
		}
		if (!err) {
			s += k;
			continue;
		}
		if (err == -EAGAIN && done) {
			s += done;	/* a partial move: the rest again, for its real error */
			continue;
		}
		if (err == -EAGAIN) {
			*again = true;
			break;		/* an event is pending: the rest stays */
		}
		s += done;
		if (err == -EBUSY && !unshared[s] &&
		    !madvise((void *)(uintptr_t)c[s].addr, (k - done) * PAGE, MADV_POPULATE_WRITE)) {
			/* Shared copy-on-write (after a fork, every page of the
			 * run is): the rest of the run unshared at once, again. */
			for (uint64_t j = s; j < s + k - done; j++)
				unshared[j] = true;
			pool->st.cow_unshared += k - done;
			continue;
		}
		if (err == -EBUSY)
			pool->st.evict_busy++;	/* pinned: stays resident */
		if (err == -ENOENT) {	/* not present: dropped without an event seen */
			c[s].r->state[c[s].i] = RG_ABSENT;
			pool->resident--;
		}
		s++;
	}
	/* What did not move goes back on the inactive list (rotated, as the
	 * kernel's putback). */
	for (uint64_t s = 0; s < n; s++)
		if (!moved[s] && c[s].r->state[c[s].i] == RG_RESIDENT)
			rt_lru_add(&pool->lru, &pool->tab, c[s].addr, false);
	/* Store what moved; what cannot be stored goes back. evict_undo()
	 * reads events, which may free or move a region: look each one up
	 * again by its id. */
	for (uint64_t s = 0; s < n; s++) {
		struct rg_region *r = moved[s] ? region_by_id(pool, c[s].id) : NULL;
		const char *bytes = pool->staging + s * PAGE;
		uint64_t i = c[s].i;

		if (!r || i >= r->npages || r->state[i] != RG_MOVING)
			continue;	/* dropped meanwhile: the bytes go */
		if (uswap_mm_write(pool->mm, r->mirror + i * PAGE, bytes, PAGE)) {
			pool->st.evict_failed++;
			evict_undo(pool, c[s].id, i, bytes);
			continue;
		}
		r->state[i] = RG_SWAPPED;
		/* the shadow: the eviction clock as it leaves */
		r->shadow[i] = (uint32_t)((pool->st.evicted + evicted) & LRU_SHADOW_MASK);
		pool->resident--;
		pool->swapped++;
		evicted++;
	}
	if (any)
		staging_clear(pool);
	pool->st.evict_batches++;
	pool->st.evicted += evicted;
	return evicted;
}

/* Evict until a run fits under the budget (with headroom), unless a fork
 * is being prepared. Context: handler, pool->lock held. */
void rg_make_room(struct uswap_region_pool *pool)
{
	uint64_t head;
	int tries = 0;

	bound_total(pool);
	head = pool->limit / 4 < RG_HEADROOM ? pool->limit / 4 : RG_HEADROOM;
	if (pool->stall_until && now_ns() < pool->stall_until)
		return;		/* the last batch moved nothing */
	pool->stall_until = 0;
	while (!pool->prefork && pool->resident + RG_RUN > pool->limit) {
		uint64_t want = pool->resident + RG_RUN + head - pool->limit;
		bool again = false;

		if (rg_evict_batch(pool, want, &again)) {
			bound_total(pool);	/* the store grew */
			continue;
		}
		if (again && tries++ < 20000) {
			/* An event is pending (a madvise, munmap or mremap of
			 * the program): read it, let its thread go on (it must
			 * run to end the kernel's mmap_changing, which may take
			 * long on a loaded machine: up to ~1 s), retry. */
			rg_read_msgs(pool);
			usleep(50);
			continue;
		}
		/* Nothing evictable now (pinned pages, swap full): over
		 * budget, seen in the peak; the handler tries again in
		 * RG_STALL_NS. */
		pool->stall_until = now_ns() + RG_STALL_NS;
		break;
	}
}
