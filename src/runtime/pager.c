/* SPDX-License-Identifier: MIT */
/*
 * The pager (pager.h, docs/RUNTIME.md "The pager").
 * Context of everything here: the tree's one thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include <uswap/swap.h>

#include "runtime/pager.h"
#include "runtime/uffd_compat.h"
#include "util/alloc.h"
#include "util/debug.h"

#define PAGE		PG_PAGE
#define ST_BIT(s)	(1U << (s))	/* a state in a mask; bit 0: absent */
#define ABSENT		ST_BIT(0)
#define RES_CLASS	(ST_BIT(PS_RESIDENT) | ST_BIT(PS_EVICTING) | ST_BIT(PS_DEAD) | \
			 ST_BIT(PS_UNEVICTABLE))

static const char zeros[PG_RUN * PAGE];

/* Each transition's states, from and to (enum pg_trans). */
static const struct {
	uint32_t from, to;
} trans[PGT_NR] __attribute__((unused)) = {
	[PGT_FIRST_TOUCH] = { ABSENT, ST_BIT(PS_RESIDENT) },
	[PGT_LEARN] = { ABSENT, ST_BIT(PS_RESIDENT) },
	[PGT_PICK] = { ST_BIT(PS_RESIDENT), ST_BIT(PS_EVICTING) },
	[PGT_STORE] = { ST_BIT(PS_EVICTING), ST_BIT(PS_SWAPPED) },
	[PGT_PUTBACK] = { ST_BIT(PS_EVICTING), ST_BIT(PS_RESIDENT) },
	[PGT_REFUSE] = { ST_BIT(PS_EVICTING), ST_BIT(PS_UNEVICTABLE) },
	[PGT_VANISH] = { ST_BIT(PS_EVICTING), ABSENT },
	[PGT_DROP_OUT] = { ST_BIT(PS_EVICTING), ST_BIT(PS_DEAD) },
	[PGT_BURY] = { ST_BIT(PS_DEAD), ABSENT },
	[PGT_SWAPIN] = { ST_BIT(PS_SWAPPED), ST_BIT(PS_RESIDENT) },
	[PGT_POISON] = { ST_BIT(PS_SWAPPED), ABSENT },
	[PGT_OWN] = { ST_BIT(PS_SHARED), ST_BIT(PS_RESIDENT) },
	[PGT_DROP] = { ST_BIT(PS_RESIDENT) | ST_BIT(PS_UNEVICTABLE) | ST_BIT(PS_SWAPPED) |
		       ST_BIT(PS_SHARED), ABSENT },
	[PGT_OVERWRITE] = { ~ABSENT, ABSENT },
	[PGT_INHERIT] = { ABSENT, ST_BIT(PS_SHARED) | ST_BIT(PS_SWAPPED) | ST_BIT(PS_EVICTING) |
			  ST_BIT(PS_DEAD) },
};

static uint32_t state_bit(bool known, uint64_t val)
{
	return known ? ST_BIT(PT_STATE(val)) : ABSENT;
}

/* The transitions after which a page's kept copy still holds its bytes
 * (or holds none yet); any other forgets the copy. pager_settle() takes
 * the copy itself before PGT_STORE. */
#define KEEPS_COPY	((1U << PGT_FIRST_TOUCH) | (1U << PGT_LEARN) | (1U << PGT_PICK) |	\
			 (1U << PGT_PUTBACK) | (1U << PGT_STORE) | (1U << PGT_SWAPIN) |	\
			 (1U << PGT_OWN) | (1U << PGT_INHERIT))

static void forget_kept(struct pager *p, uint64_t addr);

/*
 * The one transition function: the page at @addr goes by @tr to @val (a
 * PT_VAL; 0 for absent), every count following from the two states; a
 * RESIDENT page leaves its list (for PGT_PICK rt_lru_pop() did).
 * Return: 0, -ENOMEM (the map could not grow: nothing changed).
 */
static int transit(struct pager *p, uint64_t addr, enum pg_trans tr, uint64_t val)
{
	struct pg_tree *t = p->t;
	uint64_t old = 0;
	bool known = pt_get(&p->tab, addr, &old);
	uint32_t ob = state_bit(known, old), nb = val ? ST_BIT(PT_STATE(val)) : ABSENT;
	int err;

	uswap_assert(trans[tr].from & ob);
	uswap_assert(trans[tr].to & nb);
	if (val) {
		if ((err = pt_set(&p->tab, addr, val)))
			return err;
	} else if (known) {
		pt_del(&p->tab, addr);
	}
	if (ob == ST_BIT(PS_RESIDENT) && tr != PGT_PICK)
		rt_lru_forget(&p->lru, old);
	if (!(ob & RES_CLASS) != !(nb & RES_CLASS)) {
		int64_t d = nb & RES_CLASS ? 1 : -1;

		p->nr_resident += (uint64_t)d;
		t->resident += (uint64_t)d;
		if (t->resident > t->st.peak_resident)
			t->st.peak_resident = t->resident;
	}
	if ((ob == ST_BIT(PS_UNEVICTABLE)) != (nb == ST_BIT(PS_UNEVICTABLE))) {
		int64_t d = nb == ST_BIT(PS_UNEVICTABLE) ? 1 : -1;

		p->nr_unevictable += (uint64_t)d;
		t->unevictable += (uint64_t)d;
		if (t->unevictable > t->st.peak_unevictable)
			t->st.peak_unevictable = t->unevictable;
	}
	if ((ob == ST_BIT(PS_SWAPPED)) != (nb == ST_BIT(PS_SWAPPED)))
		p->nr_swapped += nb == ST_BIT(PS_SWAPPED) ? 1 : (uint64_t)-1;
	if ((ob == ST_BIT(PS_SHARED)) != (nb == ST_BIT(PS_SHARED)))
		p->nr_shared += nb == ST_BIT(PS_SHARED) ? 1 : (uint64_t)-1;
	if (p->kept.count && (KEEPS_COPY & (1U << tr)) == 0)
		forget_kept(p, addr);
	return 0;
}

/* @addr becomes RESIDENT by @tr, on a list with @flags (coldlist.h). */
static void make_resident(struct pager *p, uint64_t addr, enum pg_trans tr, bool active,
			  uint64_t flags)
{
	if (!transit(p, addr, tr, PT_VAL(PS_RESIDENT, 0)))
		rt_lru_add_flags(&p->lru, &p->tab, addr, active, flags);
}

/* ---- the mirror: a page index in the space's mm ---- */

static uint64_t mirror_addr(const struct pager *p, uint32_t idx)
{
	return p->chunk[idx / PG_MIRROR_CHUNK] + (uint64_t)(idx % PG_MIRROR_CHUNK) * PAGE;
}

static int mirror_alloc(struct pager *p, uint32_t *idx)
{
	if (p->nr_free) {
		*idx = p->free_idx[--p->nr_free];
		return 0;
	}
	if (p->next_idx == p->nr_chunks * PG_MIRROR_CHUNK) {
		int err;

		if (p->nr_chunks == PG_MIRROR_MAX)
			return -ENOMEM;
		err = uswap_mm_mmap(p->mm, (uint64_t)PG_MIRROR_CHUNK * PAGE, &p->chunk[p->nr_chunks]);
		if (err)
			return err;
		p->nr_chunks++;
	}
	*idx = p->next_idx++;
	return 0;
}

/* Index @idx, its page dropped, may be allocated again. */
static void mirror_free_index(struct pager *p, uint32_t idx)
{
	if (p->nr_free == p->cap_free) {
		size_t ncap = p->cap_free ? p->cap_free * 2 : 1024;
		uint32_t *n = uswap_realloc(p->free_idx, ncap * sizeof(*n));

		if (!n) {
			p->nr_lost_idx++;	/* the index is lost, its page is not */
			return;
		}
		p->free_idx = n;
		p->cap_free = ncap;
	}
	p->free_idx[p->nr_free++] = idx;
}

/* Drop the mirror page @idx: its frame freed, its swap entry put. */
static void mirror_free(struct pager *p, uint32_t idx)
{
	uswap_mm_madvise_dontneed(p->mm, mirror_addr(p, idx), PAGE);
	mirror_free_index(p, idx);
}

static int cmp_idx(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Drop the mirror pages @idx[0..@n) (sorted here): one madvise per run of
 * consecutive indices within a chunk, rather than one per page.
 */
static void mirror_free_many(struct pager *p, uint32_t *idx, size_t n)
{
	qsort(idx, n, sizeof(*idx), cmp_idx);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && idx[j] == idx[j - 1] + 1 &&
				idx[j] / PG_MIRROR_CHUNK == idx[i] / PG_MIRROR_CHUNK; j++)
			;
		uswap_mm_madvise_dontneed(p->mm, mirror_addr(p, idx[i]), (j - i) * PAGE);
		for (size_t k = i; k < j; k++)
			mirror_free_index(p, idx[k]);
	}
}

/*
 * Drop the mirror pages of the kept copies listed in @kept (another
 * space's map at a fork, or @p's own), in runs; one at a time when there
 * is no memory for the list. The map itself is left as it is.
 */
static void mirror_free_kept(struct pager *p, const struct pagetab *kept)
{
	uint32_t *idx = kept->count ? uswap_malloc(kept->count * sizeof(*idx)) : NULL;
	size_t n = 0;

	for (size_t k = 0; k < kept->cap; k++) {
		if (!kept->e[k].key)
			continue;
		if (idx)
			idx[n++] = (uint32_t)(kept->e[k].val - 1);
		else
			mirror_free(p, (uint32_t)(kept->e[k].val - 1));
	}
	if (idx)
		mirror_free_many(p, idx, n);
	free(idx);
}

/*
 * ---- kept copies (docs/RUNTIME.md, "Clean pages") ----
 * A page swapped in keeps the mirror page it came from, its slot still
 * holding the bytes (uswap_mm_peek() read them without taking them), in
 * p->kept: address -> index + 1. When the page is evicted again with the
 * same bytes, the copy is its store: nothing is written. Any transition
 * that ends the page's bytes here forgets the copy (transit()).
 */

/* Whether swap is short for the mirrors (mem_cgroup_swap_full()). */
static bool swap_short(const struct pg_tree *t)
{
	return uswap_swap_cgroup_full(t->memcg ? uswap_memcg_id(t->memcg) : 0);
}

/* The RESIDENT page @addr came in from mirror page @idx: keep it as the
 * page's copy, unless copies are off or swap is short. */
static void keep_copy(struct pager *p, uint64_t addr, uint32_t idx, bool keep)
{
	if (!keep || pt_set(&p->kept, addr, (uint64_t)idx + 1))
		mirror_free(p, idx);
}

/* Take @addr's kept copy off the map into *@idx. Return: whether it had one. */
static bool take_kept(struct pager *p, uint64_t addr, uint32_t *idx)
{
	uint64_t v;

	if (!p->kept.count || !pt_get(&p->kept, addr, &v))
		return false;
	pt_del(&p->kept, addr);
	*idx = (uint32_t)(v - 1);
	return true;
}

/* @addr's bytes end here: its kept copy, if any, is freed. */
static void forget_kept(struct pager *p, uint64_t addr)
{
	uint32_t idx;

	if (take_kept(p, addr, &idx))
		mirror_free(p, idx);
}

/* Free every kept copy of @p (swap ran out: their slots are wanted).
 * Context: linear in the map, with or without memory for a list.
 * Return: the copies freed. */
static uint64_t drop_kept(struct pager *p)
{
	uint64_t n = p->kept.count;

	if (n) {
		mirror_free_kept(p, &p->kept);
		pt_clear(&p->kept);
	}
	return n;
}

/* ---- USWAP_DEBUG >= 2: pages of zeros where data was (docs/RUNTIME.md) ---- */

/* Count one under @what, naming the first 16 on stderr. */
static void dbg_say(uint64_t *count, const char *what, uint64_t addr)
{
	if (USWAP_DEBUG >= 2 && (*count)++ < 16)
		fprintf(stderr, "uswap run: DBG %s 0x%llx\n", what, (unsigned long long)addr);
}

static bool page_is_zero(const void *pg)
{
	const uint64_t *w = pg;

	for (size_t i = 0; i < PAGE / 8; i++)
		if (w[i])
			return false;
	return true;
}

/* Note whether the page stored at index @idx is non-zero. */
static void dbg_stored(struct pager *p, uint32_t idx, const void *pg)
{
	if (USWAP_DEBUG < 2)
		return;
	if (idx >= p->dbg_cap) {
		size_t ncap = idx + 1 > 2 * p->dbg_cap ? idx + 1024 : 2 * p->dbg_cap;
		uint8_t *n = uswap_realloc(p->dbg_nz, ncap);

		if (!n)
			return;
		memset(n + p->dbg_cap, 0, ncap - p->dbg_cap);
		p->dbg_nz = n;
		p->dbg_cap = ncap;
	}
	p->dbg_nz[idx] = !page_is_zero(pg);
}

/* Check the page read back from index @idx for @addr. */
static void dbg_read(struct pager *p, uint32_t idx, uint64_t addr, const void *pg)
{
	if (USWAP_DEBUG >= 2 && idx < p->dbg_cap && p->dbg_nz[idx] && page_is_zero(pg))
		dbg_say(&p->t->st.dbg_mirror_zero, "mirror-zero", addr);
}

/* ---- the tree and the spaces ---- */

/** pg_tree_init() - a tree of @budget pages, mirrors in @mem. Return: 0, -ENOMEM. */
int pg_tree_init(struct pg_tree *t, struct uswap_mem *mem, uint64_t budget,
		 enum rt_evict_policy policy)
{
	memset(t, 0, sizeof(*t));
	t->mem = mem;
	t->budget = budget;
	t->policy = policy;
	t->keep_copies = true;
	t->buf = uswap_malloc((size_t)PG_RUN * PAGE);
	return t->buf ? 0 : -ENOMEM;
}

/** pg_tree_fini() - free what pg_tree_init() took (its spaces are gone). */
void pg_tree_fini(struct pg_tree *t)
{
	free(t->buf);
	t->buf = NULL;
	free(t->check_bits);
	t->check_bits = NULL;
	t->check_words = 0;
}

/* @p, empty, in tree @t with @ops(@arg), its map made. Return: 0, -ENOMEM. */
static int space_init(struct pager *p, struct pg_tree *t, const struct pg_ops *ops, void *arg)
{
	memset(p, 0, sizeof(*p));
	p->t = t;
	p->ops = ops;
	p->ops_arg = arg;
	p->pagemap = -1;
	if (pt_init(&p->kept))
		return -ENOMEM;
	if (pt_init(&p->tab)) {
		pt_free(&p->kept);
		return -ENOMEM;
	}
	return 0;
}

/**
 * pager_init() - an empty space in tree @t, served through @ops(@arg).
 * Return: 0, -ENOMEM, or the mm layer's error.
 */
int pager_init(struct pager *p, struct pg_tree *t, const struct pg_ops *ops, void *arg)
{
	int err = space_init(p, t, ops, arg);

	if (!err && (err = uswap_mm_create_memcg(t->mem, t->memcg, &p->mm))) {
		pt_free(&p->tab);
		pt_free(&p->kept);
	}
	t->nr_spaces += !err;
	return err;
}

/**
 * pager_destroy() - the process has gone: its counts leave the tree, its
 * mirror is freed. The pagemap descriptor is the transport's.
 */
void pager_destroy(struct pager *p)
{
	struct pg_tree *t = p->t;

	if (!t)
		return;
	if (p->inflight && !p->inherited)
		t->inflight_pages -= p->batch_n - p->batch_done;
	uswap_assert(!p->heirs);	/* settled by the transport first */
	if (p->heir_of) {
		struct pager **pp = &p->heir_of->heirs;

		while (*pp != p)
			pp = &(*pp)->next_heir;
		*pp = p->next_heir;
	}
	t->resident -= p->nr_resident;
	t->unevictable -= p->nr_unevictable;
	t->nr_spaces--;
	uswap_mm_destroy(p->mm);
	pt_free(&p->tab);
	pt_free(&p->kept);
	fifo_free(&p->evict_first);
	pt_free(&p->passed);
	rt_lru_free(&p->lru);
	rt_ranges_free(&p->ranges);
	free(p->free_idx);
	free(p->pending);
	free(p->dbg_nz);
	p->t = NULL;
}

/*
 * Copy @parent's page states into @c at a fork: a present page is SHARED
 * in the child (charged to the parent, as the memory cgroup does); a
 * swapped page keeps its index; a page of the batch out keeps its state,
 * settled by the owner's answer.
 */
static int copy_states(struct pager *c, const struct pager *parent)
{
	struct pt_ent *e;
	size_t n;
	int err = pt_collect(&parent->tab, 0, ~0ULL, &e, &n);

	for (size_t i = 0; i < n && !err; i++) {
		uint64_t v = e[i].val;

		switch (PT_STATE(v)) {
		case PS_SWAPPED:
			err = transit(c, e[i].key, PGT_INHERIT, v);
			break;
		case PS_EVICTING:
		case PS_DEAD:
			/* DEAD stays DEAD: the child's page is gone too, or
			 * present and learnt from its pagemap. */
			err = transit(c, e[i].key, PGT_INHERIT, v);
			c->inflight = c->inherited = true;
			break;
		default:
			err = transit(c, e[i].key, PGT_INHERIT, PT_VAL(PS_SHARED, 0));
		}
	}
	free(e);
	return err;
}

/**
 * pager_fork() - @c becomes the child of @parent at a fork: states, ranges
 * and prefetch copied, mirror forked (uswap_mm_fork(): swap counts go to
 * 2, as copy_pte_range() -> swap_duplicate()).
 * Return: 0, -errno (@c destroyed).
 */
int pager_fork(struct pager *c, struct pager *parent, const struct pg_ops *ops, void *arg)
{
	int err;

	uswap_assert(!parent->run.on);	/* a FORK event waits for the copy's end */
	err = space_init(c, parent->t, ops, arg);

	if (!err && (err = uswap_mm_fork(parent->mm, &c->mm))) {
		pt_free(&c->tab);
		pt_free(&c->kept);
	}
	if (err)
		return err;
	c->t->nr_spaces++;
	c->wp = parent->wp;
	c->ra_next = parent->ra_next;
	memcpy(c->chunk, parent->chunk, sizeof(c->chunk));
	c->nr_chunks = parent->nr_chunks;
	c->next_idx = parent->next_idx;
	c->nr_lost_idx = parent->nr_lost_idx;
	err = -ENOMEM;
	if (parent->nr_free) {
		c->free_idx = uswap_malloc(parent->nr_free * sizeof(*c->free_idx));
		if (!c->free_idx)
			goto fail;
		memcpy(c->free_idx, parent->free_idx, parent->nr_free * sizeof(*c->free_idx));
		c->nr_free = c->cap_free = parent->nr_free;
	}
	/* The parent's kept copies came along in the forked mirror; the
	 * child's pages are SHARED, with no copy of their own: freed. */
	mirror_free_kept(c, &parent->kept);
	if (rt_ranges_copy(&c->ranges, &parent->ranges))
		goto fail;
	if ((err = copy_states(c, parent)))
		goto fail;
	if (c->inflight) {	/* an heir of the batch's owner */
		c->batch_n = parent->batch_n;
		memcpy(c->batch_addr, parent->batch_addr, sizeof(c->batch_addr));
		c->heir_of = parent->inherited ? parent->heir_of : parent;
		c->next_heir = c->heir_of->heirs;
		c->heir_of->heirs = c;
		/* the slots the owner settled already come no more */
		c->batch_done = (uint32_t)__builtin_popcountll(c->heir_of->told);
	}
	return 0;
fail:
	c->inflight = false;
	pager_destroy(c);
	return err;
}

/* ---- faults ---- */

/*
 * Zero-fill @addr and, for a first touch, the absent pages after it in
 * its range, up to @room. @tracked: the states hold the page (dropped
 * without an event): zeros, the state kept.
 * Return: 0, -EAGAIN (an event is pending: retry after it).
 */
static int serve_zero(struct pager *p, uint64_t addr, bool tracked, uint64_t room)
{
	const struct rt_range *r = rt_ranges_find(&p->ranges, addr);
	uint64_t n = 1, v, done = 0;
	uint32_t win = PG_ZERO_RUN;
	int err;

	/* A first touch at the end of the last run: the program writes on
	 * through its memory, and longer runs save it faults. */
	if (!tracked && addr == p->zero_next)
		win = p->zero_win * 2 > PG_RUN ? PG_RUN : p->zero_win * 2;
	if (!tracked && r) {
		p->zero_win = win;
		while (n < win && n < room && addr + n * PAGE < r->end &&
		       !pt_get(&p->tab, addr + n * PAGE, &v))
			n++;
	}
	if (tracked)
		dbg_say(&p->t->st.dbg_zero_tracked, "zero-tracked", addr);
	err = p->ops->copy(p->ops_arg, addr, zeros, n * PAGE, &done);
	done /= PAGE;
	if (!tracked)
		for (uint64_t i = 0; i < done; i++)
			make_resident(p, addr + i * PAGE, PGT_FIRST_TOUCH, false, LRU_AHEAD);
	p->t->st.zero_pages += done;
	if (done) {
		p->t->st.zero_fills++;
		if (!tracked)
			p->zero_next = addr + done * PAGE;
	}
	if (err == -EAGAIN && !done)
		return -EAGAIN;
	if (err == -EEXIST && !done) {	/* present already: someone served it */
		if (!tracked)
			make_resident(p, addr, PGT_LEARN, false, 0);
		p->ops->wake(p->ops_arg, addr);
	}
	return 0;
}

/*
 * The SWAPPED page at @addr could not be read back (@err): -EIO poisons
 * it (SIGBUS for this page alone).
 * Return: -EHWPOISON poisoned, -EAGAIN, or an error (the transport decides).
 */
static int lost_page(struct pager *p, uint64_t addr, uint32_t idx, int err)
{
	int perr;

	if (err != -EIO)
		return err;
	perr = p->ops->poison(p->ops_arg, addr);
	if (perr == -EAGAIN)
		return -EAGAIN;
	mirror_free(p, idx);
	transit(p, addr, PGT_POISON, 0);
	p->t->st.poisoned++;
	return perr ? perr : -EHWPOISON;
}

/*
 * The end of swap-in run p->run, whose copy placed @done bytes and said
 * @err: each page placed goes on a list by the workingset test and keeps
 * its mirror copy or frees it.
 * Return: 0, -EAGAIN (nothing placed: an event is pending).
 */
static int swapin_end(struct pager *p, int err, uint64_t done)
{
	struct pg_tree *t = p->t;
	struct pg_run *r = &p->run;
	bool keep;

	r->on = false;
	done /= PAGE;
	keep = done && t->keep_copies && !swap_short(t);
	for (uint64_t i = 0; i < done; i++) {
		bool active = t->policy == RT_EVICT_LRU &&
			      rt_lru_refault(r->old[i], t->st.evicted, t->budget / 2);

		make_resident(p, r->addr + i * PAGE, PGT_SWAPIN, active, LRU_AHEAD);
		keep_copy(p, r->addr + i * PAGE, r->idx[i], keep);
		t->lru_st.refaults++;
		t->lru_st.swapin_pages++;
		t->lru_st.activated += active;
	}
	if (done) {
		p->ra_next = r->addr + done * PAGE;
		t->st.swapins++;
		t->st.prefetched += done - 1;
	}
	if (err == -EAGAIN && !done)
		return -EAGAIN;
	if (err == -EEXIST && !done)
		p->ops->wake(p->ops_arg, r->addr);	/* cannot happen to a SWAPPED page */
	return 0;
}

/*
 * Swap @addr in with the SWAPPED pages after it, in one copy, up to @room
 * and the prefetch window (doubled by a sequential fault up to PG_RUN,
 * else one page). With @may_hand, a run of more than one page may go to
 * the transport's other thread (pg_ops.run_buf): its states stay until
 * pager_run_done().
 * Return: 0 (or -EINPROGRESS: handed over), -EAGAIN, -EHWPOISON (the page
 * was poisoned), or a read error.
 */
static int serve_swapin(struct pager *p, uint64_t addr, uint64_t room, bool may_hand)
{
	struct pg_run *r = &p->run;
	uint64_t n = 0, v, done = 0;
	char *buf = p->t->buf;
	int err = 0;

	uswap_assert(!r->on);
	if (addr != p->ra_next)
		p->ra_win = 1;
	else
		p->ra_win = p->ra_win < 2 ? 2 : p->ra_win * 2 > PG_RUN ? PG_RUN : p->ra_win * 2;
	if (room > p->ra_win)
		room = p->ra_win;
	while (n < PG_RUN && (n == 0 || n < room) && pt_get(&p->tab, addr + n * PAGE, &v) &&
	       PT_STATE(v) == PS_SWAPPED) {
		r->idx[n] = PT_IDX(v);
		r->old[n] = v;
		n++;
	}
	if (n > 1 && may_hand && p->ops->run_buf) {
		char *b = p->ops->run_buf(p->ops_arg, n);

		if (b)
			buf = b;
	}
	for (uint64_t i = 0; i < n; i++) {
		err = uswap_mm_peek(p->mm, mirror_addr(p, r->idx[i]), buf + i * PAGE, PAGE);
		if (err) {
			n = i;
			break;
		}
		dbg_read(p, r->idx[i], addr + i * PAGE, buf + i * PAGE);
	}
	if (!n)
		return err ? lost_page(p, addr, r->idx[0], err) : 0;
	r->addr = addr;
	r->on = true;
	err = p->ops->copy(p->ops_arg, addr, buf, n * PAGE, &done);
	if (err == -EINPROGRESS)
		return -EINPROGRESS;	/* pager_run_done() ends it */
	return swapin_end(p, err, done);
}

/**
 * pager_run_done() - the copy of @p's swap-in run handed over by
 * pg_ops.copy's -EINPROGRESS placed @done bytes and said @err (UFFDIO_COPY
 * semantics). Return: 0, -EAGAIN (none placed: the fault waits for an
 * event).
 */
int pager_run_done(struct pager *p, int err, uint64_t done)
{
	uswap_assert(p->run.on);
	return swapin_end(p, err, done);
}

/**
 * pager_serve() - serve the fault at @addr by its page's state: zeros or
 * its bytes (a run of up to @room pages), or a wait for the batch out.
 * Return: 0 served; -EINPROGRESS a run's copy handed over (pg_ops.run_buf,
 * ended by pager_run_done()); -EBUSY wait for the batch (PG_WAIT_EVICTING);
 * -EAGAIN wait for the pending event (PG_WAIT_EVENT); -EHWPOISON the page
 * was lost and poisoned (served); another -errno: it cannot be read back.
 */
int pager_serve(struct pager *p, uint64_t addr, uint64_t room)
{
	uint64_t v;
	bool known = pt_get(&p->tab, addr, &v);

	if (known && (PT_STATE(v) == PS_EVICTING || PT_STATE(v) == PS_DEAD))
		return -EBUSY;
	if (known && PT_STATE(v) == PS_SWAPPED)
		return serve_swapin(p, addr, room, true);
	return serve_zero(p, addr, known, room);
}

/** pager_defer() - keep the fault at @addr (read at @t0) waiting, counted
 * once by @why. Return: 0, -ENOMEM (not kept). */
int pager_defer(struct pager *p, uint64_t addr, uint64_t t0, enum pg_wait why)
{
	struct pg_stats *st = &p->t->st;

	for (size_t i = 0; i < p->nr_pending; i++)
		if (p->pending[i].addr == addr)
			return 0;
	if (p->nr_pending == p->cap_pending) {
		size_t ncap = p->cap_pending ? p->cap_pending * 2 : 64;
		struct pg_pending *n = uswap_realloc(p->pending, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->pending = n;
		p->cap_pending = ncap;
	}
	p->pending[p->nr_pending++] = (struct pg_pending){ addr, t0 };
	st->deferred++;
	if (why == PG_WAIT_BUDGET)
		st->wait_budget++;
	else if (why == PG_WAIT_EVICTING)
		st->wait_evicting++;
	else if (why == PG_WAIT_COPY)
		st->wait_copy++;
	else
		st->wait_event++;
	return 0;
}

/**
 * pager_retry() - offer each waiting fault to @serve (0: served), then
 * its read time to @served. @serve may defer faults again.
 * Return: the faults still waiting.
 */
size_t pager_retry(struct pager *p, int (*serve)(void *arg, uint64_t addr), void *arg,
		   void (*served)(void *arg, uint64_t t0))
{
	size_t n = p->nr_pending, j = 0;
	struct pg_pending *w;

	if (!n)
		return 0;
	w = p->pending;
	p->pending = NULL;
	p->nr_pending = p->cap_pending = 0;
	for (size_t i = 0; i < n; i++) {
		if (serve(arg, w[i].addr))
			w[j++] = w[i];
		else if (served)
			served(arg, w[i].t0);
	}
	/* Those deferred again by serve() are in the new list: merge. */
	for (size_t i = 0; i < p->nr_pending; i++) {
		bool dup = false;

		for (size_t k = 0; k < j && !dup; k++)
			dup = w[k].addr == p->pending[i].addr;
		if (!dup)
			w[j++] = p->pending[i];
	}
	free(p->pending);
	p->pending = w;
	p->nr_pending = j;
	p->cap_pending = n > j ? n : j;
	return j;
}

/** pager_forget_pending() - drop the waiting faults in [@start, @end). */
void pager_forget_pending(struct pager *p, uint64_t start, uint64_t end)
{
	size_t j = 0;

	for (size_t i = 0; i < p->nr_pending; i++)
		if (p->pending[i].addr < start || p->pending[i].addr >= end)
			p->pending[j++] = p->pending[i];
	p->nr_pending = j;
}

/**
 * pager_swapin_all() - bring every swapped page in, in long runs (a fork
 * without fork events). Return: 0 when none is left; -EAGAIN (again
 * later); -ENOMEM (no memory to list the pages); the error of a page that
 * cannot be read back.
 */
int pager_swapin_all(struct pager *p)
{
	struct pt_ent *e;
	size_t n;
	int err = 0;

	if (!p->nr_swapped)
		return 0;
	err = pt_collect(&p->tab, 0, ~0ULL, &e, &n);
	for (size_t i = 0; i < n && !err; i++) {
		uint64_t v;

		if (!pt_get(&p->tab, e[i].key, &v) || PT_STATE(v) != PS_SWAPPED)
			continue;	/* a run took it */
		p->ra_next = e[i].key;	/* long runs, as a sequential read */
		p->ra_win = PG_RUN;
		err = serve_swapin(p, e[i].key, PG_RUN, false);
		if (err == -EHWPOISON)
			err = 0;
	}
	free(e);
	if (err)
		return err;
	return p->nr_swapped ? -EAGAIN : 0;
}

/* ---- what the process did ---- */

/** pager_learn() - the page at @addr is present: if unknown, RESIDENT (inactive). */
void pager_learn(struct pager *p, uint64_t addr)
{
	uint64_t v;

	if (!pt_get(&p->tab, addr, &v))
		make_resident(p, addr, PGT_LEARN, false, 0);
}

/**
 * pager_own() - the SHARED page at @addr is mapped by this process alone:
 * charged here, on the inactive list. Return: true if it was SHARED.
 */
bool pager_own(struct pager *p, uint64_t addr)
{
	uint64_t v;

	if (!pt_get(&p->tab, addr, &v) || PT_STATE(v) != PS_SHARED)
		return false;
	make_resident(p, addr, PGT_OWN, false, 0);
	return true;
}

/* Slot @idx of the batch out is not to be moved any more. */
static uint64_t cancel_slot(struct pager *p, uint32_t idx)
{
	uint64_t bit;

	if (!p->inflight || idx >= PG_BATCH)
		return 0;
	bit = 1ULL << idx;
	p->cancel |= bit;
	return bit;
}

/**
 * pager_drop() - the process dropped [@start, @end) (MADV_DONTNEED,
 * munmap). A page of the batch out becomes DEAD, its slot cancelled.
 * Return: the slots newly cancelled (a bit each), for the mover: a move
 * would take whatever a new mapping put at the address.
 */
/* pager_drop() of the page at @key, in state @v. Return: its slot's bit
 * if newly cancelled, else 0. */
static uint64_t drop_one(struct pager *p, uint64_t key, uint64_t v)
{
	switch (PT_STATE(v)) {
	case PS_EVICTING:
		transit(p, key, PGT_DROP_OUT, PT_VAL(PS_DEAD, PT_IDX(v)));
		return cancel_slot(p, PT_IDX(v));
	case PS_DEAD:
		return 0;
	case PS_SWAPPED:
		mirror_free(p, PT_IDX(v));
		/* fall through */
	default:
		transit(p, key, PGT_DROP, 0);
		return 0;
	}
}

uint64_t pager_drop(struct pager *p, uint64_t start, uint64_t end)
{
	struct pt_ent *e;
	uint64_t cancelled = 0, v;
	size_t n;

	if (pt_collect(&p->tab, start, end, &e, &n)) {
		/* No memory for the list: page by page (each transition
		 * touches its own key only, so probing stays exact). */
		for (uint64_t key = start; key < end; key += PAGE)
			if (pt_get(&p->tab, key, &v))
				cancelled |= drop_one(p, key, v);
	}
	for (size_t i = 0; i < n; i++)
		cancelled |= drop_one(p, e[i].key, e[i].val);
	free(e);
	if (p->ra_next > start && p->ra_next <= end)
		p->ra_next = 0;
	return cancelled;
}

/* Forget the entry @val at @key (a remap's destination), cancelling its
 * slot if in the batch out. Return: the slot's bit, or 0. */
static uint64_t overwrite(struct pager *p, uint64_t key, uint64_t val)
{
	uint64_t bit = 0;

	if (PT_STATE(val) == PS_SWAPPED)
		mirror_free(p, PT_IDX(val));
	if (PT_STATE(val) == PS_EVICTING || PT_STATE(val) == PS_DEAD)
		bit = cancel_slot(p, PT_IDX(val));
	transit(p, key, PGT_OVERWRITE, 0);
	return bit;
}

/* The state @v of a page moved to @na by pager_remap(). Return: its
 * slot's bit if newly cancelled, else 0. */
static uint64_t remap_one(struct pager *p, uint64_t na, uint64_t v)
{
	enum rt_page_state st = PT_STATE(v);

	if (st == PS_RESIDENT && LRU_TICKET(v)) {
		rt_lru_forget(&p->lru, v);
		if (rt_lru_add_flags(&p->lru, &p->tab, na, LRU_ACTIVE(v),
				     v & (LRU_WRITTEN | LRU_SEEN | LRU_AHEAD)))
			pt_set(&p->tab, na, PT_VAL(PS_RESIDENT, 0));
		return 0;
	}
	pt_set(&p->tab, na, v);
	if ((st == PS_EVICTING || st == PS_DEAD) && PT_IDX(v) < PG_BATCH) {
		p->batch_addr[PT_IDX(v)] = na;
		return cancel_slot(p, PT_IDX(v));
	}
	return 0;
}

/**
 * pager_remap() - the process moved [@from, @from + @len) to @to (mremap):
 * the states move along over the destination's. A page of the batch out
 * keeps its slot, renamed and cancelled (the move names the old address).
 * Return: the slots newly cancelled.
 */
uint64_t pager_remap(struct pager *p, uint64_t from, uint64_t to, uint64_t len)
{
	struct pt_ent *e, *d;
	uint64_t cancelled = 0, v;
	size_t n, nd;

	/* kept copies do not follow a remap (not a transition) */
	for (uint64_t k = 0; p->kept.count && k < len; k += PAGE) {
		forget_kept(p, from + k);
		forget_kept(p, to + k);
	}

	if (pt_collect(&p->tab, from, from + len, &e, &n)) {
		/* No memory for the lists: page by page, the same steps (the
		 * two ranges do not overlap). */
		for (uint64_t k = 0; k < len; k += PAGE) {
			bool moved = pt_get(&p->tab, from + k, &v);
			uint64_t dv;

			if (moved)
				pt_del(&p->tab, from + k);
			if (pt_get(&p->tab, to + k, &dv))
				cancelled |= overwrite(p, to + k, dv);
			if (moved)
				cancelled |= remap_one(p, to + k, v);
		}
		goto out;
	}
	/* off the map (not a transition: the pages live on at @to) */
	for (size_t i = 0; i < n; i++)
		pt_del(&p->tab, e[i].key);
	if (pt_collect(&p->tab, to, to + len, &d, &nd)) {
		for (uint64_t k = 0; k < len; k += PAGE)
			if (pt_get(&p->tab, to + k, &v))
				cancelled |= overwrite(p, to + k, v);
	}
	for (size_t i = 0; i < nd; i++)
		cancelled |= overwrite(p, d[i].key, d[i].val);
	free(d);
	for (size_t i = 0; i < n; i++)
		cancelled |= remap_one(p, to + (e[i].key - from), e[i].val);
	free(e);
out:
	rt_ranges_move(&p->ranges, from, to, len);
	p->ra_next = 0;
	return cancelled;
}

/* ---- eviction ---- */

/* Read the written bits (coldlist.c) once a quarter of the resident pages, at
 * least a batch, were evicted since the last read. */
static void scan_written(struct pager *p)
{
	struct pg_tree *t = p->t;
	uint64_t every = p->nr_resident / 4 > PG_BATCH ? p->nr_resident / 4 : PG_BATCH;

	if (!p->wp || p->pagemap < 0 || t->policy != RT_EVICT_LRU ||
	    t->st.evicted - p->scan_clock < every)
		return;
	p->scan_clock = t->st.evicted;
	t->lru_st.scans++;
	for (size_t i = 0; i < p->ranges.n; i++) {
		long n = rt_lru_scan(p->pagemap, &p->tab, p->ranges.v[i].start, p->ranges.v[i].end);

		if (n > 0)
			t->lru_st.written += (uint64_t)n;
	}
}

/* Page @a (RESIDENT, off its list) takes slot p->batch_n. */
static void take(struct pager *p, uint64_t a, uint64_t *addr)
{
	uint32_t i = p->batch_n;
	uint64_t v;

	/* Written since a scan after its copy came in (coldlist.h): the
	 * kept copy is stale, and store() need not read it to know. */
	if (p->kept.count && pt_get(&p->tab, a, &v) && (v & LRU_WRITTEN))
		forget_kept(p, a);

	if (transit(p, a, PGT_PICK, PT_VAL(PS_EVICTING, i))) {
		rt_lru_add(&p->lru, &p->tab, a, false);	/* no room in the map: stays */
		return;
	}
	p->batch_addr[i] = a;
	addr[i] = a;
	p->batch_n++;
}

/**
 * pager_pick() - the batch to move out, none while one is out: up to
 * @want pages (<= PG_BATCH), evict_first's first, then the coldest (a
 * page the pass_over() hook passes gets one more trip).
 * Return: the pages picked, their addresses in @addr[slot].
 */
uint32_t pager_pick(struct pager *p, uint32_t want, uint64_t *addr)
{
	struct pg_tree *t = p->t;
	uint64_t a, v, skipped = 0;

	if (p->inflight)
		return 0;
	if (want > PG_BATCH)
		want = PG_BATCH;
	p->batch_n = 0;
	p->batch_done = 0;
	p->batch_moved = 0;
	p->cancel = p->told = 0;
	scan_written(p);
	while (p->batch_n < want && fifo_pop(&p->evict_first, &a))
		if (pt_get(&p->tab, a, &v) && PT_STATE(v) == PS_RESIDENT) {
			rt_lru_forget(&p->lru, v);
			pt_set(&p->tab, a, v & ~(~0ULL << 12));	/* off its list: no ticket */
			take(p, a, addr);
		}
	p->batch_first = p->batch_n;
	while (p->batch_n < want && skipped < 4 * PG_BATCH &&
	       rt_lru_pop(&p->lru, &p->tab, &a, p->nr_resident, &t->lru_st)) {
		if (t->pass_over && t->pass_over(t->pass_arg, p, a)) {
			rt_lru_add(&p->lru, &p->tab, a, false);
			skipped++;
			continue;
		}
		take(p, a, addr);
	}
	if (!p->batch_n)
		return 0;
	p->inflight = true;
	t->inflight_pages += p->batch_n;
	t->st.evict_batches++;
	return p->batch_n;
}

/** pager_unpick() - the batch just picked was not sent: its pages back. */
void pager_unpick(struct pager *p)
{
	for (uint32_t i = 0; i < p->batch_n; i++) {
		uint64_t v;

		if (pt_get(&p->tab, p->batch_addr[i], &v) && PT_STATE(v) == PS_EVICTING &&
		    PT_IDX(v) == i)
			make_resident(p, p->batch_addr[i], PGT_PUTBACK, false, 0);
	}
	p->t->inflight_pages -= p->batch_n;
	p->t->st.evict_batches--;
	p->inflight = false;
	p->batch_n = 0;
}

/* Slot @i of the batch heir @h inherited is answered by its owner, and
 * the answer holds for @h: a page moved left the owner before the copy (a
 * shared page cannot move) or after the owner's write, so a fault in the
 * child wants those bytes; not moved, it is in both; gone or refused, the
 * child's copy is its own. */
static void settle_heir(struct pager *h, uint32_t i, int status, const void *bytes)
{
	if (pager_settle(h, i, status, bytes) != -ENOSPC)
		return;
	pager_settle(h, i, -ENOSPC, NULL);
	if (h->ops->lost)
		h->ops->lost(h->ops_arg, PG_NO_ROOM);
}

/*
 * Keep the evicted bytes of @a: in its kept copy if they are the same
 * (nothing written), else in a new mirror page. When the mm layer has no
 * room, the space's kept copies go and the write is tried once more.
 * Return: 0 and *@idx; -errno (nothing kept).
 */
static int store(struct pager *p, uint64_t a, const void *bytes, uint32_t *idx)
{
	struct pg_tree *t = p->t;
	int err;

	/* The copy is read for the comparison without a frame of the mm
	 * layer (uswap_mm_same()): it is about to be dropped or kept as it
	 * is, and no reclaim should run for it. */
	if (take_kept(p, a, idx)) {
		if (uswap_mm_same(p->mm, mirror_addr(p, *idx), bytes) == 1) {
			t->st.evict_clean++;
			return 0;
		}
		mirror_free(p, *idx);
	}
	for (int tries = 0;; tries++) {
		err = mirror_alloc(p, idx);
		if (!err && (err = uswap_mm_write(p->mm, mirror_addr(p, *idx), bytes, PAGE)))
			mirror_free(p, *idx);
		if (!err || tries || !drop_kept(p))
			return err;
	}
}

/**
 * pager_settle() - slot @i of the batch out is answered: @status >= 0
 * moved, its bytes at @bytes (1: after make_exclusive()); -EBUSY,
 * -EAGAIN, -ECANCELED not moved; -ENOENT not there; -ENOSPC its bytes
 * cannot be kept; any other: the kernel refuses (mlock). A slot whose
 * page was dropped or forgotten meanwhile is only counted.
 * Return: 0; 1 stored after make_exclusive(); -ENOSPC the bytes could
 * not be stored (the slot stays EVICTING: settle it again, -ENOSPC to
 * let the page go, -EBUSY after putting it back).
 */
int pager_settle(struct pager *p, uint32_t i, int status, const void *bytes)
{
	struct pg_tree *t = p->t;
	uint64_t a = p->batch_addr[i], v;
	uint32_t idx;
	int ret = 0;

	if (!((p->told >> i) & 1) && status != -ENOSPC) {
		p->told |= 1ULL << i;
		for (struct pager *h = p->heirs; h; h = h->next_heir)
			settle_heir(h, i, status, bytes);
	}

	if (!pt_get(&p->tab, a, &v) || PT_IDX(v) != i ||
	    (PT_STATE(v) != PS_EVICTING && PT_STATE(v) != PS_DEAD)) {
		/* gone meanwhile: off the resident count, so progress */
		p->batch_moved++;
		goto done;
	}
	if (PT_STATE(v) == PS_DEAD) {
		transit(p, a, PGT_BURY, 0);
		p->batch_moved++;
		goto done;
	}
	if (status >= 0) {
		int err = store(p, a, bytes, &idx);

		if (err)
			return -ENOSPC;
		dbg_stored(p, idx, bytes);
		/* the shadow: the eviction clock as it leaves */
		transit(p, a, PGT_STORE, LRU_SWAPPED(idx, t->st.evicted));
		p->batch_moved++;
		if (!p->inherited)
			t->st.evicted++;
		if (status == 1 && !p->inherited) {
			t->st.evict_unshared++;
			ret = 1;
		}
	} else if (status == -EBUSY || status == -EAGAIN || status == -ECANCELED) {
		/* rotated, as the kernel's putback */
		make_resident(p, a, PGT_PUTBACK, false, 0);
		if (!p->inherited)
			(*(status == -ECANCELED ? &t->st.evict_cancelled : &t->st.evict_busy))++;
	} else if (status == -ENOENT || status == -ENOSPC || p->inherited) {
		/* not there, or its bytes lost (an heir's: its own copy) */
		transit(p, a, PGT_VANISH, 0);
		p->batch_moved++;
		if (status == -ENOENT && !p->inherited)
			t->st.evict_gone++;
	} else {
		transit(p, a, PGT_REFUSE, PT_VAL(PS_UNEVICTABLE, 0));
		t->st.evict_other++;
	}
done:
	p->batch_done++;
	if (!p->inherited)
		t->inflight_pages--;
	return ret;
}

/**
 * pager_batch_end() - every slot of the batch out is settled: the next
 * may be picked. Return: the slots that took a page off the resident
 * count (0: a stall).
 */
uint32_t pager_batch_end(struct pager *p)
{
	uint32_t moved = p->batch_moved;

	uswap_assert(p->batch_done == p->batch_n);
	pager_release_heirs(p);
	p->inflight = p->inherited = false;
	p->heir_of = NULL;
	p->batch_n = p->batch_done = p->batch_moved = 0;
	p->cancel = p->told = 0;
	return moved;
}

/** pager_release_heirs() - end the batches of @p's heirs, all settled. */
void pager_release_heirs(struct pager *p)
{
	while (p->heirs) {
		struct pager *h = p->heirs;

		p->heirs = h->next_heir;
		h->heir_of = NULL;
		pager_batch_end(h);
	}
}

/** pager_get() - the value of the page at @addr. Return: false if absent. */
bool pager_get(const struct pager *p, uint64_t addr, uint64_t *val)
{
	return pt_get(&p->tab, addr, val);
}

/* ---- invariants ---- */

static void broken(const struct pager *p, const char *what, uint64_t addr, uint64_t a,
		   uint64_t b)
{
	fprintf(stderr, "pager_check: %s (page 0x%llx: %llu against %llu; resident %llu "
		"swapped %llu unevictable %llu shared %llu, batch %u%s)\n", what,
		(unsigned long long)addr, (unsigned long long)a, (unsigned long long)b,
		(unsigned long long)p->nr_resident, (unsigned long long)p->nr_swapped,
		(unsigned long long)p->nr_unevictable, (unsigned long long)p->nr_shared,
		p->batch_n, p->inflight ? " out" : "");
	abort();
}

static bool bit_test(const uint64_t *b, uint64_t i)
{
	return (b[i / 64] >> (i % 64)) & 1;
}

static void bit_set(uint64_t *b, uint64_t i)
{
	b[i / 64] |= 1ULL << (i % 64);
}

/* @t's scratch bitmap for pager_check(), cleared, of at least @n bits
 * (kept between walks: a fresh allocation each walk page-faulted in
 * every time). Return: it, or NULL (no memory: the checks that need it
 * are skipped). */
static uint64_t *check_bits(struct pg_tree *t, uint64_t n)
{
	size_t words = (size_t)(n + 63) / 64;

	if (words > t->check_words) {
		uint64_t *b = uswap_realloc(t->check_bits, words * sizeof(*b));

		if (!b)
			return NULL;
		t->check_bits = b;
		t->check_words = words;
	}
	memset(t->check_bits, 0, words * sizeof(*t->check_bits));
	return t->check_bits;
}

/** pager_check() - check @p's invariants; abort on the first broken. */
void pager_check(const struct pager *p)
{
	uint64_t res = 0, sw = 0, unev = 0, sh = 0, listed[2] = { 0, 0 };
	uint64_t *used = NULL;	/* a bit per mirror index: free, swapped or kept */
	bool states;

	if (!p->t)
		return;
	if (p->next_idx)
		used = check_bits(p->t, p->next_idx);
	for (size_t k = 0; used && k < p->nr_free; k++) {
		if (p->free_idx[k] >= p->next_idx || bit_test(used, p->free_idx[k]))
			broken(p, "a free mirror index out of range or free twice", 0,
			       p->free_idx[k], p->next_idx);
		bit_set(used, p->free_idx[k]);
	}
	for (size_t k = 0; k < p->tab.cap; k++) {
		const struct pt_ent *e = &p->tab.e[k];
		uint64_t v = e->val;

		if (!e->key)
			continue;
		switch (PT_STATE(v)) {
		case PS_RESIDENT:
			res++;
			if (LRU_TICKET(v))
				listed[LRU_ACTIVE(v)]++;
			break;
		case PS_UNEVICTABLE:
			res++;
			unev++;
			break;
		case PS_EVICTING:
		case PS_DEAD:
			res++;
			if (!p->inflight || PT_IDX(v) >= p->batch_n ||
			    p->batch_addr[PT_IDX(v)] != e->key)
				broken(p, "a page of the batch whose slot does not name it", e->key,
				       PT_IDX(v), p->batch_n);
			break;
		case PS_SWAPPED:
			sw++;
			/* (no memory for @used: the shared check is skipped) */
			if (PT_IDX(v) >= p->next_idx || (used && bit_test(used, PT_IDX(v))))
				broken(p, "a swapped page's mirror index free, shared or unknown",
				       e->key, PT_IDX(v), p->next_idx);
			if (used)
				bit_set(used, PT_IDX(v));
			break;
		case PS_SHARED:
			sh++;
			break;
		default:
			broken(p, "an unknown state", e->key, PT_STATE(v), 0);
		}
	}
	/* The copies' pages are looked up on one walk in eight (a lookup
	 * each doubled the model test's time): a copy left behind by a
	 * transition stays, so it is still found. */
	states = !(p->t->kept_checks++ & 7);
	for (size_t k = 0; k < p->kept.cap; k++) {
		const struct pt_ent *e = &p->kept.e[k];
		uint64_t v;

		if (!e->key)
			continue;
		if (!e->val || e->val - 1 >= p->next_idx || (used && bit_test(used, e->val - 1)))
			broken(p, "a kept copy's mirror index free, shared or unknown", e->key,
			       e->val - 1, p->next_idx);
		if (used)
			bit_set(used, e->val - 1);
		if (states && (!pt_get(&p->tab, e->key, &v) ||
			       (PT_STATE(v) != PS_RESIDENT && PT_STATE(v) != PS_EVICTING)))
			broken(p, "a kept copy of a page neither resident nor evicting", e->key,
			       e->val - 1, 0);
	}
	if (res != p->nr_resident)
		broken(p, "nr_resident", 0, p->nr_resident, res);
	if (sw != p->nr_swapped)
		broken(p, "nr_swapped", 0, p->nr_swapped, sw);
	if (unev != p->nr_unevictable)
		broken(p, "nr_unevictable", 0, p->nr_unevictable, unev);
	if (sh != p->nr_shared)
		broken(p, "nr_shared", 0, p->nr_shared, sh);
	if (p->next_idx != sw + p->kept.count + p->nr_free + p->nr_lost_idx)
		broken(p, "a mirror index neither swapped, kept nor free (leaked)", 0, p->next_idx,
		       sw + p->kept.count + p->nr_free + p->nr_lost_idx);
	for (int l = 0; l < 2; l++)
		if (p->lru.nr[l] > listed[l])
			broken(p, "a list counts more pages than it holds", 0, p->lru.nr[l],
			       listed[l]);
	if (p->batch_n > PG_BATCH || p->batch_done > p->batch_n)
		broken(p, "the batch's size", 0, p->batch_n, p->batch_done);
}

/** pager_check_tree() - @t's counts against its spaces' sums (PG_OUT()). */
void pager_check_tree(const struct pg_tree *t, uint64_t res, uint64_t unev, uint64_t out)
{
	if (res != t->resident || unev != t->unevictable || out != t->inflight_pages) {
		fprintf(stderr, "pager_check_tree: resident %llu/%llu unevictable %llu/%llu "
			"in flight %llu/%llu (tree/spaces)\n",
			(unsigned long long)t->resident, (unsigned long long)res,
			(unsigned long long)t->unevictable, (unsigned long long)unev,
			(unsigned long long)t->inflight_pages, (unsigned long long)out);
		abort();
	}
}

/* The runs of @p's ranges present or swapped, into *@v (sorted).
 * Return: their number, or -errno. */
static long kernel_runs(const struct pager *p, struct page_region **v)
{
	size_t n = 0, cap = 256;
	struct page_region *r = uswap_malloc(cap * sizeof(*r));

	if (!r)
		return -ENOMEM;
	for (size_t k = 0; k < p->ranges.n; k++) {
		uint64_t start = p->ranges.v[k].start, end = p->ranges.v[k].end;

		while (start < end) {
			struct pm_scan_arg a = {
				.size = sizeof(a), .start = start, .end = end,
				.vec = (uint64_t)(uintptr_t)(r + n), .vec_len = cap - n,
				.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
				.return_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
			};
			long got = ioctl(p->pagemap, PAGEMAP_SCAN, &a);

			if (got < 0) {
				free(r);
				return -errno;
			}
			n += (size_t)got;
			if (n == cap) {
				struct page_region *nr = uswap_realloc(r, 2 * cap * sizeof(*r));

				if (!nr) {
					free(r);
					return -ENOMEM;
				}
				r = nr;
				cap *= 2;
			}
			if (a.walk_end <= start)
				break;
			start = a.walk_end;
		}
	}
	*v = r;
	return (long)n;
}

/**
 * pager_check_present() - the RESIDENT and UNEVICTABLE pages of @p that
 * its pagemap shows neither present nor swapped. Not an abort: munmap()
 * zaps before its event, MADV_FREE pages go without one; the most at one
 * look is kept in dbg_resident_absent.
 * Return: that number; 0 without a readable, non-empty pagemap.
 */
uint64_t pager_check_present(struct pager *p)
{
	struct page_region *v = NULL;
	uint64_t absent = 0;
	long n;

	if (p->pagemap < 0 || (n = kernel_runs(p, &v)) < 0)
		return 0;
	if (!n) {		/* nothing at all: the mm is gone (exit, exec) */
		free(v);
		return 0;
	}
	for (size_t k = 0; k < p->tab.cap; k++) {
		const struct pt_ent *e = &p->tab.e[k];
		long lo = 0, hi = n;

		if (!e->key || (PT_STATE(e->val) != PS_RESIDENT &&
				PT_STATE(e->val) != PS_UNEVICTABLE))
			continue;
		while (lo < hi) {	/* the first run ending after the page */
			long mid = (lo + hi) / 2;

			if (v[mid].end <= e->key)
				lo = mid + 1;
			else
				hi = mid;
		}
		absent += lo == n || v[lo].start > e->key;
	}
	free(v);
	if (absent > p->t->st.dbg_resident_absent)
		p->t->st.dbg_resident_absent = absent;
	return absent;
}
