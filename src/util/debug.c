/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/debug.h"
#include <uswap/common.h>
#include <uswap/version.h>

/** uswap_die() - report a broken invariant and abort. Context: any. */
void uswap_die(const char *file, int line, const char *what)
{
	fprintf(stderr, "uswap: BUG at %s:%d: %s\n", file, line, what);
	fflush(stderr);
	abort();
}

/** uswap_dbg_printf() - a debug message on stderr. Context: any. */
void uswap_dbg_printf(const char *fmt, ...)
{
	va_list ap;

	if (getenv("USWAP_QUIET"))
		return;
	va_start(ap, fmt);
	fputs("uswap: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

USWAP_API const char *uswap_version(void)
{
	return USWAP_VERSION_STRING;
}

#if defined(USWAP_TSAN)
char uswap_rcu_tsan_sync;
#endif
