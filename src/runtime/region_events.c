/* SPDX-License-Identifier: MIT */
/*
 * The in-process mode: the pool's userfaultfd events (REMOVE, UNMAP, REMAP)
 * and the faults read with them (docs/RUNTIME.md, "The in-process mode").
 */
#include "runtime/region_internal.h"


/*
 * The program dropped [@a, @b) (MADV_DONTNEED, munmap): every page there
 * reads zeros now; swapped copies are freed. A MOVING page becomes ABSENT:
 * the batch then discards its bytes.
 * Context: handler, pool->lock held.
 */
static void drop_range(struct uswap_region_pool *pool, uint64_t a, uint64_t b)
{
	for (struct rg_region *r = pool->regions; r; r = r->next) {
		uint64_t end = r->start + r->npages * PAGE;
		uint64_t lo = a > r->start ? a : r->start, hi = b < end ? b : end;

		for (uint64_t p = lo; p < hi; p += PAGE) {
			uint64_t i = (p - r->start) / PAGE;

			if (r->state[i] == RG_SWAPPED) {
				uswap_mm_madvise_dontneed(pool->mm, r->mirror + i * PAGE, PAGE);
				pool->swapped--;
			} else if (r->state[i] != RG_ABSENT) {
				if (r->state[i] == RG_RESIDENT)
					lru_out(pool, p);
				pool->resident--;
			}
			r->state[i] = RG_ABSENT;
		}
	}
}

/* Cut @r to its first @npages pages (the rest was unmapped). Context:
 * pool->lock held. */
static void region_truncate(struct uswap_region_pool *pool, struct rg_region *r,
			    uint64_t npages)
{
	uint64_t end = r->start + r->npages * PAGE;

	if (npages >= r->npages)
		return;
	drop_range(pool, r->start + npages * PAGE, end);
	pool->st.region_bytes -= (r->npages - npages) * PAGE;
	r->npages = npages;
}

/* Free a region's bookkeeping and its mirror. Context: pool->lock held. */
void rg_region_free(struct uswap_region_pool *pool, struct rg_region *r)
{
	struct rg_region **pp;

	for (pp = &pool->regions; *pp && *pp != r; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = r->next;
	for (uint64_t i = 0; i < r->npages; i++) {
		if (r->state[i] == RG_SWAPPED) {
			pool->swapped--;
		} else if (r->state[i] != RG_ABSENT) {
			if (r->state[i] == RG_RESIDENT && !pool->child)
				lru_out(pool, r->start + i * PAGE);
			pool->resident--;
		}
	}
	if (!pool->child)
		uswap_mm_munmap(pool->mm, r->mirror);
	pool->st.regions--;
	pool->st.region_bytes -= r->npages * PAGE;
	free(r->state);
	free(r->shadow);
	free(r);
}

static void queue_fault(struct uswap_region_pool *pool, uint64_t addr)
{
	if (pool->nr_pending == pool->cap_pending) {
		size_t ncap = pool->cap_pending ? pool->cap_pending * 2 : 64;
		struct rg_pending *n = realloc(pool->pending, ncap * sizeof(*n));

		if (!n) {	/* the thread faults again when woken */
			rt_uffd_wake(pool->uffd, addr, PAGE);
			return;
		}
		pool->pending = n;
		pool->cap_pending = ncap;
	}
	pool->pending[pool->nr_pending++] = (struct rg_pending){ addr, now_ns() };
}

/*
 * mremap() moved the region at @from to @to ([@from, @from + @len) was
 * its whole, after any shrinking): its resident pages are keyed anew on
 * the lists, with their list and flags; the mirror keeps the offsets.
 * A move of a part of a region cannot be followed (its swapped pages
 * would have to leave the region's mirror): the program is aborted.
 * Context: handler, pool->lock held.
 */
static void follow_remap(struct uswap_region_pool *pool, uint64_t from, uint64_t to,
			 uint64_t len)
{
	struct rg_region *r = region_of(pool, from);
	uint64_t keep = len / PAGE, v;

	if (!r)
		return;		/* not a region's (cannot happen: only they are registered) */
	if (r->start != from || keep > r->npages) {
		fprintf(stderr, "uswap: mremap() moved a part of a region (0x%llx, %llu bytes, "
			"of 0x%llx): regions are moved whole; aborting rather than lose its "
			"swapped pages\n", (unsigned long long)from, (unsigned long long)len,
			(unsigned long long)r->start);
		abort();
	}
	region_truncate(pool, r, keep);
	for (uint64_t i = 0; i < r->npages; i++) {
		uint64_t a = r->start + i * PAGE;

		if (r->state[i] != RG_RESIDENT || !pt_get(&pool->tab, a, &v))
			continue;
		rt_lru_forget(&pool->lru, v);
		pt_del(&pool->tab, a);
		rt_lru_add_flags(&pool->lru, &pool->tab, to + i * PAGE, LRU_ACTIVE(v),
				 v & (LRU_WRITTEN | LRU_SEEN | LRU_AHEAD));
	}
	r->start = to;
	pool->ra_next = 0;
	pool->st.remaps++;
}

/*
 * Read what the uffd has: events are handled now, faults queued (served
 * by serve_pending()). Context: handler, pool->lock held.
 */
void rg_read_msgs(struct uswap_region_pool *pool)
{
	struct uffd_msg msg[32];
	ssize_t n;

	while ((n = read(pool->uffd, msg, sizeof(msg))) > 0) {
		for (size_t i = 0; i < (size_t)n / sizeof(msg[0]); i++) {
			struct uffd_msg *m = &msg[i];

			switch (m->event) {
			case UFFD_EVENT_PAGEFAULT:
				pool->st.faults++;
				queue_fault(pool, m->arg.pagefault.address & ~(PAGE - 1));
				break;
			case UFFD_EVENT_REMOVE:
				pool->st.removes++;
				drop_range(pool, m->arg.remove.start, m->arg.remove.end);
				break;
			case UFFD_EVENT_UNMAP: {
				uint64_t a = m->arg.remove.start, b = m->arg.remove.end;
				struct rg_region *r, *nx;

				pool->st.unmaps++;
				drop_range(pool, a, b);
				for (r = pool->regions; r; r = nx) {
					uint64_t end = r->start + r->npages * PAGE;

					nx = r->next;
					if (a <= r->start && end <= b)
						rg_region_free(pool, r);
					else if (a > r->start && a < end && b >= end)
						region_truncate(pool, r, (a - r->start) / PAGE);
				}
				break;
			}
			case UFFD_EVENT_REMAP:
				follow_remap(pool, m->arg.remap.from, m->arg.remap.to,
					     m->arg.remap.len);
				break;
			default:
				break;
			}
		}
	}
}
