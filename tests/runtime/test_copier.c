/* SPDX-License-Identifier: MIT */
/*
 * The copy thread (src/runtime/copier.c) on a real userfaultfd: a run
 * copied and its result taken, a copy onto present pages (EEXIST), and the
 * rescue: the thread at SCHED_IDLE, bound beside a spinning thread of the
 * normal policy that keeps it from running, must get the serving thread's
 * policy (SCHED_FIFO here) once its copy has waited RT_COPY_RESCUE_NS, and
 * then finish. Needs root (SCHED_FIFO, userfaultfd): exit 77 otherwise.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/copier.h"
#include "runtime/pager.h"
#include "runtime/uffd_ops.h"

#define PG	4096UL
#define RUN	8		/* pages a run */
#define SPAN	(4 * RUN)	/* pages registered */

/* A userfaultfd with @span pages of anonymous memory registered (missing
 * mode) at *@base. */
static int uffd_region(char **base, size_t span)
{
	struct uffdio_api api = { .api = UFFD_API };
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	struct uffdio_register reg;

	assert_true(fd >= 0);
	assert_int_equal(ioctl(fd, UFFDIO_API, &api), 0);
	*base = mmap(NULL, span * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(*base != MAP_FAILED);
	reg = (struct uffdio_register){ .range = { (uintptr_t)*base, span * PG },
					.mode = UFFDIO_REGISTER_MODE_MISSING };
	assert_int_equal(ioctl(fd, UFFDIO_REGISTER, &reg), 0);
	return fd;
}

static void fill(char *buf, unsigned int seed)
{
	for (size_t i = 0; i < RUN * PG; i++)
		buf[i] = (char)(i * 7 + seed);
}

/* A run is copied and taken; again onto the same pages: -EEXIST, none. */
static void test_copy(void **state)
{
	struct rt_copier c;
	char *base, want[RUN * PG];
	uint64_t dst, done;
	int tag, err, fd;

	(void)state;
	fd = uffd_region(&base, SPAN);
	assert_int_equal(rt_copier_start(&c), 0);
	assert_true(rt_copier_free(&c));
	assert_null(rt_copier_take(&c, false, &dst, &err, &done));	/* none queued */
	fill(c.buf, 3);
	memcpy(want, c.buf, sizeof(want));
	rt_copier_queue(&c, &tag, fd, (uintptr_t)base, RUN * PG);
	assert_false(rt_copier_free(&c));
	assert_ptr_equal(rt_copier_take(&c, true, &dst, &err, &done), &tag);
	assert_int_equal(err, 0);
	assert_int_equal(done, RUN * PG);
	assert_int_equal(dst, (uintptr_t)base);
	assert_memory_equal(base, want, sizeof(want));
	assert_true(rt_copier_free(&c));

	fill(c.buf, 9);
	rt_copier_queue(&c, &tag, fd, (uintptr_t)base, RUN * PG);
	assert_ptr_equal(rt_copier_take(&c, true, &dst, &err, &done), &tag);
	assert_int_equal(err, -EEXIST);
	assert_int_equal(done, 0);
	assert_memory_equal(base, want, sizeof(want));	/* untouched */
	rt_copier_stop(&c);
	munmap(base, SPAN * PG);
	close(fd);
}

static atomic_bool spin_stop;

static void *spin(void *arg)
{
	(void)arg;
	while (!atomic_load(&spin_stop))
		;
	return NULL;
}

/* The kernel's policy of the thread named uswap-copy (glibc's
 * pthread_getschedparam() may answer from its own record), or -1 while
 * no thread has that name yet (it is named just after its start). */
static int copier_policy(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int pol = -1;

	assert_non_null(d);
	while (pol < 0 && (e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if (!(f = fopen(path, "re")))
			continue;
		if (fgets(comm, sizeof(comm), f) && !strcmp(comm, "uswap-copy\n"))
			pol = sched_getscheduler((pid_t)atoi(e->d_name));
		fclose(f);
	}
	closedir(d);
	return pol;
}

static void bind_to(pthread_t t, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	assert_int_equal(pthread_setaffinity_np(t, sizeof(set), &set), 0);
}

/*
 * A copy kept from its CPU by a spinning thread is rescued and finishes;
 * the next run starts at SCHED_IDLE again. Up to three runs: the spinner
 * may leave the idle thread a slice within the first 2 ms, very seldom.
 */
static void test_rescue(void **state)
{
	struct sched_param fifo = { .sched_priority = 1 }, other = { 0 };
	struct rt_copier c;
	char *base, want[RUN * PG];
	uint64_t dst, done, rescues = 0;
	cpu_set_t mask;
	pthread_t spinner;
	int tag, err, fd, cpu = -1, mine = -1, policy;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(mask), &mask), 0);
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &mask)) {
			mine = cpu < 0 ? i : mine;	/* the first, if there are two */
			cpu = i;			/* the last: the copier's */
		}
	fd = uffd_region(&base, SPAN);
	/* The spinner first, at the normal policy (a thread inherits its
	 * maker's): no thread but ours at SCHED_FIFO, and ours sleeps. */
	atomic_store(&spin_stop, false);
	assert_int_equal(pthread_create(&spinner, NULL, spin, NULL), 0);
	bind_to(spinner, cpu);
	assert_int_equal(sched_setscheduler(0, SCHED_FIFO, &fifo), 0);
	assert_int_equal(rt_copier_start(&c), 0);
	assert_true(c.idle);	/* root: CAP_SYS_NICE gives the policy back */
	for (int i = 0; (policy = copier_policy()) != SCHED_IDLE; i++) {
		assert_true(i < 1000);	/* it sets its policy itself as it starts */
		usleep(1000);
	}
	bind_to(c.thread, cpu);
	bind_to(pthread_self(), mine);
	usleep(20000);		/* the spinner on the copier's CPU */
	for (int run = 0; run < 3 && !rescues; run++) {
		char *dst_page = base + (size_t)run * RUN * PG;
		uint64_t t0 = now_ns();

		fill(c.buf, (unsigned int)run + 20);
		memcpy(want, c.buf, sizeof(want));
		rt_copier_queue(&c, &tag, fd, (uintptr_t)dst_page, RUN * PG);
		assert_int_equal(copier_policy(), SCHED_IDLE);	/* back after a rescue */
		while (!rt_copier_take(&c, false, &dst, &err, &done)) {
			if (now_ns() - t0 > 2000000000ULL)
				fail_msg("run %d: the copy is not over after 2 s", run);
			usleep(200);
		}
		assert_int_equal(err, 0);
		assert_int_equal(done, RUN * PG);
		assert_memory_equal(dst_page, want, sizeof(want));
		rescues = c.rescues;
	}
	atomic_store(&spin_stop, true);
	pthread_join(spinner, NULL);
	assert_int_equal(rescues, 1);
	rt_copier_stop(&c);
	sched_setscheduler(0, SCHED_OTHER, &other);
	munmap(base, SPAN * PG);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy),
		cmocka_unit_test(test_rescue),
	};

	if (geteuid()) {
		fprintf(stderr, "test_copier: needs root (SCHED_FIFO, userfaultfd)\n");
		return 77;
	}
	alarm(100);	/* a thread stuck at SCHED_FIFO must not hold a CPU for long */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
