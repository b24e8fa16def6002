/* SPDX-License-Identifier: MIT */
/*
 * The page-state hash map (linear probing with backward-shift deletion, so
 * no tombstones) and the resident FIFO (pagetab.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/pagetab.h"
#include "util/alloc.h"

static size_t pt_hash(uint64_t key, size_t cap)
{
	key >>= 12;
	key *= 0x9e3779b97f4a7c15ULL;
	return (size_t)(key >> 20) & (cap - 1);
}

/** pt_init() - an empty map. Return: 0, -ENOMEM (@pt then has no room: cap 0). */
int pt_init(struct pagetab *pt)
{
	pt->count = 0;
	pt->e = uswap_calloc(1024, sizeof(*pt->e));
	pt->cap = pt->e ? 1024 : 0;
	return pt->e ? 0 : -ENOMEM;
}

/** pt_free() - free the map's memory. */
void pt_free(struct pagetab *pt)
{
	free(pt->e);
	pt->e = NULL;
	pt->cap = pt->count = 0;
}

/** pt_get() - look up @key. Return: true and *@val if present. */
bool pt_get(const struct pagetab *pt, uint64_t key, uint64_t *val)
{
	for (size_t i = pt_hash(key, pt->cap);; i = (i + 1) & (pt->cap - 1)) {
		if (!pt->e[i].key)
			return false;
		if (pt->e[i].key == key) {
			*val = pt->e[i].val;
			return true;
		}
	}
}

static void pt_insert(struct pt_ent *e, size_t cap, uint64_t key, uint64_t val)
{
	size_t i = pt_hash(key, cap);

	while (e[i].key && e[i].key != key)
		i = (i + 1) & (cap - 1);
	e[i].key = key;
	e[i].val = val;
}

/** pt_set() - insert or replace @key's value. Return: 0, -ENOMEM (map unchanged). */
int pt_set(struct pagetab *pt, uint64_t key, uint64_t val)
{
	uint64_t old;
	bool add = !pt_get(pt, key, &old);

	if (add && (pt->count + 1) * 2 > pt->cap) {
		size_t ncap = pt->cap * 2;
		struct pt_ent *ne = uswap_calloc(ncap, sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		for (size_t i = 0; i < pt->cap; i++)
			if (pt->e[i].key)
				pt_insert(ne, ncap, pt->e[i].key, pt->e[i].val);
		free(pt->e);
		pt->e = ne;
		pt->cap = ncap;
	}
	pt_insert(pt->e, pt->cap, key, val);
	pt->count += add;
	return 0;
}

/** pt_del() - remove @key if present. */
void pt_del(struct pagetab *pt, uint64_t key)
{
	size_t mask = pt->cap - 1, i = pt_hash(key, pt->cap), j;

	while (pt->e[i].key != key) {
		if (!pt->e[i].key)
			return;
		i = (i + 1) & mask;
	}
	/* Backward shift: move up every entry whose probe run crosses the hole. */
	for (j = (i + 1) & mask; pt->e[j].key; j = (j + 1) & mask) {
		size_t home = pt_hash(pt->e[j].key, pt->cap);

		if (((j - home) & mask) >= ((j - i) & mask)) {
			pt->e[i] = pt->e[j];
			i = j;
		}
	}
	pt->e[i].key = 0;
	pt->e[i].val = 0;
	pt->count--;
}

/** pt_clear() - remove every entry, keeping the table's room. */
void pt_clear(struct pagetab *pt)
{
	if (pt->count)
		memset(pt->e, 0, pt->cap * sizeof(*pt->e));
	pt->count = 0;
}

/**
 * pt_collect() - copy every entry with a key in [@start, @end) into a new
 * array *@out (free() it), probing each page of a small range, walking the
 * table for a large one.
 * Return: 0, *@nr entries in *@out (NULL when none); -ENOMEM (*@out NULL,
 * *@nr 0): the copy is all or nothing, so that no caller takes part of a
 * range for the whole of it.
 */
int pt_collect(const struct pagetab *pt, uint64_t start, uint64_t end, struct pt_ent **out,
	       size_t *nr)
{
	uint64_t pages = (end - start) >> 12, v;
	size_t n = 0, cap = 64;
	struct pt_ent *a = uswap_malloc(cap * sizeof(*a));

	*out = NULL;
	*nr = 0;
	if (!a)
		return -ENOMEM;
	for (uint64_t k = 0, i = 0; pages < pt->count ? k < pages : i < pt->cap;) {
		uint64_t key;

		if (pages < pt->count) {
			key = start + (k++ << 12);
			if (!pt_get(pt, key, &v))
				continue;
		} else {
			key = pt->e[i].key;
			v = pt->e[i++].val;
			if (!key || key < start || key >= end)
				continue;
		}
		if (n == cap) {
			struct pt_ent *na = uswap_realloc(a, cap * 2 * sizeof(*a));

			if (!na) {
				free(a);
				return -ENOMEM;
			}
			a = na;
			cap *= 2;
		}
		a[n].key = key;
		a[n++].val = v;
	}
	if (!n)
		free(a);
	else
		*out = a;
	*nr = n;
	return 0;
}

/** fifo_push() - append @addr. Return: 0, -ENOMEM. */
int fifo_push(struct rt_fifo *f, uint64_t addr)
{
	if (f->len == f->cap) {
		size_t ncap = f->cap ? f->cap * 2 : 1024;
		uint64_t *na = uswap_malloc(ncap * sizeof(*na));

		if (!na)
			return -ENOMEM;
		for (size_t i = 0; i < f->len; i++)
			na[i] = f->a[(f->head + i) & (f->cap - 1)];
		free(f->a);
		f->a = na;
		f->cap = ncap;
		f->head = 0;
	}
	f->a[(f->head + f->len++) & (f->cap - 1)] = addr;
	return 0;
}

/** fifo_pop() - take the oldest address. Return: false when empty. */
bool fifo_pop(struct rt_fifo *f, uint64_t *addr)
{
	if (!f->len)
		return false;
	*addr = f->a[f->head];
	f->head = (f->head + 1) & (f->cap - 1);
	f->len--;
	return true;
}

/** fifo_free() - free the ring. */
void fifo_free(struct rt_fifo *f)
{
	free(f->a);
	memset(f, 0, sizeof(*f));
}
