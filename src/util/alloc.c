/* SPDX-License-Identifier: MIT */
/*
 * Allocation failure injection (alloc.h). The armed state is three
 * atomics: a test arms from one thread while others allocate, and an
 * allocation never blocks on a lock here.
 */
#include <errno.h>
#include <stdatomic.h>

#include "util/alloc.h"
#include "util/size.h"

#if USWAP_ALLOC_FAULTS

static _Atomic bool alloc_armed;		/* a rule is set */
static _Atomic uint64_t alloc_nth;		/* fail the call that makes calls == nth */
static _Atomic bool alloc_sticky;		/* ... and every one after it */
static _Atomic uint64_t alloc_seen;		/* calls since armed */
static _Atomic uint64_t alloc_failed;		/* calls failed since armed */
static void *_Atomic alloc_failed_site;		/* where the last failed call was */

/**
 * uswap_alloc_should_fail() - whether this allocation is to fail
 *
 * Called by the uswap_*alloc() wrappers before the libc call; counts the
 * call while a rule is armed.
 *
 * Context: any thread, any lock held; never blocks.
 * Return: true to fail this allocation.
 */
bool uswap_alloc_should_fail(void)
{
	uint64_t seen, nth;

	if (likely(!atomic_load_explicit(&alloc_armed, memory_order_relaxed)))
		return false;
	seen = atomic_fetch_add_explicit(&alloc_seen, 1, memory_order_relaxed) + 1;
	nth = atomic_load_explicit(&alloc_nth, memory_order_relaxed);
	if (seen < nth || (seen > nth && !atomic_load_explicit(&alloc_sticky,
							   memory_order_relaxed)))
		return false;
	atomic_fetch_add_explicit(&alloc_failed, 1, memory_order_relaxed);
	/* the wrappers are inline: our caller is the allocation's site */
	atomic_store_explicit(&alloc_failed_site, __builtin_return_address(0),
			      memory_order_relaxed);
	return true;
}

/**
 * uswap_alloc_failed_site() - the code address of the last failed allocation
 *
 * For a sweep's coverage report (addr2line turns it into file:line).
 *
 * Context: any thread.
 * Return: the address, NULL if none failed yet.
 */
void *uswap_alloc_failed_site(void)
{
	return atomic_load_explicit(&alloc_failed_site, memory_order_relaxed);
}

/**
 * uswap_alloc_fail_nth() - arm (or disarm) an allocation failure
 * @n: the allocation to fail, 1-based, counted from now across all
 *     threads; 0 disarms
 * @sticky: fail every allocation after the n-th too
 *
 * Resets the counters of uswap_alloc_calls() and uswap_alloc_failures().
 * For tests: counting is exact only while one thread allocates.
 *
 * Context: any thread.
 * Return: nothing.
 */
void uswap_alloc_fail_nth(uint64_t n, bool sticky)
{
	atomic_store_explicit(&alloc_armed, false, memory_order_relaxed);
	atomic_store_explicit(&alloc_seen, 0, memory_order_relaxed);
	atomic_store_explicit(&alloc_failed, 0, memory_order_relaxed);
	atomic_store_explicit(&alloc_nth, n, memory_order_relaxed);
	atomic_store_explicit(&alloc_sticky, sticky, memory_order_relaxed);
	atomic_store_explicit(&alloc_armed, n != 0, memory_order_seq_cst);
}

/**
 * uswap_alloc_calls() - allocations counted since the last arming
 *
 * Context: any thread.
 * Return: the count (0 while disarmed from the start).
 */
uint64_t uswap_alloc_calls(void)
{
	return atomic_load_explicit(&alloc_seen, memory_order_relaxed);
}

/**
 * uswap_alloc_failures() - allocations failed on purpose since the last arming
 *
 * Context: any thread.
 * Return: the count.
 */
uint64_t uswap_alloc_failures(void)
{
	return atomic_load_explicit(&alloc_failed, memory_order_relaxed);
}

/**
 * uswap_alloc_fail_from_env() - arm from an environment variable
 * @name: the variable; its value is "N" (fail the N-th allocation from
 *        now) or "N+" (the N-th and every one after it)
 *
 * For the runtime's sweep (tests/runtime/run_sweep.sh). Read with
 * secure_getenv(): ignored in a set-user-ID or file-capability execution.
 * The variable is removed from the environment, so that the program
 * started under it does not inherit it.
 *
 * Context: at start-up, before other threads exist.
 * Return: 0 (armed, or the variable is not set); -EINVAL for a malformed
 * value (nothing armed).
 */
int uswap_alloc_fail_from_env(const char *name)
{
	const char *v = secure_getenv(name);
	size_t len;
	bool sticky;
	uint64_t n;

	if (!v || !*v)
		return 0;
	len = strlen(v);
	sticky = v[len - 1] == '+';
	if (sticky)
		len--;
	if (uswap_parse_count_n(v, len, &n) || !n)
		return -EINVAL;
	unsetenv(name);
	uswap_alloc_fail_nth(n, sticky);
	return 0;
}

#endif
