/* SPDX-License-Identifier: MIT */
/*
 * The agent's mechanism: the thread that moves the pages the supervisor
 * asks for out of the program's memory into the staging area (UFFDIO_MOVE
 * under the move lock, around the slots the supervisor cancelled, pages
 * shared after a fork made exclusive first), copies them into the
 * transfer buffer, empties the staging area and answers; between batches
 * it rescans the maps when they change. How a batch is laid out and on
 * which CPU it runs is the policy's (shim_policy.c). docs/RUNTIME.md,
 * "The move lock".
 */
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/proto.h"
#include "runtime/shim_internal.h"
#include "runtime/uffd_ops.h"
#include "runtime/xfer_ctl.h"

#define SHIM_SCAN_MS	10	/* the agent's rescans, when nothing changed */

/* Whether the staging area is registered with the process's uffd now:
 * set by shim_staging_register() at the session's start (before the agent
 * runs), then the agent's alone (evict(), empty_area()); a forked child's
 * is its parent's, as is its registration. */
static bool staging_on = true;

/**
 * shim_staging_register() - register the staging area with the process's
 * uffd, for the session's start.
 * Context: the session's start, before the agent runs.
 * Return: 0, or -errno (errno set).
 */
int shim_staging_register(void)
{
	int err = rt_uffd_register(shim.uffd, (uint64_t)shim.staging, RT_BATCH * RT_PAGE);

	if (!err)
		staging_on = true;
	return err;
}

/*
 * Where page @k of a batch of @n goes in the staging area; pages from
 * @split on go to the end of the area (the policy's plan, shim_policy.c:
 * a batch split so that it spans more slots than x86 flushes page by
 * page, and the area is emptied with one TLB flush).
 * Context: the agent thread. Return: the slot's address.
 */
static char *slot(uint32_t k, uint32_t n, uint32_t split)
{
	return shim.staging + (uint64_t)(k < split ? k : k + (RT_BATCH - n)) * RT_PAGE;
}

/*
 * Move pages [i, i + run) of @m (contiguous addresses, on one side of
 * @split) into their staging slots (slot()) in one UFFDIO_MOVE (one TLB
 * flush for the run, not one per page); evict() copies them into the
 * transfer buffer once the lock is let go. The move goes through the
 * process's own uffd (the staging area is registered with it), which
 * refuses it with EAGAIN while any of its events (UNMAP, REMOVE, REMAP,
 * FORK) is unread: that is what makes a move that succeeds come before
 * the change the event announces (xfer_ctl.h). EAGAIN is not retried here: the caller holds the move
 * lock, and the supervisor reads the event only once it is let go.
 * Context: the agent thread, the move lock held.
 * Return: the number of pages moved from the start of the run; *@err the
 * error that stopped it.
 */
static uint32_t move_run(struct rt_evict *m, uint32_t i, uint32_t run, uint32_t n,
			 uint32_t split, int *err)
{
	uint64_t bytes;
	uint32_t done;

	*err = rt_uffd_move(shim.uffd, (uint64_t)slot(i, n, split), m->addr[i],
			    (uint64_t)run * RT_PAGE, 0, &bytes);
	done = (uint32_t)(bytes / RT_PAGE);
	for (uint32_t k = i; k < i + done; k++)
		m->status[k] = 0;
	return done;
}

/*
 * Make the page at @addr anon-exclusive again with a write that
 * changes nothing, so that UFFDIO_MOVE takes it. After a fork every page
 * present in both processes loses PageAnonExclusive, and move_pages_pte()
 * refuses a page without it (EBUSY) even once the other process has
 * exited; only a write fault gives it back: do_wp_page() reuses the page
 * when wp_can_reuse_anon_folio() finds it is no longer shared (a minor
 * fault, no copy) or, while the other process still maps it, copies it
 * (a new exclusive page; the old one stays the other's). The write is
 * FUTEX_WAKE_OP's atomic add of 0 done by the kernel on our behalf: a
 * concurrent write of the program is never lost, and a page dropped or
 * unmapped meanwhile gives EFAULT (fixup_user_fault() without
 * FAULT_FLAG_ALLOW_RETRY: handle_userfault() does not wait) instead of a
 * MISSING fault that would wait for this very batch, or a SIGSEGV.
 * Context: the agent thread. Return: 0, or -errno (the page stays EBUSY).
 */
static int make_exclusive(uint64_t addr)
{
	static uint32_t nobody;		/* FUTEX_WAKE_OP wakes no one here */
	long r = syscall(SYS_futex, &nobody, FUTEX_WAKE_OP | FUTEX_PRIVATE_FLAG, 0, (void *)0,
			 (uint32_t *)addr, FUTEX_OP(FUTEX_OP_ADD, 0, FUTEX_OP_CMP_EQ, 0));

	return r < 0 ? -errno : 0;
}

/*
 * Pages [i + done, i + run) of @m were left by move_run() with
 * *@err: while that is EBUSY, make the first of them exclusive
 * (make_exclusive()) and move the rest of the run again. The page made
 * exclusive gets status 1 (moved, after a copy or a reuse).
 * Context: the agent thread.
 * Return: the number of pages moved here (after @done); *@err as move_run().
 */
static uint32_t move_busy(struct rt_evict *m, uint32_t i, uint32_t run, uint32_t done,
			  uint32_t n, uint32_t split, int *err)
{
	uint32_t more = 0;

	while (done + more < run && *err == -EBUSY && !make_exclusive(m->addr[i + done + more])) {
		uint32_t d = move_run(m, i + done + more, run - done - more, n, split, err);

		if (!d)
			break;		/* still refused (pinned): it stays EBUSY */
		m->status[i + done + more] = 1;	/* moved after a write: counted */
		more += d;
	}
	return more;
}

/*
 * Empty the staging area without an event: unregistered, a MADV_DONTNEED
 * of it raises no REMOVE (which the agent would sleep on until the
 * supervisor read it, and which fails the supervisor's copies with EAGAIN
 * meanwhile); then registered again for the next batch. The whole area is
 * given: a batch the policy split spans more slots than x86 flushes page
 * by page (shim_policy_plan()), so the zap ends with one TLB flush instead
 * of an INVLPG per page (3.6 us each on this PVM guest, docs/BENCHMARKS.md).
 * An area that cannot be dropped (mlockall() locked it) keeps its pages:
 * moves into it then fail (EEXIST) and the process's pages stay resident,
 * as the kernel keeps locked pages.
 * Context: the agent thread, the move lock not held.
 */
static void empty_area(void)
{
	uint64_t a = (uint64_t)shim.staging, len = RT_BATCH * RT_PAGE;

	if (staging_on && rt_uffd_unregister(shim.uffd, a, len)) {
		/* Registered still: a REMOVE, which the supervisor knows by
		 * its range (HELLO) and only reads. */
		shim_raw_madvise(shim.staging, len, MADV_DONTNEED);
		return;
	}
	staging_on = false;
	shim_raw_madvise(shim.staging, len, MADV_DONTNEED);
	staging_on = rt_uffd_register(shim.uffd, a, len) == 0;
}

/*
 * Cut the run [@i, @i + @run) of the batch before its first slot the
 * supervisor cancelled; a cancelled slot @i itself gets its status.
 * Context: the agent thread, the move lock held.
 * Return: the run's new length (0: slot @i is cancelled).
 */
static uint32_t uncancelled(struct rt_evict *m, uint32_t i, uint32_t run)
{
	uint64_t c = atomic_load(&shim.ctl->cancel);

	for (uint32_t k = i; k < i + run; k++)
		if (c & (1ULL << k)) {
			if (k == i)
				m->status[i] = -ECANCELED;
			return k - i;
		}
	return run;
}

/* Let the move lock go, kicking the supervisor if it asked. Context: agent. */
static void move_unlock(void)
{
	if (rt_ctl_agent_unlock(shim.ctl)) {
		struct rt_simple k = { .type = RT_KICK };

		shim_send(&k, sizeof(k));
	}
}

/*
 * Move the requested pages out into the staging area, copy them into the
 * transfer buffer, empty the staging area and answer. Runs of contiguous
 * addresses move in one call; what a run leaves (an error part-way) is
 * retried one page at a time, so each page gets its own status. Each
 * move is made under the move lock, after a look at the cancelled slots
 * (xfer_ctl.h); an EAGAIN (an event unread) lets the lock go, so that the
 * supervisor can read it, and tries again (up to 1000 times, 50 us apart).
 * Context: the agent thread.
 */
static void evict(struct rt_evict *m)
{
	uint32_t n = m->n < RT_BATCH ? m->n : RT_BATCH, solo_until = 0, split;
	struct shim_plan plan;
	unsigned int again = 0;
	bool moved = false;

	if (!staging_on)
		staging_on = rt_uffd_register(shim.uffd, (uint64_t)shim.staging,
					      RT_BATCH * RT_PAGE) == 0;
	shim_policy_plan(m, n, &plan);
	split = plan.split;
	for (uint32_t i = 0; i < n;) {
		uint32_t run = 1, done;
		int err;

		if (i >= solo_until)
			while (i + run < n && i + run != split &&
			       m->addr[i + run] == m->addr[i] + run * RT_PAGE)
				run++;
		rt_ctl_agent_lock(shim.ctl);
		run = uncancelled(m, i, run);
		if (!run) {
			move_unlock();
			i++;
			continue;
		}
		done = move_run(m, i, run, n, split, &err);
		done += move_busy(m, i, run, done, n, split, &err);	/* EBUSY after a fork */
		move_unlock();
		for (uint32_t k = i; k < i + done; k++)	/* the staging is ours alone */
			memcpy(shim.xfer + k * RT_PAGE, slot(k, n, split), RT_PAGE);
		moved |= done > 0;
		if (err == -EAGAIN && done < run && again++ < 1000) {
			usleep(50);	/* an event to read: the supervisor has the lock now */
			i += done;
			continue;
		}
		if (plan.yield)
			sched_yield();
		if (done == run) {
			i += run;
		} else if (run == 1) {
			m->status[i++] = err;
		} else {
			solo_until = i + run;
			i += done;
		}
	}
	if (moved)
		empty_area();
	m->type = RT_EVICTED;
	shim_send(m, sizeof(*m));
}

/* CLOCK_MONOTONIC in milliseconds. Context: any thread. */
static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/**
 * shim_agent_main() - the agent: requests from the supervisor, and
 * rescans. It returns when the socket is closed, not ours any more, or
 * the supervisor is gone (the watchdog says so and acts).
 * Context: its own thread, made by start_threads() on the shim's stack.
 * Return: NULL.
 */
void *shim_agent_main(void *arg)
{
	static struct rt_evict m;	/* static: never on a registered page */

	(void)arg;
	shim_agent_setup();
	shim_policy_agent_start();

	/* Running: the supervisor may send batches now (it sends none before,
	 * or a fault of the thread starting us could wait for a batch no one
	 * answers). */
	if (shim_sock_ours()) {
		struct rt_simple go = { .type = RT_AGENT_UP };

		shim_send(&go, sizeof(go));
	}
	uint64_t due = mono_ms() + SHIM_SCAN_MS;
	unsigned int quick = 0;	/* ticks of 1 ms left after a change */

	for (;;) {
		struct pollfd p[1] = { { .fd = shim.sock, .events = POLLIN } };
		uint64_t now = mono_ms();
		int r;

		if (!shim_sock_ours())
			return NULL;	/* closed, maybe reused: the watchdog says so */
		r = poll(p, 1, now < due ? (int)(due - now) : 0);
		if (r < 0 && errno != EINTR)
			return NULL;
		if (r > 0)
			r = p[0].revents != 0;
		if (r > 0 && (p[0].revents & POLLNVAL))
			return NULL;	/* the program closed it: the watchdog says so */
		if (r > 0) {
			ssize_t n = shim_sock_ours() ?
				    recv(shim.sock, &m, sizeof(m), MSG_DONTWAIT) : 0;

			if (n < 0 && errno == EAGAIN)
				continue;
			if (n <= 0)
				return NULL;	/* the watchdog handles a dead supervisor */
			/* In the shared table (no table of our own), a dup2
			 * between the check and the read gave the program's
			 * bytes: never act on them. */
			if (!shim_sock_ours())
				return NULL;
			if (m.type == RT_EVICT) {
				evict(&m);
			} else if (m.type == RT_FORGET) {
				struct rt_range_msg *f = (struct rt_range_msg *)&m;

				/* A mapping of the same size may take or have
				 * taken its place (glibc's free() and malloc() of
				 * a large block: no interposer sees either, and
				 * statm ends as it was): the rescan below runs now
				 * whatever statm says, then every 1 ms for 100 ms.
				 * Without it the old record would hide the new
				 * mapping for good. */
				shim_maps_forget(f->start, f->end);
				due = 0;
			} else if (m.type == RT_PREFORK_DONE) {
				shim_prefork_done();
			}
			if (mono_ms() < due)
				continue;
		}
		/*
		 * Due whether or not batches keep coming (under eviction they
		 * always do): memory the program makes writable unseen is
		 * learnt late, resident already. For 100 ms after a change,
		 * every 1 ms: the program is growing.
		 */
		if (shim_rescan())
			quick = 100;
		else if (quick)
			quick--;
		due = mono_ms() + (quick ? 1 : SHIM_SCAN_MS);
	}
}
