/* SPDX-License-Identifier: MIT */
/*
 * The in-process mode: eviction by UFFDIO_MOVE into the staging area, the
 * written bits, the resident + compressed bound (docs/RUNTIME.md).
 */
#include "runtime/region_internal.h"

/* Register [@start, @start + @len) for MISSING faults, and WP where the
 * pool has written bits (both sides of UFFDIO_MOVE alike). Return: 0, -errno. */
int rg_register(struct uswap_region_pool *pool, uint64_t start, uint64_t len)
{
	struct uffdio_register r = {
		.range = { .start = start, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING | (pool->pg.wp ? UFFDIO_REGISTER_MODE_WP : 0),
	};

	return ioctl(pool->uffd, UFFDIO_REGISTER, &r) ? -errno : 0;
}

/* Empty the staging area: unregistered first, so that no REMOVE event
 * (which this thread would have to read itself) is raised. */
static void staging_clear(struct uswap_region_pool *pool)
{
	uint64_t s = (uint64_t)(uintptr_t)pool->staging;

	rt_uffd_unregister(pool->uffd, s, PG_BATCH * PAGE);
	madvise(pool->staging, PG_BATCH * PAGE, MADV_DONTNEED);
	if (rg_register(pool, s, PG_BATCH * PAGE)) {
		fprintf(stderr, "uswap: cannot register a region pool's staging area again\n");
		abort();
	}
}

/*
 * Read the compressed bytes of the pool's own device and set the resident
 * budget the total bound leaves (pager's too): limit = min(budget, total -
 * compressed pages), at least min(PG_TOTAL_FLOOR, budget); without a
 * device, the budget. Context: pool->lock held.
 */
void rg_bound_total(struct uswap_region_pool *pool)
{
	struct uswap_swap_stat ss;
	uint64_t room, floor;

	pool->limit = pool->budget;
	pool->tree.budget = pool->limit;
	if (pool->swap_type < 0 || uswap_swap_stat((unsigned int)pool->swap_type, &ss))
		return;
	pool->st.compressed_bytes = ss.compressed_bytes;
	if (ss.compressed_bytes > pool->st.peak_compressed_bytes)
		pool->st.peak_compressed_bytes = ss.compressed_bytes;
	pool->cp_pages = (ss.compressed_bytes + PAGE - 1) / PAGE;
	peak_total(pool);
	if (!pool->total)
		return;
	floor = PG_TOTAL_FLOOR < pool->budget ? PG_TOTAL_FLOOR : pool->budget;
	room = pool->total > pool->cp_pages ? pool->total - pool->cp_pages : 0;
	if (room < floor)
		room = floor;
	if (room < pool->limit)
		pool->limit = room;
	pool->tree.budget = pool->limit;
}

/* Put the moved page of slot @slot, its bytes not stored, back where it
 * is now, and settle the slot. Context: handler, pool->lock held. */
static void evict_undo(struct uswap_region_pool *pool, uint32_t slot, const char *bytes)
{
	for (;;) {
		uint64_t a = pool->pg.batch_addr[slot], v, done;
		int err;

		if (!pager_get(&pool->pg, a, &v) || PT_STATE(v) != PS_EVICTING ||
		    PT_IDX(v) != slot)
			break;		/* dropped meanwhile: zeros, as asked */
		err = rt_uffd_copy(pool->uffd, a, bytes, PAGE, &done);
		if (!err || err == -EEXIST || (err != -EAGAIN && done == 0))
			break;
		rg_read_msgs(pool);	/* EAGAIN: an event is pending */
		usleep(20);
	}
	pager_settle(&pool->pg, slot, -EBUSY, NULL);
}

/* A batch's slot and where its page goes in the staging area. */
struct rg_cand {
	uint64_t addr;
	uint32_t slot;
};

static int cand_cmp(const void *a, const void *b)
{
	const struct rg_cand *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * Move up to @want picked pages out, in runs into the staging area, and
 * settle each slot. A page shared with a forked child (EBUSY) is unshared
 * once with MADV_POPULATE_WRITE and moved then. *@again: a pending event
 * stopped it. Return: the pages evicted. Context: handler, pool->lock held.
 */
uint64_t rg_evict_batch(struct uswap_region_pool *pool, uint64_t want, bool *again)
{
	struct pager *pg = &pool->pg;
	struct rg_cand c[PG_BATCH];
	uint64_t addr[PG_BATCH], before = pool->tree.st.evicted;
	int status[PG_BATCH];
	bool unshared[PG_BATCH] = { false }, any = false;
	uint32_t n = pager_pick(pg, (uint32_t)(want > PG_BATCH ? PG_BATCH : want), addr);

	if (!n)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		c[i] = (struct rg_cand){ addr[i], i };
		status[i] = -EBUSY;
	}
	/* page k of the sorted batch goes to staging page k */
	qsort(c, n, sizeof(c[0]), cand_cmp);
	for (uint32_t s = 0; s < n;) {
		uint32_t k = 1;
		uint64_t done;
		int err;

		while (s + k < n && c[s + k].addr == c[s].addr + (uint64_t)k * PAGE)
			k++;
		err = rt_uffd_move(pool->uffd, (uint64_t)(uintptr_t)pool->staging + s * PAGE,
				   c[s].addr, (uint64_t)k * PAGE, 0, &done);
		done /= PAGE;
		for (uint64_t j = 0; j < done; j++)
			status[c[s + j].slot] = 0;
		any |= done != 0;
		if (!err) {
			s += k;
			continue;
		}
		if (err == -EAGAIN && done) {
			s += (uint32_t)done;	/* a partial move: the rest again, for its real error */
			continue;
		}
		if (err == -EAGAIN) {
			*again = true;
			break;		/* an event is pending: the rest stays */
		}
		s += (uint32_t)done;
		if (err == -EBUSY && !unshared[s] &&
		    !madvise((void *)(uintptr_t)c[s].addr, (k - done) * PAGE, MADV_POPULATE_WRITE)) {
			/* shared after a fork: the rest of the run unshared */
			for (uint32_t j = s; j < s + k - done; j++)
				unshared[j] = true;
			pool->st.cow_unshared += k - done;
			continue;
		}
		if (err == -ENOENT)	/* not present: dropped without an event seen */
			status[c[s].slot] = -ENOENT;
		s++;
	}
	for (uint32_t s = 0; s < n; s++) {
		const char *bytes = pool->staging + (uint64_t)s * PAGE;
		uint32_t slot = c[s].slot;

		if (pager_settle(pg, slot, status[slot], bytes) == -ENOSPC) {
			pool->st.evict_failed++;
			evict_undo(pool, slot, bytes);
		}
	}
	pager_batch_end(pg);
	PAGER_CHECK(pg);
	if (any)
		staging_clear(pool);
	return pool->tree.st.evicted - before;
}

/* Evict until a zero run fits under the budget (with headroom), unless a fork
 * is being prepared. Context: handler, pool->lock held. */
void rg_make_room(struct uswap_region_pool *pool)
{
	uint64_t head;
	int tries = 0;

	rg_bound_total(pool);
	head = pool->limit / 4 < RG_HEADROOM ? pool->limit / 4 : RG_HEADROOM;
	if (pool->stall_until && now_ns() < pool->stall_until)
		return;		/* the last batch moved nothing */
	pool->stall_until = 0;
	while (!pool->prefork && pool->tree.resident + PG_ZERO_RUN > pool->limit) {
		uint64_t want = pool->tree.resident + PG_ZERO_RUN + head - pool->limit;
		bool again = false;

		if (rg_evict_batch(pool, want, &again)) {
			rg_bound_total(pool);	/* the store grew */
			continue;
		}
		if (again && tries++ < 20000) {
			/* an event is pending: read it, let its thread end
			 * mmap_changing, retry */
			rg_read_msgs(pool);
			usleep(50);
			continue;
		}
		/* nothing evictable now: over budget, again in RG_STALL_NS */
		pool->stall_until = now_ns() + RG_STALL_NS;
		break;
	}
}
