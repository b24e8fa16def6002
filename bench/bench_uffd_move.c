/* SPDX-License-Identifier: MIT */
/*
 * What one UFFDIO_MOVE costs per page, by the length of the run of
 * contiguous present pages it moves: the eviction of `uswap run` and of
 * the in-process mode moves pages out of the program this way, one call
 * per run. x86 flushes a range of up to tlb_single_page_flush_ceiling
 * (33) pages page by page and a larger one with one full flush; under
 * some hypervisors a per-page flush costs microseconds, so the run length
 * decides the eviction's cost. Each run length is measured alone and with
 * a sibling thread busy on the other CPU (the program's own threads, whose
 * CPU every flush must reach), and once with every third page absent
 * (UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES over the same span).
 * Usage: bench_uffd_move [ROUNDS]   (default 5; medians [min max], us/page)
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"

#include "runtime/uffd_compat.h"

#define PAGE 4096UL
#define NPAGES 4096UL		/* 16 MiB moved per measurement */
#define MAX_ROUNDS 64

static atomic_bool stop_sibling;

/* CLOCK_MONOTONIC in microseconds. Context: any. Return: the time. */
static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The busy sibling: keeps this mm live on CPU 0. Context: its thread. */
static void *sibling(void *arg)
{
	volatile char *p = arg;

	bench_pin_cpu(0);
	while (!atomic_load_explicit(&stop_sibling, memory_order_relaxed))
		p[0]++;
	return NULL;
}

/*
 * Populate every @stride-th page of @src, then move @src to @dst in calls
 * of @run pages each. Context: the main thread.
 * Return: microseconds per page moved, or a negative value on an error.
 */
static double measure(int uffd, char *src, char *dst, unsigned long run, unsigned long stride)
{
	unsigned long moved = 0;
	double t0, t1;

	for (unsigned long i = 0; i < NPAGES; i += stride)
		src[i * PAGE] = 1;
	t0 = now_us();
	for (unsigned long i = 0; i + run <= NPAGES; i += run) {
		struct uffdio_move m = {
			.dst = (uint64_t)(uintptr_t)(dst + i * PAGE),
			.src = (uint64_t)(uintptr_t)(src + i * PAGE),
			.len = run * PAGE,
			.mode = stride > 1 ? UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES : 0,
		};

		if (ioctl(uffd, UFFDIO_MOVE, &m) && errno != EAGAIN) {
			perror("bench_uffd_move: UFFDIO_MOVE");
			return -1;
		}
		moved += (unsigned long)m.move / PAGE;
	}
	t1 = now_us();
	madvise(dst, NPAGES * PAGE, MADV_DONTNEED);
	madvise(src, NPAGES * PAGE, MADV_DONTNEED);
	return moved ? (t1 - t0) / (double)moved : -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	static const unsigned long runs[] = { 1, 2, 4, 8, 16, 32, 33, 34, 64, 512 };
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_MOVE };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	char *src, *dst, *busy;
	int uffd;

	if (rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: bench_uffd_move [ROUNDS (1-%d)]\n", MAX_ROUNDS);
		return 2;
	}
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api)) {
		perror("bench_uffd_move: userfaultfd with UFFD_FEATURE_MOVE");
		return 1;
	}
	src = mmap(NULL, NPAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dst = mmap(NULL, NPAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	busy = malloc(PAGE);
	if (src == MAP_FAILED || dst == MAP_FAILED || !busy) {
		perror("bench_uffd_move: memory");
		return 1;
	}
	/* Order-0 pages only: a THP would be moved whole by one PMD. */
	madvise(src, NPAGES * PAGE, MADV_NOHUGEPAGE);
	madvise(dst, NPAGES * PAGE, MADV_NOHUGEPAGE);
	reg.range.start = (uint64_t)(uintptr_t)dst;
	reg.range.len = NPAGES * PAGE;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		perror("bench_uffd_move: UFFDIO_REGISTER");
		return 1;
	}
	bench_pin_cpu(1);
	printf("UFFDIO_MOVE, us per page moved, median [min max] of %d rounds of %lu pages\n",
	       rounds, NPAGES);
	printf("%-18s %-24s %-24s\n", "run (pages)", "alone", "sibling busy on CPU 0");
	for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]) + 1; k++) {
		bool holes = k == sizeof(runs) / sizeof(runs[0]);
		unsigned long run = holes ? 64 : runs[k], stride = holes ? 3 : 1;
		double v[2][MAX_ROUNDS];
		char label[32];

		for (int side = 0; side < 2; side++) {
			pthread_t t;

			if (side) {
				atomic_store(&stop_sibling, false);
				if (pthread_create(&t, NULL, sibling, busy))
					return 1;
				usleep(10000);
			}
			for (int r = 0; r < rounds; r++)
				if ((v[side][r] = measure(uffd, src, dst, run, stride)) < 0)
					return 1;
			if (side) {
				atomic_store(&stop_sibling, true);
				pthread_join(t, NULL);
			}
			qsort(v[side], (size_t)rounds, sizeof(double), cmp_double);
		}
		snprintf(label, sizeof(label), holes ? "64, 1/3 holes" : "%lu", run);
		printf("%-18s %6.2f [%6.2f %6.2f]     %6.2f [%6.2f %6.2f]\n", label,
		       v[0][rounds / 2], v[0][0], v[0][rounds - 1],
		       v[1][rounds / 2], v[1][0], v[1][rounds - 1]);
	}
	return 0;
}
