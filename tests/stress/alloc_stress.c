/* SPDX-License-Identifier: MIT */
/*
 * alloc_stress: several threads allocate, reference, cache and free slots
 * on shared devices at once; then every counter, list and table must agree
 * exactly with what the threads hold.
 *
 * Each thread owns its entries (as an mm owns its page tables) and keeps a
 * private model of their counts; threads also look up random entries of
 * others through the lockless swap cache. USWAP_TEST_OPS (per thread,
 * default 500000), USWAP_TEST_SEED, USWAP_TEST_THREADS (default 2).
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
	uint64_t allocs, enomem, lookups;
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

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	uint64_t n;

	for (n = 0; n < w->ops && !w->failed; n++)
		step(w);
	return NULL;
}

/* Every cluster: count == non-free entries; flag == the list it is on. */
static int check_device(unsigned int type, uint64_t expect_inuse)
{
	struct swap_info_struct *si = atomic_load(&swap_info[type]);
	struct swap_cluster_info *ci;
	unsigned long i, on_lists = 0;
	unsigned int o;
	uint64_t used = 0;
	int bad = 0;

#define WALK(lh, flag) cds_list_for_each_entry(ci, (lh), list) { \
		on_lists++; if (ci->flags != (flag)) { bad = 1; \
		fprintf(stderr, "cluster %lu on list %s has flag %u\n", \
			cluster_index(si, ci), #flag, ci->flags); } }
	uswap_spin_lock(&si->lock);
	WALK(&si->free_clusters, CLUSTER_FLAG_FREE);
	WALK(&si->full_clusters, CLUSTER_FLAG_FULL);
	WALK(&si->discard_clusters, CLUSTER_FLAG_DISCARD);
	for (o = 0; o < SWAP_NR_ORDERS; o++) {
		WALK(&si->nonfull_clusters[o], CLUSTER_FLAG_NONFULL);
		WALK(&si->frag_clusters[o], CLUSTER_FLAG_FRAG);
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
		for (o = 0; swap_cluster_table(ci) && o < SWAPFILE_CLUSTER; o++) {
			uint64_t tb = __swap_table_get(ci, o);

			used += !swp_tb_is_null(tb) && !swp_tb_is_bad(tb);
		}
		uswap_spin_unlock(&ci->lock);
	}
	if (used != (uint64_t)atomic_load(&si->inuse_pages)) {
		fprintf(stderr, "tables hold %" PRIu64 " slots, inuse_pages %ld\n", used,
			atomic_load(&si->inuse_pages));
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
	struct worker *w;
	uint64_t held[2] = { 0, 0 };
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
		       " lookups, %u entries held\n", i, w[i].allocs, w[i].enomem, w[i].lookups,
		       w[i].nr_held);
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
	failed |= check_device((unsigned int)types[0], held[0]);
	failed |= check_device((unsigned int)types[1], held[1]);
	for (i = 0; i < nthreads; i++)
		while (w[i].nr_held)
			drop(&w[i], 0), failed |= w[i].failed;
	failed |= check_device((unsigned int)types[0], 0);
	failed |= check_device((unsigned int)types[1], 0);
	if (uswap_swapoff_type((unsigned int)types[0]) || uswap_swapoff_type((unsigned int)types[1])) {
		fprintf(stderr, "swapoff failed\n");
		failed = 1;
	}
	for (i = 0; i < nthreads; i++)
		uswap_frame_pool_destroy(w[i].pool);
	free(w);
	printf("alloc_stress: %s\n", failed ? "FAILED" : "ok");
	return failed;
}
