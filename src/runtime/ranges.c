/* SPDX-License-Identifier: MIT */
/* The registered ranges of one process (ranges.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ranges.h"
#include "util/alloc.h"

#define PAGE_MASK	4095ULL

/* The index of the first run whose end is >= @addr (n when none). */
static size_t first_ending_at_or_after(const struct rt_ranges *r, uint64_t addr)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->v[mid].end < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Make room for @more runs. Return: 0, -ENOMEM, -E2BIG past RT_RANGES_MAX. */
static int reserve(struct rt_ranges *r, size_t more)
{
	size_t ncap;
	struct rt_range *nv;

	if (r->n + more <= r->cap)
		return 0;
	if (r->n + more > RT_RANGES_MAX)
		return -E2BIG;
	ncap = r->cap ? r->cap * 2 : 16;
	while (ncap < r->n + more)
		ncap *= 2;
	if (ncap > RT_RANGES_MAX)
		ncap = RT_RANGES_MAX;
	nv = uswap_realloc(r->v, ncap * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	r->v = nv;
	r->cap = ncap;
	return 0;
}

/**
 * rt_ranges_add() - add [@start, @end), merged with the runs it overlaps
 * or touches. The caller has checked the bounds (start < end, aligned).
 * Return: 0; -ENOMEM, -E2BIG (RT_RANGES_MAX runs already): nothing added.
 */
int rt_ranges_add(struct rt_ranges *r, uint64_t start, uint64_t end)
{
	size_t i = first_ending_at_or_after(r, start), j = i;
	int err;

	/* Runs [i, j) overlap or touch the new one. */
	while (j < r->n && r->v[j].start <= end) {
		if (r->v[j].start < start)
			start = r->v[j].start;
		if (r->v[j].end > end)
			end = r->v[j].end;
		j++;
	}
	if (j == i) {
		if ((err = reserve(r, 1)))
			return err;
		memmove(&r->v[i + 1], &r->v[i], (r->n - i) * sizeof(*r->v));
		r->n++;
	} else if (j > i + 1) {
		memmove(&r->v[i + 1], &r->v[j], (r->n - j) * sizeof(*r->v));
		r->n -= j - i - 1;
	}
	r->v[i] = (struct rt_range){ start, end };
	return 0;
}

/**
 * rt_ranges_sub() - take [@start, @end) out (unmapped). A run cut in two
 * needs one more entry: when none can be had, its upper part is forgotten,
 * which only costs the learning of pages there.
 */
void rt_ranges_sub(struct rt_ranges *r, uint64_t start, uint64_t end)
{
	size_t i = first_ending_at_or_after(r, start + 1), j = i;

	if (start >= end)
		return;
	while (j < r->n && r->v[j].start < end)
		j++;
	if (i == j)
		return;
	if (j == i + 1 && r->v[i].start < start && r->v[i].end > end) {
		uint64_t top = r->v[i].end;

		r->v[i].end = start;
		if (!reserve(r, 1)) {
			memmove(&r->v[i + 2], &r->v[i + 1], (r->n - i - 1) * sizeof(*r->v));
			r->v[i + 1] = (struct rt_range){ end, top };
			r->n++;
		}
		return;
	}
	/* Trim the first and the last; drop those wholly inside. */
	if (r->v[i].start < start) {
		r->v[i].end = start;
		i++;
	}
	if (j > i && r->v[j - 1].end > end) {
		r->v[j - 1].start = end;
		j--;
	}
	if (j > i) {
		memmove(&r->v[i], &r->v[j], (r->n - j) * sizeof(*r->v));
		r->n -= j - i;
	}
}

/**
 * rt_ranges_move() - [@from, @from + @len) was moved to @to (mremap): the
 * registered parts of it move along.
 * Return: 0, -ENOMEM or -E2BIG (parts not moved are forgotten).
 */
int rt_ranges_move(struct rt_ranges *r, uint64_t from, uint64_t to, uint64_t len)
{
	struct rt_range part[8];
	size_t i = first_ending_at_or_after(r, from + 1), k = 0;
	int err = 0;

	if (!len || from + len < from || to + len < to)
		return 0;
	/* An mremap moves one VMA: a run or a few; eight at a time. */
	while (i < r->n && r->v[i].start < from + len) {
		uint64_t a = r->v[i].start > from ? r->v[i].start : from;
		uint64_t b = r->v[i].end < from + len ? r->v[i].end : from + len;

		part[k++] = (struct rt_range){ a, b };
		if (k == 8)
			break;
		i++;
	}
	rt_ranges_sub(r, from, k == 8 ? part[7].end : from + len);
	for (size_t n = 0; n < k; n++) {
		int e = rt_ranges_add(r, to + (part[n].start - from), to + (part[n].end - from));

		if (e && !err)
			err = e;
	}
	if (k == 8 && part[7].end < from + len) {
		uint64_t done = part[7].end - from;
		int e = rt_ranges_move(r, from + done, to + done, len - done);

		if (e && !err)
			err = e;
	}
	return err;
}

/** rt_ranges_find() - the run holding @addr. Return: the run, or NULL. */
const struct rt_range *rt_ranges_find(const struct rt_ranges *r, uint64_t addr)
{
	size_t i = first_ending_at_or_after(r, addr + 1);

	return i < r->n && r->v[i].start <= addr ? &r->v[i] : NULL;
}

/** rt_ranges_copy() - @dst (empty) becomes a copy of @src. Return: 0, -ENOMEM. */
int rt_ranges_copy(struct rt_ranges *dst, const struct rt_ranges *src)
{
	*dst = (struct rt_ranges){ 0 };
	if (!src->n)
		return 0;
	dst->v = uswap_malloc(src->n * sizeof(*dst->v));
	if (!dst->v)
		return -ENOMEM;
	memcpy(dst->v, src->v, src->n * sizeof(*dst->v));
	dst->n = dst->cap = src->n;
	return 0;
}

/** rt_ranges_free() - free @r's runs. */
void rt_ranges_free(struct rt_ranges *r)
{
	free(r->v);
	*r = (struct rt_ranges){ 0 };
}

/**
 * rt_ranges_valid() - whether the invariants hold: runs sorted, disjoint and
 * not touching, each non-empty, page aligned and below rt_user_top(), at
 * most RT_RANGES_MAX of them.
 */
bool rt_ranges_valid(const struct rt_ranges *r)
{
	uint64_t top = rt_user_top();

	if (r->n > r->cap || r->n > RT_RANGES_MAX)
		return false;
	for (size_t i = 0; i < r->n; i++) {
		const struct rt_range *g = &r->v[i];

		if (g->start >= g->end || (g->start & PAGE_MASK) || (g->end & PAGE_MASK) ||
		    g->end > top || (i && r->v[i - 1].end >= g->start))
			return false;
	}
	return true;
}

/**
 * rt_user_top() - the first address above user space: 2^47, or 2^56 with
 * five-level page tables, less the page the kernel keeps unmapped.
 */
uint64_t rt_user_top(void)
{
	static uint64_t top;

	if (!top) {
		char line[4096];
		FILE *f = fopen("/proc/cpuinfo", "re");
		uint64_t t = 1ULL << 47;

		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "flags", 5)) {
				if (strstr(line, " la57"))
					t = 1ULL << 56;
				break;
			}
		if (f)
			fclose(f);
		top = t - 4096;
	}
	return top;
}
