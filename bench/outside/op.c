/* SPDX-License-Identifier: MIT */
/*
 * bench/outside: the sweep's small C program, one mode per behaviour of
 * outside programs (exec, vfork/posix_spawn/system, MAP_SHARED + anon
 * across fork, mremap growth, MADV_FREE, THP, signals during faults,
 * threads running at exit, death by a signal, mlockall, read/write on
 * evicted buffers). Its output and exit status are compared with a
 * native run.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <time.h>
#include <sys/time.h>
#include <unistd.h>
extern char **environ;
#define MB (1UL << 20)
#define PG 4096UL
static uint64_t tag(uint64_t a, uint64_t s) { a ^= s * 0x9e3779b97f4a7c15ULL; a *= 0xbf58476d1ce4e5b9ULL; return a ^ (a >> 31); }
static void fill(uint64_t *p, size_t bytes, uint64_t seed) { for (size_t i = 0; i < bytes / 8; i += 64) p[i] = tag(i, seed); }
static long check(uint64_t *p, size_t bytes, uint64_t seed) { long bad = 0; for (size_t i = 0; i < bytes / 8; i += 64) bad += p[i] != tag(i, seed); return bad; }
static void *mapa(size_t n) { void *p = mmap(NULL, n, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0); if (p == MAP_FAILED) { perror("mmap"); exit(2); } return p; }
static volatile long sig_bad, sig_n; static uint64_t *sig_buf; static size_t sig_len;
static void on_alrm(int s) { (void)s; size_t i = ((size_t)sig_n * 7919 * 64) % (sig_len / 8); i -= i % 64; if (sig_buf[i] != tag(i, 5)) sig_bad++; sig_n++; }
static volatile int stop;
static uint64_t *mt_buf; static size_t mt_len;
static void *mt_worker(void *a) { uint64_t x = (uintptr_t)a; while (!stop) { x = tag(x, 1); size_t i = (x % (mt_len / 8)); mt_buf[i]++; } return NULL; }
int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	size_t n = (argc > 2 ? strtoul(argv[2], 0, 0) : 64) * MB;
	if (!strcmp(m, "exec")) {	/* fill, then exec ourselves in mode execd */
		uint64_t *p = mapa(n); fill(p, n, 1);
		printf("before exec bad=%ld\n", check(p, n, 1)); fflush(stdout);
		execl("/proc/self/exe", argv[0], "execd", argv[2], (char *)0); perror("exec"); return 2;
	}
	if (!strcmp(m, "execd")) { uint64_t *p = mapa(n); fill(p, n, 2); printf("execd bad=%ld\n", check(p, n, 2)); return 0; }
	if (!strcmp(m, "spawn")) {	/* vfork, posix_spawn, system with a big heap */
		uint64_t *p = mapa(n); fill(p, n, 3);
		for (int k = 0; k < 10; k++) {
			pid_t c = vfork();
			if (c == 0) { execl("/bin/true", "true", (char *)0); _exit(127); }
			int st; waitpid(c, &st, 0);
			char *av[] = { "sh", "-c", "exit 5", 0 }; pid_t q;
			posix_spawn(&q, "/bin/sh", 0, 0, av, environ); waitpid(q, &st, 0);
			if (WEXITSTATUS(st) != 5) printf("spawn rc %d\n", WEXITSTATUS(st));
			if (system("true") != 0) printf("system failed\n");
		}
		printf("spawn bad=%ld\n", check(p, n, 3)); return 0;
	}
	if (!strcmp(m, "shared")) {	/* MAP_SHARED anon + private anon across fork */
		uint64_t *s = mmap(NULL, n / 2, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS, -1, 0);
		uint64_t *p = mapa(n); fill(p, n, 4); fill(s, n / 2, 40);
		pid_t c = fork();
		if (c == 0) { long b = check(p, n, 4) + check(s, n / 2, 40); fill(s, n / 2, 41); fill(p, n, 42); _exit(b ? 1 : 0); }
		int st; waitpid(c, &st, 0);
		printf("child %d shared bad=%ld private bad=%ld\n", WEXITSTATUS(st), check(s, n / 2, 41), check(p, n, 4)); return 0;
	}
	if (!strcmp(m, "mremap")) {	/* realloc growth of huge blocks */
		size_t sz = 4 * MB; uint64_t *p = malloc(sz); fill(p, sz, 6); long bad = 0;
		void *other = malloc(8 * MB); memset(other, 1, 8 * MB);
		while (sz < n) { size_t nsz = sz * 3 / 2; p = realloc(p, nsz); bad += check(p, sz, 6); fill(p, nsz, 6); sz = nsz; void *o2 = malloc(sz / 4); memset(o2, 2, sz / 4); free(other); other = o2; }
		uint64_t *r = mapa(8 * MB); fill(r, 8 * MB, 16); for (size_t z = 8 * MB; z < n; z *= 2) { r = mremap(r, z, 2 * z, MREMAP_MAYMOVE); if (r == MAP_FAILED) { perror("mremap"); return 2; } bad += check(r, z, 16); fill(r, 2 * z, 16); }
		printf("mremap bad=%ld\n", bad); return 0;
	}
	if (!strcmp(m, "madvfree")) {
		uint64_t *p = mapa(n); fill(p, n, 7); long bad = 0, zero = 0;
		madvise(p, n / 2, MADV_FREE);
		fill(p, n / 4, 8);	/* rewritten after FREE: must be exact */
		bad += check(p, n / 4, 8);
		for (size_t i = n / 32; i < n / 16; i += 64) if (p[i] != tag(i, 7)) { if (p[i] == 0) zero++; else bad++; }
		for (size_t i = n / 16; i < n / 8; i += 64) bad += p[i] != tag(i, 7);
		printf("madvfree bad=%ld\n", bad); (void)zero; return 0;
	}
	if (!strcmp(m, "thp")) {	/* re-enable THP, MADV_HUGEPAGE an aligned block */
		prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
		char *r = mapa(n + 2 * MB); uint64_t *p = (uint64_t *)(((uintptr_t)r + 2 * MB - 1) & ~(2 * MB - 1));
		madvise(p, n, MADV_HUGEPAGE); fill(p, n, 9); long bad = 0;
		for (int k = 0; k < 3; k++) bad += check(p, n, 9);
		printf("thp bad=%ld\n", bad); return 0;
	}
	if (!strcmp(m, "signals")) {	/* SIGALRM handler reading evicted pages while main faults */
		sig_len = n; sig_buf = mapa(n); fill(sig_buf, n, 5);
		uint64_t *q = mapa(n); fill(q, n, 10);
		signal(SIGALRM, on_alrm);
		struct itimerval it = { { 0, 500 }, { 0, 500 } }; setitimer(ITIMER_REAL, &it, 0);
		long bad = 0; for (int k = 0; k < 4; k++) { bad += check(q, n, 10); bad += check(sig_buf, n, 5); }
		int fds[2]; pipe(fds); char *buf = (char *)q; /* read() into evicted pages under signals */
		for (int k = 0; k < 200; k++) { char b[PG]; memset(b, k, PG); write(fds[1], b, PG); ssize_t r; while ((r = read(fds[0], buf + (size_t)k * 16 * PG, PG)) < 0) ; if (buf[(size_t)k * 16 * PG + 100] != (char)k) bad++; }
		struct itimerval z = { 0 }; setitimer(ITIMER_REAL, &z, 0);
		printf("signals bad=%ld handler_bad=%ld\n", bad, sig_bad); return 0;
	}
	if (!strcmp(m, "mtexit")) {	/* threads writing while main exits mid-eviction */
		mt_len = n; mt_buf = mapa(n); memset(mt_buf, 0, n);
		pthread_t t[4]; for (long k = 0; k < 4; k++) pthread_create(&t[k], 0, mt_worker, (void *)k + 1);
		usleep(argc > 3 ? atoi(argv[3]) * 1000 : 300000);
		exit(7);
	}
	if (!strcmp(m, "kill")) { uint64_t *p = mapa(n); fill(p, n, 11); printf("%ld\n", check(p, n, 11)); fflush(stdout); raise(argc > 3 ? atoi(argv[3]) : SIGTERM); return 0; }
	if (!strcmp(m, "segv")) { uint64_t *p = mapa(n); fill(p, n, 11); printf("%ld\n", check(p, n, 11)); fflush(stdout); *(volatile int *)8 = 1; return 0; }
	if (!strcmp(m, "mlock")) { mlockall(MCL_CURRENT | MCL_FUTURE); uint64_t *p = mapa(n); fill(p, n, 12); uint64_t *q = malloc(n); fill(q, n, 13); printf("mlock bad=%ld\n", check(p, n, 12) + check(q, n, 13)); return 0; }
	if (!strcmp(m, "sysio")) {	/* write() from and read() into evicted pages */
		uint64_t *p = mapa(n); fill(p, n, 14); uint64_t *q = mapa(n); fill(q, n, 15);
		char f[] = "/tmp/op-sysio-XXXXXX"; int fd = mkstemp(f); unlink(f);
		if (write(fd, p, n) != (ssize_t)n) printf("short write\n");
		lseek(fd, 0, SEEK_SET); if (read(fd, q, n) != (ssize_t)n) printf("short read\n");
		printf("sysio bad=%ld\n", check(q, n, 14)); return 0;
	}
	fprintf(stderr, "modes: exec spawn shared mremap madvfree thp signals mtexit kill segv mlock sysio\n");
	return 2;
}
