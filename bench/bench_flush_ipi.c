/* SPDX-License-Identifier: MIT */
/*
 * What a remote TLB-flush IPI costs the thread it interrupts. One thread,
 * bound to CPU 0, reads random pages of its own; a second thread of the
 * same process, bound to CPU 1, drops one page of another mapping and
 * touches it again in a loop (MADV_DONTNEED: a flush of the process's
 * address space, which reaches CPU 0 by IPI while the reader runs there).
 * The reader's ns per read without and with the flusher, and the flushes
 * a second, give the reader's time per IPI. This is the cost the shim's
 * agent imposes on the program for each page of a short UFFDIO_MOVE run
 * when they run on different CPUs (docs/RUNTIME.md, "The agent on the
 * program's CPU").
 * Usage: bench_flush_ipi [ROUNDS [PAGES]]   (default 5 rounds, 8000 pages;
 * medians [min max])
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "benchutil.h"

#define PG	 4096UL
#define READS	 4000000L

static atomic_bool stop;
static atomic_long flushes;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}


/* The second thread: a flush of the address space per turn. */
static void *flusher(void *arg)
{
	volatile char *b = arg;

	bench_pin_cpu(1);
	for (long i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
		b[(i % 64) * PG] = 1;
		madvise((char *)b + (i % 64) * PG, PG, MADV_DONTNEED);
		atomic_fetch_add_explicit(&flushes, 1, memory_order_relaxed);
	}
	return NULL;
}

/* One measurement: ns per read; *rate gets the flushes per second. */
static double one(volatile char *a, unsigned long pages, char *b, bool with, double *rate)
{
	uint64_t x = 88172645463325252ULL;
	unsigned long sum = 0;
	pthread_t t;
	double t0, d;

	atomic_store(&stop, false);
	atomic_store(&flushes, 0);
	if (with && pthread_create(&t, NULL, flusher, b))
		with = false;
	t0 = now();
	for (long i = 0; i < READS; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		sum += (unsigned long)a[(x % pages) * PG + (unsigned long)(i & 4095)];
	}
	d = now() - t0;
	atomic_store(&stop, true);
	if (with)
		pthread_join(t, NULL);
	*rate = (double)atomic_load(&flushes) / d;
	return sum == 0 ? -1 : d / READS * 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	unsigned long pages = argc > 2 ? strtoul(argv[2], NULL, 10) : 8000;
	double alone[64], with[64], per_ipi[64], rate[64], r;
	char *a, *b;

	if (rounds < 1 || rounds > 64 || pages < 1) {
		fprintf(stderr, "usage: bench_flush_ipi [ROUNDS (1-64) [PAGES]]\n");
		return 2;
	}
	a = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	b = mmap(NULL, 64 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED || b == MAP_FAILED) {
		perror("bench_flush_ipi: mmap");
		return 1;
	}
	memset(a, 1, pages * PG);
	bench_pin_cpu(0);
	for (int i = 0; i < rounds; i++) {
		alone[i] = one(a, pages, b, false, &r);
		with[i] = one(a, pages, b, true, &rate[i]);
		/* extra reader time per second / IPIs per second */
		per_ipi[i] = rate[i] > 0 ? (with[i] - alone[i]) * 1e-9 * (1e9 / with[i]) / rate[i] * 1e6 : 0;
	}
	qsort(alone, (size_t)rounds, sizeof(double), cmp);
	qsort(with, (size_t)rounds, sizeof(double), cmp);
	qsort(per_ipi, (size_t)rounds, sizeof(double), cmp);
	qsort(rate, (size_t)rounds, sizeof(double), cmp);
	printf("reader alone: %.1f ns/read [%.1f %.1f]\n", alone[rounds / 2], alone[0], alone[rounds - 1]);
	printf("with flushes: %.1f ns/read [%.1f %.1f], %.0f flushes/s [%.0f %.0f]\n", with[rounds / 2],
	       with[0], with[rounds - 1], rate[rounds / 2], rate[0], rate[rounds - 1]);
	printf("reader time per flush IPI: %.2f us [%.2f %.2f]\n", per_ipi[rounds / 2], per_ipi[0],
	       per_ipi[rounds - 1]);
	return 0;
}
