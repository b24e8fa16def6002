/* SPDX-License-Identifier: MIT */
/*
 * The compressed memory backend, with lz4 and with zstd: same-filled,
 * compressible and incompressible pages are stored as such and read back
 * identical; the accounting adds up and returns to its baseline when slots
 * are freed; several threads work at once. Also runs the fuzz target's
 * round trip over fixed inputs.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/backend.h"
#include "util/debug.h"
#include "testutil.h"

#include "../fuzz/fuzz_zram_roundtrip.c"

#define PS		SWAP_BACKEND_PAGE_SIZE
#define NR_SLOTS	2048U

static uint64_t seed;

struct fixture {
	enum swap_zram_algo algo;
	struct swap_backend *be;
	struct swap_zram_stats base;
};

static int setup_algo(void **state, enum swap_zram_algo algo)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	fx->algo = algo;
	assert_int_equal(swap_backend_zram_create(NR_SLOTS, algo, &fx->be), 0);
	assert_int_equal(swap_backend_zram_stats(fx->be, &fx->base), 0);
	*state = fx;
	return 0;
}

static int setup_lz4(void **state)
{
	return setup_algo(state, SWAP_ZRAM_LZ4);
}

static int setup_zstd(void **state)
{
	return setup_algo(state, SWAP_ZRAM_ZSTD);
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	swap_backend_destroy(fx->be);
	free(fx);
	return 0;
}

static void fill_random(void *buf, size_t len, uint64_t *s)
{
	uint64_t *w = buf;
	size_t i;

	for (i = 0; i < len / 8; i++)
		w[i] = test_rand(s);
}

/* English-looking text: words from a small vocabulary. */
static void fill_text(char *buf, size_t len, uint64_t *s)
{
	static const char *words[] = {
		"swap", "table", "cluster", "folio", "the", "of", "slot", "count",
		"cache", "memory", "page", "entry", "lock", "a", "is", "and",
	};
	size_t i = 0;

	while (i < len) {
		const char *w = words[test_rand_below(s, ARRAY_SIZE(words))];
		size_t n = strlen(w);

		while (*w && i < len)
			buf[i++] = *w++;
		if (i < len)
			buf[i++] = n % 5 ? ' ' : '\n';
	}
}

static void stats(struct fixture *fx, struct swap_zram_stats *st)
{
	assert_int_equal(swap_backend_zram_stats(fx->be, st), 0);
	assert_int_equal(st->pages_stored,
			 st->same_pages + st->compressed_pages + st->raw_pages);
	assert_int_equal(st->orig_data_size, st->pages_stored * PS);
	assert_int_equal(st->mem_used, st->compr_data_size + st->meta_bytes);
	assert_int_equal(st->meta_bytes, fx->base.meta_bytes);
}

static void roundtrip(struct fixture *fx, uint64_t off, const void *page)
{
	char out[PS];

	assert_int_equal(swap_backend_write(fx->be, off, 1, page), 0);
	memset(out, 0x5a, sizeof(out));
	assert_int_equal(swap_backend_read(fx->be, off, 1, out), 0);
	assert_memory_equal(page, out, PS);
}

static void test_describe(void **state)
{
	struct fixture *fx = *state;
	const char *want = fx->algo == SWAP_ZRAM_LZ4 ? "zram:8M lz4" : "zram:8M zstd";

	assert_string_equal(swap_backend_describe(fx->be), want);
	assert_true(fx->be->synchronous);
	assert_int_equal(fx->be->nr_slots, NR_SLOTS);
	assert_int_equal(fx->base.pages_stored, 0);
	assert_int_equal(fx->base.mem_used, fx->base.meta_bytes);
	assert_true(fx->base.meta_bytes >= NR_SLOTS * 16);
}

static void test_empty_reads_zero(void **state)
{
	struct fixture *fx = *state;
	char out[PS], zero[PS] = { 0 };

	memset(out, 1, sizeof(out));
	assert_int_equal(swap_backend_read(fx->be, 17, 1, out), 0);
	assert_memory_equal(out, zero, PS);
}

static void test_same_filled(void **state)
{
	struct fixture *fx = *state;
	struct swap_zram_stats st;
	char page[PS];
	uint64_t w[PS / 8];
	unsigned int i;

	memset(page, 0, PS);
	roundtrip(fx, 1, page);
	memset(page, 0xab, PS);
	roundtrip(fx, 2, page);
	for (i = 0; i < PS / 8; i++)
		w[i] = 0x0123456789abcdefULL;
	roundtrip(fx, 3, w);
	stats(fx, &st);
	assert_int_equal(st.same_pages, 3);
	assert_int_equal(st.compressed_pages + st.raw_pages, 0);
	assert_int_equal(st.compr_data_size, 0);
	assert_int_equal(st.mem_used, fx->base.mem_used);
	/* one byte off: no longer same-filled */
	w[PS / 8 - 1] ^= 1;
	roundtrip(fx, 3, w);
	stats(fx, &st);
	assert_int_equal(st.same_pages, 2);
	assert_int_equal(st.compressed_pages, 1);
}

static void test_compressible(void **state)
{
	struct fixture *fx = *state;
	struct swap_zram_stats st;
	char page[PS];
	uint64_t s = seed;
	unsigned int i;

	for (i = 0; i < 20; i++) {
		fill_text(page, PS, &s);
		roundtrip(fx, 100 + i, page);
	}
	stats(fx, &st);
	assert_int_equal(st.compressed_pages, 20);
	assert_int_equal(st.raw_pages + st.same_pages, 0);
	assert_true(st.compr_data_size < 20 * PS * 3 / 4);
	assert_true(st.compr_data_size > 0);
	print_message("%s: 20 text pages in %llu bytes\n",
		      swap_zram_algo_name(fx->algo),
		      (unsigned long long)st.compr_data_size);
}

static void test_incompressible(void **state)
{
	struct fixture *fx = *state;
	struct swap_zram_stats st;
	char page[PS];
	uint64_t s = seed ^ 3;
	unsigned int i;

	for (i = 0; i < 10; i++) {
		fill_random(page, PS, &s);
		roundtrip(fx, 200 + i, page);
	}
	stats(fx, &st);
	assert_int_equal(st.raw_pages, 10);
	assert_int_equal(st.compr_data_size, 10 * PS);
	assert_true(st.ratio < 1.0);
}

/* Runs of 1..512 slots of a mix of page kinds; free them all afterwards. */
static void test_runs_and_free(void **state)
{
	struct fixture *fx = *state;
	char *in = malloc((size_t)SWAP_IO_MAX_RUN * PS);
	char *out = malloc((size_t)SWAP_IO_MAX_RUN * PS);
	unsigned int lens[] = { 1, 2, 3, 31, 128, 300, 511, 512 };
	struct swap_zram_stats st;
	uint64_t s = seed ^ 11, off = 0, i, j;

	assert_non_null(in);
	assert_non_null(out);
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		unsigned int nr = lens[i];

		if (off + nr > NR_SLOTS)
			off = 0;
		for (j = 0; j < nr; j++) {
			char *p = in + j * PS;

			switch (test_rand_below(&s, 4)) {
			case 0:
				memset(p, (int)j, PS);
				break;
			case 1:
				fill_random(p, PS, &s);
				break;
			default:
				fill_text(p, PS, &s);
			}
		}
		assert_int_equal(swap_backend_write(fx->be, off, nr, in), 0);
		assert_int_equal(swap_backend_read(fx->be, off, nr, out), 0);
		assert_memory_equal(in, out, (size_t)nr * PS);
		off += nr;
	}
	stats(fx, &st);
	assert_true(st.pages_stored > 0);
	assert_true(st.mem_used > fx->base.mem_used);
	for (i = 0; i < NR_SLOTS; i++)
		swap_backend_slot_free_notify(fx->be, i);
	stats(fx, &st);
	assert_int_equal(st.pages_stored, 0);
	assert_int_equal(st.mem_used, fx->base.mem_used);
	free(in);
	free(out);
}

static void test_discard_and_overwrite(void **state)
{
	struct fixture *fx = *state;
	struct swap_zram_stats st;
	char page[PS], out[PS], zero[PS] = { 0 };
	uint64_t s = seed ^ 7;
	unsigned int i;

	for (i = 0; i < 8; i++) {
		fill_random(page, PS, &s);
		roundtrip(fx, 500 + i, page);
	}
	/* overwrite: raw becomes same-filled, memory follows */
	memset(page, 0, PS);
	roundtrip(fx, 500, page);
	stats(fx, &st);
	assert_int_equal(st.raw_pages, 7);
	assert_int_equal(st.same_pages, 1);
	assert_int_equal(st.compr_data_size, 7 * PS);
	assert_int_equal(swap_backend_discard(fx->be, 500, 8), 0);
	stats(fx, &st);
	assert_int_equal(st.pages_stored, 0);
	assert_int_equal(st.mem_used, fx->base.mem_used);
	assert_int_equal(swap_backend_read(fx->be, 503, 1, out), 0);
	assert_memory_equal(out, zero, PS);
}

/* Slot 0 is an ordinary slot: the swap layer's header goes there. */
static void test_header_slot(void **state)
{
	struct fixture *fx = *state;
	char page[PS];

	memset(page, 0, PS);
	memcpy(page + PS - 10, "SWAPSPACE2", 10);
	page[1024] = 1;
	roundtrip(fx, 0, page);
}

static void sync_end_io(struct swap_io_req *r)
{
	*(int *)r->private += 1;
}

/* Synchronous: end_io has run when submit returns; reap has nothing. */
static void test_completes_in_submit(void **state)
{
	struct fixture *fx = *state;
	char buf[2 * PS];
	int calls = 0;
	struct swap_io_req r[2] = {
		{ .op = SWAP_IO_WRITE, .offset = 9, .nr = 1, .buf = buf,
		  .end_io = sync_end_io, .private = &calls, .result = 1 },
		{ .op = SWAP_IO_READ, .offset = 9, .nr = 1, .buf = buf + PS,
		  .end_io = sync_end_io, .private = &calls, .result = 1 },
	};
	struct swap_backend_stats bs;

	memset(buf, 0x42, PS);
	assert_int_equal(swap_backend_submit(fx->be, r, 2), 0);
	assert_int_equal(calls, 2);
	assert_int_equal(r[0].result, 0);
	assert_int_equal(r[1].result, 0);
	assert_memory_equal(buf, buf + PS, PS);
	assert_int_equal(swap_backend_reap(fx->be, 1), 0);
	assert_int_equal(swap_backend_flush(fx->be), 0);
	swap_backend_get_stats(fx->be, &bs);
	assert_int_equal(bs.reads, 1);
	assert_int_equal(bs.writes, 1);
	assert_int_equal(bs.read_bytes, PS);
	assert_int_equal(bs.errors, 0);
}

struct thr_arg {
	struct swap_backend *be;
	unsigned int id;
	uint64_t seed;
	int bad;
};

static void *thr_main(void *p)
{
	struct thr_arg *a = p;
	char in[4 * PS], out[4 * PS];
	uint64_t s = a->seed, it, base = a->id * (NR_SLOTS / 4);

	for (it = 0; it < 300 && !a->bad; it++) {
		uint64_t off = base + test_rand_below(&s, NR_SLOTS / 4 - 4);
		unsigned int k;

		for (k = 0; k < 4; k++) {
			if (test_rand_below(&s, 2))
				fill_text(in + k * PS, PS, &s);
			else
				fill_random(in + k * PS, PS, &s);
		}
		if (swap_backend_write(a->be, off, 4, in) ||
		    swap_backend_read(a->be, off, 4, out) ||
		    memcmp(in, out, sizeof(in)))
			a->bad = 1;
		if (it % 3 == 0)
			swap_backend_slot_free_notify(a->be, off);
	}
	return NULL;
}

static void test_threads(void **state)
{
	struct fixture *fx = *state;
	struct thr_arg a[4];
	pthread_t t[4];
	unsigned int i;

	for (i = 0; i < 4; i++) {
		a[i] = (struct thr_arg){ .be = fx->be, .id = i, .seed = seed + i };
		assert_int_equal(pthread_create(&t[i], NULL, thr_main, &a[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(a[i].bad, 0);
	}
	assert_int_equal(swap_backend_discard(fx->be, 0, NR_SLOTS), 0);
	{
		struct swap_zram_stats st;

		stats(fx, &st);
		assert_int_equal(st.mem_used, fx->base.mem_used);
	}
}

static void test_create_errors(void **state)
{
	struct swap_backend *be = NULL;
	struct swap_zram_stats st;
	char path[] = "/tmp/uswap-test-zram-XXXXXX";
	int fd;

	(void)state;
	assert_int_equal(swap_backend_zram_create(0, SWAP_ZRAM_LZ4, &be), -EINVAL);
	assert_int_equal(swap_backend_zram_create(10, (enum swap_zram_algo)7, &be),
			 -EINVAL);
	assert_int_equal(swap_backend_zram_create(10, SWAP_ZRAM_LZ4, NULL), -EINVAL);
	assert_null(be);
	assert_string_equal(swap_zram_algo_name(SWAP_ZRAM_ZSTD), "zstd");
	/* stats of a backend that is not zram */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 8 * PS), 0);
	close(fd);
	assert_int_equal(swap_backend_file_open(path, 0, &be), 0);
	assert_int_equal(swap_backend_zram_stats(be, &st), -EINVAL);
	swap_backend_destroy(be);
	unlink(path);
}

/* The fuzz target's round trip over inputs that reach each storage kind. */
static void test_fuzz_inputs(void **state)
{
	static uint8_t big[2 * PS + 1];
	const uint8_t zero[1] = { 0 };
	const uint8_t one_byte[2] = { 0x01, 0xab };
	const char *text = "\x0a" "swap table cluster folio swap table cache ";
	uint64_t s = seed ^ 0xf00;
	unsigned int b, mode;

	(void)state;
	fuzz_zram_roundtrip(zero, 0);
	fuzz_zram_roundtrip(zero, 1);
	fuzz_zram_roundtrip(one_byte, 2);
	fuzz_zram_roundtrip((const uint8_t *)text, strlen(text));
	fill_random(big, sizeof(big) - 1, &s);
	for (b = 0; b < 2; b++) {
		for (mode = 0; mode < 4; mode++) {
			big[0] = (uint8_t)(b | mode << 1 | (mode * 3 + b) << 3);
			fuzz_zram_roundtrip(big, sizeof(big));	/* 2 random pages */
			fuzz_zram_roundtrip(big, 100);
			fuzz_zram_roundtrip(big, PS + 1);
			fuzz_zram_roundtrip(big, PS + 50);
		}
	}
	assert_int_equal(LLVMFuzzerTestOneInput(one_byte, 2), 0);
}

#define BOTH(t) \
	cmocka_unit_test_setup_teardown(t, setup_lz4, teardown), \
	cmocka_unit_test_setup_teardown(t, setup_zstd, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_describe),
		BOTH(test_empty_reads_zero),
		BOTH(test_same_filled),
		BOTH(test_compressible),
		BOTH(test_incompressible),
		BOTH(test_runs_and_free),
		BOTH(test_discard_and_overwrite),
		BOTH(test_header_slot),
		BOTH(test_completes_in_submit),
		BOTH(test_threads),
		cmocka_unit_test(test_create_errors),
		cmocka_unit_test(test_fuzz_inputs),
	};

	seed = test_seed("backend_zram");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
