/* SPDX-License-Identifier: MIT */
/*
 * fail_sweep: failures on purpose, one at a time (SQLite's OOM and I/O
 * sweeps). A scenario is run again and again; run n fails the n-th
 * allocation of the library (util/alloc.h) or the n-th write or read of
 * its swap device (the fault wrapper, "fault:write_err=n:zram:..."),
 * until a run completes with nothing failed. After every run:
 *   - each operation returned 0 or the injected error (-ENOMEM for an
 *     allocation, -EIO for I/O) and nothing else; no crash;
 *   - every byte a program would read equals the byte model (a failed
 *     write to swap keeps the page in memory; a failed read fails that
 *     access alone and the next one reads the data);
 *   - everything torn down, no slot is in use, every frame is free and the
 *     device swaps off; with ASan, no leak (checked after every run).
 *
 * Scenarios: "mm" (address spaces over a budget: mmap, write, read,
 * reclaim, fork, exit, munmap, madvise, shmem, large folios) and "slots"
 * (the slot workflow without the mm layer: folio_alloc_swap, dup, writeout,
 * remove_mapping, swap-in, direct dup past the in-table count, direct
 * put, hibernation slots).
 *
 * usage: fail_sweep alloc|write|read mm|slots table|legacy [file]
 * ("file": a swap file in TMPDIR, written through io_uring, instead of
 * zram; allocation failures only, the fault wrapper wraps no file).
 * USWAP_SWEEP_OPS: steps per run (default 60); USWAP_SWEEP_STRIDE: sweep
 * every k-th n only past the first 32 (default 1 for allocations, 6 for
 * I/O); USWAP_TEST_SEED.
 * The defaults keep CI's five builds that run them within their share;
 * the full sweeps of docs/RELIABILITY.md set 200 steps and stride 1.
 * Exit: 0 pass, 1 fail, 77 skip (allocation hook not built: USWAP_DEBUG 0).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include <uswap/legacy.h>
#include <uswap/mm.h>
#include <uswap/swap.h>
#include "io/backend.h"
#include "swap/folio_internal.h"
#include "swap/swap_header.h"
#include "testutil.h"
#include "util/alloc.h"

#define PAGE		USWAP_PAGE_SIZE
#define MAX_MM		3
#define MAX_VMA		3
#define VMA_PAGES	96
#define SHM_PAGES	16
#define DEV_SPEC_SIZE	"4M"
#define DEV_PAGES	1024		/* of a swap file */
#define SWEEP_EVERY	32		/* n swept one by one before the stride */

/* LeakSanitizer, when linked in: leaks reported run by run. */
extern int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

enum inject { INJ_ALLOC, INJ_WRITE, INJ_READ };

static enum inject inject;
static const char *design, *mode_name, *scen_name;
static uint64_t seed, steps, run_n;
static int want_err;			/* the error a failed operation may return */
static uint64_t nr_err;			/* operations that returned it, all runs */
static char swapfile[256];		/* the swap file, or "": zram */

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void fail(const char *fmt, ...)
{
	va_list ap;

	if (swapfile[0])
		unlink(swapfile);
	fprintf(stderr, "fail_sweep: FAILED (%s %s %s, n=%" PRIu64 ", USWAP_TEST_SEED=%"
		PRIu64 " USWAP_SWEEP_OPS=%" PRIu64 "): ", mode_name, scen_name, design, run_n,
		seed, steps);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* @ret of @what must be 0 or the injected error. Return: true for 0. */
static bool ok_or_injected(long ret, const char *what)
{
	if (!ret)
		return true;
	if (ret == want_err) {
		nr_err++;
		return false;
	}
	fail("%s returned %ld (only 0 or %d may come back)", what, ret, want_err);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		abort();
	return p;
}

static void fill(uint64_t *rng, unsigned char *buf, size_t len)
{
	size_t i;

	if (test_rand_below(rng, 6) == 0) {	/* same-filled: zram keeps no data */
		memset(buf, (int)test_rand_below(rng, 2) * 0x77, len);
		return;
	}
	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)test_rand(rng);
}

/* A fresh swap file of DEV_PAGES pages at swapfile[]. */
static void make_swapfile(void)
{
	static uint8_t page[PAGE] __attribute__((aligned(PAGE)));
	static const uint8_t uuid[16] = { 0x5e, 0xe9 };
	const char *tmp = getenv("TMPDIR");
	int fd;

	snprintf(swapfile, sizeof(swapfile), "%s/fail_sweep-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(swapfile);
	if (fd < 0 || fchmod(fd, 0600) || ftruncate(fd, (off_t)DEV_PAGES * PAGE) ||
	    uswap_swap_header_build(page, DEV_PAGES - 1, NULL, 0, uuid, "sweep") ||
	    pwrite(fd, page, PAGE, 0) != PAGE)
		fail("making swap file %s: %s", swapfile, strerror(errno));
	close(fd);
}

static const char *device_spec(char *buf, size_t len)
{
	if (swapfile[0])
		snprintf(buf, len, "file:%s", swapfile);
	else if (inject == INJ_ALLOC)
		snprintf(buf, len, "zram:" DEV_SPEC_SIZE);
	else
		snprintf(buf, len, "fault:%s=%" PRIu64 ":zram:" DEV_SPEC_SIZE,
			 inject == INJ_WRITE ? "write_err" : "read_err", run_n);
	return buf;
}

/* ---- the mm scenario ---- */

struct svma {
	uint64_t addr, npages;
	unsigned char *data;		/* the model */
};

struct smm {
	struct uswap_mm *mm;
	struct svma v[MAX_VMA];
	unsigned int nv;
};

struct mworld {
	uint64_t rng;
	struct uswap_mem *mem;
	int type;
	struct smm m[MAX_MM];
	unsigned int nm;
	struct uswap_shmem *shm;
	unsigned char shm_data[SHM_PAGES * PAGE];
};

static unsigned char scratch[VMA_PAGES * PAGE], got[VMA_PAGES * PAGE];

/* Read [off, off+len) of @v, retrying a failed access once (the failure
 * is one-shot), into got[]. */
static void mm_read_retry(struct smm *m, struct svma *v, uint64_t off, size_t len)
{
	int err = uswap_mm_read(m->mm, v->addr + off, got, len);

	if (!ok_or_injected(err, "uswap_mm_read"))
		err = uswap_mm_read(m->mm, v->addr + off, got, len);
	if (err)
		fail("uswap_mm_read at +%" PRIu64 " failed twice: %d", off, err);
}

static void mm_check(struct smm *m, struct svma *v, uint64_t off, size_t len)
{
	mm_read_retry(m, v, off, len);
	if (memcmp(got, v->data + off, len)) {
		size_t k = 0;

		while (got[k] == v->data[off + k])
			k++;
		fail("vma 0x%" PRIx64 " byte %" PRIu64 " reads 0x%02x, model 0x%02x", v->addr,
		     off + k, got[k], v->data[off + k]);
	}
}

/*
 * After a failed write or madvise over [off, off+len): each page's part
 * must read as before or as after (@new, NULL: zeros), wholly; the model
 * takes what is there.
 */
static void mm_resolve(struct smm *m, struct svma *v, uint64_t off, size_t len,
		       const unsigned char *new)
{
	uint64_t p = off;

	mm_read_retry(m, v, off, len);
	while (p < off + len) {
		uint64_t end = USWAP_MIN((p / PAGE + 1) * PAGE, off + len);
		const unsigned char *g = got + (p - off);
		bool was_old = !memcmp(g, v->data + p, end - p), was_new;

		if (new) {
			was_new = !memcmp(g, new + (p - off), end - p);
		} else {
			was_new = true;
			for (uint64_t i = 0; i < end - p; i++)
				was_new &= !g[i];
		}
		if (!was_old && !was_new)
			fail("after a failed change, page %" PRIu64 " of vma 0x%" PRIx64
			     " reads neither the old nor the new bytes", p / PAGE, v->addr);
		memcpy(v->data + p, g, end - p);
		p = end;
	}
}

static void mm_check_all(struct mworld *w)
{
	unsigned int i, j;
	int err;

	for (i = 0; i < w->nm; i++)
		for (j = 0; j < w->m[i].nv; j++)
			mm_check(&w->m[i], &w->m[i].v[j], 0, w->m[i].v[j].npages * PAGE);
	err = uswap_shmem_read(w->shm, 0, got, sizeof(w->shm_data));
	if (!ok_or_injected(err, "uswap_shmem_read"))
		err = uswap_shmem_read(w->shm, 0, got, sizeof(w->shm_data));
	if (err || memcmp(got, w->shm_data, sizeof(w->shm_data)))
		fail("shmem differs from the model (read %d)", err);
}

static void mm_op_write(struct mworld *w, struct smm *m)
{
	struct svma *v = &m->v[test_rand_below(&w->rng, m->nv)];
	uint64_t off = test_rand_below(&w->rng, v->npages * PAGE);
	size_t len = (size_t)(1 + test_rand_below(&w->rng, test_rand_below(&w->rng, 4) ?
						  2 * PAGE : v->npages * PAGE));

	if (off + len > v->npages * PAGE)
		len = v->npages * PAGE - off;
	fill(&w->rng, scratch, len);
	if (ok_or_injected(uswap_mm_write(m->mm, v->addr + off, scratch, len), "uswap_mm_write"))
		memcpy(v->data + off, scratch, len);
	else
		mm_resolve(m, v, off, len, scratch);
}

static void mm_op_mmap(struct mworld *w, struct smm *m)
{
	struct svma *v;

	if (m->nv == MAX_VMA)
		return;
	v = &m->v[m->nv];
	v->npages = 8 + test_rand_below(&w->rng, VMA_PAGES - 8);
	if (!ok_or_injected(uswap_mm_mmap(m->mm, v->npages * PAGE, &v->addr), "uswap_mm_mmap"))
		return;
	v->data = xcalloc(v->npages, PAGE);
	m->nv++;
}

static void mm_vma_drop(struct smm *m, unsigned int j)
{
	free(m->v[j].data);
	m->v[j] = m->v[--m->nv];
}

static void mm_op_fork(struct mworld *w, struct smm *m)
{
	struct smm *c;
	unsigned int j;

	if (w->nm == MAX_MM)
		return;
	c = &w->m[w->nm];
	if (!ok_or_injected(uswap_mm_fork(m->mm, &c->mm), "uswap_mm_fork"))
		return;
	c->nv = m->nv;
	for (j = 0; j < m->nv; j++) {
		c->v[j] = m->v[j];
		c->v[j].data = xcalloc(m->v[j].npages, PAGE);
		memcpy(c->v[j].data, m->v[j].data, m->v[j].npages * PAGE);
	}
	w->nm++;
}

static void mm_drop(struct mworld *w, unsigned int i)
{
	struct smm *m = &w->m[i];

	uswap_mm_destroy(m->mm);
	while (m->nv)
		mm_vma_drop(m, 0);
	w->m[i] = w->m[--w->nm];
}

static void mm_op_madvise(struct mworld *w, struct smm *m)
{
	struct svma *v = &m->v[test_rand_below(&w->rng, m->nv)];
	uint64_t first = test_rand_below(&w->rng, v->npages);
	uint64_t n = 1 + test_rand_below(&w->rng, USWAP_MIN(v->npages - first, 8));
	int err = uswap_mm_madvise_dontneed(m->mm, v->addr + first * PAGE, n * PAGE);

	if (ok_or_injected(err, "uswap_mm_madvise_dontneed"))
		memset(v->data + first * PAGE, 0, n * PAGE);
	else
		mm_resolve(m, v, first * PAGE, n * PAGE, NULL);
}

static void mm_op_shmem(struct mworld *w)
{
	uint64_t off = test_rand_below(&w->rng, sizeof(w->shm_data));
	size_t len = (size_t)(1 + test_rand_below(&w->rng, 2 * PAGE)), i;
	int err;

	if (off + len > sizeof(w->shm_data))
		len = sizeof(w->shm_data) - off;
	fill(&w->rng, scratch, len);
	err = uswap_shmem_write(w->shm, off, scratch, len);
	if (ok_or_injected(err, "uswap_shmem_write")) {
		memcpy(w->shm_data + off, scratch, len);
		return;
	}
	err = uswap_shmem_read(w->shm, off, got, len);
	if (err)
		fail("shmem read after a failed write: %d", err);
	for (i = 0; i < len; i++)	/* per page: old or new */
		if (got[i] != w->shm_data[off + i] && got[i] != scratch[i])
			fail("shmem byte %" PRIu64 " is neither old nor new", off + i);
	memcpy(w->shm_data + off, got, len);
}

static void mm_step(struct mworld *w)
{
	uint64_t r = test_rand_below(&w->rng, 100);
	struct smm *m = &w->m[test_rand_below(&w->rng, w->nm)];
	long got_r;

	if (r < 8) {
		mm_op_shmem(w);
	} else if (r < 20) {
		got_r = uswap_mem_reclaim(w->mem, 1 + test_rand_below(&w->rng, 64));
		if (got_r < 0)
			ok_or_injected(got_r, "uswap_mem_reclaim");
	} else if (r < 26) {
		mm_op_fork(w, m);
	} else if (r < 30) {
		if (w->nm > 1)
			mm_drop(w, (unsigned int)test_rand_below(&w->rng, w->nm));
	} else if (r < 38 || !m->nv) {
		mm_op_mmap(w, m);
	} else if (r < 41) {
		unsigned int j = (unsigned int)test_rand_below(&w->rng, m->nv);

		if (ok_or_injected(uswap_mm_munmap(m->mm, m->v[j].addr), "uswap_mm_munmap"))
			mm_vma_drop(m, j);
	} else if (r < 46) {
		mm_op_madvise(w, m);
	} else if (r < 80) {
		mm_op_write(w, m);
	} else {
		struct svma *v = &m->v[test_rand_below(&w->rng, m->nv)];
		uint64_t off = test_rand_below(&w->rng, v->npages * PAGE);
		size_t len = (size_t)USWAP_MIN(2 * PAGE, v->npages * PAGE - off);

		mm_check(m, v, off, len);
	}
}

static uint64_t dev_inuse(int type)
{
	struct uswap_swap_stat st;

	if (type < 0 || uswap_swap_stat((unsigned int)type, &st))
		return 0;
	return st.inuse_pages;
}

/* The entries of the slots in use, for a failure report. */
static void dump_slots(int type)
{
	uint64_t o, tb;
	long count;

	for (o = 1; o < 2048; o++) {
		swp_entry_t e = swp_entry((unsigned int)type, o);

		struct folio *f;

		if (uswap_swap_tb_peek(e, &tb, &count) || (!tb && count <= 0))
			continue;
		fprintf(stderr, "fail_sweep:   slot %" PRIu64 ": entry %#" PRIx64 " count %ld\n",
			o, tb, count);
		f = swap_cache_get_folio(e);
		if (f) {
			fprintf(stderr, "fail_sweep:     folio flags %#x refs %ld (ours 1) mapcount %d\n",
				atomic_load(&f->flags), folio_ref_count(f), atomic_load(&f->mapcount));
			folio_put(f);
		}
	}
}

/* Swap @type off; a failure of the injected kind is retried. */
static void swapoff_retry(int type)
{
	int err = uswap_swapoff_type((unsigned int)type), tries = 0;

	while (err && err == want_err && tries++ < 3)
		err = uswap_swapoff_type((unsigned int)type);
	if (err)
		fail("swapoff: %d", err);
}

static void scenario_mm(void)
{
	static struct mworld w;
	struct uswap_mem_config cfg = { .budget_bytes = 1 << 20, .no_kswapd = true,
					.max_order = (unsigned int)(seed & 1) * 2 };
	struct uswap_mem_stats st;
	char spec[320], err[160];
	unsigned int k;
	uint64_t s;

	memset(&w, 0, sizeof(w));
	w.rng = seed | 1;
	w.type = uswap_swapon_spec_design(device_spec(spec, sizeof(spec)), 0, design, err,
					  sizeof(err));
	if (w.type < 0) {
		ok_or_injected(w.type, "swapon");
		return;
	}
	if (!ok_or_injected(uswap_mem_create(&cfg, &w.mem), "uswap_mem_create"))
		goto off;
	if (!ok_or_injected(uswap_mm_create(w.mem, &w.m[0].mm), "uswap_mm_create"))
		goto destroy;
	w.nm = 1;
	if (!ok_or_injected(uswap_shmem_create(w.mem, sizeof(w.shm_data), &w.shm),
			    "uswap_shmem_create"))
		goto drop;
	for (s = 0; s < steps; s++)
		mm_step(&w);
	mm_check_all(&w);
	uswap_shmem_destroy(w.shm);
drop:
	while (w.nm)
		mm_drop(&w, 0);
	uswap_mem_get_stats(w.mem, &st);
	for (k = 0; k < 2000 && (st.free_frames != st.nr_frames || dev_inuse(w.type)); k++) {
		uswap_mem_reclaim(w.mem, st.nr_frames * 2);
		uswap_mem_get_stats(w.mem, &st);
		if (k > 10)	/* an asynchronous device: writeback to end */
			nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	if (dev_inuse(w.type)) {
		dump_slots(w.type);
		fail("%" PRIu64 " slots still in use after every mm is gone (frames %" PRIu64
		     " of %" PRIu64 " free)", dev_inuse(w.type), st.free_frames, st.nr_frames);
	}
	if (st.free_frames != st.nr_frames)
		fail("%" PRIu64 " of %" PRIu64 " frames free after every mm is gone",
		     st.free_frames, st.nr_frames);
destroy:
	uswap_mem_destroy(w.mem);
off:
	swapoff_retry(w.type);
}

/* ---- the slot scenario ---- */

#define MAX_REC		48
#define REC_PAGES	4		/* order <= 2 */

struct srec {
	swp_entry_t e;
	unsigned int order;
	long count[REC_PAGES];		/* references held per page */
	unsigned char *data;		/* what the slots hold */
	bool hib;			/* a hibernation slot: no data */
};

struct sworld {
	uint64_t rng;
	int type;
	struct uswap_frame_pool *pool;
	struct srec r[MAX_REC];
	unsigned int nr;
	uint64_t model_inuse;
};

static void slots_check_inuse(struct sworld *w, const char *after)
{
	if (dev_inuse(w->type) != w->model_inuse)
		fail("after %s: %" PRIu64 " slots in use, model %" PRIu64, after,
		     dev_inuse(w->type), w->model_inuse);
}

static void rec_drop(struct sworld *w, unsigned int i)
{
	free(w->r[i].data);
	w->r[i] = w->r[--w->nr];
}

/* A folio out to swap: allocate, dup (a mapping), write, remove. */
static void slots_op_out(struct sworld *w)
{
	unsigned int order = test_rand_below(&w->rng, 3) ? 0 : 2, i;
	uint64_t nr = 1ULL << order;
	struct srec *rec;
	struct folio *f;
	int err;

	if (w->nr == MAX_REC)
		return;
	f = uswap_folio_alloc(w->pool, order);
	if (!f)
		fail("frame pool empty");
	rec = &w->r[w->nr];
	memset(rec, 0, sizeof(*rec));
	rec->order = order;
	rec->data = xcalloc(nr, PAGE);
	fill(&w->rng, rec->data, nr * PAGE);
	memcpy(folio_address(f), rec->data, nr * PAGE);
	folio_mark_uptodate(f);
	folio_lock(f);
	if (!ok_or_injected(folio_alloc_swap(f), "folio_alloc_swap"))
		goto out_unlock;
	w->model_inuse += nr;
	if (!ok_or_injected(folio_dup_swap(f, -1), "folio_dup_swap")) {
		if (folio_free_swap(f) != 1)
			fail("folio_free_swap of an unreferenced folio kept it");
		w->model_inuse -= nr;
		goto out_unlock;
	}
	rec->e = folio_swap_entry(f);
	for (i = 0; i < nr; i++)
		rec->count[i] = 1;
	folio_mark_dirty(f);
	err = uswap_swap_writeout(f, true);
	folio_lock(f);
	if (!ok_or_injected(err, "uswap_swap_writeout") || folio_test_dirty(f)) {
		/* Not written: the folio keeps the data, dirty in the cache. */
		if (!folio_test_dirty(f) || !folio_test_swapcache(f))
			fail("a failed writeout left the folio %s", folio_test_dirty(f) ?
			     "out of the cache" : "clean");
		if (memcmp(folio_address(f), rec->data, nr * PAGE))
			fail("a failed writeout changed the folio's data");
		err = uswap_swap_writeout(f, true);	/* again: must work now */
		if (err)
			fail("writeout again: %d", err);
		folio_lock(f);
	}
	if (uswap_remove_mapping(f, 0) != 1)
		fail("uswap_remove_mapping of a clean written folio failed");
	w->nr++;
	return;
out_unlock:
	free(rec->data);
	folio_unlock(f);
	folio_put(f);
}

/* Drop a locked swapped-in folio: out of the cache, back to the pool. A
 * legacy synchronous device reads around the cache (the bypass): its
 * SWAP_HAS_CACHE pins go back with folio_free_swap(). */
static void swapin_done(struct folio *f)
{
	if (!folio_test_swapcache(f)) {
		if (folio_free_swap(f) != 1)
			fail("folio_free_swap of a bypass folio kept it");
		folio_unlock(f);
		folio_put(f);
	} else if (uswap_remove_mapping(f, 0) != 1) {
		fail("uswap_remove_mapping after swap-in failed: refs %ld dirty %d",
		     folio_ref_count(f), folio_test_dirty(f));
	}
}

static void slots_op_in(struct sworld *w, struct srec *rec)
{
	unsigned int i = (unsigned int)test_rand_below(&w->rng, 1U << rec->order);
	swp_entry_t e = { rec->e.val + i };
	struct folio *f;
	int err;

	if (!rec->count[i])
		return;
	err = uswap_swapin(e, w->pool, 1, &f, NULL);
	if (!ok_or_injected(err, "uswap_swapin"))
		return;
	err = uswap_swapin_lock(f, e);
	if (err == -EIO && want_err == -EIO) {
		nr_err++;
		folio_put(f);
		return;		/* the slot keeps its data: read again later */
	}
	if (err)
		fail("uswap_swapin_lock: %d", err);
	if (memcmp(folio_address(f), rec->data + (uint64_t)i * PAGE, PAGE))
		fail("slot %#" PRIx64 " reads wrong data", e.val);
	swapin_done(f);
}

static void slots_step(struct sworld *w)
{
	uint64_t r = test_rand_below(&w->rng, 100);
	struct srec *rec;
	unsigned int i, k;

	if (r < 30 || !w->nr) {
		slots_op_out(w);
		slots_check_inuse(w, "swap-out");
		return;
	}
	if (r < 36) {
		swp_entry_t e = swap_alloc_hibernation_slot((unsigned int)w->type);

		if (!e.val || w->nr == MAX_REC) {
			if (e.val && swap_free_hibernation_slot(e))
				fail("swap_free_hibernation_slot");
			return;	/* a failed allocation says nothing more */
		}
		rec = &w->r[w->nr++];
		memset(rec, 0, sizeof(*rec));
		rec->e = e;
		rec->hib = true;
		rec->count[0] = 1;
		w->model_inuse++;
		slots_check_inuse(w, "hibernation slot");
		return;
	}
	i = (unsigned int)test_rand_below(&w->rng, w->nr);
	rec = &w->r[i];
	if (rec->hib) {
		if (swap_free_hibernation_slot(rec->e))
			fail("swap_free_hibernation_slot");
		w->model_inuse--;
		rec_drop(w, i);
		slots_check_inuse(w, "hibernation free");
		return;
	}
	k = (unsigned int)test_rand_below(&w->rng, 1U << rec->order);
	if (r < 60) {
		/* forks: enough to pass the in-table count (extend table) */
		unsigned int n = 1 + (unsigned int)test_rand_below(&w->rng, 40);

		while (n-- && rec->count[k])
			if (ok_or_injected(swap_dup_entry_direct((swp_entry_t){ rec->e.val + k }),
					   "swap_dup_entry_direct"))
				rec->count[k]++;
	} else if (r < 80) {
		if (!rec->data)
			return;
		slots_op_in(w, rec);
	} else {
		/* zaps: a page's references, or the whole record's */
		bool all = test_rand_below(&w->rng, 2);
		unsigned int j;

		for (j = 0; j < (1U << rec->order); j++) {
			if (!all && j != k)
				continue;
			while (rec->count[j] > 0) {
				int err = swap_put_entries_direct((swp_entry_t){ rec->e.val + j }, 1);

				if (err)
					fail("swap_put_entries_direct: %d", err);
				if (!--rec->count[j])
					w->model_inuse--;
			}
		}
		for (j = 0; j < (1U << rec->order) && !rec->count[j]; j++)
			;
		if (j == (1U << rec->order))
			rec_drop(w, i);
	}
	slots_check_inuse(w, "slot step");
}

static void scenario_slots(void)
{
	static struct sworld w;
	char spec[320], err[160];
	unsigned int i, j;
	uint64_t s;

	memset(&w, 0, sizeof(w));
	w.rng = seed | 1;
	w.type = uswap_swapon_spec_design(device_spec(spec, sizeof(spec)), 0, design, err,
					  sizeof(err));
	if (w.type < 0) {
		ok_or_injected(w.type, "swapon");
		return;
	}
	if (!ok_or_injected(uswap_frame_pool_create(64, &w.pool), "uswap_frame_pool_create"))
		goto off;
	for (s = 0; s < steps; s++)
		slots_step(&w);
	/* every record read back, then every reference dropped */
	for (i = 0; i < w.nr; i++) {
		for (j = 0; w.r[i].data && j < (1U << w.r[i].order); j++) {
			swp_entry_t e = { w.r[i].e.val + j };
			struct folio *f;
			int ret;

			if (!w.r[i].count[j])
				continue;
			ret = uswap_swapin(e, w.pool, 1, &f, NULL);
			if (!ok_or_injected(ret, "uswap_swapin"))
				ret = uswap_swapin(e, w.pool, 1, &f, NULL);
			if (ret)
				fail("final swap-in: %d", ret);
			ret = uswap_swapin_lock(f, e);
			if (ret == -EIO && want_err == -EIO) {
				nr_err++;
				folio_put(f);
				j--;
				continue;
			}
			if (ret || memcmp(folio_address(f), w.r[i].data + (uint64_t)j * PAGE, PAGE))
				fail("final read of %#" PRIx64 ": %d or wrong data", e.val, ret);
			swapin_done(f);
		}
		for (j = 0; j < (1U << w.r[i].order); j++)
			while (w.r[i].count[j]-- > 0)
				if (swap_put_entries_direct((swp_entry_t){ w.r[i].e.val + j }, 1))
					fail("final put");
		free(w.r[i].data);
	}
	w.nr = 0;
	if (dev_inuse(w.type))
		fail("%" PRIu64 " slots still in use after every reference is dropped",
		     dev_inuse(w.type));
	if (uswap_frame_pool_free_frames(w.pool) != 64)
		fail("frames leaked: %zu of 64 free", uswap_frame_pool_free_frames(w.pool));
	uswap_frame_pool_destroy(w.pool);
off:
	swapoff_retry(w.type);
}

/* ---- the sweep ---- */

static void arm(uint64_t n)
{
#if USWAP_ALLOC_FAULTS
	if (inject == INJ_ALLOC)
		uswap_alloc_fail_nth(n, false);
#endif
	(void)n;
}

int main(int argc, char **argv)
{
	const char *st = getenv("USWAP_SWEEP_STRIDE");
	uint64_t stride = st && *st ? strtoull(st, NULL, 10) : 0, runs = 0, failed_runs = 0;
	uint64_t before_io;
	void (*scenario)(void);
	struct timespec t0, t1;
	bool injected;

	if ((argc != 4 && (argc != 5 || strcmp(argv[4], "file"))) || (strcmp(argv[1], "alloc") && strcmp(argv[1], "write") &&
			  strcmp(argv[1], "read")) ||
	    (strcmp(argv[2], "mm") && strcmp(argv[2], "slots")) ||
	    (strcmp(argv[3], "table") && strcmp(argv[3], "legacy"))) {
		fprintf(stderr, "usage: fail_sweep alloc|write|read mm|slots table|legacy [file]\n");
		return 1;
	}
	mode_name = argv[1];
	scen_name = argv[2];
	design = argv[3];
	inject = !strcmp(mode_name, "alloc") ? INJ_ALLOC : !strcmp(mode_name, "write") ?
		 INJ_WRITE : INJ_READ;
	want_err = inject == INJ_ALLOC ? -ENOMEM : -EIO;
	scenario = !strcmp(scen_name, "mm") ? scenario_mm : scenario_slots;
	if (!USWAP_ALLOC_FAULTS && inject == INJ_ALLOC) {
		printf("fail_sweep: skipped: the allocation hook is built at USWAP_DEBUG >= 1\n");
		return 77;
	}
	if (!stride)	/* the defaults: CI's share, docs/RELIABILITY.md */
		stride = inject == INJ_ALLOC ? 1 : 6;
	if (!getenv("USWAP_TEST_VERBOSE"))
		setenv("USWAP_QUIET", "1", 0);
	seed = test_seed("fail_sweep");
	if (argc == 5) {
		if (inject != INJ_ALLOC) {
			fprintf(stderr, "fail_sweep: the fault wrapper takes zram or nbd only\n");
			return 1;
		}
		make_swapfile();
	}
	/* Not USWAP_TEST_OPS: CI sets that for the long differential runs. */
	st = getenv("USWAP_SWEEP_OPS");
	steps = st && *st ? strtoull(st, NULL, 10) : 60;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* Every n of the first SWEEP_EVERY (set-up: each its own site), then
	 * the stride (the same few sites again and again). */
	for (run_n = 1;; run_n += run_n < SWEEP_EVERY ? 1 : stride) {
		before_io = swap_backend_fault_injected_all();
		arm(run_n);
		scenario();
#if USWAP_ALLOC_FAULTS
		injected = inject == INJ_ALLOC ? uswap_alloc_failures() > 0 : false;
#else
		injected = false;
#endif
#if USWAP_ALLOC_FAULTS
		if (injected && getenv("USWAP_SWEEP_SITES"))
			printf("fail_sweep: n=%" PRIu64 " site main%+td\n", run_n,
			       (char *)uswap_alloc_failed_site() - (char *)(uintptr_t)main);
#endif
		arm(0);
		if (inject != INJ_ALLOC)
			injected = swap_backend_fault_injected_all() > before_io;
		if (__lsan_do_recoverable_leak_check && __lsan_do_recoverable_leak_check())
			fail("leak (LeakSanitizer's report above)");
		runs++;
		failed_runs += injected;
		if (!injected)
			break;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (swapfile[0])
		unlink(swapfile);
	printf("fail_sweep: %s %s %s%s: %" PRIu64 " runs (n = 1..%" PRIu64 ", every n to %d, then"
	       " step %" PRIu64 "), %" PRIu64 " with a failure injected, %" PRIu64 " operations"
	       " returned %d; 0 crashes, 0 wrong bytes, 0 slots left, %s; %.2f s\n", mode_name,
	       scen_name, design, swapfile[0] ? " file" : "", runs, run_n, SWEEP_EVERY, stride,
	       failed_runs, nr_err, want_err,
	       __lsan_do_recoverable_leak_check ? "0 leaks" : "leaks not checked (no LSan)",
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
