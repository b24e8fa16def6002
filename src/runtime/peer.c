/* SPDX-License-Identifier: MIT */
/*
 * Who may reach the supervisor (docs/SECURITY.md): its socket, in a 0700
 * directory of its user (no abstract name: any user could connect); the
 * peer of each connection, as the kernel names it (SO_PEERCRED,
 * SO_PEERPIDFD); and whether that peer is a process of the program's tree.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "runtime/runtime.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD	77
#endif

/* Whether @dir is a directory (not a link) of ours that no one else may enter. */
static bool dir_private(const char *dir)
{
	struct stat st;

	return !lstat(dir, &st) && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & 077);
}

/*
 * The directory for our socket, into @dir: /run/uswap for root,
 * $XDG_RUNTIME_DIR/uswap or /tmp/uswap-UID for another user, made 0700 if
 * missing and used only if ours and private; else a new mkdtemp() in /tmp
 * (*@temp). Context: start-up. Return: 0; -errno.
 */
static int sock_dir(char *dir, size_t len, bool *temp)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	*temp = false;
	if (geteuid() == 0)
		n = snprintf(dir, len, "/run/uswap");
	else if (xdg && xdg[0] == '/')
		n = snprintf(dir, len, "%s/uswap", xdg);
	else
		n = snprintf(dir, len, "/tmp/uswap-%u", (unsigned int)geteuid());
	if (n > 0 && (size_t)n < len - 24 && (!mkdir(dir, 0700) || errno == EEXIST) &&
	    dir_private(dir))
		return 0;
	if (snprintf(dir, len, "/tmp/uswap-%u.XXXXXX", (unsigned int)geteuid()) >= (int)len)
		return -ENAMETOOLONG;
	if (!mkdtemp(dir))
		return -errno;
	*temp = true;
	return 0;
}

/**
 * rt_sock_listen() - make the supervisor's listening SOCK_SEQPACKET socket
 * at DIR/PID.sock (sock_dir()); its path goes to @path (@len bytes).
 * Context: start-up. Return: the socket (non-blocking, close-on-exec), -errno.
 */
int rt_sock_listen(char *path, size_t len, bool *temp_dir)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char dir[sizeof(a.sun_path)];
	int fd, err;

	if ((err = sock_dir(dir, sizeof(dir), temp_dir)))
		return err;
	if ((size_t)snprintf(a.sun_path, sizeof(a.sun_path), "%s/%d.sock", dir, (int)getpid()) >=
	    sizeof(a.sun_path) || strlen(a.sun_path) >= len)
		return -ENAMETOOLONG;
	unlink(a.sun_path);	/* a dead supervisor's of our pid, in our own directory */
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || chmod(a.sun_path, 0600) ||
	    listen(fd, 64)) {
		err = -errno;
		close(fd);
		unlink(a.sun_path);
		return err;
	}
	snprintf(path, len, "%s", a.sun_path);
	return fd;
}

/** rt_sock_unlink() - remove the socket at @path, and its directory if @temp_dir. */
void rt_sock_unlink(const char *path, bool temp_dir)
{
	char dir[108];
	char *slash;

	unlink(path);
	if (!temp_dir)
		return;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = 0;
		rmdir(dir);
	}
}

/**
 * rt_parent_of() - the parent of process @pid, from /proc/PID/stat.
 * Context: any. Return: the parent's pid, 0 when @pid is gone.
 */
pid_t rt_parent_of(pid_t pid)
{
	char path[64], buf[640], *p;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return 0;
	buf[r] = 0;
	p = strrchr(buf, ')');	/* the name may hold spaces and parentheses */
	if (!p || strlen(p) < 5)
		return 0;
	return (pid_t)strtol(p + 4, NULL, 10);	/* ") S PPID" */
}

/**
 * rt_in_tree() - whether @pid is a process of the program's tree: a
 * descendant of ours (the tree's subreaper), not one of the children we had
 * before the program (@inherited, @n of them).
 * Context: supervisor thread. Return: true when it is.
 */
bool rt_in_tree(pid_t pid, const pid_t *inherited, unsigned int n)
{
	pid_t me = getpid();

	for (int depth = 0; pid > 1 && depth < 65536; depth++) {
		pid_t pp = rt_parent_of(pid);

		if (pp == me) {
			for (unsigned int i = 0; i < n; i++)
				if (inherited[i] == pid)
					return false;
			return true;
		}
		pid = pp;
	}
	return false;
}

/**
 * rt_peer() - the process at the other end of connection @fd, as the
 * kernel names it: its pid and user at connect() time, and a pidfd of it
 * (SO_PEERPIDFD, or pidfd_open() before Linux 6.5). Context: supervisor
 * thread. Return: 0 and *@pid, *@uid, *@pidfd (-1 if none); -errno.
 */
int rt_peer(int fd, pid_t *pid, uid_t *uid, int *pidfd)
{
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	int pfd = -1;
	socklen_t pl = sizeof(pfd);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl))
		return -errno;
	if (cl != sizeof(cr))
		return -EPROTO;	/* errno is not set: not an old value of it */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pfd, &pl) || pl != sizeof(pfd))
		pfd = -1;
	if (pfd < 0 && cr.pid > 0)
		pfd = (int)syscall(SYS_pidfd_open, cr.pid, 0);
	if (pfd >= 0)
		fcntl(pfd, F_SETFD, FD_CLOEXEC);
	*pid = cr.pid;
	*uid = cr.uid;
	*pidfd = pfd;
	return 0;
}

/**
 * rt_pidfd_alive() - whether the process of @pidfd has not exited (while
 * it lives, its pid names it alone). Context: any. Return: true if so.
 */
bool rt_pidfd_alive(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return pidfd >= 0 && poll(&p, 1, 0) == 0;
}
