/* SPDX-License-Identifier: MIT */
/*
 * bench_alloc: the cluster allocator.
 *
 *   scaling        alloc + free (folio_alloc_swap + folio_free_swap) per
 *                  second with 1 and 2 threads, and the ratio 2T / 1T, for
 *                  an order-0 load and a mixed load (each folio order 0, 4
 *                  or 9 with equal probability). Each thread owns a frame
 *                  pool and a batch of locked folios; it gives the whole
 *                  batch slots, then frees them all, repeatedly, for --ms.
 *                  1T and 2T runs alternate, --reps times each. Each rate
 *                  is also taken per CPU-second: every thread's pairs over
 *                  its own CLOCK_THREAD_CPUTIME_ID, summed over the threads
 *                  (the rate the threads would reach with a CPU each, which
 *                  a loaded machine does not give them), and "CPUs used" is
 *                  the threads' CPU time over the wall time of the 2T run.
 *                  --load o0|mixed keeps one load; --threads 1|2 times only
 *                  runs with that many threads (no ratio): one configuration
 *                  alone, to profile it. --devices 2 gives each thread a
 *                  device of its own (thread t allocates only on device t):
 *                  nothing of a device is shared, only the global counts
 *                  and the avail list, the ceiling of what sharing one
 *                  device costs.
 *   fragmentation  a device of --clusters clusters is filled to 90% by
 *                  random allocations (order k with weight 2^(9-k): every
 *                  order brings the same number of slots on average) mixed
 *                  with random frees (60% / 40%); allocated slots are
 *                  swapped out (count 1, not cached). Then 1000 order-4 and
 *                  1000 order-9 folio_alloc_swap attempts, each success
 *                  freed at once so the fill stays at 90%. One fill per
 *                  run, run r seeded with --seed + r.
 *   metadata       swap on a 1 TiB (2^28 slot) in-memory area: static bytes
 *                  (the cluster array) and bytes per slot beside the old
 *                  swap_map's 1 byte per slot; then the dynamic bytes (swap
 *                  tables) with N clusters in use (one order-9 folio each,
 *                  swapped out).
 *
 * Usage: bench_alloc [--reps N] [--ms MS] [--seed S] [--clusters C]
 *                    [--only scaling|frag|meta] [--load o0|mixed]
 *                    [--threads 1|2] [--devices 1|2] [--json]
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "swap/swap_internal.h"
#include "benchutil.h"

#define SCALE_DEV_PAGES	(512 * SWAPFILE_CLUSTER)
#define BATCH		64
#define MAX_THREADS	2

static void die(const char *what, int err)
{
	fprintf(stderr, "bench_alloc: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

/* ---- scaling ---- */

struct worker {
	pthread_t tid;
	struct uswap_frame_pool *pool;
	struct folio *folios[BATCH];	/* locked, allocated once */
	uint64_t duration_ns;
	pthread_barrier_t *start;
	uint64_t pairs, slots;		/* alloc + free pairs done, slots they covered */
	double rate_pairs, rate_slots;	/* per second */
	double cpu_pairs, cpu_slots;	/* per second of this thread's CPU time */
	uint64_t wall_ns, cpu_ns;
	int only_type;			/* the device to allocate on, or -1: any */
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* folio_alloc_swap(), or on the worker's own device only (--devices 2). */
static int worker_alloc(struct worker *w, struct folio *folio)
{
	swp_entry_t entry;

	if (w->only_type < 0)
		return folio_alloc_swap(folio);
	return swap_alloc_slots(folio, folio_order(folio), false, w->only_type, &entry);
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	uint64_t t0, t1, c0, c1, deadline, slots = 0, pairs = 0;
	unsigned int i;
	int err;

	pthread_barrier_wait(w->start);
	c0 = thread_cpu_ns();
	t0 = bench_now_ns();
	deadline = t0 + w->duration_ns;
	do {
		for (i = 0; i < BATCH; i++)
			if ((err = worker_alloc(w, w->folios[i])))
				die("folio_alloc_swap (device too small?)", err);
		for (i = 0; i < BATCH; i++)
			if ((err = folio_free_swap(w->folios[i])) != 1)
				die("folio_free_swap", err ? err : -EBUSY);
		pairs += BATCH;
		for (i = 0; i < BATCH; i++)
			slots += folio_nr_pages(w->folios[i]);
		t1 = bench_now_ns();
	} while (t1 < deadline);
	c1 = thread_cpu_ns();
	if (c1 == c0)
		c1++;
	w->wall_ns = t1 - t0;
	w->cpu_ns = c1 - c0;
	w->cpu_pairs = (double)pairs * 1e9 / (double)(c1 - c0);
	w->cpu_slots = (double)slots * 1e9 / (double)(c1 - c0);
	w->pairs = pairs;
	w->slots = slots;
	w->rate_pairs = (double)pairs * 1e9 / (double)(t1 - t0);
	w->rate_slots = (double)slots * 1e9 / (double)(t1 - t0);
	return NULL;
}

/* What one timed run gives. */
struct scaling_result {
	double pairs_s, slots_s;	/* wall clock, summed over the threads */
	double cpu_pairs_s, cpu_slots_s;	/* per thread CPU-second, summed */
	double cpus_used;		/* the threads' CPU time / wall time */
};

/* One timed run with @nr threads. */
static void scaling_run(struct worker *ws, unsigned int nr, uint64_t duration_ns,
			struct scaling_result *res)
{
	pthread_barrier_t start;
	uint64_t cpu = 0, wall = 0;
	unsigned int i;
	int err;

	pthread_barrier_init(&start, NULL, nr);
	memset(res, 0, sizeof(*res));
	for (i = 0; i < nr; i++) {
		ws[i].start = &start;
		ws[i].duration_ns = duration_ns;
		if ((err = pthread_create(&ws[i].tid, NULL, worker_run, &ws[i])))
			die("pthread_create", err);
	}
	for (i = 0; i < nr; i++) {
		pthread_join(ws[i].tid, NULL);
		res->pairs_s += ws[i].rate_pairs;
		res->slots_s += ws[i].rate_slots;
		res->cpu_pairs_s += ws[i].cpu_pairs;
		res->cpu_slots_s += ws[i].cpu_slots;
		cpu += ws[i].cpu_ns;
		if (ws[i].wall_ns > wall)
			wall = ws[i].wall_ns;
	}
	res->cpus_used = wall ? (double)cpu / (double)wall : 0;
	pthread_barrier_destroy(&start);
}

/*
 * @load: -1 both loads, else 0 (o0) or 1 (mixed); @only_threads: 0 both,
 * else time only runs with that many threads; @devices: 2 gives each
 * thread a device of its own.
 */
static void bench_scaling(struct bench_report *rep, int reps, uint64_t duration_ns, uint64_t seed,
			  int load, unsigned int only_threads, unsigned int devices)
{
	static const char *const loads[] = { "o0", "mixed o0/4/9" };
	struct worker ws[MAX_THREADS];
	unsigned int l, t, i;
	int type, type2 = -1, r, err;

	for (l = 0; l < ARRAY_SIZE(loads); l++) {
		double p1[BENCH_MAX_REPS], p2[BENCH_MAX_REPS], s1[BENCH_MAX_REPS];
		double s2[BENCH_MAX_REPS], ratio[BENCH_MAX_REPS], sratio[BENCH_MAX_REPS];
		double c1[BENCH_MAX_REPS], c2[BENCH_MAX_REPS], cratio[BENCH_MAX_REPS];
		double csratio[BENCH_MAX_REPS], used[BENCH_MAX_REPS];
		struct scaling_result a, b;
		uint64_t rnd = seed;
		char name[64];

		if (load >= 0 && (unsigned int)load != l)
			continue;
		type = uswap_swapon_mem(SCALE_DEV_PAGES, 0);
		if (type < 0)
			die("uswap_swapon_mem", type);
		memset(ws, 0, sizeof(ws));
		ws[0].only_type = ws[1].only_type = -1;
		if (devices == 2) {
			type2 = uswap_swapon_mem(SCALE_DEV_PAGES, 0);
			if (type2 < 0)
				die("uswap_swapon_mem", type2);
			ws[0].only_type = type;
			ws[1].only_type = type2;
		}
		for (t = 0; t < MAX_THREADS; t++) {
			if ((err = uswap_frame_pool_create(BATCH << USWAP_MAX_ORDER, &ws[t].pool)))
				die("uswap_frame_pool_create", err);
			/* The same order sequence for every thread: equal work. */
			rnd = seed;
			for (i = 0; i < BATCH; i++) {
				static const unsigned int mixed[] = { 0, 4, 9 };
				unsigned int order = l ? mixed[bench_rand(&rnd) % 3] : 0;

				ws[t].folios[i] = uswap_folio_alloc(ws[t].pool, order);
				if (!ws[t].folios[i])
					die("uswap_folio_alloc", -ENOMEM);
				folio_mark_uptodate(ws[t].folios[i]);
				folio_lock(ws[t].folios[i]);
			}
		}
		/* Warm-up run: first-touch of tables and thread start-up costs. */
		scaling_run(ws, MAX_THREADS, duration_ns / 4, &a);
		for (r = 0; r < reps && only_threads; r++) {
			scaling_run(ws, only_threads, duration_ns, &a);
			p1[r] = a.pairs_s;
			c1[r] = a.cpu_pairs_s;
		}
		if (only_threads) {
			snprintf(name, sizeof(name), "%s %u thread%s", loads[l], only_threads,
				 only_threads > 1 ? "s" : "");
			bench_add(rep, name, "alloc+free/s", bench_stat_of(p1, reps));
			snprintf(name, sizeof(name), "%s %u thread%s per CPU-s", loads[l],
				 only_threads, only_threads > 1 ? "s" : "");
			bench_add(rep, name, "alloc+free/cpu-s", bench_stat_of(c1, reps));
			goto out;
		}
		for (r = 0; r < reps; r++) {
			scaling_run(ws, 1, duration_ns, &a);
			scaling_run(ws, 2, duration_ns, &b);
			p1[r] = a.pairs_s;
			p2[r] = b.pairs_s;
			s1[r] = a.slots_s;
			s2[r] = b.slots_s;
			ratio[r] = p2[r] / p1[r];
			sratio[r] = s2[r] / s1[r];
			c1[r] = a.cpu_pairs_s;
			c2[r] = b.cpu_pairs_s;
			cratio[r] = c2[r] / c1[r];
			csratio[r] = b.cpu_slots_s / a.cpu_slots_s;
			used[r] = b.cpus_used;
		}
		snprintf(name, sizeof(name), "%s 1 thread", loads[l]);
		bench_add(rep, name, "alloc+free/s", bench_stat_of(p1, reps));
		snprintf(name, sizeof(name), "%s 2 threads", loads[l]);
		bench_add(rep, name, "alloc+free/s", bench_stat_of(p2, reps));
		snprintf(name, sizeof(name), "%s scaling 2T/1T", loads[l]);
		bench_add(rep, name, "ratio", bench_stat_of(ratio, reps));
		snprintf(name, sizeof(name), "%s 1 thread per CPU-s", loads[l]);
		bench_add(rep, name, "alloc+free/cpu-s", bench_stat_of(c1, reps));
		snprintf(name, sizeof(name), "%s 2 threads per CPU-s", loads[l]);
		bench_add(rep, name, "alloc+free/cpu-s", bench_stat_of(c2, reps));
		snprintf(name, sizeof(name), "%s scaling 2T/1T per CPU-s", loads[l]);
		bench_add(rep, name, "ratio", bench_stat_of(cratio, reps));
		snprintf(name, sizeof(name), "%s 2 threads: CPUs used", loads[l]);
		bench_add(rep, name, "CPUs", bench_stat_of(used, reps));
		if (l) {
			snprintf(name, sizeof(name), "%s slots scaling 2T/1T per CPU-s", loads[l]);
			bench_add(rep, name, "ratio", bench_stat_of(csratio, reps));
			snprintf(name, sizeof(name), "%s 1 thread slots", loads[l]);
			bench_add(rep, name, "slots/s", bench_stat_of(s1, reps));
			snprintf(name, sizeof(name), "%s 2 threads slots", loads[l]);
			bench_add(rep, name, "slots/s", bench_stat_of(s2, reps));
			snprintf(name, sizeof(name), "%s slots scaling 2T/1T", loads[l]);
			bench_add(rep, name, "ratio", bench_stat_of(sratio, reps));
		}
out:
		for (t = 0; t < MAX_THREADS; t++) {
			for (i = 0; i < BATCH; i++) {
				folio_unlock(ws[t].folios[i]);
				folio_put(ws[t].folios[i]);
			}
			uswap_frame_pool_destroy(ws[t].pool);
		}
		if ((err = uswap_swapoff_type((unsigned int)type)))
			die("uswap_swapoff_type", err);
		if (type2 >= 0 && (err = uswap_swapoff_type((unsigned int)type2)))
			die("uswap_swapoff_type", err);
	}
}

/* ---- fragmentation ---- */

struct held_slots {
	swp_entry_t entry;
	unsigned int order;
};

/*
 * Give 2^order slots to a folio, take one reference and let the folio leave
 * the cache: the slots stay as shadows with count 1, as after swap-out.
 * Return: 0, -ENOMEM (no slot), other errors die.
 */
static int swap_out_one(struct uswap_frame_pool *pool, unsigned int order, swp_entry_t *out)
{
	struct folio *f = uswap_folio_alloc(pool, order);
	int err;

	if (!f)
		die("uswap_folio_alloc", -ENOMEM);
	folio_mark_uptodate(f);
	folio_lock(f);
	err = folio_alloc_swap(f);
	if (!err) {
		*out = folio_swap_entry(f);
		if ((err = folio_dup_swap(f, -1)))
			die("folio_dup_swap", err);
		if ((err = swap_cache_del_folio(f, 0)))
			die("swap_cache_del_folio", err);
	} else if (err != -ENOMEM) {
		die("folio_alloc_swap", err);
	}
	folio_unlock(f);
	folio_put(f);
	return err;
}

/* Order k with weight 2^(9-k): small orders dominate by count. */
static unsigned int random_order(uint64_t *rnd)
{
	uint64_t x = bench_rand(rnd) % ((1U << SWAP_NR_ORDERS) - 1);	/* 0..1022 */
	unsigned int k = 0;

	/* Weights 512, 256, ..., 1 in that order. */
	while (x >= (512U >> k)) {
		x -= 512U >> k;
		k++;
	}
	return k;
}

/* Attempts of @order allocations in the current state, each freed at once. */
static double attempt_rate(struct uswap_frame_pool *pool, unsigned int order, unsigned int tries)
{
	struct folio *f = uswap_folio_alloc(pool, order);
	unsigned int i, ok = 0;
	int err;

	if (!f)
		die("uswap_folio_alloc", -ENOMEM);
	folio_mark_uptodate(f);
	folio_lock(f);
	for (i = 0; i < tries; i++) {
		err = folio_alloc_swap(f);
		if (err == -ENOMEM)
			continue;
		if (err)
			die("folio_alloc_swap", err);
		ok++;
		if ((err = folio_free_swap(f)) != 1)
			die("folio_free_swap", err ? err : -EBUSY);
	}
	folio_unlock(f);
	folio_put(f);
	return (double)ok / tries;
}

/*
 * Clusters entirely free, and free naturally aligned 16-slot runs anywhere
 * (whether or not the allocator may use them for order 4: it only puts an
 * order-4 folio in an empty cluster or one already serving order 4).
 */
static void frag_census(int type, double *free_clusters, double *free_o4_runs,
			double *free_o4_runs_o4_clusters)
{
	struct swap_info_struct *si = atomic_load(&swap_info[type]);
	unsigned long c;
	unsigned int off, i;
	uint64_t fc = 0, runs = 0, runs4 = 0;

	for (c = 0; c < si->nr_clusters; c++) {
		struct swap_cluster_info *ci = swap_cluster_lock(si, (uint64_t)c * SWAPFILE_CLUSTER);

		if (!ci->count) {
			fc++;
		} else {
			for (off = 0; off < SWAPFILE_CLUSTER; off += 16) {
				for (i = 0; i < 16; i++)
					if (!swp_tb_is_null(__swap_table_get(ci, off + i)))
						break;
				if (i == 16) {
					runs++;
					if (ci->order == 4)
						runs4++;
				}
			}
		}
		swap_cluster_unlock(ci);
	}
	*free_clusters = (double)fc;
	*free_o4_runs = (double)runs;
	*free_o4_runs_o4_clusters = (double)runs4;
}

static void bench_frag(struct bench_report *rep, int reps, uint64_t seed, uint64_t nr_clusters)
{
	double o4[BENCH_MAX_REPS], o9[BENCH_MAX_REPS], fill[BENCH_MAX_REPS];
	double failed[BENCH_MAX_REPS], fcl[BENCH_MAX_REPS], runs[BENCH_MAX_REPS];
	double runs4[BENCH_MAX_REPS], ops[BENCH_MAX_REPS];
	uint64_t dev_pages = nr_clusters * SWAPFILE_CLUSTER, cap = dev_pages;
	struct held_slots *held = malloc(cap * sizeof(*held));
	struct uswap_frame_pool *pool;
	struct uswap_swap_stat st;
	int r, type, err;

	if (!held)
		die("malloc", -ENOMEM);
	if ((err = uswap_frame_pool_create(4 << USWAP_MAX_ORDER, &pool)))
		die("uswap_frame_pool_create", err);
	for (r = 0; r < reps; r++) {
		uint64_t rnd = seed + (uint64_t)r, nr_held = 0, nops = 0, nfail = 0, target;

		type = uswap_swapon_mem(dev_pages, 0);
		if (type < 0)
			die("uswap_swapon_mem", type);
		uswap_swap_stat((unsigned int)type, &st);
		target = st.pages * 9 / 10;
		while (st.inuse_pages < target) {
			nops++;
			if (!nr_held || bench_rand(&rnd) % 100 < 60) {
				unsigned int order = random_order(&rnd);
				swp_entry_t e;

				if (swap_out_one(pool, order, &e)) {
					nfail++;
				} else {
					held[nr_held].entry = e;
					held[nr_held].order = order;
					nr_held++;
				}
			} else {
				uint64_t i = bench_rand(&rnd) % nr_held;

				if ((err = swap_put_entries_direct(held[i].entry, 1L << held[i].order)))
					die("swap_put_entries_direct", err);
				held[i] = held[--nr_held];
			}
			uswap_swap_stat((unsigned int)type, &st);
		}
		fill[r] = (double)st.inuse_pages / (double)st.pages;
		failed[r] = (double)nfail;
		ops[r] = (double)nops;
		frag_census(type, &fcl[r], &runs[r], &runs4[r]);
		o4[r] = attempt_rate(pool, 4, 1000);
		o9[r] = attempt_rate(pool, 9, 1000);
		while (nr_held) {
			nr_held--;
			if ((err = swap_put_entries_direct(held[nr_held].entry,
							   1L << held[nr_held].order)))
				die("swap_put_entries_direct", err);
		}
		if ((err = uswap_swapoff_type((unsigned int)type)))
			die("uswap_swapoff_type", err);
	}
	bench_add(rep, "frag: fill reached", "fraction", bench_stat_of(fill, reps));
	bench_add(rep, "frag: fill ops (alloc+free)", "ops", bench_stat_of(ops, reps));
	bench_add(rep, "frag: fill allocs failed (ENOMEM)", "allocs", bench_stat_of(failed, reps));
	bench_add(rep, "frag: free clusters at 90%", "clusters", bench_stat_of(fcl, reps));
	bench_add(rep, "frag: free aligned 16-runs", "runs", bench_stat_of(runs, reps));
	bench_add(rep, "frag: ... of them in order-4 clusters", "runs", bench_stat_of(runs4, reps));
	bench_add(rep, "frag: order-4 success at 90%", "fraction", bench_stat_of(o4, reps));
	bench_add(rep, "frag: order-9 success at 90%", "fraction", bench_stat_of(o9, reps));
	uswap_frame_pool_destroy(pool);
	free(held);
}

/* ---- metadata ---- */

static long rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size, res = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &size, &res) != 2)
		res = -1;
	fclose(f);
	return res < 0 ? -1 : res * 4096;
}

static void bench_meta(struct bench_report *rep, int reps)
{
	static const uint64_t touch[] = { 1, 64, 4096 };
	const uint64_t nr_pages = 1ULL << 28;	/* 1 TiB of 4 KiB slots */
	double swapon_ms[BENCH_MAX_REPS], rss_mib = 0, first_ms = 0;
	struct uswap_frame_pool *pool;
	struct uswap_swap_stat st;
	swp_entry_t *entries;
	unsigned int k;
	uint64_t i;
	char name[64];
	int r, type = -1, err;
	long rss0;

	/* swapon time, and the resident memory it adds (last run's) */
	for (r = 0; r < reps; r++) {
		uint64_t t0;

		rss0 = rss_bytes();
		t0 = bench_now_ns();
		type = uswap_swapon_mem(nr_pages, 0);
		swapon_ms[r] = (double)(bench_now_ns() - t0) / 1e6;
		if (type < 0)
			die("uswap_swapon_mem 2^28", type);
		/*
		 * Only the first swapon maps fresh memory: later ones reuse
		 * what the allocator kept after swapoff freed the array (glibc
		 * raises its mmap threshold after such a free).
		 */
		if (!r) {
			rss_mib = (double)(rss_bytes() - rss0) / (1 << 20);
			first_ms = swapon_ms[0];
		}
		if (r < reps - 1 && (err = uswap_swapoff_type((unsigned int)type)))
			die("uswap_swapoff_type", err);
	}
	if ((err = uswap_swap_stat((unsigned int)type, &st)))
		die("uswap_swap_stat", err);
	bench_add_value(rep, "meta: slots", "slots", (double)st.max);
	bench_add_value(rep, "meta: clusters", "clusters", (double)st.nr_clusters);
	bench_add_value(rep, "meta: sizeof(swap_cluster_info)", "bytes",
			(double)sizeof(struct swap_cluster_info));
	bench_add_value(rep, "meta: static bytes", "bytes", (double)st.static_bytes);
	bench_add_value(rep, "meta: static bytes per slot", "bytes/slot",
			(double)st.static_bytes / (double)st.max);
	bench_add_value(rep, "meta: swap_map minimum (1 B/slot)", "bytes", (double)st.max);
	bench_add_value(rep, "meta: swap_map / static", "ratio",
			(double)st.max / (double)st.static_bytes);
	bench_add_value(rep, "meta: dynamic bytes at swapon", "bytes", (double)st.dynamic_bytes);
	bench_add_value(rep, "meta: RSS added by first swapon", "MiB", rss_mib);
	bench_add_value(rep, "meta: first swapon time", "ms", first_ms);
	bench_add(rep, "meta: swapon time (all runs)", "ms", bench_stat_of(swapon_ms, reps));

	if ((err = uswap_frame_pool_create(1 << USWAP_MAX_ORDER, &pool)))
		die("uswap_frame_pool_create", err);
	entries = calloc(touch[ARRAY_SIZE(touch) - 1], sizeof(*entries));
	if (!entries)
		die("calloc", -ENOMEM);
	for (k = 0, i = 0; k < ARRAY_SIZE(touch); k++) {
		for (; i < touch[k]; i++)
			if ((err = swap_out_one(pool, USWAP_MAX_ORDER, &entries[i])))
				die("swap_out_one", err);
		uswap_swap_stat((unsigned int)type, &st);
		snprintf(name, sizeof(name), "meta: dynamic bytes, %" PRIu64 " clusters", touch[k]);
		bench_add_value(rep, name, "bytes", (double)st.dynamic_bytes);
		snprintf(name, sizeof(name), "meta: ... per slot in use, %" PRIu64, touch[k]);
		bench_add_value(rep, name, "bytes/slot",
				(double)st.dynamic_bytes / (double)st.inuse_pages);
	}
	while (i--)
		if ((err = swap_put_entries_direct(entries[i], 1L << USWAP_MAX_ORDER)))
			die("swap_put_entries_direct", err);
	free(entries);
	uswap_frame_pool_destroy(pool);
	if ((err = uswap_swapoff_type((unsigned int)type)))
		die("uswap_swapoff_type", err);
}

int main(int argc, char **argv)
{
	static struct bench_report rep = { .program = "bench_alloc" };
	uint64_t duration_ns = 300 * 1000000ULL, seed = 1, nr_clusters = 1024;
	const char *only = NULL;
	unsigned int only_threads = 0, devices = 1;
	int reps = 5, i, load = -1;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--json")) {
			rep.json = true;
		} else if (!strcmp(a, "--reps")) {
			reps = (int)bench_parse_u64(rep.program, a, argv[++i]);
		} else if (!strcmp(a, "--ms")) {
			duration_ns = bench_parse_u64(rep.program, a, argv[++i]) * 1000000ULL;
		} else if (!strcmp(a, "--seed")) {
			seed = bench_parse_u64(rep.program, a, argv[++i]);
		} else if (!strcmp(a, "--clusters")) {
			nr_clusters = bench_parse_u64(rep.program, a, argv[++i]);
		} else if (!strcmp(a, "--only") && i + 1 < argc) {
			only = argv[++i];
		} else if (!strcmp(a, "--load") && i + 1 < argc) {
			i++;
			load = !strcmp(argv[i], "o0") ? 0 : !strcmp(argv[i], "mixed") ? 1 : -2;
			if (load == -2) {
				fprintf(stderr, "bench_alloc: --load o0|mixed\n");
				return 2;
			}
		} else if (!strcmp(a, "--threads")) {
			only_threads = (unsigned int)bench_parse_u64(rep.program, a, argv[++i]);
			if (!only_threads || only_threads > MAX_THREADS) {
				fprintf(stderr, "bench_alloc: --threads 1..%d\n", MAX_THREADS);
				return 2;
			}
		} else if (!strcmp(a, "--devices")) {
			devices = (unsigned int)bench_parse_u64(rep.program, a, argv[++i]);
			if (devices != 1 && devices != 2) {
				fprintf(stderr, "bench_alloc: --devices 1|2\n");
				return 2;
			}
		} else {
			fprintf(stderr, "usage: bench_alloc [--reps N] [--ms MS] [--seed S] "
					"[--clusters C] [--only scaling|frag|meta] [--load o0|mixed] "
					"[--threads 1|2] [--devices 1|2] [--json]\n");
			return strcmp(a, "--help") && strcmp(a, "-h") ? 2 : 0;
		}
	}
	if (reps < BENCH_MIN_REPS || reps > BENCH_MAX_REPS) {
		fprintf(stderr, "bench_alloc: --reps must be %d..%d\n", BENCH_MIN_REPS,
			BENCH_MAX_REPS);
		return 2;
	}
	if (nr_clusters < 4 || nr_clusters > (1U << 22)) {
		fprintf(stderr, "bench_alloc: --clusters must be 4..%u\n", 1U << 22);
		return 2;
	}
	if (only && strcmp(only, "scaling") && strcmp(only, "frag") && strcmp(only, "meta")) {
		fprintf(stderr, "bench_alloc: --only scaling|frag|meta\n");
		return 2;
	}
	if (!duration_ns)
		duration_ns = 1000000ULL;
	snprintf(rep.params, sizeof(rep.params),
		 "\"reps\":%d,\"run_ms\":%" PRIu64 ",\"seed\":%" PRIu64 ",\"frag_clusters\":%" PRIu64
		 ",\"batch\":%d,\"debug\":%d,\"devices\":%u",
		 reps, duration_ns / 1000000, seed, nr_clusters, BATCH, USWAP_DEBUG, devices);
	if (!only || !strcmp(only, "scaling"))
		bench_scaling(&rep, reps, duration_ns, seed, load, only_threads, devices);
	if (!only || !strcmp(only, "frag"))
		bench_frag(&rep, reps, seed, nr_clusters);
	if (!only || !strcmp(only, "meta"))
		bench_meta(&rep, reps);
	if (!rep.json)
		printf("bench_alloc: USWAP_DEBUG=%d, %d runs, scaling runs of %" PRIu64
		       " ms with batches of %d folios, fragmentation on %" PRIu64
		       " clusters from seed %" PRIu64 "\n\n",
		       USWAP_DEBUG, reps, duration_ns / 1000000, BATCH, nr_clusters, seed);
	bench_print(&rep);
	return 0;
}
