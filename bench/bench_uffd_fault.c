/* SPDX-License-Identifier: MIT */
/*
 * The floor of a random fault served through userfaultfd on this host,
 * next to the kernel's own faults on the same pages. One thread, bound to
 * CPU 0 (free in the last two modes), touches each page of a 16 MiB private mapping once, in a random
 * order, and times each touch. The modes:
 *   anon        no userfaultfd: the kernel's first-touch fault (a write);
 *   swapin      the kernel's swap-in: the pages written, paged out with
 *               MADV_PAGEOUT to the swap device that is on (a zram device
 *               for the figure uswap is held to), then read;
 *   same        a MISSING fault served by a handler thread on the same CPU
 *               (blocking read, UFFDIO_COPY of a ready page: no device, no
 *               decompression);
 *   other       the handler on CPU 1, asleep in poll() between faults;
 *   spin        the handler on CPU 1, spinning on a non-blocking read;
 *   same+move, spin+move   as same and spin, and the handler then moves the
 *               page served 16 faults before out with UFFDIO_MOVE: the one
 *               eviction per fault that a process at its budget pays;
 *   free+move   as same+move, but neither thread bound: where the
 *               scheduler puts them;
 *   follow+move as free+move, the handler binding itself to the CPU the
 *               touching thread last ran on and waking it from SCHED_IDLE
 *               (uswap run's following, docs/RUNTIME.md; here the CPU is
 *               known at each fault, the runtime reads it only when the
 *               two are apart). Needs CAP_SYS_NICE to leave SCHED_IDLE.
 * What a userfaultfd swap-in adds to these (a device read, the choice of
 * pages, the bookkeeping) only raises the floor: a design whose floor is
 * above a target ratio to the kernel's swap-in cannot meet it on this
 * host, whatever it does around it (docs/BENCHMARKS.md, the userfaultfd
 * floor).
 * Usage: bench_uffd_fault [ROUNDS]   (default 5; medians of the rounds'
 * medians and p99s, us)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
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
#include <unistd.h>

#include "benchutil.h"
#include "runtime/uffd_compat.h"

#define PG		4096UL
#define NPAGES		4096UL		/* 16 MiB */
#define TRASH		64UL		/* pages moved out before the trash is emptied */
#define LAG		16UL		/* the page moved out was served this many faults before */

enum mode { M_ANON, M_SWAPIN, M_SAME, M_OTHER, M_SPIN, M_SAME_MOVE, M_SPIN_MOVE,
	    M_FREE_MOVE, M_FOLLOW_MOVE, M_NR };
static const char *const mode_name[M_NR] = {
	"anon (kernel first touch)", "swapin (kernel, swap device)", "same", "other", "spin",
	"same+move", "spin+move", "free+move", "follow+move",
};

struct handler {
	int uffd;
	int cpu;			/* -1: not bound */
	bool spin, move, follow;
	char *src, *trash;
	atomic_bool stop;
	atomic_int toucher_cpu;		/* follow: the CPU the touching thread is on */
	int policy;			/* follow: the handler's own policy, taken back at its end */
	bool at_idle;			/* follow: the handler is at SCHED_IDLE */
	struct sched_param own;
	int err;
};

/* follow: bind to the touching thread's CPU if it moved, then wake it
 * from SCHED_IDLE (entered at the first wake-up, left when the handler
 * ends: it serves this thread alone) so that it is placed on this CPU.
 * Return: 0, or an errno. */
static int follow_wake(struct handler *h, int *bound, uint64_t addr)
{
	static const struct sched_param zero;
	struct uffdio_range r = { .start = addr, .len = PG };
	int cpu = atomic_load_explicit(&h->toucher_cpu, memory_order_relaxed);

	if (cpu != *bound) {
		bench_pin_cpu(cpu);
		*bound = cpu;
	}
	if (!h->at_idle) {
		if (sched_setscheduler(0, SCHED_IDLE, &zero))
			return errno;
		h->at_idle = true;
	}
	ioctl(h->uffd, UFFDIO_WAKE, &r);
	return 0;
}


/* Serve MISSING faults with UFFDIO_COPY; with ->move, evict one page each. */
static void *handler_main(void *arg)
{
	struct handler *h = arg;
	uint64_t served[LAG] = { 0 };
	unsigned long k = 0, slot = 0;
	int bound = -1;

	if (h->follow && (sched_getparam(0, &h->own) || (h->policy = sched_getscheduler(0)) < 0)) {
		h->err = errno;
		return NULL;
	}
	if (h->cpu >= 0)
		bench_pin_cpu(h->cpu);
	while (!atomic_load_explicit(&h->stop, memory_order_relaxed)) {
		struct uffd_msg msg;
		struct pollfd p = { .fd = h->uffd, .events = POLLIN };

		if (!h->spin && poll(&p, 1, 20) <= 0)
			continue;
		if (read(h->uffd, &msg, sizeof(msg)) != (ssize_t)sizeof(msg))
			continue;	/* EAGAIN while spinning */
		if (msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		uint64_t addr = msg.arg.pagefault.address & ~(PG - 1);
		struct uffdio_copy c = { .dst = addr, .src = (uint64_t)h->src, .len = PG,
					 .mode = h->follow ? UFFDIO_COPY_MODE_DONTWAKE : 0 };

		if (ioctl(h->uffd, UFFDIO_COPY, &c) && errno != EEXIST) {
			h->err = errno;
			break;
		}
		if (h->follow && (h->err = follow_wake(h, &bound, addr)))
			break;
		if (h->move && k >= LAG) {
			struct uffdio_move m = { .dst = (uint64_t)(h->trash + slot * PG),
						 .src = served[k % LAG], .len = PG };

			if (ioctl(h->uffd, UFFDIO_MOVE, &m)) {
				h->err = errno;
				break;
			}
			if (++slot == TRASH) {
				madvise(h->trash, TRASH * PG, MADV_DONTNEED);
				slot = 0;
			}
		}
		served[k++ % LAG] = addr;
	}
	if (h->follow && sched_setscheduler(0, h->policy, &h->own) && !h->err)
		h->err = errno;	/* checks that the way back is allowed (CAP_SYS_NICE) */
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Whether the page at @p is in swap (/proc/self/pagemap bit 62). */
static bool swapped(const void *p)
{
	static int fd = -2;
	uint64_t e = 0;

	if (fd == -2)
		fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || pread(fd, &e, sizeof(e), (off_t)((uintptr_t)p / PG * 8)) != sizeof(e))
		return false;
	return e >> 62 & 1;
}

/*
 * One round of @mode: the per-touch latencies (ns) sorted into @lat.
 * Return: 0, or -1 with a message (the mode cannot run here).
 */
static int round_of(enum mode mode, const uint32_t *order, uint64_t *lat)
{
	char *r = mmap(NULL, NPAGES * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct handler h = { .uffd = -1 };
	pthread_t t;
	bool uffd = mode >= M_SAME;
	int ret = -1;

	if (r == MAP_FAILED)
		return -1;
	madvise(r, NPAGES * PG, MADV_NOHUGEPAGE);
	if (mode == M_SWAPIN) {
		for (unsigned long i = 0; i < NPAGES; i++)
			memset(r + i * PG, (int)(i & 0xff) | 1, PG);
		if (madvise(r, NPAGES * PG, MADV_PAGEOUT) || !swapped(r) ||
		    !swapped(r + (NPAGES - 1) * PG)) {
			fprintf(stderr, "bench_uffd_fault: swapin: the pages were not paged out "
				"(no swap device on?): not measured\n");
			goto out;
		}
	}
	if (uffd) {
		struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_MOVE };
		struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };

		h.uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
		h.src = aligned_alloc(PG, PG);
		h.trash = mmap(NULL, TRASH * PG, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (h.uffd < 0 || ioctl(h.uffd, UFFDIO_API, &api) || !h.src || h.trash == MAP_FAILED) {
			perror("bench_uffd_fault: userfaultfd");
			goto out;
		}
		memset(h.src, 0x5a, PG);
		reg.range = (struct uffdio_range){ (uint64_t)r, NPAGES * PG };
		if (ioctl(h.uffd, UFFDIO_REGISTER, &reg)) {
			perror("bench_uffd_fault: UFFDIO_REGISTER");
			goto out;
		}
		/* UFFDIO_MOVE's destination must be registered with the same uffd. */
		reg.range = (struct uffdio_range){ (uint64_t)h.trash, TRASH * PG };
		if (ioctl(h.uffd, UFFDIO_REGISTER, &reg)) {
			perror("bench_uffd_fault: UFFDIO_REGISTER (trash)");
			goto out;
		}
		h.cpu = (mode == M_SAME || mode == M_SAME_MOVE) ? 0 : 1;
		if (mode == M_FREE_MOVE || mode == M_FOLLOW_MOVE) {
			cpu_set_t all;

			h.cpu = -1;
			CPU_ZERO(&all);
			for (int c = 0; c < CPU_SETSIZE; c++)
				CPU_SET(c, &all);
			sched_setaffinity(0, sizeof(all), &all);	/* the toucher free */
		}
		h.spin = mode == M_SPIN || mode == M_SPIN_MOVE;
		h.move = mode == M_SAME_MOVE || mode == M_SPIN_MOVE || mode >= M_FREE_MOVE;
		h.follow = mode == M_FOLLOW_MOVE;
		atomic_store(&h.toucher_cpu, sched_getcpu());
		if (pthread_create(&t, NULL, handler_main, &h))
			goto out;
		usleep(2000);	/* the handler bound and waiting */
	}
	for (unsigned long i = 0; i < NPAGES; i++) {
		volatile char *p = r + (uint64_t)order[i] * PG;
		uint64_t t0 = bench_now_ns();

		if (h.follow)
			atomic_store_explicit(&h.toucher_cpu, sched_getcpu(), memory_order_relaxed);
		if (mode == M_ANON)
			*p = 1;
		else
			(void)*p;
		lat[i] = bench_now_ns() - t0;
	}
	qsort(lat, NPAGES, sizeof(*lat), cmp_u64);
	ret = 0;
	if (uffd) {
		atomic_store(&h.stop, true);
		pthread_join(t, NULL);
		if (h.err) {
			fprintf(stderr, "bench_uffd_fault: %s: %s\n", mode_name[mode], strerror(h.err));
			ret = -1;
		}
	}
out:
	if (h.uffd >= 0)
		close(h.uffd);
	if (h.trash && h.trash != MAP_FAILED)
		munmap(h.trash, TRASH * PG);
	free(h.src);
	munmap(r, NPAGES * PG);
	bench_pin_cpu(0);	/* the toucher's own CPU again after free+move, follow+move */
	return ret;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : BENCH_MIN_REPS;
	uint32_t *order = malloc(NPAGES * sizeof(*order));
	uint64_t *lat = malloc(NPAGES * sizeof(*lat)), seed = 42;

	if (rounds < 1 || rounds > BENCH_MAX_REPS || !order || !lat) {
		fprintf(stderr, "usage: bench_uffd_fault [ROUNDS (1-%d)]\n", BENCH_MAX_REPS);
		return 2;
	}
	for (uint32_t i = 0; i < NPAGES; i++)
		order[i] = i;
	for (uint32_t i = NPAGES - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(bench_rand(&seed) % (i + 1)), x = order[i];

		order[i] = order[j];
		order[j] = x;
	}
	bench_pin_cpu(0);
	printf("one touch of each of %lu pages in a random order, thread on CPU 0 (free: free+move, follow+move); us per touch, "
	       "median [min max] over %d rounds\n", NPAGES, rounds);
	printf("%-30s %26s %26s\n", "mode", "p50", "p99");
	for (int m = 0; m < M_NR; m++) {
		double p50[BENCH_MAX_REPS], p99[BENCH_MAX_REPS];
		int n = 0;

		for (int k = 0; k < rounds; k++) {
			if (round_of((enum mode)m, order, lat))
				break;
			p50[n] = (double)lat[NPAGES / 2] / 1000.0;
			p99[n++] = (double)lat[NPAGES * 99 / 100] / 1000.0;
		}
		if (n < rounds)
			continue;
		struct bench_stat a = bench_stat_of(p50, n), b = bench_stat_of(p99, n);

		printf("%-30s %8.2f [%7.2f %7.2f] %8.2f [%7.2f %7.2f]\n", mode_name[m], a.med, a.min,
		       a.max, b.med, b.min, b.max);
	}
	free(order);
	free(lat);
	return 0;
}
