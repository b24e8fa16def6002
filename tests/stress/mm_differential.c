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
 * At the end every mm and object is gone, no slot is in use, every frame
 * is free and both devices swap off.
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

#define PAGE		USWAP_PAGE_SIZE
#define MAX_MM		4
#define MAX_VMA		4
#define MAX_VMA_PAGES	96
#define SHM_PAGES	48
#define MAX_THREADS	4
#define CHECK_EVERY	20000

struct mvma {
	uint64_t addr, npages;
	unsigned char *data;		/* the model: npages * PAGE bytes */
};

struct mmodel {
	struct uswap_mm *mm;
	struct mvma v[MAX_VMA];
	unsigned int nv;
};

struct world {
	pthread_t tid;
	unsigned int id;
	uint64_t rng, ops, step;
	const char *op;
	struct mmodel m[MAX_MM];
	unsigned int nm;
	struct uswap_shmem *shm;
	unsigned char *shm_data;
	uint64_t n_write, n_read, n_fork, n_exit, n_mmap, n_munmap, n_madv, n_reclaim;
	uint64_t n_shm, n_swapoff;
};

static const char *design = "table";
static uint64_t seed;
static unsigned int variant;
static struct uswap_mem *mem;
static int dev_a = -1;
static pthread_mutex_t b_lock = PTHREAD_MUTEX_INITIALIZER;
static int dev_b = -1;			/* b_lock */
static uint64_t b_off_ok, b_off_enomem, b_off_ebusy, b_on;
static atomic_int failed;

static void fail_at(struct world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail_at(struct world *w, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mm_differential: FAILED with USWAP_TEST_DESIGN=%s USWAP_TEST_SEED=%"
		PRIu64 " (variant %u, world %u, step %" PRIu64 ", op %s): ", design, seed,
		variant, w->id, w->step, w->op);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	atomic_store(&failed, 1);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p)
		abort();
	return p;
}

static void rand_bytes(uint64_t *rng, unsigned char *buf, size_t len)
{
	size_t i;

	/* Runs of one byte now and then: same-filled pages for zram. */
	if (test_rand_below(rng, 8) == 0) {
		memset(buf, (int)test_rand_below(rng, 3), len);
		return;
	}
	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t v = test_rand(rng);

		memcpy(buf + i, &v, 8);
	}
	for (; i < len; i++)
		buf[i] = (unsigned char)test_rand(rng);
}

/* Compare @len bytes read at @addr of @m with the model. */
static bool check_range(struct world *w, struct mmodel *m, struct mvma *v, uint64_t off,
			size_t len)
{
	static _Thread_local unsigned char got[2 * PAGE];
	size_t done = 0;
	int err;

	while (done < len) {
		size_t n = len - done < sizeof(got) ? len - done : sizeof(got);

		err = uswap_mm_read(m->mm, v->addr + off + done, got, n);
		if (err) {
			fail_at(w, "read of %zu bytes at mm %td vma 0x%" PRIx64 " +%" PRIu64
				": %d", n, m - w->m, v->addr, off + done, err);
			return false;
		}
		if (memcmp(got, v->data + off + done, n)) {
			size_t k = 0;

			while (got[k] == v->data[off + done + k])
				k++;
			fail_at(w, "mm %td vma 0x%" PRIx64 " page %" PRIu64 " byte %" PRIu64
				" reads 0x%02x, model 0x%02x", m - w->m, v->addr,
				(off + done + k) / PAGE, (off + done + k) % PAGE, got[k],
				v->data[off + done + k]);
			return false;
		}
		done += n;
	}
	return true;
}

static bool check_shm(struct world *w, uint64_t off, size_t len)
{
	static _Thread_local unsigned char got[SHM_PAGES * PAGE];
	int err = uswap_shmem_read(w->shm, off, got, len);

	if (err) {
		fail_at(w, "shmem read at %" PRIu64 ": %d", off, err);
		return false;
	}
	if (memcmp(got, w->shm_data + off, len)) {
		fail_at(w, "shmem differs in [%" PRIu64 ", +%zu)", off, len);
		return false;
	}
	return true;
}

static bool check_all(struct world *w)
{
	unsigned int i, j;

	for (i = 0; i < w->nm; i++)
		for (j = 0; j < w->m[i].nv; j++)
			if (!check_range(w, &w->m[i], &w->m[i].v[j], 0, w->m[i].v[j].npages * PAGE))
				return false;
	return check_shm(w, 0, SHM_PAGES * PAGE);
}

static struct mmodel *pick_mm_with_vma(struct world *w)
{
	unsigned int tries;

	for (tries = 0; tries < 8; tries++) {
		struct mmodel *m = &w->m[test_rand_below(&w->rng, w->nm)];

		if (m->nv)
			return m;
	}
	return NULL;
}

static bool op_mmap(struct world *w, struct mmodel *m)
{
	struct mvma *v;
	int err;

	if (m->nv == MAX_VMA)
		return true;
	v = &m->v[m->nv];
	v->npages = 1 + test_rand_below(&w->rng, MAX_VMA_PAGES);
	err = uswap_mm_mmap(m->mm, v->npages * PAGE, &v->addr);
	if (err) {
		fail_at(w, "mmap: %d", err);
		return false;
	}
	v->data = calloc(v->npages, PAGE);
	if (!v->data)
		abort();
	m->nv++;
	w->n_mmap++;
	return true;
}

static void vma_drop(struct mmodel *m, unsigned int j)
{
	free(m->v[j].data);
	m->v[j] = m->v[--m->nv];
}

static bool op_munmap(struct world *w, struct mmodel *m)
{
	unsigned int j = (unsigned int)test_rand_below(&w->rng, m->nv);
	int err = uswap_mm_munmap(m->mm, m->v[j].addr);

	if (err) {
		fail_at(w, "munmap: %d", err);
		return false;
	}
	vma_drop(m, j);
	w->n_munmap++;
	return true;
}

/* A random range of a vma: up to two pages, or now and then a long one. */
static void pick_range(struct world *w, struct mvma *v, uint64_t *off, size_t *len)
{
	uint64_t size = v->npages * PAGE;
	uint64_t max = test_rand_below(&w->rng, 16) ? 2 * PAGE : size;

	*off = test_rand_below(&w->rng, size);
	*len = 1 + test_rand_below(&w->rng, max);
	if (*off + *len > size)
		*len = size - *off;
}

static bool op_write(struct world *w, struct mmodel *m)
{
	static _Thread_local unsigned char buf[MAX_VMA_PAGES * PAGE];
	struct mvma *v = &m->v[test_rand_below(&w->rng, m->nv)];
	uint64_t off;
	size_t len;
	int err;

	pick_range(w, v, &off, &len);
	if (test_rand_below(&w->rng, 4) == 0) {	/* whole pages */
		off &= ~(uint64_t)(PAGE - 1);
		len = (len + PAGE - 1) & ~(size_t)(PAGE - 1);
		if (off + len > v->npages * PAGE)
			len = v->npages * PAGE - off;
	}
	rand_bytes(&w->rng, buf, len);
	err = uswap_mm_write(m->mm, v->addr + off, buf, len);
	if (err) {
		fail_at(w, "write of %zu bytes at +%" PRIu64 ": %d", len, off, err);
		return false;
	}
	memcpy(v->data + off, buf, len);
	w->n_write++;
	return true;
}

static bool op_read(struct world *w, struct mmodel *m)
{
	struct mvma *v = &m->v[test_rand_below(&w->rng, m->nv)];
	uint64_t off;
	size_t len;

	pick_range(w, v, &off, &len);
	w->n_read++;
	return check_range(w, m, v, off, len);
}

static bool op_madvise(struct world *w, struct mmodel *m)
{
	struct mvma *v = &m->v[test_rand_below(&w->rng, m->nv)];
	uint64_t first = test_rand_below(&w->rng, v->npages);
	uint64_t n = 1 + test_rand_below(&w->rng, v->npages - first);
	int err = uswap_mm_madvise_dontneed(m->mm, v->addr + first * PAGE, n * PAGE);

	if (err) {
		fail_at(w, "madvise: %d", err);
		return false;
	}
	memset(v->data + first * PAGE, 0, n * PAGE);
	w->n_madv++;
	return true;
}

static bool op_fork(struct world *w, struct mmodel *m)
{
	struct mmodel *c;
	unsigned int j;
	int err;

	if (w->nm == MAX_MM)
		return true;
	c = &w->m[w->nm];
	err = uswap_mm_fork(m->mm, &c->mm);
	if (err) {
		fail_at(w, "fork: %d", err);
		return false;
	}
	c->nv = m->nv;
	for (j = 0; j < m->nv; j++) {
		c->v[j] = m->v[j];
		c->v[j].data = xmalloc(m->v[j].npages * PAGE);
		memcpy(c->v[j].data, m->v[j].data, m->v[j].npages * PAGE);
	}
	w->nm++;
	w->n_fork++;
	return true;
}

static void mm_drop(struct world *w, unsigned int i)
{
	struct mmodel *m = &w->m[i];

	uswap_mm_destroy(m->mm);
	while (m->nv)
		vma_drop(m, 0);
	w->m[i] = w->m[--w->nm];
}

static bool op_shmem(struct world *w)
{
	static _Thread_local unsigned char buf[SHM_PAGES * PAGE];
	uint64_t off = test_rand_below(&w->rng, SHM_PAGES * PAGE);
	size_t len = 1 + test_rand_below(&w->rng, 2 * PAGE);
	int err;

	if (off + len > SHM_PAGES * PAGE)
		len = SHM_PAGES * PAGE - off;
	w->n_shm++;
	if (test_rand_below(&w->rng, 2))
		return check_shm(w, off, len);
	rand_bytes(&w->rng, buf, len);
	err = uswap_shmem_write(w->shm, off, buf, len);
	if (err) {
		fail_at(w, "shmem write: %d", err);
		return false;
	}
	memcpy(w->shm_data + off, buf, len);
	return true;
}

/* Swap the second device off, or on again. Errors that leave it on are
 * fine (-ENOMEM: no room for its pages; -EBUSY): the data must survive. */
static bool op_swapoff(struct world *w)
{
	char err[160] = "";
	int ret;

	pthread_mutex_lock(&b_lock);
	if (dev_b >= 0) {
		ret = uswap_swapoff_type((unsigned int)dev_b);
		if (!ret) {
			dev_b = -1;
			b_off_ok++;
		} else if (ret == -ENOMEM) {
			b_off_enomem++;
		} else if (ret == -EBUSY) {
			b_off_ebusy++;
		} else {
			pthread_mutex_unlock(&b_lock);
			fail_at(w, "swapoff of device B: %d", ret);
			return false;
		}
	} else {
		/* Above device A: new swap-outs go to B while it is on. */
		ret = uswap_swapon_spec_design("zram:16M", SWAP_FLAG_PREFER | 20, design, err,
					       sizeof(err));
		if (ret < 0) {
			pthread_mutex_unlock(&b_lock);
			fail_at(w, "swapon of device B: %d %s", ret, err);
			return false;
		}
		dev_b = ret;
		b_on++;
	}
	pthread_mutex_unlock(&b_lock);
	w->n_swapoff++;
	return true;
}

static bool step(struct world *w)
{
	uint64_t r = test_rand_below(&w->rng, 1000);
	struct mmodel *m;

	if (r < 3) {
		w->op = "swapoff/on";
		return op_swapoff(w);
	}
	if (r < 60) {
		w->op = "shmem";
		return op_shmem(w);
	}
	if (r < 90) {
		long got;

		w->op = "reclaim";
		got = uswap_mem_reclaim(mem, 1 + test_rand_below(&w->rng, 48));
		if (got < 0) {
			fail_at(w, "reclaim: %ld", got);
			return false;
		}
		w->n_reclaim++;
		return true;
	}
	if (r < 110) {
		w->op = "fork";
		return op_fork(w, &w->m[test_rand_below(&w->rng, w->nm)]);
	}
	if (r < 125) {
		w->op = "exit";
		if (w->nm > 1) {
			mm_drop(w, (unsigned int)test_rand_below(&w->rng, w->nm));
			w->n_exit++;
		}
		return true;
	}
	if (r < 160) {
		w->op = "mmap";
		return op_mmap(w, &w->m[test_rand_below(&w->rng, w->nm)]);
	}
	m = pick_mm_with_vma(w);
	if (!m) {
		w->op = "mmap";
		return op_mmap(w, &w->m[0]);
	}
	if (r < 175) {
		w->op = "munmap";
		return op_munmap(w, m);
	}
	if (r < 200) {
		w->op = "madvise";
		return op_madvise(w, m);
	}
	if (r < 600) {
		w->op = "write";
		return op_write(w, m);
	}
	w->op = "read";
	return op_read(w, m);
}

static void *world_fn(void *arg)
{
	struct world *w = arg;

	w->nm = 1;
	if (uswap_mm_create(mem, &w->m[0].mm) || uswap_shmem_create(mem, SHM_PAGES * PAGE, &w->shm)) {
		fail_at(w, "create");
		return NULL;
	}
	w->shm_data = calloc(SHM_PAGES, PAGE);
	if (!w->shm_data)
		abort();
	for (w->step = 0; w->step < w->ops && !atomic_load(&failed); w->step++) {
		if (!step(w))
			break;
		if ((w->step + 1) % CHECK_EVERY == 0) {
			w->op = "check all";
			if (!check_all(w))
				break;
		}
	}
	if (!atomic_load(&failed)) {
		w->op = "final check";
		check_all(w);
	}
	return NULL;
}

static void world_fini(struct world *w)
{
	while (w->nm)
		mm_drop(w, 0);
	uswap_shmem_destroy(w->shm);
	free(w->shm_data);
}

static uint64_t dev_inuse(int type)
{
	struct uswap_swap_stat st;

	if (type < 0 || uswap_swap_stat((unsigned int)type, &st))
		return 0;
	return st.inuse_pages;
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
		       " madvises %" PRIu64 " reclaims %" PRIu64 " shmem %" PRIu64 " swapoff/on\n",
		       i, worlds[i].n_write, worlds[i].n_read, worlds[i].n_fork, worlds[i].n_exit,
		       worlds[i].n_mmap, worlds[i].n_munmap, worlds[i].n_madv, worlds[i].n_reclaim,
		       worlds[i].n_shm, worlds[i].n_swapoff);
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
