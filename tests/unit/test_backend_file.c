/* SPDX-License-Identifier: MIT */
/*
 * The file backend: every page written reads back identical, through
 * io_uring and through the pread fallback, one request at a time and with
 * many in flight, from several threads; discard punches holes; short and
 * failed transfers are reported. Waiting callers (swap_backend_rw_sync())
 * run on rings of their own: batches deeper than one such ring, more
 * threads than there are rings, reads and writes mixed in one batch, and
 * those rings beside the shared one and a registered region.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/backend.h"
#include "util/debug.h"
#include "testutil.h"

#define PS		SWAP_BACKEND_PAGE_SIZE
#define NR_SLOTS	4096U		/* 16 MiB */

static uint64_t seed;

struct fixture {
	char path[64];
	struct swap_backend *be;
	unsigned int flags;
};

static int make_file(char *path, uint64_t bytes)
{
	int fd;

	strcpy(path, "/tmp/uswap-test-file-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)bytes)) {
		close(fd);
		return -errno;
	}
	close(fd);
	return 0;
}

static int setup_flags(void **state, unsigned int flags)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	assert_int_equal(make_file(fx->path, (uint64_t)NR_SLOTS * PS), 0);
	fx->flags = flags;
	assert_int_equal(swap_backend_file_open(fx->path, flags, &fx->be), 0);
	assert_int_equal(fx->be->nr_slots, NR_SLOTS);
	assert_false(fx->be->synchronous);
	*state = fx;
	return 0;
}

static int setup_uring(void **state)
{
	return setup_flags(state, 0);
}

static int setup_pread(void **state)
{
	return setup_flags(state, SWAP_FILE_NO_URING);
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	swap_backend_destroy(fx->be);
	unlink(fx->path);
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

static void test_describe(void **state)
{
	struct fixture *fx = *state;
	const char *d = swap_backend_describe(fx->be);

	assert_non_null(strstr(d, fx->path));
	if (fx->flags & SWAP_FILE_NO_URING) {
		assert_non_null(strstr(d, " pread"));
		assert_false(swap_backend_file_uses_uring(fx->be));
	} else {
		/* io_uring works on the machines we test on; say so if not */
		if (!swap_backend_file_uses_uring(fx->be))
			print_message("io_uring unavailable: %s\n", d);
		else
			assert_non_null(strstr(d, " io_uring"));
	}
}

/* Random runs of 1..512 slots, written then read back. */
static void test_roundtrip_runs(void **state)
{
	struct fixture *fx = *state;
	uint64_t s = seed;
	char *wbuf = malloc((size_t)SWAP_IO_MAX_RUN * PS);
	char *rbuf = malloc((size_t)SWAP_IO_MAX_RUN * PS);
	struct swap_backend_stats st0, st1;
	unsigned int i, lens[] = { 1, 2, 7, 64, 255, 511, 512 };
	uint64_t nreq = 0;

	assert_non_null(wbuf);
	assert_non_null(rbuf);
	swap_backend_get_stats(fx->be, &st0);
	for (i = 0; i < 40; i++) {
		unsigned int nr = i < ARRAY_SIZE(lens) ? lens[i] :
				  1 + (unsigned int)test_rand_below(&s, SWAP_IO_MAX_RUN);
		uint64_t off = test_rand_below(&s, NR_SLOTS - nr + 1);

		fill_random(wbuf, (size_t)nr * PS, &s);
		assert_int_equal(swap_backend_write(fx->be, off, nr, wbuf), 0);
		memset(rbuf, 0x5a, (size_t)nr * PS);
		assert_int_equal(swap_backend_read(fx->be, off, nr, rbuf), 0);
		assert_memory_equal(wbuf, rbuf, (size_t)nr * PS);
		nreq++;
	}
	/* the last slot, and slot 0 */
	fill_random(wbuf, PS, &s);
	assert_int_equal(swap_backend_write(fx->be, NR_SLOTS - 1, 1, wbuf), 0);
	assert_int_equal(swap_backend_read(fx->be, NR_SLOTS - 1, 1, rbuf), 0);
	assert_memory_equal(wbuf, rbuf, PS);
	assert_int_equal(swap_backend_write(fx->be, 0, 1, wbuf), 0);
	assert_int_equal(swap_backend_read(fx->be, 0, 1, rbuf), 0);
	assert_memory_equal(wbuf, rbuf, PS);
	nreq += 2;

	swap_backend_get_stats(fx->be, &st1);
	assert_int_equal(st1.reads - st0.reads, nreq);
	assert_int_equal(st1.writes - st0.writes, nreq);
	assert_int_equal(st1.errors, st0.errors);
	assert_int_equal(st1.read_bytes - st0.read_bytes,
			 st1.write_bytes - st0.write_bytes);
	assert_int_equal(swap_backend_flush(fx->be), 0);
	free(wbuf);
	free(rbuf);
}

static void test_bad_requests(void **state)
{
	struct fixture *fx = *state;
	char buf[PS];
	struct swap_io_req r[2] = {
		{ .op = SWAP_IO_WRITE, .offset = 1, .nr = 1, .buf = buf },
		{ .op = SWAP_IO_WRITE, .offset = NR_SLOTS - 1, .nr = 2, .buf = buf },
	};
	struct swap_backend_stats st;

	memset(buf, 1, sizeof(buf));
	/* one bad request: none of the batch is done */
	assert_int_equal(swap_backend_rw_sync(fx->be, r, 2), -EINVAL);
	r[1].offset = NR_SLOTS;
	r[1].nr = 1;
	assert_int_equal(swap_backend_submit(fx->be, r, 2), -EINVAL);
	assert_int_equal(swap_backend_read(fx->be, 0, 0, buf), -EINVAL);
	assert_int_equal(swap_backend_read(fx->be, 0, 1, NULL), -EINVAL);
	assert_int_equal(swap_backend_read(fx->be, UINT64_MAX, 1, buf), -EINVAL);
	r[1].op = 7;
	r[1].offset = 0;
	assert_int_equal(swap_backend_submit(fx->be, r, 2), -EINVAL);
	swap_backend_get_stats(fx->be, &st);
	assert_int_equal(st.reads + st.writes, 0);
	assert_int_equal(swap_backend_discard(fx->be, NR_SLOTS, 1), -EINVAL);
	assert_int_equal(swap_backend_submit(fx->be, r, 0), 0);
	assert_int_equal(swap_backend_reap(fx->be, 0), 0);
}

static void test_open_errors(void **state)
{
	struct swap_backend *be = NULL;
	char path[64];

	(void)state;
	assert_int_equal(swap_backend_file_open("/nonexistent/uswap", 0, &be), -ENOENT);
	assert_int_equal(swap_backend_file_open("/tmp", 0, &be), -EISDIR);
	assert_int_equal(swap_backend_file_open("/tmp/x", 0x100, &be), -EINVAL);
	assert_int_equal(make_file(path, 100), 0);
	assert_int_equal(swap_backend_file_open(path, 0, &be), -EINVAL);
	unlink(path);
	assert_null(be);
	assert_int_equal(swap_backend_file_register_buffers(NULL, path, 1), -EINVAL);
}

struct async_ctx {
	_Atomic unsigned int done;
	_Atomic unsigned int failed;
};

static void async_end_io(struct swap_io_req *r)
{
	struct async_ctx *c = r->private;

	if (r->result)
		atomic_fetch_add(&c->failed, 1);
	atomic_fetch_add(&c->done, 1);
}

/* Many requests in one batch (more than the ring holds), async completion. */
static void test_many_in_flight(void **state)
{
	struct fixture *fx = *state;
	enum { NR_REQ = 300, RUN = 8 };
	struct swap_io_req *reqs = calloc(NR_REQ, sizeof(*reqs));
	char *wbuf = malloc((size_t)NR_REQ * RUN * PS);
	char *rbuf = malloc((size_t)NR_REQ * RUN * PS);
	struct async_ctx c = { 0 };
	uint64_t s = seed ^ 0x1234;
	unsigned int i, pass;

	assert_non_null(reqs);
	assert_non_null(wbuf);
	assert_non_null(rbuf);
	fill_random(wbuf, (size_t)NR_REQ * RUN * PS, &s);
	for (pass = 0; pass < 2; pass++) {
		atomic_store(&c.done, 0);
		for (i = 0; i < NR_REQ; i++) {
			/* interleaved offsets: run i at slot (i * 13 % NR_REQ) * RUN */
			reqs[i] = (struct swap_io_req){
				.op = pass ? SWAP_IO_READ : SWAP_IO_WRITE,
				.offset = (uint64_t)(i * 13 % NR_REQ) * RUN,
				.nr = 1 + i % RUN,
				.buf = (pass ? rbuf : wbuf) + (size_t)i * RUN * PS,
				.end_io = async_end_io,
				.private = &c,
			};
		}
		assert_int_equal(swap_backend_submit(fx->be, reqs, NR_REQ), 0);
		while (atomic_load(&c.done) < NR_REQ) {
			int n = swap_backend_reap(fx->be, 1);

			assert_true(n >= 0);
		}
		assert_int_equal(atomic_load(&c.failed), 0);
		assert_int_equal(swap_backend_reap(fx->be, 1), 0);	/* none in flight */
	}
	for (i = 0; i < NR_REQ; i++)
		assert_memory_equal(wbuf + (size_t)i * RUN * PS,
				    rbuf + (size_t)i * RUN * PS, (size_t)(1 + i % RUN) * PS);
	free(reqs);
	free(wbuf);
	free(rbuf);
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
	enum { SPAN = NR_SLOTS / 4, RUN = 16 };
	char *w = malloc((size_t)RUN * PS * 4), *r = malloc((size_t)RUN * PS * 4);
	uint64_t s = a->seed;
	unsigned int it, k;

	for (it = 0; it < 60 && !a->bad; it++) {
		struct swap_io_req req[4];

		fill_random(w, (size_t)RUN * PS * 4, &s);
		/* four runs that cannot overlap: one per quarter of our span */
		for (k = 0; k < 4; k++)
			req[k] = (struct swap_io_req){
				.op = SWAP_IO_WRITE,
				.offset = a->id * SPAN + k * (SPAN / 4) +
					  test_rand_below(&s, SPAN / 4 - RUN),
				.nr = RUN, .buf = w + (size_t)k * RUN * PS,
			};
		if (swap_backend_rw_sync(a->be, req, 4))
			a->bad = 1;
		for (k = 0; k < 4; k++) {
			req[k].op = SWAP_IO_READ;
			req[k].buf = r + (size_t)k * RUN * PS;
		}
		if (swap_backend_rw_sync(a->be, req, 4) ||
		    memcmp(w, r, (size_t)RUN * PS * 4))
			a->bad = 1;
	}
	free(w);
	free(r);
	return NULL;
}

/* Four threads on disjoint quarters, waiting with rw_sync. */
static void test_threads(void **state)
{
	struct fixture *fx = *state;
	pthread_t t[4];
	struct thr_arg a[4];
	unsigned int i;

	for (i = 0; i < 4; i++) {
		a[i] = (struct thr_arg){ .be = fx->be, .id = i, .seed = seed + i };
		assert_int_equal(pthread_create(&t[i], NULL, thr_main, &a[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(a[i].bad, 0);
	}
}

/* I/O from inside and outside a registered region. */
static void test_registered_buffers(void **state)
{
	struct fixture *fx = *state;
	size_t len = 64 * PS;
	char *region = aligned_alloc(PS, len), *other = malloc(4 * PS);
	uint64_t s = seed ^ 77;
	int ret;

	assert_non_null(region);
	assert_non_null(other);
	ret = swap_backend_file_register_buffers(fx->be, region, len);
	if (ret == -ENOMEM || ret == -EPERM) {
		print_message("cannot register buffers here (%s), skipped\n",
			      strerror(-ret));
		free(region);
		free(other);
		return;
	}
	assert_int_equal(ret, 0);
	fill_random(region, len, &s);
	assert_int_equal(swap_backend_write(fx->be, 100, 32, region), 0);
	assert_int_equal(swap_backend_read(fx->be, 100, 32, region + 32 * PS), 0);
	assert_memory_equal(region, region + 32 * PS, 32 * PS);
	/* a buffer straddling the end of the region is not fixed: still works */
	assert_int_equal(swap_backend_read(fx->be, 100, 1, region + 63 * PS), 0);
	assert_memory_equal(region, region + 63 * PS, PS);
	assert_int_equal(swap_backend_read(fx->be, 100, 4, other), 0);
	assert_memory_equal(region, other, 4 * PS);
	assert_int_equal(swap_backend_file_unregister_buffers(fx->be), 0);
	assert_int_equal(swap_backend_read(fx->be, 100, 4, region), 0);
	assert_memory_equal(region, other, 4 * PS);
	free(region);
	free(other);
}

/*
 * A waiting batch deeper than a caller's ring (64), reads and writes mixed
 * in it: each run of the batch lands where it should.
 */
static void test_sync_deep_mixed(void **state)
{
	struct fixture *fx = *state;
	enum { NR_REQ = 150, RUN = 4 };
	struct swap_io_req *reqs = calloc(NR_REQ, sizeof(*reqs));
	char *wbuf = malloc((size_t)NR_REQ * RUN * PS);
	char *rbuf = malloc((size_t)NR_REQ * RUN * PS);
	uint64_t s = seed ^ 0x5151;
	unsigned int i;

	assert_non_null(reqs);
	assert_non_null(wbuf);
	assert_non_null(rbuf);
	fill_random(wbuf, (size_t)NR_REQ * RUN * PS, &s);
	/* the even runs first, as one deep batch of writes */
	for (i = 0; i < NR_REQ; i++)
		reqs[i] = (struct swap_io_req){
			.op = SWAP_IO_WRITE, .offset = (uint64_t)i * RUN, .nr = RUN,
			.buf = wbuf + (size_t)i * RUN * PS,
		};
	assert_int_equal(swap_backend_rw_sync(fx->be, reqs, NR_REQ / 2), 0);
	/* then one batch reading the even runs back while writing the odd */
	for (i = 0; i < NR_REQ; i++) {
		bool rd = i % 2 == 0;

		reqs[i] = (struct swap_io_req){
			.op = rd ? SWAP_IO_READ : SWAP_IO_WRITE,
			.offset = (uint64_t)(rd ? i / 2 : NR_REQ / 2 + i / 2) * RUN,
			.nr = RUN,
			.buf = rd ? rbuf + (size_t)(i / 2) * RUN * PS :
				    wbuf + (size_t)(NR_REQ / 2 + i / 2) * RUN * PS,
		};
	}
	assert_int_equal(swap_backend_rw_sync(fx->be, reqs, NR_REQ), 0);
	for (i = 0; i < NR_REQ; i++)
		assert_int_equal(reqs[i].result, 0);
	assert_memory_equal(wbuf, rbuf, (size_t)NR_REQ / 2 * RUN * PS);
	/* and the odd ones */
	assert_int_equal(swap_backend_read(fx->be, NR_REQ / 2 * RUN, NR_REQ / 2 * RUN > 512 ?
					   512 : NR_REQ / 2 * RUN, rbuf), 0);
	assert_memory_equal(wbuf + (size_t)NR_REQ / 2 * RUN * PS, rbuf,
			    (size_t)NR_REQ / 2 * RUN * PS);
	free(reqs);
	free(wbuf);
	free(rbuf);
}

struct many_arg {
	struct swap_backend *be;
	pthread_barrier_t *go;
	unsigned int id;
	uint64_t seed;
	int bad;
};

static void *many_main(void *p)
{
	struct many_arg *a = p;
	enum { SPAN = 128, RUN = 8 };
	char *w = malloc((size_t)RUN * PS), *r = malloc((size_t)RUN * PS);
	uint64_t s = a->seed;
	unsigned int it;

	pthread_barrier_wait(a->go);
	for (it = 0; it < 40 && !a->bad && w && r; it++) {
		uint64_t off = (uint64_t)a->id * SPAN + test_rand_below(&s, SPAN - RUN);

		fill_random(w, (size_t)RUN * PS, &s);
		if (swap_backend_write(a->be, off, RUN, w) ||
		    swap_backend_read(a->be, off, RUN, r) || memcmp(w, r, (size_t)RUN * PS))
			a->bad = 1;
	}
	if (!w || !r)
		a->bad = 1;
	free(w);
	free(r);
	return NULL;
}

/* More waiting threads at once than there are rings for them (16). */
static void test_sync_many_threads(void **state)
{
	struct fixture *fx = *state;
	enum { NR = 24 };
	pthread_t t[NR];
	struct many_arg a[NR];
	pthread_barrier_t go;
	unsigned int i;

	assert_int_equal(pthread_barrier_init(&go, NULL, NR), 0);
	for (i = 0; i < NR; i++) {
		a[i] = (struct many_arg){ .be = fx->be, .go = &go, .id = i, .seed = seed + 31 * i };
		assert_int_equal(pthread_create(&t[i], NULL, many_main, &a[i]), 0);
	}
	for (i = 0; i < NR; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(a[i].bad, 0);
	}
	pthread_barrier_destroy(&go);
}

/*
 * Waiting and asynchronous I/O on one backend: what one path wrote, the
 * other reads, while both are busy.
 */
static void test_sync_and_async(void **state)
{
	struct fixture *fx = *state;
	enum { NR_REQ = 96, RUN = 2 };
	struct swap_io_req *reqs = calloc(NR_REQ, sizeof(*reqs));
	char *abuf = malloc((size_t)NR_REQ * RUN * PS), *sbuf = malloc((size_t)NR_REQ * RUN * PS);
	char *chk = malloc((size_t)NR_REQ * RUN * PS);
	struct async_ctx c = { 0 };
	uint64_t s = seed ^ 0xa5a5;
	unsigned int i;

	assert_non_null(reqs);
	assert_non_null(abuf);
	assert_non_null(sbuf);
	assert_non_null(chk);
	fill_random(abuf, (size_t)NR_REQ * RUN * PS, &s);
	fill_random(sbuf, (size_t)NR_REQ * RUN * PS, &s);
	/* async writes of area A in flight while waiting writes fill area B */
	for (i = 0; i < NR_REQ; i++)
		reqs[i] = (struct swap_io_req){
			.op = SWAP_IO_WRITE, .offset = (uint64_t)i * RUN, .nr = RUN,
			.buf = abuf + (size_t)i * RUN * PS, .end_io = async_end_io, .private = &c,
		};
	assert_int_equal(swap_backend_submit(fx->be, reqs, NR_REQ), 0);
	for (i = 0; i < NR_REQ; i++)
		assert_int_equal(swap_backend_write(fx->be, 1024 + (uint64_t)i * RUN, RUN,
						    sbuf + (size_t)i * RUN * PS), 0);
	while (atomic_load(&c.done) < NR_REQ)
		assert_true(swap_backend_reap(fx->be, 1) >= 0);
	assert_int_equal(atomic_load(&c.failed), 0);
	/* B read back asynchronously, A by waiting reads */
	atomic_store(&c.done, 0);
	for (i = 0; i < NR_REQ; i++)
		reqs[i] = (struct swap_io_req){
			.op = SWAP_IO_READ, .offset = 1024 + (uint64_t)i * RUN, .nr = RUN,
			.buf = chk + (size_t)i * RUN * PS, .end_io = async_end_io, .private = &c,
		};
	assert_int_equal(swap_backend_submit(fx->be, reqs, NR_REQ), 0);
	for (i = 0; i < NR_REQ; i++) {
		char page[RUN * PS];

		assert_int_equal(swap_backend_read(fx->be, (uint64_t)i * RUN, RUN, page), 0);
		assert_memory_equal(page, abuf + (size_t)i * RUN * PS, RUN * PS);
	}
	while (atomic_load(&c.done) < NR_REQ)
		assert_true(swap_backend_reap(fx->be, 1) >= 0);
	assert_int_equal(atomic_load(&c.failed), 0);
	assert_memory_equal(chk, sbuf, (size_t)NR_REQ * RUN * PS);
	free(reqs);
	free(abuf);
	free(sbuf);
	free(chk);
}

/*
 * A region registered after waiting callers' rings exist, and dropped
 * again: their I/O into it stays right (fixed buffers on those rings).
 */
static void test_register_after_sync(void **state)
{
	struct fixture *fx = *state;
	size_t len = 32 * PS;
	char *region = aligned_alloc(PS, len), *copy = malloc(len);
	uint64_t s = seed ^ 99;
	int ret;

	assert_non_null(region);
	assert_non_null(copy);
	fill_random(copy, len, &s);
	assert_int_equal(swap_backend_write(fx->be, 300, 32, copy), 0);	/* a ring now */
	ret = swap_backend_file_register_buffers(fx->be, region, len);
	if (ret == -ENOMEM || ret == -EPERM) {
		print_message("cannot register buffers here (%s), skipped\n", strerror(-ret));
		free(region);
		free(copy);
		return;
	}
	assert_int_equal(ret, 0);
	memset(region, 0, len);
	assert_int_equal(swap_backend_read(fx->be, 300, 32, region), 0);
	assert_memory_equal(region, copy, len);
	fill_random(region, len, &s);
	assert_int_equal(swap_backend_write(fx->be, 400, 32, region), 0);
	assert_int_equal(swap_backend_file_unregister_buffers(fx->be), 0);
	assert_int_equal(swap_backend_read(fx->be, 400, 32, copy), 0);
	assert_memory_equal(region, copy, len);
	free(region);
	free(copy);
}

static uint64_t file_blocks(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (uint64_t)st.st_blocks;
}

/* Discard punches a hole: st_blocks drops and the slots read as zeroes. */
static void test_discard(void **state)
{
	struct fixture *fx = *state;
	char *buf = malloc(256 * PS), *zero = calloc(256, PS);
	uint64_t s = seed ^ 99, before, after;
	int ret;

	assert_non_null(buf);
	assert_non_null(zero);
	fill_random(buf, 256 * PS, &s);
	assert_int_equal(swap_backend_write(fx->be, 1024, 256, buf), 0);
	assert_int_equal(swap_backend_flush(fx->be), 0);
	before = file_blocks(fx->path);
	assert_true(before >= 256 * PS / 512);
	ret = swap_backend_discard(fx->be, 1024, 256);
	if (ret == -EOPNOTSUPP) {
		print_message("hole punching unsupported on /tmp, skipped\n");
		goto out;
	}
	assert_int_equal(ret, 0);
	after = file_blocks(fx->path);
	assert_true(after + 256 * PS / 512 <= before);
	assert_int_equal(swap_backend_read(fx->be, 1024, 256, buf), 0);
	assert_memory_equal(buf, zero, 256 * PS);
out:
	free(buf);
	free(zero);
}

/*
 * A file cut short under the backend: a run crossing the new end reads its
 * first part (a short read, resubmitted), then fails with -EIO.
 */
static void test_short_read(void **state)
{
	struct fixture *fx = *state;
	char *buf = malloc(8 * PS);
	struct swap_backend_stats st;

	assert_non_null(buf);
	memset(buf, 0x11, 8 * PS);
	assert_int_equal(swap_backend_write(fx->be, NR_SLOTS - 8, 8, buf), 0);
	assert_int_equal(truncate(fx->path, (off_t)(NR_SLOTS - 4) * PS), 0);
	memset(buf, 0, 8 * PS);
	assert_int_equal(swap_backend_read(fx->be, NR_SLOTS - 8, 8, buf), -EIO);
	/* the part before the end was transferred */
	assert_int_equal((unsigned char)buf[0], 0x11);
	assert_int_equal((unsigned char)buf[4 * PS - 1], 0x11);
	assert_int_equal(swap_backend_read(fx->be, NR_SLOTS - 8, 4, buf), 0);
	swap_backend_get_stats(fx->be, &st);
	assert_int_equal(st.errors, 1);
	free(buf);
}

/* O_DIRECT: aligned buffers work, unaligned ones are refused up front. */
static void test_direct(void **state)
{
	struct swap_backend *be;
	char path[64];
	char *buf = aligned_alloc(PS, 8 * PS), *rb = aligned_alloc(PS, 8 * PS);
	uint64_t s = seed ^ 5;
	int ret;

	(void)state;
	assert_int_equal(make_file(path, 64 * PS), 0);
	ret = swap_backend_file_open(path, SWAP_FILE_DIRECT, &be);
	if (ret == -EINVAL) {
		print_message("O_DIRECT unsupported on /tmp, skipped\n");
		goto out;
	}
	assert_int_equal(ret, 0);
	assert_non_null(strstr(swap_backend_describe(be), "direct"));
	fill_random(buf, 8 * PS, &s);
	assert_int_equal(swap_backend_write(be, 3, 8, buf), 0);
	assert_int_equal(swap_backend_read(be, 3, 8, rb), 0);
	assert_memory_equal(buf, rb, 8 * PS);
	assert_int_equal(swap_backend_read(be, 3, 1, rb + 1), -EINVAL);
	swap_backend_destroy(be);
out:
	unlink(path);
	free(buf);
	free(rb);
}

/* USWAP_NO_IO_URING=1 picks the fallback at open. */
static void test_env_fallback(void **state)
{
	struct swap_backend *be;
	char path[64];

	(void)state;
	assert_int_equal(make_file(path, 16 * PS), 0);
	setenv("USWAP_NO_IO_URING", "1", 1);
	assert_int_equal(swap_backend_file_open(path, 0, &be), 0);
	unsetenv("USWAP_NO_IO_URING");
	assert_false(swap_backend_file_uses_uring(be));
	assert_non_null(strstr(swap_backend_describe(be), " pread"));
	swap_backend_destroy(be);
	unlink(path);
}

/* Destroy with requests in flight completes them first. */
static void test_destroy_in_flight(void **state)
{
	struct swap_backend *be;
	char path[64];
	char *buf = malloc(64 * PS);
	struct swap_io_req reqs[64];
	struct async_ctx c = { 0 };
	unsigned int i;

	(void)state;
	assert_int_equal(make_file(path, 64 * PS), 0);
	assert_int_equal(swap_backend_file_open(path, 0, &be), 0);
	for (i = 0; i < 64; i++)
		reqs[i] = (struct swap_io_req){ .op = SWAP_IO_WRITE, .offset = i,
			.nr = 1, .buf = buf + (size_t)i * PS, .end_io = async_end_io,
			.private = &c };
	memset(buf, 3, 64 * PS);
	assert_int_equal(swap_backend_submit(be, reqs, 64), 0);
	swap_backend_destroy(be);
	assert_int_equal(atomic_load(&c.done), 64);
	assert_int_equal(atomic_load(&c.failed), 0);
	unlink(path);
	free(buf);
}

#define BOTH(t) \
	cmocka_unit_test_setup_teardown(t, setup_uring, teardown), \
	cmocka_unit_test_setup_teardown(t, setup_pread, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_describe),
		BOTH(test_roundtrip_runs),
		BOTH(test_bad_requests),
		BOTH(test_many_in_flight),
		BOTH(test_threads),
		BOTH(test_registered_buffers),
		BOTH(test_discard),
		BOTH(test_short_read),
		BOTH(test_sync_deep_mixed),
		BOTH(test_sync_many_threads),
		BOTH(test_sync_and_async),
		BOTH(test_register_after_sync),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_direct),
		cmocka_unit_test(test_env_fallback),
		cmocka_unit_test(test_destroy_in_flight),
	};

	seed = test_seed("backend_file");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
