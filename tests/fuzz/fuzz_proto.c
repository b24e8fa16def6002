/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the protocol handler of `uswap run`'s supervisor, in
 * process (src/runtime/supervisor.c, session.c, fork.c, peer.c). The input
 * is a configuration byte, then up to FZ_MAX_OPS operations, each an op
 * byte (low nibble: the op; high nibble: which session) and its fields:
 * raw and structured agent messages on a session's socket
 * (rt_session_sock()), eviction batches (rt_session_evict()) and answers
 * to them, honest (the pages really moved out with UFFDIO_MOVE) or not,
 * hellos through fresh connections with chosen fields and descriptors
 * (rt_sup_hello()), `uswap stat` requests, turns of the event loop, and
 * the program's own faults and events (a touch, MADV_DONTNEED, munmap,
 * mremap) read from its uffd (rt_session_uffd()). The pager's invariants
 * (fz_check_all()) are checked after every operation; after each input
 * every session is destroyed, and the supervisor's totals and the
 * process's descriptor count must be back at their baseline. Any failure
 * aborts with a message.
 *
 * Two helper processes, forked at the first input (before any thread),
 * play the program's tree. Both are children of ours, so SO_PEERCRED
 * names a process of the tree and rt_sup_hello() takes their hellos.
 *  - conn answers a request with a fresh SOCK_SEQPACKET socketpair (both
 *    ends sent back, then closed in conn) or a fresh userfaultfd of its
 *    own mm (the hellos' uffds).
 *  - prog holds the base session's memory (fz_arena: a staging area, a
 *    region whose first half is filled, a spare area for mremap, a sink
 *    for the pages moved out), makes its uffd, and touches pages or makes
 *    events on request; it may block in a fault until the supervisor
 *    serves it (prog_settle() tells a wait the supervisor owes from a
 *    fault it dropped). Its agent thread moves pages out for the honest
 *    answers, as the shim's agent does (UFFDIO_MOVE works only from a
 *    thread of the mm).
 * No uffd is of the fuzzer's own mm: with UFFD_FEATURE_WP_ASYNC an RT_REG
 * registers any range of the process, and a fault of ours on a missing
 * page there, or an madvise() of our allocator, would wait forever for
 * a reader that is ourselves.
 *
 * The sessions get pid 0 and no pidfd once made, so that a violation
 * (rt_session_violation()) kills nobody: it marks the session dead.
 * The target is larger than the other fuzz targets: the helpers and the
 * invariants are most of it. FUZZ_PROTO_TRACE=1 in the environment
 * prints each operation and the sessions' counts after it (to read a
 * reproducer); make_corpus_proto.sh writes the seeds, one scenario each.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "runtime/uffd_ops.h"
#include "runtime/xfer_ctl.h"

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP	4
#endif

#define FZ_PAGE		RT_PAGE
#define FZ_REGION	256	/* pages of the region; the first half filled */
#define FZ_SPARE	256	/* pages after it: mremap's destinations */
#define FZ_SINK		4096	/* pages the honest agent's moves go to */
#define FZ_ARENA	(FZ_REGION + FZ_SPARE)	/* pages prog touches */
/* guard, staging, guard, region, spare, guard, sink, guard */
#define FZ_ARENA_PAGES	(1 + RT_BATCH + 1 + FZ_ARENA + 1 + FZ_SINK + 1)
#define FZ_MAX_OPS	64
#define FZ_MAX_HELLO	8	/* sessions made by hellos in one input */
/* A helper answers in microseconds; this long is a hang (reported here,
 * with where the helper is, before libFuzzer's -timeout=10 would). */
#define FZ_WAIT_NS	5000000000ULL

/* The features the supervisor asks for (supervisor.c, RT_FEATURES_REQUIRED
 * and RT_FEATURES_OPTIONAL); no EVENT_FORK: no FORK event is made here. */
#define FZ_REQUIRED	(UFFD_FEATURE_EVENT_REMAP | UFFD_FEATURE_EVENT_REMOVE | \
			 UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_MOVE)
#define FZ_FEATURES	(FZ_REQUIRED | UFFD_FEATURE_THREAD_ID | UFFD_FEATURE_POISON | \
			 UFFD_FEATURE_WP_ASYNC)

/* The checks are not instrumented for coverage: their branches follow
 * the tables' sizes, which would steer libFuzzer to no purpose. */
#if defined(__clang__)
#define FZ_NO_COVERAGE	__attribute__((no_sanitize("coverage")))
#else
#define FZ_NO_COVERAGE
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern void __sanitizer_report_error_summary(const char *msg) __attribute__((weak));
extern void __sanitizer_print_stack_trace(void) __attribute__((weak));
extern void __sanitizer_set_report_fd(void *fd) __attribute__((weak));

/* prog's memory (addresses in prog). */
struct fz_arena {
	uint64_t staging, region, spare, sink;
};

/* A request to prog, and its answer. */
struct fz_cmd {
	uint32_t op;		/* 'R' reset, 'U' uffd, 'T' touch, 'D' madvise,
				 * 'M' munmap, 'X' mremap */
	uint32_t flag;		/* 'T': a write; 'X': MREMAP_DONTUNMAP */
	uint64_t addr, len, to;
};

struct fz_reply {
	int64_t res;		/* 0, -errno, or -signal (a touch that faulted) */
	struct fz_arena a;	/* 'R' */
};

/* A request to prog's agent thread (with the base uffd), and its answer. */
struct fz_moves {
	uint32_t n;
	uint32_t slot[RT_BATCH];	/* transfer slot of each page */
	uint64_t src[RT_BATCH], dst[RT_BATCH];
};

struct fz_moved {
	int32_t status[RT_BATCH];	/* 0, or the move's -errno */
};

/* One session of the input, and our end of its socket. */
struct fz_sess {
	struct rt_session *s;
	int peer;		/* -1 once hung up */
	bool req;		/* an RT_EVICT came, not answered yet */
	struct rt_evict ev;	/* ... that one */
};

static struct {
	bool ready;
	bool helpers;			/* fz_helpers() ran */
	uint64_t features;		/* the kernel's userfaultfd features */
	int conn, prog;		/* control sockets of the helpers */
	int agent;		/* ... of prog's agent thread */
	pid_t conn_pid, prog_pid;
	int prog_pagemap;
	int memfd;		/* the base session's transfer buffer: one for
				 * all inputs (its pages are not faulted afresh) */
	char *xfer;		/* ... mapped here for good: written through this */
	struct fz_arena a;
	int type;		/* the zram device */
	struct rt_sup sup;
	int nr_fds;		/* our descriptors at the input's start (libFuzzer
				 * opens some between inputs: symbolizer pipes) */
	ino_t ino[4];		/* conn, prog, agent, prog_pagemap: still those */
	bool trace;		/* FUZZ_PROTO_TRACE set: each op and the counts */
} F;

static struct fz_sess S[1 + FZ_MAX_HELLO];	/* [0]: the base session, prog's */
static unsigned int nr_s;
static bool prog_busy;		/* a command sent to prog, not answered */
static uint32_t sink_next;	/* the next free page of the sink */

struct fz_in {
	const uint8_t *p;
	size_t n;
};

/* ---- failures ---- */

/*
 * An invariant broke: say which, on stderr and on the sanitizers' report
 * descriptor (which libFuzzer keeps when -close_fd_mask=2 closes stderr),
 * and abort.
 */
static void __attribute__((noreturn)) fz_fail(const char *what, const char *cond, int line)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "fuzz_proto: %s (%s, line %d)", what, cond, line);
	fprintf(stderr, "%s\n", msg);
	if (__sanitizer_report_error_summary)
		__sanitizer_report_error_summary(msg);
	abort();
}

#define FZ_CHECK(cond, what)	do { if (!(cond)) fz_fail(what, #cond, __LINE__); } while (0)

/* ---- input ---- */

/* The next byte of the input (0 once it is used up), and below 2, 4, 8
 * bytes little-endian. */
static uint8_t in8(struct fz_in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static uint16_t in16(struct fz_in *in)
{
	return (uint16_t)(in8(in) | in8(in) << 8);
}

static uint32_t in32(struct fz_in *in)
{
	return in16(in) | (uint32_t)in16(in) << 16;
}

static uint64_t in64(struct fz_in *in)
{
	return in32(in) | (uint64_t)in32(in) << 32;
}

/* Copy up to @n bytes of the input into @buf (the rest stays as it is). */
static void in_bytes(struct fz_in *in, void *buf, size_t n)
{
	if (n > in->n)
		n = in->n;
	memcpy(buf, in->p, n);
	in->p += n;
	in->n -= n;
}

/* Say on stderr where helper @pid is (a helper that does not answer). */
static void fz_helper_state(pid_t pid)
{
	static const char *const files[] = { "wchan", "stack", "syscall" };
	char path[96], buf[4096];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			int fd;
			ssize_t n;

			snprintf(path, sizeof(path), "/proc/%d/task/%.16s/%s", (int)pid, e->d_name,
				 files[i]);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
			if (fd >= 0)
				close(fd);
			fprintf(stderr, "fuzz_proto: helper %d thread %s %s: %.*s\n", (int)pid,
				e->d_name, files[i], n > 0 ? (int)n : 0, buf);
		}
		/* its stack, on its stderr */
		syscall(SYS_tgkill, (int)pid, atoi(e->d_name), SIGUSR1);
		usleep(200000);
	}
	if (d)
		closedir(d);
}

/* SIGUSR1 in a helper: its stack on its stderr (fz_helper_state()). */
static void fz_helper_usr1(int sig)
{
	(void)sig;
	if (__sanitizer_print_stack_trace)
		__sanitizer_print_stack_trace();
}

/* ---- descriptors over sockets ---- */

/*
 * Send @len bytes of @buf with @n descriptors @fds on @sock, in one
 * SCM_RIGHTS, or two when @split. Return: 0, -errno.
 */
static int fz_sendmsg(int sock, const void *buf, size_t len, const int *fds, int n, bool split)
{
	union {
		char b[2 * CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} c;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int first = split && n > 1 ? 1 : n;

	memset(&c, 0, sizeof(c));
	if (n > 0) {
		struct cmsghdr *cm;

		mh.msg_control = c.b;
		mh.msg_controllen = CMSG_SPACE(first * sizeof(int)) +
				    (first < n ? CMSG_SPACE((n - first) * sizeof(int)) : 0);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(first * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, first * sizeof(int));
		if (first < n) {
			cm = CMSG_NXTHDR(&mh, cm);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN((n - first) * sizeof(int));
			memcpy(CMSG_DATA(cm), fds + first, (n - first) * sizeof(int));
		}
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

/*
 * A helper's answer on @sock: @len bytes into @buf and its descriptor, if
 * any, into *@fd (-1 if none), waiting FZ_WAIT_NS at most. A signal
 * (libFuzzer's SIGALRM for -timeout, every timeout/2 + 1 s, not
 * SA_RESTART) interrupts the wait, which goes on.
 * Context: the fuzzer. Return: the bytes (a helper that died or hangs aborts).
 */
static ssize_t fz_answer(int sock, void *buf, size_t len, int *fd, const char *who)
{
	union {
		char b[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} c;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.b,
			     .msg_controllen = sizeof(c.b) };
	struct pollfd p = { .fd = sock, .events = POLLIN };
	uint64_t t0 = now_ns();
	int k = 0, n;
	ssize_t r;

	for (;;) {
		uint64_t spent = now_ns() - t0;

		n = spent < FZ_WAIT_NS ? poll(&p, 1, (int)((FZ_WAIT_NS - spent) / 1000000)) : 0;
		if (n >= 0 || errno != EINTR)
			break;
	}
	if (n != 1) {
		fz_helper_state(sock == F.conn ? F.conn_pid : F.prog_pid);
		FZ_CHECK(0, who);
	}
	while ((r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	FZ_CHECK(r > 0 && !(mh.msg_flags & MSG_CTRUNC), who);
	fd[0] = fd[1] = -1;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		for (size_t i = 0; cm->cmsg_type == SCM_RIGHTS &&
		     i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int) && k < 2; i++)
			fd[k++] = ((int *)CMSG_DATA(cm))[i];
	return r;
}

/* ---- conn: sockets and uffds of a process of the tree ---- */

/* Fault in a stretch of stack below the helper's loop, so that its loop
 * touches no new page once running (a range of its registered by a
 * session's RT_REG would make such a touch wait for a reader). */
static void __attribute__((noinline)) fz_warm_stack(void)
{
	volatile char pad[128 * 1024];

	for (size_t i = 0; i < sizeof(pad); i += 512)
		pad[i] = 0;
}

/* conn's loop: 'p' a socketpair, 'b' a uffd, 'n' a non-blocking uffd. */
static void conn_main(int ctl)
{
	fz_warm_stack();
	for (;;) {
		uint8_t req;
		int fds[2], n = 0;

		if (recv(ctl, &req, 1, 0) != 1)
			_exit(0);
		if (req == 'p')
			n = socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) ? 0 : 2;
		else
			n = (fds[0] = rt_uffd_open(O_CLOEXEC | (req == 'n' ? O_NONBLOCK : 0))) >= 0;
		fz_sendmsg(ctl, &req, 1, fds, n, false);
		for (int i = 0; i < n; i++)
			close(fds[i]);
	}
}

/* A fresh socketpair made by conn (SO_PEERCRED of both ends names conn):
 * @sv[0] ours, @sv[1] the supervisor's (non-blocking, as accept4() makes it). */
static void conn_pair(int sv[2])
{
	uint8_t req = 'p', a;

	FZ_CHECK(send(F.conn, &req, 1, MSG_NOSIGNAL) == 1, "conn is gone");
	fz_answer(F.conn, &a, 1, sv, "conn did not answer");
	FZ_CHECK(sv[0] >= 0 && sv[1] >= 0, "conn could not make a socketpair");
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
}

/* A fresh uffd of conn's mm, O_NONBLOCK if @nonblock (no UFFDIO_API). */
static int conn_uffd(bool nonblock)
{
	uint8_t req = nonblock ? 'n' : 'b', a;
	int fd[2];

	FZ_CHECK(send(F.conn, &req, 1, MSG_NOSIGNAL) == 1, "conn is gone");
	fz_answer(F.conn, &a, 1, fd, "conn did not answer");
	FZ_CHECK(fd[0] >= 0, "conn could not make a userfaultfd");
	return fd[0];
}

/* ---- prog: the base session's process ---- */

static sigjmp_buf prog_jmp;
static volatile sig_atomic_t prog_touching;	/* prog_jmp is live */
static volatile uint32_t prog_op;		/* the command being served */

/* SIGSEGV or SIGBUS in prog: the end of a touch of an unmapped or
 * poisoned page; anywhere else, said (with the address) and prog exits,
 * and the fuzzer reports it. */
static void prog_signal(int sig, siginfo_t *si, void *uc)
{
	char msg[128];
	int n;

	(void)uc;
	if (prog_touching)
		siglongjmp(prog_jmp, sig);
	n = snprintf(msg, sizeof(msg), "fuzz_proto: prog: signal %d at %p in command '%c'\n",
		     sig, si->si_addr, (char)prog_op);
	if (write(2, msg, (size_t)n) < 0)
		_exit(100 + sig);
	_exit(100 + sig);
}

/* Touch the page at @addr (a write if @write): it may fault, and wait for
 * the supervisor. Return: 0, or -signal (SIGSEGV: unmapped; SIGBUS: poisoned). */
static __attribute__((noinline, no_sanitize_address, no_sanitize_thread))
int64_t prog_touch(uint64_t addr, bool write)
{
	volatile char *p = (volatile char *)(uintptr_t)addr;
	int sig = sigsetjmp(prog_jmp, 1);

	if (sig) {
		prog_touching = 0;
		return -sig;
	}
	prog_touching = 1;
	if (write)
		*p = 1;
	else
		(void)*p;
	prog_touching = 0;
	return 0;
}

static bool prog_layout;	/* munmap or mremap changed the arena's mappings */

/*
 * Bring prog's arena back to its start (no uffd is registered on it by
 * then: the input's sessions, and their uffds, are gone): the first half
 * of the region filled with its pattern, every other page empty. The
 * arena is mapped afresh (guards PROT_NONE) the first time and after a
 * munmap or mremap; else only the pages the input changed are faulted
 * (a page fault is slow on some virtual machines: ~15 us here).
 * Return: 0 and *@a; -errno.
 */
static int64_t prog_reset(struct fz_arena *a)
{
	static char *base;
	const size_t len = (size_t)FZ_ARENA_PAGES * FZ_PAGE;
	char *region;

	if (!base) {
		base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (base == MAP_FAILED) {
			base = NULL;
			return -errno;
		}
		prog_layout = true;
	}
	a->staging = (uint64_t)(uintptr_t)base + FZ_PAGE;
	a->region = a->staging + (RT_BATCH + 1) * FZ_PAGE;
	a->spare = a->region + FZ_REGION * FZ_PAGE;
	a->sink = a->spare + (FZ_SPARE + 1) * FZ_PAGE;
	region = (char *)(uintptr_t)a->region;
	if (!prog_layout) {
		for (unsigned int i = 0; i < FZ_REGION / 2; i++)
			memset(region + (size_t)i * FZ_PAGE, 0x40 + (i & 63), FZ_PAGE);
		if (madvise(region + FZ_REGION / 2 * FZ_PAGE, (FZ_REGION / 2 + FZ_SPARE) * FZ_PAGE,
			    MADV_DONTNEED) ||
		    madvise((char *)(uintptr_t)a->staging, RT_BATCH * FZ_PAGE, MADV_DONTNEED) ||
		    madvise((char *)(uintptr_t)a->sink, FZ_SINK * FZ_PAGE, MADV_DONTNEED))
			return -errno;
		return 0;
	}
	if (mmap(base, len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0) == MAP_FAILED)
		return -errno;
	prog_layout = false;
	mprotect(base, FZ_PAGE, PROT_NONE);
	mprotect((char *)(uintptr_t)a->region - FZ_PAGE, FZ_PAGE, PROT_NONE);
	mprotect((char *)(uintptr_t)a->sink - FZ_PAGE, FZ_PAGE, PROT_NONE);
	mprotect(base + len - FZ_PAGE, FZ_PAGE, PROT_NONE);
	for (unsigned int i = 0; i < FZ_REGION / 2; i++)
		memset(region + (size_t)i * FZ_PAGE, 0x40 + (i & 63), FZ_PAGE);
	return 0;
}

/*
 * prog's agent thread, as the shim's: each request moves pages out of
 * prog with UFFDIO_MOVE on the base uffd that comes with it (only a
 * thread of the mm can: from another process the call is refused), and
 * copies each moved page into its slot of the transfer buffer @arg. The
 * uffd is closed before the answer, so that no copy of it outlives the
 * session (a prog waiting in a fault is let go when the session's is
 * closed). It touches no registered page: the moved ones are present.
 */
static void *prog_agent(void *arg)
{
	char *xfer = arg;
	int sock = 4;

	fz_warm_stack();
	for (;;) {
		union {
			char b[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} c;
		struct fz_moves q;
		struct fz_moved a = { { 0 } };
		struct iovec iov = { .iov_base = &q, .iov_len = sizeof(q) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.b,
				     .msg_controllen = sizeof(c.b) };
		struct cmsghdr *cm;
		int uffd = -1;

		if (recvmsg(sock, &mh, MSG_CMSG_CLOEXEC) != sizeof(q))
			_exit(0);
		cm = CMSG_FIRSTHDR(&mh);
		if (cm && cm->cmsg_type == SCM_RIGHTS)
			memcpy(&uffd, CMSG_DATA(cm), sizeof(int));
		for (uint32_t k = 0; k < q.n && k < RT_BATCH; k++) {
			struct uffdio_move mv = { .dst = q.dst[k], .src = q.src[k], .len = FZ_PAGE };

			while ((a.status[k] = ioctl(uffd, UFFDIO_MOVE, &mv) ? -errno : 0) == -EINTR)
				;
			if (!a.status[k])
				memcpy(xfer + (uint64_t)q.slot[k] % RT_BATCH * FZ_PAGE,
				       (void *)(uintptr_t)q.dst[k], FZ_PAGE);
		}
		if (uffd >= 0)
			close(uffd);
		send(sock, &a, sizeof(a), MSG_NOSIGNAL);
	}
	return NULL;
}

/* prog's loop: one command at a time, answered when done. Its agent
 * thread (prog_agent()) serves descriptor 4 with the transfer buffer,
 * descriptor 5, mapped and faulted in (a page of it missing in a range a
 * session registered would make the agent wait). */
static void prog_main(int ctl)
{
	struct sigaction sa = { .sa_sigaction = prog_signal, .sa_flags = SA_SIGINFO };
	char *xfer = mmap(NULL, RT_XFER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, 5, 0);
	pthread_t agent;

	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	if (xfer == MAP_FAILED)
		_exit(1);
	memset(xfer, 0, RT_XFER_BYTES);
	if (pthread_create(&agent, NULL, prog_agent, xfer))
		_exit(1);
	fz_warm_stack();
	for (;;) {
		struct fz_cmd c;
		struct fz_reply r = { 0 };
		void *a;
		int fd = -1;

		if (recv(ctl, &c, sizeof(c), 0) != sizeof(c))
			_exit(0);
		a = (void *)(uintptr_t)c.addr;
		prog_op = c.op;
		switch (c.op) {
		case 'R':
			r.res = prog_reset(&r.a);
			break;
		case 'U':
			fd = rt_uffd_open(O_CLOEXEC);
			r.res = fd < 0 ? fd : 0;
			break;
		case 'T':
			r.res = prog_touch(c.addr, c.flag);
			break;
		case 'D':
			r.res = madvise(a, c.len, MADV_DONTNEED) ? -errno : 0;
			break;
		case 'M':
			prog_layout = true;
			r.res = munmap(a, c.len) ? -errno : 0;
			break;
		case 'X':
			prog_layout = true;
			r.res = mremap(a, c.len, c.len, MREMAP_MAYMOVE | MREMAP_FIXED |
				       (c.flag ? MREMAP_DONTUNMAP : 0),
				       (void *)(uintptr_t)c.to) == MAP_FAILED ? -errno : 0;
			break;
		}
		fz_sendmsg(ctl, &r, sizeof(r), &fd, fd >= 0, false);
		if (fd >= 0)
			close(fd);
	}
}

/* Send prog command @c (prog idle). */
static void prog_send(const struct fz_cmd *c)
{
	FZ_CHECK(!prog_busy, "one command at a time");
	FZ_CHECK(send(F.prog, c, sizeof(*c), MSG_NOSIGNAL) == sizeof(*c), "prog is gone");
	prog_busy = true;
}

/* Take prog's answer (it is there, or comes within FZ_WAIT_NS): *@r, and
 * its descriptor (or -1). */
static int prog_answer(struct fz_reply *r)
{
	int fd[2];

	FZ_CHECK(fz_answer(F.prog, r, sizeof(*r), fd, "prog did not answer") == sizeof(*r),
		 "prog's answer");
	prog_busy = false;
	return fd[0];
}

/* Whether page @addr is present in prog (pagemap bit 63). */
static bool prog_present(uint64_t addr)
{
	uint64_t pm = 0;

	return pread(F.prog_pagemap, &pm, 8, (off_t)(addr / FZ_PAGE * 8)) == 8 && (pm >> 63);
}

/*
 * Wait until prog has answered its command, or waits for the supervisor:
 * a message unread in its uffd (a fault, or an event whose syscall waits
 * for its read; POLLERR instead of POLLIN when the program made the uffd
 * blocking: the event loop's next turn takes that to
 * rt_session_uffd_error()), a fault the supervisor keeps pending on a page still
 * missing, or a dead session (its process would have been killed). A
 * prog that does neither for FZ_WAIT_NS waits for a fault the supervisor
 * read and dropped: a fault must never be left waiting.
 * Context: the fuzzer; the base session exists.
 */
static void prog_settle(void)
{
	struct rt_session *s = S[0].s;
	uint64_t t0 = now_ns();

	while (prog_busy) {
		struct pollfd p[2] = { { .fd = F.prog, .events = POLLIN },
				       { .fd = s->uffd, .events = POLLIN } };
		bool waits = false;
		struct fz_reply r;

		poll(p, 2, 0);
		if (p[0].revents) {
			int fd = prog_answer(&r);

			FZ_CHECK(fd < 0, "prog sent a descriptor unasked");
			return;
		}
		for (size_t i = 0; i < s->pg.nr_pending && !waits; i++)
			waits = !prog_present(s->pg.pending[i].addr);
		if ((p[1].revents & (POLLIN | POLLERR)) || s->dead || waits)
			return;
		FZ_CHECK(now_ns() - t0 < FZ_WAIT_NS,
			 "the program waits for a fault the supervisor read and dropped");
		poll(p, 2, 2);
	}
}

/* Give prog command @c if it is idle (after settling), and settle. */
static void prog_do(const struct fz_cmd *c)
{
	prog_settle();
	if (prog_busy)
		return;
	prog_send(c);
	prog_settle();
}

/* ---- sessions ---- */

/* Our end of each session's socket: what the supervisor sent. An RT_EVICT
 * is kept for the answer; anything else is read and dropped, and
 * everything once the session is an orphan's (a violation shuts its socket
 * down, its batch settled already). */
static void fz_drain(struct fz_sess *fs)
{
	static union {
		struct rt_evict ev;
		char b[1 << 16];
	} m;
	ssize_t r;

	while (fs->peer >= 0 && (r = recv(fs->peer, &m, sizeof(m), MSG_DONTWAIT)) > 0) {
		if (r != sizeof(m.ev) || m.ev.type != RT_EVICT || (fs->s->phase == RT_PH_ORPHAN))
			continue;
		FZ_CHECK(m.ev.n >= 1 && m.ev.n <= RT_BATCH, "an RT_EVICT of 1 to RT_BATCH pages");
		FZ_CHECK((fs->s->batch != RT_B_NONE) && m.ev.n == fs->s->pg.batch_n, "an RT_EVICT for the batch out");
		for (uint32_t i = 0; i < m.ev.n; i++)
			FZ_CHECK(!(m.ev.addr[i] & (FZ_PAGE - 1)), "an RT_EVICT of page addresses");
		fs->ev = m.ev;
		fs->req = true;
	}
}

/* fz_drain() of every session. */
static void fz_drain_all(void)
{
	for (unsigned int i = 0; i < nr_s; i++)
		fz_drain(&S[i]);
}

/* The session op byte @sel names: the base one, or (high nibble 8..15,
 * when there are any) one made by a hello. */
static struct fz_sess *fz_target(uint8_t sel)
{
	if (sel >> 4 < 8 || nr_s == 1)
		return &S[0];
	return &S[1 + ((sel >> 4) - 8) % (nr_s - 1)];
}

/* The event loop's read of @fs's socket (never after its hang-up). */
static void fz_sock(struct fz_sess *fs)
{
	if (!(fs->s->phase == RT_PH_ORPHAN) && rt_session_sock(fs->s))
		rt_session_orphan(fs->s);
}

/* Send message @buf (@len bytes) on @fs's socket, and let the supervisor read it. */
static void fz_say(struct fz_sess *fs, const void *buf, size_t len)
{
	if (fs->peer >= 0)
		send(fs->peer, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	fz_sock(fs);
}

/* Unlink session @s from the supervisor's list and destroy it. */
static void fz_destroy(struct rt_session *s)
{
	for (struct rt_session **pp = &F.sup.sessions; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	rt_session_destroy(s);
}

/*
 * The base session, as rt_sup_hello() makes one from a shim's hello:
 * prog's fresh uffd (adopted: O_NONBLOCK, UFFDIO_API), its staging area,
 * region and sink registered (MISSING, as the shim registers them), the
 * sealable transfer memfd (cleared), and a socketpair. Made with prog's
 * pid (so its pagemap is the one read), then given pid 0.
 */
static void fz_base(void)
{
	struct rt_hello h = { .type = RT_HELLO, .staging = F.a.staging,
			      .staging_len = RT_BATCH * FZ_PAGE, .xfer_pages = RT_XFER_PAGES };
	struct fz_cmd c = { .op = 'U' };
	struct fz_reply r;
	struct rt_session *s;
	int uffd, sv[2];

	prog_send(&c);
	uffd = prog_answer(&r);
	FZ_CHECK(uffd >= 0, "prog could not make a userfaultfd");
	FZ_CHECK(rt_uffd_adopt(uffd, F.sup.features) == 0, "the base uffd is adopted");
	FZ_CHECK(!rt_uffd_register(uffd, F.a.staging, RT_BATCH * FZ_PAGE) &&
		 !rt_uffd_register(uffd, F.a.region, FZ_REGION * FZ_PAGE) &&
		 !rt_uffd_register(uffd, F.a.sink, FZ_SINK * FZ_PAGE), "prog's arena registered");
	FZ_CHECK(!socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), "a socketpair");
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	FZ_CHECK(rt_session_create(&F.sup, sv[0], F.prog_pid, -1, &h, uffd, F.memfd, &s) == 0,
		 "the base session is made");
	memset(F.xfer, 0, RT_XFER_BYTES);
	s->pid = 0;
	S[0] = (struct fz_sess){ .s = s, .peer = sv[1] };
	nr_s = 1;
}

/* ---- invariants ---- */

/* Every RESIDENT page of @s has its live entry on its list (coldlist.h; tickets
 * are unique, so counting the live entries is enough): otherwise it is
 * never chosen for eviction. */
static FZ_NO_COVERAGE void fz_check_lru(const struct rt_session *s)
{
	uint64_t live = 0, want = 0, v;

	for (unsigned int l = 0; l < 2; l++) {
		const struct rt_lru_ring *r = &s->pg.lru.ring[l];

		FZ_CHECK(r->len <= r->cap, "an LRU ring holds at most its capacity");
		for (uint64_t k = 0; k < r->len; k++) {
			const struct rt_lru_ent *e = &r->a[(r->head + k) & (r->cap - 1)];

			live += pt_get(&s->pg.tab, e->addr, &v) && PT_STATE(v) == PS_RESIDENT &&
				LRU_TICKET(v) == e->ticket && LRU_ACTIVE(v) == l;
		}
	}
	for (size_t i = 0; i < s->pg.tab.cap; i++) {
		const struct pt_ent *e = &s->pg.tab.e[i];

		if (!e->key || PT_STATE(e->val) != PS_RESIDENT)
			continue;
		FZ_CHECK(LRU_TICKET(e->val), "a resident page is on a list");
		want++;
	}
	FZ_CHECK(live == want, "every resident page has its entry on its LRU list");
}

/*
 * The invariants of session @s (runtime.h, pagetab.h, coldlist.h); its counts
 * are added to *@res, *@unev and *@ipages. @deep: the LRU lists too.
 */
static FZ_NO_COVERAGE void fz_check_session(const struct rt_session *s, uint64_t *res,
					     uint64_t *unev, uint64_t *ipages, bool deep)
{
	uint64_t n_res = 0, n_swp = 0, n_unev = 0, count = 0;
	uint8_t *seen = NULL;

	pager_check(&s->pg);
	FZ_CHECK(rt_ranges_valid(&s->pg.ranges), "the registered ranges are valid");
	FZ_CHECK(s->staging && !(s->staging & (FZ_PAGE - 1)) &&
		 s->staging_end - s->staging == RT_BATCH * FZ_PAGE &&
		 s->staging_end <= rt_user_top(), "the staging area is one batch of pages");
	/* pagetab.h says count < cap / 2; pt_set() lets it reach cap / 2 */
	FZ_CHECK(s->pg.tab.cap >= 64 && !(s->pg.tab.cap & (s->pg.tab.cap - 1)) &&
		 s->pg.tab.count <= s->pg.tab.cap / 2, "the page table's size");
	FZ_CHECK(s->pg.batch_n <= RT_BATCH && s->pg.batch_done <= s->pg.batch_n, "the batch's bounds");
	FZ_CHECK((s->batch != RT_B_NONE) || (!(s->batch == RT_B_ANSWERED) && !s->pg.batch_n), "no batch out: none answered");
	FZ_CHECK(!(s->batch != RT_B_NONE) || s->pg.batch_n, "a batch out has pages");
	FZ_CHECK(s->pg.nr_pending <= s->pg.cap_pending, "pending faults within their array");
	FZ_CHECK(s->pg.next_idx <= (uint64_t)s->pg.nr_chunks * PG_MIRROR_CHUNK &&
		 s->pg.nr_free <= s->pg.next_idx, "mirror indices within the chunks");
	if (s->pg.next_idx)
		FZ_CHECK((seen = calloc(s->pg.next_idx, 1)), "out of memory");
	for (size_t i = 0; i < s->pg.nr_free; i++) {
		uint32_t idx = s->pg.free_idx[i];

		FZ_CHECK(idx < s->pg.next_idx && !seen[idx], "a free mirror index, once");
		seen[idx] = 1;
	}
	for (size_t i = 0; i < s->pg.tab.cap; i++) {
		const struct pt_ent *e = &s->pg.tab.e[i];
		uint32_t idx = PT_IDX(e->val);

		if (!e->key)
			continue;
		count++;
		FZ_CHECK(!(e->key & (FZ_PAGE - 1)), "page addresses are page aligned");
		switch (PT_STATE(e->val)) {
		case PS_UNEVICTABLE:
			n_unev++;
			/* fall through */
		case PS_RESIDENT:
			n_res++;
			break;
		case PS_EVICTING:
		case PS_DEAD:
			n_res++;
			FZ_CHECK((s->batch != RT_B_NONE) && idx < s->pg.batch_n && s->pg.batch_addr[idx] == e->key &&
				 (!(s->batch == RT_B_ANSWERED) || idx >= s->pg.batch_done),
				 "an EVICTING page is its slot's page in the batch out, not settled yet");
			break;
		case PS_SWAPPED:
			n_swp++;
			FZ_CHECK(idx < s->pg.next_idx && !seen[idx],
				 "a swapped page has a mirror index of its own, not free");
			seen[idx] = 1;
			break;
		default:
			FZ_CHECK(0, "a page state of an unforked session");
		}
	}
	free(seen);
	FZ_CHECK(count == s->pg.tab.count, "the page table's count");
	FZ_CHECK(n_res == s->pg.nr_resident,
		 "nr_resident == RESIDENT + EVICTING + DEAD + UNEVICTABLE entries");
	FZ_CHECK(n_swp == s->pg.nr_swapped, "nr_swapped == SWAPPED entries");
	FZ_CHECK(n_unev == s->pg.nr_unevictable, "nr_unevictable == UNEVICTABLE entries");
	if (deep)
		fz_check_lru(s);
	*res += s->pg.nr_resident;
	*unev += s->pg.nr_unevictable;
	if (s->batch != RT_B_NONE)
		*ipages += s->pg.batch_n - s->pg.batch_done;
}

static int fz_fd_count(void);

/* The inode of descriptor @fd (0 if it is not open). */
static ino_t fz_ino(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? 0 : st.st_ino;
}

/*
 * The supervisor's invariants: each session's (its LRU lists too, up to
 * 8192 pages: the cost), and the totals over them; our descriptors are
 * still ours (none closed by the supervisor); with @fds, the process holds
 * exactly the descriptors of the input's start, of the sessions (socket,
 * uffd, pagemap, pidfd), ours of their sockets, and the fork hellos'
 * (socket, memfd): a count of /proc/self/fd, made after the operations
 * that pass descriptors.
 */
static FZ_NO_COVERAGE void fz_check_all(bool fds)
{
	uint64_t res = 0, unev = 0, ipages = 0;
	unsigned int inflight = 0, n = 0;
	int held = F.nr_fds + 2 * (int)F.sup.nr_fork_hellos;

	FZ_CHECK(fz_ino(F.conn) == F.ino[0] && fz_ino(F.prog) == F.ino[1] &&
		 fz_ino(F.agent) == F.ino[2] && fz_ino(F.prog_pagemap) == F.ino[3],
		 "the helpers' descriptors are still ours");
	for (const struct rt_session *s = F.sup.sessions; s; s = s->next, n++) {
		fz_check_session(s, &res, &unev, &ipages, s->pg.tab.count <= 8192);
		inflight += (s->batch != RT_B_NONE);
		held += (s->sock >= 0) + (s->uffd >= 0) + (s->pg.pagemap >= 0) + (s->pidfd >= 0);
	}
	for (unsigned int i = 0; i < nr_s; i++)
		held += S[i].peer >= 0;
	FZ_CHECK(!fds || fz_fd_count() == held, "the descriptors open are those held");
	FZ_CHECK(n == nr_s, "the sessions are those made");
	FZ_CHECK(res == F.sup.tree.resident, "sup->resident == the sum of nr_resident");
	FZ_CHECK(unev == F.sup.tree.unevictable, "sup->unevictable == the sum of nr_unevictable");
	FZ_CHECK(inflight == F.sup.inflight, "sup->inflight == the sessions with a batch out");
	FZ_CHECK(ipages == F.sup.tree.inflight_pages, "sup->inflight_pages == the pages not stored yet");
	FZ_CHECK(F.sup.nr_fork_hellos <= 1, "one fork hello per process at most");
	FZ_CHECK(F.sup.nr_hello == 0, "no connection left waiting");
}

/* The descriptors of this process. */
static FZ_NO_COVERAGE int fz_fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	FZ_CHECK(d, "/proc/self/fd");
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* List the descriptors of this process on stderr (a leak's report). */
static void fz_fd_list(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	fprintf(stderr, "fuzz_proto: %d descriptors, %d before the input:\n", fz_fd_count(),
		F.nr_fds);
	while (d && (e = readdir(d))) {
		char path[300], link[256];
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0 && e->d_name[0] != '.')
			fprintf(stderr, "  %s -> %.*s\n", e->d_name, (int)n, link);
	}
	if (d)
		closedir(d);
}

/* ---- operations ---- */

/* An address near one of the interesting places: prog's areas, 0, the top
 * of user space, or any; plus pages (and bytes) from the input. */
static uint64_t fz_addr(struct fz_in *in)
{
	uint8_t b = in8(in);
	int16_t off = (int16_t)in16(in);
	uint64_t base;

	switch (b & 7) {
	case 0: base = F.a.region; break;
	case 1: base = F.a.spare; break;
	case 2: base = F.a.staging; break;
	case 3: base = F.a.sink; break;
	case 4: base = 0; break;
	case 5: base = rt_user_top(); break;
	case 6: base = in64(in); break;
	default: base = F.a.region + FZ_REGION / 2 * FZ_PAGE; break;	/* the empty half */
	}
	base += (uint64_t)(int64_t)off * FZ_PAGE;
	if (b & 8)
		base += in8(in);
	return base;
}

/* 0: a raw message of any bytes, up to sizeof(struct rt_evict) + 16. */
static void op_raw(struct fz_sess *fs, struct fz_in *in)
{
	static const uint32_t types[] = { RT_REG, RT_EVICTED, RT_LOG, RT_PREFORK, RT_POSTFORK,
					  RT_AGENT_UP, RT_KICK, RT_HELLO, RT_EVICT, RT_STAT,
					  RT_HELLO_FORK, 0 };
	uint8_t buf[sizeof(struct rt_evict) + 16] = { 0 };
	size_t n = in16(in) % (sizeof(buf) + 1);
	uint8_t t = in8(in);

	in_bytes(in, buf, n);
	if (t & 1)
		memcpy(buf, &types[(t >> 1) % (sizeof(types) / sizeof(types[0]))], sizeof(uint32_t));
	fz_say(fs, buf, n);
}

/*
 * The honest agent: the pages of slots @slot (@n of them) of answer @m
 * for @fs's batch are moved out by prog's agent thread (prog_agent())
 * into the sink, their bytes into the transfer slots, and their statuses
 * go into @m: the shim's agent's work. Only the base session's pages in
 * prog's region and spare area are moved (other memory of prog a session
 * learnt stays: prog runs on it; and -EBUSY, as a page the kernel will not
 * move); a slot the supervisor cancelled is not (-ECANCELED).
 */
static void fz_moves(struct fz_sess *fs, struct rt_evict *m, const uint32_t *slot,
		     unsigned int n)
{
	struct fz_moves q = { .n = 0 };
	struct fz_moved a;
	int fd[2];

	for (unsigned int k = 0; k < n; k++) {
		uint32_t i = slot[k];
		uint64_t addr = m->addr[i];

		m->status[i] = -EBUSY;
		if (fs != &S[0] || addr < F.a.region || addr >= F.a.region + FZ_ARENA * FZ_PAGE ||
		    (addr & (FZ_PAGE - 1)) || sink_next == FZ_SINK)
			continue;
		m->status[i] = -ECANCELED;
		if (fs->s->ctl && (atomic_load(&fs->s->ctl->cancel) >> i) & 1)
			continue;
		q.slot[q.n] = i;
		q.src[q.n] = addr;
		q.dst[q.n++] = F.a.sink + (uint64_t)sink_next++ * FZ_PAGE;
	}
	if (!q.n)
		return;
	FZ_CHECK(!fz_sendmsg(F.agent, &q, sizeof(q), &fs->s->uffd, 1, false), "prog's agent is gone");
	fz_answer(F.agent, &a, sizeof(a), fd, "prog's agent did not answer");
	FZ_CHECK(fd[0] < 0, "prog's agent sent a descriptor unasked");
	for (uint32_t k = 0; k < q.n; k++)
		m->status[q.slot[k]] = a.status[k];
}

/* The status of a slot by selector @sel (1..7) of an agent that says it. */
static int32_t fz_status(struct fz_in *in, uint8_t sel)
{
	switch (sel % 8) {
	case 1: return 0;		/* moved, says the agent */
	case 2: return 1;
	case 3: return -EBUSY;
	case 4: return -EAGAIN;
	case 5: return -ECANCELED;
	case 6: return -ENOENT;
	default: return (int32_t)in32(in);
	}
}

/* 2: an answer (RT_EVICTED) to the batch out, or one unasked: a mode
 * byte, a count byte, then a selector byte per slot. Mode bits: 0-2 == 7,
 * or no batch: the count is the input's; 3: every status honest; else
 * a selector per slot (0 honest, fz_moves(); 1..7 fz_status()); 4-5: the
 * transfer slots of pages said moved left, zeroed, or filled. */
static void op_answer(struct fz_sess *fs, struct fz_in *in)
{
	struct rt_evict m = { .type = RT_EVICTED };
	uint8_t mode = in8(in), n = in8(in);
	uint32_t honest[RT_BATCH];
	unsigned int nh = 0;

	m.n = n;
	if (fs->req && (mode & 7) != 7) {
		m.n = fs->ev.n;
		memcpy(m.addr, fs->ev.addr, sizeof(m.addr));
	}
	for (uint32_t i = 0; i < m.n && i < RT_BATCH; i++) {
		uint8_t sel = mode & 8 ? 0 : in8(in);

		if (!(sel % 8)) {
			honest[nh++] = i;
			continue;
		}
		m.status[i] = fz_status(in, sel);
		if (m.status[i] >= 0 && fs->s->xfer && (mode & 0x30))
			memset((fs == &S[0] ? F.xfer : fs->s->xfer) + (uint64_t)i * FZ_PAGE,
			       mode & 0x10 ? 0 : (int)(m.addr[i] >> 12), FZ_PAGE);
	}
	fz_moves(fs, &m, honest, nh);
	fs->req = false;
	fz_say(fs, &m, sizeof(m));
}

/* 3: RT_REG of a range near the interesting addresses. */
static void op_reg(struct fz_sess *fs, struct fz_in *in)
{
	struct rt_range_msg g = { .type = RT_REG };
	uint8_t sel = in8(in);

	g.start = fz_addr(in);
	g.end = sel & 1 ? fz_addr(in) : g.start + ((uint64_t)in16(in) + 1) * FZ_PAGE;
	if (sel & 2)
		g.pad = in32(in);
	fz_say(fs, &g, sizeof(g));
}

/* A descriptor of kind @k (size selector @sz) for a hello. */
static int fz_hello_fd(uint8_t k, uint8_t sz)
{
	static const off_t sizes[8] = { RT_XFER_BYTES, RT_XFER_BYTES - FZ_PAGE, 0,
					RT_XFER_BYTES + FZ_PAGE, 2 * RT_XFER_BYTES, FZ_PAGE,
					RT_XFER_BYTES - 1, RT_XFER_BYTES + 1 };
	struct uffdio_api api = { .api = UFFD_API };
	char path[64];
	int fd = -1, p[2], ro;

	switch (k % 11) {
	case 0:		/* the shim's, of a chosen size */
	case 2:		/* ... sealed against sealing */
	case 3:		/* ... sealed against shrinking already */
	case 4:		/* ... sealed against writing */
	case 10:	/* ... opened read-only */
		fd = memfd_create("fuzz_proto", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (fd < 0)
			return -1;
		if (ftruncate(fd, k % 11 ? (off_t)RT_XFER_BYTES : sizes[sz % 8]))
			break;
		if (k % 11 == 2)
			fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL);
		if (k % 11 == 3)
			fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK);
		if (k % 11 == 4)
			fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE);
		if (k % 11 == 10) {
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			ro = open(path, O_RDONLY | O_CLOEXEC);
			close(fd);
			fd = ro;
		}
		break;
	case 1:		/* a memfd that cannot be sealed */
		fd = memfd_create("fuzz_proto", MFD_CLOEXEC);
		if (fd >= 0 && ftruncate(fd, RT_XFER_BYTES)) {
			close(fd);
			fd = -1;
		}
		break;
	case 5:
		if (pipe2(p, O_CLOEXEC))
			return -1;
		close(p[1]);
		fd = p[0];
		break;
	case 6:
		fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		break;
	case 7:
	case 8:
		fd = conn_uffd(k % 11 == 8);
		break;
	default:	/* a uffd whose handshake was made already */
		fd = conn_uffd(false);
		ioctl(fd, UFFDIO_API, &api);
		break;
	}
	return fd;
}

/* A session a hello made: pid 0 and no pidfd (a violation kills nobody);
 * kept with our end @peer of its socket, or destroyed when FZ_MAX_HELLO
 * are there already. */
static void fz_adopt(struct rt_session *s, int peer)
{
	if (s->pidfd >= 0)
		close(s->pidfd);
	s->pidfd = -1;
	s->pid = 0;
	if (nr_s == 1 + FZ_MAX_HELLO) {
		fz_destroy(s);
		if (peer >= 0)
			close(peer);
		return;
	}
	S[nr_s++] = (struct fz_sess){ .s = s, .peer = peer };
	fz_drain(&S[nr_s - 1]);		/* the RT_HELLO_ACK */
}

/*
 * 4: a hello on a fresh connection. Type byte: HELLO, HELLO_FORK, STAT,
 * RT_REG or any. Flags: 0 staging, 1 staging_len, 2 xfer_pages, 3 size,
 * 7 pid from the input; 4 nothing sent; 5 our end closed first; 6 the
 * descriptors split over two SCM_RIGHTS. Then up to 5 descriptors.
 */
static void op_hello(struct fz_in *in)
{
	static const uint32_t types[] = { RT_HELLO, RT_HELLO, RT_HELLO, RT_HELLO_FORK,
					  RT_HELLO_FORK, RT_STAT, RT_REG, 0 };
	struct {
		struct rt_hello h;
		uint8_t more[8];	/* a hello too long */
	} m = { .h = { .staging_len = RT_BATCH * FZ_PAGE, .xfer_pages = RT_XFER_PAGES,
		       .staging = F.a.staging } };
	struct rt_hello *h = &m.h;
	struct rt_session *before = F.sup.sessions;
	uint8_t t = in8(in), f = in8(in);
	unsigned int nf = in8(in) % 6;
	size_t len = sizeof(*h);
	int sv[2], fds[5];

	h->type = types[t % 8] ? types[t % 8] : in32(in);
	if (f & 1)
		h->staging = in64(in);
	if (f & 2)
		h->staging_len = in64(in);
	if (f & 4)
		h->xfer_pages = in64(in);
	if (f & 8)
		len = in8(in) % (sizeof(m) + 1);
	if (f & 0x80)
		h->pid = (int32_t)in32(in);
	for (unsigned int i = 0; i < nf; i++) {
		uint8_t k = in8(in);

		fds[i] = fz_hello_fd(k, in8(in));
	}
	conn_pair(sv);
	if (!(f & 0x10)) {
		unsigned int n = 0;

		for (unsigned int i = 0; i < nf; i++)	/* those that could be made */
			if (fds[i] >= 0)
				fds[n++] = fds[i];
		nf = n;
		fz_sendmsg(sv[0], &m, len, fds, (int)nf, f & 0x40);
	}
	for (unsigned int i = 0; i < nf; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (f & 0x20) {
		close(sv[0]);
		sv[0] = -1;
	}
	if (!rt_sup_hello(&F.sup, sv[1]))
		close(sv[1]);	/* kept waiting: the event loop's, not ours */
	if (F.sup.sessions != before) {
		FZ_CHECK(F.sup.sessions->next == before && F.sup.sessions->sock == sv[1],
			 "a hello makes one session, on its connection");
		fz_adopt(F.sup.sessions, sv[0]);
	} else if (sv[0] >= 0) {
		close(sv[0]);
	}
}

/* 5: `uswap stat`: one packet of JSON comes back. */
static void op_stat(void)
{
	static char buf[1 << 16];
	struct rt_hello h = { .type = RT_STAT };
	int sv[2];
	ssize_t r;

	conn_pair(sv);
	fz_sendmsg(sv[0], &h, sizeof(h), NULL, 0, false);
	FZ_CHECK(rt_sup_hello(&F.sup, sv[1]), "a stat request is answered at once");
	r = recv(sv[0], buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);
	FZ_CHECK(r > 2 && (size_t)r < sizeof(buf) && buf[0] == '{' && buf[r - 2] == '}' &&
		 buf[r - 1] == '\n', "the stat answer is one JSON object");
	close(sv[0]);
}

/* 6: RT_LOG with text from the input and any length. */
static void op_log(struct fz_sess *fs, struct fz_in *in)
{
	struct rt_log lg = { .type = RT_LOG };
	uint8_t sel = in8(in);

	lg.len = sel & 1 ? in32(in) : in8(in);
	in_bytes(in, lg.text, in8(in) % (sizeof(lg.text) + 1));
	fz_say(fs, &lg, sizeof(lg));
}

/* 7: a message of the shim's simple kind (or one it never sends). */
static void op_simple(struct fz_sess *fs, struct fz_in *in)
{
	static const uint32_t types[] = { RT_AGENT_UP, RT_PREFORK, RT_POSTFORK, RT_KICK,
					  RT_PREFORK_DONE, RT_HELLO_ACK, RT_FORGET, 0 };
	uint8_t sel = in8(in);
	struct rt_simple m = { .type = types[sel % 8] };

	if (!m.type)
		m.type = in32(in);
	if (sel & 8)
		m.arg = in32(in);
	fz_say(fs, &m, sizeof(m));
}

/* 8: the end of a turn of the event loop: each session's batch step,
 * retried faults and prefork, then eviction ahead of demand. */
static void op_turn(void)
{
	for (unsigned int i = 0; i < nr_s; i++) {
		struct rt_session *s = S[i].s;

		if (s->phase == RT_PH_ORPHAN)
			rt_session_mm_alive(s);
		rt_session_batch_step(s, RT_STEP_PAGES);
		rt_session_retry(s);
		rt_session_prefork(s);
	}
	rt_sup_reclaim(&F.sup);
}

/* 9: the uffd's messages read, the move lock as the agent left it. Bits:
 * 0-1 the lock (kept, free, the agent's, the supervisor's); 2 want =
 * bit 3; 4 the uffd made blocking by the program; 5 the POLLERR path. */
static void op_uffd(struct fz_sess *fs, struct fz_in *in)
{
	struct rt_session *s = fs->s;
	uint8_t sel = in8(in);

	if (s->ctl && (sel & 3))
		atomic_store(&s->ctl->lock, (uint32_t)(sel & 3) - 1);
	if (s->ctl && (sel & 4))
		atomic_store(&s->ctl->want, (sel >> 3) & 1);
	if (sel & 0x10)
		fcntl(s->uffd, F_SETFL, fcntl(s->uffd, F_GETFL) & ~O_NONBLOCK);
	if (sel & 0x20)
		rt_session_uffd_error(s);
	else
		rt_session_uffd(s);
	if (S[0].s == s)
		prog_settle();
}

/* 10-13: prog touches a page, or drops, unmaps or moves pages of its
 * region and spare area (the events the supervisor reads from its uffd). */
static void op_prog(uint32_t op, struct fz_in *in)
{
	uint32_t idx = in16(in) % FZ_ARENA, n = in8(in) % 64 + 1, to = in16(in) % FZ_ARENA;
	uint8_t flag = in8(in);
	struct fz_cmd c = { .op = op, .flag = flag & 1, .addr = F.a.region + idx * FZ_PAGE };

	if (idx + n > FZ_ARENA)
		n = FZ_ARENA - idx;
	if (to + n > FZ_ARENA)
		to = FZ_ARENA - n;
	c.len = (uint64_t)n * FZ_PAGE;
	c.to = F.a.region + (uint64_t)to * FZ_PAGE;
	prog_do(&c);
	if (flag & 2) {		/* and the supervisor reads it at once */
		rt_session_uffd(S[0].s);
		prog_settle();
	}
}

/* The event loop's turn by poll(): each session's uffd and socket as
 * they are ready, then the end of the turn (op_turn()). */
static void fz_poll_turn(void)
{
	for (unsigned int i = 0; i < nr_s; i++) {
		struct rt_session *s = S[i].s;
		struct pollfd p[2] = { { .fd = s->uffd_held ? -1 : s->uffd, .events = POLLIN },
				       { .fd = (s->phase == RT_PH_ORPHAN) ? -1 : s->sock, .events = POLLIN } };

		poll(p, 2, 0);
		if ((p[0].revents & POLLIN) || s->uffd_held)
			rt_session_uffd(s);
		else if (p[0].revents & POLLERR)
			rt_session_uffd_error(s);
		if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) && rt_session_sock(s))
			rt_session_orphan(s);
	}
	op_turn();
	prog_settle();
}

/* 14: hang up (below 64: our end of the socket closed, as a program that
 * closes the shim's descriptors), or a turn of the loop by poll(). */
static void op_hangup(struct fz_sess *fs, struct fz_in *in)
{
	if (in8(in) >= 64 || fs->peer < 0) {
		fz_poll_turn();
		return;
	}
	close(fs->peer);
	fs->peer = -1;
	fs->req = false;
	fz_sock(fs);
}

/* 15: a round of the honest agent: a batch of up to the byte's pages
 * asked for if none is out, answered with every page really moved, then
 * stored step by step. */
static void op_agent(struct fz_sess *fs, struct fz_in *in)
{
	struct rt_evict m = { .type = RT_EVICTED };
	uint8_t want = in8(in);

	if (!fs->req && rt_session_evict(fs->s, want % (RT_BATCH + 1)))
		fz_drain(fs);
	if (fs->req) {
		uint32_t all[RT_BATCH];

		m.n = fs->ev.n;
		memcpy(m.addr, fs->ev.addr, sizeof(m.addr));
		for (uint32_t i = 0; i < m.n; i++)
			all[i] = i;
		fz_moves(fs, &m, all, m.n);
		fs->req = false;
		fz_say(fs, &m, sizeof(m));
	}
	for (int k = 0; k < RT_BATCH / RT_STEP_PAGES && (fs->s->batch == RT_B_ANSWERED); k++) {
		rt_session_batch_step(fs->s, RT_STEP_PAGES);
		rt_session_retry(fs->s);
	}
	prog_settle();
}

/* Run the input's next operation. Return: true if descriptors may have
 * passed (a hello, stat, a hang-up). */
static bool fz_op(struct fz_in *in)
{
	uint8_t b = in8(in);
	struct fz_sess *fs = fz_target(b);

	switch (b & 15) {
	case 0: op_raw(fs, in); break;
	case 1: rt_session_evict(fs->s, in8(in) % (RT_BATCH + 1)); break;
	case 2: op_answer(fs, in); break;
	case 3: op_reg(fs, in); break;
	case 4: op_hello(in); break;
	case 5: op_stat(); break;
	case 6: op_log(fs, in); break;
	case 7: op_simple(fs, in); break;
	case 8: op_turn(); break;
	case 9: op_uffd(fs, in); break;
	case 10: op_prog('T', in); break;
	case 11: op_prog('D', in); break;
	case 12: op_prog('M', in); break;
	case 13: op_prog('X', in); break;
	case 14: op_hangup(fs, in); break;
	default: op_agent(fs, in); break;
	}
	return (b & 15) == 4 || (b & 15) == 5 || (b & 15) == 14;
}

/* FUZZ_PROTO_TRACE: the op about to run, and its bytes. */
static void fz_trace_op(const uint8_t *p, size_t n)
{
	static const char *const names[16] = { "raw", "evict", "answer", "reg", "hello", "stat",
						"log", "simple", "turn", "uffd", "touch", "dontneed",
						"unmap", "remap", "hangup", "agent" };

	fprintf(stderr, "fuzz_proto: op %s, target %u:", names[p[0] & 15], p[0] >> 4);
	for (size_t i = 1; i < n && i < 12; i++)
		fprintf(stderr, " %02x", p[i]);
	fprintf(stderr, "\n");
}

/* FUZZ_PROTO_TRACE: each session's counts and pages by state. */
static void fz_trace_state(void)
{
	for (const struct rt_session *s = F.sup.sessions; s; s = s->next) {
		unsigned int st[8] = { 0 };

		for (size_t i = 0; i < s->pg.tab.cap; i++)
			if (s->pg.tab.e[i].key)
				st[PT_STATE(s->pg.tab.e[i].val) & 7]++;
		fprintf(stderr, "fuzz_proto:   session %p: nr_resident %llu (resident %u evicting %u "
			"dead %u unevictable %u) nr_swapped %llu (swapped %u); batch %s%u; %s%s\n",
			(const void *)s, (unsigned long long)s->pg.nr_resident, st[PS_RESIDENT],
			st[PS_EVICTING], st[PS_DEAD], st[PS_UNEVICTABLE],
			(unsigned long long)s->pg.nr_swapped, st[PS_SWAPPED],
			(s->batch != RT_B_NONE) ? "out, pages " : "none ", s->pg.batch_n, s->dead ? "dead " : "",
			(s->phase == RT_PH_ORPHAN) ? "orphan" : "");
	}
}

/* ---- set-up and the input's end ---- */

/*
 * Fork a helper running @fn on its end of a new control socket (its
 * descriptor 3). With @agent, a second socket for its agent thread
 * (descriptor 4, ours into *@agent) and the transfer memfd (5) go too.
 * Every other descriptor of ours is closed there.
 * Return: our end of the control socket.
 */
static int fz_spawn(void (*fn)(int), pid_t *pid, int *agent)
{
	int sv[2], av[2] = { -1, -1 };

	FZ_CHECK(!socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) &&
		 (!agent || !socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, av)),
		 "a socketpair");
	*pid = fork();
	FZ_CHECK(*pid >= 0, "fork");
	if (!*pid) {
		int keep[3] = { fcntl(sv[1], F_DUPFD, 512), agent ? fcntl(av[1], F_DUPFD, 512) : -1,
				agent ? fcntl(F.memfd, F_DUPFD, 512) : -1 };

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGUSR1, fz_helper_usr1);
		if (__sanitizer_set_report_fd)	/* not libFuzzer's, closed below */
			__sanitizer_set_report_fd((void *)(intptr_t)2);
		for (int i = 0; i < 3; i++)
			if (keep[i] >= 0 && dup2(keep[i], 3 + i) < 0)
				_exit(1);
		for (int fd = agent ? 6 : 4; fd < 1024; fd++)
			close(fd);
		fn(3);
		_exit(0);
	}
	close(sv[1]);
	if (agent) {
		close(av[1]);
		*agent = av[0];
	}
	return sv[0];
}

/* Once, before any thread: the helpers, forked from a process of one
 * thread. A thread of the fuzzer's own (libFuzzer's RSS watcher, starting)
 * could hold a lock of the sanitizers' allocator at a later fork, and the
 * helper's thread then hung in it as it started: prog's agent never
 * answered (one seed-corpus run in about 40). Exits 77 (skipped) where
 * userfaultfd is not available. */
static void fz_helpers(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	int fd;

	if (F.helpers)
		return;
	fd = rt_uffd_open(O_CLOEXEC);
	if (fd < 0 || ioctl(fd, UFFDIO_API, &api) ||
	    (api.features & FZ_REQUIRED) != FZ_REQUIRED) {
		fprintf(stderr, "fuzz_proto: skipped: no userfaultfd with MOVE and the "
			"REMOVE/UNMAP/REMAP events here\n");
		exit(77);
	}
	close(fd);
	signal(SIGPIPE, SIG_IGN);
	F.trace = getenv("FUZZ_PROTO_TRACE") != NULL;
	F.memfd = memfd_create("fuzz_proto", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	FZ_CHECK(F.memfd >= 0 && !ftruncate(F.memfd, RT_XFER_BYTES), "a transfer memfd");
	F.conn = fz_spawn(conn_main, &F.conn_pid, NULL);
	F.prog = fz_spawn(prog_main, &F.prog_pid, &F.agent);
	F.features = api.features;
	F.helpers = true;
}

/* libFuzzer calls this before it starts a thread of its own; the
 * regression driver, which starts none, leaves the helpers to fz_init(). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_helpers();
	return 0;
}

/* Once: the helpers (fz_helpers()), the swap device, the mirror's memory,
 * and the supervisor as uswap_runtime_run() fills it. */
static void fz_init(void)
{
	struct uswap_mem_config mc = { .budget_bytes = 1ULL << 20 };
	struct fz_cmd c = { .op = 'R' };
	struct fz_reply r;
	char err[256] = "", path[64];
	int fd, sv[2];

	fz_helpers();
	F.sup.features = F.features & FZ_FEATURES;
	F.type = uswap_swapon_spec("zram:64M", 0, err, sizeof(err));
	FZ_CHECK(F.type >= 0, err);
	FZ_CHECK(!uswap_mem_create(&mc, &F.sup.mem), "the mirror's memory");
	FZ_CHECK(!pg_tree_init(&F.sup.tree, F.sup.mem, 64, RT_EVICT_LRU), "the pager's tree");
	F.sup.tree.pass_over = rt_fork_pass_shared;
	F.sup.tree.pass_arg = &F.sup;
	F.sup.types = &F.type;
	F.sup.nr_types = 1;
	prog_send(&c);
	fd = prog_answer(&r);
	FZ_CHECK(fd < 0 && r.res == 0, "prog's arena");
	F.a = r.a;
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)F.prog_pid);
	F.prog_pagemap = open(path, O_RDONLY | O_CLOEXEC);
	FZ_CHECK(F.prog_pagemap >= 0, "prog's pagemap");
	F.xfer = mmap(NULL, RT_XFER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, F.memfd, 0);
	FZ_CHECK(F.xfer != MAP_FAILED, "the transfer memfd mapped");
	F.ino[0] = fz_ino(F.conn);
	F.ino[1] = fz_ino(F.prog);
	F.ino[2] = fz_ino(F.agent);
	F.ino[3] = fz_ino(F.prog_pagemap);
	/* conn's loop run once each way before any of its memory can be registered */
	conn_pair(sv);
	close(sv[0]);
	close(sv[1]);
	close(conn_uffd(false));
	close(conn_uffd(true));
	F.ready = true;
}

/* The input's end: every session destroyed (prog's uffd closed: prog goes
 * on), the totals back at zero, prog's arena made afresh. */
static void fz_teardown(void)
{
	struct fz_cmd c = { .op = 'R' };
	struct fz_reply r;

	while (F.sup.sessions)
		fz_destroy(F.sup.sessions);
	for (unsigned int i = 0; i < nr_s; i++)
		if (S[i].peer >= 0)
			close(S[i].peer);
	nr_s = 0;
	rt_fork_free_hellos(&F.sup);
	FZ_CHECK(!F.sup.tree.resident && !F.sup.tree.unevictable && !F.sup.inflight &&
		 !F.sup.tree.inflight_pages && !F.sup.nr_fork_hellos && !F.sup.fork_hellos,
		 "the totals are back at zero with no session");
	if (prog_busy)
		FZ_CHECK(prog_answer(&r) < 0, "prog's last answer");
	prog_send(&c);
	FZ_CHECK(prog_answer(&r) < 0 && r.res == 0 && !memcmp(&r.a, &F.a, sizeof(F.a)),
		 "prog's arena made afresh");
	sink_next = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t budgets[4] = { 64, 32, 128, 512 };
	struct fz_in in = { data, size };
	uint8_t cfg = in8(&in);

	if (!F.ready) {
		fz_init();
		fz_base();	/* once through: what opens lazily is not counted */
		fz_teardown();
	}
	F.nr_fds = fz_fd_count();
	F.sup.tree.policy = cfg & 1 ? RT_EVICT_FIFO : RT_EVICT_LRU;
	F.sup.tree.budget = F.sup.resident_budget = budgets[(cfg >> 1) & 3];
	F.sup.slack = cfg & 8 ? 256 : 16;
	F.sup.reclaiming = false;
	F.sup.stalled = false;
	fz_base();
	if (cfg & 0x10) {	/* the shim's start: its agent, its region registered */
		struct rt_simple up = { .type = RT_AGENT_UP };
		struct rt_range_msg g = { .type = RT_REG, .start = F.a.region,
					  .end = F.a.region + FZ_REGION * FZ_PAGE };

		fz_say(&S[0], &up, sizeof(up));
		fz_say(&S[0], &g, sizeof(g));
	}
	fz_check_all(true);
	for (int ops = 0; ops < FZ_MAX_OPS && in.n; ops++) {
		bool fds;

		if (F.trace)
			fz_trace_op(in.p, in.n);
		fds = fz_op(&in);
		fz_drain_all();
		if (F.trace)
			fz_trace_state();
		fz_check_all(fds);
	}
	fz_teardown();
	if (fz_fd_count() != F.nr_fds) {
		fz_fd_list();
		FZ_CHECK(fz_fd_count() == F.nr_fds, "no descriptor left behind by the input");
	}
	return 0;
}
