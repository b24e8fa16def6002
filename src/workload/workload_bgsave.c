/* SPDX-License-Identifier: MIT */
/*
 * bgsave (the Redis-with-persistence test of the swap table
 * phase II series, docs/KERNEL-MAP.md): a parent address
 * space holding a dataset larger than the budget serves a "redis" loop
 * from one thread: pick a key (a page) uniformly, read it, or with
 * write_pct % rewrite it. Then it forks (uswap_mm_fork) and a child,
 * on another thread, reads the whole dataset once and exits (the BGSAVE
 * snapshot) while the parent keeps serving.
 *
 * After the fork every swapped-out page has swap count 2, and every page
 * the child reads is one the parent maps too: the swap-cache path for
 * shared entries that the series made ~20% faster on a sync device.
 * The child checks each page against the version it had at the fork, so
 * the parent's writes after the fork (copy-on-write) must not show.
 *
 * The parent serves from cfg->threads threads (default 1; Redis's I/O
 * threads), each owning an equal share of the keys.
 *
 * Figures: parent_ops_per_s_before (no child), parent_ops_per_s (while
 * the child runs; with nofork: the same loop for the same length again),
 * child_mb_per_s, fork_ms.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "workload/workload_internal.h"
#include "util/alloc.h"

struct bgsave_child {
	struct wl_env *env;
	struct uswap_mm *mm;
	uint64_t addr, nr;
	uint32_t *vers;			/* the parent's versions at the fork */
	_Atomic uint64_t done;		/* pages read */
	_Atomic bool finished;
	double t_start, t_end;
	struct wl_ra ra;		/* the child's readahead, taken at its exit */
};

static void *bgsave_child_fn(void *arg)
{
	struct bgsave_child *c = arg;
	uint64_t *buf = uswap_aligned_alloc(USWAP_PAGE_SIZE, USWAP_PAGE_SIZE), i;

	c->t_start = wl_now();
	for (i = 0; buf && i < c->nr; i++) {
		wl_read_page(c->env, c->mm, c->addr + i * USWAP_PAGE_SIZE, i, c->vers[i], buf);
		atomic_store_explicit(&c->done, i + 1, memory_order_relaxed);
	}
	c->t_end = wl_now();
	if (!buf)
		atomic_fetch_add(&c->env->access_errors, 1);
	free(buf);
	/* The child exits: every shared entry goes back to count 1. */
	wl_ra_add(&c->ra, c->mm);
	uswap_mm_destroy(c->mm);
	atomic_store(&c->finished, true);
	return NULL;
}

/*
 * One serving thread of the parent (Redis's I/O threads): thread k of n
 * owns the keys k, k + n, k + 2n, ... and picks among them uniformly, so
 * that each key's version has one writer.
 */
struct serve {
	struct wl_env *env;
	struct uswap_mm *mm;
	uint64_t addr, nr;
	uint32_t *vers;
	struct wl_rng rng;
	uint64_t *buf;
	unsigned int write_pct;
	unsigned int k, n;		/* this thread, of n */
	_Atomic bool *stop;
	uint64_t ops;			/* requests served in the phase */
	pthread_t tid;
};

/* One "redis" request: a uniformly chosen key of ours, read or rewritten. */
static void serve_one(struct serve *s)
{
	uint64_t mine = (s->nr - s->k + s->n - 1) / s->n;
	uint64_t key = s->k + wl_rng_below(&s->rng, mine) * s->n;
	uint64_t addr = s->addr + key * USWAP_PAGE_SIZE;

	if (wl_rng_below(&s->rng, 100) < s->write_pct) {
		if (!wl_write_page(s->env, s->mm, addr, key, s->vers[key] + 1, s->buf))
			s->vers[key]++;
	} else {
		wl_read_page(s->env, s->mm, addr, key, s->vers[key], s->buf);
	}
}

static void *serve_fn(void *arg)
{
	struct serve *s = arg;

	while (!atomic_load_explicit(s->stop, memory_order_relaxed)) {
		serve_one(s);
		s->ops++;
	}
	return NULL;
}

/*
 * Serve from @n threads until @secs have passed (@child NULL) or the child
 * has finished. Return: requests served by all threads, or -1 if no thread
 * could be started.
 */
static int64_t serve_phase(struct serve *s, unsigned int n, double secs,
			   struct bgsave_child *child, const char *phase, double f0, double f1)
{
	_Atomic bool stop = false;
	double t0 = wl_now(), t;
	unsigned int i, started = 0;
	int64_t ops = 0;

	for (i = 0; i < n; i++) {
		s[i].stop = &stop;
		s[i].ops = 0;
		if (pthread_create(&s[i].tid, NULL, serve_fn, &s[i]))
			break;
		started++;
	}
	if (!started)
		return -1;
	for (;;) {
		struct timespec ts = { 0, 2000000 };

		nanosleep(&ts, NULL);
		t = wl_now();
		if (child) {
			if (atomic_load_explicit(&child->finished, memory_order_acquire))
				break;
			wl_progress(s->env, phase, f0 + (f1 - f0) *
				    (double)atomic_load_explicit(&child->done, memory_order_relaxed) /
				    (double)child->nr);
		} else {
			if (t - t0 >= secs)
				break;
			wl_progress(s->env, phase, f0 + (f1 - f0) * (t - t0) / secs);
		}
	}
	atomic_store(&stop, true);
	for (i = 0; i < started; i++) {
		pthread_join(s[i].tid, NULL);
		ops += (int64_t)s[i].ops;
	}
	return ops;
}

/** uswap_workload_bgsave() - see uswap/workload.h. */
USWAP_API int uswap_workload_bgsave(const struct uswap_workload_config *cfg,
				    struct uswap_workload_result *res)
{
	double secs = cfg->seconds > 0 ? cfg->seconds : 1.0, t0, t1;
	unsigned int nthreads = cfg->threads ? cfg->threads : 1, k;
	struct bgsave_child child = { 0 };
	struct serve *s = NULL;
	struct uswap_mm *mm = NULL;
	uint32_t *vers = NULL;
	uint64_t *buf = NULL, nr, addr = 0, i;
	struct wl_env env;
	pthread_t tid;
	int64_t ops;
	int ret;

	ret = wl_setup(&env, "bgsave", cfg, res);
	if (ret)
		return ret;
	nr = cfg->data_bytes / USWAP_PAGE_SIZE;
	if (nthreads > 64 || nthreads > nr) {
		snprintf(res->err, sizeof(res->err), "bgsave: 1..64 threads, no more than pages");
		return wl_teardown(&env, -EINVAL);
	}
	vers = wl_calloc(nr, sizeof(*vers));
	child.vers = wl_calloc(nr, sizeof(*child.vers));
	s = uswap_calloc(nthreads, sizeof(*s));
	buf = uswap_aligned_alloc(USWAP_PAGE_SIZE, USWAP_PAGE_SIZE);
	if (!vers || !child.vers || !s || !buf) {
		ret = -ENOMEM;
		goto out;
	}
	ret = wl_mm_create(&env, 0, &mm);
	if (!ret)
		ret = uswap_mm_mmap(mm, nr * USWAP_PAGE_SIZE, &addr);
	if (ret)
		goto out;
	for (k = 0; k < nthreads; k++) {
		s[k].env = &env;
		s[k].mm = mm;
		s[k].addr = addr;
		s[k].nr = nr;
		s[k].vers = vers;
		s[k].write_pct = cfg->write_pct;
		s[k].k = k;
		s[k].n = nthreads;
		/* Thread 0 draws what the one-threaded parent always drew. */
		wl_rng_seed(&s[k].rng, cfg->seed, k);
		s[k].buf = uswap_aligned_alloc(USWAP_PAGE_SIZE, USWAP_PAGE_SIZE);
		if (!s[k].buf) {
			ret = -ENOMEM;
			goto out;
		}
	}

	/* Load the dataset. */
	for (i = 0; i < nr; i++) {
		if (!wl_write_page(&env, mm, addr + i * USWAP_PAGE_SIZE, i, 1, buf))
			vers[i] = 1;
		if (!(i & 255))
			wl_progress(&env, "load", 0.4 * (double)i / (double)nr);
	}

	/* Serve without a child. */
	ops = serve_phase(s, nthreads, secs, NULL, "serve", 0.4, 0.6);
	if (ops < 0) {
		ret = -EAGAIN;
		goto out;
	}
	wl_figure(&env, "parent_ops_per_s_before", (double)ops / secs);

	if (cfg->nofork) {
		ops = serve_phase(s, nthreads, secs, NULL, "serve", 0.6, 1.0);
		if (ops < 0) {
			ret = -EAGAIN;
			goto out;
		}
		wl_figure(&env, "parent_ops_per_s", (double)ops / secs);
		wl_figure(&env, "child_mb_per_s", 0);
		wl_figure(&env, "fork_ms", 0);
		goto out;
	}

	/* BGSAVE: fork, let the child read everything, keep serving. */
	t0 = wl_now();
	ret = uswap_mm_fork(mm, &child.mm);
	t1 = wl_now();
	if (ret) {
		snprintf(res->err, sizeof(res->err), "bgsave: uswap_mm_fork: %s", strerror(-ret));
		goto out;
	}
	wl_figure(&env, "fork_ms", (t1 - t0) * 1e3);
	memcpy(child.vers, vers, nr * sizeof(*vers));
	child.env = &env;
	child.addr = addr;
	child.nr = nr;
	if (pthread_create(&tid, NULL, bgsave_child_fn, &child)) {
		uswap_mm_destroy(child.mm);
		ret = -EAGAIN;
		goto out;
	}
	t0 = wl_now();
	ops = serve_phase(s, nthreads, 0, &child, "bgsave", 0.6, 1.0);
	/* The parent's rate over the child's whole life, exit included. */
	t0 = wl_now() - t0;
	pthread_join(tid, NULL);
	if (ops < 0) {
		ret = -EAGAIN;
		goto out;
	}
	wl_figure(&env, "parent_ops_per_s", (double)ops / t0);
	wl_figure(&env, "child_mb_per_s", (double)(nr * USWAP_PAGE_SIZE) / (1 << 20) /
					  (child.t_end - child.t_start));
	wl_ra_figures(&env, &child.ra, "child_readahead_pages", "child_readahead_wasted");
out:
	if (mm) {
		struct wl_ra pra = { 0, 0 };

		/* The parent's readahead while serving (before its own check). */
		wl_ra_add(&pra, mm);
		if (!ret)
			wl_ra_figures(&env, &pra, "parent_readahead_pages",
				      "parent_readahead_wasted");
		/* The parent's own check: every page as it last wrote it. */
		for (i = 0; !ret && i < nr; i++)
			wl_read_page(&env, mm, addr + i * USWAP_PAGE_SIZE, i, vers[i], buf);
		uswap_mm_destroy(mm);
	}
	for (k = 0; s && k < nthreads; k++)
		free(s[k].buf);
	free(s);
	free(vers);
	free(child.vers);
	free(buf);
	return wl_teardown(&env, ret);
}
