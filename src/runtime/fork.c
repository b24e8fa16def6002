/* SPDX-License-Identifier: MIT */
/*
 * fork, followed by FORK events (docs/RUNTIME.md, "fork with fork
 * events"): the child's session is a copy of the parent's pager space
 * (pager_fork()), learns its pid from its first fault and meets the
 * child's shim (RT_HELLO_FORK) by that pid.
 * Context of everything here: the supervisor's one thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "runtime/uffd_compat.h"
#include "runtime/uffd_ops.h"
#include "runtime/xfer_ctl.h"
#include "util/alloc.h"

#define PAGE	RT_PAGE
/* Bits of a pagemap entry (Documentation/admin-guide/mm/pagemap.rst). */
#define PM_PRESENT	(1ULL << 63)
#define PM_EXCLUSIVE	(1ULL << 56)	/* mapped by this process alone */

/* @s's pagemap entry for @addr; 0 (not present) when it cannot be read. */
static uint64_t pagemap_one(const struct rt_session *s, uint64_t addr)
{
	uint64_t pm;

	if (s->pg.pagemap < 0 || pread(s->pg.pagemap, &pm, 8, (off_t)(addr / PAGE * 8)) != 8)
		return 0;
	return pm;
}

/* An RT_HELLO_FORK whose session has not named its pid yet. */
struct rt_fork_hello {
	struct rt_fork_hello *next;
	int sock, memfd;
	pid_t pid;		/* the sender, by the kernel's word (SO_PEERCRED) */
};

/* Pending hellos at most: one per process, and this many in all. */
#define RT_FORK_HELLO_MAX	1024

/** rt_fork_events_on() - whether forks are followed by events (else prefork). */
bool rt_fork_events_on(const struct rt_sup *sup)
{
	return (sup->features & UFFD_FEATURE_EVENT_FORK) != 0;
}

/**
 * rt_fork_event() - a FORK event was read from @parent's uffd: make the
 * child's session, with @ufd (the child's uffd, now in our fd table).
 * The child does not run before the event is read (docs/RUNTIME.md).
 * Context: supervisor thread. On failure the supervisor exits (the child
 * would read zeros) and the tree dies by its watchdogs.
 */
void rt_fork_event(struct rt_session *parent, int ufd)
{
	struct rt_sup *sup = parent->sup;
	struct rt_session *c = uswap_calloc(1, sizeof(*c));
	struct uswap_mm_stats ms;
	int err = -ENOMEM;

	fcntl(ufd, F_SETFD, FD_CLOEXEC);
	fcntl(ufd, F_SETFL, O_NONBLOCK);
	if (!c)
		goto fail;
	c->sup = sup;
	c->sock = -1;
	c->pidfd = -1;
	c->uffd = ufd;
	c->forked = true;
	c->phase = RT_PH_UNMET;		/* until its shim's agent is there */
	c->staging = parent->staging;
	c->staging_end = parent->staging_end;
	if ((err = pager_fork(&c->pg, &parent->pg, parent->pg.ops, c)))
		goto fail;
	/* A batch out is settled in the child by its owner's answer. */
	sup->st.fork_inflight += c->pg.inherited;
	uswap_mm_get_stats(c->pg.mm, &ms);
	c->fork_shared = parent->fork_shared = true;
	c->next = sup->sessions;
	sup->sessions = c;
	sup->st.sessions++;
	sup->st.forks++;
	sup->st.fork_events++;
	sup->st.fork_swapped += c->pg.nr_swapped;
	sup->st.fork_swap_dups += ms.swap_pages;
	return;
fail:
	free(c);
	fprintf(stderr, "uswap run: pid %d forked, and its child cannot be followed (%s): "
		"exiting, every process of the tree is killed\n", (int)parent->pid, strerror(-err));
	exit(1);
}

/* rt_present_scan(): track the pages of run [@a, @b) the states do not know. */
static void learn_run(void *arg, uint64_t a, uint64_t b)
{
	struct rt_session *s = arg;

	for (; a < b; a += PAGE)
		pager_learn(&s->pg, a);
}

/* Learn the present pages the states do not know (a parent's REMOVE read
 * before the FORK event, its zap after the copy, leaves such a page). */
static void learn_present(struct rt_session *s)
{
	if (s->pg.pagemap < 0)
		return;
	for (size_t r = 0; r < s->pg.ranges.n; r++)
		rt_present_scan(s->pg.pagemap, s->pg.ranges.v[r].start, s->pg.ranges.v[r].end,
				learn_run, s);
}

/* Send @s's shim the answer and its uffd. Return: 0, -errno. */
static int send_ack(struct rt_session *s, int sock, int err)
{
	struct rt_hello_ack ack = { .type = RT_HELLO_ACK, .err = err,
				    .features = s ? s->sup->features : 0 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} c;
	struct iovec iov = { .iov_base = &ack, .iov_len = sizeof(ack) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (!err) {
		struct cmsghdr *cm;

		mh.msg_control = c.buf;
		mh.msg_controllen = sizeof(c.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &s->uffd, sizeof(int));
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(ack) ? 0 : -errno;
}

/* The forked session @s meets its shim: socket, transfer buffer, uffd. */
static void attach(struct rt_session *s, int sock, int memfd)
{
	char *x = rt_xfer_map(memfd);
	int err = IS_ERR_XFER(x) ? (int)(intptr_t)x : 0;

	close(memfd);
	if (send_ack(s, sock, err) || err) {
		fprintf(stderr, "uswap run: pid %d: the forked child's agent cannot be started (%s): "
			"it keeps its memory\n", (int)s->pid, strerror(err ? -err : errno));
		if (!err)
			munmap(x, RT_XFER_BYTES);
		close(sock);
		return;
	}
	s->xfer = x;
	s->ctl = rt_xfer_ctl(x);
	s->sock = sock;
	fcntl(sock, F_SETFL, O_NONBLOCK);
	learn_present(s);
	s->phase = RT_PH_RUN;	/* batches once the agent says RT_AGENT_UP */
}

/* Match @s (pid known) with an RT_HELLO_FORK of that pid, if one came. */
static void match(struct rt_session *s)
{
	struct rt_sup *sup = s->sup;

	for (struct rt_fork_hello **pp = &sup->fork_hellos; *pp; pp = &(*pp)->next)
		if ((*pp)->pid == s->pid) {
			struct rt_fork_hello *f = *pp;

			*pp = f->next;
			sup->nr_fork_hellos--;
			attach(s, f->sock, f->memfd);
			free(f);
			return;
		}
}

/**
 * rt_fork_fault() - the first fault on a forked session names its pid:
 * @ptid (the child's only thread, its shim still in its fork handler).
 * Meets the child's shim if it has said hello. Context: supervisor thread.
 */
void rt_fork_fault(struct rt_session *s, uint32_t ptid)
{
	char path[64];

	if (!s->forked || s->pid || !ptid)
		return;
	s->pid = (pid_t)ptid;
	s->pidfd = (int)syscall(SYS_pidfd_open, s->pid, 0);
	if (s->pidfd >= 0)
		fcntl(s->pidfd, F_SETFD, FD_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)s->pid);
	s->pg.pagemap = open(path, O_RDONLY | O_CLOEXEC);
	match(s);
}

/* Drop pending hello *@pp (its descriptors closed). */
static void drop_hello(struct rt_sup *sup, struct rt_fork_hello **pp)
{
	struct rt_fork_hello *f = *pp;

	*pp = f->next;
	close(f->sock);
	close(f->memfd);
	free(f);
	sup->nr_fork_hellos--;
}

/* Forget the pending hellos whose process has gone. */
static void prune_hellos(struct rt_sup *sup)
{
	for (struct rt_fork_hello **pp = &sup->fork_hellos; *pp;) {
		struct pollfd p = { .fd = (*pp)->sock, .events = POLLRDHUP };

		if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
			drop_hello(sup, pp);
			continue;
		}
		pp = &(*pp)->next;
	}
}

/**
 * rt_fork_hello() - process @pid (the kernel's word) says hello as a
 * forked child (RT_HELLO_FORK) on @sock with its transfer buffer @memfd:
 * match it with its session by pid, now or at its first fault. A new
 * hello replaces a pending one of the same pid; one whose pid has a
 * session already is refused.
 * Context: supervisor thread; takes @sock and @memfd.
 */
void rt_fork_hello(struct rt_sup *sup, int sock, pid_t pid, int memfd)
{
	struct rt_fork_hello *f;
	int err;

	for (struct rt_session *s = sup->sessions; s; s = s->next) {
		if (s->forked && s->sock < 0 && s->pid == pid) {
			attach(s, sock, memfd);
			return;
		}
		if (s->pid == pid && s->sock >= 0 && s->phase != RT_PH_ORPHAN) {
			err = -EEXIST;	/* it has its session */
			goto refuse;
		}
	}
	for (struct rt_fork_hello **pp = &sup->fork_hellos; *pp; pp = &(*pp)->next)
		if ((*pp)->pid == pid) {
			drop_hello(sup, pp);
			break;
		}
	if (sup->nr_fork_hellos >= RT_FORK_HELLO_MAX)
		prune_hellos(sup);
	f = sup->nr_fork_hellos < RT_FORK_HELLO_MAX ? uswap_malloc(sizeof(*f)) : NULL;
	if (f) {
		*f = (struct rt_fork_hello){ .next = sup->fork_hellos, .sock = sock,
					     .memfd = memfd, .pid = pid };
		sup->fork_hellos = f;
		sup->nr_fork_hellos++;
		return;
	}
	err = -ENOMEM;
refuse:
	send_ack(NULL, sock, err);
	close(sock);
	close(memfd);
}

/** rt_fork_free_hellos() - drop the hellos never matched (at exit). */
void rt_fork_free_hellos(struct rt_sup *sup)
{
	while (sup->fork_hellos)
		drop_hello(sup, &sup->fork_hellos);
}

/**
 * rt_fork_parent_gone() - @parent's session ends with a batch whose
 * answer will not be settled: its heirs settle the slots not told yet by
 * their own pagemap (present: stayed; absent: moved, bytes in the xfer).
 * Context: supervisor thread; before @parent is freed.
 */
void rt_fork_parent_gone(struct rt_session *parent)
{
	for (struct pager *h = parent->pg.heirs; h; h = h->next_heir) {
		struct rt_session *c = h->ops_arg;

		for (uint32_t i = 0; i < h->batch_n; i++) {
			bool present = pagemap_one(c, h->batch_addr[i]) & PM_PRESENT;
			int st = present ? -EBUSY : 0;

			if ((parent->pg.told >> i) & 1)
				continue;	/* settled with the parent's own */
			if (pager_settle(h, i, st, parent->xfer + (uint64_t)i * PAGE) == -ENOSPC) {
				pager_settle(h, i, -ENOSPC, NULL);
				rt_session_kill(c, PG_NO_ROOM);
			}
		}
	}
	pager_release_heirs(&parent->pg);
}

/**
 * rt_fork_mm_alive() - whether a forked session's process still has its
 * address space, for a session with no shim to hang up. The probe fills a
 * zero page at mmap_min_addr, which no program registers: a live mm says
 * ENOENT, a gone one ESRCH. Return: true while the mm lives.
 */
bool rt_fork_mm_alive(struct rt_session *s)
{
	static uint64_t low;
	struct uffdio_zeropage z = { .mode = UFFDIO_ZEROPAGE_MODE_DONTWAKE };

	if (!low) {
		FILE *f = fopen("/proc/sys/vm/mmap_min_addr", "re");
		unsigned long long v = 0;

		if (!f || fscanf(f, "%llu", &v) != 1)
			v = 65536;
		if (f)
			fclose(f);
		low = (v + PAGE - 1) / PAGE * PAGE;
		if (low < PAGE)
			low = PAGE;
	}
	z.range.start = low;
	z.range.len = PAGE;
	if (!ioctl(s->uffd, UFFDIO_ZEROPAGE, &z))
		return true;
	return errno != ESRCH;
}

/**
 * rt_fork_unshared() - @s moved its page at @addr out after a write made
 * it exclusive (make_exclusive() in the shim), so the old page is
 * another's. The session that had it PS_SHARED and now maps it alone is
 * charged for it and evicts it next, as the kernel frees a shared page
 * from every mapping (docs/RUNTIME.md, "Evicting after a fork").
 * Context: supervisor thread, as @s's batch is stored.
 */
void rt_fork_unshared(struct rt_session *s, uint64_t addr)
{
	for (struct rt_session *c = s->sup->sessions; c; c = c->next) {
		uint64_t v;

		if (c == s || !c->fork_shared || c->dead ||
		    !pager_get(&c->pg, addr, &v) || PT_STATE(v) != PS_SHARED)
			continue;
		if ((pagemap_one(c, addr) & (PM_PRESENT | PM_EXCLUSIVE)) !=
		    (PM_PRESENT | PM_EXCLUSIVE))
			continue;	/* still shared (a third process), or gone */
		pager_own(&c->pg, addr);
		s->sup->st.fork_owned++;
		fifo_push(&c->pg.evict_first, addr);
		return;		/* mapped by one process alone */
	}
}

/* Whether a session other than @s has its page at @addr as PS_SHARED:
 * present in both at a fork, and no write of either side seen since
 * (rt_fork_account()). Context: supervisor thread. */
static bool shared_elsewhere(const struct rt_session *s, uint64_t addr)
{
	for (struct rt_session *c = s->sup->sessions; c; c = c->next) {
		uint64_t v;

		if (c != s && c->fork_shared && !c->dead && pager_get(&c->pg, addr, &v) &&
		    PT_STATE(v) == PS_SHARED)
			return true;
	}
	return false;
}

/**
 * rt_fork_hint() - name the pages of @s's batch @m, just picked, that are
 * shared after a fork, for its agent to make exclusive before it moves
 * them (RT_EVICT status 1) rather than after a move refused: a page
 * another session has PS_SHARED, and each page evict_first gave (the old
 * page of a copy-on-write, rt_fork_unshared(), exclusive to nobody since
 * the fork). A wrong name costs the agent a write of nothing.
 * Context: supervisor thread. Return: the pages named.
 */
uint32_t rt_fork_hint(const struct rt_session *s, struct rt_evict *m)
{
	uint32_t named = 0;

	if (!s->fork_shared)
		return 0;
	for (uint32_t i = 0; i < m->n && i < RT_BATCH; i++) {
		m->status[i] = i < s->pg.batch_first || shared_elsewhere(s, m->addr[i]);
		named += (uint32_t)m->status[i];
	}
	return named;
}

/**
 * rt_fork_pass_shared() - the pass_over hook: a page present and mapped by
 * more than one process after a fork gets one more trip through the
 * inactive list, as a referenced page does; the second time, or beyond
 * budget + slack, it is taken (docs/RUNTIME.md, "Evicting after a fork").
 * Context: supervisor thread. Return: true to pass over it now.
 */
bool rt_fork_pass_shared(void *arg, struct pager *p, uint64_t addr)
{
	struct rt_session *s = p->ops_arg;
	struct rt_sup *sup = arg;
	uint64_t v;

	/* only a page another session holds as shared is looked up */
	if (!s->fork_shared || p->pagemap < 0 || !shared_elsewhere(s, addr))
		return false;
	if (p->passed.cap && pt_get(&p->passed, addr, &v)) {
		pt_del(&p->passed, addr);
		return false;		/* its second time at the tail */
	}
	if (sup->tree.resident >= sup->tree.budget + sup->slack ||
	    (pagemap_one(s, addr) & (PM_PRESENT | PM_EXCLUSIVE)) != PM_PRESENT)
		return false;
	if ((!p->passed.cap && pt_init(&p->passed)) || pt_set(&p->passed, addr, 1))
		return false;
	sup->st.shared_passed++;
	return true;
}

/* rt_present_scan(): a PS_SHARED page of the present run [@a, @b) that
 * this process maps alone (it or the other wrote, dropped or exited) is
 * its own now: charged, on the inactive list. */
static void account_run(void *arg, uint64_t a, uint64_t b)
{
	struct rt_session *s = arg;
	uint64_t pm[512], v;

	while (a < b) {
		uint64_t n = (b - a) / PAGE;
		ssize_t got;

		if (n > 512)
			n = 512;
		got = pread(s->pg.pagemap, pm, n * 8, (off_t)(a / PAGE * 8));
		if (got <= 0)
			return;
		n = (uint64_t)got / 8;
		for (uint64_t i = 0; i < n; i++) {
			if ((pm[i] & (PM_PRESENT | PM_EXCLUSIVE)) == (PM_PRESENT | PM_EXCLUSIVE) &&
			    pager_get(&s->pg, a + i * PAGE, &v) && PT_STATE(v) == PS_SHARED) {
				pager_own(&s->pg, a + i * PAGE);
				s->sup->st.fork_owned++;
			}
		}
		a += n * PAGE;
	}
}

/**
 * rt_fork_account() - count for the tree what a fork made private without
 * an event (docs/RUNTIME.md, "The budget after a fork"): a page present in
 * a parent and its child at the fork is charged to the parent alone
 * (PS_SHARED in the child); once one side writes it, the two have a page
 * each, and the child's is found here, from pagemap (PAGEMAP_SCAN for the
 * present runs, their entries for the exclusive bit), and charged to it.
 * Looks after 20 ms or ten times the last look's cost, whichever is
 * later (at most a tenth of the loop), at sessions with shared pages.
 * Context: supervisor thread, once per round of the event loop.
 */
void rt_fork_account(struct rt_sup *sup)
{
	static uint64_t next;
	uint64_t t0 = now_ns() / 1000, took;

	if (t0 < next)
		return;
	for (struct rt_session *s = sup->sessions; s; s = s->next)
		if (s->pg.nr_shared && s->pg.pagemap >= 0 && !s->dead)
			for (size_t r = 0; r < s->pg.ranges.n; r++)
				rt_present_scan(s->pg.pagemap, s->pg.ranges.v[r].start,
						s->pg.ranges.v[r].end, account_run, s);
	took = now_ns() / 1000 - t0;
	next = t0 + (took * 10 > 20000 ? took * 10 : 20000);
}
