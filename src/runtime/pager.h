/* SPDX-License-Identifier: MIT */
/*
 * The pager: one process's pages as the runtime keeps them, for both
 * modes. A space owns the page states, the cold-page lists, the mirror
 * (the swapped pages' bytes, in an mm address space), the ranges, the
 * waiting faults and the batch out; a tree what the spaces of one budget
 * share. A transport (a supervisor's session, a region pool's handler)
 * reads the userfaultfd, tells the pager each event and moves pages by
 * struct pg_ops. States, transitions and invariants: docs/RUNTIME.md,
 * "The pager".
 *
 * Context: one thread at a time per tree (the supervisor's thread; the
 * pool's lock); no locking here.
 */
#ifndef USWAP_RUNTIME_PAGER_H
#define USWAP_RUNTIME_PAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uswap/mm.h>

#include "runtime/coldlist.h"
#include "runtime/pagetab.h"
#include "runtime/proto.h"
#include "runtime/ranges.h"

#define PG_PAGE		RT_PAGE
#define PG_BATCH	RT_BATCH	/* pages per eviction batch */
#define PG_RUN		64		/* pages per swap-in run (sequential prefetch) */
#define PG_ZERO_RUN	16		/* pages per zero-fill run (first touches), doubled
					 * by a sequential first touch up to PG_RUN */
#define PG_MIRROR_CHUNK	(1U << 16)	/* pages per mirror mapping (256 MiB) */
#define PG_MIRROR_MAX	256		/* mirror mappings per space (64 GiB) */
#define PG_TOTAL_FLOOR	64		/* pages: least budget a total bound leaves */

enum pg_trans {
	PGT_FIRST_TOUCH,	/* absent -> RESIDENT: a zero fill */
	PGT_LEARN,		/* absent -> RESIDENT: found present (pagemap, EEXIST) */
	PGT_PICK,		/* RESIDENT -> EVICTING: into the batch */
	PGT_STORE,		/* EVICTING -> SWAPPED: moved, its bytes in the mirror */
	PGT_PUTBACK,		/* EVICTING -> RESIDENT: not moved (busy, cancelled) */
	PGT_REFUSE,		/* EVICTING -> UNEVICTABLE: the kernel will not move it */
	PGT_VANISH,		/* EVICTING -> absent: it was not there any more */
	PGT_DROP_OUT,		/* EVICTING -> DEAD: dropped with its batch out */
	PGT_BURY,		/* DEAD -> absent: its batch settled */
	PGT_SWAPIN,		/* SWAPPED -> RESIDENT: copied back in */
	PGT_POISON,		/* SWAPPED -> absent: lost (SIGBUS on access) */
	PGT_OWN,		/* SHARED -> RESIDENT: one process maps it alone now */
	PGT_DROP,		/* RESIDENT, UNEVICTABLE, SWAPPED, SHARED -> absent */
	PGT_OVERWRITE,		/* any -> absent: a remap's destination */
	PGT_INHERIT,		/* absent -> SHARED, SWAPPED, EVICTING, DEAD: at a fork */
	PGT_NR
};

/* Why a fault waits (each deferred fault counted once, by its reason). */
enum pg_wait { PG_WAIT_EVENT, PG_WAIT_EVICTING, PG_WAIT_BUDGET, PG_WAIT_COPY };

/* The pager's counters, kept in its tree (what each counts: counters.h). */
#define PG_STATS(X)								\
	X(zero_fills) X(zero_pages) X(swapins) X(prefetched) X(evict_batches)	\
	X(evicted) X(evict_busy) X(evict_gone) X(evict_other) X(evict_cancelled)	\
	X(evict_unshared) X(evict_clean) X(poisoned) X(deferred) X(wait_budget) X(wait_evicting)	\
	X(wait_event) X(wait_copy) X(peak_resident) X(peak_unevictable) X(dbg_zero_tracked)	\
	X(dbg_mirror_zero) X(dbg_resident_absent)

struct pg_stats {
#define PG_STAT_FIELD(name)	uint64_t name;
	PG_STATS(PG_STAT_FIELD)
#undef PG_STAT_FIELD
};

struct pager;

/* What the spaces of one budget share. */
struct pg_tree {
	struct uswap_mem *mem;		/* the mirrors' memory */
	struct uswap_memcg *memcg;	/* the mirrors' group (swap limit), or NULL */
	uint64_t budget;		/* pages: the active list's room is half */
	uint64_t resident;		/* sum of the spaces' nr_resident */
	uint64_t unevictable;		/* sum of their nr_unevictable */
	uint64_t inflight_pages;	/* pages of batches out, not settled */
	enum rt_evict_policy policy;
	bool keep_copies;		/* swapped-in pages keep their mirror copy */
	uint64_t kept_checks;		/* pager_check() walks, for its sampling */
	uint64_t *check_bits;		/* pager_check()'s scratch bitmap */
	size_t check_words;
	struct rt_lru_stats lru_st;
	struct pg_stats st;		/* st.evicted is the eviction clock */
	unsigned int nr_spaces;
	char *buf;			/* a swap-in run's bytes */
	/* whether eviction passes over @addr of @p once more, or NULL */
	bool (*pass_over)(void *arg, struct pager *p, uint64_t addr);
	void *pass_arg;
};

/* What a transport does for a fault, with UFFDIO_* semantics. */
struct pg_ops {
	/* Copy @len bytes at @src to @dst; *@done gets the bytes copied.
	 * Return: 0, -EAGAIN (an event is pending), -EEXIST (present). */
	int (*copy)(void *arg, uint64_t dst, const void *src, uint64_t len, uint64_t *done);
	void (*wake)(void *arg, uint64_t addr);
	/* Return: 0, -EAGAIN, -errno. */
	int (*poison)(void *arg, uint64_t addr);
	/* The process must go: its pages cannot be kept (@why), or NULL. */
	void (*lost)(void *arg, const char *why);
	/* A buffer for an @n-page swap-in run whose copy another thread may
	 * make: copy() of it then says -EINPROGRESS, and the transport calls
	 * pager_run_done() once the copy is over. NULL (or the op NULL): the
	 * run is copied by copy() as any other. */
	char *(*run_buf)(void *arg, uint64_t n);
};

/* A swap-in run: its pages' mirror indexes and states as they left. */
struct pg_run {
	bool on;			/* being copied (handed over: until pager_run_done()) */
	uint64_t addr;			/* its first page */
	uint32_t idx[PG_RUN];
	uint64_t old[PG_RUN];
};

struct pg_pending {
	uint64_t addr, t0;		/* the fault, read at (now_ns()) */
};

/* One process's (or pool's) pages. */
struct pager {
	struct pg_tree *t;
	const struct pg_ops *ops;
	void *ops_arg;
	struct pagetab tab;		/* address -> PT_VAL(state, ...) (coldlist.h) */
	struct pagetab kept;		/* RESIDENT/EVICTING address -> its copy's mirror index + 1 */
	struct rt_lru lru;		/* RESIDENT pages: inactive, active */
	struct rt_fifo evict_first;	/* evicted before the lists' pages */
	uint64_t nr_resident, nr_swapped, nr_unevictable, nr_shared;
	struct rt_ranges ranges;	/* registered ranges */
	int pagemap;			/* /proc/PID/pagemap, or -1 */
	bool wp;			/* the ranges have WP_ASYNC written bits */
	uint64_t scan_clock;		/* t->st.evicted at the last written-bit scan */
	/* the mirror */
	struct uswap_mm *mm;
	uint64_t chunk[PG_MIRROR_MAX];
	unsigned int nr_chunks;
	uint32_t next_idx, *free_idx;
	size_t nr_free, cap_free;
	uint32_t nr_lost_idx;		/* indexes mirror_free() could not list (no memory) */
	/* sequential prefetch */
	uint64_t ra_next;		/* the page after the last swap-in run */
	uint32_t ra_win;		/* its window (pages) */
	uint64_t zero_next;		/* the page after the last zero-fill run */
	uint32_t zero_win;		/* its window (pages) */
	struct pg_run run;		/* the swap-in run being copied */
	/* the batch out: slot i names batch_addr[i] */
	bool inflight;
	uint32_t batch_n;
	uint32_t batch_first;		/* slots [0, batch_first) came from evict_first */
	uint64_t batch_addr[PG_BATCH];
	uint64_t cancel;		/* slots not to be moved any more */
	uint32_t batch_done;		/* slots settled */
	uint32_t batch_moved;		/* slots that took a page off the count */
	bool inherited;			/* the batch is a parent's, counted there */
	struct pager *heir_of;		/* inherited: whose batch it is */
	struct pager *heirs, *next_heir;	/* spaces settled with this one's batch */
	uint64_t told;			/* slots told to the heirs */
	struct pagetab passed;		/* pages pass_over passed once (cap 0: none) */
	/* faults waiting */
	struct pg_pending *pending;
	size_t nr_pending, cap_pending;
	uint8_t *dbg_nz;		/* USWAP_DEBUG >= 2: index -> stored non-zero */
	size_t dbg_cap;
};

int pg_tree_init(struct pg_tree *t, struct uswap_mem *mem, uint64_t budget,
		 enum rt_evict_policy policy);
void pg_tree_fini(struct pg_tree *t);

int pager_init(struct pager *p, struct pg_tree *t, const struct pg_ops *ops, void *arg);
void pager_destroy(struct pager *p);
int pager_fork(struct pager *c, struct pager *parent, const struct pg_ops *ops, void *arg);

int pager_serve(struct pager *p, uint64_t addr, uint64_t room);
int pager_run_done(struct pager *p, int err, uint64_t done);
int pager_defer(struct pager *p, uint64_t addr, uint64_t t0, enum pg_wait why);
size_t pager_retry(struct pager *p, int (*serve)(void *arg, uint64_t addr), void *arg,
		   void (*served)(void *arg, uint64_t t0));
void pager_forget_pending(struct pager *p, uint64_t start, uint64_t end);
int pager_swapin_all(struct pager *p);

void pager_learn(struct pager *p, uint64_t addr);
bool pager_own(struct pager *p, uint64_t addr);
uint64_t pager_drop(struct pager *p, uint64_t start, uint64_t end);
uint64_t pager_remap(struct pager *p, uint64_t from, uint64_t to, uint64_t len);

uint32_t pager_pick(struct pager *p, uint32_t want, uint64_t *addr);
void pager_unpick(struct pager *p);

/* Why a session dies when pager_settle() says -ENOSPC: the mm layer could
 * not take the bytes, for want of a slot or of the supervisor's memory. */
#define PG_NO_ROOM \
	"no room to keep an evicted page (swap is full, or the supervisor is out of memory)"
int pager_settle(struct pager *p, uint32_t i, int status, const void *bytes);
uint32_t pager_batch_end(struct pager *p);
void pager_release_heirs(struct pager *p);

bool pager_get(const struct pager *p, uint64_t addr, uint64_t *val);

/* The invariants, walked; abort on the first broken. PAGER_CHECK(): at
 * USWAP_DEBUG >= 2, after each event. */
void pager_check(const struct pager *p);
uint64_t pager_check_present(struct pager *p);
void pager_check_tree(const struct pg_tree *t, uint64_t res, uint64_t unev, uint64_t out);
/* A space's pages of a batch out in its tree, for pager_check_tree(). */
#define PG_OUT(p)	((p)->inflight && !(p)->inherited ? (p)->batch_n - (p)->batch_done : 0)
#if USWAP_DEBUG >= 2
#define PAGER_CHECK(p)	pager_check(p)
#else
#define PAGER_CHECK(p)	do { (void)(p); } while (0)
#endif
#endif
