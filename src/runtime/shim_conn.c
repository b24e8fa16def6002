/* SPDX-License-Identifier: MIT */
/*
 * libuswap_preload.so: the shim `uswap run` puts into every process of the
 * program's tree with LD_PRELOAD. It creates the process's userfaultfd,
 * hands it to the supervisor, registers the private anonymous mappings and
 * runs the agent thread that moves pages out on the supervisor's request,
 * and a watchdog thread that kills the process if the supervisor dies.
 * docs/RUNTIME.md is the design; the shim depends on libc only and
 * touches no memory it registers from its own threads' stacks;
 * shim_internal.h says which file does what.
 *
 * This file is the session: the constructor, the uffd, the transfer
 * buffer, the staging area and the stacks, the connection and its hello,
 * the start of the agent and the watchdog in descriptor tables of their
 * own, the watchdog itself (the supervisor's death, the scans and
 * messages it does for program threads), and the session across fork()
 * (the pthread_atfork handlers).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "runtime/proto.h"
#include "runtime/shim_internal.h"
#include "runtime/uffd_ops.h"
#include "runtime/xfer_ctl.h"

/* The session of this process (shim_internal.h); replaced in a forked child. */
struct shim_session shim = { .uffd = -1, .sock = -1 };

/*
 * The rest of the session, which the other files never see. The fields
 * the threads set (the ids, the table flags, watch_up) are reset by
 * start_threads() before it makes them; the others are written as the
 * fields of struct shim_session are (shim_internal.h).
 */
static struct {
	atomic_bool agent_own, watch_own;	/* the agent's, the watchdog's table is
						 * its own (private_table()) */
	pthread_t agent_thr, watch_thr;		/* set by each thread itself */
	atomic_bool watch_up;			/* the watchdog serves scan requests */
	bool fork_events;			/* the supervisor follows fork() by events */
	int memfd;				/* kept high (keep_high()) */
	dev_t sock_dev;				/* the socket's identity */
	ino_t sock_ino;				/* (shim_sock_ours()) */
	dev_t uffd_dev;				/* the uffd's, noted by start_threads() */
	ino_t uffd_ino;
	pid_t sup_pid;				/* the supervisor, for the watchdog's message */
} S = { .memfd = -1 };

/* Whether the program's own descriptor table holds shim.uffd and shim.sock. It
 * does only from their creation until the agent and the watchdog have
 * copied them into tables of their own (leave_table()): from then on the
 * program's table holds nothing of ours, and its threads reach the
 * supervisor through the watchdog. */
static bool main_fds;

static pthread_mutex_t fork_lock = PTHREAD_MUTEX_INITIALIZER;	/* held across fork() */
static pthread_mutex_t fork_wait_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fork_cond = PTHREAD_COND_INITIALIZER;
static bool fork_done;

/* The agent's start-up handshake and the mmap interposer's scan requests
 * (futex words; docs/RUNTIME.md, "The shim's descriptors"). */
static atomic_uint files_ready;			/* threads whose table is set */
static atomic_uint watch_wake;			/* bumped by every request to the watchdog */
static atomic_uint scan_req, scan_done;
/* One message the watchdog sends for a program thread (the fork handlers,
 * serialized by fork_lock). */
static atomic_uint mail_type, mail_req, mail_done;
static atomic_int mail_err;

static bool own_table(void);

/*
 * Write @msg to the program's stderr. The agent and the watchdog have no
 * fd 2 in their own table (holding the program's stderr open would keep a
 * pipe reader from seeing its end): they open the main table's through
 * /proc (the thread group leader's table), appending.
 * Context: any.
 */
static void shim_say(const char *msg)
{
	struct rt_log lg = { .type = RT_LOG };
	int fd = 2;
	ssize_t r;

	/* Through the supervisor when it listens: a program's fd 2 may be
	 * its own log, or a pipe it reads, and nothing of ours belongs there
	 * unless the supervisor cannot say it (it is gone, or never came). */
	lg.len = (uint32_t)strnlen(msg, sizeof(lg.text));
	memcpy(lg.text, msg, lg.len);
	if (shim_sock_ours() &&
	    send(shim.sock, &lg, sizeof(lg), MSG_NOSIGNAL) == (ssize_t)sizeof(lg))
		return;
	if (own_table())
		fd = open("/proc/self/fd/2", O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return;
	r = write(fd, msg, strlen(msg));
	(void)r;
	if (fd != 2)
		close(fd);
}

/* The futex system call on @w. Context: any. Return: its result. */
static long futex(atomic_uint *w, int op, unsigned int val, const struct timespec *ts)
{
	return syscall(SYS_futex, (unsigned int *)w, op, val, ts, NULL, 0);
}

/* Wait while *@w == @val, at most @ms milliseconds. Context: any. */
static void futex_wait_ms(atomic_uint *w, unsigned int val, long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	futex(w, FUTEX_WAIT_PRIVATE, val, &ts);
}

/* Wake every waiter on @w. Context: any. */
static void futex_wake_all(atomic_uint *w)
{
	futex(w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}

/* Say whether the session is up (shim_active()). Context: the session's
 * start and end, one thread. */
static void set_active(bool on)
{
	atomic_store_explicit(&shim.active, on, memory_order_release);
}

/*
 * Move @fd to a high number (close-on-exec): a program opens its files at
 * the lowest free numbers, so a number it closed under us is very unlikely
 * to be reused for one of its own. Context: any. Return: the new number, or
 * @fd when there is no room up there.
 */
static int keep_high(int fd)
{
	struct rlimit rl;
	rlim_t lim = 1024;
	int n;

	if (fd < 0)
		return fd;
	if (!getrlimit(RLIMIT_NOFILE, &rl))
		lim = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 65536 ? 65536 : rl.rlim_cur;
	if (lim <= 64)
		return fd;
	n = fcntl(fd, F_DUPFD_CLOEXEC, (int)(lim - 32));
	if (n < 0)
		return fd;
	close(fd);
	return n;
}

/**
 * shim_sock_ours() - whether shim.sock is still our socket. In the agent's
 * and the watchdog's own table (own_table()) it always is: the program
 * cannot reach that table. In the program's table (its threads: the fork handlers; and every
 * thread when the table could not be made) the program may have closed
 * it (a daemon closing every descriptor) and reused the number: then the
 * device and inode noted at connect time tell.
 * Context: any. Return: true if it is ours.
 */
bool shim_sock_ours(void)
{
	struct stat st;

	if (own_table())
		return true;
	if (!main_fds)
		return false;	/* only the shim's threads hold it */
	return shim.sock >= 0 && !fstat(shim.sock, &st) && st.st_dev == S.sock_dev &&
	       st.st_ino == S.sock_ino;
}

/*
 * Whether the calling thread is the agent or the watchdog with a table of
 * its own. (A thread id, not thread-local storage: the shim's TLS would be
 * reached through a vector glibc allocates on the program's heap, which a
 * shim thread must never touch.) Context: any. Return: true if so.
 */
static bool own_table(void)
{
	pthread_t self = pthread_self();

	return (atomic_load(&S.agent_own) && pthread_equal(self, S.agent_thr)) ||
	       (atomic_load(&S.watch_own) && pthread_equal(self, S.watch_thr));
}

/* Whether @fd is the file noted as @dev/@ino. Context: any. */
static bool fd_is(int fd, dev_t dev, ino_t ino)
{
	struct stat st;

	return fd >= 0 && !fstat(fd, &st) && st.st_dev == dev && st.st_ino == ino;
}

/*
 * Give the calling thread (the agent, the watchdog: each its own) a
 * descriptor table of its own holding only the socket and the uffd:
 * unshare(CLONE_FILES) copies the program's table, and everything else is
 * closed in the copy at once (holding the program's files open
 * would keep a pipe's reader from its end of file). From then on nothing
 * the program does to its own table (close_range, dup2 onto the numbers)
 * reaches the shim's reads, ioctls and sends: the identity check and the
 * use can no longer be split by a dup2. The copy is checked against the
 * identities noted when the descriptors were made; the program has run no
 * code since (start_threads() waits for this).
 * Context: the agent or the watchdog, at its start.
 * Return: true if the table is ours; false (the shared table is used,
 * with a check before and after each read) if it cannot be made.
 */
static bool private_table(void)
{
	int lo = shim.sock < shim.uffd ? shim.sock : shim.uffd;
	int hi = shim.sock < shim.uffd ? shim.uffd : shim.sock;

	if (lo < 0 || lo == hi || unshare(CLONE_FILES))
		return false;
	if (lo > 0)
		syscall(SYS_close_range, 0U, (unsigned int)lo - 1, 0U);
	if (hi > lo + 1)
		syscall(SYS_close_range, (unsigned int)lo + 1, (unsigned int)hi - 1, 0U);
	syscall(SYS_close_range, (unsigned int)hi + 1, ~0U, 0U);
	if (fd_is(shim.sock, S.sock_dev, S.sock_ino) && fd_is(shim.uffd, S.uffd_dev, S.uffd_ino))
		return true;
	/* Not ours (a constructor before ours replaced them?): drop them
	 * here; the watchdog's check then says so. */
	close(lo);
	close(hi);
	return false;
}

/* A raw mmap: the interposer (shim_libc.c) must not see the shim's own
 * maps. Context: any. Return: the address, or MAP_FAILED. */
static void *raw_mmap(size_t len, int prot, int flags, int fd)
{
	long p = syscall(SYS_mmap, NULL, len, prot, flags, fd, 0L);

	return p == -1 ? MAP_FAILED : (void *)p;
}

/* A raw munmap, for the shim's own maps (not fenced: shim_libc.c).
 * Context: any. */
static void raw_munmap(void *addr, size_t len)
{
	syscall(SYS_munmap, addr, len);
}

/**
 * shim_send() - send @msg, @len bytes, to the supervisor.
 * Context: a thread that checked shim_sock_ours() (the agent, the
 * watchdog, a scan, a program thread without a watchdog).
 * Return: 0 sent, -1 not.
 */
int shim_send(const void *msg, size_t len)
{
	return send(shim.sock, msg, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

/*
 * A shim thread's start: note its id, take a table of its own, and count
 * itself in the handshake start_threads() waits for. (The threads are
 * created by start_threads(), not by the agent: pthread_create() allocates
 * on the program's heap.)
 * Context: the agent or the watchdog; *@own says whether the table is
 * its own; *@up (the watchdog's) is set before the count.
 */
static void thread_setup(pthread_t *self, atomic_bool *own, atomic_bool *up)
{
	*self = pthread_self();
	atomic_store(own, private_table());	/* before the count: leave_table() reads it */
	/* The watchdog serves requests from here on, before the count too:
	 * once the program's table has given back our descriptors, a fork
	 * handler or an mmap() right after start_threads() reaches the
	 * supervisor only through it (a PREFORK not sent let a child of
	 * fork() on the prefork path miss its parent's swapped pages). */
	if (up)
		atomic_store(up, true);
	atomic_fetch_add(&files_ready, 1);
	futex_wake_all(&files_ready);
}

/**
 * shim_agent_setup() - the agent's start, on the session's side: its id
 * noted, its own table (thread_setup()).
 * Context: the agent thread, at its start.
 */
void shim_agent_setup(void)
{
	thread_setup(&S.agent_thr, &S.agent_own, NULL);
}

/*
 * The watchdog: dies loudly with the supervisor, and does the scans the
 * mmap interposer asks for (in the shim's table, where the program's
 * descriptors cannot be mistaken for ours). It looks for the socket's
 * hang-up at least every 100 ms.
 * Context: own thread, in the agent's table.
 */
static void *watch_main(void *arg)
{
	unsigned int seen = atomic_load(&scan_req), mail_seen = atomic_load(&mail_req);
	char msg[160];

	(void)arg;
	thread_setup(&S.watch_thr, &S.watch_own, &S.watch_up);
	for (;;) {
		struct pollfd p = { .fd = shim.sock, .events = POLLRDHUP };
		unsigned int req, w = atomic_load(&watch_wake);

		/* Without a table of our own, a descriptor the program
		 * closed must be seen (POLLNVAL) and not kept open by a
		 * poll: hence no blocking poll. */
		if (!shim_sock_ours())
			p.revents = POLLNVAL;	/* closed, maybe reused */
		else if (poll(&p, 1, 0) < 0)
			p.revents = 0;
		if (p.revents & POLLNVAL) {
			/* The program closed a descriptor it did not open (a
			 * daemon closing everything): nothing can evict or
			 * watch any more; the supervisor still serves faults
			 * through its own copy of the uffd. Say it, once. */
			atomic_store(&S.watch_up, false);
			atomic_fetch_add(&scan_done, 1U << 30);	/* release waiters */
			futex_wake_all(&scan_done);
			futex_wake_all(&mail_done);
			snprintf(msg, sizeof(msg), "uswap: pid %d closed uswap's socket: no more "
				 "eviction, and the supervisor's death is no longer watched\n",
				 (int)getpid());
			shim_say(msg);
			return NULL;
		}
		if (p.revents & (POLLRDHUP | POLLHUP | POLLERR))
			break;
		req = atomic_load(&mail_req);
		if (req != mail_seen) {
			struct rt_simple m = { .type = atomic_load(&mail_type) };

			mail_seen = req;
			atomic_store(&mail_err, shim_send(&m, sizeof(m)));
			atomic_store(&mail_done, req);
			futex_wake_all(&mail_done);
		}
		req = atomic_load(&scan_req);
		if (req != seen) {
			seen = req;
			shim_scan();
			atomic_store(&scan_done, req);
			futex_wake_all(&scan_done);
		}
		futex_wait_ms(&watch_wake, w, 100);
	}
	snprintf(msg, sizeof(msg),
		 "uswap: the supervisor (uswap run, pid %d) died: killing pid %d, whose evicted "
		 "pages are gone\n", (int)S.sup_pid, (int)getpid());
	shim_say(msg);
	kill(getpid(), SIGKILL);
	return NULL;
}

/*
 * Have the watchdog scan now and wait for it (at most ~1 s): a program
 * thread then never touches the shim's descriptors.
 * Context: a program thread (the mmap interposer).
 */
static void scan_by_watchdog(void)
{
	unsigned int seq = atomic_fetch_add(&scan_req, 1) + 1;

	atomic_fetch_add(&watch_wake, 1);
	futex_wake_all(&watch_wake);
	for (int i = 0; i < 100 && atomic_load(&S.watch_up); i++) {
		unsigned int d = atomic_load(&scan_done);

		if ((int)(d - seq) >= 0)
			return;
		futex_wait_ms(&scan_done, d, 10);
	}
}

/**
 * shim_scan_for_caller() - scan now, for a program thread that just made
 * memory: through the watchdog when it runs (in the shim's table, where
 * the program's descriptors cannot be mistaken for ours), else here.
 * Context: a program thread (mmap(), mprotect()) or the watchdog.
 */
void shim_scan_for_caller(void)
{
	if (atomic_load(&S.watch_own) && atomic_load(&S.watch_up) &&
	    !pthread_equal(pthread_self(), S.watch_thr))
		scan_by_watchdog();
	else
		shim_scan();
}

/*
 * Send a message of @type (an rt_simple) for a program thread: by the
 * watchdog, from its own table, when it has one; else from the program's
 * table after the identity check (a dup2 between the two is not excluded
 * there).
 * Context: a program thread; the fork handlers (fork_lock held).
 * Return: 0 sent, -1 not.
 */
static int send_by_watchdog(uint32_t type)
{
	unsigned int seq;

	if (!atomic_load(&S.watch_own) || !atomic_load(&S.watch_up)) {
		struct rt_simple m = { .type = type };

		return shim_sock_ours() ? shim_send(&m, sizeof(m)) : -1;
	}
	atomic_store(&mail_type, type);
	seq = atomic_fetch_add(&mail_req, 1) + 1;
	atomic_fetch_add(&watch_wake, 1);
	futex_wake_all(&watch_wake);
	while (atomic_load(&S.watch_up)) {
		unsigned int d = atomic_load(&mail_done);

		if ((int)(d - seq) >= 0)
			return atomic_load(&mail_err);
		futex_wait_ms(&mail_done, d, 100);
	}
	return -1;
}

/* A new userfaultfd (non-blocking). Context: the session's start.
 * Return: the descriptor, or -1 and errno. */
static int new_uffd(void)
{
	int fd = rt_uffd_open(O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		errno = -fd;
	return fd < 0 ? -1 : fd;
}

/* Connect to the supervisor's socket at the path @name. Context: the
 * session's start. Return: the descriptor, or -1 and errno. */
static int connect_sup(const char *name)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t len = strlen(name);
	int fd;

	if (len >= sizeof(a.sun_path) || name[0] != '/') {
		errno = EINVAL;
		return -1;
	}
	memcpy(a.sun_path, name, len);	/* a path (docs/SECURITY.md) */
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* RT_HELLO with [uffd, memfd], or (a forked child) RT_HELLO_FORK with
 * [memfd]. Context: the session's start. Return: 0 sent, -1 not. */
static int send_hello(uint32_t type)
{
	struct rt_hello h = {
		.type = type, .pid = getpid(),
		.staging = (uint64_t)shim.staging, .staging_len = RT_BATCH * RT_PAGE,
		.xfer_pages = RT_XFER_PAGES,
	};
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} c;
	struct iovec iov = { .iov_base = &h, .iov_len = sizeof(h) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = c.buf, .msg_controllen = sizeof(c.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	int fds[2] = { shim.uffd, S.memfd }, nfds = 2;

	if (type == RT_HELLO_FORK) {
		fds[0] = S.memfd;
		nfds = 1;
		mh.msg_controllen = CMSG_SPACE(sizeof(int));
	}
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
	return sendmsg(shim.sock, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(h) ? 0 : -1;
}

/*
 * The staging area, between two PROT_NONE guard pages: a VMA of its own
 * that never merges with a neighbour (registered with the same uffd, it
 * would, and emptying it would split that VMA and merge it again each
 * batch). Context: the session's start. Return: the area, or MAP_FAILED.
 */
static char *new_staging(void)
{
	char *g = raw_mmap((RT_BATCH + 2) * RT_PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1);

	if (g == MAP_FAILED)
		return g;
	if (syscall(SYS_mprotect, g + RT_PAGE, RT_BATCH * RT_PAGE, PROT_READ | PROT_WRITE)) {
		raw_munmap(g, (RT_BATCH + 2) * RT_PAGE);
		return MAP_FAILED;
	}
	return g + RT_PAGE;
}

/* Connect to the supervisor, kept high, its identity noted. Context: the
 * session's start. Return: 0, -1. */
static int connect_kept(const char *name)
{
	struct stat st;

	shim.sock = keep_high(connect_sup(name));
	if (shim.sock < 0 || fstat(shim.sock, &st))
		return -1;
	S.sock_dev = st.st_dev;
	S.sock_ino = st.st_ino;
	return 0;
}

/* The transfer buffer: a new memfd, mapped shared. Context: the session's
 * start. Return: 0, -1. */
static int new_xfer(void)
{
	/* Sealable: the supervisor seals it against shrinking before it
	 * maps it (a shrunk buffer would be its SIGBUS). */
	S.memfd = keep_high(memfd_create("uswap-xfer", MFD_CLOEXEC | MFD_ALLOW_SEALING));
	if (S.memfd < 0 || ftruncate(S.memfd, (off_t)RT_XFER_BYTES))
		return -1;
	shim.xfer = raw_mmap(RT_XFER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, S.memfd);
	if (shim.xfer == MAP_FAILED)
		return -1;
	shim.ctl = rt_xfer_ctl(shim.xfer);
	return 0;
}

/*
 * Start the agent and the watchdog on the shim's own stacks, with every
 * signal blocked, and wait until each has its own descriptor table: the
 * program runs no code in between, so what they copy is what the shim
 * made.
 * Context: the constructor, or the child's fork handler (one thread).
 */
static void start_threads(void)
{
	pthread_attr_t at;
	pthread_t t;
	struct stat st;
	sigset_t all, old;
	unsigned int n = 0, r;

	if (!fstat(shim.uffd, &st)) {
		S.uffd_dev = st.st_dev;
		S.uffd_ino = st.st_ino;
	}
	atomic_store(&S.agent_own, false);
	atomic_store(&S.watch_own, false);
	atomic_store(&S.watch_up, false);
	atomic_store(&files_ready, 0);
	/* Every signal blocked in the threads (they inherit the mask): a
	 * process-directed signal (SIGALRM of setitimer(), SIGCHLD, a kill)
	 * is delivered to any thread that does not block it, and the
	 * program's handler run by the agent could fault on an evicted page
	 * (the agent then waits for a batch only it can answer: the program
	 * hung, op signals in the sweep), or write to a descriptor of the
	 * program that the agent's table does not have (a lost wake-up). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&at);
	pthread_attr_setstack(&at, shim.agent_stack, SHIM_STACK);
	if (pthread_create(&t, &at, shim_agent_main, NULL) == 0) {
		pthread_detach(t);
		n++;
	}
	pthread_attr_setstack(&at, shim.watch_stack, SHIM_STACK);
	if (pthread_create(&t, &at, watch_main, NULL) == 0) {
		pthread_detach(t);
		n++;
	}
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	for (int i = 0; i < 1000 && (r = atomic_load(&files_ready)) < n; i++)
		futex_wait_ms(&files_ready, r, 10);
}

/* Close what the program's table holds of the session, and end it.
 * Context: the constructor, or a child's fork handler (one thread). */
static void close_session(void)
{
	if (main_fds && shim.uffd >= 0)
		close(shim.uffd);
	if (main_fds && shim.sock >= 0)
		close(shim.sock);
	if (S.memfd >= 0)
		close(S.memfd);
	shim.uffd = shim.sock = S.memfd = -1;
	main_fds = false;
	set_active(false);
}

/*
 * The threads run, each with its table: take the shim's descriptors out of
 * the program's table (a program listing /proc/self/fd, or passing "all
 * but these" to a child, sees none of ours). The transfer buffer's memfd
 * was only for the hello. If a thread could not make its own table, the
 * descriptors stay (docs/RUNTIME.md, "The shim's descriptors").
 * Context: the constructor, or a child's fork handler (one thread).
 */
static void leave_table(void)
{
	if (S.memfd >= 0)
		close(S.memfd);
	S.memfd = -1;
	if (!atomic_load(&S.agent_own) || !atomic_load(&S.watch_own))
		return;
	close(shim.uffd);
	close(shim.sock);
	main_fds = false;
}

/*
 * Start this process's session: uffd, socket, hello, registration, threads.
 * On any failure the program runs on without a budget, and says so.
 * Context: the constructor, or the child after fork() (one thread).
 */
static void session_start(const char *name)
{
	struct rt_hello_ack ack;
	char msg[200];
	const char *why = "cannot create a userfaultfd";

	main_fds = true;
	shim.uffd = keep_high(new_uffd());
	if (shim.uffd < 0)
		goto fail;
	why = "cannot map its buffers";
	if (new_xfer())
		goto fail;
	shim.staging = new_staging();
	shim.agent_stack = raw_mmap(SHIM_STACK, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1);
	shim.watch_stack = raw_mmap(SHIM_STACK, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1);
	if (shim.staging == MAP_FAILED || shim.agent_stack == MAP_FAILED ||
	    shim.watch_stack == MAP_FAILED)
		goto fail;
	why = "cannot reach the supervisor";
	if (connect_kept(name) || send_hello(RT_HELLO) ||
	    recv(shim.sock, &ack, sizeof(ack), 0) != sizeof(ack) ||
	    ack.type != RT_HELLO_ACK)
		goto fail;
	why = "was refused by the supervisor";
	if (ack.err)
		goto fail;
	why = "cannot register its staging area";
	if (shim_staging_register())
		goto fail;
	S.sup_pid = getppid();
	S.fork_events = (ack.features & UFFD_FEATURE_EVENT_FORK) != 0;
	set_active(true);
	shim_scan_mark();
	shim_scan();
	start_threads();
	leave_table();
	return;
fail:
	snprintf(msg, sizeof(msg), "uswap: pid %d %s (%s): it runs without a memory budget\n",
		 (int)getpid(), why, strerror(errno));
	shim_say(msg);
	close_session();
}

/*
 * pthread_atfork prepare: stop eviction and wait for the batch in flight
 * (with fork events), or bring every page in (without them).
 * Context: the forking thread; fork_lock is held until the parent or child
 * handler.
 */
static void shim_prefork(void)
{
	struct rt_simple m = { .type = RT_PREFORK };

	shim_vm_fork_begin();	/* no madvise/mremap/munmap across the fork */
	pthread_mutex_lock(&fork_lock);
	if (!shim_active())
		return;
	pthread_mutex_lock(&fork_wait_lock);
	fork_done = false;
	if (!send_by_watchdog(m.type))
		while (!fork_done)
			pthread_cond_wait(&fork_cond, &fork_wait_lock);
	pthread_mutex_unlock(&fork_wait_lock);
}

/**
 * shim_prefork_done() - the supervisor's RT_PREFORK_DONE: the prepare
 * handler waiting in shim_prefork() goes on.
 * Context: the agent thread; takes fork_wait_lock.
 */
void shim_prefork_done(void)
{
	pthread_mutex_lock(&fork_wait_lock);
	fork_done = true;
	pthread_cond_broadcast(&fork_cond);
	pthread_mutex_unlock(&fork_wait_lock);
}

/* pthread_atfork parent: eviction may resume. Context: the forking thread. */
static void shim_postfork_parent(void)
{
	struct rt_simple m = { .type = RT_POSTFORK };

	if (shim_active())
		send_by_watchdog(m.type);
	pthread_mutex_unlock(&fork_lock);
	shim_vm_fork_end(0);
}

/* Kill this forked child, saying @why: its evicted pages cannot be
 * served. Context: the child's only thread; SIGKILL to itself, it does
 * not come back. */
static void die(const char *why)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "uswap: pid %d, a forked child: %s: killing it, its evicted "
		 "pages cannot be served\n", (int)getpid(), why);
	shim_say(msg);
	kill(getpid(), SIGKILL);
}

/*
 * The child of a fork the supervisor follows by events (docs/RUNTIME.md,
 * "fork with fork events"): its memory is registered with a uffd the
 * FORK event put into the supervisor's hands. Say hello with a transfer
 * buffer of its own, fault once on the staging area (the fault's thread
 * id names this process to the supervisor), take the uffd from the answer
 * and start an agent and a watchdog on the inherited stacks.
 * Context: the child's only thread, in its pthread_atfork child handler.
 * Return: 0; -1 when the supervisor refused (the child runs on without
 * eviction; its faults are still served). Never returns if the supervisor
 * is gone: without it the child's evicted pages cannot be read.
 */
static int fork_session(const char *name)
{
	struct rt_hello_ack ack;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} c;
	struct iovec iov = { .iov_base = &ack, .iov_len = sizeof(ack) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = c.buf, .msg_controllen = sizeof(c.buf) };
	struct cmsghdr *cm;
	int fd = -1;

	/* The parent's: its uffd (the parent's address space), its socket,
	 * its transfer buffer (shared with the parent). */
	if (main_fds) {
		close(shim.uffd);
		close(shim.sock);
	}
	if (S.memfd >= 0)
		close(S.memfd);
	raw_munmap(shim.xfer, RT_XFER_BYTES);
	shim.uffd = shim.sock = S.memfd = -1;
	main_fds = true;	/* what it makes now is in its table */
	if (new_xfer())
		die("cannot map its transfer buffer");
	if (!name || connect_kept(name) || send_hello(RT_HELLO_FORK))
		die("cannot reach the supervisor");
	/* The staging area may hold a page the parent's agent had in hand. */
	shim_raw_madvise(shim.staging, RT_BATCH * RT_PAGE, MADV_DONTNEED);
	(void)*(volatile char *)shim.staging;	/* the naming fault */
	if (recvmsg(shim.sock, &mh, MSG_CMSG_CLOEXEC) != (ssize_t)sizeof(ack) ||
	    ack.type != RT_HELLO_ACK)
		die("the supervisor did not answer");
	cm = CMSG_FIRSTHDR(&mh);
	if (!ack.err && cm && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	if (ack.err || fd < 0) {
		char msg[160];

		snprintf(msg, sizeof(msg), "uswap: pid %d, a forked child, was refused by the "
			 "supervisor (%s): its pages are served, none is evicted\n", (int)getpid(),
			 strerror(ack.err ? -ack.err : EPROTO));
		shim_say(msg);
		close_session();
		return -1;
	}
	shim.uffd = keep_high(fd);
	/* The naming fault's page. */
	shim_raw_madvise(shim.staging, RT_BATCH * RT_PAGE, MADV_DONTNEED);
	shim_scan_mark();
	start_threads();
	leave_table();
	return 0;
}

/* pthread_atfork child: with fork events, take over the session the FORK
 * event made; without, drop the parent's session and start one of its
 * own. Context: the child's only thread. */
static void shim_postfork_child(void)
{
	const char *name = getenv(RT_ENV_SOCK);
	bool was_active = shim_active();

	shim_policy_fork_child();
	shim_vm_fork_end(1);
	pthread_mutex_init(&fork_lock, NULL);
	pthread_mutex_init(&fork_wait_lock, NULL);
	/* Without EVENT_FORK the child's VMAs are not registered. */
	shim_maps_fork_child(was_active && !S.fork_events);
	pthread_cond_init(&fork_cond, NULL);
	if (!was_active)
		return;
	if (S.fork_events) {
		if (fork_session(name))
			set_active(false);
		return;
	}
	close_session();
	raw_munmap(shim.xfer, RT_XFER_BYTES);
	raw_munmap(shim.staging - RT_PAGE, (RT_BATCH + 2) * RT_PAGE);
	raw_munmap(shim.agent_stack, SHIM_STACK);
	raw_munmap(shim.watch_stack, SHIM_STACK);
	if (name)
		session_start(name);
}

/* The shim's start in a process of the program's tree (the environment
 * names the supervisor's socket); without it, the shim does nothing.
 * Context: the constructor, before the program's main(). */
__attribute__((constructor)) static void shim_init(void)
{
	const char *name = getenv(RT_ENV_SOCK);

	if (!name || !*name)
		return;
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	shim_policy_follow(shim_snapshot());
	pthread_atfork(shim_prefork, shim_postfork_parent, shim_postfork_child);
	session_start(name);
}
