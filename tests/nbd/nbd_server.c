/* SPDX-License-Identifier: MIT */
/* Real NBD servers for the tests (see nbd_server.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nbd_server.h"

#define START_TIMEOUT_MS 10000

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/*
 * Whether a socket listens on @path, from /proc/net/unix (flag
 * __SO_ACCEPTCON), without connecting: nbd-server -d serves one
 * connection only, which a probe would use up.
 */
static bool is_listening(const char *path)
{
	FILE *f = fopen("/proc/net/unix", "r");
	char line[512];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long flags;
		char p[300] = "";

		if (sscanf(line, "%*s %*s %*s %lx %*s %*s %*s %299s", &flags, p) == 2 &&
		    !strcmp(p, path) && (flags & 0x10000UL))
			found = true;
	}
	fclose(f);
	return found;
}

/* Wait until the server is ready: @ready_file exists, or the socket listens. */
static int wait_ready(struct nbd_srv *s, const char *ready_file)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int st;

		if (ready_file ? access(ready_file, F_OK) == 0 : is_listening(s->sock))
			return 0;
		if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
			fprintf(stderr, "nbd test server %s exited early (status %d)\n",
				s->argv[0], st);
			s->pid = 0;
			return -ECHILD;
		}
		if (ms_since(&t0) > START_TIMEOUT_MS) {
			fprintf(stderr, "nbd test server %s not ready in %d ms\n", s->argv[0],
				START_TIMEOUT_MS);
			nbd_srv_kill(s);
			return -ETIMEDOUT;
		}
		usleep(2000);	/* polling a condition, not a fixed wait */
	}
}

static int spawn(struct nbd_srv *s, const char *ready_file)
{
	pid_t pid;

	unlink(s->sock);
	if (ready_file)
		unlink(ready_file);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		int null = open("/dev/null", O_RDWR);
		char log[300];
		int lfd;

		snprintf(log, sizeof(log), "%s/%s.log", s->dir, s->name);
		lfd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (lfd >= 0)
			dup2(lfd, 2);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
		}
		execvp(s->argv[0], s->argv);
		_exit(127);
	}
	s->pid = pid;
	return wait_ready(s, ready_file);
}

/* Append an argument (copied into @s). */
static void add_arg(struct nbd_srv *s, const char *a)
{
	if (s->argc >= 31)
		return;
	snprintf(s->args[s->argc], sizeof(s->args[0]), "%s", a);
	s->argv[s->argc] = s->args[s->argc];
	s->argc++;
	s->argv[s->argc] = NULL;
}

static void paths(struct nbd_srv *s, const char *dir, const char *name)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->sock, sizeof(s->sock), "%s/%s.sock", dir, name);
	snprintf(s->pidfile, sizeof(s->pidfile), "%s/%s.pid", dir, name);
	snprintf(s->file, sizeof(s->file), "%s/%s.img", dir, name);
	snprintf(s->conf, sizeof(s->conf), "%s/%s.conf", dir, name);
	snprintf(s->uri, sizeof(s->uri), "nbd+unix:///?socket=%s", s->sock);
}

int nbd_srv_nbdkit(struct nbd_srv *s, const char *dir, const char *name, ...)
{
	const char *a;
	va_list ap;

	paths(s, dir, name);
	add_arg(s, "nbdkit");
	add_arg(s, "-f");
	add_arg(s, "--exit-with-parent");
	add_arg(s, "-U");
	add_arg(s, s->sock);
	add_arg(s, "-P");
	add_arg(s, s->pidfile);
	va_start(ap, name);
	while ((a = va_arg(ap, const char *))) {
		/* "@FILE" stands for this server's backing file */
		if (!strcmp(a, "@FILE"))
			a = s->file;
		add_arg(s, a);
	}
	va_end(ap);
	return spawn(s, s->pidfile);
}

int nbd_srv_nbd_server(struct nbd_srv *s, const char *dir, const char *name,
		       unsigned long long size)
{
	FILE *f;
	int fd;

	paths(s, dir, name);
	fd = open(s->file, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)size)) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	close(fd);
	f = fopen(s->conf, "w");
	if (!f)
		return -errno;
	fprintf(f, "[generic]\nunixsock = %s\nallowlist = false\n"
		"[swap]\nexportname = %s\ntrim = true\n", s->sock, s->file);
	snprintf(s->uri, sizeof(s->uri), "nbd+unix:///swap?socket=%s", s->sock);
	fclose(f);
	add_arg(s, "nbd-server");
	add_arg(s, "-C");
	add_arg(s, s->conf);
	add_arg(s, "-d");
	return spawn(s, NULL);
}

int nbd_srv_restart(struct nbd_srv *s)
{
	if (s->pid)
		nbd_srv_kill(s);
	return spawn(s, !strcmp(s->argv[0], "nbdkit") ? s->pidfile : NULL);
}

void nbd_srv_kill(struct nbd_srv *s)
{
	if (!s->pid)
		return;
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
	s->pid = 0;
}

int nbd_srv_silent(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (strlen(path) >= sizeof(a.sun_path)) {
		close(fd);
		return -ENAMETOOLONG;
	}
	memcpy(a.sun_path, path, strlen(path) + 1);
	unlink(path);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 8)) {
		close(fd);
		return -errno;
	}
	return fd;
}
