/* SPDX-License-Identifier: MIT */
/*
 * The model of table_differential (tests/stress/table_differential.c says
 * what it checks) and its operations, shared with the fuzz target
 * tests/fuzz/fuzz_table_ops.c: static functions over one file-scope state,
 * included by exactly one .c of a program.
 *
 * The includer defines, before including:
 *   TD_RAND_BELOW(n)  a number in [0, n) (0 when n is 0): every choice
 *   TD_RAND64()       64 random bits (shadow payloads)
 *   TD_FAIL_EXIT()    what ends a failed run once it is described
 * and may define DEV_PAGES, POOL_FRAMES and BIG_COUNT (slots of the
 * device, frames of the pool, references of a "big" count).
 *
 * td_setup(design) swaps a device on and resets the model,
 * td_run_op(OP_*) runs one operation and checks the slots it touched,
 * sweep() checks every slot, folio and the device's statistics,
 * td_finish() drains and swaps off.
 */
#ifndef USWAP_TABLE_MODEL_H
#define USWAP_TABLE_MODEL_H

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uswap/uswap.h>
#include <uswap/legacy.h>
#include "swap/swap_table.h"
#include "testutil.h"

#ifndef DEV_PAGES
#define DEV_PAGES	8500	/* 17 clusters, the last one tail-masked */
#endif
#define NR_CLUSTERS	((DEV_PAGES + SWAPFILE_CLUSTER - 1) / SWAPFILE_CLUSTER)
#define NR_MSLOTS	(NR_CLUSTERS * SWAPFILE_CLUSTER)
#ifndef POOL_FRAMES
#define POOL_FRAMES	16384
#endif
#define MAX_FOLIOS	POOL_FRAMES
#define SWEEP_EVERY	1024
#ifndef BIG_COUNT
#define BIG_COUNT	100000
#endif
#define MAX_RANGE	1100	/* longer than two clusters */
#define NO_FOLIO	(-1)
/* The legacy swap_map byte (uswap/legacy.h), and its continuation pages. */
#define MAP_BAD		0x3f
#define MAP_COUNT_MASK	0x3f
#define MAP_HAS_CACHE	0x40
#define MAP_CONTINUED	0x80
#define MAP_BASE	63	/* counts 0..62 in the byte */
#define CONT_BASE	128	/* a 7-bit digit per continuation page */
#define MAP_PAGE	4096	/* slots per map page: one chain of pages each */
#define NR_MAP_PAGES	((DEV_PAGES + MAP_PAGE - 1) / MAP_PAGE)
/* Single-threaded: TSan only slows it down (some 40x), so run fewer ops there. */
#ifdef USWAP_TSAN
#define DEFAULT_OPS	200000
#else
#define DEFAULT_OPS	1000000
#endif

struct mslot {
	uint64_t count;
	uint64_t shadow;	/* payload of a shadow entry, bit 0 set */
	int32_t folio;		/* index in folios[], or NO_FOLIO */
	bool bad;
	bool used;		/* allocated (not free, not bad) */
	bool zero;		/* zero flag: written out as zeros */
	uint8_t cg;		/* memory cgroup: 0 root, else cgs[cg - 1] */
};

/* Memory cgroups: swap limits, and what the model charges to each. */
#define NR_CGS	3
static struct {
	uint16_t id;
	uint64_t max, usage;
} cgs[NR_CGS];

struct mfolio {
	struct folio *f;
	uint64_t off;		/* first slot */
	unsigned int order;
};

static struct mslot slots[NR_MSLOTS];
static struct mfolio folios[MAX_FOLIOS];
static int32_t nr_folios;		/* folios[0..nr_folios) are cached and locked */
static uint32_t inuse_list[NR_MSLOTS];	/* allocated slots, for picking */
static uint32_t inuse_pos[NR_MSLOTS];
static uint32_t nr_inuse;
static uint32_t big_slots[16];		/* slots driven past BIG_COUNT */
static unsigned int nr_big;

static struct uswap_frame_pool *pool;
static unsigned int type;
static const char *design = "table";
static bool legacy;			/* design == "legacy" */
/* legacy: continuation pages each map page's chain must have (never shrinks) */
static unsigned int cont_levels[NR_MAP_PAGES];
static uint64_t seed, step;
static const char *op_name = "setup";
static char op_desc[160];

static struct {
	uint64_t ops[32], errs[32], big_dups, range_puts_multi, cross_cluster_puts;
	uint64_t max_inuse, full;
} stats;

/* ---- failure ---- */

static void describe_model(char *buf, size_t len, uint64_t o)
{
	const struct mslot *s = &slots[o];

	if (s->bad)
		snprintf(buf, len, "bad");
	else if (!s->used)
		snprintf(buf, len, "free");
	else if (s->folio != NO_FOLIO)
		snprintf(buf, len, "pfn %#" PRIx64 " (folio %d order %u at %" PRIu64 ") count %" PRIu64,
			 folio_pfn(folios[s->folio].f), s->folio, folios[s->folio].order,
			 folios[s->folio].off, s->count);
	else
		snprintf(buf, len, "shadow %#" PRIx64 " count %" PRIu64, s->shadow, s->count);
}

static void fail(uint64_t slot, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void fail(uint64_t slot, const char *fmt, ...)
{
	char model[160] = "-";
	uint64_t tb = 0;
	long c = -2;
	int err = -1;
	va_list ap;

	fprintf(stderr, "table_differential: FAILED with USWAP_TEST_DESIGN=%s USWAP_TEST_SEED=%"
		PRIu64 " at step %" PRIu64 ", op %s (%s)\n  ", design, seed, step, op_name,
		op_desc);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (slot != UINT64_MAX && slot < NR_MSLOTS) {
		describe_model(model, sizeof(model), slot);
		err = uswap_swap_tb_peek(swp_entry(type, slot), &tb, &c);
		if (legacy)
			fprintf(stderr, "  slot %" PRIu64 " (cluster %" PRIu64 "): model: %s\n"
				"  actual: peek %d, map byte 0x%02" PRIx64 " (low count %" PRIu64
				"%s%s%s) count %ld, shadow %#" PRIx64 "\n",
				slot, slot / SWAPFILE_CLUSTER, model, err, tb, tb & MAP_COUNT_MASK,
				tb == MAP_BAD ? ", bad" : "", tb & MAP_HAS_CACHE ? ", cache" : "",
				tb & MAP_CONTINUED ? ", continued" : "", c,
				swap_cache_get_shadow(swp_entry(type, slot)));
		else
			fprintf(stderr, "  slot %" PRIu64 " (cluster %" PRIu64 "): model: %s\n"
				"  actual: peek %d, entry %#018" PRIx64 " (%s) count %ld\n",
				slot, slot / SWAPFILE_CLUSTER, model, err, tb,
				err ? "-" : swp_tb_type_name(tb), c);
	}
	TD_FAIL_EXIT();
}

/* ---- the model ---- */

static swp_entry_t E(uint64_t o)
{
	return swp_entry(type, o);
}

static void model_alloc(uint64_t o, unsigned int cg)
{
	struct mslot *s = &slots[o];

	if (s->used || s->bad)
		fail(o, "model: allocating a slot that is not free");
	s->used = true;
	s->zero = false;
	s->cg = (uint8_t)cg;
	if (cg)
		cgs[cg - 1].usage++;
	s->count = 0;
	s->shadow = 0;
	s->folio = NO_FOLIO;
	inuse_pos[o] = nr_inuse;
	inuse_list[nr_inuse++] = (uint32_t)o;
}

static void model_free(uint64_t o)
{
	struct mslot *s = &slots[o];
	uint32_t last;

	s->used = false;
	s->count = 0;
	s->shadow = 0;
	s->folio = NO_FOLIO;
	s->zero = false;
	if (s->cg)
		cgs[s->cg - 1].usage--;
	s->cg = 0;
	last = inuse_list[--nr_inuse];
	inuse_list[inuse_pos[o]] = last;
	inuse_pos[last] = inuse_pos[o];
}

/* The entry the model expects, and its exact count (-1: none). */
static uint64_t model_tb(uint64_t o, long *count)
{
	const struct mslot *s = &slots[o];
	unsigned int field;

	if (s->bad) {
		*count = -1;
		return SWP_TB_BAD;
	}
	if (!s->used) {
		*count = 0;
		return SWP_TB_NULL;
	}
	*count = (long)s->count;
	field = s->count >= SWP_TB_COUNT_MAX ? SWP_TB_COUNT_MAX : (unsigned int)s->count;
	/* Z is in the word where it fits (swp_tb_mk_flags drops it otherwise). */
	if (s->folio != NO_FOLIO)
		return pfn_to_swp_tb(folio_pfn(folios[s->folio].f), swp_tb_mk_flags(field, s->zero));
	return shadow_to_swp_tb(s->shadow, swp_tb_mk_flags(field, s->zero));
}

/* What the library reports for a stored shadow payload (0 for the placeholder). */
static uint64_t shadow_seen(uint64_t payload)
{
	return (payload | SWP_TB_SHADOW_MARK) == SWP_TB_SHADOW_MARK ? 0 : (payload | 1);
}

static void check_slot_table(uint64_t o)
{
	uint64_t tb = 0, want;
	long c = -2, wc;
	int err;

	err = uswap_swap_tb_peek(E(o), &tb, &c);
	want = model_tb(o, &wc);
	if (err || tb != want || c != wc)
		fail(o, "slot differs: expected entry %#018" PRIx64 " count %ld", want, wc);
}

/* Continuation pages a count needs: the base-128 digits of count / 63. */
static unsigned int cont_need(uint64_t count)
{
	unsigned int n = 0;

	for (count /= MAP_BASE; count; count /= CONT_BASE)
		n++;
	return n;
}

/* The legacy map byte the model expects, and its exact count (-1: bad). */
static uint64_t model_map(uint64_t o, long *count)
{
	const struct mslot *s = &slots[o];

	if (s->bad) {
		*count = -1;
		return MAP_BAD;
	}
	if (!s->used) {
		*count = 0;
		return 0;
	}
	*count = (long)s->count;
	return (s->count % MAP_BASE) | (s->folio != NO_FOLIO ? MAP_HAS_CACHE : 0) |
	       (s->count >= MAP_BASE ? MAP_CONTINUED : 0);
}

/*
 * Legacy: decode the map byte (count, cache pin, continuation, bad) and
 * compare it and the exact count with the model; the cache must give back
 * the model's folio, and an uncached slot its shadow.
 */
static void check_slot_legacy(uint64_t o)
{
	const struct mslot *s = &slots[o];
	struct folio *want_f = s->used && s->folio != NO_FOLIO ? folios[s->folio].f : NULL, *f;
	uint64_t tb = 0, want, sh, want_sh;
	long c = -2, wc;
	int err;

	err = uswap_swap_tb_peek(E(o), &tb, &c);
	want = model_map(o, &wc);
	if (err || c != wc)
		fail(o, "slot differs: expected count %ld (map byte 0x%02" PRIx64 ")", wc, want);
	if (tb == MAP_BAD || want == MAP_BAD) {
		if (tb != want)
			fail(o, "slot differs: bad %d, expected bad %d", tb == MAP_BAD,
			     want == MAP_BAD);
	} else {
		bool cached = tb & MAP_HAS_CACHE, cont = tb & MAP_CONTINUED;
		uint64_t low = tb & MAP_COUNT_MASK;

		if (tb > 0xff || low >= MAP_BASE || low != (uint64_t)c % MAP_BASE ||
		    cont != ((uint64_t)c >= MAP_BASE) || cached != (want_f != NULL) || tb != want)
			fail(o, "map byte differs: expected 0x%02" PRIx64 " (count %ld%s)", want, wc,
			     want_f ? ", cache" : "");
	}
	f = o < DEV_PAGES ? swap_cache_get_folio(E(o)) : NULL;
	if (f)
		folio_put(f);
	if (f != want_f)
		fail(o, "swap_cache_get_folio gave %s, expected %s", f ? "a folio" : "none",
		     want_f ? "the model's folio" : "none");
	sh = swap_cache_get_shadow(E(o));
	want_sh = s->used && !want_f ? shadow_seen(s->shadow) : 0;
	if (sh != want_sh)
		fail(o, "shadow %#" PRIx64 ", expected %#" PRIx64, sh, want_sh);
}

/* The group id slot @o is charged to, by the model. */
static uint16_t model_cg_id(uint64_t o)
{
	const struct mslot *s = &slots[o];

	return s->used && s->cg ? cgs[s->cg - 1].id : 0;
}

static void check_slot(uint64_t o)
{
	uint16_t id;

	if (o >= DEV_PAGES)
		return;
	if (legacy)
		check_slot_legacy(o);
	else
		check_slot_table(o);
	id = uswap_swap_cgroup_lookup(E(o));
	if (id != model_cg_id(o))
		fail(o, "charged to group %u, expected %u", id, model_cg_id(o));
}

/* A count went up: the legacy chain of its map page grows to hold it. */
static void model_counted(uint64_t o)
{
	unsigned int need = cont_need(slots[o].count);

	if (need > cont_levels[o / MAP_PAGE])
		cont_levels[o / MAP_PAGE] = need;
}

/* A count at which the encoding changes (in-table maximum, map digits). */
static bool count_boundary(uint64_t c)
{
	if (legacy)
		return (c + 1) % MAP_BASE <= 2 || (c + 1) % (MAP_BASE * CONT_BASE) <= 2;
	return c + 1 >= SWP_TB_COUNT_MAX && c <= SWP_TB_COUNT_MAX + 1;
}

static void check_range(uint64_t o, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n && o + i < DEV_PAGES; i++)
		check_slot(o + i);
}

static void check_folio(int32_t idx)
{
	const struct mfolio *m = &folios[idx];
	long nr = 1L << m->order;

	if (!folio_test_swapcache(m->f) || folio_swap_entry(m->f).val != E(m->off).val ||
	    !folio_test_locked(m->f) || folio_ref_count(m->f) != 1 + nr)
		fail(m->off, "folio %d (order %u at %" PRIu64 "): swapcache %d entry %#" PRIx64
		     " locked %d refs %ld, expected cached at the slot, locked, refs %ld",
		     idx, m->order, m->off, folio_test_swapcache(m->f),
		     folio_swap_entry(m->f).val, folio_test_locked(m->f),
		     folio_ref_count(m->f), 1 + nr);
}

static void sweep(void)
{
	uint64_t o, c, want_inuse = 0, want_tables = 0, want_ext = 0;
	struct uswap_swap_stat st;
	int32_t i;

	for (o = 0; o < DEV_PAGES; o++)
		check_slot(o);
	for (c = 0; c < NR_CLUSTERS; c++) {
		bool any = false, over = false;

		for (o = c * SWAPFILE_CLUSTER; o < (c + 1) * SWAPFILE_CLUSTER; o++) {
			any |= slots[o].used || slots[o].bad;
			over |= slots[o].used && slots[o].count >= SWP_TB_COUNT_MAX;
			want_inuse += slots[o].used;
		}
		want_tables += any;
		want_ext += over;
	}
	for (i = 0; i < nr_folios; i++)
		check_folio(i);
	if (uswap_swap_stat(type, &st))
		fail(UINT64_MAX, "uswap_swap_stat failed");
	if (legacy) {
		struct uswap_legacy_stat ls;
		uint64_t want_cont = 0;

		/* Counts live in the map and its continuation pages, which
		 * stay until swapoff: one chain per map page, as long as
		 * the largest count it ever held needed. */
		want_ext = 0;
		for (c = 0; c < NR_MAP_PAGES; c++)
			want_cont += cont_levels[c];
		if (uswap_legacy_stat(type, &ls))
			fail(UINT64_MAX, "uswap_legacy_stat failed");
		if (ls.nr_cont_pages != want_cont || ls.map_bytes != DEV_PAGES ||
		    ls.bypass_swapins || ls.bypass_retries)
			fail(UINT64_MAX, "legacy stat: %" PRIu64 " continuation pages, map %"
			     PRIu64 " bytes, %" PRIu64 " bypass swap-ins, %" PRIu64
			     " bypass retries; model: %" PRIu64 " continuation pages",
			     ls.nr_cont_pages, ls.map_bytes, ls.bypass_swapins,
			     ls.bypass_retries, want_cont);
	}
	if (want_inuse != nr_inuse)
		fail(UINT64_MAX, "model: inuse list %u vs %" PRIu64, nr_inuse, want_inuse);
	for (i = 0; i < NR_CGS; i++) {
		struct uswap_swap_cgroup_stat cs;

		if (uswap_swap_cgroup_stat(cgs[i].id, &cs) || cs.usage != cgs[i].usage ||
		    cs.usage > cgs[i].max)
			fail(UINT64_MAX, "group %u: usage %" PRIu64 ", model %" PRIu64 " max %" PRIu64,
			     cgs[i].id, cs.usage, cgs[i].usage, cgs[i].max);
	}
	if (st.inuse_pages != want_inuse || st.nr_tables != want_tables ||
	    st.nr_extend_tables != want_ext || st.max != DEV_PAGES || st.pages != DEV_PAGES - 1)
		fail(UINT64_MAX, "stat: inuse %" PRIu64 " tables %" PRIu64 " extend %" PRIu64
		     " max %" PRIu64 " pages %" PRIu64 "; model: inuse %" PRIu64 " tables %" PRIu64
		     " extend %" PRIu64, st.inuse_pages, st.nr_tables, st.nr_extend_tables,
		     st.max, st.pages, want_inuse, want_tables, want_ext);
}

static void expect_ret(long got, long want, uint64_t slot)
{
	if (got != want)
		fail(slot, "returned %ld, expected %ld", got, want);
}

/* ---- choosing ---- */

static uint64_t rnd(uint64_t n)
{
	return TD_RAND_BELOW(n);
}

static bool chance(unsigned int pct)
{
	return rnd(100) < pct;
}

/* An allocated slot mostly; sometimes any slot, rarely past the end. */
static uint64_t pick_slot(void)
{
	if (nr_inuse && chance(85))
		return inuse_list[rnd(nr_inuse)];
	if (chance(3))
		return DEV_PAGES + rnd(2 * SWAPFILE_CLUSTER);
	return rnd(DEV_PAGES);
}

/* Whether the model gives a slot of @m a count: the folio is not reclaimable. */
static bool model_swapped(const struct mfolio *m)
{
	for (uint64_t i = 0; i < 1ULL << m->order; i++)
		if (slots[m->off + i].count)
			return true;
	return false;
}

static int32_t pick_folio(void)
{
	return nr_folios ? (int32_t)rnd((uint64_t)nr_folios) : NO_FOLIO;
}

static unsigned int pick_order(void)
{
	unsigned int r = (unsigned int)rnd(100);

	if (r < 60)
		return 0;
	if (r < 85)
		return 1 + (unsigned int)rnd(3);
	if (r < 97)
		return 4 + (unsigned int)rnd(5);
	return 9;
}

static uint64_t pick_shadow(void)
{
	if (chance(20))
		return 0;
	return (TD_RAND64() & (~0ULL >> SWP_TB_FLAGS_BITS)) | 1;
}

static int32_t folio_track(struct folio *f, uint64_t off)
{
	int32_t idx = nr_folios++;
	uint64_t i;

	folios[idx].f = f;
	folios[idx].off = off;
	folios[idx].order = folio_order(f);
	for (i = 0; i < (1ULL << folios[idx].order); i++)
		slots[off + i].folio = idx;
	return idx;
}

/* The folio left the cache: forget it, unlock it, drop our reference. */
static void folio_untrack(int32_t idx)
{
	struct folio *f = folios[idx].f;
	int32_t last = --nr_folios;
	uint64_t i;

	if (idx != last) {
		folios[idx] = folios[last];
		for (i = 0; i < (1ULL << folios[idx].order); i++)
			if (slots[folios[idx].off + i].folio == last)
				slots[folios[idx].off + i].folio = idx;
	}
	if (folio_test_swapcache(f) || folio_ref_count(f) != 1)
		fail(UINT64_MAX, "folio out of the cache: swapcache %d refs %ld",
		     folio_test_swapcache(f), folio_ref_count(f));
	folio_unlock(f);
	folio_put(f);
}

/* The folio leaves the cache: count-0 slots are freed, others become @shadow. */
static void model_cache_del(int32_t idx, uint64_t shadow)
{
	const struct mfolio *m = &folios[idx];
	uint64_t i;

	for (i = 0; i < (1ULL << m->order); i++) {
		struct mslot *s = &slots[m->off + i];

		if (!s->count) {
			model_free(m->off + i);
		} else {
			s->folio = NO_FOLIO;
			s->shadow = shadow | 1;
		}
	}
}

/* One reference less; an uncached slot reaching 0 is free. */
static void model_put(uint64_t o)
{
	struct mslot *s = &slots[o];

	s->count--;
	if (!s->count && s->folio == NO_FOLIO)
		model_free(o);
}

/* The error swap_put_entries_direct must give for [o, o+nr), 0 if none. */
static int model_put_error(uint64_t o, long nr)
{
	uint64_t i;

	if (nr <= 0 || o >= DEV_PAGES || o + (uint64_t)nr > DEV_PAGES)
		return -EINVAL;
	for (i = o; i < o + (uint64_t)nr; i++) {
		if (slots[i].bad)
			return -EINVAL;
		if (!slots[i].used || !slots[i].count)
			return -ENOENT;
	}
	return 0;
}

static int model_dup_error(uint64_t o)
{
	if (o >= DEV_PAGES || slots[o].bad)
		return -EINVAL;
	if (!slots[o].used || !slots[o].count)
		return -ENOENT;
	return 0;
}

static bool model_any_free_slot(void)
{
	return nr_inuse < DEV_PAGES - 1;
}

static bool model_any_free_cluster(void)
{
	uint64_t c, o;

	for (c = 0; c < NR_CLUSTERS; c++) {
		for (o = c * SWAPFILE_CLUSTER; o < (c + 1) * SWAPFILE_CLUSTER; o++)
			if (slots[o].used || slots[o].bad)
				break;
		if (o == (c + 1) * SWAPFILE_CLUSTER)
			return true;
	}
	return false;
}

/* ---- operations ---- */

enum {
	OP_ALLOC, OP_FOLIO_DUP, OP_FOLIO_PUT, OP_CACHE_DEL, OP_SWAPIN, OP_FREE_SWAP,
	OP_DUP_DIRECT, OP_PUT_DIRECT, OP_HIB_ALLOC, OP_HIB_FREE, OP_REPLACE, OP_MISUSE,
	OP_BIG_DUP, OP_BIG_PUT, OP_WRITEOUT, NR_OPS
};
static const char *const op_names[NR_OPS] = {
	"folio_alloc_swap", "folio_dup_swap", "folio_put_swap", "swap_cache_del_folio",
	"swap_cache_add_folio", "folio_free_swap", "swap_dup_entry_direct",
	"swap_put_entries_direct", "swap_alloc_hibernation_slot",
	"swap_free_hibernation_slot", "swap_cache_replace_folio", "misuse",
	"big dup", "big put", "swap_writeout",
};

static void op_alloc(void)
{
	unsigned int order = pick_order();
	uint64_t nr = 1ULL << order, off, i;
	struct folio *f = uswap_folio_alloc(pool, order);
	int err;

	unsigned int cg = (unsigned int)rnd(NR_CGS + 1);

	snprintf(op_desc, sizeof(op_desc), "order %u group %u", order, cg);
	if (!f)
		return;
	folio_mark_uptodate(f);
	folio_set_memcg_id(f, cg ? cgs[cg - 1].id : 0);
	folio_lock(f);
	err = folio_alloc_swap(f);
	if (cg && cgs[cg - 1].usage + nr > cgs[cg - 1].max) {
		/* Over the group's swap.max: refused, nothing changed. */
		expect_ret(err, -ENOMEM, UINT64_MAX);
		if (folio_test_swapcache(f) || folio_ref_count(f) != 1)
			fail(UINT64_MAX, "a refused charge left the folio changed");
		folio_unlock(f);
		folio_put(f);
		stats.errs[OP_ALLOC]++;
		return;
	}
	if (err == -ENOMEM) {
		struct uswap_swap_stat st;

		/* Nothing allocated: no slot (a full sweep now and then), no folio. */
		if (order ? model_any_free_cluster() : model_any_free_slot())
			fail(UINT64_MAX, "-ENOMEM for order %u with %s", order,
			     order ? "a free cluster" : "a free slot");
		if (folio_test_swapcache(f) || folio_ref_count(f) != 1)
			fail(UINT64_MAX, "-ENOMEM left the folio changed");
		if (uswap_swap_stat(type, &st) || st.inuse_pages != nr_inuse)
			fail(UINT64_MAX, "-ENOMEM with inuse_pages %" PRIu64 ", model %u",
			     st.inuse_pages, nr_inuse);
		folio_unlock(f);
		folio_put(f);
		if (stats.errs[OP_ALLOC]++ % 64 == 0)
			sweep();
		return;
	}
	expect_ret(err, 0, UINT64_MAX);
	off = swp_offset(folio_swap_entry(f));
	snprintf(op_desc, sizeof(op_desc), "order %u -> %" PRIu64, order, off);
	if (swp_type(folio_swap_entry(f)) != type || off % nr || off + nr > DEV_PAGES ||
	    off / SWAPFILE_CLUSTER != (off + nr - 1) / SWAPFILE_CLUSTER)
		fail(off, "allocated entry %#" PRIx64 " is misplaced", folio_swap_entry(f).val);
	for (i = 0; i < nr; i++)
		model_alloc(off + i, cg);
	if (nr_inuse > stats.max_inuse)
		stats.max_inuse = nr_inuse;
	if (nr_inuse == DEV_PAGES - 1)
		stats.full++;
	folio_track(f, off);
	check_range(off, nr);
	check_folio(nr_folios - 1);
}

/*
 * Write a cached folio out, filled with zeros or not. The device has no
 * backend: a folio of zeros is flagged (0, nothing to write), any other
 * clears the flag and is refused (-EOPNOTSUPP). Either way it comes back
 * unlocked, and is locked again.
 */
static void op_writeout(void)
{
	int32_t idx = pick_folio();
	bool zero = chance(50);
	struct mfolio *m;
	uint64_t i, nr;

	if (idx == NO_FOLIO)
		return;
	m = &folios[idx];
	nr = 1ULL << m->order;
	snprintf(op_desc, sizeof(op_desc), "folio %d at %" PRIu64 " order %u %s", idx, m->off,
		 m->order, zero ? "zeros" : "data");
	memset(folio_address(m->f), 0, nr * USWAP_PAGE_SIZE);
	if (!zero)
		((unsigned char *)folio_address(m->f))[rnd(nr * USWAP_PAGE_SIZE)] = 0x5a;
	folio_mark_dirty(m->f);
	expect_ret(uswap_swap_writeout(m->f, true), zero ? 0 : -EOPNOTSUPP, m->off);
	folio_lock(m->f);
	if (zero == folio_test_dirty(m->f))
		fail(m->off, "written out: dirty %d", folio_test_dirty(m->f));
	for (i = 0; i < nr; i++)
		slots[m->off + i].zero = zero;
	check_range(m->off, nr);
	check_folio(idx);
}

/* Whole folio (-1) mostly, else one page. */
static long pick_subpage(const struct mfolio *m)
{
	return chance(50) ? -1 : (long)rnd(1ULL << m->order);
}

static void op_folio_dup_put(bool dup)
{
	int32_t idx = pick_folio();
	struct mfolio *m;
	uint64_t o, n, i;
	long sub;
	int err, want = 0;

	if (idx == NO_FOLIO)
		return;
	m = &folios[idx];
	sub = pick_subpage(m);
	o = m->off + (sub >= 0 ? (uint64_t)sub : 0);
	n = sub >= 0 ? 1 : 1ULL << m->order;
	snprintf(op_desc, sizeof(op_desc), "folio %d at %" PRIu64 " order %u subpage %ld",
		 idx, m->off, m->order, sub);
	if (!dup)
		for (i = o; i < o + n; i++)
			if (!slots[i].count)
				want = -ENOENT;
	err = dup ? folio_dup_swap(m->f, sub) : folio_put_swap(m->f, sub);
	expect_ret(err, want, o);
	if (err)
		stats.errs[dup ? OP_FOLIO_DUP : OP_FOLIO_PUT]++;
	else
		for (i = o; i < o + n; i++) {
			slots[i].count += dup ? 1 : (uint64_t)-1;
			model_counted(i);
		}
	check_range(o, n);
}

static void op_cache_del(void)
{
	int32_t idx = pick_folio();
	uint64_t sh = pick_shadow(), off, nr;

	if (idx == NO_FOLIO)
		return;
	off = folios[idx].off;
	nr = 1ULL << folios[idx].order;
	snprintf(op_desc, sizeof(op_desc), "folio %d at %" PRIu64 " order %u shadow %#" PRIx64,
		 idx, off, folios[idx].order, sh);
	expect_ret(swap_cache_del_folio(folios[idx].f, sh), 0, off);
	model_cache_del(idx, sh);
	folio_untrack(idx);
	check_range(off, nr);
}

static void op_free_swap(void)
{
	int32_t idx = pick_folio();
	uint64_t off, nr, i;
	int want = 1;

	if (idx == NO_FOLIO)
		return;
	off = folios[idx].off;
	nr = 1ULL << folios[idx].order;
	snprintf(op_desc, sizeof(op_desc), "folio %d at %" PRIu64 " order %u", idx, off,
		 folios[idx].order);
	for (i = off; i < off + nr; i++)
		if (slots[i].count)
			want = 0;
	expect_ret(folio_free_swap(folios[idx].f), want, off);
	if (want) {
		if (!folio_test_dirty(folios[idx].f))
			fail(off, "folio_free_swap did not dirty the folio");
		model_cache_del(idx, 0);
		folio_untrack(idx);
	}
	check_range(off, nr);
}

/* Swap-in: a new folio into the cache over swapped-out slots. */
static void op_swapin(void)
{
	unsigned int order = chance(70) ? 0 : (unsigned int)rnd(5);
	uint64_t nr = 1ULL << order, o = pick_slot(), i, sh = 0x5a5a, want_sh = 0;
	struct folio *f;
	int err, want = 0;

	if (!chance(10))
		o &= ~(nr - 1);
	snprintf(op_desc, sizeof(op_desc), "order %u at %" PRIu64, order, o);
	f = uswap_folio_alloc(pool, order);
	if (!f)
		return;
	folio_lock(f);
	if (o % nr || o + nr > DEV_PAGES)
		want = -EINVAL;
	for (i = o; !want && i < o + nr; i++) {
		if (slots[i].bad)
			want = -EINVAL;
		else if (slots[i].used && slots[i].folio != NO_FOLIO)
			want = -EEXIST;
		else if (!slots[i].used || !slots[i].count)
			want = -ENOENT;
	}
	if (!want)
		want_sh = shadow_seen(slots[o].shadow);
	err = swap_cache_add_folio(f, E(o), &sh);
	expect_ret(err, want, o);
	if (err) {
		stats.errs[OP_SWAPIN]++;
		if (sh != 0x5a5a || folio_test_swapcache(f) || folio_ref_count(f) != 1)
			fail(o, "failed swap_cache_add_folio changed the folio or the shadow");
		folio_unlock(f);
		folio_put(f);
	} else {
		if (sh != want_sh)
			fail(o, "old shadow %#" PRIx64 ", expected %#" PRIx64, sh, want_sh);
		folio_track(f, o);
		check_folio(nr_folios - 1);
	}
	check_range(o, nr);
}

static void op_dup_direct(void)
{
	uint64_t o = pick_slot(), n = chance(80) ? 1 : 1 + rnd(64), i;

	snprintf(op_desc, sizeof(op_desc), "%" PRIu64 " slots from %" PRIu64, n, o);
	for (i = o; i < o + n; i++) {
		int want = model_dup_error(i);

		expect_ret(swap_dup_entry_direct(E(i)), want, i);
		if (want) {
			stats.errs[OP_DUP_DIRECT]++;
		} else {
			slots[i].count++;
			model_counted(i);
		}
	}
	check_range(o, n);
}

/* The longest run of referenced slots from @o, up to @cap. */
static uint64_t counted_run(uint64_t o, uint64_t cap)
{
	uint64_t n = 0;

	while (n < cap && o + n < DEV_PAGES && slots[o + n].used && slots[o + n].count)
		n++;
	return n;
}

static void op_put_direct(bool hibernation)
{
	uint64_t o = pick_slot(), run = counted_run(o, MAX_RANGE), i;
	long nr = 1;
	int want, err;

	if (!hibernation) {
		unsigned int r = (unsigned int)rnd(100);

		if (r < 70 && run)
			nr = (long)(1 + rnd(run));
		else if (r < 85)
			nr = (long)(run + 1 + rnd(3));
		else
			nr = (long)(1 + rnd(MAX_RANGE));
	}
	snprintf(op_desc, sizeof(op_desc), "%ld slots from %" PRIu64, nr, o);
	want = model_put_error(o, nr);
	err = hibernation ? swap_free_hibernation_slot(E(o)) : swap_put_entries_direct(E(o), nr);
	expect_ret(err, want, o);
	if (err) {
		stats.errs[hibernation ? OP_HIB_FREE : OP_PUT_DIRECT]++;
	} else {
		for (i = o; i < o + (uint64_t)nr; i++)
			model_put(i);
		if (nr > 1)
			stats.range_puts_multi++;
		if (o / SWAPFILE_CLUSTER != (o + (uint64_t)nr - 1) / SWAPFILE_CLUSTER)
			stats.cross_cluster_puts++;
	}
	check_range(o, (uint64_t)nr);
}

static void op_hib_alloc(void)
{
	swp_entry_t e = swap_alloc_hibernation_slot(type);
	uint64_t o = swp_offset(e);

	snprintf(op_desc, sizeof(op_desc), "-> %" PRIu64, o);
	if (!e.val) {
		stats.errs[OP_HIB_ALLOC]++;
		if (model_any_free_slot())
			fail(UINT64_MAX, "no hibernation slot with a free slot");
		sweep();
		return;
	}
	if (swp_type(e) != type || o >= DEV_PAGES)
		fail(UINT64_MAX, "hibernation entry %#" PRIx64 " is not ours", e.val);
	model_alloc(o, 0);	/* hibernation: no group */
	slots[o].count = 1;
	slots[o].shadow = 1;
	check_slot(o);
}

/* Migration: a new folio of the same order takes over the cache. */
static void op_replace(void)
{
	int32_t idx = pick_folio();
	struct folio *nw;
	uint64_t off, nr, i;
	int32_t nidx;

	if (idx == NO_FOLIO)
		return;
	off = folios[idx].off;
	nr = 1ULL << folios[idx].order;
	snprintf(op_desc, sizeof(op_desc), "folio %d at %" PRIu64 " order %u", idx, off,
		 folios[idx].order);
	nw = uswap_folio_alloc(pool, folios[idx].order);
	if (!nw)
		return;
	folio_lock(nw);
	if (legacy) {
		/* Not supported (no migration in the old design): nothing changes. */
		expect_ret(swap_cache_replace_folio(folios[idx].f, nw, E(off)), -EOPNOTSUPP, off);
		stats.errs[OP_REPLACE]++;
		if (folio_test_swapcache(nw) || folio_ref_count(nw) != 1)
			fail(off, "refused replace changed the new folio");
		folio_unlock(nw);
		folio_put(nw);
		check_range(off, nr);
		check_folio(idx);
		return;
	}
	expect_ret(swap_cache_replace_folio(folios[idx].f, nw, E(off)), 0, off);
	nidx = folio_track(nw, off);
	(void)nidx;
	/* The old one is out: forget it without touching the slots. */
	for (i = off; i < off + nr; i++)
		if (slots[i].folio != nidx)
			fail(i, "model: replace bookkeeping");
	{
		struct folio *old = folios[idx].f;
		int32_t last = --nr_folios;

		/* nidx == last: move it into idx */
		folios[idx] = folios[last];
		for (i = off; i < off + nr; i++)
			slots[i].folio = idx;
		if (folio_test_swapcache(old) || folio_ref_count(old) != 1)
			fail(off, "replaced folio still cached or referenced");
		folio_unlock(old);
		folio_put(old);
	}
	check_range(off, nr);
	check_folio(idx);
}

/* Calls that must fail and change nothing. */
static void op_misuse(void)
{
	int32_t idx = pick_folio();
	unsigned int kind = (unsigned int)rnd(10);
	struct mfolio *m = idx == NO_FOLIO ? NULL : &folios[idx];
	uint64_t o = m ? m->off : 1, n = m ? 1ULL << m->order : 1;
	swp_entry_t dead = swp_entry(MAX_SWAPFILES - 1, 1);
	struct folio *f;

	snprintf(op_desc, sizeof(op_desc), "kind %u folio %d", kind, idx);
	switch (kind) {
	case 0:	/* folio ops on an uncached folio */
		f = uswap_folio_alloc(pool, 0);
		if (!f)
			return;
		folio_lock(f);
		expect_ret(folio_dup_swap(f, -1), -EINVAL, UINT64_MAX);
		expect_ret(folio_put_swap(f, -1), -EINVAL, UINT64_MAX);
		expect_ret(swap_cache_del_folio(f, 0), -EINVAL, UINT64_MAX);
		expect_ret(folio_free_swap(f), 0, UINT64_MAX);
		folio_unlock(f);
		expect_ret(folio_alloc_swap(f), -EINVAL, UINT64_MAX);	/* unlocked */
		folio_put(f);
		break;
	case 1:	/* a cached folio, unlocked */
		/*
		 * Unlocked, a folio whose slots all have count 0 is the
		 * device's reclaim worker's to free (its trylock succeeds, as
		 * the kernel's reclaim_work's would): the model could not tell
		 * whether it is still cached. One referenced slot keeps it.
		 */
		if (!m || !model_swapped(m))
			return;
		folio_unlock(m->f);
		expect_ret(folio_dup_swap(m->f, -1), -EINVAL, o);
		expect_ret(folio_put_swap(m->f, -1), -EINVAL, o);
		expect_ret(folio_free_swap(m->f), -EINVAL, o);
		expect_ret(swap_cache_del_folio(m->f, 0), -EINVAL, o);
		folio_lock(m->f);
		break;
	case 2:	/* a cached folio cannot be allocated or added again */
		if (!m)
			return;
		expect_ret(folio_alloc_swap(m->f), -EINVAL, o);
		expect_ret(swap_cache_add_folio(m->f, E(m->off), NULL), -EINVAL, o);
		break;
	case 3:	/* a subpage past the folio */
		if (!m)
			return;
		expect_ret(folio_dup_swap(m->f, (long)n), -EINVAL, o);
		expect_ret(folio_put_swap(m->f, (long)n + 3), -EINVAL, o);
		break;
	case 4:	/* a shadow with count bits */
		if (!m)
			return;
		expect_ret(swap_cache_del_folio(m->f, 1ULL << 63 | 1), -EINVAL, o);
		break;
	case 5:	/* no such device */
		expect_ret(swap_dup_entry_direct(dead), -ENODEV, UINT64_MAX);
		expect_ret(swap_put_entries_direct(dead, 1), -ENODEV, UINT64_MAX);
		expect_ret(swp_swapcount(dead), -ENODEV, UINT64_MAX);
		expect_ret(swap_free_hibernation_slot(dead), -ENODEV, UINT64_MAX);
		if (swap_alloc_hibernation_slot(MAX_SWAPFILES - 1).val)
			fail(UINT64_MAX, "hibernation slot on a device that is not on");
		break;
	case 6:	/* counts that are not counts */
		o = pick_slot();
		n = 1;
		expect_ret(swap_put_entries_direct(E(o), 0), -EINVAL, o);
		expect_ret(swap_put_entries_direct(E(o), -(long)rnd(5) - 1), -EINVAL, o);
		break;
	case 7:	/* the header */
		o = 0;
		expect_ret(swap_dup_entry_direct(E(0)), -EINVAL, 0);
		expect_ret(swap_put_entries_direct(E(0), 1 + (long)rnd(4)), -EINVAL, 0);
		expect_ret(swp_swapcount(E(0)), -EINVAL, 0);
		break;
	case 8:	/* past the end */
		o = DEV_PAGES - 1 - rnd(4);
		n = 4;
		expect_ret(swap_put_entries_direct(E(o), (long)(DEV_PAGES - o + 1 + rnd(3))), -EINVAL, o);
		expect_ret(swap_dup_entry_direct(E(DEV_PAGES + rnd(100))), -EINVAL, o);
		break;
	default:	/* swp_swapcount and swap_entry_swapped agree with the model */
		o = pick_slot();
		n = 1;
		if (o < DEV_PAGES) {
			long want = slots[o].bad ? -EINVAL : (long)slots[o].count;

			expect_ret(swp_swapcount(E(o)), want, o);
			if (swap_entry_swapped(E(o)) != (slots[o].used && slots[o].count > 0))
				fail(o, "swap_entry_swapped disagrees");
		} else {
			expect_ret(swp_swapcount(E(o)), -EINVAL, o);
		}
		break;
	}
	check_range(o, n);
	if (m)
		check_folio(idx);
}

/* Drive a referenced slot past BIG_COUNT references. */
static void op_big_dup(void)
{
	uint64_t o = UINT64_MAX, k, i;
	int tries;

	for (tries = 0; tries < 64 && nr_inuse; tries++) {
		uint64_t c = inuse_list[rnd(nr_inuse)];

		if (slots[c].count) {
			o = c;
			break;
		}
	}
	if (o == UINT64_MAX)
		return;
	k = BIG_COUNT + rnd(1000);
	snprintf(op_desc, sizeof(op_desc), "%" PRIu64 " dups of %" PRIu64, k, o);
	for (i = 0; i < k; i++) {
		int err = swap_dup_entry_direct(E(o));

		if (err)
			fail(o, "dup %" PRIu64 " of %" PRIu64 " returned %d", i, k, err);
		slots[o].count++;
		model_counted(o);
		if (count_boundary(slots[o].count))
			check_slot(o);
	}
	check_slot(o);
	stats.big_dups++;
	if (nr_big < ARRAY_SIZE(big_slots))
		big_slots[nr_big++] = (uint32_t)o;
}

/* Bring a slot with a big count back down (maybe to free). */
static void op_big_put(void)
{
	unsigned int j = (unsigned int)rnd(nr_big);
	uint64_t o = big_slots[j], k, i;

	big_slots[j] = big_slots[--nr_big];
	if (!slots[o].used || slots[o].count < 1000)
		return;
	k = slots[o].count - rnd(3);
	snprintf(op_desc, sizeof(op_desc), "%" PRIu64 " puts of %" PRIu64, k, o);
	for (i = 0; i < k; i++) {
		int err = swap_put_entries_direct(E(o), 1);

		if (err)
			fail(o, "put %" PRIu64 " of %" PRIu64 " returned %d", i, k, err);
		model_put(o);
		if (count_boundary(slots[o].count))
			check_slot(o);
	}
	check_slot(o);
}

/* Drop every folio and every reference; all slots must come back free. */
static void drain(void)
{
	uint64_t o;

	op_name = "drain";
	while (nr_folios) {
		int32_t idx = nr_folios - 1;
		uint64_t off = folios[idx].off, nr = 1ULL << folios[idx].order;

		snprintf(op_desc, sizeof(op_desc), "folio at %" PRIu64, off);
		expect_ret(swap_cache_del_folio(folios[idx].f, 0), 0, off);
		model_cache_del(idx, 0);
		folio_untrack(idx);
		check_range(off, nr);
	}
	for (o = 1; o < DEV_PAGES; o++) {
		snprintf(op_desc, sizeof(op_desc), "slot %" PRIu64, o);
		while (slots[o].used) {
			expect_ret(swap_put_entries_direct(E(o), 1), 0, o);
			model_put(o);
		}
		check_slot(o);
	}
	sweep();
}

/* Run operation @op (OP_*) once. */
static void td_run_op(unsigned int op)
{
	op_name = op_names[op];
	op_desc[0] = 0;
	stats.ops[op]++;
	switch (op) {
	case OP_ALLOC: op_alloc(); break;
	case OP_FOLIO_DUP: op_folio_dup_put(true); break;
	case OP_FOLIO_PUT: op_folio_dup_put(false); break;
	case OP_CACHE_DEL: op_cache_del(); break;
	case OP_SWAPIN: op_swapin(); break;
	case OP_FREE_SWAP: op_free_swap(); break;
	case OP_DUP_DIRECT: op_dup_direct(); break;
	case OP_PUT_DIRECT: op_put_direct(false); break;
	case OP_HIB_ALLOC: op_hib_alloc(); break;
	case OP_HIB_FREE: op_put_direct(true); break;
	case OP_REPLACE: op_replace(); break;
	case OP_MISUSE: op_misuse(); break;
	case OP_BIG_DUP: op_big_dup(); break;
	case OP_BIG_PUT: op_big_put(); break;
	case OP_WRITEOUT: op_writeout(); break;
	}
}

/*
 * A device of DEV_PAGES slots with design @d ("table" or "legacy") and a
 * model of it with every slot free; the frame pool is made on first use
 * and kept. Runs may follow one another in one process.
 */
static void td_setup(const char *d)
{
	uint64_t o;
	int t;

	design = d;
	legacy = !strcmp(design, "legacy");
	memset(slots, 0, sizeof(slots));
	memset(cont_levels, 0, sizeof(cont_levels));
	memset(&stats, 0, sizeof(stats));
	nr_folios = 0;
	nr_inuse = 0;
	nr_big = 0;
	step = 0;
	op_name = "setup";
	op_desc[0] = 0;
	if (!pool && uswap_frame_pool_create(POOL_FRAMES, &pool))
		fail(UINT64_MAX, "frame pool");
	/* Groups live for the process; each run sets their limits anew:
	 * none, a sixteenth and a quarter of the device. */
	for (o = 0; o < NR_CGS; o++) {
		if (!cgs[o].id && uswap_swap_cgroup_create(USWAP_SWAP_MAX_NONE, &cgs[o].id))
			fail(UINT64_MAX, "uswap_swap_cgroup_create");
		cgs[o].max = o == 0 ? USWAP_SWAP_MAX_NONE : o == 1 ? DEV_PAGES / 16 : DEV_PAGES / 4;
		cgs[o].usage = 0;
		if (uswap_swap_cgroup_set_max(cgs[o].id, cgs[o].max))
			fail(UINT64_MAX, "uswap_swap_cgroup_set_max");
	}
	t = uswap_swapon_mem_design(DEV_PAGES, 0, design);
	if (t < 0)
		fail(UINT64_MAX, "swapon: %d", t);
	type = (unsigned int)t;
	for (o = 0; o < NR_MSLOTS; o++) {
		slots[o].folio = NO_FOLIO;
		slots[o].bad = o == 0 || o >= DEV_PAGES;
	}
	sweep();
}

/* Check everything, give every folio and reference back, swap off: the
 * device must swap off and every frame be free again. */
static void td_finish(void)
{
	int t;

	op_name = "final sweep";
	sweep();
	drain();
	op_name = "swapoff";
	if ((t = uswap_swapoff_type(type)))
		fail(UINT64_MAX, "swapoff returned %d", t);
	if (uswap_frame_pool_free_frames(pool) != POOL_FRAMES)
		fail(UINT64_MAX, "frames leaked: %zu of %d free", uswap_frame_pool_free_frames(pool),
		     POOL_FRAMES);
}

#endif
