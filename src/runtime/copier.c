// SPDX-License-Identifier: MIT
/* The copy thread: see copier.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "runtime/copier.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "runtime/colocate.h"
#include "runtime/pager.h"
#include "runtime/uffd_ops.h"
#include "util/alloc.h"

/* The thread: each queued run copied, its result kept, the eventfd
 * counted up; until told to stop. */
static void *copier_main(void *arg)
{
	struct rt_copier *c = arg;
	uint64_t one = 1;
	struct sched_param idle = { 0 };

	if (c->idle && pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle)) {
		/* stays at the serving thread's policy; c->idle is only read
		 * by the serving thread to give that back, a no-op then */
	}
	pthread_mutex_lock(&c->lock);
	for (;;) {
		int uffd, err;
		uint64_t dst, len, done = 0;

		while (c->state != RT_COPY_QUEUED && !c->stop)
			pthread_cond_wait(&c->cond, &c->lock);
		if (c->state != RT_COPY_QUEUED)
			break;
		uffd = c->uffd;
		dst = c->dst;
		len = c->len;
		pthread_mutex_unlock(&c->lock);
		err = rt_uffd_copy(uffd, dst, c->buf, len, &done);
		pthread_mutex_lock(&c->lock);
		c->err = err;
		c->done = done;
		c->state = RT_COPY_DONE;
		pthread_cond_broadcast(&c->cond);
		if (write(c->efd, &one, sizeof(one)) < 0) {
			/* a full counter: the loop reads it, never 2^64 - 1 behind */
		}
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/**
 * rt_copier_start() - make @c's buffer, eventfd and thread (with the
 * caller's signal mask and capabilities: start it after dropping
 * privileges; at SCHED_IDLE if the caller may give it its own policy back).
 * Context: serving thread.
 * Return: 0; -errno, and @c stays unusable (every run copied by the
 * serving thread).
 */
int rt_copier_start(struct rt_copier *c)
{
	int err;

	*c = (struct rt_copier){ .efd = -1 };
	c->policy = sched_getscheduler(0);
	c->idle = !sched_getparam(0, &c->param) && rt_sched_can_return(c->policy, &c->param);
	c->buf = uswap_malloc((size_t)PG_RUN * PG_PAGE);
	if (!c->buf)
		return -ENOMEM;
	c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->efd < 0) {
		err = -errno;
		goto fail;
	}
	if ((err = -pthread_mutex_init(&c->lock, NULL)))
		goto fail;
	if ((err = -pthread_cond_init(&c->cond, NULL))) {
		pthread_mutex_destroy(&c->lock);
		goto fail;
	}
	if ((err = -pthread_create(&c->thread, NULL, copier_main, c))) {
		pthread_cond_destroy(&c->cond);
		pthread_mutex_destroy(&c->lock);
		goto fail;
	}
	pthread_setname_np(c->thread, "uswap-copy");	/* for top, perf: no error matters */
	c->started = true;
	return 0;
fail:
	if (c->efd >= 0)
		close(c->efd);
	free(c->buf);
	*c = (struct rt_copier){ .efd = -1 };
	return err;
}

/** rt_copier_stop() - end @c's thread (after the run it copies) and free
 * what rt_copier_start() made. Context: serving thread, no run queued. */
void rt_copier_stop(struct rt_copier *c)
{
	if (!c->started)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	close(c->efd);
	free(c->buf);
	*c = (struct rt_copier){ .efd = -1 };
}

/** rt_copier_free() - whether a run may be handed to @c now (started, none
 * queued or untaken). Context: serving thread. */
bool rt_copier_free(const struct rt_copier *c)
{
	return c->started && !c->owner;
}

/**
 * rt_copier_queue() - hand @c the copy of @len bytes of its buffer to @dst
 * in @uffd, for @owner, until rt_copier_take() gives @owner back. @uffd
 * must stay open until then. Context: serving thread, rt_copier_free().
 */
void rt_copier_queue(struct rt_copier *c, void *owner, int uffd, uint64_t dst, uint64_t len)
{
	static const struct sched_param idle = { 0 };

	if (c->rescued && !pthread_setschedparam(c->thread, SCHED_IDLE, &idle))
		c->rescued = false;
	c->owner = owner;
	c->t0 = 0;
	c->queued_ns = now_ns();
	c->pages = len / PG_PAGE;
	pthread_mutex_lock(&c->lock);
	c->uffd = uffd;
	c->dst = dst;
	c->len = len;
	c->state = RT_COPY_QUEUED;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

/**
 * rt_copier_take() - the result of @c's run if its copy is over (with
 * @wait: once it is), into *@dst, *@err and *@done (rt_uffd_copy()'s), and
 * @c free again. Context: serving thread.
 * Return: the run's owner; NULL if none was queued, or (without @wait) its
 * copy is not over.
 */
void *rt_copier_take(struct rt_copier *c, bool wait, uint64_t *dst, int *err, uint64_t *done)
{
	void *owner = c->owner;
	uint64_t n;

	if (!owner)
		return NULL;
	pthread_mutex_lock(&c->lock);
	if (c->state != RT_COPY_DONE && c->idle && !c->rescued &&
	    (wait || now_ns() - c->queued_ns > RT_COPY_RESCUE_NS) &&
	    !pthread_setschedparam(c->thread, c->policy, &c->param)) {
		c->rescued = true;
		c->rescues++;
	}
	while (wait && c->state != RT_COPY_DONE)
		pthread_cond_wait(&c->cond, &c->lock);
	if (c->state != RT_COPY_DONE) {
		pthread_mutex_unlock(&c->lock);
		return NULL;
	}
	c->state = RT_COPY_IDLE;
	*dst = c->dst;
	*err = c->err;
	*done = c->done;
	pthread_mutex_unlock(&c->lock);
	if (read(c->efd, &n, sizeof(n)) < 0) {
		/* already read (EAGAIN): the count is the loop's wake-up only */
	}
	c->owner = NULL;
	c->pages = 0;
	return owner;
}
