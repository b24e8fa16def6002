/* SPDX-License-Identifier: MIT */
/*
 * The supervisor's page states of one process: an open-addressing hash map
 * from page address to state (docs/RUNTIME.md, "Page states"), and the
 * FIFO of resident pages that gives the eviction order.
 * Context: one thread at a time (the caller serializes); no locking.
 */
#ifndef USWAP_RUNTIME_PAGETAB_H
#define USWAP_RUNTIME_PAGETAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rt_page_state {
	PS_RESIDENT = 1,	/* in the process, in the FIFO */
	PS_EVICTING,		/* in the batch in flight, slot = idx */
	PS_DEAD,		/* EVICTING, dropped by the program: zeros after the answer */
	PS_SWAPPED,		/* data in the mirror at index idx */
	PS_UNEVICTABLE,		/* resident; the kernel refused to move it */
	PS_SHARED = 16,		/* in a forked child, the parent's page shared copy-on-write:
				 * charged to the parent (not in the child's nr_resident) */
};

#define PT_VAL(state, idx)	(((uint64_t)(idx) << 8) | (uint64_t)(state))
#define PT_STATE(val)		((enum rt_page_state)((val) & 0xff))
#define PT_IDX(val)		((uint32_t)((val) >> 8))

struct pt_ent {
	uint64_t key;		/* page address; 0 = empty slot */
	uint64_t val;		/* PT_VAL() */
};

/* Invariant: count < cap / 2 (cap a power of two, >= 64). */
struct pagetab {
	struct pt_ent *e;
	size_t cap, count;
};

int pt_init(struct pagetab *pt);
void pt_free(struct pagetab *pt);
bool pt_get(const struct pagetab *pt, uint64_t key, uint64_t *val);
int pt_set(struct pagetab *pt, uint64_t key, uint64_t val);
void pt_del(struct pagetab *pt, uint64_t key);
void pt_clear(struct pagetab *pt);
int pt_collect(const struct pagetab *pt, uint64_t start, uint64_t end,
	       struct pt_ent **out, size_t *nr);

/* A growable ring of page addresses. */
struct rt_fifo {
	uint64_t *a;
	size_t cap, head, len;	/* cap a power of two */
};

int fifo_push(struct rt_fifo *f, uint64_t addr);
bool fifo_pop(struct rt_fifo *f, uint64_t *addr);
void fifo_free(struct rt_fifo *f);

#endif
