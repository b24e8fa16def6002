/* SPDX-License-Identifier: MIT */
/*
 * `uswap stat PID`: ask the supervisor that serves PID for its live
 * counters. The socket's name is in the program's environment.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "runtime/runtime.h"

static int sock_name(pid_t pid, char *name, size_t len)
{
	static char env[1 << 16];
	char path[64];
	size_t n = 0;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (n < sizeof(env) - 1 && (r = read(fd, env + n, sizeof(env) - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	env[n] = 0;
	for (size_t i = 0; i < n; i += strlen(env + i) + 1)
		if (!strncmp(env + i, RT_ENV_SOCK "=", strlen(RT_ENV_SOCK) + 1)) {
			snprintf(name, len, "%s", env + i + strlen(RT_ENV_SOCK) + 1);
			return 0;
		}
	return -ENOENT;
}

/* "name":value pairs of the top level as lines; arrays printed as they are. */
static void print_lines(const char *j)
{
	int depth = 0;

	for (const char *p = j; *p; p++) {
		if (*p == '[' || (*p == '{' && depth))
			depth++;
		if (*p == ']' || (*p == '}' && depth > 1))
			depth--;
		if (depth == 0 && (*p == '{' || *p == '}' || *p == '"' || *p == '\n'))
			continue;
		if (depth == 0 && *p == ':')
			putchar(' ');
		else if (depth == 0 && *p == ',')
			putchar('\n');
		else
			putchar(*p);
	}
	putchar('\n');
}

static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	int fd;
	ssize_t r;

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
	return p ? (pid_t)strtol(p + 3, NULL, 10) : 0;	/* ") S PPID" */
}

static int ask(const char *name, bool json)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct rt_hello h = { .type = RT_STAT, .pid = getpid() };
	static char buf[1 << 16];
	ssize_t r;
	int fd, err;

	memcpy(a.sun_path + 1, name, strlen(name));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name))) ||
	    send(fd, &h, sizeof(h), MSG_NOSIGNAL) != sizeof(h) ||
	    (r = recv(fd, buf, sizeof(buf) - 1, 0)) <= 0) {
		err = errno ? -errno : -EIO;
		close(fd);
		return err;
	}
	close(fd);
	buf[r] = 0;
	if (json)
		fputs(buf, stdout);
	else
		print_lines(buf);
	return 0;
}

/** uswap_runtime_stat() - see runtime/runtime.h. */
int uswap_runtime_stat(pid_t pid, bool json)
{
	char name[100];

	/* The program's environment names the socket, unless the program
	 * wrote over it (redis sets its process title there): then the
	 * supervisor is found among its ancestors (or is @pid itself). */
	if (!sock_name(pid, name, sizeof(name)) && !ask(name, json))
		return 0;
	for (int depth = 0; pid > 1 && depth < 64; depth++, pid = parent_of(pid)) {
		rt_sock_name(pid, name, sizeof(name));
		if (!ask(name, json))
			return 0;
	}
	return -ENOENT;
}
