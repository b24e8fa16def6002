/* SPDX-License-Identifier: MIT */
/*
 * build (the kernel-build test of the swap table phase II
 * series, in shape): a "make" address
 * space holds a shared working set (3/4 of the data: headers, the
 * toolchain's pages) written once. cfg->threads workers ("make -jN") each
 * run jobs one after another: fork make (uswap_mm_fork), and in the child
 * map a private region (the compiler's heap: data/64), write and read it
 * back, read a random sample of inherited pages, rewrite a few of them
 * (copy-on-write), then exit (uswap_mm_destroy). Many short-lived address
 * spaces, fork-time swap-entry duplication and exit-time puts, with
 * make's pages swapped out under the children's pressure.
 *
 * At the end make checks its whole working set: no child's write may show.
 * Figures: jobs_per_s, forks, exits.
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

#define BUILD_PRIVATE_ID	(1ULL << 62)

struct build_shared {
	struct wl_env *env;
	struct uswap_mm *make;
	uint64_t addr, nr;		/* make's working set */
	uint8_t *make_ver;		/* 1, or 0 where make's write failed */
	uint64_t priv_pages;		/* per job */
	uint64_t max_jobs;		/* 0: until stop */
	_Atomic uint64_t next_job, jobs, forks, exits;
	_Atomic bool stop;
	_Atomic unsigned int finished;
	_Atomic int fail;		/* first fork/mmap error */
};

struct build_worker {
	struct build_shared *sh;
	unsigned int idx;
	pthread_t tid;
};

static void build_job(struct build_shared *sh, struct wl_rng *rng, uint64_t job, uint64_t *buf,
		      uint8_t *ver)
{
	struct wl_env *env = sh->env;
	uint64_t i, addr, p, nread = sh->priv_pages / 2, nwrite = sh->priv_pages / 16 + 1;
	uint64_t id0 = BUILD_PRIVATE_ID | (job << 24);
	struct uswap_mm *child;
	int err, zero = 0;

	err = uswap_mm_fork(sh->make, &child);
	if (err) {
		atomic_compare_exchange_strong(&sh->fail, &zero, err);
		atomic_store(&sh->stop, true);
		return;
	}
	atomic_fetch_add(&sh->forks, 1);
	err = uswap_mm_mmap(child, sh->priv_pages * USWAP_PAGE_SIZE, &addr);
	if (err) {
		atomic_compare_exchange_strong(&sh->fail, &zero, err);
		atomic_store(&sh->stop, true);
		goto exit;
	}
	for (i = 0; i < sh->priv_pages; i++)
		ver[i] = !wl_write_page(env, child, addr + i * USWAP_PAGE_SIZE, id0 + i, 1, buf);
	/* Reads of inherited pages come before this child's own rewrites. */
	for (i = 0; i < nread; i++) {
		p = wl_rng_below(rng, sh->nr);
		wl_read_page(env, child, sh->addr + p * USWAP_PAGE_SIZE, p, sh->make_ver[p], buf);
	}
	for (i = 0; i < nwrite; i++) {
		p = wl_rng_below(rng, sh->nr);
		if (!wl_write_page(env, child, sh->addr + p * USWAP_PAGE_SIZE, p, 2, buf))
			wl_read_page(env, child, sh->addr + p * USWAP_PAGE_SIZE, p, 2, buf);
	}
	for (i = 0; i < sh->priv_pages; i++)
		wl_read_page(env, child, addr + i * USWAP_PAGE_SIZE, id0 + i, ver[i], buf);
exit:
	uswap_mm_destroy(child);
	atomic_fetch_add(&sh->exits, 1);
}

static void *build_worker_fn(void *arg)
{
	struct build_worker *w = arg;
	struct build_shared *sh = w->sh;
	uint64_t *buf = uswap_aligned_alloc(USWAP_PAGE_SIZE, USWAP_PAGE_SIZE), job;
	uint8_t *ver = wl_calloc(sh->priv_pages, 1);	/* 0: the write failed */
	struct wl_rng rng;

	wl_rng_seed(&rng, sh->env->cfg->seed, w->idx + 1);
	if (!ver) {
		free(buf);
		buf = NULL;
	}
	while (buf && !atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		job = atomic_fetch_add(&sh->next_job, 1);
		if (sh->max_jobs && job >= sh->max_jobs)
			break;
		build_job(sh, &rng, job, buf, ver);
		atomic_fetch_add(&sh->jobs, 1);
	}
	if (!buf)
		atomic_fetch_add(&sh->env->access_errors, 1);
	free(buf);
	free(ver);
	atomic_fetch_add(&sh->finished, 1);
	return NULL;
}

/** uswap_workload_build() - see uswap/workload.h. */
USWAP_API int uswap_workload_build(const struct uswap_workload_config *cfg,
				   struct uswap_workload_result *res)
{
	unsigned int n = cfg->threads ? cfg->threads : 2, i, created = 0;
	double secs = cfg->seconds > 0 ? cfg->seconds : 3.0, t0, t1;
	struct build_shared sh = { 0 };
	struct build_worker *w;
	struct wl_env env;
	uint64_t *buf, p;
	int ret;

	ret = wl_setup(&env, "build", cfg, res);
	if (ret)
		return ret;
	sh.env = &env;
	sh.nr = cfg->data_bytes / 4 * 3 / USWAP_PAGE_SIZE;
	sh.priv_pages = USWAP_MAX(cfg->data_bytes / 64 / USWAP_PAGE_SIZE, 16);
	sh.max_jobs = cfg->ops;
	w = wl_calloc(n, sizeof(*w));
	buf = uswap_aligned_alloc(USWAP_PAGE_SIZE, USWAP_PAGE_SIZE);
	sh.make_ver = wl_calloc(sh.nr, 1);
	if (!w || !buf || !sh.make_ver || !sh.nr) {
		ret = !sh.nr ? -EINVAL : -ENOMEM;
		goto out;
	}
	ret = wl_mm_create(&env, 0, &sh.make);
	if (!ret)
		ret = uswap_mm_mmap(sh.make, sh.nr * USWAP_PAGE_SIZE, &sh.addr);
	if (ret)
		goto out;
	for (p = 0; p < sh.nr; p++) {
		sh.make_ver[p] = !wl_write_page(&env, sh.make, sh.addr + p * USWAP_PAGE_SIZE, p, 1,
						buf);
		if (!(p & 255))
			wl_progress(&env, "load", 0.3 * (double)p / (double)sh.nr);
	}
	t0 = wl_now();
	for (i = 0; i < n; i++) {
		w[i].sh = &sh;
		w[i].idx = i;
		if (pthread_create(&w[i].tid, NULL, build_worker_fn, &w[i]))
			break;
		created++;
	}
	if (!created) {
		ret = -EAGAIN;
		goto out;
	}
	while (atomic_load(&sh.finished) < created) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		double el = wl_now() - t0;

		if (!sh.max_jobs && el >= secs)
			atomic_store(&sh.stop, true);
		wl_progress(&env, "jobs",
			    0.3 + 0.7 * (sh.max_jobs ? (double)atomic_load(&sh.jobs) /
						      (double)sh.max_jobs : el / secs));
		nanosleep(&ts, NULL);
	}
	t1 = wl_now();
	for (i = 0; i < created; i++)
		pthread_join(w[i].tid, NULL);
	if (atomic_load(&sh.fail)) {
		ret = atomic_load(&sh.fail);
		snprintf(res->err, sizeof(res->err), "build: fork or mmap in a job: %s",
			 strerror(-ret));
	}
	wl_figure(&env, "jobs_per_s", (double)atomic_load(&sh.jobs) / (t1 - t0));
	wl_figure(&env, "forks", (double)atomic_load(&sh.forks));
	wl_figure(&env, "exits", (double)atomic_load(&sh.exits));
	wl_figure(&env, "job_pages", (double)sh.priv_pages);
	/* make's own check: the children's copy-on-write writes must not show. */
	for (p = 0; p < sh.nr; p++)
		wl_read_page(&env, sh.make, sh.addr + p * USWAP_PAGE_SIZE, p, sh.make_ver[p], buf);
out:
	if (sh.make)
		uswap_mm_destroy(sh.make);
	free(w);
	free(buf);
	free(sh.make_ver);
	return wl_teardown(&env, ret);
}
