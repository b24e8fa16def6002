/* SPDX-License-Identifier: MIT */
/*
 * The supervisor's counters, listed once. RT_STATS(X) calls
 * X(kind, name, json, line, text, desc) for each, in report order:
 *
 *   kind  COUNT: events counted; PEAK: a high-water mark; NSEC: time
 *         summed in ns, reported in ms; PG: the pager's (sup->tree.st);
 *         COLO: following the faulting thread's (sup->colo).
 *   name  the field of struct rt_stats (runtime.h), or of struct pg_stats.
 *   json  its member in the JSON object (`uswap run --json`, `uswap stat`).
 *   line  the --stats line it is printed on, or NONE: JSON only.
 *   text  its words on that line, a printf format of one %llu.
 *   desc  what it counts.
 *
 * runtime.h makes the struct fields, counters.c the JSON members and the
 * --stats lines; derived values are written by hand in counters.c.
 */
#ifndef USWAP_RUNTIME_COUNTERS_H
#define USWAP_RUNTIME_COUNTERS_H

/* The --stats lines; OVER, COLO and FORK only when a counter of theirs is not 0. */
enum rt_stat_line {
	RT_LINE_NONE,		/* JSON only */
	RT_LINE_MAIN,		/* pages, faults, evictions, events */
	RT_LINE_OVER,		/* pages kept over the budget */
	RT_LINE_WAIT,		/* why deferred faults waited */
	RT_LINE_POLL,		/* --poll-us */
	RT_LINE_COLO,		/* following the faulting thread */
	RT_LINE_FORK,		/* fork events */
};

/* A counter's value as reported, by kind; its field in struct rt_stats. */
#define RT_STAT_OUT_COUNT(sup, n)	((sup)->st.n)
#define RT_STAT_OUT_PEAK(sup, n)	((sup)->st.n)
#define RT_STAT_OUT_NSEC(sup, n)	((sup)->st.n / 1000000)
#define RT_STAT_OUT_PG(sup, n)		((sup)->tree.st.n)
#define RT_STAT_OUT_COLO(sup, n)	((sup)->colo.n)
#define RT_STAT_OUT_COLO_NSEC(sup, n)	((sup)->colo.n / 1000000)
#define RT_STAT_FIELD_COUNT(n)		uint64_t n;
#define RT_STAT_FIELD_PEAK(n)		uint64_t n;
#define RT_STAT_FIELD_NSEC(n)		uint64_t n;
#define RT_STAT_FIELD_PG(n)
#define RT_STAT_FIELD_COLO(n)
#define RT_STAT_FIELD_COLO_NSEC(n)

#define RT_STATS(X)								\
	X(PG, peak_resident, "peak_resident_pages", MAIN, "peak resident %llu",	\
	  "most pages resident in the tree at once")				\
	X(COUNT, sessions, "sessions", MAIN, "%llu process(es)",		\
	  "processes served (sessions made, forked children included)")	\
	X(COUNT, faults, "faults", MAIN, "faults %llu",				\
	  "page faults read from the uffds")					\
	X(PG, zero_fills, "zero_fills", MAIN, "zero-fill runs %llu",		\
	  "faults served with pages of zeros (first touches)")		\
	X(PG, zero_pages, "zero_pages", MAIN, "zero-filled pages %llu",	\
	  "pages of zeros those faults placed")				\
	X(PG, swapins, "swapins", MAIN, "swap-ins %llu",			\
	  "faults served from the mirror (swapped pages)")			\
	X(PG, prefetched, "prefetched", MAIN, "prefetched %llu",		\
	  "pages placed ahead of a swap-in fault")				\
	X(PG, evicted, "evicted", MAIN, "evicted %llu",			\
	  "pages moved out of the processes and stored")			\
	X(PG, evict_clean, "evict_clean", MAIN, "clean %llu",			\
	  "evicted pages whose kept copy held their bytes: nothing written")	\
	X(PG, evict_batches, "evict_batches", MAIN, "batches %llu",		\
	  "eviction batches sent to agents")				\
	X(PG, evict_busy, "evict_busy", MAIN, "busy %llu",			\
	  "pages of a batch the kernel would not move (EBUSY)")		\
	X(PG, evict_gone, "evict_gone", MAIN, "gone %llu",			\
	  "pages of a batch no longer there (ENOENT)")			\
	X(PG, evict_other, "evict_other", MAIN, "other %llu",		\
	  "pages of a batch not moved for another error (left unevictable)")			\
	X(COUNT, removes, "removes", MAIN, "events: remove %llu",		\
	  "REMOVE events (madvise)")						\
	X(COUNT, unmaps, "unmaps", MAIN, "unmap %llu",				\
	  "UNMAP events (munmap)")						\
	X(COUNT, remaps, "remaps", MAIN, "remap %llu",				\
	  "REMAP events (mremap)")						\
	X(COUNT, forks, "forks", MAIN, "forks %llu",				\
	  "forks followed (fork events, or the prefork path)")		\
	X(PG, poisoned, "poisoned", MAIN, "poisoned %llu",			\
	  "pages lost to a device read error, poisoned (SIGBUS)")		\
	X(PG, deferred, "deferred", MAIN, "deferred %llu",			\
	  "faults kept pending, served later")				\
	X(COUNT, over_budget, "over_budget", MAIN, "over budget %llu",		\
	  "faults served past budget + slack, and pages found there")			\
	X(COUNT, fork_events, "fork_events", FORK, "fork events %llu",		\
	  "FORK events read (children followed)")				\
	X(COUNT, fork_swapped, "fork_swapped", FORK, "%llu pages were out of a parent at fork",	\
	  "pages out of a parent at fork, inherited by the child")		\
	X(COUNT, fork_swap_dups, "fork_swap_dups", FORK,			\
	  "%llu swap entries shared (count 2 or more)",			\
	  "swap entries duplicated by the mirrors' forks")			\
	X(COUNT, fork_sessions_ended, "fork_sessions_ended", FORK, "%llu children ended",	\
	  "followed children whose mm went (exit, exec)")			\
	X(COUNT, fork_inflight, "fork_inflight", FORK, "%llu forks met a batch in flight",	\
	  "forks with a batch of the parent's in flight")			\
	X(PG, wait_budget, "wait_budget", WAIT, "the budget %llu",		\
	  "deferred faults: the budget was reached, waited for a batch")	\
	X(PG, wait_evicting, "wait_evicting", WAIT, "their page's batch %llu",	\
	  "deferred faults: their page was in the batch in flight")		\
	X(PG, wait_event, "wait_event", WAIT, "an event %llu",		\
	  "deferred faults: their copy met a pending event (EAGAIN)")	\
	X(PG, wait_copy, "wait_copy", WAIT, "their process's run copy %llu",	\
	  "deferred faults: read while their process's run was at the copy thread") \
	X(COUNT, reclaim_rounds, "reclaim_rounds", WAIT,			\
	  "reclaim rounds (high watermark crossed) %llu",			\
	  "times resident pages crossed the high watermark")		\
	X(COUNT, poll_spins, "poll_spins", POLL, "%llu polls",			\
	  "--poll-us: busy polls after a fault")				\
	X(COUNT, poll_hits, "poll_hits", POLL, "%llu found a message",		\
	  "--poll-us: polls that found a message")				\
	X(NSEC, poll_ns, "poll_ms", POLL, "%llu ms spent",			\
	  "--poll-us: time spent polling")					\
	X(COLO, binds, "colo_binds", COLO, "%llu binds",			\
	  "the serving thread bound to a faulting thread's CPU")		\
	X(COLO, wakes, "colo_wakes", COLO, "%llu wake-ups at SCHED_IDLE",	\
	  "wake-ups of a followed thread issued at SCHED_IDLE")		\
	X(COLO_NSEC, idle_ns, "colo_idle_ms", COLO, "%llu ms at SCHED_IDLE",	\
	  "time the serving thread spent at SCHED_IDLE while following")	\
	X(COLO, moved, "colo_moved", COLO, "%llu found on another CPU",	\
	  "times the followed thread was found on another CPU and followed there") \
	X(COLO, rescues, "colo_rescues", COLO, "%llu rescues",		\
	  "times the guard gave the serving thread its policy back")		\
	X(COUNT, colo_bursts, "colo_bursts", COLO, "%llu read in a row",	\
	  "reads of the followed process's uffd straight after a copy woke its thread") \
	X(COUNT, fork_owned, "fork_owned", NONE, "fork owned %llu",		\
	  "shared pages found one process's own")				\
	X(COUNT, child_faults, "child_faults", NONE, "child faults %llu",	\
	  "faults of forked sessions")					\
	X(COUNT, child_evicted, "child_evicted", NONE, "child evicted %llu",	\
	  "pages evicted from forked sessions")				\
	X(PG, evict_unshared, "evict_unshared", NONE, "unshared %llu",	\
	  "pages moved only after make_exclusive() (a copy or a reuse)")	\
	X(COUNT, shared_passed, "shared_passed", NONE, "shared passed %llu",	\
	  "shared pages given a second trip")				\
	X(COUNT, evict_named, "evict_named", NONE, "named shared %llu",	\
	  "pages a batch named shared, made exclusive before their move")	\
	X(PG, evict_cancelled, "evict_cancelled", NONE, "cancelled %llu",	\
	  "pages remapped while their batch was out")			\
	X(COUNT, copier_runs, "copier_runs", NONE, "runs copied aside %llu",	\
	  "swap-in runs the copy thread placed (two processes faulting)")	\
	X(COUNT, copier_rescues, "copier_rescues", NONE, "copies rescued %llu", \
	  "copies given the serving thread's policy: not over after 2 ms at SCHED_IDLE") \
	X(COUNT, lock_busy, "lock_busy", NONE, "lock busy %llu",		\
	  "uffd reads put off: the agent was moving")			\
	X(PG, dbg_zero_tracked, "dbg_zero_tracked", NONE, "zero-tracked %llu",	\
	  "USWAP_DEBUG >= 2: zero-fills of pages the states call resident")	\
	X(COUNT, dbg_xfer_zero, "dbg_xfer_zero", NONE, "xfer-zero %llu",	\
	  "USWAP_DEBUG >= 2: pages reported moved, transfer slot unwritten")	\
	X(PG, dbg_mirror_zero, "dbg_mirror_zero", NONE, "mirror-zero %llu",	\
	  "USWAP_DEBUG >= 2: mirror reads of zeros for pages stored non-zero")		\
	X(PG, dbg_resident_absent, "dbg_resident_absent", NONE, "resident absent %llu",	\
	  "USWAP_DEBUG >= 2: most resident pages pagemap showed absent at one look")	\
	X(COUNT, learnt_over, "learnt_over_budget", OVER,			\
	  "%llu pages found already filled (MAP_POPULATE or a mapping registered late)", \
	  "pages found present (pagemap) beyond budget + slack; also in over_budget") \
	X(COUNT, agent_over, "agent_over_budget", OVER,				\
	  "%llu pages to an agent's own faults while its batch was out",	\
	  "faults of a shim's agent served past budget + slack while its batch was out (it answers only after them); also in over_budget") \
	X(PG, peak_unevictable, "peak_unevictable_pages", OVER, "unevictable peak %llu pages",	\
	  "most pages the kernel would not move (mlock) at once")		\
	X(PEAK, peak_locked, "peak_locked_pages", OVER, "locked (mlock) peak %llu pages",	\
	  "most Locked: pages of the tree (smaps_rollup) seen over budget")	\
	X(COUNT, locked_kills, "locked_kills", OVER, "%llu process(es) killed for locked memory", \
	  "processes killed: their locked memory was over the budget")

#endif
