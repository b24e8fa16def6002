/* SPDX-License-Identifier: MIT */
/*
 * The copy thread (docs/RUNTIME.md, "Two processes faulting"): while two
 * processes fault in turns, the UFFDIO_COPY of one swap-in run of several
 * pages, its bytes already read from the mirror by the serving thread, is
 * made here, and the serving thread goes on with the other process's
 * faults. One run at a time. Until the serving thread takes its result,
 * the run's process is left alone: its uffd unread, its faults waiting,
 * its fork held (session.c), so that nothing the supervisor does for it
 * comes between the copy and its bookkeeping, as on the serving thread.
 *
 * The thread runs at SCHED_IDLE when the serving thread can give it its
 * own policy back: woken on a CPU where a program thread is runnable, it
 * waits for that thread rather than delay it. A copy not over after
 * RT_COPY_RESCUE_NS (a CPU kept busy by others) gets the serving thread's
 * policy until it is, counted in copier_rescues.
 */
#ifndef USWAP_RUNTIME_COPIER_H
#define USWAP_RUNTIME_COPIER_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#define RT_COPY_RESCUE_NS	2000000ULL	/* a copy queued this long gets the policy back */

enum rt_copy_state { RT_COPY_IDLE, RT_COPY_QUEUED, RT_COPY_DONE };

struct rt_copier {
	bool started;			/* the thread runs: runs may be handed over */
	int efd;			/* eventfd, counted up at each copy's end, or -1 */
	char *buf;			/* a run's bytes: PG_RUN pages */
	void *owner;			/* whose run is queued or done (serving thread's) */
	uint64_t t0;			/* its fault's read time (serving thread's) */
	uint64_t queued_ns;		/* when it was queued (serving thread's) */
	uint64_t pages;			/* its pages, 0 with none (serving thread's) */
	bool idle;			/* the thread runs at SCHED_IDLE ... */
	bool rescued;			/* ... but has the policy below now */
	int policy;			/* the serving thread's policy and priority */
	struct sched_param param;
	uint64_t rescues;		/* copies given the policy back */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* under lock */
	enum rt_copy_state state;
	bool stop;
	int uffd;
	uint64_t dst, len, done;
	int err;
};

int rt_copier_start(struct rt_copier *c);
void rt_copier_stop(struct rt_copier *c);
bool rt_copier_free(const struct rt_copier *c);
void rt_copier_queue(struct rt_copier *c, void *owner, int uffd, uint64_t dst, uint64_t len);
void *rt_copier_take(struct rt_copier *c, bool wait, uint64_t *dst, int *err, uint64_t *done);
#endif
