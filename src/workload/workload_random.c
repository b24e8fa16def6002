/* SPDX-License-Identifier: MIT */
/*
 * random: uniform random page accesses over a working set larger than the
 * budget, from one address space and cfg->threads threads. Each thread
 * owns the pages p with p % threads == its index (so that it alone knows
 * their versions) and reads them, or with write_pct % rewrites them. With
 * a working set k times the budget, about 1 - 1/k of accesses miss the
 * budget: the steady swap-in/swap-out churn with no locality.
 *
 * Figures: ops_per_s, major_faults_per_op and swapins_per_op (over the
 * measured phase, not the load).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "workload/workload_internal.h"
#include "util/alloc.h"
#include "util/debug.h"

struct random_shared {
	struct wl_env *env;
	struct uswap_mm *mm;
	uint64_t addr, nr;
	uint32_t *vers;
	unsigned int nthreads, write_pct;
	uint64_t ops_per_thread;	/* 0: until stop */
	pthread_barrier_t loaded;	/* threads + main */
	pthread_barrier_t go;		/* threads + main */
	_Atomic bool stop;
	_Atomic uint64_t loaded_pages, ops;
	_Atomic unsigned int finished;
};

struct random_thread {
	struct random_shared *sh;
	unsigned int idx;
	pthread_t tid;
};

static void *random_fn(void *arg)
{
	struct random_thread *t = arg;
	struct random_shared *sh = t->sh;
	uint64_t *buf = uswap_aligned_alloc(USWAP_PAGE_SIZE, USWAP_PAGE_SIZE), p, k, mine, ops = 0;
	struct wl_rng rng;

	wl_rng_seed(&rng, sh->env->cfg->seed, t->idx + 1);
	mine = sh->nr / sh->nthreads + (t->idx < sh->nr % sh->nthreads);
	for (p = t->idx; buf && p < sh->nr; p += sh->nthreads) {
		if (!wl_write_page(sh->env, sh->mm, sh->addr + p * USWAP_PAGE_SIZE, p, 1, buf))
			sh->vers[p] = 1;
		atomic_fetch_add_explicit(&sh->loaded_pages, 1, memory_order_relaxed);
	}
	pthread_barrier_wait(&sh->loaded);
	pthread_barrier_wait(&sh->go);
	while (buf && mine && !atomic_load_explicit(&sh->stop, memory_order_relaxed) &&
	       (!sh->ops_per_thread || ops < sh->ops_per_thread)) {
		k = wl_rng_below(&rng, mine);
		p = t->idx + k * sh->nthreads;
		if (wl_rng_below(&rng, 100) < sh->write_pct) {
			if (!wl_write_page(sh->env, sh->mm, sh->addr + p * USWAP_PAGE_SIZE, p,
					   sh->vers[p] + 1, buf))
				sh->vers[p]++;
		} else {
			wl_read_page(sh->env, sh->mm, sh->addr + p * USWAP_PAGE_SIZE, p,
				     sh->vers[p], buf);
		}
		ops++;
		if (!(ops & 63))
			atomic_fetch_add_explicit(&sh->ops, 64, memory_order_relaxed);
	}
	atomic_fetch_add_explicit(&sh->ops, ops & 63, memory_order_relaxed);
	/* Final check of this thread's pages. */
	for (p = t->idx; buf && p < sh->nr; p += sh->nthreads)
		wl_read_page(sh->env, sh->mm, sh->addr + p * USWAP_PAGE_SIZE, p, sh->vers[p],
			     buf);
	if (!buf)
		atomic_fetch_add(&sh->env->access_errors, 1);
	free(buf);
	atomic_fetch_add(&sh->finished, 1);
	return NULL;
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/** uswap_workload_random() - see uswap/workload.h. */
USWAP_API int uswap_workload_random(const struct uswap_workload_config *cfg,
				    struct uswap_workload_result *res)
{
	unsigned int n = cfg->threads ? cfg->threads : 1, i, created = 0;
	double secs = cfg->seconds > 0 ? cfg->seconds : 2.0, t0, t1;
	struct uswap_mem_stats s0, s1;
	struct random_shared sh = { 0 };
	struct random_thread *th;
	struct wl_env env;
	uint64_t ops;
	int ret;

	ret = wl_setup(&env, "random", cfg, res);
	if (ret)
		return ret;
	sh.env = &env;
	sh.nr = cfg->data_bytes / USWAP_PAGE_SIZE;
	sh.nthreads = n;
	sh.write_pct = cfg->write_pct;
	sh.ops_per_thread = cfg->ops ? (cfg->ops + n - 1) / n : 0;
	sh.vers = wl_calloc(sh.nr, sizeof(*sh.vers));
	th = wl_calloc(n, sizeof(*th));
	if (!sh.vers || !th) {
		ret = -ENOMEM;
		goto out;
	}
	ret = wl_mm_create(&env, 0, &sh.mm);
	if (!ret)
		ret = uswap_mm_mmap(sh.mm, sh.nr * USWAP_PAGE_SIZE, &sh.addr);
	if (ret)
		goto out;
	pthread_barrier_init(&sh.loaded, NULL, n + 1);
	pthread_barrier_init(&sh.go, NULL, n + 1);
	for (i = 0; i < n; i++) {
		th[i].sh = &sh;
		th[i].idx = i;
		if (pthread_create(&th[i].tid, NULL, random_fn, &th[i])) {
			/* Both barriers count n + 1 parties. */
			uswap_err_printf("random: cannot create thread %u", i);
			abort();
		}
		created++;
	}
	/* Load, reporting progress; the barrier then waits for stragglers. */
	while (atomic_load_explicit(&sh.loaded_pages, memory_order_relaxed) < sh.nr) {
		wl_progress(&env, "load", 0.3 * (double)atomic_load(&sh.loaded_pages) /
					  (double)sh.nr);
		nap_ms(20);
	}
	pthread_barrier_wait(&sh.loaded);
	uswap_mem_get_stats(env.mem, &s0);
	t0 = wl_now();
	pthread_barrier_wait(&sh.go);
	while (atomic_load(&sh.finished) < n) {
		double el = wl_now() - t0;

		if (!cfg->ops && el >= secs)
			atomic_store(&sh.stop, true);
		wl_progress(&env, "random",
			    0.3 + 0.7 * (cfg->ops ? (double)atomic_load(&sh.ops) / (double)cfg->ops
						  : el / secs));
		nap_ms(cfg->ops ? 20 : (el < secs - 0.02 ? 10 : 2));
		/* The threads run their final check after the ops: take the
		 * figures when the ops stop, not when the checks end. */
		if (atomic_load(&sh.stop) || (cfg->ops && atomic_load(&sh.ops) >= cfg->ops))
			break;
	}
	t1 = wl_now();
	uswap_mem_get_stats(env.mem, &s1);
	for (i = 0; i < created; i++)
		pthread_join(th[i].tid, NULL);
	/* Each thread adds its last partial batch when it stops. */
	ops = atomic_load(&sh.ops);
	pthread_barrier_destroy(&sh.loaded);
	pthread_barrier_destroy(&sh.go);
	wl_figure(&env, "ops_per_s", (double)ops / (t1 - t0));
	wl_figure(&env, "major_faults_per_op",
		  ops ? (double)(s1.major_faults - s0.major_faults) / (double)ops : 0);
	wl_figure(&env, "swapins_per_op",
		  ops ? (double)(s1.swapins - s0.swapins) / (double)ops : 0);
	wl_figure(&env, "ops", (double)ops);
out:
	if (sh.mm)
		uswap_mm_destroy(sh.mm);
	free(sh.vers);
	free(th);
	return wl_teardown(&env, ret);
}
