/* SPDX-License-Identifier: MIT */
/*
 * The OOM kill and the kill for a protocol violation.
 * Context of everything here: the supervisor's one thread.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/runtime.h"

/* SIGKILL @s's process, through its pidfd when there is one (a pid may
 * be reused by then). */
static void kill_session(struct rt_session *s)
{
	if (s->pidfd >= 0)
		syscall(SYS_pidfd_send_signal, s->pidfd, SIGKILL, NULL, 0);
	else if (s->pid > 0)
		kill(s->pid, SIGKILL);
	s->dead = true;
}

/**
 * rt_session_violation() - @s's process sent what no shim sends (@why):
 * killed, with a message, its socket shut down; the session goes on as an
 * orphan's until the process is gone. Context: supervisor thread.
 */
void rt_session_violation(struct rt_session *s, const char *why)
{
	if (s->sup->violations++ < 32)
		fprintf(stderr, "uswap run: pid %d broke the protocol (%s): killing it\n",
			(int)s->pid, why);
	if (!s->dead)
		kill_session(s);
	if (s->sock >= 0)
		shutdown(s->sock, SHUT_RDWR);
}

/**
 * rt_session_kill() - kill @s's process as the OOM killer would, saying
 * @why, once (not a forked child not named yet). Context: supervisor thread.
 */
void rt_session_kill(struct rt_session *s, const char *why)
{
	if (s->dead || s->pid <= 0)
		return;
	fprintf(stderr, "uswap run: %s: killing pid %d as the OOM killer would\n", why, (int)s->pid);
	s->sup->kill_reason = "out of memory and swap (killed by uswap run)";
	kill_session(s);
}
