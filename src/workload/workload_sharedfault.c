/* SPDX-License-Identifier: MIT */
/*
 * sharedfault: many threads fault the same swapped-out entries at the same
 * moment, the contention where the two designs' swap-in synchronization
 * differs most (the old design's SWAP_HAS_CACHE bit lock with its
 * 1-jiffy waits and fault retries; the new design's swap cache add, where
 * the loser takes the winner's folio).
 *
 * A parent address space writes region A, forks procs - 1 children (every
 * entry of A then has swap count procs once it is swapped out), and maps
 * region B after the fork (its entries keep count 1). Each round, the main
 * thread swaps everything out (uswap_mem_reclaim until no page is
 * resident), then releases all worker threads at once: @threads threads
 * in each process read region A page by page in the same order, and the
 * parent's threads read region B as well, so that every entry is faulted
 * by several threads (of one process and of several) together. Every read
 * is checked.
 *
 * Figures: faults_per_s (page reads per second of round time, all
 * threads), fault_p50_us and fault_p99_us (latency of a page read that
 * found the page swapped out or being swapped in, sampled), rounds, procs,
 * threads. The swap layer's retries are in has_cache_retries (teardown).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/workload_internal.h"
#include "util/alloc.h"

#define SF_MAX_PROCS		16
#define SF_MAX_THREADS		64
#define SF_SAMPLES		8192	/* latency samples kept per thread */

struct sf_shared;

struct sf_worker {
	struct sf_shared *sh;
	struct uswap_mm *mm;
	bool parent;
	pthread_t tid;
	uint64_t reads;
	unsigned int nr_samples, sample_next;
	double lat[SF_SAMPLES];		/* microseconds */
};

struct sf_shared {
	struct wl_env *env;
	uint64_t addr_a, nr_a, addr_b, nr_b;
	pthread_barrier_t start, end;
	pthread_mutex_t gate_lock;	/* gate: workers start once the barriers exist */
	pthread_cond_t gate_cond;
	bool gate_open;
	_Atomic bool stop;
};

/* Keep a latency sample; past SF_SAMPLES, overwrite round-robin. */
static void sf_sample(struct sf_worker *w, double us)
{
	w->lat[w->sample_next] = us;
	w->sample_next = (w->sample_next + 1) % SF_SAMPLES;
	if (w->nr_samples < SF_SAMPLES)
		w->nr_samples++;
}

static void sf_read_region(struct sf_worker *w, uint64_t addr, uint64_t nr, uint64_t id0,
			   uint64_t *buf)
{
	uint64_t i;

	for (i = 0; i < nr; i++) {
		double t0 = wl_now();

		wl_read_page(w->sh->env, w->mm, addr + i * USWAP_PAGE_SIZE, id0 + i, 1, buf);
		sf_sample(w, (wl_now() - t0) * 1e6);
		w->reads++;
	}
}

static void *sf_worker_fn(void *arg)
{
	struct sf_worker *w = arg;
	struct sf_shared *sh = w->sh;
	uint64_t *buf = uswap_aligned_alloc(USWAP_PAGE_SIZE, USWAP_PAGE_SIZE);

	pthread_mutex_lock(&sh->gate_lock);
	while (!sh->gate_open)
		pthread_cond_wait(&sh->gate_cond, &sh->gate_lock);
	pthread_mutex_unlock(&sh->gate_lock);
	for (;;) {
		pthread_barrier_wait(&sh->start);
		if (atomic_load(&sh->stop))
			break;
		if (buf) {
			sf_read_region(w, sh->addr_a, sh->nr_a, 0, buf);
			if (w->parent)
				sf_read_region(w, sh->addr_b, sh->nr_b, sh->nr_a, buf);
		}
		pthread_barrier_wait(&sh->end);
	}
	if (!buf)
		atomic_fetch_add(&sh->env->access_errors, 1);
	free(buf);
	return NULL;
}

/* Swap out every resident page of @mms. Return: pages still resident. */
static uint64_t sf_swap_out_all(struct wl_env *env, struct uswap_mm **mms, unsigned int n)
{
	struct uswap_mem_stats st;
	uint64_t rss = 0;
	unsigned int pass, i;

	uswap_mem_get_stats(env->mem, &st);
	for (pass = 0; pass < 8; pass++) {
		uswap_mem_reclaim(env->mem, st.nr_frames);
		rss = 0;
		for (i = 0; i < n; i++) {
			struct uswap_mm_stats ms;

			uswap_mm_get_stats(mms[i], &ms);
			rss += ms.rss_pages;
		}
		if (!rss)
			break;
	}
	return rss;
}

/** uswap_workload_sharedfault() - see uswap/workload.h. */
USWAP_API int uswap_workload_sharedfault(const struct uswap_workload_config *cfg,
					 struct uswap_workload_result *res)
{
	unsigned int procs = cfg->procs ? cfg->procs : 2, threads = cfg->threads ? cfg->threads : 2;
	double secs = cfg->seconds > 0 ? cfg->seconds : 1.0, t_rounds = 0, *all = NULL;
	struct uswap_mm *mms[SF_MAX_PROCS] = { NULL };
	struct sf_worker *w = NULL;
	struct sf_shared sh = { 0 };
	unsigned int nw, i, started = 0, rounds = 0;
	uint64_t *buf = NULL, pages, reads = 0, k, nall = 0;
	struct wl_env env;
	double t0;
	int ret;

	ret = wl_setup(&env, "sharedfault", cfg, res);
	if (ret)
		return ret;
	if (procs > SF_MAX_PROCS || threads * procs > SF_MAX_THREADS) {
		snprintf(res->err, sizeof(res->err),
			 "sharedfault: at most %d processes and %d threads in all", SF_MAX_PROCS,
			 SF_MAX_THREADS);
		return wl_teardown(&env, -EINVAL);
	}
	nw = procs * threads;
	pages = cfg->data_bytes / USWAP_PAGE_SIZE;
	sh.env = &env;
	sh.nr_a = pages - pages / 4;	/* shared by fork */
	sh.nr_b = pages / 4;		/* the parent's alone */
	w = uswap_calloc(nw, sizeof(*w));
	buf = uswap_aligned_alloc(USWAP_PAGE_SIZE, USWAP_PAGE_SIZE);
	if (!w || !buf) {
		ret = -ENOMEM;
		goto out;
	}
	ret = wl_mm_create(&env, 0, &mms[0]);
	if (!ret)
		ret = uswap_mm_mmap(mms[0], sh.nr_a * USWAP_PAGE_SIZE, &sh.addr_a);
	for (k = 0; !ret && k < sh.nr_a; k++)
		ret = wl_write_page(&env, mms[0], sh.addr_a + k * USWAP_PAGE_SIZE, k, 1, buf);
	for (i = 1; !ret && i < procs; i++)
		ret = uswap_mm_fork(mms[0], &mms[i]);
	if (!ret && sh.nr_b)
		ret = uswap_mm_mmap(mms[0], sh.nr_b * USWAP_PAGE_SIZE, &sh.addr_b);
	for (k = 0; !ret && k < sh.nr_b; k++)
		ret = wl_write_page(&env, mms[0], sh.addr_b + k * USWAP_PAGE_SIZE, sh.nr_a + k, 1,
				    buf);
	if (ret) {
		snprintf(res->err, sizeof(res->err), "sharedfault: setup: %s", strerror(-ret));
		goto out;
	}
	pthread_mutex_init(&sh.gate_lock, NULL);
	pthread_cond_init(&sh.gate_cond, NULL);
	for (i = 0; i < nw; i++) {
		w[i].sh = &sh;
		w[i].mm = mms[i / threads];
		w[i].parent = i < threads;
		if (pthread_create(&w[i].tid, NULL, sf_worker_fn, &w[i]))
			break;
		started++;
	}
	/* The barriers count the workers that started; if not all did, they
	 * pass the first barrier with stop set and exit. */
	pthread_barrier_init(&sh.start, NULL, started + 1);
	pthread_barrier_init(&sh.end, NULL, started + 1);
	if (started < nw) {
		ret = -EAGAIN;
		snprintf(res->err, sizeof(res->err), "sharedfault: cannot start %u threads", nw);
		atomic_store(&sh.stop, true);
	}
	pthread_mutex_lock(&sh.gate_lock);
	sh.gate_open = true;
	pthread_cond_broadcast(&sh.gate_cond);
	pthread_mutex_unlock(&sh.gate_lock);
	t0 = wl_now();
	while (!ret) {
		double r0;

		sf_swap_out_all(&env, mms, procs);
		r0 = wl_now();
		pthread_barrier_wait(&sh.start);
		pthread_barrier_wait(&sh.end);
		t_rounds += wl_now() - r0;
		rounds++;
		wl_progress(&env, "rounds", (wl_now() - t0) / secs);
		if (wl_now() - t0 >= secs)
			break;
	}
	atomic_store(&sh.stop, true);
	pthread_barrier_wait(&sh.start);
	for (i = 0; i < started; i++)
		pthread_join(w[i].tid, NULL);
	pthread_barrier_destroy(&sh.start);
	pthread_barrier_destroy(&sh.end);
	pthread_cond_destroy(&sh.gate_cond);
	pthread_mutex_destroy(&sh.gate_lock);
	if (ret)
		goto out;

	all = uswap_malloc((size_t)nw * SF_SAMPLES * sizeof(*all));
	for (i = 0; i < nw; i++) {
		reads += w[i].reads;
		if (all) {
			memcpy(all + nall, w[i].lat, w[i].nr_samples * sizeof(*all));
			nall += w[i].nr_samples;
		}
	}
	wl_figure(&env, "faults_per_s", t_rounds > 0 ? (double)reads / t_rounds : 0);
	if (all && nall) {
		/* wl_median sorts: the percentiles read the sorted array. */
		double p50 = wl_median(all, (unsigned int)nall);

		wl_figure(&env, "fault_p50_us", p50);
		wl_figure(&env, "fault_p99_us", all[(nall * 99) / 100]);
	}
	wl_figure(&env, "rounds", rounds);
	wl_figure(&env, "procs", procs);
	wl_figure(&env, "threads", threads);
	{
		struct wl_ra pra = { 0, 0 }, cra = { 0, 0 };

		wl_ra_add(&pra, mms[0]);
		for (i = 1; i < procs; i++)
			wl_ra_add(&cra, mms[i]);
		wl_ra_figures(&env, &pra, "parent_readahead_pages", "parent_readahead_wasted");
		wl_ra_figures(&env, &cra, "children_readahead_pages", "children_readahead_wasted");
	}
out:
	for (i = procs; i-- > 0;)
		if (mms[i])
			uswap_mm_destroy(mms[i]);
	free(all);
	free(w);
	free(buf);
	return wl_teardown(&env, ret);
}
