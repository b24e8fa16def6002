/* SPDX-License-Identifier: MIT */
/*
 * The attacks on `uswap run` that docs/SECURITY.md says fail, as programs
 * (tests/security/run_attacks.sh runs each and checks the outcome). The
 * in-tree attacks run as the program `uswap run` starts (as root, as a
 * reviewer's proof would), connect to the supervisor on their own, then
 * become an unprivileged user (uid 64123) before they send anything: the
 * supervisor must treat what they send as hostile. The others run as that
 * user from outside the tree.
 *
 *   sec_attack victim MB SECONDS MAXSTALL_MS
 *       fill MB with a pattern and read random pages for SECONDS: every
 *       word checked, the longest wait for one page measured; "victim: ok"
 *       when nothing was wrong and no page took MAXSTALL_MS.
 *   sec_attack probe-sockets          (outside) connect to every uswap
 *       socket /proc/net/unix lists, abstract or not: all must fail.
 *   sec_attack fake-pid PID           hello naming PID as the sender.
 *   sec_attack bad-memfd              hellos with an empty memfd and with
 *       one that cannot be sealed.
 *   sec_attack truncate-xfer          (stays root) truncate the shim's own
 *       transfer buffer, then make the supervisor use it.
 *   sec_attack huge-reg               register [64 KiB, 2^47 - 4 KiB).
 *   sec_attack bad-reg                register an inverted, unaligned range.
 *   sec_attack blocking-uffd          a uffd made blocking after the hello.
 *   sec_attack hello-flood N          (stays root) N forked-child hellos,
 *       each on a connection kept open.
 *   sec_attack staging                hellos with a staging area of 1 GiB
 *       and an unaligned one.
 *   sec_attack stat-server PATH       (outside) a socket at PATH that
 *       answers `uswap stat` with terminal escape sequences.
 *
 * Exit status: 0 when the attacker saw its attack fail, 1 when it saw it
 * work, 2 on a usage or set-up error.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "runtime/proto.h"
#include "runtime/xfer_ctl.h"

#define PAGE		4096UL
#define ATTACK_UID	64123

static const char *me = "sec_attack";

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The word page @pg holds at word @w. */
static uint64_t pattern(uint64_t pg, uint64_t w)
{
	return (pg * 0x9e3779b97f4a7c15ULL) ^ (w * 0xbf58476d1ce4e5b9ULL) ^ 0x5ec0de;
}

/* victim: see the file comment. */
static int victim(uint64_t mb, unsigned int secs, uint64_t max_stall)
{
	uint64_t pages = mb << 8, wrong = 0, reads = 0, worst = 0, t_end;
	uint64_t *m = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t x = 88172645463325252ULL;

	if (m == MAP_FAILED)
		return 2;
	for (uint64_t p = 0; p < pages; p++)
		for (uint64_t w = 0; w < PAGE / 8; w++)
			m[p * (PAGE / 8) + w] = pattern(p, w);
	t_end = now_ms() + (uint64_t)secs * 1000;
	while (now_ms() < t_end) {
		uint64_t p, t0, dt;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p = x % pages;
		t0 = now_ms();
		for (uint64_t w = 0; w < PAGE / 8; w++)
			wrong += m[p * (PAGE / 8) + w] != pattern(p, w);
		dt = now_ms() - t0;
		if (dt > worst)
			worst = dt;
		reads++;
	}
	for (uint64_t p = 0; p < pages; p++)
		for (uint64_t w = 0; w < PAGE / 8; w++)
			wrong += m[p * (PAGE / 8) + w] != pattern(p, w);
	printf("victim: %s, %llu wrong words, %llu page reads, longest %llu ms (limit %llu)\n",
	       !wrong && worst < max_stall ? "ok" : "FAILED", (unsigned long long)wrong,
	       (unsigned long long)reads, (unsigned long long)worst,
	       (unsigned long long)max_stall);
	return !wrong && worst < max_stall ? 0 : 1;
}

/* probe-sockets: see the file comment. */
static int probe_sockets(void)
{
	char line[512];
	FILE *f = fopen("/proc/net/unix", "re");
	int seen = 0, reached = 0;

	if (!f)
		return 2;
	while (fgets(line, sizeof(line), f)) {
		char *name = strrchr(line, ' '), *nl;
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		socklen_t alen;
		int fd;

		if (!name || !strstr(name, "uswap"))
			continue;
		name++;
		if ((nl = strchr(name, '\n')))
			*nl = 0;
		if (strlen(name) >= sizeof(a.sun_path))
			continue;
		seen++;
		memcpy(a.sun_path, name, strlen(name));
		alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name));
		if (name[0] == '@') {	/* abstract: /proc/net/unix shows the NUL as '@' */
			a.sun_path[0] = 0;
			printf("%s: %s is an abstract socket: any local user may connect\n", me, name);
			reached++;
		}
		for (int type = SOCK_STREAM; type <= SOCK_SEQPACKET; type++) {
			if (type == SOCK_RAW || type == SOCK_RDM)
				continue;
			fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
			if (fd < 0)
				continue;
			if (!connect(fd, (struct sockaddr *)&a, alen)) {
				printf("%s: connected to %s\n", me, name);
				reached++;
			}
			close(fd);
		}
	}
	fclose(f);
	printf("%s: %d uswap sockets listed, %d reachable\n", me, seen, reached);
	if (!seen)
		return 2;	/* the supervisor's own must be listed */
	return reached ? 1 : 0;
}

/* Connect to the supervisor the environment names. Return: the socket, -1. */
static int connect_sup(void)
{
	const char *path = getenv(RT_ENV_SOCK);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 10 };
	int fd;

	if (!path || strlen(path) >= sizeof(a.sun_path)) {
		fprintf(stderr, "%s: no supervisor in the environment\n", me);
		return -1;
	}
	/* A path; an older uswap named an abstract socket (no leading '/'),
	 * which is how the tests are shown to fail against it. */
	memcpy(a.sun_path + (path[0] != '/'), path, strlen(path));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, path[0] == '/' ? sizeof(a) :
			      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(path)))) {
		perror("connect");
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Become the unprivileged user. Return: 0, -1. */
static int unprivileged(void)
{
	if (setgroups(0, NULL) || setresgid(ATTACK_UID, ATTACK_UID, ATTACK_UID) ||
	    setresuid(ATTACK_UID, ATTACK_UID, ATTACK_UID)) {
		perror("setresuid");
		return -1;
	}
	return 0;
}

/* A userfaultfd (user-mode faults only: works for any user). */
static int new_uffd(int flags)
{
	return (int)syscall(SYS_userfaultfd, UFFD_USER_MODE_ONLY | O_CLOEXEC | flags);
}

/* A sealable memfd of @size bytes (or not sealable). */
static int new_memfd(uint64_t size, bool sealable)
{
	int fd = memfd_create("attack", MFD_CLOEXEC | (sealable ? MFD_ALLOW_SEALING : 0));

	if (fd >= 0 && ftruncate(fd, (off_t)size)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A staging area of one batch, as the shim makes it. */
static uint64_t new_staging(void)
{
	void *p = mmap(NULL, RT_BATCH * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? 0 : (uint64_t)(uintptr_t)p;
}

/*
 * Send hello @h on @fd with descriptors @fds (@n of them) and wait for the
 * answer. Return: the answer's err; -ECONNRESET when the connection was
 * closed without one (refused), -ETIMEDOUT.
 */
static int hello(int fd, const struct rt_hello *h, const int *fds, int n)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} c;
	struct rt_hello_ack ack;
	struct iovec iov = { .iov_base = (void *)h, .iov_len = sizeof(*h) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t r;

	if (n) {
		struct cmsghdr *cm;

		mh.msg_control = c.buf;
		mh.msg_controllen = CMSG_SPACE((size_t)n * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, (size_t)n * sizeof(int));
	}
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(*h))
		return -errno;
	r = recv(fd, &ack, sizeof(ack), 0);
	if (r == (ssize_t)sizeof(ack) && ack.type == RT_HELLO_ACK)
		return ack.err;
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return -ETIMEDOUT;
	return -ECONNRESET;
}

static struct rt_hello good_hello(uint64_t staging)
{
	return (struct rt_hello){ .type = RT_HELLO, .pid = getpid(), .staging = staging,
				  .staging_len = RT_BATCH * PAGE, .xfer_pages = RT_XFER_PAGES };
}

/*
 * A session of our own, from a connection made while root: a uffd made
 * with @uffd_flags, a sealable buffer, a staging area; the hello (naming
 * pid @claim when not 0) is sent once we are the unprivileged user.
 * Return: the socket (the session's) and *@uffd_out, or -1.
 */
static int own_session(int uffd_flags, int *uffd_out, pid_t claim)
{
	int sock = connect_sup(), uffd = new_uffd(uffd_flags), memfd = new_memfd(RT_XFER_BYTES, true);
	uint64_t staging = new_staging();
	struct rt_hello h = good_hello(staging);
	int fds[2] = { uffd, memfd }, err;

	if (sock < 0 || uffd < 0 || memfd < 0 || !staging || unprivileged())
		return -1;
	if (claim)
		h.pid = claim;
	err = hello(sock, &h, fds, 2);
	close(memfd);
	if (err) {
		printf("%s: hello refused (%s)\n", me, strerror(-err));
		return -1;
	}
	*uffd_out = uffd;
	return sock;
}

static int send_reg(int sock, uint64_t start, uint64_t end)
{
	struct rt_range_msg m = { .type = RT_REG, .start = start, .end = end };

	return send(sock, &m, sizeof(m), MSG_NOSIGNAL) == (ssize_t)sizeof(m) ? 0 : -1;
}

/* fake-pid: the session must be ours, not @victim's. */
static int fake_pid(pid_t victim)
{
	int uffd, sock = own_session(O_NONBLOCK, &uffd, victim);

	if (sock < 0)
		return 2;
	printf("%s: pid %d said hello as pid %d: accepted (as itself, the test checks)\n", me,
	       (int)getpid(), (int)victim);
	fflush(stdout);
	sleep(3);	/* the test looks at the supervisor's descriptors now */
	return 0;
}

/* bad-memfd: both hellos must be refused. */
static int bad_memfd(void)
{
	int sock1 = connect_sup(), sock2 = connect_sup();
	int uffd1 = new_uffd(O_NONBLOCK), uffd2 = new_uffd(O_NONBLOCK);
	int empty = new_memfd(0, true), unsealable = new_memfd(RT_XFER_BYTES, false);
	struct rt_hello h = good_hello(new_staging());
	int f1[2] = { uffd1, empty }, f2[2] = { uffd2, unsealable }, e1, e2;

	if (sock1 < 0 || sock2 < 0 || uffd1 < 0 || uffd2 < 0 || empty < 0 || unsealable < 0 ||
	    unprivileged())
		return 2;
	e1 = hello(sock1, &h, f1, 2);
	e2 = hello(sock2, &h, f2, 2);
	/* Had the second been taken, truncating it now would be the SIGBUS. */
	if (ftruncate(unsealable, 0))
		perror("ftruncate");
	printf("%s: empty memfd: %s; unsealable memfd: %s\n", me, e1 ? strerror(-e1) : "accepted",
	       e2 ? strerror(-e2) : "accepted");
	sleep(1);
	return e1 && e2 ? 0 : 1;
}

/* truncate-xfer: the shim's own buffer cannot be shrunk. */
static int truncate_xfer(void)
{
	char line[512], path[128];
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long a, b;
	int fd = -1, r;

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "/memfd:uswap-xfer") && sscanf(line, "%lx-%lx", &a, &b) == 2) {
			snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", a, b);
			fd = open(path, O_RDWR | O_CLOEXEC);
			break;
		}
	if (f)
		fclose(f);
	if (fd < 0) {
		fprintf(stderr, "%s: the shim's transfer buffer is not mapped (%s)\n", me,
			strerror(errno));
		return 2;
	}
	r = ftruncate(fd, 0);
	printf("%s: ftruncate of the transfer buffer: %s\n", me, r ? strerror(errno) : "done");
	fflush(stdout);
	/* Make the supervisor evict (and so touch the buffer): 64 MiB. */
	{
		size_t len = 64UL << 20;
		char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		for (size_t i = 0; m != MAP_FAILED && i < len; i += PAGE)
			m[i] = (char)i;
		for (size_t i = 0; m != MAP_FAILED && i < len; i += PAGE)
			if (m[i] != (char)i)
				return 1;
	}
	return r ? 0 : 1;
}

/* huge-reg: the supervisor must stay quick. */
static int huge_reg(void)
{
	int uffd, sock = own_session(O_NONBLOCK, &uffd, 0);
	uint64_t t0 = now_ms();

	if (sock < 0)
		return 2;
	for (int i = 0; i < 20; i++)
		send_reg(sock, 0x10000, (1ULL << 47) - PAGE);
	printf("%s: registered [0x10000, 2^47 - 4096) 20 times in %llu ms\n", me,
	       (unsigned long long)(now_ms() - t0));
	fflush(stdout);
	sleep(4);
	return 0;
}

/* bad-reg: must get this process killed. */
static int bad_reg(void)
{
	int uffd, sock = own_session(O_NONBLOCK, &uffd, 0);

	if (sock < 0)
		return 2;
	send_reg(sock, 0x7000000000ULL, 0x10000);	/* inverted */
	send_reg(sock, 0x10001, 0x20000);		/* unaligned */
	sleep(5);
	printf("%s: still alive after bad registrations\n", me);
	return 1;
}

/* blocking-uffd: must get this process killed, the supervisor not spinning. */
static int blocking_uffd(void)
{
	int uffd, sock = own_session(0, &uffd, 0);

	if (sock < 0)
		return 2;
	for (int i = 0; i < 500; i++) {	/* 5 s of clearing O_NONBLOCK */
		fcntl(uffd, F_SETFL, 0);
		usleep(10000);
	}
	printf("%s: still alive with a blocking uffd\n", me);
	return 1;
}

/* hello-flood: the supervisor's descriptors must stay bounded. */
static int hello_flood(int n)
{
	struct rlimit rl;
	struct rt_hello h = good_hello(new_staging());
	int memfd, sent = 0;
	int *socks;

	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	if ((rlim_t)n + 16 > rl.rlim_cur)
		n = (int)rl.rlim_cur - 16;
	socks = calloc((size_t)n, sizeof(int));
	memfd = new_memfd(RT_XFER_BYTES, true);
	if (!socks || memfd < 0)
		return 2;
	h.type = RT_HELLO_FORK;
	/* As root all along: once unprivileged, a process cannot connect at
	 * all (the socket's directory is root's, 0700), and a connection that
	 * says nothing is closed after RT_HELLO_WAIT others. So this is the
	 * flood a root program of the tree (buggy or hostile) can make. */
	for (int i = 0; i < n; i++) {
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} c;
		struct iovec iov = { .iov_base = &h, .iov_len = sizeof(h) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
				     .msg_controllen = sizeof(c.buf) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

		if ((socks[i] = connect_sup()) < 0)
			break;
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &memfd, sizeof(int));
		sent += sendmsg(socks[i], &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(h);
	}
	printf("%s: %d fork hellos sent\n", me, sent);
	fflush(stdout);
	sleep(3);	/* the test counts the supervisor's descriptors now */
	return 0;
}

/* staging: both hellos must be refused. */
static int staging(void)
{
	int sock1 = connect_sup(), sock2 = connect_sup();
	int f1[2] = { new_uffd(O_NONBLOCK), new_memfd(RT_XFER_BYTES, true) };
	int f2[2] = { new_uffd(O_NONBLOCK), new_memfd(RT_XFER_BYTES, true) };
	void *big = mmap(NULL, 1UL << 30, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	struct rt_hello h1 = good_hello((uint64_t)(uintptr_t)big), h2 = good_hello(new_staging());
	int e1, e2;

	if (sock1 < 0 || sock2 < 0 || f1[0] < 0 || f2[0] < 0 || big == MAP_FAILED || unprivileged())
		return 2;
	h1.staging_len = 1UL << 30;
	h2.staging += 100;
	e1 = hello(sock1, &h1, f1, 2);
	e2 = hello(sock2, &h2, f2, 2);
	printf("%s: 1 GiB staging: %s; unaligned staging: %s\n", me,
	       e1 ? strerror(-e1) : "accepted", e2 ? strerror(-e2) : "accepted");
	return e1 && e2 ? 0 : 1;
}

/* stat-server: answer every connection at @path with escape sequences. */
static int stat_server(const char *path)
{
	static const char evil[] = "{\"faults\":1}\x1b]0;pwned\x07\x1b[2J\x1b[31mred\n";
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (lfd < 0 || strlen(path) >= sizeof(a.sun_path))
		return 2;
	memcpy(a.sun_path, path, strlen(path));
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 8)) {
		perror("bind");
		return 2;
	}
	for (;;) {
		char buf[256];
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0)
			continue;
		if (recv(fd, buf, sizeof(buf), 0) > 0)
			send(fd, evil, sizeof(evil) - 1, MSG_NOSIGNAL);
		close(fd);
	}
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(cmd, "victim") && argc == 5)
		return victim(strtoull(argv[2], NULL, 10), (unsigned int)atoi(argv[3]),
			      strtoull(argv[4], NULL, 10));
	if (!strcmp(cmd, "probe-sockets"))
		return probe_sockets();
	if (!strcmp(cmd, "fake-pid") && argc == 3)
		return fake_pid((pid_t)atoi(argv[2]));
	if (!strcmp(cmd, "bad-memfd"))
		return bad_memfd();
	if (!strcmp(cmd, "truncate-xfer"))
		return truncate_xfer();
	if (!strcmp(cmd, "huge-reg"))
		return huge_reg();
	if (!strcmp(cmd, "bad-reg"))
		return bad_reg();
	if (!strcmp(cmd, "blocking-uffd"))
		return blocking_uffd();
	if (!strcmp(cmd, "hello-flood") && argc == 3)
		return hello_flood(atoi(argv[2]));
	if (!strcmp(cmd, "staging"))
		return staging();
	if (!strcmp(cmd, "stat-server") && argc == 3)
		return stat_server(argv[2]);
	fprintf(stderr, "usage: sec_attack victim MB SECONDS MAXSTALL_MS | probe-sockets | "
		"fake-pid PID | bad-memfd | truncate-xfer | huge-reg | bad-reg | blocking-uffd | "
		"hello-flood N | staging | stat-server PATH\n");
	return 2;
}
