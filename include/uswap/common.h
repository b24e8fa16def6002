/* SPDX-License-Identifier: MIT */
/*
 * Basic types shared by every part of the uswap API.
 */
#ifndef USWAP_COMMON_H
#define USWAP_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(USWAP_BUILDING)
#define USWAP_API __attribute__((visibility("default")))
#else
#define USWAP_API
#endif

/* Page geometry: 4 KiB pages, clusters of 512 slots (2 MiB), orders 0..9. */
#define USWAP_PAGE_SHIFT	12
#define USWAP_PAGE_SIZE		(1UL << USWAP_PAGE_SHIFT)
#define SWAPFILE_CLUSTER	512
#define SWAP_NR_ORDERS		10

/*
 * A swap entry: device type in bits 58..62, slot offset below (the kernel's
 * arch-independent form). val == 0 is the invalid entry: offset 0 is always
 * the header slot, which is bad.
 */
typedef struct {
	uint64_t val;
} swp_entry_t;

#define SWP_TYPE_SHIFT		58
#define SWP_OFFSET_MASK		((1ULL << SWP_TYPE_SHIFT) - 1)
#define MAX_SWAPFILES_SHIFT	5
#define MAX_SWAPFILES		24	/* the kernel's count on distro configs */

static inline swp_entry_t swp_entry(unsigned int type, uint64_t offset)
{
	swp_entry_t e = { ((uint64_t)type << SWP_TYPE_SHIFT) | (offset & SWP_OFFSET_MASK) };
	return e;
}

static inline unsigned int swp_type(swp_entry_t e)
{
	return (unsigned int)(e.val >> SWP_TYPE_SHIFT);
}

static inline uint64_t swp_offset(swp_entry_t e)
{
	return e.val & SWP_OFFSET_MASK;
}

/**
 * uswap_version() - the library's version string, "MAJOR.MINOR.PATCH".
 * Compare it with USWAP_VERSION_STRING to tell the library a program runs
 * with from the headers it was built with.
 * Context: any.
 * Return: a static string.
 */
USWAP_API const char *uswap_version(void);

/**
 * uswap_set_output() - send the library's messages to @fn instead of stderr.
 * @fn: called with each message, or NULL to restore the default.
 * @arg: passed to @fn as it is.
 *
 * The library reports misuse it detects (a bad swap entry, the reason a
 * swapon failed) as debug messages, at USWAP_DEBUG >= 1 only, and a broken
 * invariant before it aborts. With an output function set, each message
 * is one call of @fn: @msg is one line of text without a trailing newline
 * or a "uswap: " prefix, valid during the call only; @fn may be called
 * from any thread, concurrently, and must not call back into the library.
 * Without one (the default), debug messages go to stderr as
 * "uswap: MESSAGE" at USWAP_DEBUG >= 1 and nowhere at level 0, and the
 * report before an abort goes to stderr at every level. The environment
 * variable USWAP_QUIET, when set, drops the debug messages either way.
 *
 * Context: any thread; a message being delivered while @fn is replaced
 * may still reach the previous function.
 * Return: nothing.
 */
USWAP_API void uswap_set_output(void (*fn)(const char *msg, void *arg), void *arg);

#ifdef __cplusplus
}
#endif
#endif
