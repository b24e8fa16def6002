/* SPDX-License-Identifier: MIT */
/*
 * rt_cycle: the shape of stress-ng's vm stressor, which found lost pages
 * under `uswap run` (docs/RUNTIME.md, "The move lock"). PROCS processes of
 * THREADS threads each cycle for SECONDS: mmap a region of MIB MiB,
 * MADV_POPULATE_READ it, write a pattern that names the round, read it
 * back twice, munmap, and map again (the kernel gives the freed address
 * back: the same address, round after round). Odd rounds unmap with the raw
 * system call, as glibc's free() does, which no interposer sees. With
 * several threads a thread's new mapping can land where another one's
 * was. Every word is checked; the last line is "rt_cycle: ok, 0 wrong
 * words" or "rt_cycle: FAIL, N wrong words".
 * usage: rt_cycle PROCS THREADS MIB SECONDS
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ	22
#endif

static size_t len;
static double seconds;
static atomic_ulong wrong, rounds;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The word at index @i of round @r of thread @t. */
static uint64_t want(uint64_t seed, uint64_t r, uint64_t i)
{
	uint64_t x = (seed << 40) ^ (r << 24) ^ i;

	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ULL;
	return x ^ (x >> 29);
}

/* Check every word of @p against round @r; count and show the wrong ones. */
static void verify(const uint64_t *p, uint64_t seed, uint64_t r, const char *pass)
{
	size_t n = len / 8, bad = 0;

	for (size_t i = 0; i < n; i++)
		if (p[i] != want(seed, r, i)) {
			if (bad < 3)
				fprintf(stderr, "rt_cycle: pid %d %s round %llu page %zu word %zu: "
					"%#llx, want %#llx\n", (int)getpid(), pass,
					(unsigned long long)r, i / 512, i % 512,
					(unsigned long long)p[i],
					(unsigned long long)want(seed, r, i));
			bad++;
		}
	atomic_fetch_add(&wrong, bad);
}

static void *cycle(void *arg)
{
	uint64_t seed = (uint64_t)getpid() * 64 + (uint64_t)(uintptr_t)arg;
	double end = now() + seconds;

	for (uint64_t r = 0; now() < end; r++) {
		uint64_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		size_t n = len / 8;

		if (p == MAP_FAILED) {
			perror("rt_cycle: mmap");
			exit(2);
		}
		madvise(p, len, MADV_POPULATE_READ);	/* zero pages first, as stress-ng */
		for (size_t i = 0; i < n; i++)
			p[i] = want(seed, r, i);
		verify(p, seed, r, "first");
		verify(p, seed, r, "second");
		if (r & 1)
			syscall(SYS_munmap, p, len);	/* as glibc's free(): not interposed */
		else
			munmap(p, len);
		atomic_fetch_add(&rounds, 1);
	}
	return NULL;
}

/* One process: THREADS threads cycling; prints its wrong words. */
static int run(int threads)
{
	pthread_t t[16];

	for (int i = 1; i < threads; i++)
		pthread_create(&t[i], NULL, cycle, (void *)(uintptr_t)i);
	cycle(0);
	for (int i = 1; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("rt_cycle: pid %d: %lu rounds, %lu wrong words\n", (int)getpid(),
	       atomic_load(&rounds), atomic_load(&wrong));
	fflush(stdout);
	return atomic_load(&wrong) ? 1 : 0;
}

int main(int argc, char **argv)
{
	int procs, threads, bad = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: rt_cycle PROCS THREADS MIB SECONDS\n");
		return 2;
	}
	procs = atoi(argv[1]);
	threads = atoi(argv[2]);
	len = (size_t)atoi(argv[3]) << 20;
	seconds = atof(argv[4]);
	if (procs < 1 || procs > 16 || threads < 1 || threads > 16 || !len) {
		fprintf(stderr, "rt_cycle: 1-16 processes and threads, MIB > 0\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < procs; i++)
		if (fork() == 0)
			_exit(run(threads));
	bad |= run(threads);
	for (int i = 1; i < procs; i++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	}
	printf(bad ? "rt_cycle: FAIL, wrong words\n" : "rt_cycle: ok, 0 wrong words\n");
	return bad;
}
