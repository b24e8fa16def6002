/* SPDX-License-Identifier: MIT */
/*
 * The swapio workload: pages per second through the swap I/O paths, one
 * thread, at folio orders 0 and 4, beside the cost of the work a page
 * cannot avoid (memcpy, lz4 and zstd on the same pages).
 *
 *   swap-out: folio_alloc_swap + folio_dup_swap + uswap_swap_writeout(sync)
 *             + swap_cache_del_folio, per folio;
 *   swap-in:  uswap_swapin + uswap_swapin_lock + folio_put_swap +
 *             folio_free_swap, per fault (a file reads ahead, so a fault
 *             may find its page already read).
 *
 * The page set is a seeded mix of text-like (50%), zero (20%) and random
 * (30%) pages. Every page read back is compared with what was written; a
 * difference counts in bad_pages (the exit status is 1 then). Each figure
 * is the median of --runs runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <lz4.h>
#include <zstd.h>

#include <uswap/uswap.h>
#include "cli/bench.h"
#include "io/backend.h"
#include "swap/swap_header.h"
#include "swap/swap_internal.h"

#define PAGE		USWAP_PAGE_SIZE
#define DEFAULT_SWAP	"zram:256M"
#define DEFAULT_FILE	(256ULL << 20)
#define DATA_BYTES	(64ULL << 20)	/* pages moved per run and order, at most */
#define MAX_RUNS	101

struct swapio_result {
	double out_pps[2], in_pps[2];	/* order 0, order 4 */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* Text-like, zero or random, as anonymous memory tends to be. */
static void make_page(unsigned char *p, uint64_t *s)
{
	static const char *const words[] = { "the ", "swap ", "of ", "memory ", "page ",
		"and ", "table ", "to ", "{\"key\": ", "0x7f3a", ", ", "\n", "null", "cluster " };
	unsigned int kind = (unsigned int)(rnd(s) % 10);
	size_t n = 0, i;

	if (kind < 5) {
		while (n < PAGE) {
			const char *w = words[rnd(s) % (sizeof(words) / sizeof(words[0]))];
			size_t l = strlen(w);

			if (l > PAGE - n)
				l = PAGE - n;
			memcpy(p + n, w, l);
			n += l;
		}
	} else if (kind < 7) {
		memset(p, 0, PAGE);
	} else {
		for (i = 0; i < PAGE; i += 8) {
			uint64_t v = rnd(s);

			memcpy(p + i, &v, 8);
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* file:PATH that does not exist: make it a swap file of @size (0600). */
static int ensure_swapfile(const char *spec, uint64_t size)
{
	const char *path = spec + 5;
	uint64_t slots = size / PAGE;
	uint8_t uuid[16];
	void *page;
	int fd, ret = 0;

	if (strncmp(spec, "file:", 5) || !access(path, F_OK))
		return 0;
	if (slots < USWAP_SWAP_MIN_PAGES || slots - 1 > UINT32_MAX) {
		fprintf(stderr, "uswap bench: --size: %" PRIu64 " bytes cannot make a swap file\n",
			size);
		return -EINVAL;
	}
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		fprintf(stderr, "uswap bench: %s: %s\n", path, strerror(errno));
		return ret;
	}
	page = aligned_alloc(PAGE, PAGE);
	if (!page || getrandom(uuid, sizeof(uuid), 0) != sizeof(uuid)) {
		ret = -ENOMEM;
		goto out;
	}
	uuid[6] = (uuid[6] & 0x0f) | 0x40;
	uuid[8] = (uuid[8] & 0x3f) | 0x80;
	if (ftruncate(fd, (off_t)(slots * PAGE)) ||
	    uswap_swap_header_build(page, (uint32_t)(slots - 1), NULL, 0, uuid, "uswap-bench") ||
	    pwrite(fd, page, PAGE, 0) != PAGE || fsync(fd))
		ret = -EIO;
out:
	if (ret) {
		fprintf(stderr, "uswap bench: %s: cannot make a swap file\n", path);
		unlink(path);
	} else {
		fprintf(stderr, "uswap bench: made swap file %s (%" PRIu64 " MiB)\n", path,
			slots * PAGE >> 20);
	}
	free(page);
	close(fd);
	return ret;
}

struct swapio_ctx {
	unsigned int type;
	struct uswap_frame_pool *pool;
	const unsigned char *data;	/* npages pages */
	uint64_t npages;
	uint64_t max;			/* device slots */
	uint64_t *page_of;		/* slot -> data page + 1 (0: none) */
	struct folio **folios;		/* npages */
	uint64_t *slot;			/* per swapped-in folio: its first slot */
	uint8_t *done;			/* slot -> swapped in this run */
	uint64_t bad_pages;
};

static int check_folio(struct swapio_ctx *c, struct folio *f, uint64_t head)
{
	unsigned long i, nr = folio_nr_pages(f);

	for (i = 0; i < nr; i++) {
		uint64_t pg = c->page_of[head + i];

		if (!pg || memcmp((char *)folio_address(f) + i * PAGE, c->data + (pg - 1) * PAGE,
				  PAGE))
			c->bad_pages++;
		c->page_of[head + i] = 0;
	}
	return 0;
}

/* One run at one order: swap the page set out and back in, timed. */
static int run_order(struct swapio_ctx *c, unsigned int order, double *out_pps, double *in_pps)
{
	uint64_t nr = 1ULL << order, nfolios = c->npages / nr, i, nin = 0;
	uint64_t *heads = malloc(nfolios * sizeof(*heads));
	double t0, t1;
	int err = 0;

	if (!heads)
		return -ENOMEM;
	for (i = 0; i < nfolios; i++) {
		struct folio *f = uswap_folio_alloc(c->pool, order);

		if (!f) {
			free(heads);
			return -ENOMEM;
		}
		memcpy(folio_address(f), c->data + i * nr * PAGE, nr * PAGE);
		folio_mark_uptodate(f);
		c->folios[i] = f;
	}
	t0 = now_s();
	for (i = 0; i < nfolios && !err; i++) {
		struct folio *f = c->folios[i];

		folio_lock(f);
		err = folio_alloc_swap(f);
		if (!err)
			err = folio_dup_swap(f, -1);
		if (!err)
			heads[i] = swp_offset(folio_swap_entry(f));
		if (!err)
			err = uswap_swap_writeout(f, true);	/* unlocks */
		else
			folio_unlock(f);
		if (!err) {
			folio_lock(f);
			err = swap_cache_del_folio(f, 0);
			folio_unlock(f);
		}
	}
	t1 = now_s();
	if (err) {
		fprintf(stderr, "uswap bench: swap-out of folio %" PRIu64 ": %s\n", i - 1,
			strerror(-err));
		free(heads);
		return err;
	}
	*out_pps = (double)c->npages / (t1 - t0);
	for (i = 0; i < nfolios; i++) {
		uint64_t p;

		for (p = 0; p < nr; p++)
			c->page_of[heads[i] + p] = i * nr + p + 1;
		/* Poison the frames: a read that did nothing must not pass. */
		memset(folio_address(c->folios[i]), 0x5a, nr * PAGE);
		folio_put(c->folios[i]);
	}

	memset(c->done, 0, c->max);
	t0 = now_s();
	for (i = 0; i < nfolios && !err; i++) {
		uint64_t p;

		/* Page after page: a large folio returns whole on a synchronous
		 * device; others read order 0 with readahead. */
		for (p = 0; p < nr && !err; p++) {
			swp_entry_t e = swp_entry(c->type, heads[i] + p);
			struct folio *f;

			if (c->done[heads[i] + p])
				continue;
			err = uswap_swapin(e, c->pool, (2UL << order) - 1, &f, NULL);
			if (err)
				break;
			err = uswap_swapin_lock(f, e);
			if (err) {
				folio_put(f);
				break;
			}
			c->slot[nin] = swp_offset(folio_swap_entry(f));
			c->folios[nin++] = f;
			memset(c->done + c->slot[nin - 1], 1, folio_nr_pages(f));
			err = folio_put_swap(f, -1);
			if (!err && folio_free_swap(f) != 1)
				err = -EBUSY;
			folio_unlock(f);
		}
	}
	t1 = now_s();
	*in_pps = (double)c->npages / (t1 - t0);
	for (i = 0; i < nin; i++) {
		check_folio(c, c->folios[i], c->slot[i]);
		folio_put(c->folios[i]);
	}
	free(heads);
	if (err)
		fprintf(stderr, "uswap bench: swap-in: %s\n", strerror(-err));
	return err;
}

/* The floor: per-page memcpy, lz4 and zstd (compress + decompress). */
struct floor {
	double memcpy_pps, lz4_pps, zstd_pps;
};

static int measure_floor(const unsigned char *data, uint64_t npages, struct floor *fl)
{
	int bound = LZ4_compressBound(PAGE);
	size_t zbound = ZSTD_compressBound(PAGE);
	unsigned char *dst = aligned_alloc(PAGE, PAGE), *cbuf = malloc(zbound > (size_t)bound ?
								       zbound : (size_t)bound);
	void *lz4_state = malloc((size_t)LZ4_sizeofState());
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	ZSTD_DCtx *dctx = ZSTD_createDCtx();
	volatile unsigned char sink = 0;
	uint64_t i;
	double t0;
	int ret = 0;

	if (!dst || !cbuf || !lz4_state || !cctx || !dctx) {
		ret = -ENOMEM;
		goto out;
	}
	t0 = now_s();
	for (i = 0; i < npages; i++) {
		memcpy(dst, data + i * PAGE, PAGE);
		sink ^= dst[i % PAGE];
	}
	fl->memcpy_pps = (double)npages / (now_s() - t0);
	t0 = now_s();
	for (i = 0; i < npages; i++) {
		int n = LZ4_compress_fast_extState(lz4_state, (const char *)data + i * PAGE,
						   (char *)cbuf, PAGE, bound, 1);

		if (n <= 0 || LZ4_decompress_safe((const char *)cbuf, (char *)dst, n, PAGE) != PAGE) {
			ret = -EIO;
			goto out;
		}
		sink ^= dst[i % PAGE];
	}
	fl->lz4_pps = (double)npages / (now_s() - t0);
	t0 = now_s();
	for (i = 0; i < npages; i++) {
		size_t n = ZSTD_compressCCtx(cctx, cbuf, zbound, data + i * PAGE, PAGE, 1);

		if (ZSTD_isError(n) || ZSTD_decompressDCtx(dctx, dst, PAGE, cbuf, n) != PAGE) {
			ret = -EIO;
			goto out;
		}
		sink ^= dst[i % PAGE];
	}
	fl->zstd_pps = (double)npages / (now_s() - t0);
	(void)sink;
out:
	ZSTD_freeCCtx(cctx);
	ZSTD_freeDCtx(dctx);
	free(lz4_state);
	free(cbuf);
	free(dst);
	return ret;
}

/*
 * The device side of the run (text output): requests, readahead, and for
 * an NBD device the request latency and queue depth seen by the backend.
 * Context: the bench thread; pins the device. Return: nothing.
 */
static void swapio_device_report(unsigned int type)
{
	struct swap_info_struct *si = atomic_load(&swap_info[type]);
	struct uswap_swap_stat st;
	struct swap_nbd_stats ns;

	if (uswap_swap_stat(type, &st))
		return;
	printf("  device: %" PRIu64 " reads, %" PRIu64 " writes, %" PRIu64 " errors; "
	       "readahead %" PRIu64 " added, %" PRIu64 " hit\n", st.reads, st.writes,
	       st.read_errors + st.write_errors, st.ra_pages, st.ra_hits);
	if (!si || !swap_device_tryget(si))
		return;
	if (si->bdev && !swap_backend_nbd_stats(si->bdev, &ns))
		printf("  nbd: read p50 %" PRIu64 " us p99 %" PRIu64 " us, write p50 %" PRIu64
		       " us p99 %" PRIu64 " us; in flight max %" PRIu64 " mean %.1f (depth %u); "
		       "reconnects %" PRIu64 "\n", ns.read_p50_us, ns.read_p99_us,
		       ns.write_p50_us, ns.write_p99_us, ns.max_inflight, ns.avg_inflight,
		       ns.depth, ns.reconnects);
	put_swap_device(si);
}

int bench_swapio(const struct bench_opts *o)
{
	const char *spec = o->nr_swap ? o->swap[0] : DEFAULT_SWAP;
	double out0[MAX_RUNS], in0[MAX_RUNS], out4[MAX_RUNS], in4[MAX_RUNS];
	double fm[MAX_RUNS], fl4[MAX_RUNS], fz[MAX_RUNS];
	struct swapio_ctx c = { 0 };
	struct uswap_swap_stat st;
	unsigned int runs = o->runs, r;
	uint64_t seed = o->seed, i, data_bytes;
	char err[256] = "";
	int type, ret = 1;

	if (o->nr_swap > 1)
		fprintf(stderr, "uswap bench: swapio uses only the first --swap\n");
	if (runs > MAX_RUNS) {
		fprintf(stderr, "uswap bench: swapio: at most %d runs\n", MAX_RUNS);
		return 2;
	}
	if (ensure_swapfile(spec, o->size ? o->size : DEFAULT_FILE))
		return 1;
	type = uswap_swapon_spec(spec, 0, err, sizeof(err));
	if (type < 0) {
		fprintf(stderr, "uswap bench: swapon %s: %s%s%s\n", spec, strerror(-type),
			err[0] ? ": " : "", err);
		return 1;
	}
	c.type = (unsigned int)type;
	if (uswap_swap_stat(c.type, &st))
		goto off;
	c.max = st.max;
	/* The page set: 64 MiB, or what fits in 3/4 of the device. */
	data_bytes = DATA_BYTES;
	if (data_bytes / PAGE > st.pages * 3 / 4)
		data_bytes = st.pages * 3 / 4 * PAGE;
	c.npages = data_bytes / PAGE & ~15ULL;
	if (c.npages < 16) {
		fprintf(stderr, "uswap bench: %s is too small\n", spec);
		goto off;
	}
	c.data = malloc(c.npages * PAGE);
	c.page_of = calloc(c.max, sizeof(*c.page_of));
	c.done = calloc(c.max, 1);
	c.folios = calloc(c.npages, sizeof(*c.folios));
	c.slot = calloc(c.npages, sizeof(*c.slot));
	if (!c.data || !c.page_of || !c.done || !c.folios || !c.slot ||
	    uswap_frame_pool_create(c.npages + 64, &c.pool)) {
		fprintf(stderr, "uswap bench: out of memory\n");
		goto off;
	}
	for (i = 0; i < c.npages; i++)
		make_page((unsigned char *)c.data + i * PAGE, &seed);
	if (!o->quiet && !o->json)
		fprintf(stderr, "uswap bench: swapio on %s: %" PRIu64 " pages, %u runs\n", spec,
			c.npages, runs);
	for (r = 0; r < runs; r++) {
		struct floor fl;

		if (run_order(&c, 0, &out0[r], &in0[r]) || run_order(&c, 4, &out4[r], &in4[r]) ||
		    measure_floor(c.data, c.npages, &fl))
			goto off;
		fm[r] = fl.memcpy_pps;
		fl4[r] = fl.lz4_pps;
		fz[r] = fl.zstd_pps;
	}
	if (o->json) {
		printf("{\"workload\": \"swapio\", \"swap\": \"%s\", \"runs\": %u, "
		       "\"pages\": %" PRIu64 ", \"seed\": %" PRIu64 ", "
		       "\"swapout_pages_per_s\": %.0f, \"swapin_pages_per_s\": %.0f, "
		       "\"swapout_pages_per_s_order4\": %.0f, \"swapin_pages_per_s_order4\": %.0f, "
		       "\"memcpy_pages_per_s\": %.0f, \"lz4_pages_per_s\": %.0f, "
		       "\"zstd_pages_per_s\": %.0f, \"bad_pages\": %" PRIu64 "}\n",
		       spec, runs, c.npages, o->seed, median(out0, runs), median(in0, runs),
		       median(out4, runs), median(in4, runs), median(fm, runs), median(fl4, runs),
		       median(fz, runs), c.bad_pages);
	} else {
		printf("swapio on %s: %" PRIu64 " pages (%" PRIu64 " MiB; 50%% text-like, 20%% "
		       "zero, 30%% random), one thread, median of %u runs\n",
		       spec, c.npages, c.npages * PAGE >> 20, runs);
		printf("  %-28s %14s %14s\n", "pages/s", "order 0", "order 4");
		printf("  %-28s %14.0f %14.0f\n", "swap-out (alloc+dup+write)", median(out0, runs),
		       median(out4, runs));
		printf("  %-28s %14.0f %14.0f\n", "swap-in (fault+put+free)", median(in0, runs),
		       median(in4, runs));
		printf("  floor, per page: memcpy %.0f/s, lz4 %.0f/s, zstd-1 %.0f/s "
		       "(compress + decompress)\n", median(fm, runs), median(fl4, runs),
		       median(fz, runs));
		printf("  bad_pages %" PRIu64 "\n", c.bad_pages);
		swapio_device_report(c.type);
	}
	ret = c.bad_pages ? 1 : 0;
off:
	if (uswap_swapoff_type(c.type))
		fprintf(stderr, "uswap bench: swapoff failed\n");
	if (c.pool)
		uswap_frame_pool_destroy(c.pool);
	free((void *)c.data);
	free(c.page_of);
	free(c.done);
	free(c.folios);
	free(c.slot);
	return ret;
}
