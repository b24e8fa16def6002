/* SPDX-License-Identifier: MIT */
/*
 * Locks with the kernel's shape: a spinlock for short critical sections
 * (cluster, device lists) and a sleeping mutex, both with an owner recorded
 * at USWAP_DEBUG >= 2 so that uswap_assert_held() works like
 * lockdep_assert_held().
 */
#ifndef USWAP_UTIL_LOCK_H
#define USWAP_UTIL_LOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "util/debug.h"

struct uswap_spinlock {
	pthread_spinlock_t l;
#if USWAP_DEBUG >= 2
	_Atomic(pthread_t) owner;	/* 0 when unlocked */
#endif
};

struct uswap_mutex {
	pthread_mutex_t m;
#if USWAP_DEBUG >= 2
	_Atomic(pthread_t) owner;
#endif
};

static inline void uswap_spin_init(struct uswap_spinlock *s)
{
	pthread_spin_init(&s->l, PTHREAD_PROCESS_PRIVATE);
#if USWAP_DEBUG >= 2
	atomic_store_explicit(&s->owner, 0, memory_order_relaxed);
#endif
}

static inline void uswap_spin_destroy(struct uswap_spinlock *s)
{
	pthread_spin_destroy(&s->l);
}

static inline void uswap_spin_lock(struct uswap_spinlock *s)
{
	pthread_spin_lock(&s->l);
#if USWAP_DEBUG >= 2
	atomic_store_explicit(&s->owner, pthread_self(), memory_order_relaxed);
#endif
}

static inline bool uswap_spin_trylock(struct uswap_spinlock *s)
{
	if (pthread_spin_trylock(&s->l))
		return false;
#if USWAP_DEBUG >= 2
	atomic_store_explicit(&s->owner, pthread_self(), memory_order_relaxed);
#endif
	return true;
}

static inline void uswap_spin_unlock(struct uswap_spinlock *s)
{
#if USWAP_DEBUG >= 2
	atomic_store_explicit(&s->owner, 0, memory_order_relaxed);
#endif
	pthread_spin_unlock(&s->l);
}

static inline void uswap_mutex_init(struct uswap_mutex *m)
{
	pthread_mutex_init(&m->m, NULL);
#if USWAP_DEBUG >= 2
	atomic_store_explicit(&m->owner, 0, memory_order_relaxed);
#endif
}

static inline void uswap_mutex_destroy(struct uswap_mutex *m)
{
	pthread_mutex_destroy(&m->m);
}

static inline void uswap_mutex_lock(struct uswap_mutex *m)
{
	pthread_mutex_lock(&m->m);
#if USWAP_DEBUG >= 2
	atomic_store_explicit(&m->owner, pthread_self(), memory_order_relaxed);
#endif
}

static inline bool uswap_mutex_trylock(struct uswap_mutex *m)
{
	if (pthread_mutex_trylock(&m->m))
		return false;
#if USWAP_DEBUG >= 2
	atomic_store_explicit(&m->owner, pthread_self(), memory_order_relaxed);
#endif
	return true;
}

static inline void uswap_mutex_unlock(struct uswap_mutex *m)
{
#if USWAP_DEBUG >= 2
	atomic_store_explicit(&m->owner, 0, memory_order_relaxed);
#endif
	pthread_mutex_unlock(&m->m);
}

#if USWAP_DEBUG >= 2
#define uswap_assert_held(lk) \
	uswap_assert(pthread_equal(atomic_load_explicit(&(lk)->owner, memory_order_relaxed), \
				   pthread_self()))
#else
#define uswap_assert_held(lk) do { (void)(lk); } while (0)
#endif

#endif
