/* SPDX-License-Identifier: MIT */
/*
 * The control page of a process's transfer buffer, after its RT_BATCH
 * slots: the move lock, which puts each of the agent's moves wholly before
 * or after each of the supervisor's reads of the uffd with the handling of
 * its events, and the slots of the batch in flight not to be moved
 * (docs/RUNTIME.md, "The move lock"). The supervisor never waits for the
 * lock (a program that holds it stalls only its own faults) and reads
 * nothing else here. Header-only: the shim depends on libc alone.
 */
#ifndef USWAP_RUNTIME_XFER_CTL_H
#define USWAP_RUNTIME_XFER_CTL_H

#include <linux/futex.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/proto.h"

enum {
	RT_CTL_FREE = 0,
	RT_CTL_AGENT = 1,	/* the agent is moving */
	RT_CTL_SUP = 2,		/* the supervisor's: it reads the uffd and handles the
				 * events, or the agent handed it over (want) */
};

struct rt_xfer_ctl {
	_Atomic uint32_t lock;		/* RT_CTL_* */
	_Atomic uint32_t want;		/* the supervisor asks: the agent hands the
					 * lock over after its move (RT_KICK) */
	_Atomic uint32_t waits;		/* the agent waits for the lock (futex) */
	uint32_t pad;
	_Atomic uint64_t cancel;	/* bit i: slot i of the batch in flight is not
					 * to be moved (unmapped, dropped, remapped) */
};

#define RT_XFER_PAGES	(RT_BATCH + 1)	/* slots, then the control page */
#define RT_XFER_BYTES	((uint64_t)RT_XFER_PAGES * RT_PAGE)

/* USWAP_DEBUG >= 2: the pattern of a transfer slot the agent did not
 * write (word k holds RT_XFER_CANARY ^ k). */
#define RT_XFER_CANARY	0x5a17c0de0ddba11ULL

/* The control page of the transfer buffer mapped at @xfer. */
static inline struct rt_xfer_ctl *rt_xfer_ctl(void *xfer)
{
	return (struct rt_xfer_ctl *)((char *)xfer + (uint64_t)RT_BATCH * RT_PAGE);
}

/* futex(2) on a word of the shared page (not FUTEX_PRIVATE: two processes). */
static inline void rt_ctl_futex(_Atomic uint32_t *w, int op, uint32_t val, long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	syscall(SYS_futex, (uint32_t *)w, op, val, op == FUTEX_WAIT ? &ts : NULL, NULL, 0);
}

/*
 * The supervisor takes the lock: free, or handed over by the agent (only
 * the supervisor sets RT_CTL_SUP). If the agent is moving, it asks (want)
 * and does not wait: the agent hands it over after its move, and kicks
 * (else an agent moving run after run would take it back each time).
 * Context: supervisor thread, not holding the lock. Return: true if taken.
 */
static inline bool rt_ctl_sup_trylock(struct rt_xfer_ctl *c)
{
	uint32_t v = RT_CTL_FREE;

	if (atomic_load(&c->lock) == RT_CTL_SUP ||
	    atomic_compare_exchange_strong(&c->lock, &v, RT_CTL_SUP))
		return true;
	atomic_store(&c->want, 1);
	v = RT_CTL_FREE;	/* let go between the two, before the agent saw want */
	if (atomic_compare_exchange_strong(&c->lock, &v, RT_CTL_SUP)) {
		atomic_store(&c->want, 0);	/* before the lock is let go again */
		return true;
	}
	return v == RT_CTL_SUP;		/* handed over meanwhile (want stays read) */
}

/* The supervisor lets the lock go, waking the agent if it waits.
 * Context: supervisor thread, the lock held. */
static inline void rt_ctl_sup_unlock(struct rt_xfer_ctl *c)
{
	atomic_store(&c->lock, RT_CTL_FREE);
	if (atomic_load(&c->waits))
		rt_ctl_futex(&c->lock, FUTEX_WAKE, 1, 0);
}

/* The agent takes the lock, waiting while the supervisor holds it (for one
 * read of the uffd and its events). Context: the agent thread. */
static inline void rt_ctl_agent_lock(struct rt_xfer_ctl *c)
{
	for (;;) {
		uint32_t v = RT_CTL_FREE;

		if (atomic_compare_exchange_strong(&c->lock, &v, RT_CTL_AGENT))
			return;
		atomic_store(&c->waits, 1);
		/* A lost wake-up, or a supervisor gone while holding it
		 * (its watchdog then kills us), costs 10 ms. */
		if (atomic_load(&c->lock) == RT_CTL_SUP)
			rt_ctl_futex(&c->lock, FUTEX_WAIT, RT_CTL_SUP, 10);
		atomic_store(&c->waits, 0);
	}
}

/* The agent lets the lock go: to the supervisor if it asked (want).
 * Context: the agent thread, the lock held. Return: true if handed over
 * (send RT_KICK). */
static inline bool rt_ctl_agent_unlock(struct rt_xfer_ctl *c)
{
	if (atomic_exchange(&c->want, 0)) {
		atomic_store(&c->lock, RT_CTL_SUP);
		return true;
	}
	atomic_store(&c->lock, RT_CTL_FREE);
	/* asked between the two: hand it over now, if it is still free */
	if (atomic_load(&c->want)) {
		uint32_t v = RT_CTL_FREE;

		if (atomic_compare_exchange_strong(&c->lock, &v, RT_CTL_SUP)) {
			atomic_store(&c->want, 0);
			return true;
		}
	}
	return false;
}

#endif
