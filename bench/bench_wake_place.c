/* SPDX-License-Identifier: MIT */
/*
 * Where the scheduler places a thread woken from a SCHED_IDLE thread on
 * its own CPU: the wake-up uswap run's following relies on
 * (docs/RUNTIME.md, "Following the faulting thread"), without uswap.
 *
 * A "program" thread computes 5 us, posts a request and sleeps on a futex;
 * a "serving" thread at SCHED_IDLE, bound to the program thread's CPU (it
 * follows it there whenever the program thread reports another one), sees
 * the request and wakes it. Placed on the serving thread's CPU, the woken
 * thread preempts it, and the round trip never leaves that CPU. Each mode
 * runs for 2 s:
 *   quiet         nothing else runs;
 *   work          the serving thread computes 15 us before each wake-up
 *                 (about what a swap-in costs it);
 *   busy          a third thread, bound to the other CPU, wakes every 1 ms
 *                 and computes 200 us (SCHED_OTHER);
 *   busy+work     both;
 *   idle-busy+work  both, the third thread at SCHED_IDLE;
 *   waker-normal  quiet, the serving thread at SCHED_OTHER: the plain
 *                 wake-up, which the scheduler sends to an idle CPU.
 * Printed per mode, medians of the rounds: round trips per second, and
 * how often a wake-up put the program thread on another CPU than before.
 * Usage: bench_wake_place [ROUNDS]   (default 3; needs two CPUs)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "benchutil.h"

#define RUN_NS		2000000000ULL
#define WORK_NS		5000ULL		/* the program thread's, between requests */
#define SERVE_NS	15000ULL	/* busy+work: the serving thread's, per request */

enum mode { M_QUIET, M_WORK, M_BUSY, M_BUSY_WORK, M_IDLE_BUSY_WORK, M_WAKER_NORMAL, NR_MODES };

static const char *const mode_name[NR_MODES] = {
	"quiet", "work", "busy", "busy+work", "idle-busy+work", "waker-normal",
};

struct run {
	enum mode mode;
	int cpu[2];			/* the two CPUs used */
	_Atomic int request;		/* the program thread waits to be woken */
	_Atomic int woken;		/* futex word of the program thread */
	_Atomic int prog_cpu;		/* the CPU the program thread last ran on */
	_Atomic bool stop;
	uint64_t trips, moves;		/* the program thread's */
};

static long futex(_Atomic int *word, int op, int val)
{
	return syscall(SYS_futex, word, op, val, NULL, NULL, 0);
}

static void spin_ns(uint64_t ns)
{
	uint64_t t0 = bench_now_ns();

	while (bench_now_ns() - t0 < ns)
		;
}

static int set_policy(int policy)
{
	struct sched_param zero = { 0 };

	return sched_setscheduler(0, policy, &zero);
}

/* Compute, ask, sleep until woken; count the wake-ups that moved us. */
static void *program_main(void *arg)
{
	struct run *r = arg;
	int last = sched_getcpu();

	atomic_store(&r->prog_cpu, last);
	while (!atomic_load(&r->stop)) {
		int now;

		spin_ns(WORK_NS);
		atomic_store(&r->woken, 0);
		atomic_store(&r->request, 1);
		/* stop is set before the last wake-up: seen here or woken */
		while (!atomic_load(&r->woken) && !atomic_load(&r->stop))
			futex(&r->woken, FUTEX_WAIT_PRIVATE, 0);
		now = sched_getcpu();
		r->moves += now != last;
		r->trips++;
		last = now;
		atomic_store(&r->prog_cpu, now);
	}
	return NULL;
}

/* Follow the program thread's CPU and wake it, at SCHED_IDLE but in
 * waker-normal. Spins between requests: it runs only when its CPU has
 * nothing else to run, as the supervisor's serving thread while it follows. */
static void *serving_main(void *arg)
{
	struct run *r = arg;
	int bound = -1;

	if (r->mode != M_WAKER_NORMAL && set_policy(SCHED_IDLE))
		perror("bench_wake_place: SCHED_IDLE");
	while (!atomic_load(&r->stop)) {
		int cpu;

		if (!atomic_exchange(&r->request, 0))
			continue;
		if (r->mode == M_WORK || r->mode == M_BUSY_WORK || r->mode == M_IDLE_BUSY_WORK)
			spin_ns(SERVE_NS);
		cpu = atomic_load(&r->prog_cpu);
		if (cpu != bound) {
			bench_pin_cpu(cpu);
			bound = cpu;
		}
		atomic_store(&r->woken, 1);
		futex(&r->woken, FUTEX_WAKE_PRIVATE, 1);
	}
	return NULL;
}

/* The other CPU's own work, every 1 ms. */
static void *other_main(void *arg)
{
	struct run *r = arg;
	struct timespec ms = { 0, 1000000 };
	bench_pin_cpu(r->cpu[1]);
	if (r->mode == M_IDLE_BUSY_WORK && set_policy(SCHED_IDLE))
		perror("bench_wake_place: SCHED_IDLE");
	while (!atomic_load(&r->stop)) {
		nanosleep(&ms, NULL);
		spin_ns(200000);
	}
	return NULL;
}

/* One mode for RUN_NS: round trips per second and moves per 1,000 trips. */
static void run_mode(enum mode m, const int cpu[2], double *trips_s, double *moves_k)
{
	struct run r = { .mode = m, .cpu = { cpu[0], cpu[1] } };
	pthread_t prog, serv, other;
	bool with_other = m == M_BUSY || m == M_BUSY_WORK || m == M_IDLE_BUSY_WORK;
	cpu_set_t both;
	pthread_attr_t at;

	/* The program thread may run on either CPU; it starts on the first. */
	CPU_ZERO(&both);
	CPU_SET(cpu[0], &both);
	CPU_SET(cpu[1], &both);
	pthread_attr_init(&at);
	pthread_attr_setaffinity_np(&at, sizeof(both), &both);
	atomic_store(&r.prog_cpu, cpu[0]);
	if (pthread_create(&prog, &at, program_main, &r) ||
	    pthread_create(&serv, NULL, serving_main, &r) ||
	    (with_other && pthread_create(&other, NULL, other_main, &r))) {
		perror("bench_wake_place: pthread_create");
		exit(1);
	}
	pthread_attr_destroy(&at);
	usleep(RUN_NS / 1000);
	atomic_store(&r.stop, true);
	atomic_store(&r.woken, 1);
	futex(&r.woken, FUTEX_WAKE_PRIVATE, 1);
	pthread_join(prog, NULL);
	pthread_join(serv, NULL);
	if (with_other)
		pthread_join(other, NULL);
	*trips_s = (double)r.trips / (RUN_NS / 1e9);
	*moves_k = r.trips ? 1000.0 * (double)r.moves / (double)r.trips : 0;
}

int main(int argc, char **argv)
{
	struct bench_report rep = { .program = "bench_wake_place" };
	int rounds = argc > 1 ? (int)bench_parse_u64(argv[0], "ROUNDS", argv[1]) : 3;
	double trips[NR_MODES][BENCH_MAX_REPS], moves[NR_MODES][BENCH_MAX_REPS];
	int cpu[2] = { -1, -1 }, n = 0;
	cpu_set_t set;

	if (rounds < 1 || rounds > BENCH_MAX_REPS) {
		fprintf(stderr, "usage: bench_wake_place [ROUNDS 1-%d]\n", BENCH_MAX_REPS);
		return 2;
	}
	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &set))
			cpu[n++] = c;
	if (n < 2) {
		fprintf(stderr, "bench_wake_place: needs two CPUs in its affinity\n");
		return 2;
	}
	for (int i = 0; i < rounds; i++)
		for (int m = 0; m < NR_MODES; m++)
			run_mode((enum mode)m, cpu, &trips[m][i], &moves[m][i]);
	snprintf(rep.params, sizeof(rep.params), "\"rounds\":%d,\"cpus\":[%d,%d]", rounds,
		 cpu[0], cpu[1]);
	for (int m = 0; m < NR_MODES; m++) {
		char name[64];

		snprintf(name, sizeof(name), "%s round trips", mode_name[m]);
		bench_add(&rep, name, "/s", bench_stat_of(trips[m], rounds));
		snprintf(name, sizeof(name), "%s moved", mode_name[m]);
		bench_add(&rep, name, "per 1000", bench_stat_of(moves[m], rounds));
	}
	bench_print(&rep);
	return 0;
}
