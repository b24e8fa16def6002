/* SPDX-License-Identifier: MIT */
/*
 * `uswap run`'s supervisor: the start-up check, the devices and the
 * budget, the program's start, and the one event loop that serves every
 * process of the tree (docs/RUNTIME.md). Everything here runs on the
 * supervisor's one thread.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "runtime/uffd_ops.h"
#include "util/alloc.h"

#ifndef USWAP_LIBDIR
#define USWAP_LIBDIR "/usr/local/lib"
#endif
#ifndef USWAP_BIN_TO_LIB
#define USWAP_BIN_TO_LIB "../lib"
#endif
#define SHIM_NAME	"libuswap_preload.so"
#define MIRROR_FRAMES	(1ULL << 20)	/* the mm layer's frames: pages in transit */
#define MIRROR_LOW_PCT	25		/* its kswapd's low mark: RT_BATCH of its 256 frames */
#define RT_LOCKED_EVERY_NS 100000000ULL	/* rt_sup_locked(): at most 10 looks a second */
#define RT_FLAGS_EVERY_NS 100000000ULL	/* loop_check_flags(): every 100 ms */
#define RT_EV_BATCH	64		/* events taken per epoll_wait() */

/* The features every program's uffd gets; the first four are required. */
#define RT_FEATURES_REQUIRED (UFFD_FEATURE_EVENT_REMAP | UFFD_FEATURE_EVENT_REMOVE | \
			      UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_MOVE)
#define RT_FEATURES_OPTIONAL (UFFD_FEATURE_THREAD_ID | UFFD_FEATURE_POISON | \
			      UFFD_FEATURE_WP_ASYNC)	/* written bits */
/* Fork events; THREAD_ID names a forked child. */
#define RT_FEATURES_FORK (UFFD_FEATURE_EVENT_FORK | UFFD_FEATURE_THREAD_ID)

/* The shim's path, into @out: next to our binary, at the libdir relative
 * to it, or at the configured libdir. Return: 0; -ENOENT, -ENAMETOOLONG. */
static int find_shim(char *out, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n > 0) {
		exe[n] = 0;
		if ((size_t)snprintf(out, len, "%s/%s", dirname(exe), SHIM_NAME) < len &&
		    !access(out, R_OK))
			return 0;
		/* dirname() cut exe to the directory */
		if ((size_t)snprintf(out, len, "%s/%s/%s", exe, USWAP_BIN_TO_LIB, SHIM_NAME) < len &&
		    !access(out, R_OK))
			return 0;
	}
	if ((size_t)snprintf(out, len, "%s/%s", USWAP_LIBDIR, SHIM_NAME) >= len)
		return -ENAMETOOLONG;
	return access(out, R_OK) ? -ENOENT : 0;
}

/* Whether capability @cap is in our effective set. Context: any. */
static bool has_cap(int cap)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");
	bool yes = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "CapEff:", 7))
			yes = (strtoull(line + 7, NULL, 16) >> cap) & 1;
	fclose(f);
	return yes;
}

/* The start-up check: read the kernel's uffd features; print what holds when
 * asked (-v) or when something is missing (the program's stderr is often
 * ours). Return: 0 and *@features, -errno (printed) if we cannot work. */
static int startup_check(const char *shim, uint64_t *features, bool verbose)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_api fapi = { .api = UFFD_API, .features = RT_FEATURES_FORK };
	const char *how = "userfaultfd(2)";
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC), err;
	bool fork_ok = false;

	if (fd < 0) {
		how = "/dev/userfaultfd";
		fd = rt_uffd_open(O_CLOEXEC);
	}
	if (fd < 0) {
		fprintf(stderr, "uswap run: userfaultfd is not available (%s): needs CAP_SYS_PTRACE, "
			"vm.unprivileged_userfaultfd=1 or access to /dev/userfaultfd\n", strerror(-fd));
		return -EPERM;
	}
	if (ioctl(fd, UFFDIO_API, &api)) {
		err = -errno;
		fprintf(stderr, "uswap run: UFFDIO_API: %s\n", strerror(-err));
		close(fd);
		return err;
	}
	close(fd);
	/* EVENT_FORK needs CAP_SYS_PTRACE in the task that calls UFFDIO_API
	 * (us, on the programs' uffds): try it on a second uffd. */
	if ((api.features & RT_FEATURES_FORK) == RT_FEATURES_FORK) {
		fd = rt_uffd_open(O_CLOEXEC);
		fork_ok = fd >= 0 && !ioctl(fd, UFFDIO_API, &fapi);
		if (fd >= 0)
			close(fd);
	}
	*features = api.features & ~(fork_ok ? 0 : (uint64_t)UFFD_FEATURE_EVENT_FORK);
	if (!verbose && (api.features & RT_FEATURES_REQUIRED) == RT_FEATURES_REQUIRED && fork_ok &&
	    (api.features & (UFFD_FEATURE_POISON | UFFD_FEATURE_WP_ASYNC)) ==
	    (UFFD_FEATURE_POISON | UFFD_FEATURE_WP_ASYNC))
		return 0;
#define YN(f) ((api.features & (f)) ? "yes" : "no")
	fprintf(stderr, "uswap run: start-up check\n"
		"  userfaultfd: available through %s; uid %d, CAP_SYS_PTRACE %s\n"
		"  features: MOVE %s, EVENT_REMOVE %s, EVENT_UNMAP %s, EVENT_REMAP %s, POISON %s, "
		"THREAD_ID %s, EVENT_FORK %s%s, WP_ASYNC %s (written bits for the cold-page choice)\n"
		"  shim: %s\n", how, (int)getuid(), has_cap(CAP_SYS_PTRACE) ? "yes" : "no",
		YN(UFFD_FEATURE_MOVE), YN(UFFD_FEATURE_EVENT_REMOVE), YN(UFFD_FEATURE_EVENT_UNMAP),
		YN(UFFD_FEATURE_EVENT_REMAP), YN(UFFD_FEATURE_POISON), YN(UFFD_FEATURE_THREAD_ID),
		YN(UFFD_FEATURE_EVENT_FORK), fork_ok ? "" :
		(api.features & UFFD_FEATURE_EVENT_FORK) ? " (not usable: needs CAP_SYS_PTRACE)" : "",
		YN(UFFD_FEATURE_WP_ASYNC), shim);
#undef YN
	if ((api.features & RT_FEATURES_REQUIRED) != RT_FEATURES_REQUIRED) {
		fprintf(stderr, "uswap run: this kernel lacks UFFDIO_MOVE or the REMOVE/UNMAP/REMAP "
			"events: pages could not be evicted without losing writes; refusing to run\n");
		return -EOPNOTSUPP;
	}
	fprintf(stderr,
		"  guarantees: evicted pages come back intact (eviction by UFFDIO_MOVE); munmap, "
		"madvise and mremap are followed; %s; static and setuid programs run without a "
		"budget; if uswap run dies, the program is killed with a message%s\n",
		fork_ok ?
		"fork is followed by fork events (a child shares its parent's swapped pages, swap "
		"counts 2, as in the kernel; a raw clone() without CLONE_VM too)" :
		"fork events are not available, so a child of fork() gets a fully resident copy "
		"(its parent's pages are brought in first); a raw clone() without CLONE_VM is not "
		"followed",
		(api.features & UFFD_FEATURE_POISON) ? "; a page lost to a device read error raises "
		"SIGBUS for that page alone" : "");
	return 0;
}

/* "SPEC[,prio=N]": swap it on. Return: the type, or -errno (printed). */
static int swapon_one(const char *arg, const char *design)
{
	char spec[512], err[256] = "";
	char *p;
	int flags = 0, type;

	snprintf(spec, sizeof(spec), "%s", arg);
	p = strstr(spec, ",prio=");
	if (p) {
		char *end;
		long prio;

		errno = 0;
		prio = strtol(p + 6, &end, 10);
		if (end == p + 6 || *end || errno || prio < 0 || prio > SWAP_FLAG_PRIO_MASK) {
			fprintf(stderr, "uswap run: --swap %s: bad priority\n", arg);
			return -EINVAL;
		}
		flags = SWAP_FLAG_PREFER | (int)prio;
		*p = 0;
	}
	type = uswap_swapon_spec_design(spec, flags, design, err, sizeof(err));
	if (type < 0)
		fprintf(stderr, "uswap run: --swap %s: %s%s%s\n", arg, strerror(-type),
			err[0] ? ": " : "", err);
	return type;
}

/* Close every descriptor that came with message @mh. */
static void close_fds(struct msghdr *mh)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			for (size_t k = 0; k < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++)
				close(((int *)CMSG_DATA(cm))[k]);
}

/* Into @fds, the descriptors of @mh if it carries exactly @n in one
 * SCM_RIGHTS and nothing else. Return: true if so; else false, all closed. */
static bool take_fds(struct msghdr *mh, int *fds, size_t n)
{
	struct cmsghdr *cm = CMSG_FIRSTHDR(mh);

	if (!(mh->msg_flags & MSG_CTRUNC) && cm && cm->cmsg_level == SOL_SOCKET &&
	    cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(n * sizeof(int)) &&
	    !CMSG_NXTHDR(mh, cm)) {
		memcpy(fds, CMSG_DATA(cm), n * sizeof(int));
		return true;
	}
	close_fds(mh);
	return false;
}

/* A refusal on our stderr, at most 32 a run (a connect loop cannot flood it). */
static void say_refused(struct rt_sup *sup, pid_t pid, uid_t uid, const char *why)
{
	if (sup->refusals++ < 32)
		fprintf(stderr, "uswap run: a connection from pid %d (uid %u) was refused: %s\n",
			(int)pid, (unsigned int)uid, why);
}

/* Answer `uswap stat`: the live counters, one packet. */
static void answer_stat(const struct rt_sup *sup, int fd)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return;
	rt_stats_json(f, sup, -1);
	fclose(f);
	send(fd, buf, len, MSG_NOSIGNAL);
	free(buf);
}

/**
 * rt_sup_hello() - take the first message of connection @fd (non-blocking):
 * a process's hello with its fds, a forked child's hello, or a `uswap stat`
 * request. A hello must come from a process of the program's tree, a stat
 * request from our own user or root, as the kernel names the sender
 * (rt_peer()); every field and descriptor is checked (docs/SECURITY.md),
 * anything else closes the connection. @fd is made blocking once its
 * message has come. Context: supervisor thread.
 * Return: false if nothing has come yet (@fd kept open), true when @fd was
 * taken over or closed.
 */
bool rt_sup_hello(struct rt_sup *sup, int fd)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} c;
	struct rt_hello h;
	struct iovec iov = { .iov_base = &h, .iov_len = sizeof(h) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = c.buf, .msg_controllen = sizeof(c.buf) };
	struct rt_hello_ack ack = { .type = RT_HELLO_ACK };
	struct rt_session *s;
	int fds[2] = { -1, -1 }, pidfd = -1;
	const char *why = NULL;
	pid_t pid = 0;
	uid_t uid = (uid_t)-1;
	ssize_t r;

	memset(&h, 0, sizeof(h));
	r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return false;
	if (r < 0)
		mh.msg_controllen = 0;	/* nothing came: no descriptor to close */
	if (r > 0 && rt_peer(fd, &pid, &uid, &pidfd))
		r = -1;
	if (r != (ssize_t)sizeof(h) || (mh.msg_flags & MSG_TRUNC) ||
	    (h.type != RT_STAT && h.type != RT_HELLO && h.type != RT_HELLO_FORK)) {
		close_fds(&mh);
		goto out;
	}
	if (h.type == RT_STAT)
		why = uid == 0 || uid == geteuid() ? NULL :
		      "uswap stat answers only its own user or root";
	else if (pid <= 0 || !rt_in_tree(pid, sup->inherited, sup->nr_inherited) ||
		 !rt_pidfd_alive(pidfd))
		why = "not a process of the program's tree";
	else
		why = rt_hello_check(&h);
	if (!why)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if (why || h.type == RT_STAT) {
		close_fds(&mh);
		if (why)
			say_refused(sup, pid, uid, why);
		else
			answer_stat(sup, fd);
		goto out;
	}
	if (!take_fds(&mh, fds, h.type == RT_HELLO_FORK ? 1 : 2)) {
		say_refused(sup, pid, uid, h.type == RT_HELLO_FORK ?
			    "a forked child's hello without its buffer" :
			    "a hello without its userfaultfd and buffer");
		goto out;
	}
	if (h.type == RT_HELLO_FORK) {	/* a forked child's shim (fork.c) */
		rt_fork_hello(sup, fd, pid, fds[0]);
		if (pidfd >= 0)
			close(pidfd);
		return true;
	}
	if ((ack.err = rt_uffd_adopt(fds[0], sup->features)) == 0 &&
	    (ack.err = rt_session_create(sup, fd, pid, pidfd, &h, fds[0], fds[1], &s)) == 0) {
		fcntl(fd, F_SETFL, O_NONBLOCK);
		pidfd = -1;	/* the session's */
	}
	/* What was enabled (UFFDIO_API answers with everything it supports). */
	ack.features = sup->features;
	send(fd, &ack, sizeof(ack), MSG_NOSIGNAL);
	close(fds[1]);
	if (ack.err) {
		fprintf(stderr, "uswap run: pid %d refused: %s\n", (int)pid, strerror(-ack.err));
		sup->nr_refused++;
		close(fds[0]);
		goto out;
	}
	return true;
out:
	if (pidfd >= 0)
		close(pidfd);
	close(fd);
	return true;
}

/*
 * --memory-total: the resident budget is what the bound leaves after the
 * compressed store (zram's pool; its slot array, fixed at swapon, counts as
 * our overhead), within [PG_TOTAL_FLOOR, --memory] pages; a store that
 * leaves less than the floor kills the program as an OOM would. Peaks are
 * kept with or without the bound: without it, the store is read once a
 * millisecond at most (RT_STORE_EVERY_NS), not at every turn.
 */
#define RT_STORE_EVERY_NS	1000000	/* the store's size read, without --memory-total */

static void bound_total(struct rt_sup *sup)
{
	uint64_t cp, room, sum = 0, now = now_ns();

	if (!sup->total && now - sup->compressed_ns < RT_STORE_EVERY_NS)
		return;
	sup->compressed_ns = now;
	for (unsigned int i = 0; i < sup->nr_types; i++) {
		struct uswap_swap_stat st;

		if (!uswap_swap_stat((unsigned int)sup->types[i], &st))
			sum += st.compressed_bytes;
	}
	sup->compressed = sum;
	cp = (sup->compressed + RT_PAGE - 1) / RT_PAGE;
	if (sup->compressed > sup->peak_compressed)
		sup->peak_compressed = sup->compressed;
	if (sup->tree.resident + cp > sup->peak_total)
		sup->peak_total = sup->tree.resident + cp;
	if (!sup->total)
		return;
	room = sup->total > cp ? sup->total - cp : 0;
	if (room < PG_TOTAL_FLOOR && !sup->kill_reason && sup->child > 0) {
		fprintf(stderr, "uswap run: the compressed store (%llu bytes) fills --memory-total: "
			"killing pid %d as the OOM killer would\n",
			(unsigned long long)sup->compressed, (int)sup->child);
		sup->kill_reason = "out of memory: --memory-total reached (killed by uswap run)";
		kill(sup->child, SIGKILL);
	}
	if (room < PG_TOTAL_FLOOR)
		room = PG_TOTAL_FLOOR;
	sup->tree.budget = room < sup->resident_budget ? room : sup->resident_budget;
}

/* The Locked: field of /proc/@pid/smaps_rollup, in pages (0 if unread). */
static uint64_t locked_pages(pid_t pid)
{
	char path[64], line[128];
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Locked: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb / 4;
}

/*
 * The tree is over budget + slack: look at the pages it has locked (mlock:
 * the kernel will not move them). As a memory cgroup would, once they alone
 * are over the budget, the process holding the most is killed with a
 * message; under the budget they are counted (peak_locked) and left be.
 */
static void rt_sup_locked(struct rt_sup *sup)
{
	struct rt_session *worst = NULL;
	uint64_t total = 0, worst_n = 0, now = now_ns();

	if (now - sup->locked_ns < RT_LOCKED_EVERY_NS)
		return;
	sup->locked_ns = now;
	for (struct rt_session *s = sup->sessions; s; s = s->next) {
		uint64_t n;

		if (s->dead || s->pid <= 0)
			continue;
		n = locked_pages(s->pid);
		total += n;
		if (n > worst_n) {
			worst = s;
			worst_n = n;
		}
	}
	if (total > sup->st.peak_locked)
		sup->st.peak_locked = total;
	if (worst && total > sup->tree.budget) {
		sup->st.locked_kills++;
		rt_session_kill(worst, "locked memory (mlock) is over the budget");
		sup->kill_reason = "locked memory over the budget (killed by uswap run)";
	}
}

/* Each turn: the --memory-total bound, the pages a fork left aside, then
 * eviction ahead of demand, unless the last batches freed nothing and no
 * fault came since (*@stall_mark: st.faults at the last reclaim). */
static void balance(struct rt_sup *sup, uint64_t *stall_mark)
{
	bound_total(sup);
	rt_fork_account(sup);
	if (sup->tree.resident > sup->tree.budget + sup->slack)
		rt_sup_locked(sup);
	if (sup->stalled && sup->st.faults == *stall_mark)
		return;
	*stall_mark = sup->st.faults;
	rt_sup_reclaim(sup);
}

/* --json: write the counters to @fd (opened by the cli, @path names it in
 * messages) and close it. Context: the end of the run. */
static void write_json(const struct rt_sup *sup, int fd, const char *path, int status)
{
	FILE *f = fd >= 0 && !ftruncate(fd, 0) ? fdopen(fd, "w") : NULL;

	if (!f) {
		fprintf(stderr, "uswap run: --json %s: %s\n", path ? path : "", strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	rt_stats_json(f, sup, status);
	if (fclose(f))
		fprintf(stderr, "uswap run: --json %s: %s\n", path ? path : "", strerror(errno));
}

/* Call @fn(@arg) with each child of ours (/proc/self/task/TID/children: an
 * orphan may be reparented to any thread). Return: true once @fn does. */
static bool each_child(struct rt_sup *sup, bool (*fn)(struct rt_sup *, pid_t, void *),
		       void *arg)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	bool hit = false;

	if (!d)
		return false;
	while (!hit && (e = readdir(d))) {
		char path[300];
		FILE *f;
		long pid;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/children", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		while (!hit && fscanf(f, "%ld", &pid) == 1)
			hit = fn(sup, (pid_t)pid, arg);
		fclose(f);
	}
	closedir(d);
	return hit;
}

/* each_child(): note a child we had before the program. */
static bool note_inherited(struct rt_sup *sup, pid_t pid, void *arg)
{
	if (sup->nr_inherited < sizeof(sup->inherited) / sizeof(sup->inherited[0]))
		sup->inherited[sup->nr_inherited++] = pid;
	return false;
}

/* each_child(): true for a process of the program's tree. */
static bool of_tree(struct rt_sup *sup, pid_t pid, void *arg)
{
	for (unsigned int i = 0; i < sup->nr_inherited; i++)
		if (sup->inherited[i] == pid)
			return false;
	return true;
}

/* each_child(): pass the signal *@arg on to a process of the tree. */
static bool signal_tree(struct rt_sup *sup, pid_t pid, void *arg)
{
	if (of_tree(sup, pid, NULL))
		kill(pid, *(const int *)arg);
	return false;
}

/* each_child(): count the processes of the tree in *@arg. */
static bool count_tree(struct rt_sup *sup, pid_t pid, void *arg)
{
	*(unsigned int *)arg += of_tree(sup, pid, NULL);
	return false;
}

/* A signal sent to us goes to the program's first process while it lives;
 * once it is reaped (its pid may be reused), to its tree reparented to us. */
static void forward_signal(struct rt_sup *sup, int sig, bool child_done)
{
	if (!child_done)
		kill(sup->child, sig);
	else
		each_child(sup, signal_tree, &sig);
}

/* The first process has exited but its tree lives on (daemons): say so
 * once, a second later (a child exiting with its parent is no daemon). */
static void note_daemons(struct rt_sup *sup, int status, uint64_t done_ns, bool *said)
{
	unsigned int nr = 0;

	if (*said || now_ns() - done_ns < 1000000000ULL)
		return;
	*said = true;
	each_child(sup, count_tree, &nr);
	if (!nr)
		return;
	fprintf(stderr, "uswap run: the program's first process %s %d; %u process%s of its tree "
		"live%s on (daemons): their memory is served until they exit, and a signal to uswap "
		"run goes to them\n", WIFEXITED(status) ? "exited with status" : "was killed by signal",
		WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), nr,
		nr == 1 ? "" : "es", nr == 1 ? "s" : "");
}

/* Reap the exited children (the first one's wait status into *@status, *@done
 * set). Children we had before the program (a shell's `2> >(filter)`) are not
 * of the tree. Return: true while any process of the tree lives. */
static bool reap(struct rt_sup *sup, int *status, bool *done)
{
	for (;;) {
		int ws;
		pid_t w = waitpid(-1, &ws, WNOHANG);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;		/* none exited (0), or none at all (ECHILD) */
		if (w == sup->child) {
			*status = ws;
			*done = true;
		}
	}
	return each_child(sup, of_tree, NULL);
}

/*
 * Each followed process holds four of the supervisor's descriptors (its
 * socket, uffd, pidfd and pagemap), and a hello needs a few more while it
 * is checked: take the soft RLIMIT_NOFILE up to the hard one, after the
 * program started with the limits it was given. Out of descriptors all the
 * same, a new process is refused and runs without a budget (it says so),
 * and a child met by a fork event is killed (docs/RUNTIME.md, "Known
 * limits"). Context: start-up, after start_program().
 */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Fork and exec @argv with the shim preloaded, @sock in its environment and
 * signal mask @oldmask. The LD_PRELOAD value is made before the fork: a
 * child that could not make it would run without the shim, unswapped and
 * unbudgeted, with nobody told. Return: its pid, or -1 (errno) if that
 * allocation or fork failed. */
static pid_t start_program(char **argv, const char *shim, const char *sock,
			   const sigset_t *oldmask)
{
	const char *old = getenv("LD_PRELOAD");
	char *pre = uswap_malloc(strlen(shim) + (old ? strlen(old) : 0) + 2);
	pid_t pid;

	if (!pre) {
		errno = ENOMEM;
		return -1;
	}
	sprintf(pre, "%s%s%s", shim, old && *old ? ":" : "", old ? old : "");
	pid = fork();
	if (pid) {
		free(pre);
		return pid;
	}
	setenv("LD_PRELOAD", pre, 1);
	setenv(RT_ENV_SOCK, sock, 1);
	sigprocmask(SIG_SETMASK, oldmask, NULL);
	execvp(argv[0], argv);
	fprintf(stderr, "uswap run: %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/*
 * Once the program runs, keep only the capabilities we use: CAP_SYS_PTRACE
 * (EVENT_FORK, the pagemap of a process not dumpable or of another user),
 * CAP_KILL (killing a process that changed its user) and, with @keep_nice,
 * CAP_SYS_NICE (the serving thread's way back from SCHED_IDLE,
 * colocate.c), none inheritable nor ambient; and be not dumpable: our heap
 * holds the tree's swapped pages.
 */
static void drop_privileges(bool keep_nice)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };
	const int keep[] = { CAP_SYS_PTRACE, CAP_KILL, keep_nice ? CAP_SYS_NICE : CAP_KILL };

	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	for (unsigned int i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (has_cap(keep[i])) {
			d[keep[i] / 32].permitted |= 1U << (keep[i] % 32);
			d[keep[i] / 32].effective |= 1U << (keep[i] % 32);
		}
	if (syscall(SYS_capset, &hdr, d))
		fprintf(stderr, "uswap run: cannot drop capabilities: %s\n", strerror(errno));
}

/*
 * The event loop: one level-triggered epoll, one handler per descriptor
 * (struct rt_ev as the epoll data). Watched: the listening socket and the
 * signalfd; a connection until its first message (sup->hello); a session's
 * uffd (unless held) and socket (until orphaned) from the turn after they
 * come to just before rt_session_destroy().
 * A turn: watch what changed, wait, call the handlers, expire the hellos,
 * look at the uffds' flags, then each session's steps and balance().
 * Handlers never free a session (only loop_sessions() does), so no event of
 * a wait points at freed memory; a hello slot freed or reused by an earlier
 * handler of the same wait gets a spurious call, which finds nothing.
 */
struct rt_loop {
	struct rt_sup *sup;
	int epfd;
	struct rt_ev listen, signals, copied;
	int status;			/* the program's wait status ... */
	bool child_done;		/* ... once its first process was reaped */
	uint64_t done_ns;		/* when (CLOCK_MONOTONIC) */
	bool said_daemons;		/* note_daemons() spoke */
	uint64_t flags_ns;		/* loop_check_flags()'s last look */
	uint64_t spin_faults;		/* --poll-us: st.faults at the last spin's decision */
	uint64_t idle_from;		/* when the last turn that read a fault went to wait */
	bool near;			/* this turn's fault came within the spin window */
	int reserve_fd;			/* /dev/null, closed to refuse a connection when out of them */
	uint64_t listen_resume_ns;	/* not even that: accept again then (0: watching) */
	bool said_nofile;		/* out of descriptors was said */
};

typedef void rt_ev_fn(struct rt_loop *lp, struct rt_ev *ev, uint32_t events);

/* Watch @fd for input, calling @fn(@arg) with @ev. Return: 0, -errno. */
static int ev_add(struct rt_loop *lp, struct rt_ev *ev, int fd, rt_ev_fn *fn, void *arg)
{
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = ev };

	if (epoll_ctl(lp->epfd, EPOLL_CTL_ADD, fd, &e))
		return -errno;
	ev->fn = fn;
	ev->arg = arg;
	ev->fd = fd;
	return 0;
}

/* Stop watching @ev's descriptor before it is closed or handed on (a uffd's
 * file is the program's too: our close alone would leave it in the epoll). */
static void ev_del(struct rt_loop *lp, struct rt_ev *ev)
{
	if (ev->fn)
		epoll_ctl(lp->epfd, EPOLL_CTL_DEL, ev->fd, NULL);
	ev->fn = NULL;
}

/* Make @ev watch @fd (-1: nothing) with @fn(@arg). One that cannot be watched
 * would leave its process waiting: we exit, the tree with us (watchdogs). */
static void ev_set(struct rt_loop *lp, struct rt_ev *ev, int fd, rt_ev_fn *fn, void *arg)
{
	int err;

	if (ev->fn && ev->fd == fd)
		return;
	ev_del(lp, ev);
	if (fd >= 0 && (err = ev_add(lp, ev, fd, fn, arg))) {
		fprintf(stderr, "uswap run: epoll: %s: exiting, every process of the tree is "
			"killed\n", strerror(-err));
		exit(1);
	}
}

/* Handler: @ev's session's uffd has messages (or an error). */
static void on_uffd(struct rt_loop *lp, struct rt_ev *ev, uint32_t events)
{
	struct rt_session *s = ev->arg;

	if ((events & EPOLLIN) || s->uffd_held)
		rt_session_uffd(s);
	else if (events & EPOLLERR)
		rt_session_uffd_error(s);
}

/* Handler: @ev's session's socket has messages, or hung up. */
static void on_sock(struct rt_loop *lp, struct rt_ev *ev, uint32_t events)
{
	struct rt_session *s = ev->arg;

	if (s->phase != RT_PH_ORPHAN && rt_session_sock(s))
		rt_session_orphan(s);
}

/* Handler: the copy thread's run is over (copier.h). */
static void on_copied(struct rt_loop *lp, struct rt_ev *ev, uint32_t events)
{
	(void)ev;
	(void)events;
	rt_sup_copied(lp->sup, false);
}

/* Watch what session @s has now: its uffd unless held or its run at the
 * copy thread (watched, it would wake us at once), its socket until it
 * hangs up. */
static void loop_watch(struct rt_loop *lp, struct rt_session *s)
{
	ev_set(lp, &s->ev_uffd, s->uffd_held || s->copying ? -1 : s->uffd, on_uffd, s);
	ev_set(lp, &s->ev_sock, s->phase == RT_PH_ORPHAN ? -1 : s->sock, on_sock, s);
}

/* Stop watching waiting connection @ev (closed when @close_it). */
static void hello_drop(struct rt_loop *lp, struct rt_ev *ev, bool close_it)
{
	int fd = ev->fd;

	ev_del(lp, ev);
	if (close_it)
		close(fd);
	lp->sup->nr_hello--;
}

static void on_hello(struct rt_loop *lp, struct rt_ev *ev, uint32_t events);

/* Watch connection @fd in hello slot @ev until its first message, or close it. */
static void hello_keep(struct rt_loop *lp, struct rt_ev *ev, int fd)
{
	if (ev_add(lp, ev, fd, on_hello, NULL))
		close(fd);
	else
		lp->sup->nr_hello++;
}

/* Handler: a waiting connection has its first message, or hung up. It
 * leaves the loop first: rt_sup_hello() closes it or hands it on. */
static void on_hello(struct rt_loop *lp, struct rt_ev *ev, uint32_t events)
{
	int fd = ev->fd;

	hello_drop(lp, ev, false);
	if (!rt_sup_hello(lp->sup, fd))
		hello_keep(lp, ev, fd);		/* nothing yet: its deadline stands */
}

/* Close the connections that have waited RT_HELLO_NS.
 * Return: ms until the next one's deadline, or @max if none comes sooner. */
static int hello_expire(struct rt_loop *lp, int max)
{
	struct rt_sup *sup = lp->sup;
	uint64_t now = now_ns(), left = (uint64_t)max * 1000000;

	for (unsigned int k = 0; k < RT_HELLO_WAIT; k++) {
		uint64_t age = now - sup->hello_ns[k];

		if (!sup->hello[k].fn)
			continue;
		if (age > RT_HELLO_NS)
			hello_drop(lp, &sup->hello[k], true);
		else if (RT_HELLO_NS - age < left)
			left = RT_HELLO_NS - age;
	}
	return (int)((left + 999999) / 1000000);
}

#define RT_LISTEN_PAUSE_NS	10000000	/* no descriptor even to refuse: 10 ms between tries */

/*
 * accept4() found no descriptor (@err): take the connection with the one
 * held in reserve and refuse it at once (RT_HELLO_ACK, -@err): the process
 * runs without a budget and says so, or, a child met by a fork event,
 * kills itself. Left queued, it would wait for a descriptor that the
 * processes holding them, waiting for it, might never free. With no
 * reserve either, the socket is left unwatched for RT_LISTEN_PAUSE_NS
 * (level-triggered, it would wake every turn: a spin; loop_listen()).
 * Context: supervisor thread (on_listen()).
 */
static void refuse_nofile(struct rt_loop *lp, struct rt_ev *ev, int err)
{
	struct rt_hello_ack ack = { .type = RT_HELLO_ACK, .err = -err };
	int fd = -1;

	if (!lp->said_nofile)
		fprintf(stderr, "uswap run: out of descriptors (%s): new processes of the tree are "
			"refused and run without a budget\n", strerror(err));
	lp->said_nofile = true;
	if (lp->reserve_fd >= 0) {
		close(lp->reserve_fd);
		fd = accept4(ev->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0) {
			send(fd, &ack, sizeof(ack), MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			lp->sup->nr_refused++;
		}
		lp->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0) {
		ev_del(lp, ev);
		lp->listen_resume_ns = now_ns() + RT_LISTEN_PAUSE_NS;
	}
}

/* Handler: a process connects. Its first message is taken if it has come;
 * else it waits in a hello slot (the oldest closed when all are taken).
 * Out of descriptors: refuse_nofile(). */
static void on_listen(struct rt_loop *lp, struct rt_ev *ev, uint32_t events)
{
	struct rt_sup *sup = lp->sup;
	int fd = accept4(ev->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	unsigned int k, old = 0;

	if (fd < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
		refuse_nofile(lp, ev, errno);
		return;
	}
	if (fd < 0 || rt_sup_hello(sup, fd))
		return;
	for (k = 0; k < RT_HELLO_WAIT && sup->hello[k].fn; k++)
		if (sup->hello_ns[k] < sup->hello_ns[old])
			old = k;
	if (k == RT_HELLO_WAIT) {
		hello_drop(lp, &sup->hello[old], true);
		k = old;
	}
	sup->hello_ns[k] = now_ns();
	hello_keep(lp, &sup->hello[k], fd);
}

/* Watch the listening socket again once its pause (refuse_nofile()) is
 * over. Context: supervisor thread, each turn. Return: ms until then (at
 * least 1), or @max if it is watched. */
static int loop_listen(struct rt_loop *lp, int max)
{
	uint64_t now = now_ns();

	if (!lp->listen_resume_ns)
		return max;
	if (now >= lp->listen_resume_ns) {
		lp->listen_resume_ns = 0;
		ev_set(lp, &lp->listen, lp->listen.fd, on_listen, NULL);
		return max;
	}
	now = (lp->listen_resume_ns - now + 999999) / 1000000;
	return now < (uint64_t)max ? (int)now : max;
}

/* Handler: signals came: SIGCHLD reaps, the others are passed on. */
static void on_signals(struct rt_loop *lp, struct rt_ev *ev, uint32_t events)
{
	struct signalfd_siginfo si;

	while (read(ev->fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo != SIGCHLD) {
			forward_signal(lp->sup, (int)si.ssi_signo, lp->child_done);
			continue;
		}
		reap(lp->sup, &lp->status, &lp->child_done);
		if (lp->child_done && !lp->done_ns)
			lp->done_ns = now_ns();
	}
}

/* Whether the @n events of @evs are all the followed process's uffd. */
static bool only_followed(const struct rt_sup *sup, const struct epoll_event *evs, int n)
{
	for (int i = 0; i < n; i++)
		if (evs[i].data.ptr != sup->colo.key)
			return false;
	return n > 0;
}

/*
 * Wait for events, into @evs, for at most @timeout ms. --poll-us: after a
 * turn that read a fault, spin for the next one (yielding) if that fault
 * came within the window and only one process faulted for RT_ALONE_NS
 * (a fork's parent and child faulting at once keep both CPUs).
 * Return: the number of events, -1 on error (errno set by epoll_wait).
 */
static int loop_wait(struct rt_loop *lp, struct epoll_event *evs, bool stepping, int timeout)
{
	struct rt_sup *sup = lp->sup;
	bool waited;
	int n;

	if (sup->st.faults != lp->spin_faults) {
		uint64_t t0 = now_ns();

		lp->spin_faults = sup->st.faults;
		if (!stepping && sup->poll_us && lp->near &&
		    t0 - sup->fault_switch_ns > RT_ALONE_NS) {
			while ((n = epoll_wait(lp->epfd, evs, RT_EV_BATCH, 0)) == 0 &&
			       now_ns() - t0 < sup->poll_us * 1000)
				sched_yield();
			sup->st.poll_spins++;
			sup->st.poll_ns += now_ns() - t0;
			if (n > 0) {
				sup->st.poll_hits++;
				lp->near = true;
				rt_colo_turn(&sup->colo, only_followed(sup, evs, n));
				return n;
			}
		}
		lp->idle_from = t0;
	}
	n = 0;
	waited = true;
	if (sup->colo.usable) {	/* following: did this turn's events find us awake? */
		n = epoll_wait(lp->epfd, evs, RT_EV_BATCH, 0);
		waited = n == 0;
	}
	if (waited) {
		rt_colo_no_fault(&sup->colo);
		if (timeout)
			rt_colo_normal(&sup->colo);	/* not asleep at SCHED_IDLE */
		n = epoll_wait(lp->epfd, evs, RT_EV_BATCH, timeout);
	}
	rt_colo_turn(&sup->colo, only_followed(sup, evs, n));
	/* near: a spin would have met this turn's fault; twice the window,
	 * as the time measured after a sleep holds our own wake-up too */
	lp->near = sup->poll_us && now_ns() - lp->idle_from < sup->poll_us * 2000;
	return n;
}

/* A uffd the program made blocking says so only by EPOLLERR, which epoll
 * asks for only when the uffd is woken: look at each session's flag. */
static void loop_check_flags(struct rt_loop *lp)
{
	uint64_t now = now_ns();

	if (now - lp->flags_ns < RT_FLAGS_EVERY_NS)
		return;
	lp->flags_ns = now;
	for (struct rt_session *s = lp->sup->sessions; s; s = s->next)
		rt_session_uffd_error(s);
}

/*
 * Store pages of @s's answered batch: RT_STEP_PAGES of them, or, while two
 * processes fault in turns (rt_two_faulting()), one at a time until an
 * event waits (epoll, level-triggered, keeps it for the next turn). A fault
 * of one process then waits for one compression of another's batch, not
 * eight: a forked child reading everything stores a batch every few of
 * the parent's faults (docs/RUNTIME.md, "Two processes faulting"). A
 * process faulting alone keeps the eight: its own stores, cut short at
 * each of its faults, cost it more turns than they save.
 * Context: supervisor thread.
 */
static void loop_store(struct rt_loop *lp, struct rt_session *s)
{
	struct epoll_event ev;

	if (!rt_two_faulting(lp->sup)) {
		rt_session_batch_step(s, RT_STEP_PAGES);
		return;
	}
	for (int k = 0; k < RT_STEP_PAGES && rt_session_batch_step(s, 1); k++)
		if (epoll_wait(lp->epfd, &ev, 1, 0) > 0)
			break;
}

/*
 * Each session's work of the turn, after the handlers: a held uffd is tried
 * again; a session whose process has gone is destroyed; the others store a
 * few pages of an answered batch, serve what faults they can, and go on
 * with a fork.
 */
static void loop_sessions(struct rt_loop *lp)
{
	struct rt_sup *sup = lp->sup;
	struct rt_session **pp = &sup->sessions;

	rt_sup_copied(sup, false);	/* over during the turn: its faults served below */
	while (*pp) {
		struct rt_session *s = *pp;
		bool gone = false;

		if (s->uffd_held && !s->ev_uffd.fn)
			rt_session_uffd(s);
		/* An orphan whose mm lives closed the shim's descriptors:
		 * its faults are served until it goes. */
		if (s->phase == RT_PH_ORPHAN)
			gone = !rt_session_mm_alive(s);
		else if (s->forked && s->sock < 0)	/* not met yet */
			gone = !rt_fork_mm_alive(s);
		if (!gone) {
			loop_store(lp, s);
			rt_session_retry(s);
			rt_session_prefork(s);
			pp = &s->next;
			continue;
		}
		if (s->forked)
			sup->st.fork_sessions_ended++;
		while (*pp != s)	/* a FORK event read above put its child first */
			pp = &(*pp)->next;
		*pp = s->next;
		ev_del(lp, &s->ev_uffd);
		ev_del(lp, &s->ev_sock);
		rt_session_destroy(s);
	}
}

/* The event loop for @sup, watching @lfd (listening) and @sfd (signals).
 * Return: 0, -errno. */
static int loop_init(struct rt_loop *lp, struct rt_sup *sup, int lfd, int sfd)
{
	int err;

	*lp = (struct rt_loop){ .sup = sup, .reserve_fd = -1 };
	lp->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (lp->epfd < 0)
		return -errno;
	if ((err = ev_add(lp, &lp->listen, lfd, on_listen, NULL)) ||
	    (err = ev_add(lp, &lp->signals, sfd, on_signals, NULL))) {
		close(lp->epfd);
		return err;
	}
	lp->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return 0;
}

/* Close what loop_init() opened. Context: supervisor thread, at the end. */
static void loop_fini(struct rt_loop *lp)
{
	close(lp->epfd);
	if (lp->reserve_fd >= 0)
		close(lp->reserve_fd);
}

/* The event loop, until the program's tree has gone (we are its subreaper:
 * none of it can be between an exec() and its new shim's HELLO when we
 * leave). Return: the program's wait status. */
static int serve(struct rt_loop *lp)
{
	struct rt_sup *sup = lp->sup;
	struct epoll_event evs[RT_EV_BATCH];
	uint64_t stall_mark = 0;
	int idle_ms = 100;		/* the longest sleep: 100 ms, or a hello's deadline */

	for (;;) {
		bool busy = false, stepping = false;
		int n;

		if (lp->child_done && !sup->sessions && !sup->nr_hello &&
		    !reap(sup, &lp->status, &lp->child_done))
			break;
		for (struct rt_session *s = sup->sessions; s; s = s->next) {
			loop_watch(lp, s);
			busy |= s->pg.nr_pending || s->phase == RT_PH_PREFORK ||
				s->phase == RT_PH_ORPHAN || s->uffd_held || s->copying;
			stepping |= s->batch == RT_B_ANSWERED;	/* a batch to store: no sleep */
		}
		n = loop_wait(lp, evs, stepping, stepping ? 0 : busy ? 1 : idle_ms);
		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			struct rt_ev *ev = evs[i].data.ptr;

			if (ev->fn)
				ev->fn(lp, ev, evs[i].events);
		}
		idle_ms = loop_listen(lp, hello_expire(lp, 100));
		loop_check_flags(lp);
		if (lp->child_done)
			note_daemons(sup, lp->status, lp->done_ns, &lp->said_daemons);
		loop_sessions(lp);
		balance(sup, &stall_mark);
		if (USWAP_DEBUG >= 2)
			rt_sup_check(sup);
	}
	rt_fork_free_hellos(sup);
	loop_fini(lp);
	return lp->status;
}

/** uswap_runtime_run() - see runtime/runtime.h. */
int uswap_runtime_run(const struct uswap_run_config *cfg)
{
	/* The mirror's reclaim runs on the mm layer's kswapd thread, off the
	 * event loop (docs/RUNTIME.md, "Eviction"). Its marks leave room for
	 * a whole batch: kswapd wakes with a batch's frames left (a quarter)
	 * and frees up to half, so that the stores of a batch do not reclaim
	 * on the event loop's thread. */
	struct uswap_mem_config mc = { .budget_bytes = MIRROR_FRAMES,
				       .low_pct = MIRROR_LOW_PCT, .high_pct = 2 * MIRROR_LOW_PCT };
	struct rt_sup sup = { 0 };
	struct rt_loop loop;
	char shim[PATH_MAX], sock[108];
	bool sock_temp = false;
	int types[RT_MAX_SWAP], nr_types = 0, lfd, sfd, ws = 0, ret;
	bool reached = false, ran = false;
	sigset_t mask, old;
	const char *def = "zram:4G";
	static const int sigs[] = { SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT };
#if USWAP_ALLOC_FAULTS
	bool sweeping;
#endif

	/* Before any thread exists (the devices start workers): every thread
	 * must have these blocked, or the signalfd misses them. */
	sigemptyset(&mask);
	for (unsigned int i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&mask, sigs[i]);
	sigprocmask(SIG_BLOCK, &mask, &old);
#if USWAP_ALLOC_FAULTS
	/* The allocation-failure sweep (tests/runtime/run_sweep.sh): see
	 * docs/RELIABILITY.md, "Failures on purpose", for why a root binary
	 * may honour it. */
	sweeping = secure_getenv("USWAP_FAIL_ALLOC") != NULL;
	if (uswap_alloc_fail_from_env("USWAP_FAIL_ALLOC")) {
		fprintf(stderr, "uswap run: USWAP_FAIL_ALLOC: want N or N+ with N >= 1\n");
		sigprocmask(SIG_SETMASK, &old, NULL);
		return 1;
	}
#endif
	if (find_shim(shim, sizeof(shim))) {
		fprintf(stderr, "uswap run: %s not found next to the uswap binary or in %s\n",
			SHIM_NAME, USWAP_LIBDIR);
		return 1;
	}
	if (startup_check(shim, &sup.features, cfg->verbose))
		return 1;
	/* EVENT_FORK is left only with THREAD_ID (startup_check()) */
	sup.features &= RT_FEATURES_REQUIRED | RT_FEATURES_OPTIONAL |
			(cfg->no_fork_events ? 0 : UFFD_FEATURE_EVENT_FORK);
	if (cfg->no_fork_events && cfg->verbose)
		fprintf(stderr, "  --no-fork-events: a child of fork() gets a fully resident copy\n");
	sup.resident_budget = cfg->memory / RT_PAGE;
	sup.total = cfg->memory_total / RT_PAGE;
	sup.slack = 256;	/* 1 MiB: faults beyond it wait for eviction */
	sup.poll_us = cfg->poll_us;
	for (unsigned int i = 0; i < (cfg->nr_swap ? cfg->nr_swap : 1); i++) {
		int t = swapon_one(cfg->nr_swap ? cfg->swap[i] : def, cfg->design);

		if (t < 0)
			goto out_swap;
		types[nr_types++] = t;
	}
	sup.types = types;
	sup.nr_types = (unsigned int)nr_types;
	if ((ret = uswap_mem_create(&mc, &sup.mem)) ||
	    (ret = pg_tree_init(&sup.tree, sup.mem, sup.resident_budget,
				(enum rt_evict_policy)cfg->policy))) {
		fprintf(stderr, "uswap run: memory: %s\n", strerror(-ret));
		uswap_mem_destroy(sup.mem);	/* NULL if its creation failed */
		sup.mem = NULL;
		goto out_swap;
	}
	/* Under --memory-total a kept copy would count twice (resident and
	 * compressed) and shrink the budget: copies off. */
	sup.tree.keep_copies = !sup.total && !cfg->no_keep_clean;
	if (cfg->swap_max) {
		/* The program tree's swap limit: memory.swap.max of the group
		 * its mirrors are in (docs/RUNTIME.md, "--swap-max"). */
		struct uswap_memcg_config gc = { .memory_max = UINT64_MAX,
						 .swap_max = cfg->swap_max / RT_PAGE };

		if ((ret = uswap_memcg_create(sup.mem, &gc, &sup.memcg))) {
			fprintf(stderr, "uswap run: --swap-max: %s\n", strerror(-ret));
			pg_tree_fini(&sup.tree);
			uswap_mem_destroy(sup.mem);
			sup.mem = NULL;
			goto out_swap;
		}
		sup.swap_max = gc.swap_max;
		sup.tree.memcg = sup.memcg;
	}
	sup.tree.pass_over = rt_fork_pass_shared;
	sup.tree.pass_arg = &sup;
	lfd = rt_sock_listen(sock, sizeof(sock), &sock_temp);
	if (lfd < 0) {
		fprintf(stderr, "uswap run: socket: %s\n", strerror(-lfd));
		goto out_mem;
	}
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || (ret = loop_init(&loop, &sup, lfd, sfd))) {
		fprintf(stderr, "uswap run: event loop: %s\n", strerror(sfd < 0 ? errno : -ret));
		goto out_sock;
	}
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	each_child(&sup, note_inherited, NULL);
	reached = rt_exe_check(cfg->argv[0]);
	sup.child = start_program(cfg->argv, shim, sock, &old);
	if (sup.child < 0) {
		fprintf(stderr, "uswap run: cannot start %s: %s\n", cfg->argv[0], strerror(errno));
		loop_fini(&loop);
		goto out_sock;
	}
	raise_nofile();
	drop_privileges(!cfg->no_colocate);
	rt_colo_init(&sup.colo, loop.epfd, !cfg->no_colocate);
	/* Without it, every run is copied on the serving thread. */
	if (!rt_copier_start(&sup.copier) &&
	    ev_add(&loop, &loop.copied, sup.copier.efd, on_copied, NULL))
		rt_copier_stop(&sup.copier);
	ws = serve(&loop);
	if (loop.copied.fn)
		ev_del(&loop, &loop.copied);
	rt_copier_stop(&sup.copier);
	rt_colo_fini(&sup.colo);
	ran = true;
out_sock:
	close(lfd);
	rt_sock_unlink(sock, sock_temp);
	if (sfd >= 0)
		close(sfd);
	if (ran && reached && !sup.st.sessions && sup.nr_refused)
		fprintf(stderr, "uswap run: every process of the program's tree that loaded the shim "
			"was refused (said above): nothing was swapped and --memory held nothing\n");
	else if (ran && reached && !sup.st.sessions)
		fprintf(stderr, "uswap run: no process of the program's tree loaded the shim (a static, "
			"32-bit or set-user-ID program, or LD_PRELOAD taken out of its environment): "
			"nothing was swapped and --memory held nothing\n");
	if (ran && !WIFEXITED(ws))
		fprintf(stderr, "uswap run: %s was killed by signal %d%s%s\n", cfg->argv[0],
			WTERMSIG(ws), sup.kill_reason ? ": " : "", sup.kill_reason ? sup.kill_reason : "");
	ret = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
out_mem:
	/* Before the devices are reported: the slots of pages still in the
	 * swap cache are freed only when the cache is dropped, here. */
	pg_tree_fini(&sup.tree);
	if (sup.memcg) {
		struct uswap_memcg_stats gs;

		uswap_memcg_get_stats(sup.memcg, &gs);
		sup.peak_swap_pages = gs.swap_peak;
		uswap_memcg_destroy(sup.memcg);	/* else with the budget */
		sup.memcg = NULL;
	}
	uswap_mem_get_stats(sup.mem, &sup.mem_end);	/* reported below */
	uswap_mem_destroy(sup.mem);
	sup.mem = NULL;
	if (ran && cfg->stats)
		rt_stats_print(&sup);
	if (ran && cfg->json_fd >= 0)
		write_json(&sup, cfg->json_fd, cfg->json, ret);
out_swap:
	for (int i = 0; i < nr_types; i++)
		uswap_swapoff_type((unsigned int)types[i]);
	sigprocmask(SIG_SETMASK, &old, NULL);
#if USWAP_ALLOC_FAULTS
	if (sweeping)
		fprintf(stderr, "uswap run: USWAP_FAIL_ALLOC: %" PRIu64 " allocations counted, %"
			PRIu64 " failed (the last at uswap_runtime_run%+td)\n", uswap_alloc_calls(),
			uswap_alloc_failures(), (char *)uswap_alloc_failed_site() -
			(char *)(uintptr_t)uswap_runtime_run);
#endif
	return ran ? ret : 1;
}
