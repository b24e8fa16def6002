/* SPDX-License-Identifier: MIT */
/*
 * libuswap_preload.so, the shim `uswap run` preloads into every process of
 * the program's tree (docs/RUNTIME.md, "Shim"): libc only, and no shim
 * thread touches memory the shim registers. This file is the session: the
 * constructor, the uffd, buffers and stacks, the hello, the agent and the
 * watchdog started in descriptor tables of their own (docs/RUNTIME.md,
 * "The shim's descriptors"), the watchdog, and the session across fork().
 * A session is made and ended by one thread: the constructor, or a forked
 * child's atfork handler.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
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

struct shim_session shim = { .uffd = -1, .sock = -1 };

/* The rest of the session. start_threads() resets the fields the threads
 * set; the others are written as struct shim_session's are. */
static struct {
	atomic_bool agent_own, watch_own;	/* its table is its own (private_table()) */
	pthread_t agent_thr, watch_thr;		/* set by each thread itself */
	atomic_bool watch_up;			/* the watchdog serves requests */
	bool main_fds;				/* the program's table holds uffd, sock */
	bool fork_events;			/* the supervisor follows fork() by events */
	int memfd;				/* the transfer buffer's, until the hello */
	dev_t sock_dev, uffd_dev;		/* the identities noted at creation */
	ino_t sock_ino, uffd_ino;
	pid_t sup_pid;				/* the supervisor, for the watchdog's message */
} S = { .memfd = -1 };

static pthread_mutex_t fork_lock = PTHREAD_MUTEX_INITIALIZER;	/* held across fork() */
static pthread_mutex_t fork_wait_lock = PTHREAD_MUTEX_INITIALIZER;	/* fork_done */
static pthread_cond_t fork_cond = PTHREAD_COND_INITIALIZER;
static bool fork_done;

/* Futex words: the threads' start-up count, and the requests program
 * threads hand to the watchdog (a scan; one message, under fork_lock). */
static atomic_uint files_ready, watch_wake, scan_req, scan_done;
static atomic_uint shim_live;	/* the shim's threads running (agent, watchdog, ender) */
static atomic_uint end_req;	/* the watchdog asks the ender to end the process */
static atomic_uint mail_type, mail_req, mail_done;
static atomic_int mail_err;

/* Wait while *@w == @val, at most @ms milliseconds. */
static void futex_wait_ms(atomic_uint *w, unsigned int val, long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	syscall(SYS_futex, (unsigned int *)w, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

static void futex_wake_all(atomic_uint *w)
{
	syscall(SYS_futex, (unsigned int *)w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Whether the caller is the agent or the watchdog with a table of its own.
 * By thread id: the shim's TLS would be reached through the program's heap. */
static bool own_table(void)
{
	pthread_t self = pthread_self();

	return (atomic_load(&S.agent_own) && pthread_equal(self, S.agent_thr)) ||
	       (atomic_load(&S.watch_own) && pthread_equal(self, S.watch_thr));
}

/* Whether @fd is the file noted as @dev/@ino. */
static bool fd_is(int fd, dev_t dev, ino_t ino)
{
	struct stat st;

	return fd >= 0 && !fstat(fd, &st) && st.st_dev == dev && st.st_ino == ino;
}

/**
 * shim_sock_ours() - whether shim.sock is still ours in the caller's table.
 * Context: any (the program may reuse the number in its own table).
 */
bool shim_sock_ours(void)
{
	return own_table() || (S.main_fds && fd_is(shim.sock, S.sock_dev, S.sock_ino));
}

/**
 * shim_send() - send @msg, @len bytes, to the supervisor.
 * Context: a thread that checked shim_sock_ours(). Return: 0 sent, -1 not.
 */
int shim_send(const void *msg, size_t len)
{
	return send(shim.sock, msg, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

/* Say the message @fmt: to the supervisor (RT_LOG) when it listens, else on
 * the program's stderr (from a shim thread's table, through /proc). */
__attribute__((format(printf, 1, 2))) static void shim_say(const char *fmt, ...)
{
	struct rt_log lg = { .type = RT_LOG };
	char msg[200];
	va_list ap;
	int fd = 2;
	ssize_t r;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	lg.len = (uint32_t)strlen(msg);	/* < sizeof(lg.text) */
	memcpy(lg.text, msg, lg.len);
	if (shim_sock_ours() && !shim_send(&lg, sizeof(lg)))
		return;
	if (own_table())
		fd = open("/proc/self/fd/2", O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return;
	r = write(fd, msg, lg.len);
	(void)r;
	if (fd != 2)
		close(fd);
}

/* Move @fd to a high number (close-on-exec), which the program is unlikely
 * to reuse if it closes it. Return: the new number, or @fd. */
static int keep_high(int fd)
{
	struct rlimit rl;
	rlim_t lim = 1024;
	int n;

	if (fd >= 0 && !getrlimit(RLIMIT_NOFILE, &rl))
		lim = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 65536 ? 65536 : rl.rlim_cur;
	if (fd < 0 || lim <= 64 || (n = fcntl(fd, F_DUPFD_CLOEXEC, (int)(lim - 32))) < 0)
		return fd;
	close(fd);
	return n;
}

/* Give the calling shim thread, at its start, a table of its own holding
 * only the socket and the uffd, checked against their noted identities.
 * Return: true if made; false: the program's is used, checked around each read. */
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
	/* Not ours: drop them here; the watchdog's check then says so. */
	close(lo);
	close(hi);
	return false;
}

/* mmap of the shim's own memory, unseen by the interposers (as its munmaps,
 * made by syscall() too). */
static void *raw_mmap(size_t len, int prot, int flags, int fd)
{
	long p = syscall(SYS_mmap, NULL, len, prot, flags, fd, 0L);

	return p == -1 ? MAP_FAILED : (void *)p;
}

/* A shim thread is running: counted live (program_threads_gone()) and
 * ready for start_threads(). */
static void thread_started(void)
{
	atomic_fetch_add(&shim_live, 1);
	atomic_fetch_add(&files_ready, 1);
	futex_wake_all(&files_ready);
}

/* A shim thread's start: note its id, take a table of its own, and count
 * itself for start_threads(). The watchdog (@up) serves from before the
 * count: after leave_table() it is the program threads' only way out. */
static void thread_setup(pthread_t *self, atomic_bool *own, atomic_bool *up)
{
	*self = pthread_self();
	atomic_store(own, private_table());	/* before the count: leave_table() reads it */
	if (up)
		atomic_store(up, true);
	thread_started();
}

static void *agent_start(void *arg)
{
	void *ret;

	thread_setup(&S.agent_thr, &S.agent_own, NULL);
	ret = shim_agent_main(arg);
	atomic_fetch_sub(&shim_live, 1);	/* before it is gone: errs on "running" */
	return ret;
}

/*
 * Whether every thread of the program has ended and only the shim's run.
 * glibc ends a process when its last thread returns or calls pthread_exit()
 * (exit(0) in that thread), counting the threads pthread_create() made: the
 * shim's among them, which would keep such a process alive for ever (a
 * main() that calls pthread_exit(), a child forked by a thread that then
 * ends). The kernel's count (/proc/self/stat, field 20) keeps a group
 * leader that ended before the others, a zombie (field 3 'Z'), until the
 * whole group goes; only such a process can have no program thread.
 * Context: the watchdog.
 */
static bool program_threads_gone(void)
{
	char buf[1024], *p;
	const char *q;
	unsigned long long threads;
	ssize_t n;
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC), field;

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* the command name may hold anything */
	if (!p || p[1] != ' ')
		return false;
	p += 2;
	if (*p != 'Z')
		return false;	/* the leader runs: a program thread */
	for (field = 3; field < 20; field++) {
		p = strchr(p, ' ');
		if (!p)
			return false;
		p++;
	}
	q = p;
	if (!shim_parse_num(&q, 10, &threads))
		return false;
	return threads > 0 && threads - 1 <= (unsigned long long)atomic_load(&shim_live);
}

/*
 * The ender: a shim thread in the program's own descriptor table, asleep
 * until the watchdog finds the program's threads all ended; it then calls
 * exit(0) as glibc's last thread would (atexit handlers, stdio flushed to
 * the program's descriptors, which the other shim threads' tables lack).
 */
static void *end_main(void *arg)
{
	(void)arg;
	thread_started();
	while (!atomic_load(&end_req))
		syscall(SYS_futex, (unsigned int *)&end_req, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	exit(0);
}

/* The watchdog: kills the process, loudly, when the supervisor dies (it
 * looks at least every 100 ms), and serves the program threads' requests. */
static void *watch_main(void *arg)
{
	unsigned int seen = atomic_load(&scan_req), mail_seen = atomic_load(&mail_req);
	uint64_t looked = 0;	/* program_threads_gone(): at most every 100 ms */

	(void)arg;
	thread_setup(&S.watch_thr, &S.watch_own, &S.watch_up);
	for (;;) {
		struct pollfd p = { .fd = shim.sock, .events = POLLRDHUP };
		unsigned int req, w = atomic_load(&watch_wake);

		/* No blocking poll: it would keep a closed descriptor open. */
		if (!shim_sock_ours())
			p.revents = POLLNVAL;	/* closed, maybe reused */
		else if (poll(&p, 1, 0) < 0)
			p.revents = 0;
		if (p.revents & POLLNVAL) {
			/* The program closed our socket: no more eviction or
			 * watch; the supervisor still serves faults. */
			atomic_store(&S.watch_up, false);
			atomic_fetch_sub(&shim_live, 1);
			atomic_fetch_add(&scan_done, 1U << 30);	/* release waiters */
			futex_wake_all(&scan_done);
			futex_wake_all(&mail_done);
			shim_say("uswap: pid %d closed uswap's socket: no more eviction, and the "
				 "supervisor's death is no longer watched\n", (int)getpid());
			return NULL;
		}
		if (p.revents & (POLLRDHUP | POLLHUP | POLLERR))
			break;
		/* The program's last thread ended: the ender ends the process
		 * as glibc would have, had it not counted ours. Requests wake
		 * this loop often: the look is rate-limited. */
		if (now_ns() - looked >= 100000000ULL) {
			looked = now_ns();
			if (program_threads_gone()) {
				atomic_store(&end_req, 1);
				futex_wake_all(&end_req);
			}
		}
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
	shim_say("uswap: the supervisor (uswap run, pid %d) died: killing pid %d, whose evicted "
		 "pages are gone\n", (int)S.sup_pid, (int)getpid());
	kill(getpid(), SIGKILL);
	return NULL;
}

/* Hand the watchdog a request on @req and wait, while it serves, until
 * @done reaches it: at most @tries waits of @ms (0: no limit).
 * Context: a program thread. Return: true if done. */
static bool by_watchdog(atomic_uint *req, atomic_uint *done, int tries, long ms)
{
	unsigned int seq = atomic_fetch_add(req, 1) + 1;

	atomic_fetch_add(&watch_wake, 1);
	futex_wake_all(&watch_wake);
	for (int i = 0; (!tries || i++ < tries) && atomic_load(&S.watch_up);) {
		unsigned int d = atomic_load(done);

		if ((int)(d - seq) >= 0)
			return true;
		futex_wait_ms(done, d, ms);
	}
	return false;
}

/**
 * shim_scan_for_caller() - scan now for a program thread that made memory:
 * by the watchdog when it serves (waiting ~1 s at most), else here.
 * Context: a program thread (mmap(), mprotect()) or the watchdog.
 */
void shim_scan_for_caller(void)
{
	if (atomic_load(&S.watch_own) && atomic_load(&S.watch_up) &&
	    !pthread_equal(pthread_self(), S.watch_thr))
		by_watchdog(&scan_req, &scan_done, 100, 10);
	else
		shim_scan();
}

/* Send an rt_simple of @type: by the watchdog when it serves from its own
 * table, else from the program's after the identity check.
 * Context: the fork handlers (fork_lock held). Return: 0 sent, -1 not. */
static int send_by_watchdog(uint32_t type)
{
	struct rt_simple m = { .type = type };

	if (!atomic_load(&S.watch_own) || !atomic_load(&S.watch_up))
		return shim_sock_ours() ? shim_send(&m, sizeof(m)) : -1;
	atomic_store(&mail_type, type);
	return by_watchdog(&mail_req, &mail_done, 0, 100) ? atomic_load(&mail_err) : -1;
}

/* Connect to the supervisor's socket at the path @name (docs/SECURITY.md),
 * kept high, its identity noted. Return: 0, or -1 and errno. */
static int connect_kept(const char *name)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t len = strlen(name);
	struct stat st;
	int fd;

	if (len >= sizeof(a.sun_path) || name[0] != '/') {
		errno = EINVAL;
		return -1;
	}
	memcpy(a.sun_path, name, len);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		fd = -1;
	}
	shim.sock = keep_high(fd);
	if (shim.sock < 0 || fstat(shim.sock, &st))
		return -1;
	S.sock_dev = st.st_dev;
	S.sock_ino = st.st_ino;
	return 0;
}

/* RT_HELLO with [uffd, memfd], or (a forked child) RT_HELLO_FORK with
 * [memfd]. Return: 0 sent, -1 not. */
static int send_hello(uint32_t type)
{
	struct rt_hello h = {
		.type = type, .pid = getpid(),
		.staging = (uint64_t)shim.staging, .staging_len = RT_BATCH * RT_PAGE,
		.xfer_pages = RT_XFER_PAGES,
	};
	_Alignas(struct cmsghdr) char buf[CMSG_SPACE(2 * sizeof(int))];
	struct iovec iov = { .iov_base = &h, .iov_len = sizeof(h) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = buf, .msg_controllen = sizeof(buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	int fds[2] = { shim.uffd, S.memfd };
	size_t nfds = type == RT_HELLO_FORK ? 1 : 2;

	mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
	memcpy(CMSG_DATA(cm), fds + 2 - nfds, nfds * sizeof(int));
	return sendmsg(shim.sock, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(h) ? 0 : -1;
}

/* The staging area, between two guard pages: a VMA that never merges with
 * a registered neighbour. Return: the area, or MAP_FAILED. */
static char *new_staging(void)
{
	char *g = raw_mmap((RT_BATCH + 2) * RT_PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1);

	if (g == MAP_FAILED)
		return g;
	if (syscall(SYS_mprotect, g + RT_PAGE, RT_BATCH * RT_PAGE, PROT_READ | PROT_WRITE)) {
		syscall(SYS_munmap, g, (RT_BATCH + 2) * RT_PAGE);
		return MAP_FAILED;
	}
	return g + RT_PAGE;
}

/* The transfer buffer: a memfd, sealable (the supervisor seals it against
 * shrinking), mapped shared. Return: 0, -1. */
static int new_xfer(void)
{
	S.memfd = keep_high(memfd_create("uswap-xfer", MFD_CLOEXEC | MFD_ALLOW_SEALING));
	if (S.memfd < 0 || ftruncate(S.memfd, (off_t)RT_XFER_BYTES))
		return -1;
	shim.xfer = raw_mmap(RT_XFER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, S.memfd);
	if (shim.xfer == MAP_FAILED)
		return -1;
	shim.ctl = rt_xfer_ctl(shim.xfer);
	return 0;
}

/* Start the agent and the watchdog on the shim's stacks and wait until
 * each has its table: the program runs no code in between. */
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
	atomic_store(&shim_live, 0);
	atomic_store(&end_req, 0);
	/* Every signal blocked in the threads: the program's handler run by
	 * the agent could fault on a page only the agent can bring back, or
	 * write to a descriptor its table does not have. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&at);
	pthread_attr_setstack(&at, shim.agent_stack, SHIM_STACK);
	if (pthread_create(&t, &at, agent_start, NULL) == 0) {
		pthread_detach(t);
		n++;
	}
	pthread_attr_setstack(&at, shim.watch_stack, SHIM_STACK);
	if (pthread_create(&t, &at, watch_main, NULL) == 0) {
		pthread_detach(t);
		n++;
	}
	pthread_attr_destroy(&at);
	/* The ender, in the program's table, on a stack of glibc's default
	 * size: the program's atexit handlers may run on it. */
	if (pthread_create(&t, NULL, end_main, NULL) == 0) {
		pthread_detach(t);
		n++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	for (int i = 0; i < 1000 && (r = atomic_load(&files_ready)) < n; i++)
		futex_wait_ms(&files_ready, r, 10);
}

/* Close what the program's table holds of the session. */
static void drop_fds(void)
{
	if (S.main_fds && shim.uffd >= 0)
		close(shim.uffd);
	if (S.main_fds && shim.sock >= 0)
		close(shim.sock);
	if (S.memfd >= 0)
		close(S.memfd);
	shim.uffd = shim.sock = S.memfd = -1;
}

/* End the session. */
static void close_session(void)
{
	drop_fds();
	S.main_fds = false;
	atomic_store_explicit(&shim.active, false, memory_order_release);
}

/* The threads run: close the memfd (it was for the hello) and, if both
 * have tables of their own, the uffd and the socket in the program's. */
static void leave_table(void)
{
	if (S.memfd >= 0)
		close(S.memfd);
	S.memfd = -1;
	if (!atomic_load(&S.agent_own) || !atomic_load(&S.watch_own))
		return;
	close(shim.uffd);
	close(shim.sock);
	S.main_fds = false;
}

/* Start this process's session. On failure the program runs on without a
 * budget, and says so. */
static void session_start(const char *name)
{
	struct rt_hello_ack ack;
	const char *why = "cannot create a userfaultfd";

	S.main_fds = true;
	shim.uffd = keep_high(rt_uffd_open(O_CLOEXEC | O_NONBLOCK));
	if (shim.uffd < 0) {
		errno = -shim.uffd;
		goto fail;
	}
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
	if (ack.err) {
		errno = -ack.err;	/* the supervisor's reason */
		goto fail;
	}
	why = "cannot register its staging area";
	if (shim_staging_register())
		goto fail;
	S.sup_pid = getppid();
	S.fork_events = (ack.features & UFFD_FEATURE_EVENT_FORK) != 0;
	atomic_store_explicit(&shim.active, true, memory_order_release);
	shim_scan_mark();
	shim_scan();
	start_threads();
	leave_table();
	return;
fail:
	shim_say("uswap: pid %d %s (%s): it runs without a memory budget\n", (int)getpid(), why,
		 strerror(errno));
	close_session();
}

/* pthread_atfork prepare: fence the program's calls; the supervisor stops
 * eviction and waits for the batch in flight (with fork events) or brings
 * every page in. fork_lock is held until the parent or child handler. */
static void shim_prefork(void)
{
	shim_vm_fork_begin();
	pthread_mutex_lock(&fork_lock);
	if (!shim_active())
		return;
	pthread_mutex_lock(&fork_wait_lock);
	fork_done = false;
	if (!send_by_watchdog(RT_PREFORK))
		while (!fork_done)
			pthread_cond_wait(&fork_cond, &fork_wait_lock);
	pthread_mutex_unlock(&fork_wait_lock);
}

/**
 * shim_prefork_done() - the supervisor's RT_PREFORK_DONE: shim_prefork() goes on.
 * Context: the agent thread; takes fork_wait_lock.
 */
void shim_prefork_done(void)
{
	pthread_mutex_lock(&fork_wait_lock);
	fork_done = true;
	pthread_cond_broadcast(&fork_cond);
	pthread_mutex_unlock(&fork_wait_lock);
}

/* pthread_atfork parent: eviction may resume. */
static void shim_postfork_parent(void)
{
	if (shim_active())
		send_by_watchdog(RT_POSTFORK);
	pthread_mutex_unlock(&fork_lock);
	shim_vm_fork_end(0);
}

/* Kill this forked child, whose evicted pages cannot be served. */
static void die(const char *why)
{
	shim_say("uswap: pid %d, a forked child: %s: killing it, its evicted pages cannot be "
		 "served\n", (int)getpid(), why);
	kill(getpid(), SIGKILL);
}

/*
 * The child of a fork followed by events (docs/RUNTIME.md, "Fork with fork
 * events"): say hello with a transfer buffer of its own, fault once on the
 * staging area (the fault names this process; its page is dropped after),
 * take its uffd from the answer and start the threads on the inherited
 * stacks. Refused, it runs on without eviction; without the supervisor it
 * dies.
 * Context: the child's only thread, in its atfork handler.
 */
static void fork_session(const char *name)
{
	struct rt_hello_ack ack;
	_Alignas(struct cmsghdr) char buf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &ack, .iov_len = sizeof(ack) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = buf, .msg_controllen = sizeof(buf) };
	struct cmsghdr *cm;
	int fd = -1;

	drop_fds();	/* the parent's */
	syscall(SYS_munmap, shim.xfer, RT_XFER_BYTES);
	S.main_fds = true;
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
		shim_say("uswap: pid %d, a forked child, was refused by the supervisor (%s): its "
			 "pages are served, none is evicted\n", (int)getpid(),
			 strerror(ack.err ? -ack.err : EPROTO));
		close_session();
		return;
	}
	shim.uffd = keep_high(fd);
	shim_raw_madvise(shim.staging, RT_BATCH * RT_PAGE, MADV_DONTNEED);
	shim_scan_mark();
	start_threads();
	leave_table();
}

/* pthread_atfork child: with fork events, take over the session the FORK
 * event made; without, drop the parent's and start one of its own. */
static void shim_postfork_child(void)
{
	const char *name = getenv(RT_ENV_SOCK);
	bool was_active = shim_active();

	shim_policy_fork_child();
	shim_vm_fork_end(1);
	pthread_mutex_init(&fork_lock, NULL);
	pthread_mutex_init(&fork_wait_lock, NULL);
	shim_maps_fork_child(was_active && !S.fork_events);	/* no events: none registered */
	pthread_cond_init(&fork_cond, NULL);
	if (!was_active)
		return;
	if (S.fork_events) {
		fork_session(name);
		return;
	}
	close_session();
	syscall(SYS_munmap, shim.xfer, RT_XFER_BYTES);
	syscall(SYS_munmap, shim.staging - RT_PAGE, (RT_BATCH + 2) * RT_PAGE);
	syscall(SYS_munmap, shim.agent_stack, SHIM_STACK);
	syscall(SYS_munmap, shim.watch_stack, SHIM_STACK);
	if (name)
		session_start(name);
}

/* The shim's start, if the environment names the supervisor's socket. */
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
