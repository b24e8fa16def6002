/* SPDX-License-Identifier: MIT */
/*
 * The agent's policy: on which CPU it moves a batch out, how the batch is
 * laid out in the staging area, and whether it yields between runs. A
 * choice changes what a batch costs, never which pages move or with which
 * results. docs/RUNTIME.md, "The agent on the program's CPU", gives the
 * reasons and the numbers.
 */
#include <sched.h>

#include "runtime/proto.h"
#include "runtime/shim_internal.h"

#define SHIM_FLUSH_CEILING 33		/* x86's tlb_single_page_flush_ceiling */
#define SHIM_SPREAD_MIN	4		/* a batch this long is split to span the area */
#define SHIM_FOLLOW_FLUSHES 8		/* a batch's flushes worth a bound agent */

/* Written before the agent runs (the constructor, a child's fork handler),
 * then by the agent alone. */
static const uint32_t *lead_cpu;	/* rseq cpu_id of the thread followed, or NULL */
static int agent_cpu = -1;		/* the CPU the agent is bound to, or -1 */
static int agent_away = -1;		/* the CPU left out of its mask, or -1 */
static bool may_bind;			/* false: the agent keeps its mask */
static bool realtime;			/* the agent runs at SCHED_FIFO or SCHED_RR */
static cpu_set_t agent_mask;		/* the agent's affinity at its start */

/**
 * shim_policy_follow() - let the agent follow the CPU of the thread whose
 * rseq cpu_id is at @word, outside registered memory (0: of none).
 * Context: the constructor.
 */
void shim_policy_follow(uint64_t word)
{
	lead_cpu = (const uint32_t *)(uintptr_t)word;
}

/**
 * shim_policy_fork_child() - follow the forking thread if it was the lead
 * (only the lead's rseq word is known safe), else none.
 * Context: a child of fork(), in its atfork handler.
 */
void shim_policy_fork_child(void)
{
	if (lead_cpu && shim_cpu_id_word() != (uint64_t)(uintptr_t)lead_cpu)
		lead_cpu = NULL;
}

/**
 * shim_policy_agent_start() - note the agent's affinity. With no mask to
 * come back to, or under an inherited real-time policy (a real-time thread
 * on the lead's CPU would starve a bound agent), the agent never binds.
 * Context: the agent thread, at its start.
 */
void shim_policy_agent_start(void)
{
	int policy = sched_getscheduler(0);

	agent_cpu = -1;
	agent_away = -1;
	realtime = policy == SCHED_FIFO || policy == SCHED_RR;
	may_bind = !sched_getaffinity(0, sizeof(agent_mask), &agent_mask) &&
		   policy == SCHED_OTHER;
	if (!may_bind)
		lead_cpu = NULL;
}

/* Give the agent its initial mask back. Context: the agent thread. */
static void unbind(void)
{
	if ((agent_cpu >= 0 || agent_away >= 0) &&
	    !sched_setaffinity(0, sizeof(agent_mask), &agent_mask)) {
		agent_cpu = -1;
		agent_away = -1;
	}
}

/*
 * Keep the agent off @cpu from a batch on, asleep too, until a batch names
 * another CPU or none: the CPU of a thread the supervisor
 * follows (docs/RUNTIME.md, "Following the faulting thread"). An agent
 * runnable there makes the CPU busy at that thread's next wake-up, which
 * the scheduler then places on another CPU, and the serving thread chases
 * it. The moves then flush the program's CPU by IPI, which costs less.
 * Context: the agent thread, before a batch. Return: true if kept off.
 */
static bool keep_away(int cpu)
{
	cpu_set_t set = agent_mask;

	if (!may_bind || cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set))
		return false;
	if (cpu == agent_away)
		return true;
	CPU_CLR(cpu, &set);
	if (!CPU_COUNT(&set) || sched_setaffinity(0, sizeof(set), &set))
		return false;
	agent_cpu = -1;
	agent_away = cpu;
	return true;
}

/*
 * Bind the agent to the CPU its lead thread last ran on for a batch @m of
 * @n pages that costs many TLB flushes (there they are local, not IPIs to
 * the program's CPU); unbind it for one that costs few (long runs).
 * Context: the agent thread, before a batch. Failure changes nothing.
 */
static void follow_lead(const struct rt_evict *m, uint32_t n)
{
	uint32_t flushes = 0, run = 1, cpu;
	cpu_set_t set;

	if (!lead_cpu)
		return;
	for (uint32_t i = 1; i <= n; i++) {
		if (i < n && m->addr[i] == m->addr[i - 1] + RT_PAGE) {
			run++;
			continue;
		}
		flushes += run <= SHIM_FLUSH_CEILING ? run : 1;
		run = 1;
	}
	if (flushes < SHIM_FOLLOW_FLUSHES) {
		unbind();
		return;
	}
	cpu = __atomic_load_n(lead_cpu, __ATOMIC_RELAXED);
	if (cpu >= CPU_SETSIZE || (int)cpu == agent_cpu || !CPU_ISSET(cpu, &agent_mask))
		return;	/* RSEQ_CPU_ID_UNINITIALIZED / REGISTRATION_FAILED are huge */
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (!sched_setaffinity(0, sizeof(set), &set)) {
		agent_cpu = (int)cpu;
		agent_away = -1;
	}
}

/**
 * shim_policy_plan() - bind or unbind the agent for a batch @m of @n pages
 * (off the CPU @m names, else on its lead's for many flushes) and fill
 * @plan. A batch of SHIM_SPREAD_MIN to SHIM_FLUSH_CEILING pages
 * splits before its last run (one run: after its first page): spanning the
 * staging area, it is emptied with one full flush instead of @n. Bound, or
 * at a real-time policy while two processes fault in turns, the agent
 * yields after each run to a program thread woken meanwhile.
 * Context: the agent thread, before a batch.
 */
void shim_policy_plan(const struct rt_evict *m, uint32_t n, struct shim_plan *plan)
{
	uint32_t split = n;
	int away = m->away;

	/* The followed thread is the lead: its CPU now, not the one the
	 * supervisor last read (where the serving thread is about to follow) */
	if (away >= 0 && (m->flags & RT_EVICT_AWAY_LEAD) && lead_cpu)
		away = (int)__atomic_load_n(lead_cpu, __ATOMIC_RELAXED);
	if (!keep_away(away)) {
		if (agent_away >= 0)
			unbind();	/* following is over, or moved off our mask */
		follow_lead(m, n);
	}
	if (n >= SHIM_SPREAD_MIN && n <= SHIM_FLUSH_CEILING) {
		split = n - 1;
		while (split > 1 && m->addr[split - 1] + RT_PAGE == m->addr[split])
			split--;
	}
	plan->split = split;
	/* Bound, or real-time while two processes fault: a real-time agent
	 * holds its CPU for the whole batch, and a program thread woken
	 * there waits for it to end (docs/RUNTIME.md, "The agent on the
	 * program's CPU"). */
	plan->yield = agent_cpu >= 0 || (realtime && (m->flags & RT_EVICT_TURNS));
}
