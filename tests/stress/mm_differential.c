/* SPDX-License-Identifier: MIT */
/*
 * mm_differential: the mm layer against a plain model, as
 * table_differential does for slots.
 *
 * A world is a few address spaces and one shmem object. Its model is just
 * bytes: for each mapping of each address space, and for the shmem object,
 * what a program would read there. Random steps act on both: mmap, write
 * of random bytes at a random place, read (compared with the model), fork
 * (the child's model is a copy of the parent's), exit, munmap,
 * madvise(DONTNEED) (the model reads zeros), reclaim of N pages, shmem
 * writes and reads, and swapoff/swapon of a second device. Every so many
 * steps, and at the end, every byte of every mapping is read and compared.
 *
 * Variant 1: one thread, direct reclaim only (the run is a function of
 * the seed). Variant 2: USWAP_TEST_THREADS (default 3) threads, each with
 * a world of its own over one shared budget and the same devices, with
 * kswapd: forks, copy-on-write, reclaim and swapoff of one family race
 * those of the others. Large folios in one variant or the other.
 *
 * The address spaces of a world live in 2-3 memory cgroups with random
 * memory.max and memory.swap.max (a fork in its parent's); every step
 * checks each group's limits, an access refused at a limit (-ENOMEM)
 * leaves the model as the pages before it; zero-filled pages are among
 * the data. Before the final check the limits are lifted: every byte
 * must then read back.
 *
 * At the end every mm, group and object is gone, no slot is in use, every
 * frame is free and both devices swap off.
 *
 * USWAP_TEST_OPS (steps in all, half in each variant; default 400000),
 * USWAP_TEST_SEED, USWAP_TEST_DESIGN ("table" or "legacy"),
 * USWAP_TEST_THREADS.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uswap/legacy.h>
#include <uswap/mm.h>
#include <uswap/swap.h>
#include "testutil.h"
#include "mm_model.h"

/* Pages a group may be over memory.max for a moment with other reclaimers
 * (variant 2): a readahead window and a large folio. */
#define LIMIT_SLACK	(USWAP_SWAPIN_RA_MAX + (1U << 4))

static void *world_fn(void *arg)
{
	struct world *w = arg;

	/* Single-threaded, a group's memory.max holds after every step; with
	 * other worlds and kswapd reclaiming alongside, readahead charged past
	 * the limit may be held up (isolated by them) for a moment. */
	uint64_t slack = variant == 1 ? 0 : LIMIT_SLACK;

	if (!world_init(w))
		return NULL;
	for (w->step = 0; w->step < w->ops && !atomic_load(&failed); w->step++) {
		if (!step(w))
			break;
		if (!check_limits(w, slack))
			break;
		if ((w->step + 1) % CHECK_EVERY == 0) {
			w->op = "check all";
			if (!check_all(w))
				break;
		}
	}
	if (!atomic_load(&failed)) {
		w->op = "final check";
		lift_limits(w);
		check_all(w);
	}
	return NULL;
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

/* One variant: @nthreads worlds over a budget of @mib MiB. Return: 0 or 1. */
static int run_variant(unsigned int nthreads, uint64_t ops, unsigned int max_order,
		       bool kswapd, unsigned int mib)
{
	struct uswap_mem_config cfg = { .budget_bytes = (uint64_t)mib << 20,
					.max_order = max_order, .no_kswapd = !kswapd };
	static struct world worlds[MAX_THREADS];
	struct uswap_mem_stats st;
	struct timespec t0, t1;
	char err[160] = "";
	unsigned int i, k;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(worlds, 0, sizeof(worlds));
	b_off_ok = b_off_enomem = b_off_ebusy = b_on = 0;
	if (uswap_mem_create(&cfg, &mem)) {
		fprintf(stderr, "mm_differential: mem_create failed\n");
		return 1;
	}
	dev_a = uswap_swapon_spec_design("zram:64M", SWAP_FLAG_PREFER | 10, design, err,
					 sizeof(err));
	if (dev_a < 0) {
		fprintf(stderr, "mm_differential: swapon: %d %s\n", dev_a, err);
		return 1;
	}
	for (i = 0; i < nthreads; i++) {
		worlds[i].id = i;
		worlds[i].rng = mix64(mix64(seed) ^ (0x1000ULL * variant + i)) | 1;
		worlds[i].ops = ops / nthreads;
		worlds[i].groups = true;
	}
	if (nthreads == 1) {
		world_fn(&worlds[0]);
	} else {
		for (i = 0; i < nthreads; i++)
			pthread_create(&worlds[i].tid, NULL, world_fn, &worlds[i]);
		for (i = 0; i < nthreads; i++)
			pthread_join(worlds[i].tid, NULL);
	}
	if (atomic_load(&failed))
		return 1;	/* leave the state for a debugger: teardown may trip */
	uswap_mem_get_stats(mem, &st);
	printf("mm_differential: variant %u (%u thread(s), max order %u, %s): swapouts %" PRIu64
	       " swapins %" PRIu64 " cow copies %" PRIu64 " reuses %" PRIu64 " splits %" PRIu64
	       " cache hits %" PRIu64 "; device B on %" PRIu64 " off %" PRIu64 " -ENOMEM %" PRIu64
	       " -EBUSY %" PRIu64 "\n", variant, nthreads, max_order,
	       kswapd ? "kswapd" : "direct reclaim", st.swapouts, st.swapins, st.cow_copies,
	       st.cow_reuses, st.thp_splits, st.swapin_cache_hits, b_on, b_off_ok, b_off_enomem,
	       b_off_ebusy);
	for (i = 0; i < nthreads; i++)
		printf("mm_differential:   world %u: %" PRIu64 " writes %" PRIu64 " reads %" PRIu64
		       " forks %" PRIu64 " exits %" PRIu64 " mmaps %" PRIu64 " munmaps %" PRIu64
		       " madvises %" PRIu64 " reclaims %" PRIu64 " shmem %" PRIu64 " swapoff/on, %u"
		       " groups, %" PRIu64 " accesses refused at a limit\n",
		       i, worlds[i].n_write, worlds[i].n_read, worlds[i].n_fork, worlds[i].n_exit,
		       worlds[i].n_mmap, worlds[i].n_munmap, worlds[i].n_madv, worlds[i].n_reclaim,
		       worlds[i].n_shm, worlds[i].n_swapoff, worlds[i].ncg, worlds[i].n_oom);
	if (!st.swapouts || !st.swapins) {
		fprintf(stderr, "mm_differential: FAILED: nothing was swapped (variant %u)\n",
			variant);
		return 1;
	}
	for (i = 0; i < nthreads; i++)
		world_fini(&worlds[i]);
	/* Nothing maps or holds anything: reclaim drops the cache. */
	for (k = 0; k < 100; k++) {
		uswap_mem_reclaim(mem, st.nr_frames * 4);
		uswap_mem_get_stats(mem, &st);
		if (st.free_frames == st.nr_frames && !dev_inuse(dev_a) && !dev_inuse(dev_b))
			break;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	if (dev_inuse(dev_a) || dev_inuse(dev_b)) {
		fprintf(stderr, "mm_differential: FAILED (seed %" PRIu64 "): slots leaked: A %"
			PRIu64 " B %" PRIu64 "\n", seed, dev_inuse(dev_a), dev_inuse(dev_b));
		return 1;
	}
	if (st.free_frames != st.nr_frames) {
		fprintf(stderr, "mm_differential: FAILED (seed %" PRIu64 "): frames leaked: %"
			PRIu64 " free of %" PRIu64 "\n", seed, st.free_frames, st.nr_frames);
		return 1;
	}
	uswap_mem_destroy(mem);
	ret = uswap_swapoff_type((unsigned int)dev_a);
	if (!ret && dev_b >= 0)
		ret = uswap_swapoff_type((unsigned int)dev_b);
	dev_b = -1;
	if (ret) {
		fprintf(stderr, "mm_differential: FAILED: swapoff at the end: %d\n", ret);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("mm_differential: variant %u OK in %.1f s\n", variant,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	fflush(stdout);
	return 0;
}

int main(void)
{
	const char *th = getenv("USWAP_TEST_THREADS");
	unsigned int nthreads = th && *th ? (unsigned int)atoi(th) : 3;
	unsigned int big;
	uint64_t ops;

	if (getenv("USWAP_TEST_DESIGN") && *getenv("USWAP_TEST_DESIGN"))
		design = getenv("USWAP_TEST_DESIGN");
	if (strcmp(design, "table") && strcmp(design, "legacy")) {
		fprintf(stderr, "mm_differential: USWAP_TEST_DESIGN must be table or legacy\n");
		return 1;
	}
	seed = test_seed("mm_differential");
	ops = test_ops(400000) / 2;
	if (nthreads < 2)
		nthreads = 2;
	if (nthreads > MAX_THREADS)
		nthreads = MAX_THREADS;
	/* Large folios in one variant or the other, by the seed. */
	big = (unsigned int)(seed & 1);
	printf("mm_differential: design %s, %" PRIu64 " ops per variant\n", design, ops);
	variant = 1;
	if (run_variant(1, ops, big ? 4 : 0, false, 1))
		return 1;
	variant = 2;
	if (run_variant(nthreads, ops, big ? 0 : 4, true, 2))
		return 1;
	printf("mm_differential: OK\n");
	return 0;
}
