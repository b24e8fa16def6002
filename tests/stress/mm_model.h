/* SPDX-License-Identifier: MIT */
/*
 * The byte model of mm_differential (tests/stress/mm_differential.c says
 * what it checks) and its steps, shared with the fuzz target
 * tests/fuzz/fuzz_mm_ops.c: static functions over one file-scope state,
 * included by exactly one .c of a program.
 *
 * The includer may define, before including:
 *   MD_RAND_BELOW(w, n)  a number in [0, n) for world @w (0 when n is 0):
 *                        every choice; default: the world's generator
 *   MD_FILL_SEED(w)      the seed of the bytes one write writes; default:
 *                        the world's generator writes them
 *   MD_ZRAM_B            the spec of device B (step() swaps it on and off)
 *   MAX_VMA_PAGES, SHM_PAGES  the largest mapping and the shmem object
 *
 * world_init() makes a world's first address space and its shmem object,
 * step() runs one random step (false: a divergence, described, and
 * failed set), check_all() compares every byte, world_fini() frees the
 * world; mem, dev_a and dev_b are the includer's to set up.
 */
#ifndef USWAP_MM_MODEL_H
#define USWAP_MM_MODEL_H

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

#ifndef MD_RAND_BELOW
#define MD_RAND_BELOW(w, n)	test_rand_below(&(w)->rng, (n))
#endif
#ifndef MD_ZRAM_B
#define MD_ZRAM_B	"zram:16M"
#endif

#define PAGE		USWAP_PAGE_SIZE
#define MAX_MM		4
#define MAX_VMA		4
#ifndef MAX_VMA_PAGES
#define MAX_VMA_PAGES	96
#endif
#ifndef SHM_PAGES
#define SHM_PAGES	48
#endif
#define MAX_THREADS	4
#define CHECK_EVERY	20000
#define MAX_CG		3

struct mvma {
	uint64_t addr, npages;
	unsigned char *data;		/* the model: npages * PAGE bytes */
};

struct mmodel {
	struct uswap_mm *mm;
	struct uswap_memcg *cg;		/* its group; NULL: the root */
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
	/* Memory cgroups (with groups set before world_init): 2 or 3, with
	 * random memory.max and memory.swap.max, one address space in each
	 * at the start, forks in their parent's. */
	bool groups;
	struct uswap_memcg *cg[MAX_CG];
	unsigned int ncg;
	uint64_t n_oom;			/* accesses refused at a group's limits */
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

/* Bytes to write: from the world's generator, or from MD_FILL_SEED's. */
static void md_fill(struct world *w, unsigned char *buf, size_t len)
{
#ifdef MD_FILL_SEED
	uint64_t rng = MD_FILL_SEED(w);

	rand_bytes(&rng, buf, len);
#else
	rand_bytes(&w->rng, buf, len);
#endif
}

/*
 * Whether -ENOMEM is a right answer for an access of @m: its group has a
 * memory limit, so a charge may find nothing to reclaim (its swap limit
 * reached too, or everything referenced).
 */
static bool oom_ok(struct mmodel *m)
{
	struct uswap_memcg_stats st;

	if (!m->cg)
		return false;
	uswap_memcg_get_stats(m->cg, &st);
	return st.memory_max != UINT64_MAX;
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
		if (err == -ENOMEM && oom_ok(m)) {
			w->n_oom++;
			done += n;
			continue;
		}
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
		struct mmodel *m = &w->m[MD_RAND_BELOW(w, w->nm)];

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
	v->npages = 1 + MD_RAND_BELOW(w, MAX_VMA_PAGES);
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
	unsigned int j = (unsigned int)MD_RAND_BELOW(w, m->nv);
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
	uint64_t max = MD_RAND_BELOW(w, 16) ? 2 * PAGE : size;

	*off = MD_RAND_BELOW(w, size);
	*len = 1 + MD_RAND_BELOW(w, max);
	if (*off + *len > size)
		*len = size - *off;
}

static bool op_write(struct world *w, struct mmodel *m)
{
	static _Thread_local unsigned char buf[MAX_VMA_PAGES * PAGE];
	struct mvma *v = &m->v[MD_RAND_BELOW(w, m->nv)];
	uint64_t off;
	size_t len, done, n;
	int err;

	pick_range(w, v, &off, &len);
	if (MD_RAND_BELOW(w, 4) == 0) {	/* whole pages */
		off &= ~(uint64_t)(PAGE - 1);
		len = (len + PAGE - 1) & ~(size_t)(PAGE - 1);
		if (off + len > v->npages * PAGE)
			len = v->npages * PAGE - off;
	}
	md_fill(w, buf, len);
	if (w->groups && MD_RAND_BELOW(w, 16) == 0)
		memset(buf, 0, len);	/* zero-filled pages: flagged, not written */
	/* Page by page: an access refused at a group's limit (-ENOMEM) has
	 * written the pages before the refused one and none after. */
	for (done = 0; done < len; done += n) {
		n = PAGE - (off + done) % PAGE;
		if (n > len - done)
			n = len - done;
		err = uswap_mm_write(m->mm, v->addr + off + done, buf + done, n);
		if (err == -ENOMEM && oom_ok(m)) {
			w->n_oom++;
			break;
		}
		if (err) {
			fail_at(w, "write of %zu bytes at +%" PRIu64 ": %d", n, off + done, err);
			return false;
		}
		memcpy(v->data + off + done, buf + done, n);
	}
	w->n_write++;
	return true;
}

static bool op_read(struct world *w, struct mmodel *m)
{
	struct mvma *v = &m->v[MD_RAND_BELOW(w, m->nv)];
	uint64_t off;
	size_t len;

	pick_range(w, v, &off, &len);
	w->n_read++;
	return check_range(w, m, v, off, len);
}

static bool op_madvise(struct world *w, struct mmodel *m)
{
	struct mvma *v = &m->v[MD_RAND_BELOW(w, m->nv)];
	uint64_t first = MD_RAND_BELOW(w, v->npages);
	uint64_t n = 1 + MD_RAND_BELOW(w, v->npages - first);
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
	c->cg = m->cg;			/* the child is in its parent's group */
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
	uint64_t off = MD_RAND_BELOW(w, SHM_PAGES * PAGE);
	size_t len = 1 + MD_RAND_BELOW(w, 2 * PAGE);
	int err;

	if (off + len > SHM_PAGES * PAGE)
		len = SHM_PAGES * PAGE - off;
	w->n_shm++;
	if (MD_RAND_BELOW(w, 2))
		return check_shm(w, off, len);
	md_fill(w, buf, len);
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
		ret = uswap_swapon_spec_design(MD_ZRAM_B, SWAP_FLAG_PREFER | 20, design, err,
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
	uint64_t r = MD_RAND_BELOW(w, 1000);
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
		got = uswap_mem_reclaim(mem, 1 + MD_RAND_BELOW(w, 48));
		if (got < 0) {
			fail_at(w, "reclaim: %ld", got);
			return false;
		}
		w->n_reclaim++;
		return true;
	}
	if (r < 110) {
		w->op = "fork";
		return op_fork(w, &w->m[MD_RAND_BELOW(w, w->nm)]);
	}
	if (r < 125) {
		w->op = "exit";
		if (w->nm > 1) {
			mm_drop(w, (unsigned int)MD_RAND_BELOW(w, w->nm));
			w->n_exit++;
		}
		return true;
	}
	if (r < 160) {
		w->op = "mmap";
		return op_mmap(w, &w->m[MD_RAND_BELOW(w, w->nm)]);
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

/* A limit of about @lo..@lo+@span pages, or none one time in @none. */
static uint64_t rand_limit(struct world *w, uint64_t lo, uint64_t span, uint64_t none)
{
	return MD_RAND_BELOW(w, none) ? lo + MD_RAND_BELOW(w, span) : UINT64_MAX;
}

/* The world's groups and one address space in each. Return: false on error. */
static bool world_init_groups(struct world *w)
{
	unsigned int i;

	w->ncg = 2 + (unsigned int)MD_RAND_BELOW(w, 2);
	for (i = 0; i < w->ncg; i++) {
		struct uswap_memcg_config cfg = {
			.memory_max = rand_limit(w, 24, 200, 4),
			.swap_max = rand_limit(w, 16, 600, 3),
		};
		int err;

		/* A group at its swap limit keeps its pages in memory: with a
		 * small memory limit too, all the groups of all the worlds pin
		 * less than the budget, and global reclaim always has room. */
		if (cfg.swap_max != UINT64_MAX)
			cfg.memory_max = 16 + MD_RAND_BELOW(w, 32);
		err = uswap_memcg_create(mem, &cfg, &w->cg[i]);

		if (!err)
			err = uswap_mm_create_memcg(mem, w->cg[i], &w->m[i].mm);
		if (err) {
			fail_at(w, "group %u: %d", i, err);
			return false;
		}
		w->m[i].cg = w->cg[i];
	}
	w->nm = w->ncg;
	return true;
}

/*
 * Every group within its limits: memory.current <= memory.max and
 * memory.swap.current <= memory.swap.max, each + @slack (with other
 * reclaimers: pages a swap-in reads ahead are charged past memory.max and
 * reclaimed back, which another reclaimer may hold up; a swap charge
 * over the limit is added and taken back, as the kernel's page counter,
 * and a reader may see it between). Return: false (failed set) if not.
 */
static inline bool check_limits(struct world *w, uint64_t slack)
{
	unsigned int i;

	for (i = 0; i < w->ncg; i++) {
		struct uswap_memcg_stats st;

		uswap_memcg_get_stats(w->cg[i], &st);
		if (st.memory_current > st.memory_max + (st.memory_max == UINT64_MAX ? 0 : slack) ||
		    st.swap_current > st.swap_max + (st.swap_max == UINT64_MAX ? 0 : slack)) {
			fail_at(w, "group %u over its limits: memory %" PRIu64 "/%" PRIu64
				" swap %" PRIu64 "/%" PRIu64, i, st.memory_current, st.memory_max,
				st.swap_current, st.swap_max);
			return false;
		}
	}
	return true;
}

/* Lift every group's limits (before the final check: nothing may be
 * refused then, and every byte must read back). */
static inline void lift_limits(struct world *w)
{
	unsigned int i;

	for (i = 0; i < w->ncg; i++) {
		uswap_memcg_set_memory_max(w->cg[i], UINT64_MAX);
		uswap_memcg_set_swap_max(w->cg[i], UINT64_MAX);
	}
}

/* One address space (or one per group) and the shmem object, all zero.
 * Return: false if they could not be made (failed is set). */
static bool world_init(struct world *w)
{
	w->nm = 1;
	if (w->groups ? !world_init_groups(w) : uswap_mm_create(mem, &w->m[0].mm)) {
		fail_at(w, "create");
		return false;
	}
	if (uswap_shmem_create(mem, SHM_PAGES * PAGE, &w->shm)) {
		fail_at(w, "create");
		return false;
	}
	w->shm_data = calloc(SHM_PAGES, PAGE);
	if (!w->shm_data)
		abort();
	return true;
}

static void world_fini(struct world *w)
{
	unsigned int i;

	while (w->nm)
		mm_drop(w, 0);
	for (i = 0; i < w->ncg; i++)
		if (uswap_memcg_destroy(w->cg[i]))
			fail_at(w, "group %u could not be destroyed", i);
	w->ncg = 0;
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


#endif
