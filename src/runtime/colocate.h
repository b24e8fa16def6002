/* SPDX-License-Identifier: MIT */
/*
 * The serving thread on the faulting thread's CPU (docs/RUNTIME.md,
 * "Following the faulting thread"): while one program thread faults alone,
 * the supervisor's serving thread binds itself to that thread's CPU and
 * wakes it at SCHED_IDLE, so that the scheduler places the thread on that
 * CPU, where it preempts us; a guard thread gives the serving thread its
 * policy back when it is kept from work that waits.
 */
#ifndef USWAP_RUNTIME_COLOCATE_H
#define USWAP_RUNTIME_COLOCATE_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define RT_COLO_HELPERS	32	/* the supervisor's other threads place_helpers() moves */

struct rt_colo {
	bool usable;			/* set up: SCHED_IDLE and back is allowed */
	pid_t tid;			/* the serving thread */
	int policy;			/* its own policy and priority */
	struct sched_param param;
	cpu_set_t mask;			/* its own affinity */
	int epfd;			/* the event loop's epoll: the guard's "work waits" */
	/* the thread followed (serving thread only) */
	pid_t pid, ftid;
	uint64_t alone_ns;		/* since when ftid is the one faulting */
	uint64_t window_ns;		/* mine, others: halved every RT_COLO_ALONE_NS */
	uint64_t mine, others;		/* faults of ftid, and of any other thread */
	int stat_fd;			/* /proc/pid/task/ftid/stat, or -1 */
	int cpu;			/* the CPU the serving thread is bound to, -1 none */
	int helpers_off;		/* the CPU the supervisor's other threads are kept off, -1 none */
	int task_fd;			/* /proc/self/task, or -1 */
	nlink_t task_nlink;		/* its link count when helpers[] was listed, 0: not listed */
	pid_t helpers[RT_COLO_HELPERS];	/* the supervisor's other threads */
	unsigned int nr_helpers;
	uint64_t look_ns;		/* the last read of ftid's CPU */
	uint64_t backoff_until;		/* no following before this (after a rescue) */
	const void *key;		/* the followed process's uffd in the event loop */
	bool at_idle;			/* the serving thread is at SCHED_IDLE ... */
	uint64_t idle_from;		/* ... since */
	/* the guard */
	pthread_t guard;
	bool guard_up;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;			/* under lock */
	_Atomic bool parked;		/* the guard sleeps: out of SCHED_IDLE for a while */
	_Atomic uint64_t last_ns;	/* the last wake-up at SCHED_IDLE began */
	_Atomic bool idle;		/* at_idle, for the guard */
	_Atomic uint64_t beat_ns;	/* the last turn at SCHED_IDLE began */
	_Atomic bool rescued;		/* the guard gave its policy and affinity back */
	/* counters (serving thread) */
	uint64_t binds, wakes, idle_ns, rescues, moved;
};

bool rt_sched_can_return(int policy, const struct sched_param *param);
void rt_colo_init(struct rt_colo *c, int epfd, bool enable);
void rt_colo_fault(struct rt_colo *c, pid_t pid, pid_t tid, const void *key);
void rt_colo_turn(struct rt_colo *c, bool only_followed);
void rt_colo_no_fault(struct rt_colo *c);
void rt_colo_normal(struct rt_colo *c);
void rt_colo_run(struct rt_colo *c, pid_t pid);
int rt_colo_copy(struct rt_colo *c, int uffd, uint64_t dst, const void *src, uint64_t len,
		 uint64_t *done);

/* Whether the serving thread follows a faulting thread now (false for a
 * zeroed @c that rt_colo_init() never set up). */
static inline bool rt_colo_on(const struct rt_colo *c)
{
	return c->usable && c->cpu >= 0;
}

/* The CPU the serving thread follows a thread on, or -1: agents are told
 * to move their batches elsewhere (a runnable agent there would make the
 * scheduler wake the followed thread on another CPU). */
static inline int rt_colo_cpu(const struct rt_colo *c)
{
	return rt_colo_on(c) ? c->cpu : -1;
}
void rt_colo_fini(struct rt_colo *c);

#endif
