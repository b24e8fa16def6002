/* SPDX-License-Identifier: MIT */
/*
 * The registered ranges of one process: a sorted array of disjoint,
 * non-adjacent, page-aligned [start, end) runs (adjacent or overlapping
 * registrations merge), looked up by binary search. The runs come from
 * RT_REG messages and move with UNMAP and REMAP events; docs/SECURITY.md
 * says why every bound here is checked.
 * Context: one thread at a time (the caller serializes); no locking.
 */
#ifndef USWAP_RUNTIME_RANGES_H
#define USWAP_RUNTIME_RANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RT_RANGES_MAX	(1U << 17)	/* runs per process: 2 * default vm.max_map_count */

struct rt_range {
	uint64_t start, end;
};

struct rt_ranges {
	struct rt_range *v;
	size_t n, cap;
};

int rt_ranges_add(struct rt_ranges *r, uint64_t start, uint64_t end);
void rt_ranges_sub(struct rt_ranges *r, uint64_t start, uint64_t end);
int rt_ranges_move(struct rt_ranges *r, uint64_t from, uint64_t to, uint64_t len);
const struct rt_range *rt_ranges_find(const struct rt_ranges *r, uint64_t addr);
int rt_ranges_copy(struct rt_ranges *dst, const struct rt_ranges *src);
void rt_ranges_free(struct rt_ranges *r);
bool rt_ranges_valid(const struct rt_ranges *r);
uint64_t rt_user_top(void);

#endif
