/* SPDX-License-Identifier: MIT */
/* The userfaultfd operations the supervisor, the shim and the in-process
 * regions share. Depends on libc only (the shim links it). */
#ifndef USWAP_RUNTIME_UFFD_OPS_H
#define USWAP_RUNTIME_UFFD_OPS_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "runtime/uffd_compat.h"

#define RT_UFFD_PAGE	4096UL

int rt_uffd_open(int flags);
ssize_t rt_uffd_read(int uffd, void *buf, size_t len);
int rt_uffd_api(int uffd, uint64_t want, uint64_t *got);
int rt_uffd_register(int uffd, uint64_t start, uint64_t len);
int rt_uffd_unregister(int uffd, uint64_t start, uint64_t len);
void rt_uffd_wake(int uffd, uint64_t addr, uint64_t len);
int rt_uffd_copy(int uffd, uint64_t dst, const void *src, uint64_t len, uint64_t *done);
int rt_uffd_poison(int uffd, uint64_t addr, uint64_t len);
int rt_uffd_move(int uffd, uint64_t dst, uint64_t src, uint64_t len, int tries,
		 uint64_t *done);

/* CLOCK_MONOTONIC in nanoseconds: the fault service clock of both modes. */
static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The latency histogram's bucket, below @nbuckets, for a fault read at @t0
 * (now_ns()) and served now: b holds [2^b, 2^(b+1)) us, the last the rest. */
static inline unsigned int rt_lat_bucket(uint64_t t0, unsigned int nbuckets)
{
	uint64_t us = (now_ns() - t0) / 1000;
	unsigned int b = 0;

	while (us > 1 && b < nbuckets - 1) {
		us >>= 1;
		b++;
	}
	return b;
}

/*
 * The upper bound (us) of the bucket of histogram @lat (@n buckets, as
 * rt_lat_bucket() fills them) that holds the @pct percentile; 0 if empty.
 */
static inline uint64_t rt_lat_pct(const uint64_t *lat, unsigned int n, unsigned int pct)
{
	uint64_t total = 0, seen = 0;

	for (unsigned int b = 0; b < n; b++)
		total += lat[b];
	for (unsigned int b = 0; total && b < n; b++) {
		seen += lat[b];
		if (seen * 100 >= total * pct)
			return 2ULL << b;
	}
	return 0;
}

#endif
