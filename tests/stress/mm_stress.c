/* SPDX-License-Identifier: MIT */
/*
 * mm_stress: several threads each run a family of address spaces over one
 * small budget: random reads and writes of pattern-carrying pages over a
 * region several times the budget, forks whose child checks a sample of
 * pages (and writes some, copy-on-write) and exits, now or later from a
 * reaper thread, munmap/mmap cycles and madvise(DONTNEED). Meanwhile a
 * thread swaps a second device off and on at random moments (the first
 * stays, so swapoff can succeed; -ENOMEM/-EBUSY are accepted as long as
 * the data stays intact).
 *
 * At the end every mm is gone; after a reclaim pass no slot is in use on
 * any device and every frame is free; every device swaps off.
 *
 * USWAP_TEST_OPS (per thread, default 200000), USWAP_TEST_SEED,
 * USWAP_TEST_THREADS (2..4, default 3).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uswap/mm.h>
#include <uswap/swap.h>
#include "testutil.h"

#define PAGE		USWAP_PAGE_SIZE
#define BUDGET_MIB	8
#define NREG		4
#define MAX_THREADS	4
#define MAX_PENDING	8
#define SAMPLE		24
#define CHILD_VER	1000000	/* children write versions above any parent's */

struct region {
	uint64_t addr;		/* 0: unmapped */
	uint64_t npages;
	uint64_t tag;
	uint32_t *ver;		/* 0 = never written (zeros) */
};

struct snapshot {		/* what a child must see */
	struct uswap_mm *mm;
	struct region reg[NREG];
	uint64_t seed;
};

struct worker {
	pthread_t tid;
	unsigned int id;
	uint64_t seed, ops, pages;
	struct uswap_mm *mm;
	struct region reg[NREG];
	uint64_t gen;
	uint64_t reads, writes, forks, deferred, unmaps, madvises;
};

static struct uswap_mem *mem;
static atomic_int failed;
static atomic_bool workers_done;

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static struct snapshot *queue[MAX_PENDING];
static unsigned int q_len;

static int dev_a = -1;
static _Atomic int dev_b = -1;
static pthread_mutex_t b_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t b_off_ok, b_off_enomem, b_off_ebusy, b_on;

#define FAIL(...) do { \
	fprintf(stderr, "mm_stress: " __VA_ARGS__); \
	fputc('\n', stderr); \
	atomic_store(&failed, 1); \
} while (0)

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static void pat_fill(void *buf, uint64_t tag, uint64_t pg, uint64_t ver)
{
	uint64_t *w = buf, s, i;

	if (!ver) {
		memset(buf, 0, PAGE);
		return;
	}
	s = mix64(tag ^ mix64(pg ^ mix64(ver + 0x51ed)));
	for (i = 0; i < PAGE / 8; i++)
		w[i] = s + i * 0x9e3779b97f4a7c15ULL;
}

static bool write_pg(struct uswap_mm *mm, const struct region *r, uint64_t pg, uint64_t ver,
		     const char *who)
{
	uint64_t buf[PAGE / 8];
	int err;

	pat_fill(buf, r->tag, pg, ver);
	err = uswap_mm_write(mm, r->addr + pg * PAGE, buf, PAGE);
	if (err) {
		FAIL("%s: write tag %" PRIx64 " page %" PRIu64 " v%" PRIu64 ": %d", who, r->tag,
		     pg, ver, err);
		return false;
	}
	return true;
}

static bool check_pg(struct uswap_mm *mm, const struct region *r, uint64_t pg, uint64_t ver,
		     const char *who)
{
	uint64_t want[PAGE / 8], got[PAGE / 8];
	int err;

	pat_fill(want, r->tag, pg, ver);
	err = uswap_mm_read(mm, r->addr + pg * PAGE, got, PAGE);
	if (err) {
		FAIL("%s: read tag %" PRIx64 " page %" PRIu64 " v%" PRIu64 ": %d", who, r->tag,
		     pg, ver, err);
		return false;
	}
	if (memcmp(want, got, PAGE)) {
		uint64_t v, found = UINT64_MAX;

		/* Which version is it: an older one, or a child's? */
		for (v = 0; v < ver + 64 && found == UINT64_MAX; v++) {
			pat_fill(want, r->tag, pg, v);
			if (!memcmp(want, got, PAGE))
				found = v;
		}
		for (v = CHILD_VER; v < CHILD_VER + 1000 && found == UINT64_MAX; v++) {
			pat_fill(want, r->tag, pg, v);
			if (!memcmp(want, got, PAGE))
				found = v;
		}
		FAIL("%s: data mismatch: tag %" PRIx64 " page %" PRIu64 " expected v%" PRIu64
		     " got %s%" PRId64 "%s", who, r->tag, pg, ver,
		     found == UINT64_MAX ? "garbage " : "v", found == UINT64_MAX ? -1 : (int64_t)found,
		     found != UINT64_MAX && found >= CHILD_VER ? " (a child's write)" : "");
		return false;
	}
	return true;
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000L };

	nanosleep(&ts, NULL);
}

/* ---- children ---- */

/* A child checks a sample against the snapshot, writes some pages (COW),
 * rechecks them, exits. */
static void child_run(struct snapshot *s)
{
	uint64_t seed = s->seed;
	unsigned int i;

	for (i = 0; i < SAMPLE && !atomic_load(&failed); i++) {
		struct region *r = &s->reg[test_rand_below(&seed, NREG)];
		uint64_t pg;

		if (!r->addr)
			continue;
		pg = test_rand_below(&seed, r->npages);
		if (test_rand_below(&seed, 4) == 0) {
			/* A version the parent never writes: far above its range. */
			uint64_t v = CHILD_VER + test_rand_below(&seed, 1000);

			if (write_pg(s->mm, r, pg, v, "child"))
				if (check_pg(s->mm, r, pg, v, "child"))
					r->ver[pg] = (uint32_t)v;
		} else {
			check_pg(s->mm, r, pg, r->ver[pg], "child");
		}
	}
	uswap_mm_destroy(s->mm);
	for (i = 0; i < NREG; i++)
		free(s->reg[i].ver);
	free(s);
}

static struct snapshot *snapshot_take(struct worker *w, struct uswap_mm *child)
{
	struct snapshot *s = calloc(1, sizeof(*s));
	unsigned int i;

	if (!s)
		return NULL;
	s->mm = child;
	s->seed = test_rand(&w->seed) | 1;
	for (i = 0; i < NREG; i++) {
		s->reg[i] = w->reg[i];
		s->reg[i].ver = NULL;
		if (w->reg[i].addr) {
			s->reg[i].ver = malloc(w->reg[i].npages * sizeof(uint32_t));
			if (!s->reg[i].ver)
				abort();
			memcpy(s->reg[i].ver, w->reg[i].ver, w->reg[i].npages * sizeof(uint32_t));
		}
	}
	return s;
}

static bool queue_push(struct snapshot *s)
{
	bool ok = false;

	pthread_mutex_lock(&q_lock);
	if (q_len < MAX_PENDING) {
		queue[q_len++] = s;
		ok = true;
		pthread_cond_signal(&q_cond);
	}
	pthread_mutex_unlock(&q_lock);
	return ok;
}

static void *reaper_fn(void *arg)
{
	(void)arg;
	for (;;) {
		struct snapshot *s = NULL;

		pthread_mutex_lock(&q_lock);
		while (!q_len && !atomic_load(&workers_done))
			pthread_cond_wait(&q_cond, &q_lock);
		if (q_len)
			s = queue[--q_len];
		pthread_mutex_unlock(&q_lock);
		if (!s)
			break;
		child_run(s);
	}
	return NULL;
}

/* ---- the second device ---- */

static void *swapper_fn(void *arg)
{
	uint64_t seed = *(uint64_t *)arg;

	while (!atomic_load(&workers_done) && !atomic_load(&failed)) {
		int b;

		sleep_us(5000 + (long)test_rand_below(&seed, 150000));
		pthread_mutex_lock(&b_lock);
		b = atomic_load(&dev_b);
		if (b >= 0) {
			int err = uswap_swapoff_type((unsigned int)b);

			if (!err) {
				atomic_store(&dev_b, -1);
				b_off_ok++;
			} else if (err == -ENOMEM) {
				b_off_enomem++;
			} else if (err == -EBUSY) {
				b_off_ebusy++;
			} else {
				FAIL("swapoff of device %d: %d", b, err);
			}
		} else {
			char err[256] = "";

			b = uswap_swapon_spec("zram:32M", SWAP_FLAG_PREFER | 100, err, sizeof(err));
			if (b < 0)
				FAIL("swapon zram:32M: %d %s", b, err);
			else {
				atomic_store(&dev_b, b);
				b_on++;
			}
		}
		pthread_mutex_unlock(&b_lock);
	}
	return NULL;
}

/* ---- workers ---- */

static bool region_map(struct worker *w, unsigned int i, uint64_t npages)
{
	struct region *r = &w->reg[i];
	int err = uswap_mm_mmap(w->mm, npages * PAGE, &r->addr);

	if (err) {
		FAIL("worker %u: mmap: %d", w->id, err);
		r->addr = 0;
		return false;
	}
	r->npages = npages;
	r->tag = ((uint64_t)w->id << 48) | ++w->gen;
	r->ver = calloc(npages, sizeof(uint32_t));
	if (!r->ver)
		abort();
	return true;
}

static void region_unmap(struct worker *w, unsigned int i)
{
	struct region *r = &w->reg[i];
	int err = uswap_mm_munmap(w->mm, r->addr);

	if (err)
		FAIL("worker %u: munmap: %d", w->id, err);
	free(r->ver);
	memset(r, 0, sizeof(*r));
}

static void do_fork(struct worker *w)
{
	struct uswap_mm *child;
	struct snapshot *s;
	int err = uswap_mm_fork(w->mm, &child);

	if (err) {
		FAIL("worker %u: fork: %d", w->id, err);
		return;
	}
	w->forks++;
	s = snapshot_take(w, child);
	if (!s)
		abort();
	if (test_rand_below(&w->seed, 2) && queue_push(s)) {
		w->deferred++;
		return;
	}
	child_run(s);
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	uint64_t op, per = w->pages / NREG;
	unsigned int i;
	char who[32];

	snprintf(who, sizeof(who), "worker %u", w->id);
	if (uswap_mm_create(mem, &w->mm)) {
		FAIL("%s: mm_create", who);
		return NULL;
	}
	for (i = 0; i < NREG; i++)
		if (!region_map(w, i, per))
			return NULL;
	for (op = 0; op < w->ops && !atomic_load(&failed); op++) {
		uint64_t r = test_rand_below(&w->seed, 1000);
		struct region *reg = &w->reg[test_rand_below(&w->seed, NREG)];
		unsigned int ri = (unsigned int)(reg - w->reg);
		uint64_t pg = test_rand_below(&w->seed, reg->npages);

		if (r < 520) {
			/* Write a short run. */
			uint64_t n = 1 + test_rand_below(&w->seed, 4), k;

			for (k = 0; k < n && pg + k < reg->npages; k++) {
				uint32_t v = reg->ver[pg + k] + 1;

				if (!write_pg(w->mm, reg, pg + k, v, who))
					break;
				reg->ver[pg + k] = v;
				w->writes++;
			}
		} else if (r < 960) {
			uint64_t n = 1 + test_rand_below(&w->seed, 4), k;

			for (k = 0; k < n && pg + k < reg->npages; k++) {
				check_pg(w->mm, reg, pg + k, reg->ver[pg + k], who);
				w->reads++;
			}
		} else if (r < 975) {
			uint64_t n = 1 + test_rand_below(&w->seed, 64);
			int err;

			if (pg + n > reg->npages)
				n = reg->npages - pg;
			err = uswap_mm_madvise_dontneed(w->mm, reg->addr + pg * PAGE, n * PAGE);
			if (err)
				FAIL("%s: madvise: %d", who, err);
			memset(&reg->ver[pg], 0, n * sizeof(uint32_t));
			w->madvises++;
		} else if (r < 982) {
			uint64_t np = per / 2 + test_rand_below(&w->seed, per);

			region_unmap(w, ri);
			region_map(w, ri, np);
			w->unmaps++;
		} else {
			do_fork(w);
		}
	}
	/* Everything we still map, checked once more. */
	for (i = 0; i < NREG && !atomic_load(&failed); i++) {
		uint64_t pg;

		for (pg = 0; pg < w->reg[i].npages && !atomic_load(&failed); pg++)
			check_pg(w->mm, &w->reg[i], pg, w->reg[i].ver[pg], who);
	}
	uswap_mm_destroy(w->mm);
	w->mm = NULL;
	for (i = 0; i < NREG; i++)
		free(w->reg[i].ver);
	return NULL;
}

static uint64_t dev_inuse(int type)
{
	struct uswap_swap_stat st;

	if (type < 0 || uswap_swap_stat((unsigned int)type, &st))
		return 0;
	return st.inuse_pages;
}

int main(void)
{
	struct uswap_mem_config cfg = { .budget_bytes = (uint64_t)BUDGET_MIB << 20 };
	struct worker workers[MAX_THREADS];
	struct uswap_mem_stats st;
	uint64_t seed = test_seed("mm_stress"), ops = test_ops(200000), swapper_seed, frames;
	const char *th = getenv("USWAP_TEST_THREADS");
	unsigned int nthreads = th ? (unsigned int)atoi(th) : 3, i;
	pthread_t reaper, swapper;
	char err[256] = "";
	struct timespec t0, t1;
	int ret, b, k;

	if (nthreads < 2)
		nthreads = 2;
	if (nthreads > MAX_THREADS)
		nthreads = MAX_THREADS;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	frames = cfg.budget_bytes / PAGE;
	if (uswap_mem_create(&cfg, &mem)) {
		fprintf(stderr, "mm_stress: mem_create failed\n");
		return 1;
	}
	dev_a = uswap_swapon_spec("zram:128M", 0, err, sizeof(err));
	if (dev_a < 0) {
		fprintf(stderr, "mm_stress: swapon: %d %s\n", dev_a, err);
		return 1;
	}
	printf("mm_stress: %u threads, %" PRIu64 " ops each, budget %u MiB, %" PRIu64
	       " pages mapped in all\n", nthreads, ops, BUDGET_MIB, 3 * frames);
	fflush(stdout);
	memset(workers, 0, sizeof(workers));
	for (i = 0; i < nthreads; i++) {
		workers[i].id = i;
		workers[i].seed = mix64(seed + i) | 1;
		workers[i].ops = ops;
		workers[i].pages = 3 * frames / nthreads;
	}
	swapper_seed = mix64(seed ^ 0x5a5a) | 1;
	pthread_create(&reaper, NULL, reaper_fn, NULL);
	pthread_create(&swapper, NULL, swapper_fn, &swapper_seed);
	for (i = 0; i < nthreads; i++)
		pthread_create(&workers[i].tid, NULL, worker_fn, &workers[i]);
	for (i = 0; i < nthreads; i++)
		pthread_join(workers[i].tid, NULL);
	pthread_mutex_lock(&q_lock);
	atomic_store(&workers_done, true);
	pthread_cond_broadcast(&q_cond);
	pthread_mutex_unlock(&q_lock);
	pthread_join(reaper, NULL);
	pthread_join(swapper, NULL);

	/* Every mm is gone: a reclaim pass leaves no slot and no frame used. */
	for (k = 0; k < 50; k++) {
		uswap_mem_reclaim(mem, frames * 8);
		uswap_mem_get_stats(mem, &st);
		if (st.free_frames == st.nr_frames && !dev_inuse(dev_a) &&
		    !dev_inuse(atomic_load(&dev_b)))
			break;
		sleep_us(2000);
	}
	uswap_mem_get_stats(mem, &st);
	b = atomic_load(&dev_b);
	if (dev_inuse(dev_a) || dev_inuse(b))
		FAIL("slots leaked: device A %" PRIu64 " in use, device B %" PRIu64, dev_inuse(dev_a),
		     dev_inuse(b));
	if (st.free_frames != st.nr_frames)
		FAIL("frames leaked: %" PRIu64 " free of %" PRIu64 " (lru %" PRIu64 "+%" PRIu64 ")",
		     st.free_frames, st.nr_frames, st.nr_active, st.nr_inactive);
	printf("mm_stress: swapouts %" PRIu64 " swapins %" PRIu64 " majors %" PRIu64
	       " cow copies %" PRIu64 " reuses %" PRIu64 " refaults %" PRIu64 " activations %"
	       PRIu64 " direct %" PRIu64 " kswapd %" PRIu64 "\n", st.swapouts, st.swapins,
	       st.major_faults, st.cow_copies, st.cow_reuses, st.refaults, st.refault_activations,
	       st.direct_reclaims, st.kswapd_wakeups);
	printf("mm_stress: device B on %" PRIu64 ", off %" PRIu64 ", -ENOMEM %" PRIu64
	       ", -EBUSY %" PRIu64 "\n", b_on, b_off_ok, b_off_enomem, b_off_ebusy);
	for (i = 0; i < nthreads; i++)
		printf("mm_stress: worker %u: %" PRIu64 " writes %" PRIu64 " reads %" PRIu64
		       " forks (%" PRIu64 " deferred) %" PRIu64 " remaps %" PRIu64 " madvises\n", i,
		       workers[i].writes, workers[i].reads, workers[i].forks, workers[i].deferred,
		       workers[i].unmaps, workers[i].madvises);
	if (atomic_load(&failed)) {
		/* Leave the state as it is: tearing down may trip on it. */
		fprintf(stderr, "mm_stress: FAILED (USWAP_TEST_SEED=%" PRIu64 ")\n", seed);
		return 1;
	}
	uswap_mem_destroy(mem);
	ret = uswap_swapoff_type((unsigned int)dev_a);
	if (ret)
		FAIL("swapoff of device A: %d", ret);
	if (b >= 0 && (ret = uswap_swapoff_type((unsigned int)b)))
		FAIL("swapoff of device B: %d", ret);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("mm_stress: %.1f s\n", (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (atomic_load(&failed)) {
		fprintf(stderr, "mm_stress: FAILED (USWAP_TEST_SEED=%" PRIu64 ")\n", seed);
		return 1;
	}
	printf("mm_stress: OK\n");
	return 0;
}
