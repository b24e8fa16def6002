/* SPDX-License-Identifier: MIT */
/*
 * What the workloads share: checked pages, the run's budget and devices
 * (set up and torn down, with the leak check), counters and figures.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uswap/legacy.h>
#include "io/backend.h"
#include "swap/swap_internal.h"
#include "workload/workload_internal.h"
#include "util/alloc.h"
#include "util/debug.h"

double wl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The process's CPU time (all threads, user and system), seconds. */
static double wl_cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void wl_rng_seed(struct wl_rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ splitmix64(stream + 0x1234567ULL);
	int i;

	for (i = 0; i < 4; i++) {
		x = splitmix64(x);
		r->s[i] = x ? x : 1;
	}
}

uint64_t wl_rng_next(struct wl_rng *r)
{
	uint64_t *s = r->s;
	uint64_t res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

uint64_t wl_rng_below(struct wl_rng *r, uint64_t n)
{
	/* Lemire's multiply-shift: bias below 2^-32 for our sizes. */
	return (uint64_t)(((unsigned __int128)wl_rng_next(r) * n) >> 64);
}

/*
 * Words 2..510: 254 words derived from (id, ver), then repeated (so that a
 * compressing device sees about 2:1, as real anonymous memory often is);
 * word 511: a hash of words 0..510.
 */
#define PAT_WORDS 256

static uint64_t page_hash(const uint64_t *w)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < WL_PAGE_WORDS - 1; i++)
		h = (h ^ w[i]) * 0x100000001b3ULL;
	return splitmix64(h);
}

static uint64_t pat_word(uint64_t key, size_t i)
{
	return splitmix64(key + (i % PAT_WORDS));
}

void wl_page_fill(uint64_t *w, uint64_t id, uint64_t ver)
{
	uint64_t key = splitmix64(id * 0x9e3779b97f4a7c15ULL ^ ver);
	size_t i;

	w[0] = id;
	w[1] = ver;
	for (i = 2; i < PAT_WORDS; i++)
		w[i] = pat_word(key, i);
	for (; i < WL_PAGE_WORDS - 1; i++)
		w[i] = w[i - (PAT_WORDS - 2)];
	w[WL_PAGE_WORDS - 1] = page_hash(w);
}

bool wl_page_ok(const uint64_t *w, uint64_t id, uint64_t ver)
{
	uint64_t key;
	size_t i;

	if (!ver) {
		for (i = 0; i < WL_PAGE_WORDS; i++)
			if (w[i])
				return false;
		return true;
	}
	if (w[0] != id || w[1] != ver || w[WL_PAGE_WORDS - 1] != page_hash(w))
		return false;
	key = splitmix64(id * 0x9e3779b97f4a7c15ULL ^ ver);
	for (i = 2; i < PAT_WORDS; i++)
		if (w[i] != pat_word(key, i))
			return false;
	for (; i < WL_PAGE_WORDS - 1; i++)
		if (w[i] != w[i - (PAT_WORDS - 2)])
			return false;
	return true;
}

static void note_error(struct wl_env *env, int err)
{
	int zero = 0;

	atomic_fetch_add(&env->access_errors, 1);
	atomic_compare_exchange_strong(&env->first_error, &zero, err);
}

int wl_write_page(struct wl_env *env, struct uswap_mm *mm, uint64_t addr, uint64_t id,
		  uint64_t ver, uint64_t *buf)
{
	int err;

	if (ver)
		wl_page_fill(buf, id, ver);
	else
		memset(buf, 0, USWAP_PAGE_SIZE);	/* version 0: a page of zeros */
	err = uswap_mm_write(mm, addr, buf, USWAP_PAGE_SIZE);
	if (err)
		note_error(env, err);
	return err;
}

int wl_read_page(struct wl_env *env, struct uswap_mm *mm, uint64_t addr, uint64_t id,
		 uint64_t ver, uint64_t *buf)
{
	int err = uswap_mm_read(mm, addr, buf, USWAP_PAGE_SIZE);

	if (err) {
		note_error(env, err);
		return err;
	}
	if (!wl_page_ok(buf, id, ver)) {
		if (atomic_fetch_add(&env->bad_pages, 1) < 10 && getenv("USWAP_WL_DEBUG"))
			uswap_err_printf("bad page: mm %p addr %#llx want id %llu ver %llu, has id %llu ver %llu hash %s",
				(void *)mm, (unsigned long long)addr, (unsigned long long)id,
				(unsigned long long)ver, (unsigned long long)buf[0],
				(unsigned long long)buf[1],
				buf[WL_PAGE_WORDS - 1] == 0 ? "0" : "set");
	}
	return 0;
}

/* "SPEC[,prio=N]" -> the spec and swapon flags (equal priority 0 by default). */
static int split_spec(const char *in, char *spec, size_t len, int *flags)
{
	const char *comma = strchr(in, ',');
	size_t n = comma ? (size_t)(comma - in) : strlen(in);
	long prio = 0;

	if (n + 1 > len)
		return -EINVAL;
	memcpy(spec, in, n);
	spec[n] = 0;
	if (comma) {
		char *end;

		if (strncmp(comma + 1, "prio=", 5))
			return -EINVAL;
		prio = strtol(comma + 6, &end, 0);
		if (*end || end == comma + 6 || prio < 0 || prio > SWAP_FLAG_PRIO_MASK)
			return -EINVAL;
	}
	*flags = SWAP_FLAG_PREFER | (int)prio;
	return 0;
}

/*
 * Memory the run's compressed devices hold now (zram's mem_used: data and
 * metadata), in bytes. The devices stay on for the whole run, so reading
 * their backends without a pin is safe here. Context: lockless.
 */
static uint64_t wl_zram_bytes(struct wl_env *env)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < env->nr_types; i++) {
		struct swap_info_struct *si = atomic_load(&swap_info[env->types[i]]);
		struct swap_zram_stats zs;

		if (si && si->bdev && !swap_backend_zram_stats(si->bdev, &zs))
			sum += zs.mem_used;
	}
	return sum;
}

/* The devices' slot metadata now: static (swapon's arrays) or dynamic
 * (swap and extend tables, continuation pages), bytes. Context: lockless. */
static uint64_t wl_metadata_bytes(struct wl_env *env, bool dynamic)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < env->nr_types; i++) {
		struct uswap_swap_stat ss;

		if (!uswap_swap_stat((unsigned int)env->types[i], &ss))
			sum += dynamic ? ss.dynamic_bytes : ss.static_bytes;
	}
	return sum;
}

/* uswap_mem_config.charged_pages: zram's memory, as pages (rounded up),
 * when cfg->zram_charge; its peak is kept either way, and every 64th call
 * the peak of the devices' dynamic metadata. */
static uint64_t wl_charged_pages(void *arg)
{
	struct wl_env *env = arg;
	uint64_t b = wl_zram_bytes(env), peak = atomic_load_explicit(&env->zram_peak,
								      memory_order_relaxed);

	while (b > peak && !atomic_compare_exchange_weak(&env->zram_peak, &peak, b))
		;
	if (atomic_fetch_add_explicit(&env->meta_tick, 1, memory_order_relaxed) % 64 == 0) {
		b = wl_metadata_bytes(env, true);
		peak = atomic_load_explicit(&env->meta_peak, memory_order_relaxed);
		while (b > peak && !atomic_compare_exchange_weak(&env->meta_peak, &peak, b))
			;
	}
	return env->cfg->zram_charge ? (b + USWAP_PAGE_SIZE - 1) / USWAP_PAGE_SIZE : 0;
}

int wl_setup(struct wl_env *env, const char *name, const struct uswap_workload_config *cfg,
	     struct uswap_workload_result *res)
{
	struct uswap_mem_config mc = { 0 };
	char spec[512], why[256];
	unsigned int i;
	int flags, ret;

	memset(res, 0, sizeof(*res));
	memset(env, 0, sizeof(*env));
	res->workload = name;
	env->cfg = cfg;
	env->res = res;
	for (i = 0; i < USWAP_WL_MAX_SPECS; i++)
		env->types[i] = -1;
	if (!uswap_mem_is_zero(cfg->__reserved, sizeof(cfg->__reserved))) {
		snprintf(res->err, sizeof(res->err), "%s: config __reserved is not zero", name);
		return -EINVAL;
	}
	if (!cfg->nr_specs || cfg->nr_specs > USWAP_WL_MAX_SPECS) {
		snprintf(res->err, sizeof(res->err), "%s: want 1..%d device specs", name,
			 USWAP_WL_MAX_SPECS);
		return -EINVAL;
	}
	if (cfg->budget_bytes < (1ULL << 20) || cfg->max_order > 9 || cfg->write_pct > 100 ||
	    cfg->zero_pct > 100 || cfg->data_bytes < USWAP_PAGE_SIZE ||
	    cfg->groups > WL_MAX_GROUPS) {
		snprintf(res->err, sizeof(res->err),
			 "%s: budget must be >= 1 MiB, data >= 1 page, max order <= 9, write and "
			 "zero %% <= 100, groups <= %d", name, WL_MAX_GROUPS);
		return -EINVAL;
	}
	env->t0 = wl_now();
	env->cpu0 = wl_cpu_now();
	mc.budget_bytes = cfg->budget_bytes;
	mc.max_order = cfg->max_order;
	mc.page_cluster = cfg->page_cluster;
	/* Installed before any device: it reads only env->nr_types of them. */
	mc.charged_pages = wl_charged_pages;
	mc.charged_arg = env;
	ret = uswap_mem_create(&mc, &env->mem);
	if (ret) {
		snprintf(res->err, sizeof(res->err), "%s: uswap_mem_create: %s", name,
			 strerror(-ret));
		return ret;
	}
	for (i = 0; i < cfg->nr_specs; i++) {
		if (split_spec(cfg->specs[i], spec, sizeof(spec), &flags)) {
			snprintf(res->err, sizeof(res->err),
				 "%s: bad spec '%.128s' (want SPEC[,prio=0..32767])", name,
				 cfg->specs[i]);
			ret = -EINVAL;
			goto fail;
		}
		why[0] = 0;
		ret = uswap_swapon_spec_design(spec, flags, cfg->design ? cfg->design : "table",
					       why, sizeof(why));
		if (ret < 0) {
			snprintf(res->err, sizeof(res->err), "%s: swapon %.64s: %.150s", name, spec,
				 why[0] ? why : strerror(-ret));
			goto fail;
		}
		env->types[i] = ret;
		env->nr_types = i + 1;
	}
	for (i = 0; i < cfg->groups; i++) {
		struct uswap_memcg_config gc = {
			.memory_max = cfg->group_memory_max ?
				cfg->group_memory_max / USWAP_PAGE_SIZE : UINT64_MAX,
			.swap_max = cfg->group_swap_max ?
				cfg->group_swap_max / USWAP_PAGE_SIZE * (i + 1) / cfg->groups :
				UINT64_MAX,
		};

		ret = uswap_memcg_create(env->mem, &gc, &env->memcg[i]);
		if (ret) {
			snprintf(res->err, sizeof(res->err), "%s: uswap_memcg_create: %s", name,
				 strerror(-ret));
			goto fail;
		}
		env->nr_memcg = i + 1;
	}
	return 0;
fail:
	for (i = 0; i < env->nr_memcg; i++)
		uswap_memcg_destroy(env->memcg[i]);
	env->nr_memcg = 0;
	uswap_mem_destroy(env->mem);
	env->mem = NULL;
	for (i = 0; i < env->nr_types; i++)
		uswap_swapoff_type((unsigned int)env->types[i]);
	return ret;
}

/** wl_mm_create() - see workload_internal.h. */
int wl_mm_create(struct wl_env *env, unsigned int idx, struct uswap_mm **mm)
{
	return uswap_mm_create_memcg(env->mem, env->nr_memcg ? env->memcg[idx % env->nr_memcg] :
				     NULL, mm);
}

/*
 * The groups' figures: their limits' events summed, and how many groups
 * ever went over a limit (a broken limit: must be 0, else the run fails).
 * Context: the run's thread, its address spaces gone. Return: the number
 * of groups over a limit.
 */
static unsigned int wl_group_figures(struct wl_env *env)
{
	uint64_t ev_max = 0, oom = 0, sw_max = 0, sw_peak = 0, refault = 0;
	unsigned int i, over = 0;

	for (i = 0; i < env->nr_memcg; i++) {
		struct uswap_memcg_stats gs;

		uswap_memcg_get_stats(env->memcg[i], &gs);
		ev_max += gs.events_max;
		oom += gs.events_oom;
		sw_max += gs.swap_events_max;
		sw_peak += gs.swap_peak;
		refault += gs.workingset_refault;
		over += gs.memory_peak > gs.memory_max || gs.swap_peak > gs.swap_max;
	}
	wl_figure(env, "group_memory_max_events", (double)ev_max);
	wl_figure(env, "group_oom_events", (double)oom);
	wl_figure(env, "group_swap_max_events", (double)sw_max);
	wl_figure(env, "group_swap_peak_pages", (double)sw_peak);
	wl_figure(env, "group_refaults", (double)refault);
	wl_figure(env, "groups_over_limit", (double)over);
	return over;
}

int wl_teardown(struct wl_env *env, int ret)
{
	struct uswap_workload_result *res = env->res;
	struct uswap_mem_stats st;
	uint64_t inuse;
	unsigned int i, pass;
	int err;

	uswap_mem_get_stats(env->mem, &st);
	/* The mechanisms behind the figures: readahead, cache hits, and the
	 * old design's bypass and its wait-and-retry loops. */
	{
		uint64_t ra = 0, hits = 0, byp = 0, bretry = 0, cretry = 0, zout = 0, zin = 0;

		for (i = 0; i < env->nr_types; i++) {
			struct uswap_swap_stat ss;
			struct uswap_legacy_stat ls;

			if (!uswap_swap_stat((unsigned int)env->types[i], &ss)) {
				ra += ss.ra_pages;
				hits += ss.ra_hits;
				zout += ss.zero_out;
				zin += ss.zero_in;
			}
			if (!uswap_legacy_stat((unsigned int)env->types[i], &ls)) {
				byp += ls.bypass_swapins;
				bretry += ls.bypass_retries;
				cretry += ls.cache_retries;
			}
		}
		wl_figure(env, "readahead_pages", (double)ra);
		wl_figure(env, "readahead_wasted", (double)(ra > hits ? ra - hits : 0));
		wl_figure(env, "swapin_cache_hits", (double)st.swapin_cache_hits);
		wl_figure(env, "bypass_swapins", (double)byp);
		wl_figure(env, "has_cache_retries", (double)(bretry + cretry));
		wl_charged_pages(env);
		wl_figure(env, "zram_peak_bytes", (double)atomic_load(&env->zram_peak));
		/* Zero pages: flagged at swap-out instead of written, filled
		 * at swap-in instead of read (the I/O they saved). */
		/* The kernel's "system time": here all of the run's CPU time
		 * but the workload's own byte copies is the mm and swap path. */
		wl_figure(env, "cpu_s", wl_cpu_now() - env->cpu0);
		wl_figure(env, "zero_pages_out", (double)zout);
		wl_figure(env, "zero_pages_in", (double)zin);
		wl_figure(env, "metadata_static_bytes", (double)wl_metadata_bytes(env, false));
		wl_figure(env, "metadata_dynamic_peak_bytes", (double)atomic_load(&env->meta_peak));
	}
	if (env->nr_memcg && wl_group_figures(env) && !ret) {
		snprintf(res->err, sizeof(res->err), "%s: a group went over its memory.max or "
			 "swap.max", res->workload);
		ret = -EOVERFLOW;
	}
	res->swapins = st.swapins;
	res->swapouts = st.swapouts;
	res->major_faults = st.major_faults;
	res->bad_pages = atomic_load(&env->bad_pages);
	res->access_errors = atomic_load(&env->access_errors);
	if (!ret && res->access_errors) {
		err = atomic_load(&env->first_error);
		snprintf(res->err, sizeof(res->err), "%s: %llu accesses failed, the first with %s",
			 res->workload, (unsigned long long)res->access_errors, strerror(-err));
		ret = -EIO;
	}
	/*
	 * Every address space is gone: what still holds a slot can only be a
	 * swap-cache folio with no reference left, which reclaim frees.
	 * Anything else is a leak.
	 */
	for (pass = 0; pass < 3; pass++) {
		uswap_mem_reclaim(env->mem, st.nr_frames);
		inuse = 0;
		for (i = 0; i < env->nr_types; i++) {
			struct uswap_swap_stat ss;

			if (!uswap_swap_stat((unsigned int)env->types[i], &ss))
				inuse += ss.inuse_pages;
		}
		if (!inuse)
			break;
	}
	res->leaked_slots = inuse;
	if (inuse && (!ret || ret == -EIO)) {
		snprintf(res->err, sizeof(res->err),
			 "%s: %llu swap slots still in use after the last process exited",
			 res->workload, (unsigned long long)inuse);
		ret = -EBUSY;
	}
	for (i = 0; i < env->nr_memcg; i++)
		uswap_memcg_destroy(env->memcg[i]);
	env->nr_memcg = 0;
	uswap_mem_destroy(env->mem);
	env->mem = NULL;
	for (i = 0; i < env->nr_types; i++) {
		err = uswap_swapoff_type((unsigned int)env->types[i]);
		if (err && !ret) {
			snprintf(res->err, sizeof(res->err), "%s: swapoff of device %d: %s",
				 res->workload, env->types[i], strerror(-err));
			ret = err;
		}
	}
	res->elapsed = wl_now() - env->t0;
	return ret;
}

void wl_ra_add(struct wl_ra *acc, struct uswap_mm *mm)
{
	struct uswap_mm_stats ms;

	uswap_mm_get_stats(mm, &ms);
	acc->pages += ms.readahead_pages;
	acc->hits += ms.readahead_hits;
}

void wl_ra_figures(struct wl_env *env, const struct wl_ra *acc, const char *pages_name,
		   const char *wasted_name)
{
	wl_figure(env, pages_name, (double)acc->pages);
	wl_figure(env, wasted_name, (double)(acc->pages > acc->hits ? acc->pages - acc->hits : 0));
}

void wl_figure(struct wl_env *env, const char *name, double value)
{
	struct uswap_workload_result *res = env->res;

	if (res->nr_figures < USWAP_WL_MAX_FIGURES) {
		res->figures[res->nr_figures].name = name;
		res->figures[res->nr_figures].value = value;
		res->nr_figures++;
	}
}

void wl_progress(struct wl_env *env, const char *phase, double frac)
{
	double now;

	if (!env->cfg->progress)
		return;
	now = wl_now();
	if (now - env->t_last_progress < 0.05 && frac < 1.0)
		return;
	env->t_last_progress = now;
	env->cfg->progress(env->cfg->progress_arg, phase, frac < 0 ? 0 : frac > 1 ? 1 : frac);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double wl_median(double *v, unsigned int n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void *wl_calloc(size_t n, size_t size)
{
	return uswap_calloc(n ? n : 1, size);
}

/** uswap_workload_run() - see uswap/workload.h. */
USWAP_API int uswap_workload_run(const char *name, const struct uswap_workload_config *cfg,
				 struct uswap_workload_result *res)
{
	if (!strcmp(name, "usemem"))
		return uswap_workload_usemem(cfg, res);
	if (!strcmp(name, "bgsave"))
		return uswap_workload_bgsave(cfg, res);
	if (!strcmp(name, "build"))
		return uswap_workload_build(cfg, res);
	if (!strcmp(name, "random"))
		return uswap_workload_random(cfg, res);
	if (!strcmp(name, "sharedfault"))
		return uswap_workload_sharedfault(cfg, res);
	return -ENOENT;
}

/** uswap_workload_figure() - see uswap/workload.h. */
USWAP_API double uswap_workload_figure(const struct uswap_workload_result *res,
				       const char *name, double dflt)
{
	unsigned int i;

	for (i = 0; i < res->nr_figures; i++)
		if (!strcmp(res->figures[i].name, name))
			return res->figures[i].value;
	return dflt;
}
