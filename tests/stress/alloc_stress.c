/* SPDX-License-Identifier: MIT */
/*
 * alloc_stress: several threads allocate, reference, cache and free slots
 * on shared devices at once; then every counter, list and table must agree
 * exactly with what the threads hold.
 *
 * Each thread owns its entries (as an mm owns its page tables) and keeps a
 * private model of their counts; threads also look up random entries of
 * others through the lockless swap cache.
 *
 * A few slots are shared by all threads (as pages shared by fork are):
 * the main thread holds COUNT_MAX - 2 references on each, and the threads
 * take and drop references of their own on them at once, so that counts
 * keep crossing the in-table maximum in both directions while another
 * thread works on the same slot or cluster. Some are swapped out (alone in
 * a cluster, or side by side in one), some are cached by a folio the
 * threads lock in turn. At the end every count must be the main thread's
 * plus what the threads hold.
 *
 * USWAP_TEST_OPS (per thread, default 500000), USWAP_TEST_SEED,
 * USWAP_TEST_THREADS (default 2).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swap/swap_internal.h"
#include "testutil.h"

#define NR_DEV_PAGES	(64 * SWAPFILE_CLUSTER + 77)
#define MAX_HELD	256

#define NR_SOLO		4	/* shared swapped-out slots, one per cluster */
#define NR_PACKED	4	/* shared swapped-out slots side by side */
#define NR_SHARED	(NR_SOLO + NR_PACKED + 2)	/* + two cached folios */
#define SHARED_MAX_NR	4	/* pages of the largest shared folio */
#define SHARED_CAP	3	/* references a thread holds on a shared slot, at most */

/* A shared folio or slot. Set up before the threads start; read-only then. */
struct shared {
	swp_entry_t entry;	/* first slot */
	struct folio *folio;	/* cached folio (the main thread's), or NULL */
	unsigned int nr;	/* slots */
};

static struct shared shared[NR_SHARED];
/* References the main thread holds on every shared slot: the threads' own
 * take the count across the in-table maximum, whatever its width. */
static const unsigned int shared_base = SWP_TB_COUNT_MAX - 2;

struct held {
	struct folio *folio;	/* cached folio we hold locked, or NULL */
	swp_entry_t entry;
	unsigned int order;
	uint64_t count;		/* references we hold on each slot */
};

struct worker {
	pthread_t tid;
	uint64_t seed;
	uint64_t ops;
	struct uswap_frame_pool *pool;
	struct held held[MAX_HELD];
	unsigned int nr_held;
	uint8_t shared_held[NR_SHARED][SHARED_MAX_NR];	/* our refs on each shared slot */
	uint64_t allocs, enomem, lookups, shared_ops;
	int failed;
};

static int nr_types;
static int types[2];
static const uint64_t dev_pages[2] = { NR_DEV_PAGES, NR_DEV_PAGES / 2 };

#define CHECK(w, cond) do { if (!(cond)) { \
	fprintf(stderr, "alloc_stress: %s:%d: %s failed\n", __FILE__, __LINE__, #cond); \
	(w)->failed = 1; return; } } while (0)

static void drop(struct worker *w, unsigned int i)
{
	struct held *h = &w->held[i];
	long nr = 1L << h->order;

	if (h->folio) {
		/* Give the references back through the folio, then drop it. */
		while (h->count) {
			CHECK(w, folio_put_swap(h->folio, -1) == 0);
			h->count--;
		}
		CHECK(w, folio_free_swap(h->folio) == 1);
		folio_unlock(h->folio);
		folio_put(h->folio);
	} else {
		while (h->count) {
			CHECK(w, swap_put_entries_direct(h->entry, nr) == 0);
			h->count--;
		}
	}
	w->held[i] = w->held[--w->nr_held];
}

static void step(struct worker *w)
{
	uint64_t r = test_rand(&w->seed) % 100;
	struct held *h;
	unsigned int i;

	if (r < 25 && w->nr_held < MAX_HELD) {
		/* Allocate: orders 0, small, and the odd whole cluster. */
		static const unsigned int orders[] = { 0, 0, 0, 0, 1, 2, 4, 4, 9 };
		unsigned int order = orders[test_rand_below(&w->seed, ARRAY_SIZE(orders))];
		struct folio *f = uswap_folio_alloc(w->pool, order);
		int err;

		if (!f)
			return;
		folio_mark_uptodate(f);
		folio_lock(f);
		err = folio_alloc_swap(f);
		if (err) {
			CHECK(w, err == -ENOMEM);
			w->enomem++;
			folio_unlock(f);
			folio_put(f);
			return;
		}
		w->allocs++;
		h = &w->held[w->nr_held++];
		h->folio = f;
		h->entry = folio_swap_entry(f);
		h->order = order;
		h->count = 0;
		CHECK(w, (swp_offset(h->entry) & ((1U << order) - 1)) == 0);
		CHECK(w, swp_offset(h->entry) / SWAPFILE_CLUSTER ==
			 (swp_offset(h->entry) + (1U << order) - 1) / SWAPFILE_CLUSTER);
		return;
	}
	if (!w->nr_held)
		return;
	i = (unsigned int)test_rand_below(&w->seed, w->nr_held);
	h = &w->held[i];
	if (r < 45) {
		/* One more reference: through the folio, or slot by slot (fork). */
		if (h->folio) {
			CHECK(w, folio_dup_swap(h->folio, -1) == 0);
		} else if (h->count) {
			unsigned long k;

			for (k = 0; k < (1UL << h->order); k++)
				CHECK(w, swap_dup_entry_direct(swp_entry(swp_type(h->entry),
						swp_offset(h->entry) + k)) == 0);
		} else {
			return;
		}
		h->count++;
	} else if (r < 60) {
		/* Write-back done: the folio leaves the cache, slots keep counts. */
		if (!h->folio || !h->count)
			return;
		CHECK(w, swap_cache_del_folio(h->folio, 0) == 0);
		folio_unlock(h->folio);
		folio_put(h->folio);
		h->folio = NULL;
	} else if (r < 70) {
		/* Swap-in: a new folio takes the cache; it must win (we own it). */
		struct folio *f;
		int err;

		if (h->folio)
			return;
		f = uswap_folio_alloc(w->pool, h->order);
		if (!f)
			return;
		folio_lock(f);
		err = swap_cache_add_folio(f, h->entry, NULL);
		CHECK(w, err == 0);
		h->folio = f;
	} else if (r < 80) {
		if (!h->count)
			return;
		h->count--;
		if (h->folio)
			CHECK(w, folio_put_swap(h->folio, -1) == 0);
		else
			CHECK(w, swap_put_entries_direct(h->entry, 1L << h->order) == 0);
		if (!h->count && !h->folio)
			w->held[i] = w->held[--w->nr_held];
	} else if (r < 90) {
		/* Look up someone's entry through the lockless cache. */
		unsigned int d = (unsigned int)test_rand_below(&w->seed, nr_types);
		unsigned int t = (unsigned int)types[d];
		uint64_t off = 1 + test_rand_below(&w->seed, dev_pages[d] - 1);
		struct folio *f = swap_cache_get_folio(swp_entry(t, off));

		w->lookups++;
		if (f)
			folio_put(f);
		(void)swap_entry_swapped(swp_entry(t, off));
	} else {
		drop(w, i);
	}
}

/* One reference more or less on slot @k of shared @s, without the folio. */
static void shared_direct(struct worker *w, unsigned int s, unsigned int k)
{
	uint8_t *held = &w->shared_held[s][k];
	swp_entry_t e = swp_entry(swp_type(shared[s].entry), swp_offset(shared[s].entry) + k);

	if (!*held || (*held < SHARED_CAP && test_rand(&w->seed) % 2)) {
		CHECK(w, swap_dup_entry_direct(e) == 0);
		(*held)++;
	} else {
		CHECK(w, swap_put_entries_direct(e, 1) == 0);
		(*held)--;
	}
}

/*
 * One reference more or less on a shared slot or folio: slot by slot
 * (fork, zap), through the locked folio, or on a whole folio's range.
 */
static void shared_step(struct worker *w)
{
	unsigned int s = (unsigned int)test_rand_below(&w->seed, NR_SHARED), k;
	struct shared *sh = &shared[s];
	unsigned int lo = SHARED_CAP, hi = 0;
	uint64_t r = test_rand(&w->seed) % 4;
	int err;

	w->shared_ops++;
	if (!sh->folio || r < 2) {
		shared_direct(w, s, (unsigned int)test_rand_below(&w->seed, sh->nr));
		return;
	}
	for (k = 0; k < sh->nr; k++) {
		lo = USWAP_MIN(lo, w->shared_held[s][k]);
		hi = USWAP_MAX(hi, w->shared_held[s][k]);
	}
	if (r == 2 && hi < SHARED_CAP) {
		/* Unlock before a failed CHECK returns: the others wait on it. */
		folio_lock(sh->folio);
		err = folio_dup_swap(sh->folio, -1);
		folio_unlock(sh->folio);
		CHECK(w, err == 0);
		for (k = 0; k < sh->nr; k++)
			w->shared_held[s][k]++;
	} else if (lo) {
		if (r == 2) {
			folio_lock(sh->folio);
			err = folio_put_swap(sh->folio, -1);
			folio_unlock(sh->folio);
			CHECK(w, err == 0);
		} else {
			CHECK(w, swap_put_entries_direct(sh->entry, sh->nr) == 0);
		}
		for (k = 0; k < sh->nr; k++)
			w->shared_held[s][k]--;
	}
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	uint64_t n;

	for (n = 0; n < w->ops && !w->failed; n++) {
		if (test_rand(&w->seed) % 4)
			step(w);
		else
			shared_step(w);
	}
	return NULL;
}

/* Give back a thread's references on the shared slots. */
static void shared_drop(struct worker *w)
{
	unsigned int s, k;

	for (s = 0; s < NR_SHARED; s++)
		for (k = 0; k < shared[s].nr; k++)
			for (; w->shared_held[s][k]; w->shared_held[s][k]--)
				CHECK(w, swap_put_entries_direct(swp_entry(swp_type(shared[s].entry),
						swp_offset(shared[s].entry) + k), 1) == 0);
}

/*
 * Bring a slot the main thread holds one reference on to shared_base,
 * writing the count field under the cluster lock (at 22 count bits, two
 * million dups per slot would dominate the run).
 */
static int shared_set_base(swp_entry_t e)
{
	struct swap_info_struct *si = get_swap_device(e);
	unsigned int off = swp_offset(e) % SWAPFILE_CLUSTER;
	struct swap_cluster_info *ci;
	uint64_t tb;
	int err = 0;

	if (!si)
		return 1;
	ci = swap_cluster_lock(si, swp_offset(e));
	tb = __swap_table_get(ci, off);
	if ((swp_tb_is_shadow(tb) || swp_tb_is_folio(tb)) && __swp_tb_get_count(tb) == 1)
		__swap_table_set(ci, off, __swp_tb_mk_count(tb, shared_base));
	else
		err = 1;
	swap_cluster_unlock(ci);
	put_swap_device(si);
	return err;
}

/*
 * A folio of @order in the swap cache with one reference on each slot
 * (its own cluster for order 9), locked. Return: the folio, or NULL.
 */
static struct folio *shared_folio(struct uswap_frame_pool *pool, unsigned int order)
{
	struct folio *f = uswap_folio_alloc(pool, order);

	if (!f)
		return NULL;
	folio_mark_uptodate(f);
	folio_lock(f);
	if (folio_alloc_swap(f) || folio_dup_swap(f, -1)) {
		folio_unlock(f);
		folio_put(f);
		return NULL;
	}
	return f;
}

/* The shared slots: four alone in their clusters, four side by side, two
 * cached folios (one and four pages). Return: 0, 1 on failure. */
static int shared_setup(struct uswap_frame_pool *pool)
{
	unsigned int i, k, n = 0;
	struct folio *f;

	for (i = 0; i < NR_SOLO; i++) {
		/* A whole cluster, of which one slot stays swapped out. */
		f = uswap_folio_alloc(pool, 9);
		k = (i * 131 + 7) % SWAPFILE_CLUSTER;
		if (!f)
			return 1;
		folio_mark_uptodate(f);
		folio_lock(f);
		if (folio_alloc_swap(f) || folio_dup_swap(f, k))
			return 1;
		shared[n].entry = swp_entry(swp_type(folio_swap_entry(f)),
					    swp_offset(folio_swap_entry(f)) + k);
		shared[n++].nr = 1;
		if (swap_cache_del_folio(f, 0))
			return 1;
		folio_unlock(f);
		folio_put(f);
	}
	f = shared_folio(pool, 2);
	if (!f)
		return 1;
	for (k = 0; k < NR_PACKED; k++) {
		shared[n].entry = swp_entry(swp_type(folio_swap_entry(f)),
					    swp_offset(folio_swap_entry(f)) + k);
		shared[n++].nr = 1;
	}
	if (swap_cache_del_folio(f, 0))
		return 1;
	folio_unlock(f);
	folio_put(f);
	for (i = 0; i < 2; i++) {
		f = shared_folio(pool, i ? 2 : 0);
		if (!f)
			return 1;
		shared[n].folio = f;
		shared[n].entry = folio_swap_entry(f);
		shared[n++].nr = (unsigned int)folio_nr_pages(f);
		folio_unlock(f);
	}
	for (i = 0; i < NR_SHARED; i++)
		for (k = 0; k < shared[i].nr; k++)
			if (shared_set_base(swp_entry(swp_type(shared[i].entry),
						      swp_offset(shared[i].entry) + k)))
				return 1;
	return 0;
}

/* The main thread's references go; the shared slots are freed. */
static int shared_teardown(void)
{
	unsigned int i, c;
	int failed = 0;

	for (i = 0; i < NR_SHARED; i++) {
		struct folio *f = shared[i].folio;

		if (!f) {
			for (c = 0; c < shared_base; c++)
				failed |= swap_put_entries_direct(shared[i].entry, 1) != 0;
			continue;
		}
		folio_lock(f);
		for (c = 0; c < shared_base; c++)
			failed |= folio_put_swap(f, -1) != 0;
		failed |= folio_free_swap(f) != 1;
		folio_unlock(f);
		folio_put(f);
	}
	return failed;
}

/* Every cluster: count == non-free entries; flag == the list it is on;
 * the extend tables are those the device counts. */
static int check_device(unsigned int type, uint64_t expect_inuse)
{
	struct swap_info_struct *si = atomic_load(&swap_info[type]);
	struct swap_cluster_info *ci;
	unsigned long i, on_lists = 0, ext = 0;
	unsigned int o, pos;
	uint64_t used = 0;
	int bad = 0;

	/* Positions: the links are apart from the clusters (cluster.h). */
#define WALK(lh, flag) cluster_list_for_each(si, pos, (lh)) { \
		ci = link_cluster(si, pos); \
		on_lists++; if (ci->flags != (flag)) { bad = 1; \
		fprintf(stderr, "cluster %lu on list %s has flag %u\n", \
			cluster_index(si, ci), #flag, ci->flags); } }
	uswap_spin_lock(&si->lock);
	WALK(free_clusters(si), CLUSTER_FLAG_FREE);
	WALK(full_clusters(si), CLUSTER_FLAG_FULL);
	WALK(discard_clusters(si), CLUSTER_FLAG_DISCARD);
	for (o = 0; o < SWAP_NR_ORDERS; o++) {
		WALK(nonfull_clusters(si, o), CLUSTER_FLAG_NONFULL);
		WALK(frag_clusters(si, o), CLUSTER_FLAG_FRAG);
	}
	uswap_spin_unlock(&si->lock);
	if (on_lists != si->nr_clusters) {
		fprintf(stderr, "%lu of %lu clusters on lists\n", on_lists, si->nr_clusters);
		bad = 1;
	}
	for (i = 0; i < si->nr_clusters; i++) {
		ci = &si->cluster_info[i];
		uswap_spin_lock(&ci->lock);
		uswap_check_cluster(si, ci);
		if (ci->flags == CLUSTER_FLAG_FULL && ci->count != SWAPFILE_CLUSTER)
			bad = 1;
		if (ci->flags == CLUSTER_FLAG_FREE && ci->count)
			bad = 1;
		ext += ci->extend_table != NULL;
		for (o = 0; swap_cluster_table(ci) && o < SWAPFILE_CLUSTER; o++) {
			uint64_t tb = __swap_table_get(ci, o);

			used += !swp_tb_is_null(tb) && !swp_tb_is_bad(tb);
		}
		uswap_spin_unlock(&ci->lock);
	}
	if (ext != (unsigned long)atomic_load(&si->nr_extend_tables)) {
		fprintf(stderr, "%lu clusters have an extend table, nr_extend_tables %ld\n", ext,
			atomic_load(&si->nr_extend_tables));
		bad = 1;
	}
	if (used != (uint64_t)swap_inuse_pages(si)) {
		fprintf(stderr, "tables hold %" PRIu64 " slots, inuse_pages %ld\n", used,
			swap_inuse_pages(si));
		bad = 1;
	}
	if (expect_inuse != UINT64_MAX && used != expect_inuse) {
		fprintf(stderr, "device %u: %" PRIu64 " slots used, threads hold %" PRIu64 "\n",
			type, used, expect_inuse);
		bad = 1;
	}
	return bad;
}

int main(void)
{
	uint64_t seed = test_seed("alloc_stress");
	uint64_t ops = test_ops(500000);
	const char *t = getenv("USWAP_TEST_THREADS");
	unsigned int nthreads = t ? (unsigned int)atoi(t) : 2, i, j;
	struct uswap_frame_pool *main_pool;
	struct worker *w;
	uint64_t held[2] = { 0, 0 };
	unsigned int s, sk;
	int failed = 0;

	if (nthreads < 2)
		nthreads = 2;
	w = calloc(nthreads, sizeof(*w));
	/* Two devices of equal priority (they take turns), fast. */
	types[0] = uswap_swapon_mem(dev_pages[0], SWAP_FLAG_PREFER | 5);
	types[1] = uswap_swapon_mem(dev_pages[1], SWAP_FLAG_PREFER | 5);
	nr_types = 2;
	if (types[0] < 0 || types[1] < 0) {
		fprintf(stderr, "swapon failed\n");
		return 1;
	}
	if (uswap_frame_pool_create(2 * SWAPFILE_CLUSTER, &main_pool) || shared_setup(main_pool)) {
		fprintf(stderr, "shared slots: setup failed\n");
		return 1;
	}
	for (i = 0; i < nthreads; i++) {
		w[i].seed = seed + i * 0x9e3779b97f4a7c15ULL;
		w[i].ops = ops;
		if (uswap_frame_pool_create(MAX_HELD * 600, &w[i].pool))
			return 1;
		pthread_create(&w[i].tid, NULL, worker_fn, &w[i]);
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(w[i].tid, NULL);
		failed |= w[i].failed;
		printf("thread %u: %" PRIu64 " allocations, %" PRIu64 " -ENOMEM, %" PRIu64
		       " lookups, %" PRIu64 " shared ops, %u entries held\n", i, w[i].allocs,
		       w[i].enomem, w[i].lookups, w[i].shared_ops, w[i].nr_held);
	}
	if (failed)
		return 1;
	/* What the threads hold must be exactly what the devices say. */
	for (i = 0; i < nthreads; i++) {
		for (j = 0; j < w[i].nr_held; j++) {
			struct held *h = &w[i].held[j];
			unsigned long k;

			held[swp_type(h->entry) == (unsigned int)types[0] ? 0 : 1] += 1UL << h->order;
			for (k = 0; k < (1UL << h->order); k++) {
				swp_entry_t e = swp_entry(swp_type(h->entry), swp_offset(h->entry) + k);

				if (swp_swapcount(e) != (long)h->count) {
					fprintf(stderr, "slot %" PRIx64 ": count %ld, thread holds %" PRIu64 "\n",
						e.val, swp_swapcount(e), h->count);
					failed = 1;
				}
			}
		}
	}
	/* The shared slots: the main thread's references plus the threads'. */
	for (s = 0; s < NR_SHARED; s++) {
		held[swp_type(shared[s].entry) == (unsigned int)types[0] ? 0 : 1] += shared[s].nr;
		for (sk = 0; sk < shared[s].nr; sk++) {
			swp_entry_t e = swp_entry(swp_type(shared[s].entry),
						  swp_offset(shared[s].entry) + sk);
			long want = shared_base;

			for (i = 0; i < nthreads; i++)
				want += w[i].shared_held[s][sk];
			if (swp_swapcount(e) != want) {
				fprintf(stderr, "shared slot %" PRIx64 ": count %ld, main and threads hold %ld\n",
					e.val, swp_swapcount(e), want);
				failed = 1;
			}
		}
	}
	failed |= check_device((unsigned int)types[0], held[0]);
	failed |= check_device((unsigned int)types[1], held[1]);
	for (i = 0; i < nthreads; i++) {
		while (w[i].nr_held)
			drop(&w[i], 0), failed |= w[i].failed;
		shared_drop(&w[i]);
		failed |= w[i].failed;
	}
	failed |= shared_teardown();
	failed |= check_device((unsigned int)types[0], 0);
	failed |= check_device((unsigned int)types[1], 0);
	if (uswap_swapoff_type((unsigned int)types[0]) || uswap_swapoff_type((unsigned int)types[1])) {
		fprintf(stderr, "swapoff failed\n");
		failed = 1;
	}
	for (i = 0; i < nthreads; i++)
		uswap_frame_pool_destroy(w[i].pool);
	uswap_frame_pool_destroy(main_pool);
	free(w);
	printf("alloc_stress: %s\n", failed ? "FAILED" : "ok");
	return failed;
}
