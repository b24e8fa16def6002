/* SPDX-License-Identifier: MIT */
/*
 * bench_codec: what one page costs to put away and get back, per codec.
 * The floor under the swap I/O bench: no swap path can be cheaper than
 * its codec.
 *
 * Page set (default 4096 pages, 16 MiB): half text-like (compressible),
 * a quarter zero, a quarter random, interleaved. Each row is timed over
 * the whole set, --runs times (default 5); the median is reported.
 * Rows: memcpy (out and back, the no-compression floor), lz4, zstd -1,
 * zstd -3 (compress into a bound-sized buffer, then decompress), and the
 * zram backend itself with lz4 and zstd (same-filled detection, the 3/4
 * threshold, allocation and locking included; write = compress, read =
 * decompress).
 *
 * Usage: bench_codec [--pages N] [--runs N] [--json]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lz4.h>
#include <zstd.h>

#include "io/backend.h"

#define PS	SWAP_BACKEND_PAGE_SIZE
#define MAX_RUNS 101

enum codec { C_MEMCPY, C_LZ4, C_ZSTD1, C_ZSTD3, C_ZRAM_LZ4, C_ZRAM_ZSTD, NR_CODECS };

static const char *const codec_name[NR_CODECS] = {
	"memcpy", "lz4", "zstd-1", "zstd-3", "zram-lz4", "zram-zstd",
};

struct result {
	double comp_ns, decomp_ns, total_ns;	/* per page, medians */
	double ratio;				/* original / stored bytes */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void make_pages(char *pages, size_t n)
{
	static const char *words[] = {
		"the", "swap", "table", "of", "a", "cluster", "holds", "entry",
		"count", "folio", "cache", "and", "memory", "page", "is", "lock",
		"{\"id\":", "\"name\":", "null,", "true,", "0x7f3a", "12345",
	};
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	size_t i, j;

	for (i = 0; i < n; i++) {
		char *p = pages + i * PS;

		switch (i % 4) {
		case 0:
		case 1:	/* text-like */
			for (j = 0; j < PS;) {
				const char *w = words[rnd(&s) % (sizeof(words) / sizeof(words[0]))];

				while (*w && j < PS)
					p[j++] = *w++;
				if (j < PS)
					p[j++] = rnd(&s) % 8 ? ' ' : '\n';
			}
			break;
		case 2:	/* zero */
			memset(p, 0, PS);
			break;
		default:	/* random */
			for (j = 0; j < PS; j += 8) {
				uint64_t v = rnd(&s);

				memcpy(p + j, &v, 8);
			}
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One run of a plain codec over all pages; aborts on a mismatch. */
static void run_codec(enum codec c, const char *pages, size_t n, char *store,
		      size_t *sizes, char *out, ZSTD_CCtx *cctx, ZSTD_DCtx *dctx,
		      uint64_t *t_comp, uint64_t *t_decomp, uint64_t *stored)
{
	size_t bound = (size_t)ZSTD_compressBound(PS), i;
	uint64_t t0, t1, t2, bytes = 0;

	t0 = now_ns();
	for (i = 0; i < n; i++) {
		const char *src = pages + i * PS;
		char *dst = store + i * bound;

		switch (c) {
		case C_MEMCPY:
			memcpy(dst, src, PS);
			sizes[i] = PS;
			break;
		case C_LZ4:
			sizes[i] = (size_t)LZ4_compress_default(src, dst, PS, (int)bound);
			break;
		default:
			sizes[i] = ZSTD_compressCCtx(cctx, dst, bound, src, PS,
						     c == C_ZSTD1 ? 1 : 3);
			break;
		}
		bytes += sizes[i];
	}
	t1 = now_ns();
	for (i = 0; i < n; i++) {
		const char *src = store + i * bound;
		char *dst = out + i * PS;

		switch (c) {
		case C_MEMCPY:
			memcpy(dst, src, PS);
			break;
		case C_LZ4:
			LZ4_decompress_safe(src, dst, (int)sizes[i], PS);
			break;
		default:
			ZSTD_decompressDCtx(dctx, dst, PS, src, sizes[i]);
			break;
		}
	}
	t2 = now_ns();
	if (memcmp(pages, out, n * PS)) {
		fprintf(stderr, "bench_codec: %s round trip differs\n", codec_name[c]);
		abort();
	}
	*t_comp = t1 - t0;
	*t_decomp = t2 - t1;
	*stored = bytes;
}

static void run_zram(enum codec c, const char *pages, size_t n, char *out,
		     uint64_t *t_comp, uint64_t *t_decomp, uint64_t *stored)
{
	struct swap_backend *be;
	struct swap_zram_stats st;
	uint64_t t0, t1, t2;
	size_t i;
	int ret;

	ret = swap_backend_zram_create(n, c == C_ZRAM_LZ4 ? SWAP_ZRAM_LZ4 :
				       SWAP_ZRAM_ZSTD, &be);
	if (ret) {
		fprintf(stderr, "bench_codec: zram: %s\n", strerror(-ret));
		exit(1);
	}
	t0 = now_ns();
	for (i = 0; i < n; i++)
		if (swap_backend_write(be, i, 1, pages + i * PS))
			abort();
	t1 = now_ns();
	for (i = 0; i < n; i++)
		if (swap_backend_read(be, i, 1, out + i * PS))
			abort();
	t2 = now_ns();
	if (memcmp(pages, out, n * PS)) {
		fprintf(stderr, "bench_codec: %s round trip differs\n", codec_name[c]);
		abort();
	}
	swap_backend_zram_stats(be, &st);
	swap_backend_destroy(be);
	*t_comp = t1 - t0;
	*t_decomp = t2 - t1;
	*stored = st.compr_data_size;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_codec [--pages N] [--runs N] [--json]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	size_t n = 4096, bound = (size_t)ZSTD_compressBound(PS), i;
	int runs = 5, json = 0, r, a;
	struct result res[NR_CODECS];
	char *pages, *store, *out;
	size_t *sizes;
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	ZSTD_DCtx *dctx = ZSTD_createDCtx();

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--json"))
			json = 1;
		else if (!strcmp(argv[a], "--pages") && a + 1 < argc)
			n = strtoul(argv[++a], NULL, 0);
		else if (!strcmp(argv[a], "--runs") && a + 1 < argc)
			runs = atoi(argv[++a]);
		else
			usage();
	}
	if (!n || n > (1U << 22) || runs < 1 || runs > MAX_RUNS)
		usage();
	pages = malloc(n * PS);
	out = malloc(n * PS);
	store = malloc(n * bound);
	sizes = calloc(n, sizeof(*sizes));
	if (!pages || !out || !store || !sizes || !cctx || !dctx) {
		fprintf(stderr, "bench_codec: out of memory\n");
		return 1;
	}
	make_pages(pages, n);

	for (i = 0; i < NR_CODECS; i++) {
		double comp[MAX_RUNS], decomp[MAX_RUNS], total[MAX_RUNS];
		uint64_t tc = 0, td = 0, stored = 0;

		for (r = -1; r < runs; r++) {	/* run -1 warms up */
			if (i >= C_ZRAM_LZ4)
				run_zram((enum codec)i, pages, n, out, &tc, &td, &stored);
			else
				run_codec((enum codec)i, pages, n, store, sizes, out,
					  cctx, dctx, &tc, &td, &stored);
			if (r < 0)
				continue;
			comp[r] = (double)tc / (double)n;
			decomp[r] = (double)td / (double)n;
			total[r] = (double)(tc + td) / (double)n;
		}
		res[i].comp_ns = median(comp, runs);
		res[i].decomp_ns = median(decomp, runs);
		res[i].total_ns = median(total, runs);
		res[i].ratio = stored ? (double)(n * PS) / (double)stored : 0;
	}

	if (json) {
		printf("{\n  \"bench\": \"codec\",\n  \"page_size\": %u,\n"
		       "  \"pages\": %zu,\n  \"runs\": %d,\n"
		       "  \"page_mix\": {\"text\": 0.5, \"zero\": 0.25, \"random\": 0.25},\n"
		       "  \"results\": [\n", PS, n, runs);
		for (i = 0; i < NR_CODECS; i++)
			printf("    {\"codec\": \"%s\", \"compress_ns_per_page\": %.1f, "
			       "\"decompress_ns_per_page\": %.1f, \"ns_per_page\": %.1f, "
			       "\"pages_per_sec\": %.0f, \"ratio\": %.3f}%s\n",
			       codec_name[i], res[i].comp_ns, res[i].decomp_ns,
			       res[i].total_ns, 1e9 / res[i].total_ns, res[i].ratio,
			       i + 1 < NR_CODECS ? "," : "");
		printf("  ]\n}\n");
	} else {
		printf("bench_codec: %zu pages (50%% text, 25%% zero, 25%% random), "
		       "median of %d runs\n", n, runs);
		printf("%-10s %12s %12s %12s %14s %7s\n", "codec", "comp ns/pg",
		       "decomp ns/pg", "ns/page", "pages/s", "ratio");
		for (i = 0; i < NR_CODECS; i++)
			printf("%-10s %12.1f %12.1f %12.1f %14.0f %7.2f\n",
			       codec_name[i], res[i].comp_ns, res[i].decomp_ns,
			       res[i].total_ns, 1e9 / res[i].total_ns, res[i].ratio);
		printf("(ns/page = compress + decompress; zram-* rows go through the"
		       " backend: same-filled pages, 3/4 threshold, malloc, locks)\n");
	}
	free(pages);
	free(out);
	free(store);
	free(sizes);
	ZSTD_freeCCtx(cctx);
	ZSTD_freeDCtx(dctx);
	return 0;
}
