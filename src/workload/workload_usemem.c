/* SPDX-License-Identifier: MIT */
/*
 * usemem (vm-scalability): N processes, each with its own address space
 * and thread, write every page of a region of data/N bytes, then read it
 * back and check it, then exit. Under a budget smaller than the data the
 * write pass pushes the oldest pages out and the read pass faults them
 * back in: a streaming swap-out / swap-in shape with one mapping per page.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/workload_internal.h"
#include "util/alloc.h"
#include "util/debug.h"

struct usemem_proc {
	struct wl_env *env;
	unsigned int idx;
	uint64_t nr_pages;
	pthread_barrier_t *start;
	_Atomic unsigned int *finished;	/* threads done, shared */
	_Atomic uint64_t done;		/* pages written + read */
	double t_start, t_end, free_s;
	int err;
};

static void *usemem_fn(void *arg)
{
	struct usemem_proc *p = arg;
	struct wl_env *env = p->env;
	struct uswap_mm *mm = NULL;
	uint64_t *buf, addr, i, id0 = (uint64_t)p->idx << 40;
	uint8_t *ver;			/* 1 written, 0 zeros (written so, or the write failed) */
	double t;

	buf = uswap_aligned_alloc(USWAP_PAGE_SIZE, USWAP_PAGE_SIZE);
	ver = wl_calloc(p->nr_pages, 1);
	p->err = buf && ver ? wl_mm_create(env, p->idx, &mm) : -ENOMEM;
	if (!p->err)
		p->err = uswap_mm_mmap(mm, p->nr_pages * USWAP_PAGE_SIZE, &addr);
	pthread_barrier_wait(p->start);
	p->t_start = wl_now();
	for (i = 0; !p->err && i < p->nr_pages; i++) {
		/* cfg->zero_pct of the pages, spread by a hash of their id, are
		 * zeros (version 0), as a program's untouched buffers. */
		bool zero = ((id0 + i) * 0x9e3779b97f4a7c15ULL >> 40) % 100 < env->cfg->zero_pct;

		ver[i] = !wl_write_page(env, mm, addr + i * USWAP_PAGE_SIZE, id0 + i, !zero, buf) &&
			 !zero;
		atomic_fetch_add_explicit(&p->done, 1, memory_order_relaxed);
	}
	for (i = 0; !p->err && i < p->nr_pages; i++) {
		wl_read_page(env, mm, addr + i * USWAP_PAGE_SIZE, id0 + i, ver[i], buf);
		atomic_fetch_add_explicit(&p->done, 1, memory_order_relaxed);
	}
	p->t_end = wl_now();
	t = wl_now();
	uswap_mm_destroy(mm);
	p->free_s = wl_now() - t;
	free(buf);
	free(ver);
	atomic_fetch_add(p->finished, 1);
	return NULL;
}

/** uswap_workload_usemem() - see uswap/workload.h. */
USWAP_API int uswap_workload_usemem(const struct uswap_workload_config *cfg,
				    struct uswap_workload_result *res)
{
	unsigned int n = cfg->procs ? cfg->procs : (cfg->threads ? cfg->threads : 4), i;
	uint64_t per = cfg->data_bytes / USWAP_PAGE_SIZE / (n ? n : 1), total, done;
	struct usemem_proc *procs;
	pthread_barrier_t start;
	_Atomic unsigned int finished = 0;
	struct wl_env env;
	pthread_t *tids;
	double t_first = 0, t_last = 0, *mbs, *frees;
	int ret;

	ret = wl_setup(&env, "usemem", cfg, res);
	if (ret)
		return ret;
	if (!per) {
		snprintf(res->err, sizeof(res->err), "usemem: less than a page per process");
		return wl_teardown(&env, -EINVAL);
	}
	procs = wl_calloc(n, sizeof(*procs));
	tids = wl_calloc(n, sizeof(*tids));
	mbs = wl_calloc(n, sizeof(*mbs));
	frees = wl_calloc(n, sizeof(*frees));
	if (!procs || !tids || !mbs || !frees) {
		ret = -ENOMEM;
		goto out;
	}
	pthread_barrier_init(&start, NULL, n);
	for (i = 0; i < n; i++) {
		procs[i].env = &env;
		procs[i].idx = i;
		procs[i].nr_pages = per;
		procs[i].start = &start;
		procs[i].finished = &finished;
		if (pthread_create(&tids[i], NULL, usemem_fn, &procs[i])) {
			/* The barrier counts n threads: all or nothing. */
			uswap_err_printf("usemem: cannot create thread %u", i);
			abort();
		}
	}
	total = 2 * per * n;
	for (;;) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		done = 0;
		for (i = 0; i < n; i++)
			done += atomic_load_explicit(&procs[i].done, memory_order_relaxed);
		wl_progress(&env, "fill+read", (double)done / (double)total);
		if (atomic_load(&finished) == n)
			break;
		nanosleep(&ts, NULL);
	}
	for (i = 0; i < n; i++)
		pthread_join(tids[i], NULL);
	pthread_barrier_destroy(&start);
	for (i = 0; i < n; i++) {
		if (procs[i].err && !ret) {
			ret = procs[i].err;
			snprintf(res->err, sizeof(res->err), "usemem: process %u: %s", i,
				 strerror(-ret));
		}
		if (!i || procs[i].t_start < t_first)
			t_first = procs[i].t_start;
		if (procs[i].t_end > t_last)
			t_last = procs[i].t_end;
		mbs[i] = 2.0 * (double)(per * USWAP_PAGE_SIZE) / (1 << 20) /
			 (procs[i].t_end - procs[i].t_start);
		frees[i] = procs[i].free_s * 1e3;
	}
	wl_figure(&env, "throughput_mb_per_s",
		  (double)(total * USWAP_PAGE_SIZE) / (1 << 20) / (t_last - t_first));
	wl_figure(&env, "proc_mb_per_s_median", wl_median(mbs, n));
	wl_figure(&env, "free_ms_median", wl_median(frees, n));
	wl_figure(&env, "procs", n);
out:
	free(procs);
	free(tids);
	free(mbs);
	free(frees);
	return wl_teardown(&env, ret);
}
