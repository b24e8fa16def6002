/* SPDX-License-Identifier: MIT */
/* `uswap stat PID`: ask the supervisor that serves PID for its counters, at a
 * path sock_trusted() accepts, and print the answer if json_plain() does. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "runtime/runtime.h"

/* The socket path process @pid's environment names, into @path (@len bytes).
 * Return: 0; -ENOENT (none), -errno. */
static int env_path(pid_t pid, char *path, size_t len)
{
	static char env[1 << 16];
	char file[64];
	size_t n = 0;
	ssize_t r;
	int fd;

	snprintf(file, sizeof(file), "/proc/%d/environ", (int)pid);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (n < sizeof(env) - 1 && (r = read(fd, env + n, sizeof(env) - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	env[n] = 0;
	for (size_t i = 0; i < n; i += strlen(env + i) + 1)
		if (!strncmp(env + i, RT_ENV_SOCK "=", strlen(RT_ENV_SOCK) + 1)) {
			const char *v = env + i + strlen(RT_ENV_SOCK) + 1;

			if (strlen(v) >= len)
				return -ENAMETOOLONG;
			snprintf(path, len, "%s", v);
			return 0;
		}
	return -ENOENT;
}

/* The effective user of process @pid (/proc/PID/status), or -1. */
static long euid_of(pid_t pid)
{
	char file[64], line[256];
	long uid = -1, ruid;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/status", (int)pid);
	f = fopen(file, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %ld %ld", &ruid, &uid) == 2)
			break;
	fclose(f);
	return uid;
}

/*
 * Whether @path may be the socket of the supervisor that serves @pid (the
 * program may have made its environment up): DIR/N.sock, N @pid or one of
 * its ancestors, DIR a directory (not a link) of N's effective user that no
 * one else may enter, and the path a socket. Return: 0 when it may;
 * -EACCES when we may not look (another user's supervisor); -ENOENT.
 */
static int sock_trusted(const char *path, pid_t pid)
{
	char dir[108];
	const char *base = strrchr(path, '/');
	struct stat st;
	char *end;
	long n, owner;
	bool up = false;

	if (path[0] != '/' || !base || strlen(path) >= sizeof(dir))
		return -ENOENT;
	n = strtol(base + 1, &end, 10);
	if (n <= 1 || strcmp(end, ".sock") || !isdigit((unsigned char)base[1]))
		return -ENOENT;
	for (int depth = 0; pid > 1 && depth < 4096; depth++, pid = rt_parent_of(pid))
		if (pid == (pid_t)n) {
			up = true;
			break;
		}
	owner = up ? euid_of((pid_t)n) : -1;
	if (owner < 0)
		return -ENOENT;
	memcpy(dir, path, (size_t)(base - path));
	dir[base - path] = 0;
	if (lstat(dir, &st) || !S_ISDIR(st.st_mode) || st.st_uid != (uid_t)owner ||
	    (st.st_mode & 077))
		return -ENOENT;
	if (lstat(path, &st))
		return errno == EACCES ? -EACCES : -ENOENT;
	return S_ISSOCK(st.st_mode) ? 0 : -ENOENT;
}

/* The path of a bound unix socket named @pid.sock (/proc/net/unix), into
 * @path (@len bytes). Return: 0; -ENOENT, -errno. */
static int listed_path(pid_t pid, char *path, size_t len)
{
	char line[512], want[32];
	FILE *f = fopen("/proc/net/unix", "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	snprintf(want, sizeof(want), "/%d.sock", (int)pid);
	while (err && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/'), *nl;
		size_t pl, wl = strlen(want);

		if (!p)
			continue;
		if ((nl = strchr(p, '\n')))
			*nl = 0;
		pl = strlen(p);
		if (pl > wl && pl < len && !strcmp(p + pl - wl, want)) {
			snprintf(path, len, "%s", p);
			err = 0;
		}
	}
	fclose(f);
	return err;
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

/* Whether @j holds only what the supervisor's JSON holds: structure, numbers,
 * and strings of letters, digits and "_.:/-", nested at most 16 deep (not,
 * say, a terminal's escape sequences from a socket that is no supervisor's). */
static bool json_plain(const char *j)
{
	int depth = 0;

	for (const char *p = j; *p;) {
		if (*p == ' ' || *p == '\n' || *p == ':' || *p == ',') {
			p++;
		} else if (*p == '{' || *p == '[') {
			if (++depth > 16)
				return false;
			p++;
		} else if (*p == '}' || *p == ']') {
			if (--depth < 0)
				return false;
			p++;
		} else if (*p == '"') {
			for (p++; *p && *p != '"'; p++)
				if (!isalnum((unsigned char)*p) && !strchr("_.:/-", *p))
					return false;
			if (*p++ != '"')
				return false;
		} else if (*p == '-' || isdigit((unsigned char)*p)) {
			for (p++; isdigit((unsigned char)*p) || *p == '.' || *p == 'e' ||
			     *p == 'E' || *p == '+' || *p == '-'; p++)
				;
		} else if (!strncmp(p, "true", 4) || !strncmp(p, "null", 4)) {
			p += 4;
		} else if (!strncmp(p, "false", 5)) {
			p += 5;
		} else {
			return false;
		}
	}
	return depth == 0;
}

/* Ask the supervisor at @path for its counters and print them. */
static int ask(const char *path, bool json)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct rt_hello h = { .type = RT_STAT, .pid = getpid() };
	static char buf[1 << 16];
	ssize_t r = 0, s;
	int fd, err = 0;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	memcpy(a.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Each error from the call that failed: a short send or an empty
	 * answer sets no errno, and an old one would be taken for it. */
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
		err = -errno;
	else if ((s = send(fd, &h, sizeof(h), MSG_NOSIGNAL)) != sizeof(h))
		err = s < 0 ? -errno : -EIO;
	else if ((r = recv(fd, buf, sizeof(buf) - 1, 0)) < 0)
		err = -errno;
	else if (!r)
		err = -EIO;
	close(fd);
	if (err)	/* ECONNRESET, EIO: closed without an answer, refused */
		return err == -ECONNRESET || err == -EIO ? -EACCES : err;
	buf[r] = 0;
	if (!json_plain(buf))
		return -EPROTO;
	if (json)
		fputs(buf, stdout);
	else
		print_lines(buf);
	return 0;
}

/** uswap_runtime_stat() - see runtime/runtime.h. */
int uswap_runtime_stat(pid_t pid, bool json)
{
	char path[108];
	int err = -ENOENT;

	/* The program's environment names the socket, unless the program
	 * wrote over it (a process title): then the supervisor is found
	 * among @pid and its ancestors by the sockets the kernel lists. */
	if (!env_path(pid, path, sizeof(path)) && !(err = sock_trusted(path, pid)))
		return ask(path, json);
	if (err != -EACCES)
		err = -ENOENT;
	for (pid_t p = pid; p > 1; p = rt_parent_of(p)) {
		int e;

		if (listed_path(p, path, sizeof(path)))
			continue;
		e = sock_trusted(path, pid);
		if (!e)
			e = ask(path, json);
		if (!e || e == -EACCES || e == -EPROTO)
			return e;
	}
	return err;
}
