/* SPDX-License-Identifier: MIT */
/*
 * The agent's policy: on which CPU the agent moves a batch out, how the
 * batch is laid out in the staging area, and whether the agent yields
 * between runs. Each choice changes how fast a batch goes and what it
 * costs the program, never which pages move or with which results: the
 * mechanism (shim_agent.c) asks for a plan before each batch
 * (shim_policy_plan()) and follows it. docs/RUNTIME.md, "The agent on the
 * program's CPU"; docs/BENCHMARKS.md for the numbers.
 */
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/proto.h"
#include "runtime/shim_internal.h"

#define SHIM_FLUSH_CEILING 33		/* x86's tlb_single_page_flush_ceiling */
#define SHIM_SPREAD_MIN	4		/* a batch this long is split to span the area */
#define SHIM_FOLLOW_FLUSHES 8		/* a batch's flushes worth a bound agent */

/* The rseq cpu_id of the thread the agent follows, or NULL: set by the
 * constructor (shim_policy_follow()) and the child's fork handler
 * (shim_policy_fork_child()) before the agent runs, cleared by the agent
 * at its start when it must never bind; read by the agent. */
static const uint32_t *lead_cpu;
/* The CPU the agent is bound to, or -1: the agent's (its start, each
 * plan); a child's fork handler resets it before its agent runs. */
static int agent_cpu = -1;
/* The agent's own affinity as it started: the agent's alone. */
static cpu_set_t agent_mask;

/**
 * shim_policy_follow() - the agent may follow the CPU of the thread whose
 * rseq cpu_id is at @word (shim_snapshot() found it outside registered
 * memory); 0: of no thread.
 * Context: the constructor, before the agent runs.
 */
void shim_policy_follow(uint64_t word)
{
	lead_cpu = (const uint32_t *)(uintptr_t)word;
}

/**
 * shim_policy_fork_child() - the child's only thread is the one that
 * forked: the agent follows it if it was the lead (its TCB is then known
 * safe), else no one.
 * Context: the child's only thread, in its pthread_atfork handler.
 */
void shim_policy_fork_child(void)
{
	uint64_t mine = shim_cpu_id_word();

	if (lead_cpu && mine != (uint64_t)(uintptr_t)lead_cpu)
		lead_cpu = NULL;
	agent_cpu = -1;
}

/**
 * shim_policy_agent_start() - note the agent's affinity. No mask to come
 * back to, or a real-time policy (inherited from the program): never
 * bind. A real-time thread of the program (or any other) on the lead's
 * CPU runs until it blocks, and an agent bound there waits for it while
 * the program's faults wait for the agent: with `chrt -f 1` on redis and
 * its clients, a GET pass fell from 11,000 to 1,500 requests a second in
 * 1 run of 4.
 * Context: the agent thread, at its start.
 */
void shim_policy_agent_start(void)
{
	agent_cpu = -1;
	if (sched_getaffinity(0, sizeof(agent_mask), &agent_mask) ||
	    sched_getscheduler(0) != SCHED_OTHER)
		lead_cpu = NULL;
}

/*
 * Bind the agent to the CPU its lead thread (the main thread, or in a
 * forked child the thread that forked, when it is the same) last ran on,
 * for a batch @m of @n pages that costs many TLB flushes; unbind it for
 * one that costs few.
 * Each page a UFFDIO_MOVE takes out is flushed from the TLB of every CPU
 * that has the process's address space loaded: while the program runs on
 * the other CPU, that is an IPI per page of a short run, and on this PVM
 * guest each costs the interrupted thread ~14 us (docs/BENCHMARKS.md,
 * "the agent on the program's CPU"). On the program's own CPU the agent
 * runs when the program waits or is preempted, and the flush is local.
 * Context: the agent thread, before a batch. Failure changes nothing.
 */
static void follow_lead(const struct rt_evict *m, uint32_t n)
{
	uint32_t flushes = 0, run = 1;
	cpu_set_t set;
	uint32_t cpu;

	if (!lead_cpu)
		return;
	/* x86 flushes a run of up to 33 pages page by page, a longer one
	 * at once (tlb_single_page_flush_ceiling): a batch of long runs
	 * (a sequential fill) costs few flushes, and the agent is better
	 * on a CPU of its own, where it does not take the program's time. */
	for (uint32_t i = 1; i <= n; i++) {
		if (i < n && m->addr[i] == m->addr[i - 1] + RT_PAGE) {
			run++;
			continue;
		}
		flushes += run <= SHIM_FLUSH_CEILING ? run : 1;
		run = 1;
	}
	if (flushes < SHIM_FOLLOW_FLUSHES) {
		if (agent_cpu >= 0 && !sched_setaffinity(0, sizeof(agent_mask), &agent_mask))
			agent_cpu = -1;
		return;
	}
	cpu = __atomic_load_n(lead_cpu, __ATOMIC_RELAXED);
	if (cpu >= CPU_SETSIZE || (int)cpu == agent_cpu || !CPU_ISSET(cpu, &agent_mask))
		return;	/* RSEQ_CPU_ID_UNINITIALIZED / REGISTRATION_FAILED are huge */
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (!sched_setaffinity(0, sizeof(set), &set))
		agent_cpu = (int)cpu;
}

/**
 * shim_policy_plan() - the plan for a batch @m of @n pages: the agent
 * bound to its lead's CPU or not (follow_lead()), and where the batch
 * splits (@plan->split: the last run, or all but the first page of a
 * single run, goes to the end of the area: one more flush on the
 * program's side when the batch is one run, one flush instead of @n when
 * emptying it). Bound to the program's CPU, the agent yields after each
 * run (@plan->yield): a thread of the program woken meanwhile (its fault
 * served) runs first, at any policy.
 * Context: the agent thread, before a batch.
 */
void shim_policy_plan(const struct rt_evict *m, uint32_t n, struct shim_plan *plan)
{
	uint32_t split = n;

	follow_lead(m, n);
	if (n >= SHIM_SPREAD_MIN && n <= SHIM_FLUSH_CEILING) {
		split = n - 1;
		while (split > 1 && m->addr[split - 1] + RT_PAGE == m->addr[split])
			split--;
	}
	plan->split = split;
	plan->yield = agent_cpu >= 0;
}
