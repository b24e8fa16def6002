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
 * Figures: parent_ops_per_s_before (no child), parent_ops_per_s (while
 * the child runs; with nofork: the same loop for the same length again),
 * child_mb_per_s, fork_ms.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/workload_internal.h"

struct bgsave_child {
	struct wl_env *env;
	struct uswap_mm *mm;
	uint64_t addr, nr;
	uint32_t *vers;			/* the parent's versions at the fork */
	_Atomic uint64_t done;		/* pages read */
	_Atomic bool finished;
	double t_start, t_end;
};

static void *bgsave_child_fn(void *arg)
{
	struct bgsave_child *c = arg;
	uint64_t *buf = aligned_alloc(USWAP_PAGE_SIZE, USWAP_PAGE_SIZE), i;

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
	uswap_mm_destroy(c->mm);
	atomic_store(&c->finished, true);
	return NULL;
}

struct serve {
	struct wl_env *env;
	struct uswap_mm *mm;
	uint64_t addr, nr;
	uint32_t *vers;
	struct wl_rng rng;
	uint64_t *buf;
	unsigned int write_pct;
};

/* One "redis" request: a uniformly chosen key, read or rewritten. */
static void serve_one(struct serve *s)
{
	uint64_t k = wl_rng_below(&s->rng, s->nr), addr = s->addr + k * USWAP_PAGE_SIZE;

	if (wl_rng_below(&s->rng, 100) < s->write_pct) {
		if (!wl_write_page(s->env, s->mm, addr, k, s->vers[k] + 1, s->buf))
			s->vers[k]++;
	} else {
		wl_read_page(s->env, s->mm, addr, k, s->vers[k], s->buf);
	}
}

/* Serve for @secs seconds. Return: requests served. */
static uint64_t serve_for(struct serve *s, double secs, const char *phase, double f0, double f1)
{
	double t0 = wl_now(), t = t0;
	uint64_t ops = 0;

	while (t - t0 < secs) {
		serve_one(s);
		if (!(++ops & 63)) {
			t = wl_now();
			wl_progress(s->env, phase, f0 + (f1 - f0) * (t - t0) / secs);
		}
	}
	return ops;
}

/** uswap_workload_bgsave() - see uswap/workload.h. */
USWAP_API int uswap_workload_bgsave(const struct uswap_workload_config *cfg,
				    struct uswap_workload_result *res)
{
	double secs = cfg->seconds > 0 ? cfg->seconds : 1.0, t0, t1;
	struct bgsave_child child = { 0 };
	struct serve s = { 0 };
	struct uswap_mm *mm = NULL;
	struct wl_env env;
	pthread_t tid;
	uint64_t i, ops;
	int ret;

	ret = wl_setup(&env, "bgsave", cfg, res);
	if (ret)
		return ret;
	s.env = &env;
	s.nr = cfg->data_bytes / USWAP_PAGE_SIZE;
	s.write_pct = cfg->write_pct;
	wl_rng_seed(&s.rng, cfg->seed, 0);
	s.vers = wl_calloc(s.nr, sizeof(*s.vers));
	child.vers = wl_calloc(s.nr, sizeof(*child.vers));
	s.buf = aligned_alloc(USWAP_PAGE_SIZE, USWAP_PAGE_SIZE);
	if (!s.vers || !child.vers || !s.buf) {
		ret = -ENOMEM;
		goto out;
	}
	ret = uswap_mm_create(env.mem, &mm);
	if (!ret)
		ret = uswap_mm_mmap(mm, s.nr * USWAP_PAGE_SIZE, &s.addr);
	if (ret)
		goto out;
	s.mm = mm;

	/* Load the dataset. */
	for (i = 0; i < s.nr; i++) {
		if (!wl_write_page(&env, mm, s.addr + i * USWAP_PAGE_SIZE, i, 1, s.buf))
			s.vers[i] = 1;
		if (!(i & 255))
			wl_progress(&env, "load", 0.4 * (double)i / (double)s.nr);
	}

	/* Serve without a child. */
	ops = serve_for(&s, secs, "serve", 0.4, 0.6);
	wl_figure(&env, "parent_ops_per_s_before", (double)ops / secs);

	if (cfg->nofork) {
		ops = serve_for(&s, secs, "serve", 0.6, 1.0);
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
	memcpy(child.vers, s.vers, s.nr * sizeof(*s.vers));
	child.env = &env;
	child.addr = s.addr;
	child.nr = s.nr;
	if (pthread_create(&tid, NULL, bgsave_child_fn, &child)) {
		uswap_mm_destroy(child.mm);
		ret = -EAGAIN;
		goto out;
	}
	ops = 0;
	t0 = wl_now();
	while (!atomic_load_explicit(&child.finished, memory_order_acquire)) {
		serve_one(&s);
		if (!(++ops & 63))
			wl_progress(&env, "bgsave",
				    0.6 + 0.4 * (double)atomic_load_explicit(&child.done,
						memory_order_relaxed) / (double)s.nr);
	}
	pthread_join(tid, NULL);
	/* The parent's rate over the child's whole life, exit included. */
	t0 = wl_now() - t0;
	wl_figure(&env, "parent_ops_per_s", (double)ops / t0);
	wl_figure(&env, "child_mb_per_s", (double)(s.nr * USWAP_PAGE_SIZE) / (1 << 20) /
					  (child.t_end - child.t_start));
out:
	if (mm) {
		/* The parent's own check: every page as it last wrote it. */
		for (i = 0; !ret && i < s.nr; i++)
			wl_read_page(&env, mm, s.addr + i * USWAP_PAGE_SIZE, i, s.vers[i], s.buf);
		uswap_mm_destroy(mm);
	}
	free(s.vers);
	free(child.vers);
	free(s.buf);
	return wl_teardown(&env, ret);
}
