/* SPDX-License-Identifier: MIT */
/*
 * Real NBD servers for the NBD tests: nbdkit (memory or file plugin, with
 * filters) and nbd-server, each on a Unix socket in a temporary directory,
 * started and stopped by the test (the directory: test_run_in_tmpdir()
 * of testutil.h). A start returns once the server
 * accepts connections (nbdkit: its pid file, written when it listens;
 * nbd-server: a connect that succeeds), never after a fixed sleep.
 */
#ifndef USWAP_TESTS_NBD_SERVER_H
#define USWAP_TESTS_NBD_SERVER_H

#include <stdbool.h>
#include <sys/types.h>

struct nbd_srv {
	pid_t pid;			/* 0 when stopped */
	char dir[128];			/* the test's temporary directory */
	char name[32];			/* this server's name within dir */
	char sock[256];
	char uri[512];			/* nbd+unix:///?socket=SOCK */
	char file[256];			/* backing file (file plugin, nbd-server) */
	char pidfile[256];
	char conf[256];
	char *argv[32];			/* kept for restarts; into args */
	char args[32][512];
	int argc;
};

/* nbdkit [filters/params..] PLUGIN ARGS.., NULL-terminated, e.g.
 * nbd_srv_nbdkit(&s, dir, "a", "memory", "64M", NULL). */
int nbd_srv_nbdkit(struct nbd_srv *s, const char *dir, const char *name, ...);
/* nbd-server serving a file of @size bytes (created, zeroed). */
int nbd_srv_nbd_server(struct nbd_srv *s, const char *dir, const char *name,
		       unsigned long long size);
/* Start again with the same arguments (after a kill). */
int nbd_srv_restart(struct nbd_srv *s);
/* Kill (SIGKILL) and reap. */
void nbd_srv_kill(struct nbd_srv *s);
/* A listening Unix socket nobody answers on; returns its fd. */
int nbd_srv_silent(const char *path);

#endif
