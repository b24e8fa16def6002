/* SPDX-License-Identifier: MIT */
/*
 * The agent's mechanism: it moves the pages the supervisor asks for into
 * the staging area (UFFDIO_MOVE under the move lock: docs/RUNTIME.md, "The
 * move lock"), copies them into the transfer buffer, empties the area and
 * answers, and rescans the maps when they change. Everything here runs in
 * the agent thread unless said otherwise.
 */
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/proto.h"
#include "runtime/shim_internal.h"
#include "runtime/uffd_ops.h"
#include "runtime/xfer_ctl.h"

#define SHIM_SCAN_MS	10	/* the agent's rescans, when nothing changed */

/* Whether the staging area is registered with shim.uffd. */
static bool staging_on = true;

/**
 * shim_staging_register() - register the staging area with shim.uffd.
 * Context: the session's start, or the agent. Return: 0, -errno (errno set).
 */
int shim_staging_register(void)
{
	int err = rt_uffd_register(shim.uffd, (uint64_t)shim.staging, RT_BATCH * RT_PAGE);

	if (!err)
		staging_on = true;
	return err;
}

/* The staging slot of page @k of a batch of @n split at @split (shim_plan). */
static char *slot(uint32_t k, uint32_t n, uint32_t split)
{
	return shim.staging + (uint64_t)(k < split ? k : k + (RT_BATCH - n)) * RT_PAGE;
}

/*
 * Move pages [i, i + run) of @m (contiguous, on one side of @split) into
 * their slots in one UFFDIO_MOVE. shim.uffd refuses it with EAGAIN while
 * one of its events is unread, so a move that succeeds comes first.
 * Context: the move lock held. Return: the pages moved from the start of
 * the run; *@err the error that stopped it.
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
 * Make the page at @addr, shared after a fork, anon-exclusive again for
 * UFFDIO_MOVE: a kernel write of nothing (FUTEX_WAKE_OP adding 0), which
 * loses no concurrent write and gives EFAULT, not a MISSING fault, on a
 * page dropped meanwhile (docs/RUNTIME.md, "Evicting after a fork").
 * Return: 0, or -errno (the page stays EBUSY).
 */
static int make_exclusive(uint64_t addr)
{
	static uint32_t nobody;		/* FUTEX_WAKE_OP wakes no one here */
	long r = syscall(SYS_futex, &nobody, FUTEX_WAKE_OP | FUTEX_PRIVATE_FLAG, 0, (void *)0,
			 (uint32_t *)addr, FUTEX_OP(FUTEX_OP_ADD, 0, FUTEX_OP_CMP_EQ, 0));

	return r < 0 ? -errno : 0;
}

/*
 * Move on the run [i + done, i + run) of @m that move_run() cut short. A
 * page shared after a fork (EBUSY) is made exclusive and moved again
 * (status 1: moved after a write). A run cut after pages moved (EAGAIN
 * with progress) is moved on at once: the kernel ends a step at a page it
 * cannot take with -EAGAIN (6.18), and names it (EBUSY) at the next call.
 * EAGAIN with nothing moved is an unread event of the uffd (mmap_changing):
 * left to the caller, which lets the lock go for it.
 * Context: the move lock held. Return: the pages moved; *@err as move_run().
 */
static uint32_t move_rest(struct rt_evict *m, uint32_t i, uint32_t run, uint32_t done,
			  uint32_t n, uint32_t split, int *err)
{
	uint32_t more = 0;
	bool progress = done > 0;

	while (done + more < run) {
		uint32_t at = i + done + more, d;
		bool busy = *err == -EBUSY;

		if (busy ? make_exclusive(m->addr[at]) != 0 : !(*err == -EAGAIN && progress))
			break;
		d = move_run(m, at, run - done - more, n, split, err);
		if (!d && !busy && *err == -EBUSY)
			continue;	/* the page the run stopped at, named */
		if (!d)
			break;	/* EBUSY still: pinned; EAGAIN: an event */
		if (busy)
			m->status[at] = 1;
		more += d;
		progress = true;
	}
	return more;
}

/*
 * Empty the whole staging area, unregistered so that it raises no REMOVE
 * (docs/RUNTIME.md, "Emptying the staging area without an event"). Locked
 * by mlockall(), it keeps its pages, and moves into it fail (EEXIST).
 * Context: the move lock not held.
 */
static void empty_area(void)
{
	uint64_t len = RT_BATCH * RT_PAGE;

	if (staging_on && rt_uffd_unregister(shim.uffd, (uint64_t)shim.staging, len)) {
		/* A REMOVE the supervisor knows by its range, and only reads. */
		shim_raw_madvise(shim.staging, len, MADV_DONTNEED);
		return;
	}
	staging_on = false;
	shim_raw_madvise(shim.staging, len, MADV_DONTNEED);
	staging_on = shim_staging_register() == 0;
}

/* Cut the run [@i, @i + @run) before its first slot the supervisor
 * cancelled (slot @i: -ECANCELED). Context: the move lock held.
 * Return: the run's new length. */
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

/* Let the move lock go, kicking the supervisor if it asked for it. */
static void move_unlock(void)
{
	if (rt_ctl_agent_unlock(shim.ctl))
		shim_send(&(struct rt_simple){ .type = RT_KICK }, sizeof(struct rt_simple));
}

/*
 * Make the pages of the run [@i, @i + @run) of @m that the supervisor named
 * shared (@hint) exclusive before they move, each once (@made): a move that
 * fails on a shared page costs the failed call and its check
 * (rt_uffd_move()), where the write alone is the cost that stays. A page
 * named wrongly gets a write of nothing, a page gone gets EFAULT: either
 * way the move that follows says what happened. Outside the move lock: a
 * write of nothing changes no byte of whatever is mapped there by then
 * (the lock orders moves, which take pages, against event reads), and each
 * write is a copy-on-write fault the supervisor's reads of the uffd would
 * otherwise wait behind. Context: the agent thread.
 */
static void unshare_run(const struct rt_evict *m, uint32_t i, uint32_t run, uint64_t hint,
			uint64_t *made)
{
	for (uint32_t k = i; k < i + run; k++)
		if ((hint & ~*made) & (1ULL << k)) {
			make_exclusive(m->addr[k]);
			*made |= 1ULL << k;
		}
}

#if USWAP_DEBUG >= 1
/*
 * Test hook (tests/runtime/run_agent_fault.sh): with USWAP_TEST_AGENT_READ
 * set to "ADDR:PAGES" (hex, decimal), the agent reads one byte of page k
 * % PAGES from ADDR as its k-th batch comes, before it moves any page, as
 * a libc call that reads the program's data (a locale's tables) would: a
 * fault of the agent while its batch is out, on a page swapped out by an
 * earlier batch, often at the budget's line.
 */
static uintptr_t test_addr;
static unsigned long long test_pages, test_k;

static void test_read_setup(void)
{
	const char *v = getenv("USWAP_TEST_AGENT_READ");
	unsigned long long a, n;

	if (v && shim_parse_num(&v, 16, &a) && *v++ == ':' && shim_parse_num(&v, 10, &n) && a && n) {
		test_addr = (uintptr_t)a;
		test_pages = n;
	}
}

static void test_read(void)
{
	if (test_pages)
		(void)*(const volatile char *)(test_addr + (test_k++ % test_pages) * RT_PAGE);
}
#else
static inline void test_read_setup(void) { }
static inline void test_read(void) { }
#endif

/*
 * Serve the batch @m. A run of contiguous pages moves in one call; what it
 * leaves is retried page by page, so each page gets its own status. On
 * EAGAIN, with the lock let go for the supervisor to read its event, the
 * move is tried again (1000 times at most). A page the supervisor named
 * shared after a fork (status 1 in RT_EVICT) is made exclusive first, and
 * answered as one so made (status 1).
 */
static void evict(struct rt_evict *m)
{
	uint32_t n = m->n < RT_BATCH ? m->n : RT_BATCH, solo_until = 0;
	uint64_t hint = 0, made = 0;
	struct shim_plan plan;
	unsigned int again = 0;
	bool moved = false;

	test_read();
	if (!staging_on)
		staging_on = shim_staging_register() == 0;
	for (uint32_t i = 0; i < n; i++)
		if (m->status[i] == 1)
			hint |= 1ULL << i;
	shim_policy_plan(m, n, &plan);
	for (uint32_t i = 0; i < n;) {
		uint32_t run = 1, done;
		int err;

		if (i >= solo_until)
			while (i + run < n && i + run != plan.split &&
			       m->addr[i + run] == m->addr[i] + run * RT_PAGE)
				run++;
		unshare_run(m, i, run, hint, &made);
		rt_ctl_agent_lock(shim.ctl);
		run = uncancelled(m, i, run);
		if (!run) {
			move_unlock();
			i++;
			continue;
		}
		done = move_run(m, i, run, n, plan.split, &err);
		done += move_rest(m, i, run, done, n, plan.split, &err);
		move_unlock();
		for (uint32_t k = i; k < i + done; k++)
			if (made & (1ULL << k))
				m->status[k] = 1;
		for (uint32_t k = i; k < i + done; k++)	/* the staging is ours alone */
			memcpy(shim.xfer + k * RT_PAGE, slot(k, n, plan.split), RT_PAGE);
		moved |= done > 0;
		if (err == -EAGAIN && done < run && again++ < 1000) {
			usleep(50);
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

/**
 * shim_agent_main() - serve the supervisor, and rescan, until the socket is
 * closed, not ours, or dead (the watchdog then acts).
 * Context: its own thread (shim_conn.c). Return: NULL.
 */
void *shim_agent_main(void *arg)
{
	static struct rt_evict m;	/* static: never on a registered page */

	(void)arg;
	shim_policy_agent_start();
	test_read_setup();

	/* No batch comes before this: it would hold the starting thread's
	 * faults. It names this thread: its faults never wait for its batch. */
	if (shim_sock_ours())
		shim_send(&(struct rt_simple){ .type = RT_AGENT_UP,
					       .arg = (uint32_t)syscall(SYS_gettid) },
			  sizeof(struct rt_simple));
	uint64_t due = now_ns() / 1000000 + SHIM_SCAN_MS;
	unsigned int quick = 0;	/* ticks of 1 ms left after a change */

	for (;;) {
		struct pollfd p = { .fd = shim.sock, .events = POLLIN };
		uint64_t now = now_ns() / 1000000;
		int r;

		if (!shim_sock_ours())
			return NULL;	/* closed, maybe reused: the watchdog says so */
		r = poll(&p, 1, now < due ? (int)(due - now) : 0);
		if ((r < 0 && errno != EINTR) || (r > 0 && (p.revents & POLLNVAL)))
			return NULL;	/* the program closed it: the watchdog says so */
		if (r > 0 && p.revents) {
			ssize_t n = shim_sock_ours() ?
				    recv(shim.sock, &m, sizeof(m), MSG_DONTWAIT) : 0;

			if (n < 0 && errno == EAGAIN)
				continue;
			if (n <= 0)
				return NULL;	/* the watchdog handles a dead supervisor */
			/* In the program's table, a dup2 between the check and
			 * the read gave the program's bytes: never act on them. */
			if (!shim_sock_ours())
				return NULL;
			if (m.type == RT_EVICT) {
				evict(&m);
			} else if (m.type == RT_FORGET) {
				struct rt_range_msg *f = (struct rt_range_msg *)&m;

				/* A mapping may take its place unseen, statm
				 * unchanged (glibc's free(), malloc()): rescan now. */
				shim_maps_forget(f->start, f->end);
				due = 0;
			} else if (m.type == RT_PREFORK_DONE) {
				shim_prefork_done();
			}
			if (now_ns() / 1000000 < due)
				continue;
		}
		/* Due even while batches keep coming. For 100 ms after a
		 * change, every 1 ms: the program is growing. */
		if (shim_rescan())
			quick = 100;
		else if (quick)
			quick--;
		due = now_ns() / 1000000 + (quick ? 1 : SHIM_SCAN_MS);
	}
}
