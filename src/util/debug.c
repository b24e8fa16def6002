/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/debug.h"
#include <uswap/common.h>
#include <uswap/version.h>

/*
 * Where the library's messages go: the caller's function and its argument,
 * read and written together under output_lock (messages are rare; the
 * lock keeps a reader from pairing one call's fn with another's arg).
 */
static pthread_mutex_t output_lock = PTHREAD_MUTEX_INITIALIZER;
static void (*output_fn)(const char *msg, void *arg);
static void *output_arg;

USWAP_API void uswap_set_output(void (*fn)(const char *msg, void *arg), void *arg)
{
	pthread_mutex_lock(&output_lock);
	output_fn = fn;
	output_arg = fn ? arg : NULL;
	pthread_mutex_unlock(&output_lock);
}

/*
 * Deliver one formatted message. A debug message (!always) is dropped
 * under USWAP_QUIET and, with no output function set, below debug level 1;
 * with none set, the rest goes to stderr behind the "uswap: " prefix.
 */
static void uswap_voutput(bool always, const char *fmt, va_list ap)
{
	void (*fn)(const char *msg, void *arg);
	char msg[1024];
	void *arg;

	if (!always && getenv("USWAP_QUIET"))
		return;
	pthread_mutex_lock(&output_lock);
	fn = output_fn;
	arg = output_arg;
	pthread_mutex_unlock(&output_lock);
	if (!fn && !always && USWAP_DEBUG < 1)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (fn) {
		fn(msg, arg);
		return;
	}
	fprintf(stderr, "uswap: %s\n", msg);
	fflush(stderr);
}

/**
 * uswap_die() - report a broken invariant and abort.
 * The report is not a debug message: without an output function it goes
 * to stderr at every debug level, as a silent abort would hide its cause.
 * Context: any.
 */
void uswap_die(const char *file, int line, const char *what)
{
	uswap_err_printf("BUG at %s:%d: %s", file, line, what);
	abort();
}

/** uswap_dbg_printf() - a debug message (see uswap_voutput()). Context: any. */
void uswap_dbg_printf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	uswap_voutput(false, fmt, ap);
	va_end(ap);
}

/**
 * uswap_err_printf() - a message the caller asked for or must see (before
 * an abort), delivered at every debug level and despite USWAP_QUIET.
 * Context: any.
 */
void uswap_err_printf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	uswap_voutput(true, fmt, ap);
	va_end(ap);
}

USWAP_API const char *uswap_version(void)
{
	return USWAP_VERSION_STRING;
}

#if defined(USWAP_TSAN)
char uswap_rcu_tsan_sync;
#endif
