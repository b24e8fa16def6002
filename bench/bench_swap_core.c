/* SPDX-License-Identifier: MIT */
/*
 * bench_swap_core: single-thread operation rates of the swap-table core.
 *
 *   workflow oN   folio_alloc_swap + folio_dup_swap + folio_put_swap +
 *                 folio_free_swap on one folio of order N (0, 4, 9);
 *                 reported as cycles/s and slots/s;
 *   dup/put c1    swap_dup_entry_direct + swap_put_entries_direct on an
 *                 uncached slot with count 1 (count 1 -> 2 -> 1, in table);
 *   dup/put cMAX  the same on a slot held at SWP_TB_COUNT_MAX: the count
 *                 lives in the cluster's extend table, which stays. Each
 *                 put looks for a reason to keep the extend table by
 *                 scanning it from slot 0 up to the first overflowing
 *                 slot, so the rate depends on where the slot sits: it is
 *                 measured at offset 0 (best) and 511 (worst) of a cluster;
 *   crossing      the count oscillates COUNT_MAX-1 -> COUNT_MAX -> COUNT_MAX-1:
 *                 each dup allocates the extend table, each put frees it
 *                 (the worst case of the count path);
 *   cache lookup  swap_cache_get_folio hits (+ folio_put of the reference).
 *
 * Each figure: the operation count is calibrated so one run lasts about
 * --ms milliseconds, then --reps runs; median, min and max are printed.
 * With --cpu, runs are timed by the thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID) instead of the wall clock: on a VM whose
 * CPUs other jobs share, the wall clock also counts the time the thread
 * waited for a CPU, which is most of the run-to-run spread.
 * --only PREFIX measures only the figures whose name starts with PREFIX;
 * --ops N runs exactly N operations per run instead of calibrating, for
 * instruction counts under valgrind (run twice with different N and take
 * the difference: the setup cancels out).
 * Usage: bench_swap_core [--reps N] [--ms MS] [--cpu] [--only PREFIX]
 *                        [--ops N] [--json]
 */
#include <errno.h>

#include "swap/swap_internal.h"
#include "benchutil.h"

#define DEV_PAGES	(256 * SWAPFILE_CLUSTER)	/* 512 MiB of in-memory swap */
#define POOL_FRAMES	4096

struct core_ctx {
	struct uswap_frame_pool *pool;
	struct folio *folio;	/* locked; for the workflow and lookups */
	swp_entry_t entry;	/* for the direct dup/put figures */
};

static void die(const char *what, int err)
{
	fprintf(stderr, "bench_swap_core: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

/* The whole slot workflow, @n times, on the locked folio of ctx. */
static void op_workflow(struct core_ctx *c, uint64_t n)
{
	uint64_t i;
	int err;

	for (i = 0; i < n; i++) {
		if ((err = folio_alloc_swap(c->folio)))
			die("folio_alloc_swap", err);
		if ((err = folio_dup_swap(c->folio, -1)))
			die("folio_dup_swap", err);
		if ((err = folio_put_swap(c->folio, -1)))
			die("folio_put_swap", err);
		if ((err = folio_free_swap(c->folio)) != 1)
			die("folio_free_swap", err ? err : -EBUSY);
	}
}

static void op_dup_put(struct core_ctx *c, uint64_t n)
{
	uint64_t i;
	int err;

	for (i = 0; i < n; i++) {
		if ((err = swap_dup_entry_direct(c->entry)))
			die("swap_dup_entry_direct", err);
		if ((err = swap_put_entries_direct(c->entry, 1)))
			die("swap_put_entries_direct", err);
	}
}

static void op_lookup(struct core_ctx *c, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++) {
		struct folio *f = swap_cache_get_folio(c->entry);

		if (f != c->folio)
			die("swap_cache_get_folio: miss", -ENOENT);
		folio_put(f);
	}
}

typedef void (*core_op)(struct core_ctx *c, uint64_t n);

/* CLOCK_MONOTONIC, or CLOCK_THREAD_CPUTIME_ID with --cpu. */
static clockid_t bench_clock = CLOCK_MONOTONIC;
static const char *only_prefix;	/* --only */
static uint64_t fixed_ops;	/* --ops: no calibration */

/* Is the figure @name (a prefix of its rows' names) to be measured? */
static bool wanted(const char *name)
{
	return !only_prefix || !strncmp(name, only_prefix, strlen(only_prefix));
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(bench_clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static double time_op(core_op op, struct core_ctx *c, uint64_t n)
{
	uint64_t t0 = now_ns();

	op(c, n);
	return (double)(now_ns() - t0);
}

/* Operations per second of @op: calibrate, then @reps timed runs. */
static struct bench_stat measure(core_op op, struct core_ctx *c, int reps, uint64_t target_ns)
{
	double rates[BENCH_MAX_REPS];
	uint64_t n = 64;
	double t;
	int i;

	op(c, n);	/* warm up */
	if (fixed_ops) {
		n = fixed_ops;
		goto timed;
	}
	for (;;) {
		t = time_op(op, c, n);
		if (t >= (double)target_ns / 8 || n >= (1ULL << 40))
			break;
		n *= 2;
	}
	n = (uint64_t)((double)n * (double)target_ns / t);
	if (!n)
		n = 1;
timed:
	for (i = 0; i < reps; i++)
		rates[i] = (double)n * 1e9 / time_op(op, c, n);
	return bench_stat_of(rates, reps);
}

static struct bench_stat scale(struct bench_stat s, double k)
{
	s.med *= k;
	s.min *= k;
	s.max *= k;
	return s;
}

/* A slot with @count references, out of the cache (a shadow), as after swap-out. */
static swp_entry_t make_swapped_slot(struct core_ctx *c, long count)
{
	struct folio *f = uswap_folio_alloc(c->pool, 0);
	swp_entry_t e;
	long i;
	int err;

	if (!f)
		die("uswap_folio_alloc", -ENOMEM);
	folio_mark_uptodate(f);
	folio_lock(f);
	if ((err = folio_alloc_swap(f)))
		die("folio_alloc_swap", err);
	e = folio_swap_entry(f);
	if ((err = folio_dup_swap(f, -1)))
		die("folio_dup_swap", err);
	if ((err = swap_cache_del_folio(f, 0)))
		die("swap_cache_del_folio", err);
	folio_unlock(f);
	folio_put(f);
	for (i = 1; i < count; i++)
		if ((err = swap_dup_entry_direct(e)))
			die("swap_dup_entry_direct", err);
	if (swp_swapcount(e) != count)
		die("swp_swapcount: unexpected count", -EINVAL);
	return e;
}

static void drop_slot(swp_entry_t e);

/*
 * A swapped-out slot with @count references at offset @want of its
 * cluster: order-0 allocations walk a cluster in order, so take slots
 * until one lands there, then give back the others.
 */
static swp_entry_t make_swapped_slot_at(struct core_ctx *c, long count, unsigned int want)
{
	enum { MAX_TRIES = 4 * SWAPFILE_CLUSTER };
	static swp_entry_t filler[MAX_TRIES];
	swp_entry_t e = { 0 };
	unsigned int n = 0, i;
	int err;

	for (;;) {
		if (n == MAX_TRIES)
			die("no slot at the wanted cluster offset", -ENOSPC);
		e = make_swapped_slot(c, 1);
		if (swp_offset(e) % SWAPFILE_CLUSTER == want)
			break;
		filler[n++] = e;
	}
	for (i = 0; i < n; i++)
		drop_slot(filler[i]);
	for (i = 1; i < count; i++)
		if ((err = swap_dup_entry_direct(e)))
			die("swap_dup_entry_direct", err);
	return e;
}

static void drop_slot(swp_entry_t e)
{
	long n = swp_swapcount(e);
	int err;

	while (n-- > 0)
		if ((err = swap_put_entries_direct(e, 1)))
			die("swap_put_entries_direct", err);
}

static long nr_extend_tables(int type)
{
	struct uswap_swap_stat st;

	if (uswap_swap_stat((unsigned int)type, &st))
		return -1;
	return (long)st.nr_extend_tables;
}

int main(int argc, char **argv)
{
	static struct bench_report rep = { .program = "bench_swap_core" };
	static const unsigned int orders[] = { 0, 4, 9 };
	struct core_ctx c = { 0 };
	uint64_t target_ns = 200 * 1000000ULL;
	int reps = 7, type, err, i;
	struct bench_stat st;
	char name[64];

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			rep.json = true;
		} else if (!strcmp(argv[i], "--reps")) {
			reps = (int)bench_parse_u64(rep.program, argv[i], argv[i + 1]);
			i++;
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only_prefix = argv[++i];
		} else if (!strcmp(argv[i], "--ops")) {
			fixed_ops = bench_parse_u64(rep.program, argv[i], argv[i + 1]);
			i++;
		} else if (!strcmp(argv[i], "--cpu")) {
			bench_clock = CLOCK_THREAD_CPUTIME_ID;
		} else if (!strcmp(argv[i], "--ms")) {
			target_ns = bench_parse_u64(rep.program, argv[i], argv[i + 1]) * 1000000ULL;
			i++;
		} else {
			fprintf(stderr, "usage: bench_swap_core [--reps N] [--ms MS] [--cpu] "
				"[--only PREFIX] [--ops N] [--json]\n");
			return !!strcmp(argv[i], "--help") && !!strcmp(argv[i], "-h") ? 2 : 0;
		}
	}
	if (reps < BENCH_MIN_REPS || reps > BENCH_MAX_REPS) {
		fprintf(stderr, "bench_swap_core: --reps must be %d..%d\n", BENCH_MIN_REPS,
			BENCH_MAX_REPS);
		return 2;
	}
	if (!target_ns)
		target_ns = 1000000ULL;

	if ((err = uswap_frame_pool_create(POOL_FRAMES, &c.pool)))
		die("uswap_frame_pool_create", err);
	type = uswap_swapon_mem(DEV_PAGES, 0);
	if (type < 0)
		die("uswap_swapon_mem", type);

	/* (a) the folio workflow at orders 0, 4, 9 */
	for (i = 0; i < (int)ARRAY_SIZE(orders); i++) {
		snprintf(name, sizeof(name), "workflow o%u", orders[i]);
		if (!wanted(name))
			continue;
		c.folio = uswap_folio_alloc(c.pool, orders[i]);
		if (!c.folio)
			die("uswap_folio_alloc", -ENOMEM);
		folio_mark_uptodate(c.folio);
		folio_lock(c.folio);
		st = measure(op_workflow, &c, reps, target_ns);
		snprintf(name, sizeof(name), "workflow o%u cycles", orders[i]);
		bench_add(&rep, name, "cycles/s", st);
		snprintf(name, sizeof(name), "workflow o%u slots", orders[i]);
		bench_add(&rep, name, "slots/s", scale(st, (double)(1U << orders[i])));
		folio_unlock(c.folio);
		folio_put(c.folio);
	}

	/* (b) direct dup/put on a count-1 slot: 1 -> 2 -> 1, no extend table */
	if (wanted("dup+put direct, count 1")) {
		c.entry = make_swapped_slot(&c, 1);
		bench_add(&rep, "dup+put direct, count 1", "pairs/s",
			  measure(op_dup_put, &c, reps, target_ns));
		drop_slot(c.entry);
	}

	/* (c) at COUNT_MAX: MAX -> MAX+1 -> MAX in the extend table, which stays */
	for (i = 0; i < 2; i++) {
		unsigned int at = i ? SWAPFILE_CLUSTER - 1 : 0;

		snprintf(name, sizeof(name), "dup+put direct, COUNT_MAX, offset %u", at);
		if (!wanted(name))
			continue;
		c.entry = make_swapped_slot_at(&c, SWP_TB_COUNT_MAX, at);
		if (nr_extend_tables(type) != 1)
			die("expected one extend table at COUNT_MAX", -EINVAL);
		bench_add(&rep, name, "pairs/s", measure(op_dup_put, &c, reps, target_ns));
		drop_slot(c.entry);
	}

	/* (c) crossing: MAX-1 -> MAX (extend table allocated) -> MAX-1 (freed) */
	if (wanted("dup+put direct, crossing MAX-1<->MAX")) {
		c.entry = make_swapped_slot(&c, SWP_TB_COUNT_MAX - 1);
		if (nr_extend_tables(type) != 0)
			die("expected no extend table at COUNT_MAX-1", -EINVAL);
		bench_add(&rep, "dup+put direct, crossing MAX-1<->MAX", "pairs/s",
			  measure(op_dup_put, &c, reps, target_ns));
		if (nr_extend_tables(type) != 0)
			die("extend table left after the crossing", -EINVAL);
		drop_slot(c.entry);
	}

	/* (d) lockless swap cache lookups that hit */
	if (!wanted("swap_cache_get_folio hit"))
		goto out;
	c.folio = uswap_folio_alloc(c.pool, 0);
	if (!c.folio)
		die("uswap_folio_alloc", -ENOMEM);
	folio_mark_uptodate(c.folio);
	folio_lock(c.folio);
	if ((err = folio_alloc_swap(c.folio)))
		die("folio_alloc_swap", err);
	c.entry = folio_swap_entry(c.folio);
	bench_add(&rep, "swap_cache_get_folio hit", "lookups/s",
		  measure(op_lookup, &c, reps, target_ns));
	if ((err = folio_free_swap(c.folio)) != 1)
		die("folio_free_swap", err ? err : -EBUSY);
	folio_unlock(c.folio);
	folio_put(c.folio);
out:
	snprintf(rep.params, sizeof(rep.params),
		 "\"reps\":%d,\"target_ms\":%" PRIu64 ",\"device_pages\":%u,"
		 "\"tb_count_bits\":%d,\"count_max\":%u,\"debug\":%d,\"clock\":\"%s\"",
		 reps, target_ns / 1000000, (unsigned int)DEV_PAGES, USWAP_TB_COUNT_BITS,
		 SWP_TB_COUNT_MAX, USWAP_DEBUG,
		 bench_clock == CLOCK_MONOTONIC ? "wall" : "thread-cpu");
	if (!rep.json)
		printf("bench_swap_core: one thread, in-memory device of %u slots, "
		       "count bits %d (COUNT_MAX %u), USWAP_DEBUG=%d, %d runs of ~%" PRIu64 " ms "
		       "(%s time)\n\n",
		       (unsigned int)DEV_PAGES, USWAP_TB_COUNT_BITS, SWP_TB_COUNT_MAX, USWAP_DEBUG,
		       reps, target_ns / 1000000,
		       bench_clock == CLOCK_MONOTONIC ? "wall" : "thread CPU");
	bench_print(&rep);
	if ((err = uswap_swapoff_type((unsigned int)type)))
		die("uswap_swapoff_type", err);
	uswap_frame_pool_destroy(c.pool);
	return 0;
}
