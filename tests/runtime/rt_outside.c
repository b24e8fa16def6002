/* SPDX-License-Identifier: MIT */
/*
 * What outside programs do that rt_prog does not (the sweep of real
 * programs, docs/RUNTIME.md "Outside programs"): each mode is the
 * smallest deterministic form of a failure found there. An ordinary
 * program: it knows nothing of uswap and checks what it reads.
 *
 *   rt_outside madvfree MB  fill MB, MADV_FREE it (as jemalloc and V8
 *                      purge), write it again, then fill 4x MB elsewhere
 *                      twice; prints its own Pss_Anon at the end: the
 *                      freed and rewritten pages must stay under the
 *                      budget (run_outside.sh).
 *
 *   rt_outside exitevict MB  fill MB and exit at once, while the pages
 *                      the last writes pushed out are still being written
 *                      to the device: the device must be empty in --json.
 *
 *   rt_outside sigmask MB  fill MB, then send the process a signal that
 *                      its only thread blocks: it must stay pending until
 *                      the thread unblocks it, and the handler (which
 *                      reads an evicted page) run in that thread.
 *
 *   rt_outside mlockall MB  mlockall(MCL_CURRENT | MCL_FUTURE) first
 *                      (every mapping populated, the shim's own too),
 *                      fill MB, munlockall() and mlockall() again, fill
 *                      MB more, check both.
 *
 *   rt_outside populate MB  map MB with MAP_POPULATE (through libc's
 *                      mmap(), which the shim sees), fill and check it;
 *                      then MB/4 more with MAP_POPULATE by a raw system
 *                      call, which the shim cannot see: its pages are
 *                      found filled, and must be said (run_outside.sh).
 *
 * Exit status 0 when every word was right; it prints what was wrong.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PG	4096UL

/* Pss_Anon of this process in KiB (smaps_rollup), -1 if unreadable. */
static long pss_anon_kib(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Pss_Anon:", 9))
			v = atol(line + 9);
	fclose(f);
	return v;
}

static char *map_anon(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("rt_outside: mmap");
		exit(2);
	}
	return p;
}

/* One byte per page, so that every page is touched and checked. */
static void fill(char *p, size_t len, char v)
{
	for (size_t i = 0; i < len; i += PG)
		memset(p + i, v, PG);
}

static unsigned long check(const char *p, size_t len, char v)
{
	unsigned long bad = 0;

	for (size_t i = 0; i < len; i += PG)
		for (size_t k = 0; k < PG; k += 512)
			bad += p[i + k] != v;
	return bad;
}

/*
 * MADV_FREE of resident pages, then a write to them: natively the pages
 * stay (a write cancels the lazy free). Under uswap run they must stay
 * counted and evictable: before the fix the supervisor forgot them at the
 * REMOVE event, and they were resident beyond the budget for good.
 */
static int madvfree(uint64_t mb)
{
	size_t a = mb << 20, b = 4 * a;
	char *p = map_anon(a), *q;
	unsigned long bad;

	fill(p, a, 1);
	if (madvise(p, a, MADV_FREE)) {
		perror("rt_outside: madvise(MADV_FREE)");
		return 2;
	}
	fill(p, a, 2);		/* natively: no fault, the pages stay */
	q = map_anon(b);
	fill(q, b, 3);
	fill(q, b, 4);
	bad = check(p, a, 2) + check(q, b, 4);
	printf("madvfree: wrong %lu, pss_anon %ld KiB\n", bad, pss_anon_kib());
	return bad ? 1 : 0;
}

/*
 * Fill @mb MiB and exit right after the last write: the supervisor is
 * still storing (and the device writing) the pages those writes evicted
 * when the process ends. Before the fix --json reported slots of pages
 * still in the swap cache (written back, or swapped in) as in use.
 */
static int exitevict(uint64_t mb)
{
	size_t a = mb << 20;
	char *p = map_anon(a);

	fill(p, a, 5);
	printf("exitevict: wrong %lu\n", check(p + a / 2, a / 2, 5));
	fflush(stdout);
	_exit(0);
}

static const char *sig_page;
static volatile sig_atomic_t sig_ran;
static volatile long sig_tid, sig_byte;

/* The handler: where it ran, and a read of a page evicted long ago. */
static void on_usr1(int sig)
{
	(void)sig;
	sig_tid = syscall(SYS_gettid);
	sig_byte = sig_page[0];
	sig_ran = 1;
}

/*
 * A process-directed signal goes to a thread that does not block it.
 * The program's only thread blocks SIGUSR1, so natively the signal waits
 * until it unblocks it. Before the fix the shim's agent and watchdog
 * threads took it: the program's handler ran in the agent (which,
 * faulting on an evicted page, waited for a batch only it could answer:
 * a SIGALRM handler hung the sweep's `op signals`).
 */
static int blocked_signal(uint64_t mb)
{
	size_t a = mb << 20;
	char *p = map_anon(a);
	struct timespec ts = { 0, 200 * 1000 * 1000 };
	sigset_t set;
	int early;

	fill(p, a, 6);
	sig_page = p;
	signal(SIGUSR1, on_usr1);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	kill(getpid(), SIGUSR1);
	nanosleep(&ts, NULL);
	early = sig_ran;
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	printf("sigmask: wrong %lu, handled before the unblock %d, in the program's thread %d\n",
	       check(p, a, 6) + (sig_byte != 6), early, sig_tid == getpid());
	return early || sig_tid != getpid() || sig_byte != 6;
}

/*
 * mlockall() populates every mapping of the process, the shim's included.
 * Before the fix it faulted on the agent's trash area, registered with a
 * userfaultfd nobody read: mlockall() never returned. Natively the call
 * brings every page in; under uswap run the locked pages are served and
 * then kept (the kernel does not move them out of a locked mapping
 * either, and the staging area is locked too), so the budget may be
 * exceeded, and nothing may hang or be lost. A process whose limit is too
 * low fails the call with EPERM/ENOMEM, as natively.
 */
static int lockall(uint64_t mb)
{
	size_t a = mb << 20;
	char *p, *q;
	int r = mlockall(MCL_CURRENT | MCL_FUTURE);	/* at once, as op mlock did */

	p = map_anon(a);
	fill(p, a, 7);
	r |= munlockall();
	r |= mlockall(MCL_CURRENT | MCL_FUTURE);
	q = map_anon(a);
	fill(q, a, 8);
	printf("mlockall: wrong %lu, mlockall %d\n", check(p, a, 7) + check(q, a, 8), r);
	/* hold the locked memory a while: the pages mlockall() populates are
	 * learnt at the agent's next rescan, and a program that has ended by
	 * then is never seen over its budget (run_outside.sh expects the kill) */
	fflush(stdout);
	usleep(500000);
	return 0;
}

/* MAP_POPULATE seen and unseen (see the file comment). */
static int populate(uint64_t mb)
{
	size_t a = mb << 20, b = a / 4;
	char *p = mmap(NULL, a, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		       -1, 0);
	unsigned long bad;
	long q;

	if (p == MAP_FAILED) {
		perror("rt_outside: mmap");
		return 2;
	}
	bad = check(p, a, 0);
	fill(p, a, 9);
	bad += check(p, a, 9);
	printf("populate: seen %lu MiB, wrong %lu\n", (unsigned long)mb, bad);
	fflush(stdout);
	q = syscall(SYS_mmap, NULL, b, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0L);
	if (q == -1) {
		perror("rt_outside: mmap");
		return 2;
	}
	usleep(200000);		/* the agent's rescan finds it */
	bad += check((char *)q, b, 0);
	fill((char *)q, b, 10);
	bad += check((char *)q, b, 10);
	bad += check(p, a, 9);
	printf("populate: wrong %lu\n", bad);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t mb = argc > 2 ? strtoull(argv[2], NULL, 10) : 3;

	if (argc > 1 && !strcmp(argv[1], "madvfree"))
		return madvfree(mb);
	if (argc > 1 && !strcmp(argv[1], "exitevict"))
		return exitevict(mb);
	if (argc > 1 && !strcmp(argv[1], "sigmask"))
		return blocked_signal(mb);
	if (argc > 1 && !strcmp(argv[1], "mlockall"))
		return lockall(mb);
	if (argc > 1 && !strcmp(argv[1], "populate"))
		return populate(mb);
	fprintf(stderr, "usage: rt_outside madvfree|exitevict|sigmask|mlockall|populate [MB]\n");
	return 2;
}
