/* SPDX-License-Identifier: MIT */
/*
 * The runtime's test program: an ordinary program (it knows nothing of
 * uswap) that checks every byte it reads. Run under `uswap run --memory`
 * with a budget a third of its size, it makes the supervisor evict and
 * swap in all the time.
 *
 *   rt_prog check MB   fill, verify, sequential and random reads, threads
 *                      doing atomic increments on shared pages while the
 *                      main thread's reads drive eviction (exact counts),
 *                      madvise(DONTNEED), mremap, a malloc'd buffer, fork
 *                      (the child reads everything and writes half), exit.
 *   rt_prog forks MB   fill, then four forks in a row (BGSAVE-like): each
 *                      child reads everything and exits while the parent
 *                      rewrites pages; the second child forks a grandchild
 *                      that reads everything and writes a quarter.
 *   rt_prog rawclone MB  fill, then three children made by a raw clone()
 *                      system call (no pthread_atfork handler runs, so no
 *                      shim in the child: only fork events follow it),
 *                      each reading everything while the parent rewrites.
 *   rt_prog forkbudget MB  fill, fork a child that reads all, writes half and
 *                      rereads while the parent reads; then the parent reads
 *                      everything, then at random (the tree's budget).
 *   rt_prog forkrace MB  fork while another thread drops (MADV_DONTNEED) or
 *                      moves (mremap) a range: each child sees all of the
 *                      range before the call or all of it after.
 *   rt_prog unsharecost MB  the cost per page of the shim's no-op write that
 *                      makes a page exclusive after a fork (a benchmark).
 *   rt_prog loop MB    fill, then read at random forever (for kill tests).
 *   rt_prog closefds MB  fill, close every descriptor (the shim's too), read
 *                      everything twice.
 *   rt_prog agentread MB  fill at a fixed address (0x500000000000), read it
 *                      all twice: the shim's test hook reads its first page
 *                      from the agent (run_agent_fault.sh).
 *   rt_prog readback MB  fill, read everything three times, rewrite every
 *                      fourth page, read everything twice (kept copies).
 *   rt_prog bench MB   fill, one sequential read pass, 20000 random page
 *                      reads: MB/s and the random reads' p50/p99 (a
 *                      benchmark, not a test: it prints, it checks data).
 *   rt_prog forkbench MB [read|sleep|nofork]  fill, fork a child that reads
 *                      every page (sleep: that sleeps 1.5 s; nofork: no
 *                      child, for 1.5 s) while the parent
 *                      reads and writes random pages: the parent's ops/s
 *                      from fork() to the child's exit, and its ops' latency
 *                      (p50, p90, the share of the time in ops of 1 ms or
 *                      more) (a benchmark).
 *   rt_prog follow MB  bind itself to its last allowed CPU, fill, read
 *                      pages at random (scattered evictions), then say
 *                      whether another thread of the process (the shim's
 *                      agent) is bound to that CPU alone.
 *   rt_prog pinspin MB bind itself to its last allowed CPU, fill, spin a
 *                      thread there and read pages at random for 2 s:
 *                      the reads and the slowest read.
 *   rt_prog hop MB     fill, then read pages at random for 2 s while another
 *                      thread moves the reader between its CPUs every 5 ms:
 *                      the reads.
 *   rt_prog lastthread MB  fill; main() ends by pthread_exit() while a thread
 *                      reads everything and forks a child in which the
 *                      forking thread ends too, after starting one that
 *                      reads everything: in both processes the last thread
 *                      to end is not main's, and each must then exit 0.
 *   rt_prog threads MB  32 threads fill a slice each, then read and rewrite
 *                      random pages of the whole area at once: many faults
 *                      pending together (the budget's edge).
 *
 * Exit status 0 when every byte was right; it prints what was wrong.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>

#define PG		4096UL
#define NR_THREADS	4
#define NR_CTR_PAGES	64
#define INCS		50000

static unsigned long wrong;

static uint64_t word(uint64_t page, uint64_t i, uint64_t gen)
{
	return (page * 0x9e3779b97f4a7c15ULL) ^ (i * 0x100000001b3ULL) ^ gen;
}

static void fill_page(uint64_t *p, uint64_t page, uint64_t gen)
{
	for (uint64_t i = 0; i < PG / 8; i++)
		p[i] = word(page, i, gen);
}

static unsigned long check_page(const uint64_t *p, uint64_t page, uint64_t gen)
{
	unsigned long bad = 0;

	for (uint64_t i = 0; i < PG / 8; i++)
		bad += p[i] != word(page, i, gen);
	return bad;
}

static unsigned long check_zero(const uint64_t *p)
{
	unsigned long bad = 0;

	for (uint64_t i = 0; i < PG / 8; i++)
		bad += p[i] != 0;
	return bad;
}

static void report(const char *what, unsigned long bad)
{
	if (bad)
		printf("rt_prog: %s: %lu wrong words\n", what, bad);
	wrong += bad;
}

/* A forked child's end, its reports flushed first: _exit() drops what
 * stdio holds, and the harness reads them (a child's own child killed as
 * the OOM killer would is an end, said only in the child's report). */
static void child_exit(int status) __attribute__((noreturn));
static void child_exit(int status)
{
	fflush(stdout);
	_exit(status);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct ctr_arg {
	_Atomic uint64_t *ctr;		/* one counter per page, at word 0 */
	uint64_t seed;
	uint64_t mine[NR_CTR_PAGES];
};

static void *incr(void *a)
{
	struct ctr_arg *c = a;

	for (int i = 0; i < INCS; i++) {
		uint64_t p = rnd(&c->seed) % NR_CTR_PAGES;

		atomic_fetch_add(&c->ctr[p * (PG / 8)], 1);
		c->mine[p]++;
	}
	return NULL;
}

static int check(uint64_t mb)
{
	uint64_t pages = mb << 8, seed = 12345, fpages;
	uint64_t *a = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	_Atomic uint64_t *ctr = mmap(NULL, NR_CTR_PAGES * PG, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ctr_arg args[NR_THREADS];
	pthread_t t[NR_THREADS];
	uint64_t *m, *r;
	pid_t pid;
	int st;

	if (a == MAP_FAILED || ctr == MAP_FAILED) {
		perror("rt_prog: mmap");
		return 2;
	}
	/* fill, verify */
	for (uint64_t p = 0; p < pages; p++)
		fill_page(a + p * (PG / 8), p, 1);
	for (uint64_t p = 0; p < pages; p++)
		report("sequential read", check_page(a + p * (PG / 8), p, 1));
	/* random reads while threads increment shared counters */
	memset((void *)ctr, 0, NR_CTR_PAGES * PG);
	for (int i = 0; i < NR_THREADS; i++) {
		memset(&args[i], 0, sizeof(args[i]));
		args[i].ctr = ctr;
		args[i].seed = 777 + (uint64_t)i;
		pthread_create(&t[i], NULL, incr, &args[i]);
	}
	for (uint64_t i = 0; i < pages; i++) {
		uint64_t p = rnd(&seed) % pages;

		report("random read", check_page(a + p * (PG / 8), p, 1));
	}
	for (int i = 0; i < NR_THREADS; i++)
		pthread_join(t[i], NULL);
	for (int p = 0; p < NR_CTR_PAGES; p++) {
		uint64_t want = 0;

		for (int i = 0; i < NR_THREADS; i++)
			want += args[i].mine[p];
		if (atomic_load(&ctr[p * (PG / 8)]) != want) {
			printf("rt_prog: counter page %d: %llu, want %llu\n", p,
			       (unsigned long long)atomic_load(&ctr[p * (PG / 8)]),
			       (unsigned long long)want);
			wrong++;
		}
	}
	/* madvise(DONTNEED): the first quarter reads zeros, then new data */
	madvise(a, pages / 4 * PG, MADV_DONTNEED);
	for (uint64_t p = 0; p < pages / 4; p++)
		report("after DONTNEED", check_zero(a + p * (PG / 8)));
	for (uint64_t p = 0; p < pages / 4; p++)
		fill_page(a + p * (PG / 8), p, 2);
	for (uint64_t p = 0; p < pages; p++)
		report("after refill", check_page(a + p * (PG / 8), p, p < pages / 4 ? 2 : 1));
	/* mremap a quarter elsewhere (grown, so it moves) */
	r = mremap(a + pages / 2 * (PG / 8), pages / 4 * PG, pages / 2 * PG, MREMAP_MAYMOVE);
	if (r == MAP_FAILED) {
		perror("rt_prog: mremap");
		return 2;
	}
	for (uint64_t p = 0; p < pages / 4; p++)
		report("after mremap", check_page(r + p * (PG / 8), pages / 2 + p, 1));
	for (uint64_t p = pages / 4; p < pages / 2; p++)
		report("mremap's new part", check_zero(r + p * (PG / 8)));
	/* a malloc'd buffer (glibc's own mmap: found by the rescan) */
	m = malloc(4 << 20);
	for (uint64_t p = 0; p < (4 << 20) / PG; p++)
		fill_page(m + p * (PG / 8), p, 3);
	for (uint64_t p = 0; p < pages; p++)	/* push it out */
		if (p < pages / 2 || p >= 3 * pages / 4)
			report("pass", check_page(a + p * (PG / 8), p, p < pages / 4 ? 2 : 1));
	for (uint64_t p = 0; p < (4 << 20) / PG; p++)
		report("malloc buffer", check_page(m + p * (PG / 8), p, 3));
	/* fork, with most of the set swapped out at fork time: the child
	 * reads everything (its faults are served from its own copy of the
	 * parent's swapped pages) and writes half; the parent reads too */
	munmap(a, pages / 2 * PG);	/* not the hole mremap left: malloc may use it */
	munmap(a + 3 * pages / 4 * (PG / 8), pages / 4 * PG);
	munmap(r, pages / 2 * PG);
	fpages = pages / 2;
	a = mmap(NULL, fpages * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (uint64_t p = 0; p < fpages; p++)
		fill_page(a + p * (PG / 8), p, 5);
	printf("rt_prog: forking\n");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		for (uint64_t p = 0; p < fpages; p++)
			report("child read", check_page(a + p * (PG / 8), p, 5));
		for (uint64_t p = 0; p < (4 << 20) / PG; p++)
			report("child reads the malloc buffer", check_page(m + p * (PG / 8), p, 3));
		for (uint64_t p = 0; p < fpages / 2; p++)
			fill_page(a + p * (PG / 8), p, 6);
		for (uint64_t p = 0; p < fpages; p++)
			report("child reread", check_page(a + p * (PG / 8), p, p < fpages / 2 ? 6 : 5));
		child_exit(wrong ? 1 : 0);
	}
	for (uint64_t p = 0; p < fpages; p++)
		report("parent after fork", check_page(a + p * (PG / 8), p, 5));
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("rt_prog: the child failed (status 0x%x)\n", st);
		wrong++;
	}
	for (uint64_t p = 0; p < fpages; p++)
		report("parent at the end", check_page(a + p * (PG / 8), p, 5));
	for (uint64_t p = 0; p < (4 << 20) / PG; p++)
		report("malloc buffer at the end", check_page(m + p * (PG / 8), p, 3));
	free(m);
	printf("rt_prog: %s, %lu wrong words\n", wrong ? "FAILED" : "ok", wrong);
	return wrong ? 1 : 0;
}

/*
 * A daemon's habit: close every descriptor (close_range, as closefrom()
 * does), then use the memory again. Then take every number the shim may
 * have had for a socket of its own (dup2): the shim
 * must notice its descriptors are no longer its own and never read from
 * the program's socket (the message the program sends itself arrives
 * whole).
 */
static int closefds(uint64_t mb)
{
	uint64_t pages = mb << 8;
	uint64_t *a = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct rlimit rl;
	int sv[2], lim = 1024;
	char got[16] = "";

	if (a == MAP_FAILED)
		return 2;
	for (uint64_t p = 0; p < pages; p++)
		fill_page(a + p * (PG / 8), p, 1);
	if (!getrlimit(RLIMIT_NOFILE, &rl))
		lim = rl.rlim_cur > 65536 ? 65536 : (int)rl.rlim_cur;
	syscall(SYS_close_range, 3U, ~0U, 0U);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv))
		return 2;
	for (int fd = 3; fd < lim; fd++)
		if (fd != sv[0] && fd != sv[1])
			dup2(sv[0], fd);
	if (send(sv[1], "mine", 5, 0) != 5)
		return 2;
	usleep(100000);
	for (int pass = 0; pass < 2; pass++)
		for (uint64_t p = 0; p < pages; p++)
			report("after closing every fd", check_page(a + p * (PG / 8), p, 1));
	if (recv(sv[0], got, sizeof(got), MSG_DONTWAIT) != 5 || strcmp(got, "mine")) {
		printf("rt_prog: the program's own socket lost its message\n");
		wrong++;
	}
	printf("rt_prog: %s, %lu wrong words\n", wrong ? "FAILED" : "ok", wrong);
	return wrong ? 1 : 0;
}

/* Read every page of @a against @gen; the name says who. */
static void read_all(const uint64_t *a, const uint8_t *gen, uint64_t pages, const char *who)
{
	for (uint64_t p = 0; p < pages; p++)
		report(who, check_page(a + p * (PG / 8), p, gen[p]));
}

/* Wait for @pid; Return: 0 if it exited 0, else 1 (and says so). */
static int wait_ok(pid_t pid, const char *who)
{
	int st = 0;

	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("rt_prog: %s failed (status 0x%x)\n", who, st);
		return 1;
	}
	return 0;
}

static int forks(uint64_t mb)
{
	uint64_t pages = mb << 8, seed = 4711;
	uint64_t *a = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *gen = malloc(pages);

	if (a == MAP_FAILED || !gen)
		return 2;
	for (uint64_t p = 0; p < pages; p++) {
		gen[p] = 1;
		fill_page(a + p * (PG / 8), p, 1);
	}
	for (int round = 0; round < 4; round++) {
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid == 0) {		/* BGSAVE: read everything, exit */
			pid_t gc = -1;

			if (round == 1) {
				gc = fork();
				if (gc == 0) {	/* the grandchild: read, write a quarter, read */
					read_all(a, gen, pages, "grandchild read");
					for (uint64_t p = 0; p < pages; p += 4) {
						gen[p] = 200;
						fill_page(a + p * (PG / 8), p, 200);
					}
					read_all(a, gen, pages, "grandchild reread");
					child_exit(wrong ? 1 : 0);
				}
			}
			read_all(a, gen, pages, "child read");
			if (gc >= 0)
				wrong += (unsigned long)wait_ok(gc, "the grandchild");
			child_exit(wrong ? 1 : 0);
		}
		/* the parent meanwhile: rewrites a third of the pages at random */
		for (uint64_t i = 0; i < pages / 3; i++) {
			uint64_t p = rnd(&seed) % pages;

			report("parent read", check_page(a + p * (PG / 8), p, gen[p]));
			gen[p] = (uint8_t)(round + 2);
			fill_page(a + p * (PG / 8), p, gen[p]);
		}
		wrong += (unsigned long)wait_ok(pid, "a child");
	}
	read_all(a, gen, pages, "parent at the end");
	printf("rt_prog: %s, %lu wrong words\n", wrong ? "FAILED" : "ok", wrong);
	return wrong ? 1 : 0;
}

static int rawclone(uint64_t mb)
{
	uint64_t pages = mb << 8, seed = 99;
	uint64_t *a = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *gen = malloc(pages);

	if (a == MAP_FAILED || !gen)
		return 2;
	for (uint64_t p = 0; p < pages; p++) {
		gen[p] = 1;
		fill_page(a + p * (PG / 8), p, 1);
	}
	for (int round = 0; round < 3; round++) {
		long pid;

		fflush(stdout);
		pid = syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
		if (pid == 0) {		/* no libc state to trust: raw exit */
			unsigned long bad = 0;

			for (uint64_t p = 0; p < pages; p++)
				bad += check_page(a + p * (PG / 8), p, gen[p]);
			syscall(SYS_exit_group, bad ? 1 : 0);
		}
		for (uint64_t i = 0; i < pages / 3; i++) {
			uint64_t p = rnd(&seed) % pages;

			report("parent read", check_page(a + p * (PG / 8), p, gen[p]));
			gen[p] = (uint8_t)(round + 2);
			fill_page(a + p * (PG / 8), p, gen[p]);
		}
		wrong += (unsigned long)wait_ok((pid_t)pid, "a raw clone child");
	}
	read_all(a, gen, pages, "parent at the end");
	printf("rt_prog: %s, %lu wrong words\n", wrong ? "FAILED" : "ok", wrong);
	return wrong ? 1 : 0;
}

static int loop(uint64_t mb)
{
	uint64_t pages = mb << 8, seed = 99;
	uint64_t *a = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (a == MAP_FAILED)
		return 2;
	for (uint64_t p = 0; p < pages; p++)
		fill_page(a + p * (PG / 8), p, 1);
	printf("rt_prog: filled\n");
	fflush(stdout);
	for (;;) {
		uint64_t p = rnd(&seed) % pages;

		if (check_page(a + p * (PG / 8), p, 1)) {
			printf("rt_prog: wrong data in page %llu\n", (unsigned long long)p);
			return 1;
		}
	}
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int bench(uint64_t mb)
{
	enum { NR = 20000 };
	uint64_t pages = mb << 8, seed = 4242;
	uint64_t *a = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	static double lat[NR];
	double t0, t1, t2;

	if (a == MAP_FAILED)
		return 2;
	t0 = now_us();
	for (uint64_t p = 0; p < pages; p++)
		fill_page(a + p * (PG / 8), p, 1);
	t1 = now_us();
	for (uint64_t p = 0; p < pages; p++)
		report("sequential", check_page(a + p * (PG / 8), p, 1));
	t2 = now_us();
	for (int i = 0; i < NR; i++) {
		uint64_t p = rnd(&seed) % pages;
		double t = now_us();

		report("random", a[p * (PG / 8) + 7] != word(p, 7, 1));
		lat[i] = now_us() - t;
	}
	qsort(lat, NR, sizeof(lat[0]), cmp_double);
	printf("fill_MBps %.1f seq_read_MBps %.1f rand_p50_us %.2f rand_p99_us %.2f wrong %lu\n",
	       (double)mb / ((t1 - t0) / 1e6), (double)mb / ((t2 - t1) / 1e6), lat[NR / 2],
	       lat[NR * 99 / 100], wrong);
	return wrong ? 1 : 0;
}

#define NR_FAULTERS	32

static pthread_barrier_t faulters_filled;

struct faulter {
	pthread_t t;
	uint64_t *a, pages, first, n;	/* the area; this thread's slice */
	_Atomic uint64_t *gen;		/* per page: the generation written last */
	unsigned long bad;
};

/* One of `threads`' threads: fill its slice, then read and rewrite random
 * pages anywhere (a page's generation is bumped under a CAS, so a page
 * another thread is rewriting is only read after its new fill). */
static void *faulter(void *arg)
{
	struct faulter *f = arg;
	uint64_t seed = f->first * 2654435761ULL + 1;

	for (uint64_t p = f->first; p < f->first + f->n; p++)
		fill_page(f->a + p * (PG / 8), p, 1);
	pthread_barrier_wait(&faulters_filled);
	for (int i = 0; i < 600; i++) {
		uint64_t p = rnd(&seed) % f->pages, g = atomic_load(&f->gen[p]);

		if (g == 0)	/* being rewritten by another thread */
			continue;
		if (i & 1) {	/* rewrite: claim it (gen 0), fill, publish */
			if (!atomic_compare_exchange_strong(&f->gen[p], &g, 0))
				continue;
			f->bad += check_page(f->a + p * (PG / 8), p, g);
			fill_page(f->a + p * (PG / 8), p, g + 1);
			atomic_store(&f->gen[p], g + 1);
		} else {
			f->bad += f->a[p * (PG / 8) + 5] != word(p, 5, g) &&
				  atomic_load(&f->gen[p]) == g;
		}
	}
	return NULL;
}

/*
 * Many threads faulting at once: each fills a slice of one area, then
 * reads and rewrites random pages of all of it, checking every word it
 * reads; the main thread checks everything at the end.
 */
static int threads(uint64_t mb)
{
	static struct faulter f[NR_FAULTERS];
	uint64_t pages = mb << 8, per = pages / NR_FAULTERS;
	uint64_t *a = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	_Atomic uint64_t *gen = calloc(pages, sizeof(*gen));

	if (a == MAP_FAILED || !gen || per == 0)
		return 2;
	for (uint64_t p = 0; p < pages; p++)
		gen[p] = 1;
	pthread_barrier_init(&faulters_filled, NULL, NR_FAULTERS);
	for (int i = 0; i < NR_FAULTERS; i++) {
		f[i] = (struct faulter){ .a = a, .pages = per * NR_FAULTERS, .first = i * per,
					 .n = per, .gen = gen };
		pthread_create(&f[i].t, NULL, faulter, &f[i]);
	}
	for (int i = 0; i < NR_FAULTERS; i++) {
		pthread_join(f[i].t, NULL);
		report("threads", f[i].bad);
	}
	for (uint64_t p = 0; p < per * NR_FAULTERS; p++)
		report("threads, at the end", check_page(a + p * (PG / 8), p, gen[p]));
	printf("rt_prog: %s, %lu wrong words\n", wrong ? "FAILED" : "ok", wrong);
	return wrong ? 1 : 0;
}

/*
 * the parent's ops/s across a fork, as a BGSAVE sees it: fill,
 * then fork a child that reads every page (the snapshot) and exits while
 * the parent writes one word in random pages; the parent's rate counts
 * from just before fork() to the child's exit (fork's own time included).
 */
/* forkbench's op latencies: log2 buckets of whole microseconds, with
 * the time each bucket's ops took (no array of samples: the benchmark's
 * own memory stays out of the budget's way). */
struct op_hist {
	uint64_t n[32];
	double us[32];
};

static void op_note(struct op_hist *h, double us)
{
	int b = 0;

	while (b < 31 && (double)(2ULL << b) <= us)
		b++;
	h->n[b]++;
	h->us[b] += us;
}

/* The upper bound (us) of the bucket holding the @q quantile of @h. */
static double op_quantile(const struct op_hist *h, double q)
{
	uint64_t total = 0, seen = 0;

	for (int b = 0; b < 32; b++)
		total += h->n[b];
	for (int b = 0; b < 32; b++) {
		seen += h->n[b];
		if (total && (double)seen >= q * (double)total)
			return (double)(2ULL << b);
	}
	return 0;
}

/* rt_prog forkbench MB MODE: see the top of the file. */
static int forkbench(uint64_t mb, const char *mode)
{
	uint64_t pages = mb << 8, seed = 777, ops = 0;
	uint64_t *a = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool sleeper = !strcmp(mode, "sleep"), nofork = !strcmp(mode, "nofork");
	static struct op_hist h;
	double t0, t1, tf, slow = 0, all = 0;
	pid_t pid = 0;
	int st = 0;

	if (a == MAP_FAILED || (!sleeper && !nofork && strcmp(mode, "read")))
		return 2;
	for (uint64_t p = 0; p < pages; p++)
		fill_page(a + p * (PG / 8), p, 1);
	t0 = now_us();
	pid = nofork ? 0 : fork();
	if (pid < 0)
		return 2;
	if (pid == 0 && !nofork) {
		if (sleeper) {
			usleep(1500000);
			_exit(0);
		}
		for (uint64_t p = 0; p < pages; p++)
			report("child snapshot", check_page(a + p * (PG / 8), p, 1));
		child_exit(wrong ? 1 : 0);
	}
	tf = now_us();
	for (;;) {
		if (nofork ? now_us() - t0 >= 1.5e6 : waitpid(pid, &st, WNOHANG) != 0)
			break;
		for (int i = 0; i < 64; i++) {
			uint64_t p = rnd(&seed) % pages;
			double o = now_us();

			report("parent", a[p * (PG / 8) + 9] != word(p, 9, 1));
			a[p * (PG / 8) + 9] = word(p, 9, 1);	/* a write of the same value */
			op_note(&h, now_us() - o);
		}
		ops += 64;
	}
	t1 = now_us();
	if (!nofork && (!WIFEXITED(st) || WEXITSTATUS(st)))
		wrong++;
	for (int b = 0; b < 32; b++) {
		all += h.us[b];
		if ((1ULL << b) >= 1024)
			slow += h.us[b];
	}
	printf("fork_ms %.2f fork_parent_ops %.0f fork_window_ms %.1f fork_op_p50_us %.0f "
	       "fork_op_p90_us %.0f fork_slow_share %.2f wrong %lu\n",
	       (tf - t0) / 1e3, (double)ops / ((t1 - t0) / 1e6), (t1 - t0) / 1e3,
	       op_quantile(&h, 0.5), op_quantile(&h, 0.9), all > 0 ? slow / all : 0, wrong);
	return wrong ? 1 : 0;
}

/*
 * the budget across a fork, for the tree. Fill; fork a child that
 * reads everything, writes half (its own copies: no event tells the
 * supervisor) and reads everything again, twice, then at random, while
 * the parent only reads; the
 * child exits; then the parent only reads, twice over: the pages it shared
 * with the child and never wrote must still leave (UFFDIO_MOVE refuses
 * them until they are anon-exclusive again), then at random. Prints "child exited" so that
 * a sampler can tell the phases apart.
 */
static int forkbudget(uint64_t mb)
{
	uint64_t pages = mb << 8, seed = 31337;
	uint64_t *a = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pid_t pid, w;
	int st = 0;

	if (a == MAP_FAILED)
		return 2;
	for (uint64_t p = 0; p < pages; p++)
		fill_page(a + p * (PG / 8), p, 1);
	printf("rt_prog: forking\n");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		for (uint64_t p = 0; p < pages; p++)
			report("child read", check_page(a + p * (PG / 8), p, 1));
		for (uint64_t p = 0; p < pages; p += 2)
			fill_page(a + p * (PG / 8), p, 7);
		for (int pass = 0; pass < 2; pass++)
			for (uint64_t p = 0; p < pages; p++)
				report("child reread", check_page(a + p * (PG / 8), p, p % 2 ? 1 : 7));
		/* random: no prefetch, long enough to sample (the sequential
		 * passes alone took 2-3 sampler turns at load 20) */
		for (uint64_t i = 0; i < 4 * pages; i++) {
			uint64_t p = rnd(&seed) % pages;

			report("child reread", check_page(a + p * (PG / 8), p, p % 2 ? 1 : 7));
		}
		child_exit(wrong ? 1 : 0);
	}
	/* the parent reads at random while the child lives */
	while ((w = waitpid(pid, &st, WNOHANG)) == 0)
		for (int i = 0; i < 256; i++) {
			uint64_t p = rnd(&seed) % pages;

			report("parent read", check_page(a + p * (PG / 8), p, 1));
		}
	if (w != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("rt_prog: the child failed (status 0x%x)\n", st);
		wrong++;
	}
	printf("rt_prog: child exited\n");
	fflush(stdout);
	for (uint64_t p = 0; p < pages; p++)
		report("parent read after the child", check_page(a + p * (PG / 8), p, 1));
	for (uint64_t i = 0; i < 4 * pages; i++) {	/* random: no prefetch, long enough to sample */
		uint64_t p = rnd(&seed) % pages;

		report("parent read after the child", check_page(a + p * (PG / 8), p, 1));
	}
	printf("rt_prog: %s, %lu wrong words\n", wrong ? "FAILED" : "ok", wrong);
	return wrong ? 1 : 0;
}

/*
 * a program racing itself (docs/RUNTIME.md, "Races of a program
 * with itself"): in each round a second thread drops (MADV_DONTNEED) or
 * moves (mremap) a range of 16 pages, half of them swapped out, while the
 * main thread forks children one after another until that call returned.
 * Each child checks that it got one of the two states the kernel can
 * give: before the call (every page of the range holds its data, at the
 * old address) or after it (every page zero; or the data at the new
 * address), never a mix, and never zeros where data was.
 */
#define RACE_PAGES	16
#define RACE_ROUNDS	64

struct race {
	uint64_t *src, *dst;		/* the range; mremap's destination */
	int op;				/* 0 MADV_DONTNEED, 1 mremap */
	_Atomic int go, done;
};

static void *race_thread(void *arg)
{
	struct race *r = arg;

	while (!atomic_load(&r->go))
		;
	if (r->op == 0)
		madvise(r->src, RACE_PAGES * PG, MADV_DONTNEED);
	else if (mremap(r->src, RACE_PAGES * PG, RACE_PAGES * PG, MREMAP_MAYMOVE | MREMAP_FIXED,
			r->dst) == MAP_FAILED)
		perror("rt_prog: mremap");
	atomic_store(&r->done, 1);
	return NULL;
}

/* In a child: the range is all before or all after @r's call. Return: 0, 1. */
static int race_child(const struct race *r, uint64_t first)
{
	unsigned long data = 0, zero = 0;
	const uint64_t *at = r->src;

	if (r->op == 1 && msync(r->src, RACE_PAGES * PG, MS_ASYNC))
		at = r->dst;		/* the old range is gone: after the move */
	for (uint64_t p = 0; p < RACE_PAGES; p++) {
		data += !check_page(at + p * (PG / 8), first + p, 1);
		zero += r->op == 0 && !check_zero(at + p * (PG / 8));
	}
	if (data == RACE_PAGES || zero == RACE_PAGES)
		return 0;
	printf("rt_prog: forkrace child %d: %s, %lu of %d pages hold their data, %lu are zero\n",
	       (int)getpid(), r->op ? "mremap" : "MADV_DONTNEED", data, RACE_PAGES, zero);
	fflush(stdout);
	return 1;
}

static int forkrace(uint64_t mb)
{
	uint64_t pages = mb << 8, forks = 0;
	uint64_t *a = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t *d = mmap(NULL, RACE_ROUNDS * RACE_PAGES * PG, PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (a == MAP_FAILED || d == MAP_FAILED || pages < 2 * RACE_ROUNDS * RACE_PAGES)
		return 2;
	for (uint64_t p = 0; p < pages; p++)
		fill_page(a + p * (PG / 8), p, 1);
	for (int round = 0; round < RACE_ROUNDS; round++) {
		/* ranges spread over the whole mapping, apart from each other */
		uint64_t first = (uint64_t)round * (pages / RACE_ROUNDS);
		struct race r = { .src = a + first * (PG / 8),
				  .dst = d + (uint64_t)round * RACE_PAGES * (PG / 8),
				  .op = round % 2 };
		pthread_t t;

		/* half of the range resident again (every other page), the rest
		 * as the budget left it: swapped out, most of it */
		for (uint64_t p = 0; p < RACE_PAGES; p += 2)
			report("forkrace before", check_page(r.src + p * (PG / 8), first + p, 1));
		pthread_create(&t, NULL, race_thread, &r);
		atomic_store(&r.go, 1);
		do {
			pid_t pid;

			fflush(stdout);		/* no report twice: the child flushes */
			pid = fork();
			if (pid == 0)
				child_exit(race_child(&r, first));
			wrong += (unsigned long)wait_ok(pid, "a forkrace child");
			forks++;
		} while (!atomic_load(&r.done));
		pthread_join(t, NULL);
		for (uint64_t p = 0; p < RACE_PAGES; p++)
			report("forkrace after", r.op ? check_page(r.dst + p * (PG / 8), first + p, 1) :
							 check_zero(r.src + p * (PG / 8)));
	}
	printf("rt_prog: forkrace: %llu forks in %d rounds\n", (unsigned long long)forks, RACE_ROUNDS);
	printf("rt_prog: %s, %lu wrong words\n", wrong ? "FAILED" : "ok", wrong);
	return wrong ? 1 : 0;
}

/*
 * what the shim's make_exclusive() costs per page (a benchmark,
 * not a test; needs no uswap run): the same kernel-side atomic add of 0
 * (FUTEX_WAKE_OP) on pages shared with a live child (a copy-on-write
 * copy), on pages whose child exited (a reuse), and on pages already
 * exclusive (the system call alone). Five rounds of @mb MiB.
 */
static double unshare_pass(char *a, uint64_t pages)
{
	static uint32_t nobody;
	double t = now_us();

	for (uint64_t p = 0; p < pages; p++)
		syscall(SYS_futex, &nobody, FUTEX_WAKE_OP | FUTEX_PRIVATE_FLAG, 0, (void *)0,
			(uint32_t *)(a + p * PG), FUTEX_OP(FUTEX_OP_ADD, 0, FUTEX_OP_CMP_EQ, 0));
	return (now_us() - t) * 1000.0 / (double)pages;
}

static int unsharecost(uint64_t mb)
{
	uint64_t pages = mb << 8;

	for (int round = 0; round < 5; round++) {
		char *a = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		char *b = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		int fds[2];
		double copy, reuse, excl;
		pid_t pid;
		char c = 0;

		if (a == MAP_FAILED || b == MAP_FAILED || pipe(fds))
			return 2;
		madvise(a, pages * PG, MADV_NOHUGEPAGE);
		madvise(b, pages * PG, MADV_NOHUGEPAGE);
		memset(a, 1, pages * PG);
		memset(b, 1, pages * PG);
		pid = fork();
		if (pid == 0) {
			if (read(fds[0], &c, 1) < 0)
				_exit(1);
			_exit(0);
		}
		copy = unshare_pass(a, pages);
		if (write(fds[1], &c, 1) != 1 || wait_ok(pid, "the child"))
			return 2;
		reuse = unshare_pass(b, pages);
		excl = unshare_pass(b, pages);
		printf("unshare_copy_ns %.0f unshare_reuse_ns %.0f unshare_exclusive_ns %.0f\n",
		       copy, reuse, excl);
		munmap(a, pages * PG);
		munmap(b, pages * PG);
		close(fds[0]);
		close(fds[1]);
	}
	return 0;
}

/*
 * Fill and verify @mb MB (under a budget smaller than that, part of it is
 * swapped out), then replace the image by `@self check 4` while those
 * pages are still out: exec must neither leak their slots nor lose the
 * new image's pages.
 */
static int execfill(uint64_t mb, const char *self)
{
	uint64_t pages = mb << 8;
	uint64_t *a = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (a == MAP_FAILED)
		return 2;
	for (uint64_t p = 0; p < pages; p++)
		fill_page(a + p * (PG / 8), p, 3);
	for (uint64_t p = 0; p < pages; p++)
		report("before exec", check_page(a + p * (PG / 8), p, 3));
	if (wrong)
		return 1;
	printf("rt_prog: %llu MB verified, exec\n", (unsigned long long)mb);
	fflush(stdout);
	execl(self, self, "check", "4", (char *)NULL);
	perror("rt_prog: exec");
	return 2;
}

/*
 * The agent follows the program's thread when its batches are scattered
 * (docs/RUNTIME.md, "The agent on the program's CPU"): bind this thread
 * to one CPU, make scattered evictions, and look for a thread of ours
 * whose Cpus_allowed_list is that CPU alone. Exit 0 if found.
 */
/* Bind the calling thread to its last allowed CPU. Return: the CPU, -1. */
static int bind_last_cpu(void)
{
	cpu_set_t set;
	int cpu = -1;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			cpu = c;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -1 : cpu;
}

static int follow(uint64_t mb)
{
	uint64_t pages = mb << 8, seed = 4242;
	uint64_t *a = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char want[32], path[320], line[256];
	int cpu, found = 0;
	DIR *d;
	struct dirent *e;

	if (a == MAP_FAILED || (cpu = bind_last_cpu()) < 0)
		return 2;
	for (uint64_t p = 0; p < pages; p++)
		fill_page(a + p * (PG / 8), p, 3);
	for (uint64_t i = 0; i < 8 * pages; i++) {
		uint64_t p = rnd(&seed) % pages;

		report("random read", check_page(a + p * (PG / 8), p, 3));
	}
	snprintf(want, sizeof(want), "Cpus_allowed_list:\t%d\n", cpu);
	d = opendir("/proc/self/task");
	while (d && (e = readdir(d))) {
		FILE *f;

		if (e->d_name[0] == '.' || atoi(e->d_name) == (int)syscall(SYS_gettid))
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			found += !strcmp(line, want);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	printf("rt_prog: bound to CPU %d; %d other thread(s) bound to it alone\n", cpu, found);
	printf("rt_prog: %s, %lu wrong words\n", wrong || !found ? "FAILED" : "ok", wrong);
	return wrong || !found ? 1 : 0;
}

static atomic_bool spin_stop;

static void *spinner(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&spin_stop, memory_order_relaxed))
		;
	return NULL;
}

/*
 * rt_prog pinspin MB: bind itself to its last allowed CPU, fill, start a
 * thread that spins on that CPU, then read pages at random for 2 s: the
 * supervisor, following the one faulting thread, must not be kept from
 * serving by the spinner (docs/RUNTIME.md, "Following the faulting
 * thread"). Prints the reads, the slowest read's ms and the wrong words.
 */
static int pinspin(uint64_t mb)
{
	uint64_t pages = mb << 8, seed = 99, ops = 0;
	uint64_t *a = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double t0, worst = 0;
	pthread_t t;
	int cpu;

	if (a == MAP_FAILED || (cpu = bind_last_cpu()) < 0)
		return 2;
	for (uint64_t p = 0; p < pages; p++)
		fill_page(a + p * (PG / 8), p, 5);
	if (pthread_create(&t, NULL, spinner, NULL))
		return 2;
	t0 = now_us();
	while (now_us() - t0 < 2e6) {
		uint64_t p = rnd(&seed) % pages;
		double o = now_us();

		report("random read", check_page(a + p * (PG / 8), p, 5));
		o = now_us() - o;
		worst = o > worst ? o : worst;
		ops++;
	}
	atomic_store(&spin_stop, true);
	pthread_join(t, NULL);
	printf("pinspin cpu %d reads %lu slowest_ms %.1f wrong %lu\n", cpu, ops, worst / 1e3, wrong);
	return wrong ? 1 : 0;
}

static pid_t hop_tid;

/* Every 5 ms, allow the reading thread only the next CPU of @arg's set: a
 * thread asleep on a fault then wakes on that CPU. */
static void *hopper(void *arg)
{
	const cpu_set_t *all = arg;
	struct timespec ts = { 0, 5000000 };
	int cpu = -1;

	while (!atomic_load_explicit(&spin_stop, memory_order_relaxed)) {
		cpu_set_t one;

		do
			cpu = (cpu + 1) % CPU_SETSIZE;
		while (!CPU_ISSET(cpu, all));
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		sched_setaffinity(hop_tid, sizeof(one), &one);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/*
 * rt_prog hop MB: fill, then read pages at random for 2 s while a second
 * thread moves the reader to another of its CPUs every 5 ms (with two
 * CPUs allowed or more): the scheduler wakes it from a fault on a CPU the
 * supervisor does not serve from (docs/RUNTIME.md, "Following the faulting
 * thread"). Prints the reads and the wrong words.
 */
static int hop(uint64_t mb)
{
	uint64_t pages = mb << 8, seed = 77, ops = 0;
	uint64_t *a = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	static cpu_set_t all;
	bool hopping;
	pthread_t t;
	double t0;

	if (a == MAP_FAILED || sched_getaffinity(0, sizeof(all), &all))
		return 2;
	for (uint64_t p = 0; p < pages; p++)
		fill_page(a + p * (PG / 8), p, 6);
	hop_tid = (pid_t)syscall(SYS_gettid);
	hopping = CPU_COUNT(&all) > 1;
	if (hopping && pthread_create(&t, NULL, hopper, &all))
		return 2;
	t0 = now_us();
	while (now_us() - t0 < 2e6) {
		uint64_t p = rnd(&seed) % pages;

		report("random read", check_page(a + p * (PG / 8), p, 6));
		ops++;
	}
	atomic_store(&spin_stop, true);
	if (hopping)
		pthread_join(t, NULL);
	sched_setaffinity(0, sizeof(all), &all);
	printf("hop cpus %d reads %lu wrong %lu\n", CPU_COUNT(&all), ops, wrong);
	return wrong ? 1 : 0;
}

/* This process's RssAnon in KiB (/proc/self/status), -1 if unknown. */
static long rss_anon_kib(void)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "RssAnon:", 8))
			v = atol(line + 8);
	fclose(f);
	return v;
}

/*
 * readback MB: fill MB once, read it back three times, then rewrite every
 * fourth page and read everything twice more. Under a budget each read
 * pass swaps every page in and evicts it again unchanged (the kept copies
 * of docs/RUNTIME.md, "Clean pages"), and the rewritten pages come back
 * with their new bytes. Prints the time and the wrong words.
 */
static int readback(uint64_t mb)
{
	uint64_t pages = mb << 8;
	uint64_t *a = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double t0 = now_us();

	if (a == MAP_FAILED)
		return 2;
	for (uint64_t p = 0; p < pages; p++)
		fill_page(a + p * (PG / 8), p, 1);
	for (int pass = 0; pass < 3; pass++)
		for (uint64_t p = 0; p < pages; p++)
			report("readback", check_page(a + p * (PG / 8), p, 1));
	for (uint64_t p = 0; p < pages; p += 4)
		fill_page(a + p * (PG / 8), p, 2);
	for (int pass = 0; pass < 2; pass++)
		for (uint64_t p = 0; p < pages; p++)
			report("readback rewritten", check_page(a + p * (PG / 8), p, p % 4 ? 1 : 2));
	printf("readback_ms %.0f wrong %lu\n", (now_us() - t0) / 1e3, wrong);
	return wrong ? 1 : 0;
}

/*
 * agentread MB: fill MB at AGENTREAD_AT (fixed, so that the test can name
 * its first page to the shim's test hook, USWAP_TEST_AGENT_READ: the agent
 * then reads that page as each batch comes), read it back twice. The first
 * page is the first evicted and is read by the agent at nearly every batch
 * of the fill, most of them at the budget's line. Prints the wrong words.
 */
#define AGENTREAD_AT	0x500000000000ULL

static int agentread(uint64_t mb)
{
	uint64_t pages = mb << 8;
	uint64_t *a = mmap((void *)(uintptr_t)AGENTREAD_AT, pages * PG, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (a == MAP_FAILED || (uintptr_t)a != AGENTREAD_AT)
		return 2;
	for (uint64_t p = 0; p < pages; p++)
		fill_page(a + p * (PG / 8), p, 1);
	for (int pass = 0; pass < 2; pass++)
		for (uint64_t p = 0; p < pages; p++)
			report("agentread", check_page(a + p * (PG / 8), p, 1));
	printf("agentread wrong %lu\n", wrong);
	return wrong ? 1 : 0;
}

/*
 * Large blocks of glibc's malloc filled by the kernel at once: each round
 * a fresh @mb MiB block gets the whole of a file with one pread(), is
 * checked and freed. glibc maps such a block with its own mmap() and
 * unmaps it in free() with its own munmap(), which no interposer sees;
 * with its mmap threshold fixed each block lands where the last one was,
 * a mapping of the same size (statm unchanged). The shim must find every
 * block (the kernel fills it before any rescan can: it is learnt from
 * pagemap when registered, and evicted): the process's RssAnon 0.2 s
 * after each pread() is printed (its maximum), for the test to hold to
 * the budget; the data must come back intact.
 */
static int mallocread(uint64_t mb)
{
	size_t len = (size_t)mb << 20;
	char path[] = "/tmp/rt_prog_mallocread.XXXXXX";
	int fd = mkstemp(path);
	uint64_t *w = malloc(len), bad = 0;
	long peak = 0;

	if (fd < 0 || !w) {
		perror("rt_prog: mallocread");
		return 2;
	}
	unlink(path);
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	for (size_t i = 0; i < len / 8; i++)
		w[i] = i * 0x9E3779B97F4A7C15ULL + 1;
	if (pwrite(fd, w, len, 0) != (ssize_t)len) {
		perror("rt_prog: pwrite");
		return 2;
	}
	free(w);
	for (int round = 0; round < 8; round++) {
		uint64_t *b = malloc(len);
		long r;

		if (!b || pread(fd, b, len, 0) != (ssize_t)len) {
			perror("rt_prog: pread");
			return 2;
		}
		usleep(200000);
		r = rss_anon_kib();
		peak = r > peak ? r : peak;
		for (size_t i = 0; i < len / 8; i++)
			bad += b[i] != i * 0x9E3779B97F4A7C15ULL + 1;
		free(b);
	}
	close(fd);
	printf("rt_prog: 8 blocks of %llu MB read, RssAnon 0.2 s after a read at most %ld KiB\n",
	       (unsigned long long)mb, peak);
	printf("rt_prog: %s, %llu wrong words\n", bad ? "FAILED" : "ok", (unsigned long long)bad);
	return bad ? 1 : 0;
}

/* ---- lastthread: processes whose last thread is not main's ---- */

static uint64_t *lt_area;
static uint64_t lt_pages;

/* The child's reader: the child's last thread; returning ends the child. */
static void *lt_child_reader(void *arg)
{
	(void)arg;
	for (uint64_t p = 0; p < lt_pages; p++)
		report("the child's thread", check_page(lt_area + p * (PG / 8), p, 1));
	printf("rt_prog: the child's last thread: %s\n", wrong ? "FAILED" : "ok");
	fflush(stdout);
	return NULL;	/* a thread's exit(wrong ? 1 : 0) would end it early */
}

/* The parent's reader: reads, forks, waits for the child (20 s at most),
 * prints the verdict, and returns: the parent's last thread. */
static void *lt_reader(void *arg)
{
	pthread_t t;
	pid_t pid;
	int st = 0;

	(void)arg;
	for (uint64_t p = 0; p < lt_pages; p++)
		report("the reader", check_page(lt_area + p * (PG / 8), p, 1));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		/* The forking thread is the child's only one: start the
		 * reader, then end this one (not main's in the child either). */
		if (pthread_create(&t, NULL, lt_child_reader, NULL))
			_exit(3);
		pthread_exit(NULL);
	}
	for (int i = 0; i < 2000 && pid > 0; i++) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			break;
		if (i == 1999) {
			printf("rt_prog: the child did not exit in 20 s after its last thread\n");
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			wrong++;
		}
		usleep(10000);
	}
	if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("rt_prog: the child failed (status 0x%x)\n", st);
		wrong++;
	}
	printf("rt_prog: %s, %lu wrong words\n", wrong ? "FAILED" : "ok", wrong);
	fflush(stdout);
	return NULL;
}

static int lastthread(uint64_t mb)
{
	pthread_t t;

	lt_pages = mb << 8;
	lt_area = mmap(NULL, lt_pages * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (lt_area == MAP_FAILED)
		return 2;
	for (uint64_t p = 0; p < lt_pages; p++)
		fill_page(lt_area + p * (PG / 8), p, 1);
	printf("rt_prog: filled, main() ends\n");
	fflush(stdout);
	if (pthread_create(&t, NULL, lt_reader, NULL))
		return 2;
	pthread_exit(NULL);	/* glibc: exit(0) after the last thread */
}

int main(int argc, char **argv)
{
	uint64_t mb = argc > 2 ? strtoull(argv[2], NULL, 10) : 12;

	if (argc > 1 && !strcmp(argv[1], "loop"))
		return loop(mb);
	if (argc > 1 && !strcmp(argv[1], "check"))
		return check(mb);
	if (argc > 1 && !strcmp(argv[1], "bench"))
		return bench(mb);
	if (argc > 1 && !strcmp(argv[1], "closefds"))
		return closefds(mb);
	if (argc > 1 && !strcmp(argv[1], "forks"))
		return forks(mb);
	if (argc > 1 && !strcmp(argv[1], "rawclone"))
		return rawclone(mb);
	if (argc > 1 && !strcmp(argv[1], "forkbench"))
		return forkbench(mb, argc > 3 ? argv[3] : "read");
	if (argc > 1 && !strcmp(argv[1], "forkbudget"))
		return forkbudget(mb);
	if (argc > 1 && !strcmp(argv[1], "forkrace"))
		return forkrace(mb);
	if (argc > 1 && !strcmp(argv[1], "unsharecost"))
		return unsharecost(mb);
	if (argc > 1 && !strcmp(argv[1], "threads"))
		return threads(mb);
	if (argc > 1 && !strcmp(argv[1], "lastthread"))
		return lastthread(mb);
	if (argc > 1 && !strcmp(argv[1], "follow")) {
		/* The agent never binds under a real-time policy, which it
		 * inherits when the shim starts it: run this image again as
		 * SCHED_OTHER when started under chrt. */
		struct sched_param sp = { 0 };

		if (sched_getscheduler(0) != SCHED_OTHER && !sched_setscheduler(0, SCHED_OTHER, &sp)) {
			execv("/proc/self/exe", argv);
			perror("rt_prog: execv");
			return 2;
		}
		return follow(mb);
	}
	if (argc > 1 && !strcmp(argv[1], "pinspin"))
		return pinspin(mb);
	if (argc > 1 && !strcmp(argv[1], "hop"))
		return hop(mb);
	if (argc > 1 && !strcmp(argv[1], "execfill"))
		return execfill(mb, argv[0]);
	if (argc > 1 && !strcmp(argv[1], "mallocread"))
		return mallocread(mb);
	if (argc > 1 && !strcmp(argv[1], "readback"))
		return readback(mb);
	if (argc > 1 && !strcmp(argv[1], "agentread"))
		return agentread(mb);
	fprintf(stderr, "usage: rt_prog check|loop|bench|closefds|forks|rawclone|forkbench|forkbudget|forkrace|unsharecost|follow|pinspin|threads|lastthread|execfill|mallocread|readback|agentread [MB]\n"
		"       rt_prog forkbench MB [read|sleep|nofork]\n");
	return 2;
}
