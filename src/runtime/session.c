/* SPDX-License-Identifier: MIT */
/*
 * One process of the tree, as the supervisor serves it: the transport
 * around its pager space (faults, events, its agent's messages, the
 * eviction batches' answers). docs/RUNTIME.md gives the states and races.
 * Context of everything here: the supervisor's one thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "runtime/uffd_ops.h"
#include "runtime/xfer_ctl.h"
#include "util/alloc.h"

#define PAGE		RT_PAGE

/*
 * USWAP_DEBUG >= 2: a page reported moved whose transfer slot still holds
 * the canary written when the batch was sent (xfer-zero, docs/RUNTIME.md):
 * counted in dbg_xfer_zero, the first 16 named on stderr.
 */
#if USWAP_DEBUG >= 2
static void dbg_say(struct rt_session *s, uint64_t *count, const char *what, uint64_t addr)
{
	if ((*count)++ < 16)
		fprintf(stderr, "uswap run: DBG %s pid %d 0x%llx\n", what, (int)s->pid,
			(unsigned long long)addr);
}

/* Whether slot @i still holds the canary (reclaim.c). */
static bool dbg_unwritten(struct rt_session *s, uint32_t i)
{
	const uint64_t *w = (const uint64_t *)(const void *)(s->xfer + (uint64_t)i * PAGE);

	for (size_t k = 0; k < PAGE / 8; k++)
		if (w[k] != (RT_XFER_CANARY ^ k))
			return false;
	return true;
}
#else
static inline void dbg_say(struct rt_session *s, uint64_t *count, const char *what, uint64_t addr)
{
	(void)s; (void)count; (void)what; (void)addr;
}
static inline bool dbg_unwritten(struct rt_session *s, uint32_t i) { (void)s; (void)i; return false; }
#endif

/* ---- faults ---- */

/* The pager's copies, wake-ups and poisons go to the process's uffd; a
 * run in the copy thread's buffer (ops_run_buf()) is handed to it. */
static int ops_copy(void *arg, uint64_t dst, const void *src, uint64_t len, uint64_t *done)
{
	struct rt_session *s = arg;
	struct rt_copier *cp = &s->sup->copier;
	int err;

	if (src == cp->buf && cp->buf) {
		rt_colo_run(&s->sup->colo, s->pid);
		rt_copier_queue(cp, s, s->uffd, dst, len);
		s->copying = true;
		*done = 0;
		return -EINPROGRESS;
	}
	if (len == PAGE && rt_colo_on(&s->sup->colo) && s->pid == s->sup->colo.pid) {
		/* followed (colocate.c): the wake-up at SCHED_IDLE, for a
		 * page alone (a run ends following) */
		err = rt_colo_copy(&s->sup->colo, s->uffd, dst, src, len, done);
		s->sup->followed_woke = !err && s->sup->colo.at_idle;
	} else {
		if (len > PAGE)
			rt_colo_run(&s->sup->colo, s->pid);
		err = rt_uffd_copy(s->uffd, dst, src, len, done);
		/* Two processes faulting: the thread just woken may be queued
		 * on this CPU, behind the rest of the turn (under SCHED_FIFO
		 * until we sleep): let it run to its next fault first. */
		if (len == PAGE && *done && rt_two_faulting(s->sup))
			sched_yield();
	}
	if (err && err != -EAGAIN && err != -EEXIST && getenv("USWAP_RUN_DEBUG"))
		fprintf(stderr, "uswap run: copy to 0x%llx (%llu bytes): %s, %llu done\n",
			(unsigned long long)dst, (unsigned long long)len, strerror(-err),
			(unsigned long long)*done);
	return err;
}

static void ops_wake(void *arg, uint64_t addr)
{
	struct rt_session *s = arg;

	rt_uffd_wake(s->uffd, addr, PAGE);
}

static int ops_poison(void *arg, uint64_t addr)
{
	struct rt_session *s = arg;

	return rt_uffd_poison(s->uffd, addr, PAGE);
}

static void ops_lost(void *arg, const char *why)
{
	rt_session_kill(arg, why);
}

/*
 * The copy thread's buffer for an @n-page swap-in run of @s, while two
 * processes fault in turns and the thread is free: the other process's
 * faults are then served while this run is copied, not after it. A
 * process faulting alone gains nothing (its next fault waits for this
 * run), nor does a run shorter than RT_COPY_MIN_PAGES: the hand-over (a
 * wake-up, the result's eventfd, the uffd out of epoll and back) costs the
 * serving thread more than such a copy (redis's BGSAVE child reads in
 * runs of two: docs/BENCHMARKS.md, "forkbench: runs at the copy thread").
 */
static char *ops_run_buf(void *arg, uint64_t n)
{
	struct rt_session *s = arg;
	struct rt_sup *sup = s->sup;

	if (n < RT_COPY_MIN_PAGES || s->phase != RT_PH_RUN || s->dead || !rt_copier_free(&sup->copier) ||
	    !rt_two_faulting(sup))
		return NULL;
	return sup->copier.buf;
}

const struct pg_ops rt_session_ops = { ops_copy, ops_wake, ops_poison, ops_lost, ops_run_buf };

/* pager_check(), pager_check_present() of every space, pager_check_tree().
 * Context: supervisor thread, once per turn of the event loop. */
void rt_sup_check(struct rt_sup *sup)
{
	uint64_t res = 0, unev = 0, out = 0;

	for (struct rt_session *s = sup->sessions; s; s = s->next) {
		pager_check(&s->pg);
		pager_check_present(&s->pg);
		res += s->pg.nr_resident;
		unev += s->pg.nr_unevictable;
		out += PG_OUT(&s->pg);
	}
	pager_check_tree(&sup->tree, res, unev, out);
}

/*
 * Whether the fault at @addr being served is the agent's own, at the line
 * while its batch is out: the agent answers that batch only after this
 * fault, so it may not wait for the budget. The shim's threads keep off
 * the program's memory, but a libc call that reads it (a locale's tables
 * in the program's heap, which an sscanf() once read here and hung) would
 * otherwise wait for its own answer. The agent is the thread RT_AGENT_UP
 * named; a fault of it kept waiting is known again by its address
 * (agent_fault). A program naming another of its threads gains at most
 * RT_BATCH pages past the line a batch (agent_over), a page at a time.
 * Context: supervisor thread. Return: true to serve it past the line.
 */
static bool agent_passes(struct rt_session *s, uint64_t addr)
{
	bool agent = s->fault_tid ? s->fault_tid == s->agent_tid :
				    s->agent_fault && addr == s->agent_fault;

	if (!s->agent_tid || !agent || s->batch != RT_B_OUT || s->agent_over >= RT_BATCH)
		return false;
	s->agent_over++;
	s->sup->st.agent_over++;
	return true;
}

/*
 * Serve the fault at @addr if it can be now: the staging area's (the
 * agent's own) with a page of zeros, uncounted; a page the states hold by
 * the pager; a new or swapped one within the budget (a run only while a
 * run fits under budget + slack).
 * Return: 0 served or nothing to do, -EAGAIN/-EBUSY leave it pending
 * (s->wait_why says why).
 */
static int serve_fault(void *arg, uint64_t addr)
{
	static const char zero_page[PAGE];
	struct rt_session *s = arg;
	struct rt_sup *sup = s->sup;
	struct pg_tree *t = &sup->tree;
	uint64_t v, room = PG_RUN, resident;
	int st, err;

	if (s->dead)
		return 0;
	if (s->copying) {		/* after the run at the copy thread */
		s->wait_why = PG_WAIT_COPY;
		return -EBUSY;
	}
	s->wait_why = PG_WAIT_EVENT;	/* any -EAGAIN below */
	if (addr >= s->staging && addr < s->staging_end)
		return rt_uffd_copy(s->uffd, addr, zero_page, PAGE, &v) == -EAGAIN ? -EAGAIN : 0;
	st = pager_get(&s->pg, addr, &v) ? (int)PT_STATE(v) : 0;
	if (st == PS_EVICTING || st == PS_DEAD) {
		s->wait_why = PG_WAIT_EVICTING;
		return -EBUSY;		/* after the batch's answer */
	}
	if (st && st != PS_SWAPPED) {
		room = 1;	/* dropped without an event we saw: zeros, counted already */
	} else if (s->phase != RT_PH_PREFORK) {
		/* a run at the copy thread is resident already */
		resident = t->resident + sup->copier.pages;
		if (resident >= t->budget + sup->slack) {
			/*
			 * Send the next batch now rather than at the turn's
			 * end, and wait for it. With none to send, or after a
			 * stall, serve over the line: never wait for a batch
			 * that will not come.
			 */
			if (!sup->inflight && !sup->stalled)
				rt_sup_reclaim(sup);
			if (sup->inflight && !sup->stalled && !agent_passes(s, addr)) {
				s->wait_why = PG_WAIT_BUDGET;
				return -EBUSY;	/* wait for eviction, as direct reclaim would */
			}
			sup->st.over_budget++;
		}
		if (resident + PG_RUN > t->budget + sup->slack)
			room = 1;
		else if (rt_two_faulting(sup))
			room = RT_TURNS_RUN;	/* the other's next fault waits for it */
	}
	err = pager_serve(&s->pg, addr, room);
	if (err == -EAGAIN)
		return -EAGAIN;
	if (err == -EINPROGRESS)
		return 0;		/* counted at its end (fault_served()) */
	if (err == -EHWPOISON)
		fprintf(stderr, "uswap run: pid %d: page 0x%llx lost to a device read error: "
			"SIGBUS on access\n", (int)s->pid, (unsigned long long)addr);
	else if (err && err != -EBUSY)
		rt_session_kill(s, "a page cannot be read back");
	return 0;
}

/* Count a served fault in the latency histogram (read to copy); one whose
 * run went to the copy thread, when its copy is over (rt_sup_copied()). */
static void fault_served(void *arg, uint64_t t0)
{
	struct rt_session *s = arg;

	if (s->copying)		/* serve_fault() would have deferred any other */
		s->sup->copier.t0 = t0;
	else
		s->sup->st.lat[rt_lat_bucket(t0, RT_LAT_BUCKETS)]++;
}

/* A waiting fault tried again (serve_fault()); the agent's, once served,
 * is no longer known by its address: a later fault there is not its. */
static int retry_fault(void *arg, uint64_t addr)
{
	struct rt_session *s = arg;
	int err = serve_fault(s, addr);

	if (!err && addr == s->agent_fault)
		s->agent_fault = 0;
	return err;
}

/** rt_session_retry() - serve the pending faults that can be.
 * Context: supervisor thread. Return: true if some are left. */
bool rt_session_retry(struct rt_session *s)
{
	if (s->copying)
		return s->pg.nr_pending != 0;
	return pager_retry(&s->pg, retry_fault, s, fault_served) != 0;
}

/**
 * rt_sup_copied() - take the copy thread's run if its copy is over (with
 * @wait: once it is) and end it in its session: the pages placed made
 * resident, the fault counted, or kept waiting for an event if none was
 * placed. Context: supervisor thread. Return: the run's session, or NULL.
 */
struct rt_session *rt_sup_copied(struct rt_sup *sup, bool wait)
{
	struct rt_copier *cp = &sup->copier;
	uint64_t t0 = cp->t0, dst, done;
	struct rt_session *s;
	int err;

	s = rt_copier_take(cp, wait, &dst, &err, &done);
	sup->st.copier_rescues = cp->rescues;
	if (!s)
		return NULL;
	s->copying = false;
	if (err && err != -EAGAIN && err != -EEXIST && getenv("USWAP_RUN_DEBUG"))
		fprintf(stderr, "uswap run: copy of a run to 0x%llx: %s, %llu bytes done\n",
			(unsigned long long)dst, strerror(-err), (unsigned long long)done);
	if (done)
		sup->st.copier_runs++;
	if (!pager_run_done(&s->pg, err, done)) {
		if (t0)
			sup->st.lat[rt_lat_bucket(t0, RT_LAT_BUCKETS)]++;
	} else if (pager_defer(&s->pg, dst, t0 ? t0 : now_ns(), PG_WAIT_EVENT)) {
		rt_session_kill(s, "the supervisor is out of memory");
	}
	PAGER_CHECK(&s->pg);
	return s;
}

/* ---- events ---- */

/*
 * Tell the agent not to move the slots @bits of the batch out (xfer_ctl.h);
 * once answered, the moves are over. Context: the move lock held.
 */
static void cancel_slots(struct rt_session *s, uint64_t bits)
{
	if (bits && s->ctl && s->batch == RT_B_OUT)
		atomic_fetch_or(&s->ctl->cancel, bits);
}

static void tell_forget(struct rt_session *s, uint64_t start, uint64_t end)
{
	struct rt_range_msg m = { .type = RT_FORGET, .start = start, .end = end };

	send(s->sock, &m, sizeof(m), MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* A fault message @m read from @s's uffd: serve it, or keep it pending. */
static void handle_fault(struct rt_session *s, const struct uffd_msg *m)
{
	uint64_t a = m->arg.pagefault.address & ~(PAGE - 1);
	uint64_t t0 = now_ns();
	int err;

	s->sup->st.faults++;
	if (s->sup->fault_last != s) {	/* --poll-us: spin for one alone */
		s->sup->fault_last = s;
		s->sup->fault_switch_ns = t0;
	}
	if (s->forked)
		s->sup->st.child_faults++;
	if (s->forked && !s->pid)	/* names the child */
		rt_fork_fault(s, m->arg.pagefault.feat.ptid);
	if (s->pid && (a < s->staging || a >= s->staging_end))
		rt_colo_fault(&s->sup->colo, s->pid, (pid_t)m->arg.pagefault.feat.ptid, &s->ev_uffd);
	s->fault_tid = (pid_t)m->arg.pagefault.feat.ptid;
	err = serve_fault(s, a);
	if (!err)
		fault_served(s, t0);
	else if (pager_defer(&s->pg, a, t0, (enum pg_wait)s->wait_why))
		rt_session_kill(s, "the supervisor is out of memory");
	else if (s->agent_tid && s->fault_tid == s->agent_tid)
		s->agent_fault = a;	/* it blocks one address at a time */
	s->fault_tid = 0;
}

/* An event @m read from @s's uffd. Context: the move lock held. */
static void handle_event(struct rt_session *s, const struct uffd_msg *m)
{
	switch (m->event) {
	case UFFD_EVENT_REMOVE:
	case UFFD_EVENT_UNMAP: {
		uint64_t a = m->arg.remove.start, b = m->arg.remove.end;

		if (a >= s->staging && b <= s->staging_end)
			break;	/* the agent emptying its staging area */
		cancel_slots(s, pager_drop(&s->pg, a, b));
		if (m->event == UFFD_EVENT_UNMAP) {
			rt_ranges_sub(&s->pg.ranges, a, b);
			tell_forget(s, a, b);
			s->sup->st.unmaps++;
		} else {
			s->sup->st.removes++;
		}
		break;
	}
	case UFFD_EVENT_REMAP:
		cancel_slots(s, pager_remap(&s->pg, m->arg.remap.from, m->arg.remap.to,
					    m->arg.remap.len));
		s->sup->st.remaps++;
		break;
	case UFFD_EVENT_FORK:
		rt_fork_event(s, (int)m->arg.fork.ufd);
		break;
	default:
		break;
	}
}

#define RT_LOCK_SPIN_NS	60000	/* about two runs' moves */

/*
 * Take @s's move lock, yielding up to RT_LOCK_SPIN_NS for the agent to
 * hand it over (cheaper than a kick's wake-up); a longer move is left to
 * the kick. Context: supervisor thread. Return: true if taken.
 */
static bool lock_moves(struct rt_session *s)
{
	uint64_t t0;

	if (rt_ctl_sup_trylock(s->ctl))
		return true;
	if (s->uffd_held)
		return false;	/* spun already: a stopped or slow agent costs one spin */
	t0 = now_ns();
	do {
		sched_yield();
		if (atomic_load(&s->ctl->lock) == RT_CTL_SUP)
			return rt_ctl_sup_trylock(s->ctl);
	} while (now_ns() - t0 < RT_LOCK_SPIN_NS);
	return false;
}

/*
 * Whether to read @s's uffd again at once: its followed thread, woken on
 * our CPU at SCHED_IDLE by the last copy, preempted us and, by the time
 * the copy returned, most likely faulted again. Read at once, up to
 * RT_FOLLOW_BURST times in a row, its fault does not wait for the rest of
 * the turn (other processes' faults, the agents' answers, eviction;
 * docs/RUNTIME.md, "The followed thread first"). Each read in a row
 * stores a page of every answered batch, as a turn of two processes
 * faulting does, so that eviction keeps its pace.
 * Context: supervisor thread, no move lock held.
 */
static bool read_again(struct rt_session *s, int *reads)
{
	struct rt_sup *sup = s->sup;

	if (!sup->followed_woke || s->dead || s->copying || *reads >= RT_FOLLOW_BURST)
		return false;
	(*reads)++;
	sup->st.colo_bursts++;
	for (struct rt_session *o = sup->sessions; o; o = o->next)
		rt_session_batch_step(o, 1);
	return true;
}

/**
 * rt_session_uffd() - read and handle what the process's uffd has. Each
 * read and its events are handled under the move lock (xfer_ctl.h), only
 * tried: while the agent moves, the uffd is left unread (s->uffd_held)
 * until its RT_KICK or the next turn. A read's faults are served after
 * the lock is let go (after its events: the two were concurrent).
 * Context: supervisor thread.
 * Return: 0, or -errno when the uffd is unusable (the process is gone).
 */
int rt_session_uffd(struct rt_session *s)
{
	struct uffd_msg msg[32];
	ssize_t r = 0;
	int again = 0;

	if (s->copying)
		return 0;	/* read after the copy thread's run (copier.h) */
	for (;;) {
		size_t nf = 0;

		if (s->ctl && !lock_moves(s)) {
			if (!s->uffd_held)
				s->sup->st.lock_busy++;
			s->uffd_held = true;
			break;
		}
		s->uffd_held = false;
		s->sup->followed_woke = false;
		r = rt_uffd_read(s->uffd, msg, sizeof(msg));
		for (ssize_t i = 0; i < r / (ssize_t)sizeof(msg[0]); i++) {
			if (msg[i].event == UFFD_EVENT_PAGEFAULT)
				msg[nf++] = msg[i];	/* nf <= i: kept in order */
			else
				handle_event(s, &msg[i]);
			PAGER_CHECK(&s->pg);
		}
		if (s->ctl)
			rt_ctl_sup_unlock(s->ctl);
		for (size_t i = 0; i < nf; i++) {
			handle_fault(s, &msg[i]);
			PAGER_CHECK(&s->pg);
		}
		if ((r < (ssize_t)sizeof(msg) || s->copying) && !read_again(s, &again))
			break;	/* drained (or an error): spare the read that would say EAGAIN */
	}
	if (r < 0 && errno == EBADFD) {
		rt_session_violation(s, "its userfaultfd was made blocking");
		return 0;
	}
	if (r < 0 && errno != EAGAIN && errno != EINTR)
		return -errno;
	rt_session_retry(s);
	return 0;
}

/**
 * rt_session_uffd_error() - POLLERR without POLLIN on @s's uffd: the
 * program made it blocking. Set O_NONBLOCK again (no spin) and kill it.
 * Context: supervisor thread.
 */
void rt_session_uffd_error(struct rt_session *s)
{
	int fl = fcntl(s->uffd, F_GETFL);

	if (fl >= 0 && !(fl & O_NONBLOCK)) {
		fcntl(s->uffd, F_SETFL, fl | O_NONBLOCK);
		rt_session_violation(s, "its userfaultfd was made blocking");
	}
}

/* ---- the agent's messages ---- */

/* rt_present_scan(): track the pages of run [@a, @b) the states do not know. */
static void learn_run(void *arg, uint64_t a, uint64_t b)
{
	struct rt_session *s = arg;
	struct pg_tree *t = &s->sup->tree;
	uint64_t v;

	for (; a < b; a += PAGE)
		if (!pager_get(&s->pg, a, &v)) {
			/* filled before the range was seen: counted */
			if (t->resident >= t->budget + s->sup->slack) {
				s->sup->st.learnt_over++;
				s->sup->st.over_budget++;
			}
			pager_learn(&s->pg, a);
		}
}

/*
 * RT_REG: the shim registered [@start, @end) (ordered, page aligned, in
 * user space, at most RT_RANGES_MAX runs, or a violation). Its present
 * pages are learnt from pagemap. Context: supervisor thread.
 */
static void reg_range(struct rt_session *s, uint64_t start, uint64_t end)
{
	int err;

	if (start >= end || (start | end) & (PAGE - 1) || end > rt_user_top()) {
		rt_session_violation(s, "a registered range out of order, unaligned or outside "
				     "user space");
		return;
	}
	if ((err = rt_ranges_add(&s->pg.ranges, start, end))) {
		rt_session_violation(s, err == -E2BIG ? "more registered ranges than mappings "
				     "can exist" : "no memory for its registered ranges");
		return;
	}
	if (s->sup->features & UFFD_FEATURE_WP_ASYNC) {
		/* The same whole VMAs, for written bits as well */
		struct uffdio_register r = {
			.range = { .start = start, .len = end - start },
			.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
		};

		if (!ioctl(s->uffd, UFFDIO_REGISTER, &r))
			s->pg.wp = true;
	}
	if (s->pg.pagemap >= 0)
		rt_present_scan(s->pg.pagemap, start, end, learn_run, s);
}

/* Slot @i of the answered batch, settled by its status (pager_settle()). */
static void settle_one(struct rt_session *s, uint32_t i)
{
	struct rt_sup *sup = s->sup;
	const struct rt_evict *m = &s->answer;
	int st = i < m->n ? m->status[i] : -EINVAL, ret;
	uint64_t a = s->pg.batch_addr[i], v, before = sup->tree.st.evicted;

	if (st >= 0 && pager_get(&s->pg, a, &v) && PT_STATE(v) == PS_EVICTING &&
	    PT_IDX(v) == i && dbg_unwritten(s, i))
		dbg_say(s, &sup->st.dbg_xfer_zero, "xfer-zero", a);
	ret = pager_settle(&s->pg, i, st, s->xfer + (uint64_t)i * PAGE);
	if (ret == -ENOSPC) {
		pager_settle(&s->pg, i, -ENOSPC, NULL);
		rt_session_kill(s, PG_NO_ROOM);
	} else if (ret == 1) {
		rt_fork_unshared(s, a);	/* made exclusive first: maybe a copy */
	}
	if (s->forked)
		sup->st.child_evicted += sup->tree.st.evicted - before;
}

/**
 * rt_session_batch_step() - store up to @max pages of the answered batch
 * (a few per turn, so that a fault waits for a few compressions, not 64;
 * the pages not stored yet stay EVICTING); after its last the batch ends.
 * Context: supervisor thread.
 * Return: true if pages of it are left.
 */
bool rt_session_batch_step(struct rt_session *s, uint32_t max)
{
	struct rt_sup *sup = s->sup;

	if (s->batch != RT_B_ANSWERED)
		return false;
	while (max-- && s->pg.batch_done < s->pg.batch_n) {
		settle_one(s, s->pg.batch_done);
		PAGER_CHECK(&s->pg);
	}
	if (s->pg.batch_done < s->pg.batch_n)
		return true;
	sup->stalled = pager_batch_end(&s->pg) == 0;
	sup->inflight--;
	s->batch = RT_B_NONE;
	return false;
}

/* The agent's answer @m to the batch out: kept, stored by steps. */
static void batch_done(struct rt_session *s, const struct rt_evict *m)
{
	s->answer = *m;
	s->batch = RT_B_ANSWERED;
	rt_session_batch_step(s, RT_STEP_PAGES);
}

/**
 * rt_session_prefork() - while a fork is prepared, wait for the batch
 * out and, without fork events, bring every SWAPPED page in; then answer
 * PREFORK_DONE. Context: supervisor thread.
 */
void rt_session_prefork(struct rt_session *s)
{
	struct rt_simple done = { .type = RT_PREFORK_DONE };
	int err;

	if (s->phase != RT_PH_PREFORK || s->batch != RT_B_NONE || s->copying)
		return;
	if (!rt_fork_events_on(s->sup)) {
		err = pager_swapin_all(&s->pg);
		if (err == -EAGAIN && !s->dead)
			return;
		if (err && err != -EAGAIN)
			rt_session_kill(s, err == -ENOMEM ? "the supervisor is out of memory" :
					"a page cannot be read back");
		s->sup->st.forks++;
	}
	send(s->sock, &done, sizeof(done), MSG_NOSIGNAL);
	s->phase = RT_PH_FORKING;
}

/* RT_LOG: the shim's message, on our stderr, its non-printable bytes '?'
 * (they are the program's: it cannot drive a terminal). */
static void say_log(struct rt_session *s, const struct rt_log *lg)
{
	char text[sizeof(lg->text) + 1];
	uint32_t n = lg->len < sizeof(lg->text) ? lg->len : (uint32_t)sizeof(lg->text);

	while (n && lg->text[n - 1] == '\n')
		n--;
	for (uint32_t i = 0; i < n; i++)
		text[i] = lg->text[i] >= 0x20 && lg->text[i] < 0x7f ? lg->text[i] : '?';
	text[n] = 0;
	fprintf(stderr, "uswap run: pid %d says: %s\n", (int)s->pid, text);
}

/* @tid if it is a thread of @s's process (its agent, RT_AGENT_UP says),
 * else 0. Context: supervisor thread. */
static pid_t agent_thread(const struct rt_session *s, uint32_t tid)
{
	char path[64];

	if (!tid || tid > INT32_MAX || s->pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%u", (int)s->pid, tid);
	return access(path, F_OK) ? 0 : (pid_t)tid;
}

/** rt_session_sock() - read and handle the agent's messages. Context:
 * supervisor thread. Return: 0, -EPIPE (the process has gone). */
int rt_session_sock(struct rt_session *s)
{
	static struct rt_evict m;
	ssize_t r;

	while ((r = recv(s->sock, &m, sizeof(m), MSG_DONTWAIT | MSG_TRUNC)) > 0) {
		if ((size_t)r < sizeof(uint32_t) || (size_t)r != rt_msg_size(m.type)) {
			rt_session_violation(s, "a message of the wrong size or type");
			continue;
		}
		switch (m.type) {
		case RT_REG: {
			struct rt_range_msg *g = (struct rt_range_msg *)&m;

			reg_range(s, g->start, g->end);
			break;
		}
		case RT_EVICTED:
			if (s->batch != RT_B_OUT)
				break;	/* none asked for */
			if (m.n != s->pg.batch_n) {
				rt_session_violation(s, "an eviction answer for another batch");
				break;
			}
			batch_done(s, &m);
			break;
		case RT_LOG:
			say_log(s, (const struct rt_log *)&m);
			break;
		case RT_KICK:		/* the move lock is free: read the uffd now */
			if (s->uffd_held)
				rt_session_uffd(s);
			break;
		case RT_AGENT_UP: {	/* batches may be sent now */
			struct rt_simple up;

			memcpy(&up, &m, sizeof(up));
			s->agent_up = true;
			s->agent_tid = agent_thread(s, up.arg);
			break;
		}
		case RT_PREFORK:
			s->phase = RT_PH_PREFORK;
			break;
		case RT_POSTFORK:
			if (s->phase == RT_PH_PREFORK || s->phase == RT_PH_FORKING)
				s->phase = RT_PH_RUN;
			break;
		default:
			break;
		}
	}
	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
		return -EPIPE;
	rt_session_retry(s);
	return 0;
}

/**
 * rt_session_orphan() - the agent's socket closed while the process lives:
 * settle the batch out by pagemap (present: not moved; absent: moved, its
 * bytes in the transfer buffer). Context: supervisor thread.
 */
void rt_session_orphan(struct rt_session *s)
{
	struct rt_evict m = { .type = RT_EVICTED, .n = s->pg.batch_n };

	s->phase = RT_PH_ORPHAN;
	if (s->batch == RT_B_NONE)
		return;
	if (s->batch == RT_B_ANSWERED) {	/* the answer came: store the rest now */
		rt_session_batch_step(s, RT_BATCH);
		return;
	}
	for (uint32_t i = 0; i < s->pg.batch_n; i++) {
		uint64_t pm = 0;

		/* unreadable (the mm is going) counts as not moved */
		if (s->pg.pagemap < 0 ||
		    pread(s->pg.pagemap, &pm, 8, (off_t)(s->pg.batch_addr[i] / PAGE * 8)) != 8 ||
		    (pm >> 63) & 1)
			m.status[i] = -EBUSY;	/* still there: stays resident */
		else
			m.status[i] = 0;
	}
	batch_done(s, &m);
	rt_session_batch_step(s, RT_BATCH);
}

/**
 * rt_session_mm_alive() - whether the process's mm still exists (not
 * exited or exec'd): a zero page into the staging area fails with ESRCH
 * on a gone mm. Context: supervisor thread. Return: true while it lives.
 */
bool rt_session_mm_alive(struct rt_session *s)
{
	struct uffdio_zeropage z = {
		.range = { .start = s->staging, .len = PAGE },
		.mode = UFFDIO_ZEROPAGE_MODE_DONTWAKE,
	};

	if (!ioctl(s->uffd, UFFDIO_ZEROPAGE, &z))
		return true;
	return errno != ESRCH;
}

/**
 * rt_session_create() - a session for process @pid (the kernel's word)
 * that sent @h on @sock, with its uffd (rt_uffd_adopt() done), its pidfd
 * (taken, or -1) and transfer buffer @memfd.
 * Context: supervisor thread.
 * Return: 0 and *@out; -ENOMEM, or the error of mapping the buffer.
 */
int rt_session_create(struct rt_sup *sup, int sock, pid_t pid, int pidfd,
		      const struct rt_hello *h, int uffd, int memfd, struct rt_session **out)
{
	struct rt_session *s = uswap_calloc(1, sizeof(*s));
	char path[64];
	int err;

	if (!s)
		return -ENOMEM;
	s->sup = sup;
	s->pid = pid;
	s->sock = sock;
	s->uffd = uffd;
	s->staging = h->staging;
	s->staging_end = h->staging + h->staging_len;
	s->xfer = rt_xfer_map(memfd);
	if (IS_ERR_XFER(s->xfer)) {
		err = (int)(intptr_t)s->xfer;
		free(s);
		return err;
	}
	s->ctl = rt_xfer_ctl(s->xfer);
	if ((err = pager_init(&s->pg, &sup->tree, &rt_session_ops, s))) {
		munmap(s->xfer, RT_XFER_BYTES);
		free(s);
		return err;
	}
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	s->pg.pagemap = open(path, O_RDONLY | O_CLOEXEC);
	s->pidfd = pidfd;
	s->phase = RT_PH_RUN;
	s->next = sup->sessions;
	sup->sessions = s;
	sup->st.sessions++;
	*out = s;
	return 0;
}

/** rt_session_destroy() - the process has gone: free @s, unlinked by the
 * caller. Context: supervisor thread. */
void rt_session_destroy(struct rt_session *s)
{
	if (s->copying)		/* its uffd in the copy thread's hands */
		rt_sup_copied(s->sup, true);
	rt_fork_parent_gone(s);		/* children waiting on its batch */
	if (s->batch != RT_B_NONE)
		s->sup->inflight--;
	if (s->pg.pagemap >= 0)
		close(s->pg.pagemap);
	pager_destroy(&s->pg);
	if (s->xfer)
		munmap(s->xfer, RT_XFER_BYTES);
	if (s->sock >= 0)
		close(s->sock);
	close(s->uffd);
	if (s->pidfd >= 0)
		close(s->pidfd);
	free(s);
}
