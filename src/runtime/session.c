/* SPDX-License-Identifier: MIT */
/*
 * One process of the tree, as the supervisor serves it: its faults
 * (zero-fill, swap-in through the mirror mm), its events (REMOVE, UNMAP,
 * REMAP), its agent's messages (REG, EVICTED, PREFORK, POSTFORK) and the
 * eviction batches sent to it. docs/RUNTIME.md gives the states and races.
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

#define RT_RUN		64	/* pages per fault: sequential prefetch */
#define RT_ZERO_RUN	16	/* pages per fault: zero-fill runs (first touches) */

enum { RT_WAIT_EVENT, RT_WAIT_EVICTING, RT_WAIT_BUDGET };	/* why a fault waits */
#define PAGE		RT_PAGE

static const char zeros[RT_ZERO_RUN * PAGE];

static void resident_add(struct rt_session *s, long n)
{
	struct rt_sup *sup = s->sup;

	s->nr_resident += (uint64_t)n;
	sup->resident += (uint64_t)n;
	if (sup->resident > sup->st.peak_resident)
		sup->st.peak_resident = sup->resident;
}

/*
 * SIGKILL @s's process: through its pidfd when there is one (a pid
 * alone may name another process by the time the signal is sent).
 * Context: supervisor thread.
 */
static void kill_session(struct rt_session *s)
{
	if (s->pidfd >= 0)
		syscall(SYS_pidfd_send_signal, s->pidfd, SIGKILL, NULL, 0);
	else if (s->pid > 0)
		kill(s->pid, SIGKILL);
	s->dead = true;
}

/**
 * rt_session_violation() - @s's process sent what no shim sends (@why):
 * it is killed, with a message, and its socket is shut down, so that
 * nothing more of its is read: the session goes on as an orphan's (its
 * batch settled from pagemap, rt_session_orphan()) until the process is
 * gone. Only that process is touched: the supervisor and the rest of the
 * tree go on.
 * Context: supervisor thread.
 */
void rt_session_violation(struct rt_session *s, const char *why)
{
	if (s->sup->violations++ < 32)
		fprintf(stderr, "uswap run: pid %d broke the protocol (%s): killing it\n",
			(int)s->pid, why);
	if (!s->dead)
		kill_session(s);
	if (s->sock >= 0)
		shutdown(s->sock, SHUT_RDWR);
}

static void oom_kill(struct rt_session *s, const char *why)
{
	if (s->dead || s->pid <= 0)
		return;		/* killed already; or a forked child not named yet */
	fprintf(stderr, "uswap run: %s: killing pid %d as the OOM killer would\n", why, (int)s->pid);
	s->sup->kill_reason = "out of memory and swap (killed by uswap run)";
	kill_session(s);
}

/**
 * rt_session_kill() - kill @s's process as the OOM killer would, saying @why.
 * Context: supervisor thread.
 */
void rt_session_kill(struct rt_session *s, const char *why)
{
	oom_kill(s, why);
}

/*
 * @n pages of @s became (or, negative, stopped being) unevictable: the
 * kernel refused to move them (mlock: UFFDIO_MOVE wants both sides locked
 * or neither). Counted; rt_sup_locked() decides what the budget does.
 * Context: supervisor thread.
 */
static void unevictable_add(struct rt_session *s, long n)
{
	struct rt_sup *sup = s->sup;

	s->nr_unevictable += (uint64_t)n;
	sup->unevictable += (uint64_t)n;
	if (sup->unevictable > sup->st.peak_unevictable)
		sup->st.peak_unevictable = sup->unevictable;
}

/* ---- the mirror: a page index in the session's mm ---- */

static uint64_t mirror_addr(struct rt_session *s, uint32_t idx)
{
	return s->chunk[idx / RT_MIRROR_CHUNK] + (uint64_t)(idx % RT_MIRROR_CHUNK) * PAGE;
}

static int mirror_alloc(struct rt_session *s, uint32_t *idx)
{
	if (s->nr_free) {
		*idx = s->free_idx[--s->nr_free];
		return 0;
	}
	if (s->next_idx == s->nr_chunks * RT_MIRROR_CHUNK) {
		int err;

		if (s->nr_chunks == RT_MIRROR_MAX)
			return -ENOMEM;
		err = uswap_mm_mmap(s->mm, (uint64_t)RT_MIRROR_CHUNK * PAGE, &s->chunk[s->nr_chunks]);
		if (err)
			return err;
		s->nr_chunks++;
	}
	*idx = s->next_idx++;
	return 0;
}

/* Drop the mirror page: its frame freed, its swap entry put. */
static void mirror_free(struct rt_session *s, uint32_t idx)
{
	uswap_mm_madvise_dontneed(s->mm, mirror_addr(s, idx), PAGE);
	if (s->nr_free == s->cap_free) {
		size_t ncap = s->cap_free ? s->cap_free * 2 : 1024;
		uint32_t *n = realloc(s->free_idx, ncap * sizeof(*n));

		if (!n)
			return;		/* the index is leaked, its page is not */
		s->free_idx = n;
		s->cap_free = ncap;
	}
	s->free_idx[s->nr_free++] = idx;
}

/* ---- debug checks (USWAP_DEBUG >= 2) ---- */

/*
 * Three places where a page of zeros can be handed out in place of data
 * (docs/RUNTIME.md, "Wrong data: what is checked"): a zero-fill of a page
 * the states call resident (zero-tracked), a page reported moved whose
 * transfer slot the agent did not write (xfer-zero: the slot still holds
 * the pattern put there when the batch was sent; without it, it would
 * have read as whatever it held, zeros at first), and a mirror read that
 * gives zeros for a page stored non-zero (mirror-zero). Each is counted (`--json`: dbg_*) and the first
 * 16 of each kind are named on stderr with their address.
 */
#if USWAP_DEBUG >= 2
static void dbg_say(struct rt_session *s, uint64_t *count, const char *what, uint64_t addr)
{
	if ((*count)++ < 16)
		fprintf(stderr, "uswap run: DBG %s pid %d 0x%llx\n", what, (int)s->pid,
			(unsigned long long)addr);
}

static bool page_is_zero(const void *p)
{
	const uint64_t *w = p;

	for (size_t i = 0; i < PAGE / 8; i++)
		if (w[i])
			return false;
	return true;
}

/* Note whether the page stored at mirror index @idx is non-zero. */
static void dbg_stored(struct rt_session *s, uint32_t idx, const void *page)
{
	if (idx >= s->dbg_cap) {
		size_t ncap = idx + 1 > 2 * s->dbg_cap ? idx + 1024 : 2 * s->dbg_cap;
		uint8_t *n = realloc(s->dbg_nz, ncap);

		if (!n)
			return;
		memset(n + s->dbg_cap, 0, ncap - s->dbg_cap);
		s->dbg_nz = n;
		s->dbg_cap = ncap;
	}
	s->dbg_nz[idx] = !page_is_zero(page);
}

#define DBG_CANARY	0x5a17c0de0ddba11ULL

/* Fill slot @i of the transfer buffer with the pattern of a slot not written. */
static void dbg_canary(struct rt_session *s, uint32_t i)
{
	uint64_t *w = (uint64_t *)(void *)(s->xfer + (uint64_t)i * PAGE);

	for (size_t k = 0; k < PAGE / 8; k++)
		w[k] = DBG_CANARY ^ k;
}

/* Whether slot @i still holds that pattern. */
static bool dbg_unwritten(struct rt_session *s, uint32_t i)
{
	const uint64_t *w = (const uint64_t *)(const void *)(s->xfer + (uint64_t)i * PAGE);

	for (size_t k = 0; k < PAGE / 8; k++)
		if (w[k] != (DBG_CANARY ^ k))
			return false;
	return true;
}

/* The page read back from mirror index @idx for @addr. */
static void dbg_read(struct rt_session *s, uint32_t idx, uint64_t addr, const void *page)
{
	if (idx < s->dbg_cap && s->dbg_nz[idx] && page_is_zero(page))
		dbg_say(s, &s->sup->st.dbg_mirror_zero, "mirror-zero", addr);
}
#else
static inline void dbg_say(struct rt_session *s, uint64_t *count, const char *what, uint64_t addr)
{
	(void)s; (void)count; (void)what; (void)addr;
}
static inline void dbg_canary(struct rt_session *s, uint32_t i) { (void)s; (void)i; }
static inline bool dbg_unwritten(struct rt_session *s, uint32_t i) { (void)s; (void)i; return false; }
static inline void dbg_stored(struct rt_session *s, uint32_t idx, const void *page)
{
	(void)s; (void)idx; (void)page;
}
static inline void dbg_read(struct rt_session *s, uint32_t idx, uint64_t addr, const void *page)
{
	(void)s; (void)idx; (void)addr; (void)page;
}
#endif

/* ---- faults ---- */

static void wake(struct rt_session *s, uint64_t addr)
{
	rt_uffd_wake(s->uffd, addr, PAGE);
}

/*
 * UFFDIO_COPY @len bytes to @dst; *@done gets the bytes copied
 * (rt_uffd_copy(): a failed run is retried as one page, and a fault is
 * never left waiting).
 */
static int copy_pages(struct rt_session *s, uint64_t dst, const void *src, uint64_t len,
		      uint64_t *done)
{
	int err = rt_uffd_copy(s->uffd, dst, src, len, done);

	if (err && err != -EAGAIN && err != -EEXIST && getenv("USWAP_RUN_DEBUG"))
		fprintf(stderr, "uswap run: copy to 0x%llx (%llu bytes): %s, %llu done\n",
			(unsigned long long)dst, (unsigned long long)len, strerror(-err),
			(unsigned long long)*done);
	return err;
}

/* A page became resident by a first touch: it starts on the inactive list
 * (LRU_AHEAD: mapped by a copy, its first written bit is the copy's). */
static void track_resident_flags(struct rt_session *s, uint64_t addr, uint64_t flags)
{
	if (pt_set(&s->tab, addr, PT_VAL(PS_RESIDENT, 0)))
		return;
	resident_add(s, 1);
	rt_lru_add_flags(&s->lru, &s->tab, addr, false, flags);
}

static void track_resident(struct rt_session *s, uint64_t addr)
{
	track_resident_flags(s, addr, 0);
}

/*
 * A swapped page @addr (its SWAPPED value @old) is resident again: a
 * refault. The workingset test puts it on the active list when it came
 * back within the active list's room (half the budget; docs/RUNTIME.md,
 * "Cold pages"); under --evict fifo every page goes to the one list.
 */
static void track_refault(struct rt_session *s, uint64_t addr, uint64_t old, uint64_t flags)
{
	struct rt_sup *sup = s->sup;
	bool active = sup->policy == RT_EVICT_LRU &&
		      rt_lru_refault(old, sup->st.evicted, sup->budget / 2);

	pt_set(&s->tab, addr, PT_VAL(PS_RESIDENT, 0));
	resident_add(s, 1);
	rt_lru_add_flags(&s->lru, &s->tab, addr, active, flags);
	sup->lru_st.refaults++;
	sup->lru_st.swapin_pages++;
	if (active)
		sup->lru_st.activated++;
}

/*
 * Zero-fill @addr and the absent pages after it in its registered range.
 * Return: 0 served, -EAGAIN retry after the pending event.
 */
static int serve_zero(struct rt_session *s, uint64_t addr, bool tracked, uint64_t room)
{
	const struct rt_range *r = rt_ranges_find(&s->ranges, addr);
	uint64_t n = 1, v, done;
	int err;

	if (!tracked && r)
		while (n < RT_ZERO_RUN && n < room && addr + n * PAGE < r->end &&
		       !pt_get(&s->tab, addr + n * PAGE, &v))
			n++;
	if (tracked)
		dbg_say(s, &s->sup->st.dbg_zero_tracked, "zero-tracked", addr);
	err = copy_pages(s, addr, zeros, n * PAGE, &done);
	for (uint64_t i = 0; i < done / PAGE; i++)
		if (!tracked)
			track_resident_flags(s, addr + i * PAGE, LRU_AHEAD);
	s->sup->st.zero_pages += done / PAGE;
	if (done)
		s->sup->st.zero_fills++;
	if (err == -EAGAIN && !done)
		return -EAGAIN;
	if (err == -EEXIST && !done) {	/* already there: someone served it */
		if (!tracked)
			track_resident(s, addr);
		wake(s, addr);
	}
	return 0;
}

/*
 * Swap @addr in, with the SWAPPED pages after it (sequential prefetch), in
 * one copy; the mirror is dropped only for pages copied.
 * Return: 0 served (or poisoned), -EAGAIN retry after the pending event.
 */
static int serve_swapin(struct rt_session *s, uint64_t addr, uint64_t room)
{
	static char buf[RT_RUN * PAGE];
	uint32_t idx[RT_RUN];
	uint64_t n = 0, v, done, old[RT_RUN];
	int err = 0;

	/* Prefetch only what looks sequential: the page after the last run,
	 * with a window that doubles at each such fault (2, 4, ... RT_RUN)
	 * and falls back to one page at any other: a random fault that
	 * happens to land there brings 2 pages, not 64 (the kernel's swap
	 * readahead sizes its window by hits the same way). */
	if (addr != s->ra_next)
		s->ra_win = 1;
	else
		s->ra_win = s->ra_win < 2 ? 2 : s->ra_win * 2 > RT_RUN ? RT_RUN : s->ra_win * 2;
	if (room > s->ra_win)
		room = s->ra_win;
	while (n < RT_RUN && (n == 0 || n < room) && pt_get(&s->tab, addr + n * PAGE, &v) &&
	       PT_STATE(v) == PS_SWAPPED) {
		idx[n] = PT_IDX(v);
		old[n] = v;
		err = uswap_mm_read(s->mm, mirror_addr(s, idx[n]), buf + n * PAGE, PAGE);
		if (err)
			break;
		dbg_read(s, idx[n], addr + n * PAGE, buf + n * PAGE);
		n++;
	}
	if (!n && !err)
		return 0;	/* no longer swapped: served meanwhile */
	if (!n) {
		if (err == -EIO) {	/* the device lost it: SIGBUS for this page alone */
			if (rt_uffd_poison(s->uffd, addr, PAGE) == -EAGAIN)
				return -EAGAIN;
			fprintf(stderr, "uswap run: pid %d: page 0x%llx lost to a device read error: "
				"SIGBUS on access\n", (int)s->pid, (unsigned long long)addr);
			mirror_free(s, idx[0]);
			pt_del(&s->tab, addr);
			s->nr_swapped--;
			s->sup->st.poisoned++;
			return 0;
		}
		oom_kill(s, "a page cannot be read back");
		return 0;
	}
	err = copy_pages(s, addr, buf, n * PAGE, &done);
	for (uint64_t i = 0; i < done / PAGE; i++) {
		mirror_free(s, idx[i]);
		s->nr_swapped--;
		track_refault(s, addr + i * PAGE, old[i], LRU_AHEAD);
	}
	if (done) {
		s->ra_next = addr + done;
		s->sup->st.swapins++;
		s->sup->st.prefetched += done / PAGE - 1;
	}
	if (err == -EAGAIN && !done)
		return -EAGAIN;
	if (err == -EEXIST && !done)
		wake(s, addr);	/* cannot happen to a SWAPPED page; do not leave a waiter */
	return 0;
}

/*
 * Serve the fault at @addr if it can be now.
 * Return: 0 served or nothing to do, -EAGAIN/-EBUSY leave it pending.
 */
static int serve_fault(struct rt_session *s, uint64_t addr)
{
	struct rt_sup *sup = s->sup;
	uint64_t v, room = RT_RUN;
	bool known = pt_get(&s->tab, addr, &v);

	if (s->dead)
		return 0;
	s->wait_why = RT_WAIT_EVENT;	/* any -EAGAIN below */
	if (addr >= s->staging && addr < s->staging_end)
		return copy_pages(s, addr, zeros, PAGE, &v) == -EAGAIN ? -EAGAIN : 0;
	if (known && (PT_STATE(v) == PS_EVICTING || PT_STATE(v) == PS_DEAD)) {
		s->wait_why = RT_WAIT_EVICTING;
		return -EBUSY;		/* after the batch's answer */
	}
	if (known && PT_STATE(v) != PS_SWAPPED)
		return serve_zero(s, addr, true, 1);	/* dropped without an event we saw */
	if (!s->prefork) {
		if (sup->resident >= sup->budget + sup->slack) {
			/*
			 * No batch out: the last one ended in this turn of the
			 * event loop, before balance() sends the next at its
			 * end. Send it now, so that this fault (and every other
			 * read or retried in this turn) waits for it rather
			 * than going past the line. If none can be sent (no
			 * agent, nothing evictable), or the last batches freed
			 * nothing, the fault is served over the line below:
			 * it never waits for a batch that will not come.
			 */
			if (!sup->inflight && !sup->stalled)
				rt_sup_reclaim(sup);
			if (sup->inflight && !sup->stalled) {
				s->wait_why = RT_WAIT_BUDGET;
				return -EBUSY;	/* wait for eviction, as direct reclaim would */
			}
			sup->st.over_budget++;
		}
		if (sup->resident + RT_RUN > sup->budget + sup->slack)
			room = 1;
	}
	return known ? serve_swapin(s, addr, room) : serve_zero(s, addr, false, room);
}

/* Count a served fault in the latency histogram (supervisor side: from the
 * read of its message to its copy). */
static void fault_served(struct rt_session *s, uint64_t t0)
{
	s->sup->st.lat[rt_lat_bucket(t0, RT_LAT_BUCKETS)]++;
}

/*
 * Keep the fault at @addr pending (read at @t0), counted once by the
 * reason serve_fault() left in s->wait_why.
 * Context: supervisor thread.
 */
static void defer(struct rt_session *s, uint64_t addr, uint64_t t0)
{
	for (size_t i = 0; i < s->nr_pending; i++)
		if (s->pending[i].addr == addr)
			return;
	if (s->nr_pending == s->cap_pending) {
		size_t ncap = s->cap_pending ? s->cap_pending * 2 : 64;
		struct rt_pending *n = realloc(s->pending, ncap * sizeof(*n));

		if (!n) {
			oom_kill(s, "the supervisor is out of memory");
			return;
		}
		s->pending = n;
		s->cap_pending = ncap;
	}
	s->pending[s->nr_pending++] = (struct rt_pending){ addr, t0 };
	s->sup->st.deferred++;
	if (s->wait_why == RT_WAIT_BUDGET)
		s->sup->st.wait_budget++;
	else if (s->wait_why == RT_WAIT_EVICTING)
		s->sup->st.wait_evicting++;
	else
		s->sup->st.wait_event++;
}

/**
 * rt_session_retry() - serve the faults left pending, those that can be.
 * Context: supervisor thread.
 * Return: true if some are still pending.
 */
bool rt_session_retry(struct rt_session *s)
{
	size_t j = 0;

	for (size_t i = 0; i < s->nr_pending; i++) {
		if (serve_fault(s, s->pending[i].addr))
			s->pending[j++] = s->pending[i];
		else
			fault_served(s, s->pending[i].t0);
	}
	s->nr_pending = j;
	return j != 0;
}

/* ---- events ---- */

/*
 * Slot @idx of the batch in flight must not be moved any more: its address
 * was unmapped, dropped or remapped (xfer_ctl.h). Once the answer came the
 * moves are over and nothing is to be said.
 * Context: supervisor thread, the move lock held (rt_session_uffd()).
 */
static void cancel_slot(struct rt_session *s, uint32_t idx)
{
	if (s->ctl && s->inflight && !s->answered && idx < RT_BATCH)
		atomic_fetch_or(&s->ctl->cancel, 1ULL << idx);
}

/* The program dropped [start, end): every page of it reads zeros now. */
static void drop_range(struct rt_session *s, uint64_t start, uint64_t end)
{
	struct pt_ent *e;
	size_t n = pt_collect(&s->tab, start, end, &e);

	for (size_t i = 0; i < n; i++) {
		switch (PT_STATE(e[i].val)) {
		case PS_SWAPPED:
			mirror_free(s, PT_IDX(e[i].val));
			s->nr_swapped--;
			pt_del(&s->tab, e[i].key);
			break;
		case PS_EVICTING:	/* the answer decides; then zeros */
			pt_set(&s->tab, e[i].key, PT_VAL(PS_DEAD, PT_IDX(e[i].val)));
			cancel_slot(s, PT_IDX(e[i].val));
			break;
		case PS_DEAD:
			break;
		case PS_SHARED:		/* rtfork: not counted */
			pt_del(&s->tab, e[i].key);
			break;
		default:
			if (PT_STATE(e[i].val) == PS_UNEVICTABLE)
				unevictable_add(s, -1);
			rt_lru_forget(&s->lru, e[i].val);
			pt_del(&s->tab, e[i].key);
			resident_add(s, -1);
		}
	}
	free(e);
}

/*
 * Forget the entry @val at @key, whatever its state, with its counts: a
 * page that is overwritten (the destination of a REMAP). An EVICTING or
 * DEAD one leaves its slot cancelled; the batch's answer then finds
 * another entry (or none) there and counts the slot as gone.
 */
static void forget_entry(struct rt_session *s, uint64_t key, uint64_t val)
{
	switch (PT_STATE(val)) {
	case PS_SWAPPED:
		mirror_free(s, PT_IDX(val));
		s->nr_swapped--;
		break;
	case PS_EVICTING:
	case PS_DEAD:
		cancel_slot(s, PT_IDX(val));
		resident_add(s, -1);
		break;
	case PS_SHARED:		/* rtfork: not counted */
		break;
	default:
		if (PT_STATE(val) == PS_UNEVICTABLE)
			unevictable_add(s, -1);
		rt_lru_forget(&s->lru, val);
		resident_add(s, -1);
	}
	pt_del(&s->tab, key);
}

/*
 * The program moved [@from, @from + @len) to @to (mremap): the page states
 * move along. Whatever the destination still held is forgotten first: the
 * kernel unmapped it (its UNMAP event left a page of the batch out as
 * DEAD, still counted), or it was never registered with this uffd.
 */
static void remap_range(struct rt_session *s, uint64_t from, uint64_t to, uint64_t len)
{
	struct pt_ent *e, *d;
	size_t n = pt_collect(&s->tab, from, from + len, &e);
	size_t nd;

	for (size_t i = 0; i < n; i++)
		pt_del(&s->tab, e[i].key);
	nd = pt_collect(&s->tab, to, to + len, &d);
	for (size_t i = 0; i < nd; i++)
		forget_entry(s, d[i].key, d[i].val);
	free(d);
	for (size_t i = 0; i < n; i++) {
		uint64_t na = to + (e[i].key - from);
		enum rt_page_state st = PT_STATE(e[i].val);

		pt_set(&s->tab, na, e[i].val);
		if (st == PS_RESIDENT) {	/* same list, as a new entry */
			rt_lru_forget(&s->lru, e[i].val);
			rt_lru_add(&s->lru, &s->tab, na, LRU_ACTIVE(e[i].val));
		}
		if ((st == PS_EVICTING || st == PS_DEAD) && PT_IDX(e[i].val) < RT_BATCH) {
			/* The agent's request names the old address, where a
			 * new mapping may come: the slot is cancelled, and a
			 * move that came first is the page now at na. */
			s->batch_addr[PT_IDX(e[i].val)] = na;
			cancel_slot(s, PT_IDX(e[i].val));
		}
	}
	free(e);
	/* The registration moved with the pages. */
	rt_ranges_move(&s->ranges, from, to, len);
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

	s->sup->st.faults++;
	if (s->sup->fault_last != s) {	/* --poll-us: spin for one alone */
		s->sup->fault_last = s;
		s->sup->fault_switch_ns = t0;
	}
	if (s->forked)
		s->sup->st.child_faults++;
	if (s->forked && !s->pid)	/* rtfork: names the child */
		rt_fork_fault(s, m->arg.pagefault.feat.ptid);
	if (serve_fault(s, a))
		defer(s, a, t0);
	else
		fault_served(s, t0);
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
		drop_range(s, a, b);
		if (m->event == UFFD_EVENT_UNMAP) {
			rt_ranges_sub(&s->ranges, a, b);
			tell_forget(s, a, b);
			s->sup->st.unmaps++;
		} else {
			s->sup->st.removes++;
		}
		break;
	}
	case UFFD_EVENT_REMAP:
		remap_range(s, m->arg.remap.from, m->arg.remap.to, m->arg.remap.len);
		s->sup->st.remaps++;
		break;
	case UFFD_EVENT_FORK:	/* rtfork: fork.c */
		rt_fork_event(s, (int)m->arg.fork.ufd);
		break;
	default:
		break;
	}
}

#define RT_LOCK_SPIN_NS	60000	/* a run's move: 64 pages take ~30 us here */

/*
 * Take @s's move lock, waiting up to RT_LOCK_SPIN_NS for the agent to hand
 * it over (a kick's cross-CPU wake-up costs more: ~50 us here), yielding
 * meanwhile (the agent may be waiting for this CPU). A longer move (the
 * agent preempted) is left to the kick.
 * Context: supervisor thread. Return: true if taken.
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

/**
 * rt_session_uffd() - read and handle what the process's uffd has. Each
 * read, and the handling of the events it returned, is made under the
 * move lock (xfer_ctl.h), which is only tried: if the agent is moving, the
 * uffd is left unread (s->uffd_held) until the agent's RT_KICK or the
 * event loop's next turn. The faults a read returned are served after the
 * lock is let go (a fault read before an event of the same read is then
 * served after it: the two were concurrent in the program, and either
 * order is one it could have seen).
 * Context: supervisor thread.
 * Return: 0, or -errno when the uffd is unusable (the process is gone).
 */
int rt_session_uffd(struct rt_session *s)
{
	struct uffd_msg msg[32];
	ssize_t r = 0;

	for (;;) {
		size_t nf = 0;

		if (s->ctl && !lock_moves(s)) {
			if (!s->uffd_held)
				s->sup->st.lock_busy++;
			s->uffd_held = true;
			break;
		}
		s->uffd_held = false;
		r = rt_uffd_read(s->uffd, msg, sizeof(msg));
		for (ssize_t i = 0; i < r / (ssize_t)sizeof(msg[0]); i++) {
			if (msg[i].event == UFFD_EVENT_PAGEFAULT)
				msg[nf++] = msg[i];	/* nf <= i: kept in order */
			else
				handle_event(s, &msg[i]);
		}
		if (s->ctl)
			rt_ctl_sup_unlock(s->ctl);
		for (size_t i = 0; i < nf; i++)
			handle_fault(s, &msg[i]);
		if (r < (ssize_t)sizeof(msg))
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
 * rt_session_uffd_error() - poll said POLLERR for @s's uffd without
 * POLLIN: the kernel says so of a uffd made blocking (only the program can
 * have made it so: it shares the file). The flag is set again, so the
 * event loop does not spin, and the process is killed for it.
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
	uint64_t v;

	for (; a < b; a += PAGE)
		if (!pt_get(&s->tab, a, &v)) {
			/* filled before we saw the range (MAP_POPULATE by a
			 * raw system call, glibc's own mmap): said, not hidden */
			if (s->sup->resident >= s->sup->budget + s->sup->slack) {
				s->sup->st.learnt_over++;
				s->sup->st.over_budget++;
			}
			track_resident(s, a);
		}
}

/*
 * RT_REG: the shim registered [@start, @end) with the uffd. The range
 * must be ordered, page aligned and in user space (rt_user_top()), and
 * the process may hold at most RT_RANGES_MAX runs: anything else is a
 * violation. The pages present in it are learnt from pagemap by a walk
 * that costs what the range's mappings cost, not its width.
 * Context: supervisor thread.
 */
static void reg_range(struct rt_session *s, uint64_t start, uint64_t end)
{
	int err;

	if (start >= end || (start | end) & (PAGE - 1) || end > rt_user_top()) {
		rt_session_violation(s, "a registered range out of order, unaligned or outside "
				     "user space");
		return;
	}
	if ((err = rt_ranges_add(&s->ranges, start, end))) {
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
			s->wp = true;
	}
	if (s->pagemap >= 0)
		rt_present_scan(s->pagemap, start, end, learn_run, s);
}

/*
 * Page @i of the answered batch: store it in the mirror (compressed by the
 * swap layer) if it was moved, or put it back by its status.
 * Context: supervisor thread.
 */
static void settle_one(struct rt_session *s, uint32_t i)
{
	struct rt_sup *sup = s->sup;
	const struct rt_evict *m = &s->answer;
	uint64_t a = s->batch_addr[i], v;
	int st = i < m->n ? m->status[i] : -EINVAL;
	uint32_t idx;

	sup->inflight_pages--;
	/*
	 * A page unmapped, dropped or gone meanwhile left the resident count
	 * too: the batch is progress, not a stall (counted as moved). Counted
	 * as a stall, it let every fault past budget + slack while the next
	 * batch was out (node's V8 drops its cold pages: 84% over budget).
	 */
	if (!pt_get(&s->tab, a, &v) || PT_IDX(v) != i ||
	    (PT_STATE(v) != PS_EVICTING && PT_STATE(v) != PS_DEAD)) {
		s->batch_moved++;
		return;
	}
	if (PT_STATE(v) == PS_DEAD) {
		pt_del(&s->tab, a);
		resident_add(s, -1);
		s->batch_moved++;
		return;
	}
	if (st >= 0) {	/* moved; 1: after make_exclusive() */
		int err = mirror_alloc(s, &idx);

		if (!err)
			err = uswap_mm_write(s->mm, mirror_addr(s, idx), s->xfer + i * PAGE, PAGE);
		if (!err) {
			dbg_stored(s, idx, s->xfer + i * PAGE);
			if (dbg_unwritten(s, i))
				dbg_say(s, &sup->st.dbg_xfer_zero, "xfer-zero", a);
		}
		if (err) {
			pt_del(&s->tab, a);
			resident_add(s, -1);
			oom_kill(s, "swap is full and the budget is reached");
			return;
		}
		/* the shadow: the eviction clock as it leaves */
		pt_set(&s->tab, a, LRU_SWAPPED(idx, sup->st.evicted));
		resident_add(s, -1);
		s->nr_swapped++;
		sup->st.evicted++;
		sup->st.child_evicted += s->forked;
		s->batch_moved++;
		if (st == 1) {	/* made exclusive first: maybe a copy (rtfork) */
			sup->st.evict_unshared++;
			rt_fork_unshared(s, a);
		}
	} else if (st == -EBUSY || st == -EAGAIN) {	/* rotated, as the kernel's putback */
		rt_lru_add(&s->lru, &s->tab, a, false);
		sup->st.evict_busy++;
	} else if (st == -ECANCELED) {	/* remapped meanwhile: resident at a */
		pt_set(&s->tab, a, PT_VAL(PS_RESIDENT, 0));
		rt_lru_add(&s->lru, &s->tab, a, false);
		sup->st.evict_cancelled++;
	} else if (st == -ENOENT) {
		pt_del(&s->tab, a);
		resident_add(s, -1);
		sup->st.evict_gone++;
		s->batch_moved++;
	} else {
		pt_set(&s->tab, a, PT_VAL(PS_UNEVICTABLE, 0));
		sup->st.evict_other++;
		unevictable_add(s, 1);
	}
}

/**
 * rt_session_batch_step() - store up to @max pages of the answered batch
 * (a batch is stored a few pages per turn of the event loop, so
 * that a fault read meanwhile waits for a few compressions, not for 64);
 * after its last page the batch ends: children forked while it was out
 * are settled (fork.c) and the next batch may be sent. Its pages not
 * stored yet stay EVICTING: a fault on one waits, as for a batch out.
 * Context: supervisor thread.
 * Return: true if pages of it are left.
 */
bool rt_session_batch_step(struct rt_session *s, uint32_t max)
{
	struct rt_sup *sup = s->sup;

	if (!s->answered)
		return false;
	while (max-- && s->batch_next < s->batch_n)
		settle_one(s, s->batch_next++);
	if (s->batch_next < s->batch_n)
		return true;
	rt_fork_batch_done(s, &s->answer);	/* rtfork: children forked meanwhile */
	sup->stalled = s->batch_moved == 0;
	sup->inflight--;
	s->inflight = false;
	s->answered = false;
	s->batch_n = 0;
	s->batch_next = 0;
	s->batch_moved = 0;
	return false;
}

/* The agent's answer @m to the batch in flight: kept, stored by steps. */
static void batch_done(struct rt_session *s, const struct rt_evict *m)
{
	s->answer = *m;
	s->answered = true;
	s->batch_next = 0;
	s->batch_moved = 0;
	rt_session_batch_step(s, RT_STEP_PAGES);
}

/*
 * Read the written bits of the process's registered ranges when a quarter
 * of its resident pages (at least a batch) was evicted since the last
 * read: a page's bit then tells whether it was written in the last
 * stretch of its time on a list.
 */
static void scan_written(struct rt_session *s)
{
	struct rt_sup *sup = s->sup;
	uint64_t every = s->nr_resident / 4 > RT_BATCH ? s->nr_resident / 4 : RT_BATCH;

	if (!s->wp || s->pagemap < 0 || sup->policy != RT_EVICT_LRU ||
	    sup->st.evicted - s->scan_clock < every)
		return;
	s->scan_clock = sup->st.evicted;
	sup->lru_st.scans++;
	for (size_t i = 0; i < s->ranges.n; i++) {
		long n = rt_lru_scan(s->pagemap, &s->tab, s->ranges.v[i].start, s->ranges.v[i].end);

		if (n > 0)
			sup->lru_st.written += (uint64_t)n;
	}
}

/**
 * rt_session_evict() - send one batch of up to @want pages (<= RT_BATCH),
 * the coldest by the LRU (lru.c), if none is out. Pages that other code
 * queued on s->fifo without a list (PT_VAL(PS_RESIDENT, 0)) join the
 * inactive list first.
 * Context: supervisor thread.
 * Return: true if a batch was sent.
 */
bool rt_session_evict(struct rt_session *s, uint64_t want)
{
	struct rt_evict m = { .type = RT_EVICT };
	uint64_t a, v, skipped = 0;

	if (s->inflight || s->no_evict || s->prefork || s->dead || !s->agent_up || s->fork_wait)
		return false;
	if (want > RT_BATCH)
		want = RT_BATCH;
	while (fifo_pop(&s->fifo, &a))
		if (pt_get(&s->tab, a, &v) && PT_STATE(v) == PS_RESIDENT && !LRU_TICKET(v))
			rt_lru_add(&s->lru, &s->tab, a, false);
	scan_written(s);
	/* rtfork: the other half of a shared page another process evicted */
	while (m.n < want && fifo_pop(&s->evict_first, &a))
		if (pt_get(&s->tab, a, &v) && PT_STATE(v) == PS_RESIDENT && LRU_TICKET(v)) {
			rt_lru_forget(&s->lru, v);
			pt_set(&s->tab, a, PT_VAL(PS_EVICTING, m.n));
			s->batch_addr[m.n] = a;
			m.addr[m.n++] = a;
		}
	while (m.n < want && skipped < 4 * RT_BATCH &&
	       rt_lru_pop(&s->lru, &s->tab, &a, s->nr_resident, &s->sup->lru_st)) {
		if (rt_fork_pass_shared(s, a)) {	/* rtfork: a second trip first */
			rt_lru_add(&s->lru, &s->tab, a, false);
			skipped++;
			continue;
		}
		pt_set(&s->tab, a, PT_VAL(PS_EVICTING, m.n));
		s->batch_addr[m.n] = a;
		m.addr[m.n++] = a;
	}
	if (!m.n)
		return false;
	if (s->ctl)	/* the agent reads it only while it serves a batch: none is out */
		atomic_store(&s->ctl->cancel, 0);
	for (uint32_t i = 0; i < m.n && s->xfer; i++)
		dbg_canary(s, i);
	if (send(s->sock, &m, sizeof(m), MSG_NOSIGNAL | MSG_DONTWAIT) != sizeof(m)) {
		for (uint32_t i = 0; i < m.n; i++)
			rt_lru_add(&s->lru, &s->tab, m.addr[i], false);
		return false;
	}
	s->inflight = true;
	s->batch_n = m.n;
	s->sup->inflight++;
	s->sup->inflight_pages += m.n;
	s->sup->st.evict_batches++;
	return true;
}

/**
 * rt_session_prefork() - while a fork is being prepared, wait for the
 * batch in flight; with fork events that is all (the FORK event gives the
 * child its own copy of the states and the mirror, fork.c); without them
 * bring every SWAPPED page in. Answer PREFORK_DONE when done.
 * Context: supervisor thread.
 */
void rt_session_prefork(struct rt_session *s)
{
	struct rt_simple done = { .type = RT_PREFORK_DONE };
	struct pt_ent *e;
	size_t n;

	if (!s->prefork || s->inflight)
		return;
	if (rt_fork_events_on(s->sup)) {
		send(s->sock, &done, sizeof(done), MSG_NOSIGNAL);
		s->prefork = false;
		return;
	}
	n = pt_collect(&s->tab, 0, ~0ULL, &e);
	for (size_t i = 0; i < n; i++)
		if (PT_STATE(e[i].val) == PS_SWAPPED) {
			s->ra_next = e[i].key;	/* long runs, as a sequential read */
			s->ra_win = RT_RUN;
			serve_swapin(s, e[i].key, RT_RUN);
		}
	free(e);
	if (s->nr_swapped && !s->dead)
		return;
	send(s->sock, &done, sizeof(done), MSG_NOSIGNAL);
	s->prefork = false;
	s->sup->st.forks++;
}

/*
 * A message of the shim's for the user (RT_LOG), printed on our stderr,
 * not the program's. Its bytes are the program's: only printable ones are
 * written (any other is a '?'), so that it cannot drive a terminal.
 * Context: supervisor thread.
 */
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

/**
 * rt_session_sock() - read and handle the agent's messages.
 * Context: supervisor thread.
 * Return: 0, or -EPIPE when the process has gone (exit or exec).
 */
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
			if (!s->inflight || s->answered)
				break;	/* none asked for */
			if (m.n != s->batch_n) {
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
		case RT_AGENT_UP:	/* rtfork: batches may be sent now */
			s->agent_up = true;
			break;
		case RT_PREFORK:
			s->prefork = true;
			s->no_evict = true;
			break;
		case RT_POSTFORK:
			s->no_evict = false;
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
 * rt_session_orphan() - the agent's socket closed while the process lives
 * (it closed the shim's descriptors): settle the batch in flight, whose
 * answer will never come. A page of it still present in the process was
 * not moved; one that is not was moved, and its bytes are in the
 * transfer buffer (the agent copies each page right after its move).
 * Context: supervisor thread.
 */
void rt_session_orphan(struct rt_session *s)
{
	struct rt_evict m = { .type = RT_EVICTED, .n = s->batch_n };

	s->orphan = true;
	s->no_evict = true;
	if (!s->inflight)
		return;
	if (s->answered) {	/* the answer came: store the rest now */
		rt_session_batch_step(s, RT_BATCH);
		return;
	}
	for (uint32_t i = 0; i < s->batch_n; i++) {
		uint64_t pm = 0;

		/* Unreadable (the mm is going: exit, exec) counts as not
		 * moved: the slot's bytes are not known to be the page's. */
		if (s->pagemap < 0 ||
		    pread(s->pagemap, &pm, 8, (off_t)(s->batch_addr[i] / PAGE * 8)) != 8 ||
		    (pm >> 63) & 1)
			m.status[i] = -EBUSY;	/* still there: stays resident */
		else
			m.status[i] = 0;
	}
	batch_done(s, &m);
	rt_session_batch_step(s, RT_BATCH);
}

/**
 * rt_session_mm_alive() - whether the process's address space still
 * exists (not exited, not replaced by exec): uffd ioctls on a gone mm fail
 * with ESRCH. The probe maps a zero page into the staging area, which
 * only matters to an agent that is gone too.
 * Context: supervisor thread.
 * Return: true while the mm lives.
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
 * rt_xfer_map() - map the transfer buffer @memfd a shim sent, after
 * checking that it is a memfd as large as the buffer, and sealing it
 * against shrinking (F_SEAL_SHRINK): a smaller file, or one the program
 * truncates later, would kill the supervisor with SIGBUS at the first
 * access. The shim makes it with MFD_ALLOW_SEALING; a file that cannot
 * take the seal (not a memfd, or one made without it) is refused.
 * Context: supervisor thread.
 * Return: the mapping, or a -errno cast to a pointer (IS_ERR_XFER()).
 */
char *rt_xfer_map(int memfd)
{
	struct stat st;
	char *x;
	int seals;

	if (fstat(memfd, &st))
		return (char *)(intptr_t)-errno;
	if (!S_ISREG(st.st_mode))
		return (char *)(intptr_t)-EINVAL;
	if (fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) ||
	    (seals = fcntl(memfd, F_GET_SEALS)) < 0 || !(seals & F_SEAL_SHRINK))
		return (char *)(intptr_t)-EPERM;
	/* The size is read after the seal: it can only grow from here. */
	if (fstat(memfd, &st))
		return (char *)(intptr_t)-errno;
	if (st.st_size < (off_t)RT_XFER_BYTES)
		return (char *)(intptr_t)-EINVAL;
	x = mmap(NULL, RT_XFER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (x == MAP_FAILED)
		return (char *)(intptr_t)-errno;
	madvise(x, RT_XFER_BYTES, MADV_DONTDUMP);	/* the program's pages pass here */
	return x;
}

/**
 * rt_hello_check() - the fields of hello @h that a shim always sends the
 * same way: the transfer buffer's size, and a staging area of exactly one
 * batch, page aligned, in user space. Faults in the staging area are
 * zero-filled and not counted (they are the agent's), so its bound is the
 * bound of what a program can keep out of its budget there.
 * Context: supervisor thread.
 * Return: NULL when they are right, else what is wrong.
 */
const char *rt_hello_check(const struct rt_hello *h)
{
	if (h->xfer_pages != RT_XFER_PAGES)
		return "a transfer buffer of another size";
	if (h->staging_len != (uint64_t)RT_BATCH * PAGE || (h->staging & (PAGE - 1)) ||
	    !h->staging || h->staging > rt_user_top() - h->staging_len)
		return "a staging area that is not one batch of pages in user space";
	return NULL;
}

/**
 * rt_uffd_adopt() - take the userfaultfd @uffd a shim sent: check that it
 * is one (an ioctl meant for a userfaultfd must never reach another
 * device), make it non-blocking (reads of it never wait: rt_session_uffd()
 * reads with RWF_NOWAIT as well, since the program shares the flag), and
 * enable @features on it (UFFDIO_API: it fails on a uffd the program
 * initialised already, with features of its choice).
 * Context: supervisor thread.
 * Return: 0, or -errno (the hello is refused).
 */
int rt_uffd_adopt(int uffd, uint64_t features)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", uffd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -errno;
	link[n] = 0;
	if (strcmp(link, "anon_inode:[userfaultfd]"))
		return -EBADF;
	if (fcntl(uffd, F_SETFL, O_NONBLOCK))
		return -errno;
	if (ioctl(uffd, UFFDIO_API, &api))
		return -errno;
	return 0;
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
	struct rt_session *s = calloc(1, sizeof(*s));
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
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	s->pagemap = open(path, O_RDONLY | O_CLOEXEC);
	if ((err = pt_init(&s->tab)) || (err = uswap_mm_create(sup->mem, &s->mm))) {
		pt_free(&s->tab);
		munmap(s->xfer, RT_XFER_BYTES);
		if (s->pagemap >= 0)
			close(s->pagemap);
		free(s);
		return err;
	}
	s->pidfd = pidfd;
	s->next = sup->sessions;
	sup->sessions = s;
	sup->st.sessions++;
	*out = s;
	return 0;
}

/**
 * rt_session_destroy() - the process has gone: free its mirror (swap
 * entries put), its states and descriptors.
 * Context: supervisor thread; @s is unlinked by the caller.
 */
void rt_session_destroy(struct rt_session *s)
{
	struct rt_sup *sup = s->sup;

	rt_fork_parent_gone(s);		/* rtfork: children waiting on its batch */
	if (s->inflight) {
		sup->inflight--;
		sup->inflight_pages -= s->batch_n - s->batch_next;	/* not stored yet */
	}
	sup->resident -= s->nr_resident;
	sup->unevictable -= s->nr_unevictable;
	uswap_mm_destroy(s->mm);
	pt_free(&s->tab);
	fifo_free(&s->fifo);
	fifo_free(&s->evict_first);
	pt_free(&s->passed);
	rt_lru_free(&s->lru);
	if (s->xfer)
		munmap(s->xfer, RT_XFER_BYTES);
	if (s->sock >= 0)
		close(s->sock);
	close(s->uffd);
	if (s->pagemap >= 0)
		close(s->pagemap);
	if (s->pidfd >= 0)
		close(s->pidfd);
	rt_ranges_free(&s->ranges);
	free(s->free_idx);
	free(s->pending);
	free(s->dbg_nz);
	free(s);
}

/* ---- rtfork: helpers for fork.c ---- */

/**
 * rt_mirror_store() - store one page of bytes @page in @s's mirror.
 * Context: supervisor thread.
 * Return: 0 and *@idx, -errno (no index, or swap full).
 */
int rt_mirror_store(struct rt_session *s, const void *page, uint32_t *idx)
{
	int err = mirror_alloc(s, idx);

	if (!err && (err = uswap_mm_write(s->mm, mirror_addr(s, *idx), page, PAGE)))
		mirror_free(s, *idx);
	return err;
}

/**
 * rt_track_resident() - @addr is present in @s's process: track it.
 * Context: supervisor thread.
 */
void rt_track_resident(struct rt_session *s, uint64_t addr)
{
	track_resident(s, addr);
}
