/* SPDX-License-Identifier: MIT */
/*
 * Workloads over the mm layer: the shapes of the swap-table series' tests
 * (the swap table phase II series, docs/KERNEL-MAP.md) run against emulated
 * address spaces.
 *
 *   usemem  N processes fill their own region and read it back
 *           (vm-scalability usemem);
 *   bgsave  a "redis" parent serving random page reads/writes forks a
 *           child that reads the whole dataset once (Redis BGSAVE);
 *   build   a "make" parent whose workers fork short-lived children that
 *           touch inherited and private pages, then exit (kernel build);
 *   random  uniform random reads/writes over a working set larger than
 *           the budget;
 *   sharedfault  many threads, in one process and across forked ones,
 *           fault the same swapped-out entries at the same moment.
 *
 * Each run creates its own budget (uswap_mem_create) and swaps on its own
 * devices (uswap_swapon_spec, in the order given), and tears both down.
 * Devices are global to the process: run one workload at a time, with no
 * other device swapped on, or its pages may land there too.
 *
 * Every page a workload writes carries its identity and a checksum:
 *   bytes 0..7     page id (unique within the run)
 *   bytes 8..15    version (1 for the first write, +1 per rewrite)
 *   bytes 16..4087 a pattern derived from (id, version), half-compressible
 *   bytes 4088..   a 64-bit hash of bytes 0..4087
 * and every access checks the page against the version the workload last
 * wrote there (or zeros for a page never written); a mismatch counts one
 * bad page. A correct swap subsystem gives bad_pages == 0. With the
 * environment variable USWAP_WL_DEBUG set, the first ten mismatches are
 * reported (address space, address, wanted and found id/version) through
 * the output function of uswap_set_output(), by default on stderr.
 *
 * Per address space, the readahead its faults did and the readahead folios
 * they hit are figures too (ROLE_readahead_pages, ROLE_readahead_wasted =
 * pages - hits, ROLE being parent, child or children; a hit is credited to
 * the faulting address space, as the kernel credits the faulting VMA),
 * beside the device totals readahead_pages and readahead_wasted.
 */
#ifndef USWAP_WORKLOAD_H
#define USWAP_WORKLOAD_H

#include <uswap/common.h>

#ifdef __cplusplus
extern "C" {
#endif

#define USWAP_WL_MAX_SPECS	8
#define USWAP_WL_MAX_FIGURES	32

/*
 * Progress report: @phase names what runs ("fill", "serve", ...), @frac
 * is the fraction of the whole run done (0..1). Called from the
 * workload's main thread, at most every few milliseconds.
 */
typedef void (*uswap_workload_progress_fn)(void *arg, const char *phase, double frac);

struct uswap_workload_config {
	uint64_t budget_bytes;		/* memory budget (>= 1 MiB) */
	uint64_t data_bytes;		/* data set: total over all processes */
	/* device specs: "zram:SIZE[:alg]" or "file:PATH", each optionally
	 * followed by ",prio=N"; equal priority (0) when none is given */
	const char *specs[USWAP_WL_MAX_SPECS];
	unsigned int nr_specs;
	unsigned int threads;		/* worker threads (0: workload default) */
	unsigned int procs;		/* address spaces (0: workload default) */
	uint64_t seed;
	double seconds;			/* duration of a timed phase (0: default) */
	uint64_t ops;			/* operations of a counted phase (0: by time) */
	unsigned int max_order;		/* largest anon folio order (0..9) */
	unsigned int write_pct;		/* bgsave, random: % of operations that write */
	bool nofork;			/* bgsave: no child; measure the parent alone */
	bool zram_charge;		/* count compressed devices' memory against the
					 * budget, as the kernel's RAM; false (default):
					 * report it beside (figure zram_peak_bytes) */
	int page_cluster;		/* vm.page-cluster as struct uswap_mem_config has it:
					 * 1..5, 0 the default (3), -1 for page-cluster 0 */
	const char *design;		/* slot design of the devices: "table" (NULL) or "legacy" */
	uswap_workload_progress_fn progress;	/* may be NULL */
	void *progress_arg;
	/* Appended from __reserved (the size is unchanged) */
	unsigned int zero_pct;		/* usemem: % of pages written as zeros */
	unsigned int groups;		/* address spaces in N memory cgroups, in
					 * turn (0: none, the root) */
	uint64_t group_memory_max;	/* each group's memory.max, bytes (0: none) */
	uint64_t group_swap_max;	/* swap.max of the last group, bytes (0: none);
					 * group i of N gets (i+1)/N of it */
	uint64_t __reserved[5];		/* must be zero (ABI rule of <uswap/mm.h>) */
};

struct uswap_workload_figure {
	const char *name;		/* static string, e.g. "throughput_mb_per_s" */
	double value;
};

struct uswap_workload_result {
	const char *workload;		/* static string */
	uint64_t bad_pages;		/* pages that did not read back as written */
	uint64_t access_errors;		/* reads/writes that failed (-ENOMEM, -EIO) */
	uint64_t swapins, swapouts;	/* pages, uswap_mem_stats over the run */
	uint64_t major_faults;
	uint64_t leaked_slots;		/* slots in use after the last exit */
	double elapsed;			/* seconds, setup to teardown */
	unsigned int nr_figures;
	struct uswap_workload_figure figures[USWAP_WL_MAX_FIGURES];
	char err[256];			/* why the run failed, when it did */
	uint64_t __reserved[8];		/* zeroed; later fields come from here */
};

/**
 * uswap_workload_usemem() - run the usemem workload with @cfg and fill @res.
 * @cfg->procs processes each fill their own region, then read it back
 * (vm-scalability usemem).
 * Context: may sleep; creates threads; swaps devices on and off.
 * Return: 0 (check res->bad_pages: the run completed, and every page was
 * checked); -EINVAL (bad config, bad spec: reason in res->err); -ENOMEM;
 * -EBUSY (a device still had slots in use after every process exited and
 * a reclaim pass: a leak, res->leaked_slots); -EIO (accesses failed:
 * res->access_errors); or a swapon error.
 */
USWAP_API int uswap_workload_usemem(const struct uswap_workload_config *cfg,
				    struct uswap_workload_result *res);

/**
 * uswap_workload_bgsave() - run the bgsave workload with @cfg and fill @res.
 * A "redis" parent serving random page reads and writes forks a child
 * that reads the whole data set once (Redis BGSAVE); @cfg->nofork leaves
 * the child out.
 * Context: may sleep; creates threads; swaps devices on and off.
 * Return: as uswap_workload_usemem(): 0 (check res->bad_pages), -EINVAL
 * (reason in res->err), -ENOMEM, -EBUSY (leaked slots), -EIO (accesses
 * failed), or a swapon error.
 */
USWAP_API int uswap_workload_bgsave(const struct uswap_workload_config *cfg,
				    struct uswap_workload_result *res);

/**
 * uswap_workload_build() - run the build workload with @cfg and fill @res.
 * A "make" parent whose workers fork short-lived children that touch
 * inherited and private pages, then exit (a kernel build).
 * Context: may sleep; creates threads; swaps devices on and off.
 * Return: as uswap_workload_usemem(): 0 (check res->bad_pages), -EINVAL
 * (reason in res->err), -ENOMEM, -EBUSY (leaked slots), -EIO (accesses
 * failed), or a swapon error.
 */
USWAP_API int uswap_workload_build(const struct uswap_workload_config *cfg,
				   struct uswap_workload_result *res);

/**
 * uswap_workload_random() - run the random workload with @cfg and fill @res.
 * Uniform random reads and writes over a working set larger than the
 * budget.
 * Context: may sleep; creates threads; swaps devices on and off.
 * Return: as uswap_workload_usemem(): 0 (check res->bad_pages), -EINVAL
 * (reason in res->err), -ENOMEM, -EBUSY (leaked slots), -EIO (accesses
 * failed), or a swapon error.
 */
USWAP_API int uswap_workload_random(const struct uswap_workload_config *cfg,
				    struct uswap_workload_result *res);

/**
 * uswap_workload_sharedfault() - run the sharedfault workload with @cfg and
 * fill @res. @cfg->threads threads in each of @cfg->procs address spaces
 * related by fork (defaults 2 and 2) fault the same swapped-out pages at
 * the same moment, round after round for @cfg->seconds: entries shared by
 * fork (count @cfg->procs) and entries of the parent alone (count 1).
 * Context: may sleep; creates threads; swaps devices on and off.
 * Return: as uswap_workload_usemem(): 0 (check res->bad_pages), -EINVAL
 * (more than 16 processes or 64 threads, or a bad config: reason in
 * res->err), -ENOMEM, -EAGAIN (threads could not be started), -EBUSY
 * (leaked slots), -EIO (accesses failed), or a swapon error.
 */
USWAP_API int uswap_workload_sharedfault(const struct uswap_workload_config *cfg,
					 struct uswap_workload_result *res);

/**
 * uswap_workload_run() - run the workload called @name.
 * @name: "usemem", "bgsave", "build", "random" or "sharedfault".
 * Context: as the workload.
 * Return: as the workload; -ENOENT (@name is not a workload).
 */
USWAP_API int uswap_workload_run(const char *name, const struct uswap_workload_config *cfg,
				 struct uswap_workload_result *res);

/**
 * uswap_workload_figure() - the figure called @name in @res, or @dflt.
 * Context: any.
 * Return: the figure's value, or @dflt if @res has none called @name.
 */
USWAP_API double uswap_workload_figure(const struct uswap_workload_result *res,
				       const char *name, double dflt);

#ifdef __cplusplus
}
#endif
#endif
