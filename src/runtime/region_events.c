/* SPDX-License-Identifier: MIT */
/*
 * The in-process mode: the pool's userfaultfd events (REMOVE, UNMAP, REMAP)
 * told to its pager, and the faults read with them, kept waiting for the
 * handler (docs/RUNTIME.md, "The in-process mode").
 */
#include "runtime/region_internal.h"

/* Cut @r to its first @npages pages (the rest was unmapped, its pages
 * dropped already). Context: pool->lock held. */
static void region_truncate(struct uswap_region_pool *pool, struct rg_region *r,
			    uint64_t npages)
{
	if (npages >= r->npages)
		return;
	rt_ranges_sub(&pool->pg.ranges, r->start + npages * PAGE, r->start + r->npages * PAGE);
	pool->st.region_bytes -= (r->npages - npages) * PAGE;
	r->npages = npages;
}

/* Free region @r, its pages and range out of the pager (in a forked
 * child only its record). Context: pool->lock held. */
void rg_region_free(struct uswap_region_pool *pool, struct rg_region *r)
{
	struct rg_region **pp;
	uint64_t end = r->start + r->npages * PAGE;

	for (pp = &pool->regions; *pp && *pp != r; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = r->next;
	if (!pool->child) {
		pager_drop(&pool->pg, r->start, end);
		rt_ranges_sub(&pool->pg.ranges, r->start, end);
	}
	pool->st.regions--;
	pool->st.region_bytes -= r->npages * PAGE;
	free(r);
}

/*
 * mremap() moved the region at @from to @to, shrunk to @len: its states
 * move along. A part of a region cannot be followed: abort.
 * Context: handler, pool->lock held.
 */
static void follow_remap(struct uswap_region_pool *pool, uint64_t from, uint64_t to,
			 uint64_t len)
{
	struct rg_region *r = region_of(pool, from);
	uint64_t keep = len / PAGE;

	if (!r)
		return;		/* not a region's (cannot happen: only they are registered) */
	if (r->start != from || keep > r->npages) {
		fprintf(stderr, "uswap: mremap() moved a part of a region (0x%llx, %llu bytes, "
			"of 0x%llx): regions are moved whole; aborting rather than lose its "
			"swapped pages\n", (unsigned long long)from, (unsigned long long)len,
			(unsigned long long)r->start);
		abort();
	}
	if (keep < r->npages) {
		pager_drop(&pool->pg, r->start + keep * PAGE, r->start + r->npages * PAGE);
		region_truncate(pool, r, keep);
	}
	pager_remap(&pool->pg, from, to, len);
	r->start = to;
	pool->st.remaps++;
}

/* Read the uffd: events handled now, faults deferred in the pager.
 * Context: handler, pool->lock held. */
void rg_read_msgs(struct uswap_region_pool *pool)
{
	struct uffd_msg msg[32];
	ssize_t n;

	while ((n = read(pool->uffd, msg, sizeof(msg))) > 0) {
		for (size_t i = 0; i < (size_t)n / sizeof(msg[0]); i++) {
			struct uffd_msg *m = &msg[i];
			uint64_t a = m->arg.remove.start, b = m->arg.remove.end;

			switch (m->event) {
			case UFFD_EVENT_PAGEFAULT:
				pool->st.faults++;
				a = m->arg.pagefault.address & ~(PAGE - 1);
				if (pager_defer(&pool->pg, a, now_ns(), PG_WAIT_EVENT))
					rt_uffd_wake(pool->uffd, a, PAGE);	/* it faults again */
				break;
			case UFFD_EVENT_REMOVE:
				pool->st.removes++;
				pager_drop(&pool->pg, a, b);
				break;
			case UFFD_EVENT_UNMAP: {
				struct rg_region *r, *nx;

				pool->st.unmaps++;
				pager_drop(&pool->pg, a, b);
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
			PAGER_CHECK(&pool->pg);
		}
	}
}
