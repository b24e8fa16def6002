/* SPDX-License-Identifier: MIT */
/*
 * Eviction ahead of demand over the tree (docs/RUNTIME.md, "Eviction"):
 * the watermarks under the budget, which process gives the next batch,
 * and the batch sent to its agent (its pages picked by the pager).
 * Context of everything here: the supervisor's one thread.
 */
#include <stdatomic.h>
#include <sys/socket.h>

#include "runtime/runtime.h"
#include "runtime/xfer_ctl.h"

#define PAGE	RT_PAGE

#if USWAP_DEBUG >= 2
/* Fill slot @i of the transfer buffer with the canary session.c looks
 * for in a page said moved (xfer-zero). */
static void dbg_canary(struct rt_session *s, uint32_t i)
{
	uint64_t *w = (uint64_t *)(void *)(s->xfer + (uint64_t)i * PAGE);

	for (size_t k = 0; k < PAGE / 8; k++)
		w[k] = RT_XFER_CANARY ^ k;
}
#else
static inline void dbg_canary(struct rt_session *s, uint32_t i) { (void)s; (void)i; }
#endif

/**
 * rt_session_evict() - send one batch of up to @want pages (<= RT_BATCH)
 * if none is out, the agent is up, no fork is prepared and no inherited
 * batch is out. Context: supervisor thread.
 * Return: true if a batch was sent.
 */
bool rt_session_evict(struct rt_session *s, uint64_t want)
{
	struct rt_evict m = { .type = RT_EVICT, .away = -1 };
	uint32_t named;

	if (s->batch != RT_B_NONE || s->phase != RT_PH_RUN || s->dead || !s->agent_up ||
	    s->pg.inherited)
		return false;
	m.n = pager_pick(&s->pg, (uint32_t)(want > RT_BATCH ? RT_BATCH : want), m.addr);
	if (!m.n)
		return false;
	if (s->ctl)	/* the agent reads it only while it serves a batch: none is out */
		atomic_store(&s->ctl->cancel, 0);
	rt_colo_normal(&s->sup->colo);	/* the agent is woken: not onto our CPU */
	m.away = rt_colo_cpu(&s->sup->colo);
	if (m.away >= 0 && s->sup->colo.pid == s->pid && s->sup->colo.ftid == s->pid)
		m.flags |= RT_EVICT_AWAY_LEAD;
	if (rt_two_faulting(s->sup))
		m.flags |= RT_EVICT_TURNS;
	for (uint32_t i = 0; i < m.n && s->xfer; i++)
		dbg_canary(s, i);
	named = rt_fork_hint(s, &m);
	if (send(s->sock, &m, sizeof(m), MSG_NOSIGNAL | MSG_DONTWAIT) != sizeof(m)) {
		pager_unpick(&s->pg);
		return false;
	}
	s->sup->st.evict_named += named;	/* counted once sent */
	s->batch = RT_B_OUT;
	s->agent_over = 0;
	s->sup->inflight++;
	return true;
}

/**
 * rt_sup_swap_full() - whether the program tree's swap limit (--swap-max,
 * the memory.swap.max of the mirrors' group) leaves no room for another
 * batch: the group's slots, its pages in the mirrors' memory (each will
 * take a slot; a page in the swap cache counts twice, which errs on the
 * safe side) and the pages of batches out, within a batch of the limit.
 * Then nothing more is evicted: the pages stay in the program, whose
 * resident set grows past --memory, as a cgroup at memory.swap.max keeps
 * its pages in memory. No fault is refused, so nothing waits.
 * Context: supervisor thread. Return: true at the limit.
 */
bool rt_sup_swap_full(struct rt_sup *sup)
{
	struct uswap_memcg_stats st;
	uint64_t used;

	if (!sup->memcg)
		return false;
	uswap_memcg_get_stats(sup->memcg, &st);
	sup->swap_pages = st.swap_current;
	sup->peak_swap_pages = st.swap_peak;
	used = st.swap_current + st.memory_current + sup->tree.inflight_pages;
	if (used + RT_BATCH <= st.swap_max)
		return false;
	sup->swap_full++;
	return true;
}

/* The gap between the watermarks, in pages: a quarter of a batch, or an
 * eighth of a small budget (short batches: docs/BENCHMARKS.md). */
static uint64_t wmark_gap(const struct rt_sup *sup)
{
	uint64_t gap = sup->tree.budget / 8;

	return gap > RT_BATCH / 4 ? RT_BATCH / 4 : gap;
}

/**
 * rt_sup_reclaim() - evict ahead of demand, as kswapd: once the resident
 * pages less those in flight cross budget - gap, send batches until they
 * are under budget - 2 gap. A fault waits only at budget + slack. At the
 * --swap-max limit nothing is sent (rt_sup_swap_full()): faults are then
 * served over the budget.
 * Context: supervisor thread (balance(), and serve_fault() at the line).
 * Return: true if a batch was sent.
 */
bool rt_sup_reclaim(struct rt_sup *sup)
{
	uint64_t want, net, gap, high, low;
	bool sent = true, any = false;

	if (rt_sup_swap_full(sup))
		return false;

	gap = wmark_gap(sup);
	high = sup->tree.budget - gap;
	low = sup->tree.budget - 2 * gap;
	while (sent) {
		net = sup->tree.resident > sup->tree.inflight_pages ? sup->tree.resident - sup->tree.inflight_pages : 0;
		if (!sup->reclaiming && net > high) {
			sup->reclaiming = true;
			sup->st.reclaim_rounds++;
		}
		if (sup->reclaiming && net <= low)
			sup->reclaiming = false;
		if (!sup->reclaiming)
			break;
		/* at least a gap's worth: no round trip for one page */
		want = net - low > gap ? net - low : gap;
		sent = false;
		/* the most resident first, as one LRU over the tree would */
		sup->balance_mark++;
		while (want) {
			struct rt_session *best = NULL;

			for (struct rt_session *s = sup->sessions; s; s = s->next)
				if (s->balance_mark != sup->balance_mark &&
				    (!best || s->pg.nr_resident > best->pg.nr_resident))
					best = s;
			if (!best)
				break;
			best->balance_mark = sup->balance_mark;
			if (rt_session_evict(best, want)) {
				want = want > best->pg.batch_n ? want - best->pg.batch_n : 0;
				sent = true;
				any = true;
			}
		}
	}
	return any;
}
