/* SPDX-License-Identifier: MIT */
/*
 * RCU for uswap: liburcu's "bulletproof" flavor (threads register
 * themselves on first use, which a library needs), behind thin wrappers.
 *
 * ThreadSanitizer cannot see a grace period: liburcu synchronizes with
 * plain and inline-asm accesses it does not instrument. In TSan builds the
 * wrappers add the edge the grace period guarantees: every read-side
 * section's end, and every retirement, "releases" one sync object that the
 * reclaim callback "acquires" before freeing.
 */
#ifndef USWAP_UTIL_RCU_H
#define USWAP_UTIL_RCU_H

#include <stdbool.h>
#include <urcu-bp.h>

#if defined(USWAP_TSAN)
#include <sanitizer/tsan_interface.h>
extern char uswap_rcu_tsan_sync;
#define uswap_rcu_tsan_release() __tsan_release(&uswap_rcu_tsan_sync)
#define uswap_rcu_tsan_acquire() __tsan_acquire(&uswap_rcu_tsan_sync)
#else
#define uswap_rcu_tsan_release() do { } while (0)
#define uswap_rcu_tsan_acquire() do { } while (0)
#endif

static inline void uswap_rcu_read_lock(void)
{
	rcu_read_lock();
}

static inline void uswap_rcu_read_unlock(void)
{
	uswap_rcu_tsan_release();
	rcu_read_unlock();
}

/* Retire @head: @fn runs after a grace period (in liburcu's thread). */
static inline void uswap_call_rcu(struct rcu_head *head, void (*fn)(struct rcu_head *))
{
	uswap_rcu_tsan_release();
	call_rcu(head, fn);
}

static inline void uswap_synchronize_rcu(void)
{
	synchronize_rcu();
	uswap_rcu_tsan_acquire();
}

/* For assertions: the calling thread is inside a read-side section. */
static inline bool uswap_rcu_read_held(void)
{
	return rcu_read_ongoing();
}

#endif
