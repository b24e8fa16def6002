/* SPDX-License-Identifier: MIT */
/*
 * Private helpers shared by the workloads (workload_*.c): checked pages,
 * the run environment (budget + devices), counters, figures, time.
 */
#ifndef USWAP_WORKLOAD_INTERNAL_H
#define USWAP_WORKLOAD_INTERNAL_H

#include <stdatomic.h>

#include <uswap/mm.h>
#include <uswap/swap.h>
#include <uswap/workload.h>

#define WL_PAGE_WORDS	(USWAP_PAGE_SIZE / sizeof(uint64_t))

/* One run's budget and devices, and the counters its threads share. */
#define WL_MAX_GROUPS	64	/* memory cgroups of one run */

struct wl_env {
	const struct uswap_workload_config *cfg;
	struct uswap_workload_result *res;
	struct uswap_mem *mem;
	int types[USWAP_WL_MAX_SPECS];	/* device types swapped on, -1 if none */
	unsigned int nr_types;
	double t0, t_last_progress;
	double cpu0;				/* process CPU time at t0, seconds */
	struct uswap_memcg *memcg[WL_MAX_GROUPS];	/* cfg->groups groups */
	unsigned int nr_memcg;
	_Atomic uint64_t bad_pages;
	_Atomic uint64_t access_errors;
	_Atomic int first_error;		/* first access error (-errno), 0 if none */
	_Atomic uint64_t zram_peak;		/* compressed devices' memory, peak bytes */
	_Atomic uint64_t meta_peak;		/* devices' dynamic slot metadata, peak bytes */
	_Atomic unsigned int meta_tick;		/* charge checks since the last sample */
};

/* Time. */
double wl_now(void);

/* A small fast PRNG (xoshiro256**), one per thread. */
struct wl_rng {
	uint64_t s[4];
};
void wl_rng_seed(struct wl_rng *r, uint64_t seed, uint64_t stream);
uint64_t wl_rng_next(struct wl_rng *r);
/* Uniform in [0, n), n > 0. */
uint64_t wl_rng_below(struct wl_rng *r, uint64_t n);

/* Page contents: fill a buffer for (@id, @ver); check one (ver 0: zeros). */
void wl_page_fill(uint64_t *buf, uint64_t id, uint64_t ver);
bool wl_page_ok(const uint64_t *buf, uint64_t id, uint64_t ver);

/*
 * An address space for the workload's process @idx: in group idx mod N
 * when the run has groups (cfg->groups), else in the root.
 * Context: any. Return: 0 and *@mm, or -errno.
 */
int wl_mm_create(struct wl_env *env, unsigned int idx, struct uswap_mm **mm);

/*
 * Checked accesses of one page: write (@id, @ver) at @addr; read the page
 * at @addr and check it holds (@id, @ver); version 0 is a page of zeros.
 * A failed access counts one access error, a wrong page one bad page. @buf is a page-sized scratch
 * buffer. Return: 0, or the access's -errno.
 */
int wl_write_page(struct wl_env *env, struct uswap_mm *mm, uint64_t addr, uint64_t id,
		  uint64_t ver, uint64_t *buf);
int wl_read_page(struct wl_env *env, struct uswap_mm *mm, uint64_t addr, uint64_t id,
		 uint64_t ver, uint64_t *buf);

/* Budget and devices as @cfg says; zero @res, name it. Return: 0, -errno. */
int wl_setup(struct wl_env *env, const char *name, const struct uswap_workload_config *cfg,
	     struct uswap_workload_result *res);
/*
 * After the last address space is gone: statistics into res, a reclaim
 * pass, the leak check, budget destroyed, devices swapped off.
 * @ret: the workload's own result so far. Return: the run's result.
 */
int wl_teardown(struct wl_env *env, int ret);

/* Readahead of some address spaces, summed (uswap_mm_stats). */
struct wl_ra {
	uint64_t pages, hits;
};
/* Add @mm's readahead to @acc (before the mm is destroyed). */
void wl_ra_add(struct wl_ra *acc, struct uswap_mm *mm);
/* Record @acc as figures @pages_name and @wasted_name (pages - hits). */
void wl_ra_figures(struct wl_env *env, const struct wl_ra *acc, const char *pages_name,
		   const char *wasted_name);

/* Record a figure in the result (name: a static string). */
void wl_figure(struct wl_env *env, const char *name, double value);

/* Report progress through cfg->progress, at most every 50 ms. */
void wl_progress(struct wl_env *env, const char *phase, double frac);

/* Median of @n doubles (sorts them). */
double wl_median(double *v, unsigned int n);

/* Memory for per-page tables (zeroed); NULL on failure. */
void *wl_calloc(size_t n, size_t size);

#endif
