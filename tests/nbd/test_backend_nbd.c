/* SPDX-License-Identifier: MIT */
/*
 * The NBD backend against real servers on Unix sockets: integrity of slot
 * runs of orders 0 to 9 with many requests in flight and racing threads
 * (nbdkit memory plugin, nbd-server), latency (nbdkit --filter=delay),
 * injected read and write errors that fail only the requests they hit
 * (nbdkit --filter=error), a command timeout (a read held by nbdkit's eval
 * plugin), a server killed under I/O (everything completes, the device
 * fails, no hang), a restarted server (reconnect, data intact), a server
 * back without our data (the device fails), a server replaced by a silent
 * one (the device fails within the reconnect window), trim, and bad input (no
 * server, a silent server, an export too small, a read-only export).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/backend.h"
#include "nbd_server.h"
#include "testutil.h"

#define PAGE		4096U
#define EXPORT_SLOTS	16384U		/* 64 MiB */

static char dir[128];

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static void fill(void *buf, uint64_t slot, uint64_t ver, unsigned int nr)
{
	uint64_t *w = buf;
	unsigned int i;

	for (i = 0; i < nr * PAGE / 8; i++)
		w[i] = ((slot + i / (PAGE / 8)) << 32) ^ (ver * 0x9e3779b97f4a7c15ULL) ^ i;
}

static double ms_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static struct swap_backend *open_be(const char *uri, unsigned int timeout_ms,
				    unsigned int reconnect_ms)
{
	struct swap_nbd_params p = { timeout_ms, reconnect_ms, SWAP_NBD_DEPTH };
	struct swap_backend *be = NULL;
	char err[256];
	int ret = swap_backend_nbd_open(uri, &p, &be, err, sizeof(err));

	if (ret)
		fprintf(stderr, "open %s: %d %s\n", uri, ret, err);
	assert_int_equal(ret, 0);
	return be;
}

/*
 * Write 2^order-slot runs at aligned random offsets, 32 requests per
 * batch (all in flight at once), for every order 0..9, then read every
 * run back in batches and compare. Distinct runs per order: the areas of
 * the orders do not overlap.
 */
static void integrity(struct swap_backend *be)
{
	enum { PER_ORDER = 32 };
	struct swap_io_req reqs[PER_ORDER];
	uint64_t offs[PER_ORDER];
	unsigned int order;
	char *buf = aligned_alloc(PAGE, (size_t)PER_ORDER * 512 * PAGE);
	char *chk = aligned_alloc(PAGE, 512 * PAGE);
	uint64_t area = be->nr_slots / 10;

	assert_non_null(buf);
	assert_non_null(chk);
	for (order = 0; order <= 9; order++) {
		unsigned int nr = 1U << order, i, j, n;
		uint64_t base = area * order;
		uint64_t runs = area / nr;

		n = (unsigned int)(runs < PER_ORDER ? runs : PER_ORDER);

		/* distinct run indices within this order's area */
		for (i = 0; i < n; i++) {
			bool dup;

			do {
				offs[i] = base + (rnd() % runs) * nr;
				dup = false;
				for (j = 0; j < i; j++)
					dup |= offs[j] == offs[i];
			} while (dup);
			if (offs[i] + nr > base + area)
				offs[i] = base;	/* runs * nr <= area: never */
		}
		for (i = 0; i < n; i++) {
			reqs[i] = (struct swap_io_req){
				.op = SWAP_IO_WRITE, .nr = nr, .offset = offs[i],
				.buf = buf + (size_t)i * nr * PAGE,
			};
			fill(reqs[i].buf, offs[i], order + 1, nr);
		}
		assert_int_equal(swap_backend_rw_sync(be, reqs, n), 0);
		memset(buf, 0, (size_t)n * nr * PAGE);
		for (i = 0; i < n; i++)
			reqs[i] = (struct swap_io_req){
				.op = SWAP_IO_READ, .nr = nr, .offset = offs[i],
				.buf = buf + (size_t)i * nr * PAGE,
			};
		assert_int_equal(swap_backend_rw_sync(be, reqs, n), 0);
		for (i = 0; i < n; i++) {
			fill(chk, offs[i], order + 1, nr);
			assert_memory_equal(buf + (size_t)i * nr * PAGE, chk, (size_t)nr * PAGE);
		}
	}
	free(buf);
	free(chk);
}

struct racer {
	struct swap_backend *be;
	uint64_t base, len;
	unsigned int id;
	int bad;
};

/* Each racer owns its slots: write a run, read it back, many times. */
static void *racer_fn(void *arg)
{
	struct racer *r = arg;
	char *w = aligned_alloc(PAGE, 8 * PAGE), *rd = aligned_alloc(PAGE, 8 * PAGE);
	uint64_t x = 0x1234567ULL * (r->id + 1);
	unsigned int it;

	for (it = 0; it < 300; it++) {
		unsigned int nr = 1U << (it % 4);
		uint64_t off;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		off = r->base + (x % (r->len / 8)) * 8;
		fill(w, off, it + 100, nr);
		if (swap_backend_write(r->be, off, nr, w) ||
		    swap_backend_read(r->be, off, nr, rd) ||
		    memcmp(w, rd, (size_t)nr * PAGE))
			r->bad++;
	}
	free(w);
	free(rd);
	return NULL;
}

static void race(struct swap_backend *be)
{
	enum { N = 4 };
	struct racer r[N];
	pthread_t t[N];
	unsigned int i;

	for (i = 0; i < N; i++) {
		r[i] = (struct racer){ .be = be, .base = i * (be->nr_slots / N),
				       .len = be->nr_slots / N, .id = i };
		assert_int_equal(pthread_create(&t[i], NULL, racer_fn, &r[i]), 0);
	}
	for (i = 0; i < N; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(r[i].bad, 0);
	}
}

static void test_integrity_nbdkit(void **state)
{
	struct swap_nbd_stats st;
	struct swap_backend_stats bs;
	struct swap_backend *be;
	struct nbd_srv s;

	(void)state;
	assert_int_equal(nbd_srv_nbdkit(&s, dir, "mem", "memory", "64M", NULL), 0);
	be = open_be(s.uri, 10000, 5000);
	assert_int_equal(be->nr_slots, EXPORT_SLOTS);
	assert_false(be->synchronous);
	assert_non_null(strstr(swap_backend_describe(be), "nbd"));
	integrity(be);
	race(be);
	assert_int_equal(swap_backend_flush(be), 0);
	assert_int_equal(swap_backend_nbd_stats(be, &st), 0);
	swap_backend_get_stats(be, &bs);
	assert_int_equal(bs.errors, 0);
	assert_true(st.max_inflight > 1);	/* batches really were in flight */
	assert_true(st.read_samples > 0 && st.read_p50_us <= st.read_p99_us);
	assert_string_equal(st.state, "connected");
	assert_int_equal(st.lost_connections, 0);
	swap_backend_destroy(be);
	nbd_srv_kill(&s);
}

static void test_integrity_nbd_server(void **state)
{
	struct swap_backend *be;
	struct nbd_srv s;

	(void)state;
	assert_int_equal(nbd_srv_nbd_server(&s, dir, "ns", 64ULL << 20), 0);
	be = open_be(s.uri, 10000, 5000);
	assert_int_equal(be->nr_slots, EXPORT_SLOTS);
	integrity(be);
	race(be);
	swap_backend_destroy(be);
	nbd_srv_kill(&s);
}

/* Injected errors fail the requests they hit, and nothing else. */
static void test_error_filter(void **state)
{
	char rtrig[256], wtrig[256], rarg[300], warg[300];
	char *buf = aligned_alloc(PAGE, 64 * PAGE), *chk = aligned_alloc(PAGE, PAGE);
	struct swap_nbd_stats st;
	struct swap_backend *be;
	struct nbd_srv s;
	unsigned int i;
	FILE *f;

	(void)state;
	snprintf(rtrig, sizeof(rtrig), "%s/rtrig", dir);
	snprintf(wtrig, sizeof(wtrig), "%s/wtrig", dir);
	snprintf(rarg, sizeof(rarg), "error-pread-file=%s", rtrig);
	snprintf(warg, sizeof(warg), "error-pwrite-file=%s", wtrig);
	assert_int_equal(nbd_srv_nbdkit(&s, dir, "err", "--filter=error", "memory", "64M",
					"error=EIO", "error-pread-rate=100%", rarg,
					"error-pwrite-rate=100%", warg, NULL), 0);
	be = open_be(s.uri, 10000, 5000);
	for (i = 0; i < 64; i++)
		fill(buf + i * PAGE, i, 1, 1);
	assert_int_equal(swap_backend_write(be, 0, 64, buf), 0);

	/* reads of pages 0..7 fail while the trigger exists */
	f = fopen(rtrig, "w");
	assert_non_null(f);
	fclose(f);
	for (i = 0; i < 8; i++)
		assert_int_equal(swap_backend_read(be, i, 1, chk), -EIO);
	unlink(rtrig);
	/* a write of page 9 fails: the old data stays */
	f = fopen(wtrig, "w");
	assert_non_null(f);
	fclose(f);
	memset(chk, 0xee, PAGE);
	assert_int_equal(swap_backend_write(be, 9, 1, chk), -EIO);
	unlink(wtrig);
	/* every page reads back as written, the connection never dropped */
	memset(buf, 0, 64 * PAGE);
	assert_int_equal(swap_backend_read(be, 0, 64, buf), 0);
	for (i = 0; i < 64; i++) {
		fill(chk, i, 1, 1);
		assert_memory_equal(buf + i * PAGE, chk, PAGE);
	}
	assert_int_equal(swap_backend_nbd_stats(be, &st), 0);
	assert_int_equal(st.lost_connections, 0);
	assert_false(swap_backend_failed(be));
	swap_backend_destroy(be);
	nbd_srv_kill(&s);
	free(buf);
	free(chk);
}

/* Latency (nbdkit --filter=delay, 1 ms a request, its finest step): data
 * intact, the commands overlap, the latency is seen. */
static void test_delay_filter(void **state)
{
	enum { N = 64 };
	struct swap_io_req reqs[N];
	char *buf = aligned_alloc(PAGE, N * PAGE), *chk = aligned_alloc(PAGE, PAGE);
	struct swap_nbd_stats st;
	struct swap_backend *be;
	struct nbd_srv s;
	unsigned int i;

	(void)state;
	assert_int_equal(nbd_srv_nbdkit(&s, dir, "delay", "--filter=delay", "memory", "64M",
					"rdelay=1ms", "wdelay=1ms", NULL), 0);
	be = open_be(s.uri, 10000, 5000);
	for (i = 0; i < N; i++) {
		reqs[i] = (struct swap_io_req){ .op = SWAP_IO_WRITE, .nr = 1, .offset = 7 * i,
						.buf = buf + i * PAGE };
		fill(reqs[i].buf, 7 * i, 5, 1);
	}
	assert_int_equal(swap_backend_rw_sync(be, reqs, N), 0);
	memset(buf, 0, N * PAGE);
	for (i = 0; i < N; i++)
		reqs[i] = (struct swap_io_req){ .op = SWAP_IO_READ, .nr = 1, .offset = 7 * i,
						.buf = buf + i * PAGE };
	assert_int_equal(swap_backend_rw_sync(be, reqs, N), 0);
	for (i = 0; i < N; i++) {
		fill(chk, 7 * i, 5, 1);
		assert_memory_equal(buf + i * PAGE, chk, PAGE);
	}
	assert_int_equal(swap_backend_nbd_stats(be, &st), 0);
	assert_true(st.read_p50_us >= 1000);
	assert_true(st.max_inflight > 1);	/* the commands overlapped */
	swap_backend_destroy(be);
	nbd_srv_kill(&s);
	free(buf);
	free(chk);
}

/* A command the server sits on fails with -EIO after the timeout (nbdkit's
 * eval plugin holds the read; --filter=delay would hold slot 0 too). */
static void test_timeout(void **state)
{
	char *buf = aligned_alloc(PAGE, PAGE);
	struct swap_nbd_stats st;
	struct swap_backend *be;
	struct nbd_srv s;
	double t0;

	(void)state;
	/* reads past slot 0 take 12 s; slot 0 (read at open and reconnect) is quick */
	assert_int_equal(nbd_srv_nbdkit(&s, dir, "slow", "eval", "thread_model=echo parallel",
					"get_size=echo 67108864",
					"can_write=exit 0", "pwrite=cat >/dev/null",
					"pread=if [ \"$4\" -ne 0 ]; then sleep 12; fi; "
					"head -c \"$3\" /dev/zero", NULL), 0);
	/* 3 s: the eval plugin starts a shell per command, which took up
	 * to ~2 s on a machine at load 25 (1.5 s timed the write out there) */
	be = open_be(s.uri, 3000, 5000);
	fill(buf, 3, 1, 1);
	assert_int_equal(swap_backend_write(be, 3, 1, buf), 0);
	t0 = ms_now();
	assert_int_equal(swap_backend_read(be, 3, 1, buf), -EIO);
	assert_true(ms_now() - t0 < 9000);	/* the timeout, not the 12 s read */
	/* the device is not failed: writes still go through, on a new connection */
	assert_int_equal(swap_backend_write(be, 4, 1, buf), 0);
	assert_int_equal(swap_backend_nbd_stats(be, &st), 0);
	assert_int_equal(st.timeouts, 1);
	assert_true(st.reconnects >= 1);
	assert_false(swap_backend_failed(be));
	swap_backend_destroy(be);
	nbd_srv_kill(&s);
	free(buf);
}

struct streamer {
	struct swap_backend *be;
	_Atomic bool stop;
	_Atomic unsigned long ok, failed;
};

static void *stream_fn(void *arg)
{
	struct streamer *s = arg;
	struct swap_io_req reqs[16];
	char *buf = aligned_alloc(PAGE, 16 * 4 * PAGE);
	unsigned int i, round = 0;

	while (!atomic_load(&s->stop)) {
		for (i = 0; i < 16; i++)
			reqs[i] = (struct swap_io_req){
				.op = (round + i) % 2 ? SWAP_IO_READ : SWAP_IO_WRITE, .nr = 4,
				.offset = ((round * 16 + i) * 4) % (s->be->nr_slots - 4),
				.buf = buf + i * 4 * PAGE,
			};
		swap_backend_rw_sync(s->be, reqs, 16);
		for (i = 0; i < 16; i++) {
			if (reqs[i].result)
				atomic_fetch_add(&s->failed, 1);
			else
				atomic_fetch_add(&s->ok, 1);
		}
		round++;
	}
	free(buf);
	return NULL;
}

/* The server dies under I/O: everything completes, the device fails. */
static void test_killed(void **state)
{
	struct streamer sm = { 0 };
	char *buf = aligned_alloc(PAGE, PAGE);
	struct swap_nbd_stats st;
	struct nbd_srv s;
	pthread_t t;
	double t0;

	(void)state;
	assert_int_equal(nbd_srv_nbdkit(&s, dir, "victim", "memory", "64M", NULL), 0);
	sm.be = open_be(s.uri, 2000, 300);
	assert_int_equal(pthread_create(&t, NULL, stream_fn, &sm), 0);
	while (atomic_load(&sm.ok) < 200)
		sched_yield();
	nbd_srv_kill(&s);
	t0 = ms_now();
	while (!swap_backend_failed(sm.be))
		assert_true(ms_now() - t0 < 5000), sched_yield();	/* no hang */
	atomic_store(&sm.stop, true);
	pthread_join(t, NULL);
	assert_true(atomic_load(&sm.failed) > 0);
	/* later requests fail at once */
	t0 = ms_now();
	assert_int_equal(swap_backend_read(sm.be, 0, 1, buf), -EIO);
	assert_int_equal(swap_backend_flush(sm.be), -EIO);
	assert_true(ms_now() - t0 < 100);
	assert_int_equal(swap_backend_nbd_stats(sm.be, &st), 0);
	assert_string_equal(st.state, "failed");
	assert_true(st.lost_connections >= 1);
	swap_backend_destroy(sm.be);
	free(buf);
}

struct reader {
	struct swap_backend *be;
	char *buf;
	int ret;
};

static void *reader_fn(void *arg)
{
	struct reader *r = arg;

	r->ret = swap_backend_read(r->be, 0, 16, r->buf);
	return NULL;
}

/* The server restarts within the reconnect window: no request fails. */
static void test_restart(void **state)
{
	char *buf = aligned_alloc(PAGE, 16 * PAGE), *chk = aligned_alloc(PAGE, 16 * PAGE);
	struct reader rd = { .buf = buf };
	struct swap_nbd_stats st;
	struct swap_backend *be;
	struct nbd_srv s;
	pthread_t t;
	FILE *f;

	(void)state;
	/* the file plugin keeps the data across the restart */
	snprintf(s.file, sizeof(s.file), "%s/restart.img", dir);
	f = fopen(s.file, "w");
	assert_non_null(f);
	assert_int_equal(ftruncate(fileno(f), 16 << 20), 0);
	fclose(f);
	assert_int_equal(nbd_srv_nbdkit(&s, dir, "restart", "file", "@FILE", NULL), 0);
	be = open_be(s.uri, 5000, 8000);
	fill(chk, 0, 7, 16);
	assert_int_equal(swap_backend_write(be, 0, 16, chk), 0);
	assert_int_equal(swap_backend_flush(be), 0);
	nbd_srv_kill(&s);
	rd.be = be;
	assert_int_equal(pthread_create(&t, NULL, reader_fn, &rd), 0);
	/* the read waits for the server to come back */
	while (!swap_backend_nbd_stats(be, &st) && strcmp(st.state, "reconnecting"))
		sched_yield();
	assert_int_equal(nbd_srv_restart(&s), 0);
	pthread_join(t, NULL);
	assert_int_equal(rd.ret, 0);
	assert_memory_equal(buf, chk, 16 * PAGE);
	assert_int_equal(swap_backend_nbd_stats(be, &st), 0);
	assert_true(st.reconnects >= 1);
	assert_false(swap_backend_failed(be));
	swap_backend_destroy(be);
	nbd_srv_kill(&s);
	free(buf);
	free(chk);
}

/* A server back without our data (memory plugin restarted): the device
 * fails rather than hand out zeros for written pages. */
static void test_restart_empty(void **state)
{
	char *buf = aligned_alloc(PAGE, PAGE), *chk = aligned_alloc(PAGE, PAGE);
	struct swap_nbd_stats st;
	struct swap_backend *be;
	struct nbd_srv s;

	(void)state;
	assert_int_equal(nbd_srv_nbdkit(&s, dir, "amnesia", "memory", "64M", NULL), 0);
	be = open_be(s.uri, 5000, 8000);
	fill(chk, 0, 11, 1);
	assert_int_equal(swap_backend_write(be, 0, 1, chk), 0);
	assert_int_equal(swap_backend_write(be, 5, 1, chk), 0);
	nbd_srv_kill(&s);
	assert_int_equal(nbd_srv_restart(&s), 0);
	assert_int_equal(swap_backend_read(be, 5, 1, buf), -EIO);
	assert_true(swap_backend_failed(be));
	assert_int_equal(swap_backend_nbd_stats(be, &st), 0);
	assert_int_equal(st.reconnects, 0);
	swap_backend_destroy(be);
	nbd_srv_kill(&s);
	free(buf);
	free(chk);
}

/*
 * The server is replaced by one that accepts and never answers (a listening
 * socket on the same path: the kernel completes the connect, nobody reads
 * or writes): every reconnect attempt is bounded by what is left of the
 * reconnect window, so the device fails within the window and a small
 * margin, not after a whole handshake timeout (10 s here).
 */
static void test_reconnect_silent(void **state)
{
	char *buf = aligned_alloc(PAGE, PAGE);
	struct swap_nbd_stats st;
	struct swap_backend *be;
	struct nbd_srv s;
	double t0, took;
	int fd;

	(void)state;
	assert_int_equal(nbd_srv_nbdkit(&s, dir, "mute", "memory", "64M", NULL), 0);
	be = open_be(s.uri, 10000, 1000);
	fill(buf, 0, 3, 1);
	assert_int_equal(swap_backend_write(be, 0, 1, buf), 0);
	t0 = ms_now();
	nbd_srv_kill(&s);
	fd = nbd_srv_silent(s.sock);
	assert_true(fd >= 0);
	assert_int_equal(swap_backend_read(be, 0, 1, buf), -EIO);
	took = ms_now() - t0;
	assert_true(swap_backend_failed(be));
	assert_int_equal(swap_backend_nbd_stats(be, &st), 0);
	assert_string_equal(st.state, "failed");
	assert_int_equal(st.reconnects, 0);
	if (took >= 1000 + 1000)
		fprintf(stderr, "device failed %.0f ms after the loss (window 1000 ms)\n", took);
	assert_true(took < 1000 + 1000);
	swap_backend_destroy(be);
	close(fd);
	free(buf);
}

/* Trim for discard when offered: the memory plugin reads trimmed as zero. */
static void test_discard(void **state)
{
	char *buf = aligned_alloc(PAGE, 8 * PAGE), *zero = calloc(8, PAGE);
	struct swap_backend *be;
	struct nbd_srv s;

	(void)state;
	assert_int_equal(nbd_srv_nbdkit(&s, dir, "trim", "memory", "64M", NULL), 0);
	be = open_be(s.uri, 10000, 5000);
	fill(buf, 8, 1, 8);
	assert_int_equal(swap_backend_write(be, 8, 8, buf), 0);
	assert_int_equal(swap_backend_discard(be, 8, 8), 0);
	assert_int_equal(swap_backend_read(be, 8, 8, buf), 0);
	assert_memory_equal(buf, zero, 8 * PAGE);
	/* a trim larger than one command is split */
	assert_int_equal(swap_backend_discard(be, 0, be->nr_slots), 0);
	swap_backend_destroy(be);
	nbd_srv_kill(&s);
	free(buf);
	free(zero);
}

static void test_bad_input(void **state)
{
	struct swap_nbd_params p = { 300, 300, 8 };
	struct swap_backend *be = NULL;
	char err[256], uri[400], path[300];
	struct nbd_srv s;
	double t0;
	int fd;

	(void)state;
	/* no server at all */
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s/nobody.sock", dir);
	assert_true(swap_backend_nbd_open(uri, &p, &be, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "cannot connect"));
	assert_null(be);
	/* a server that never answers: the connect times out */
	snprintf(path, sizeof(path), "%s/silent.sock", dir);
	fd = nbd_srv_silent(path);
	assert_true(fd >= 0);
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s", path);
	t0 = ms_now();
	assert_int_equal(swap_backend_nbd_open(uri, &p, &be, err, sizeof(err)), -ETIMEDOUT);
	assert_true(ms_now() - t0 < 4000);
	assert_non_null(strstr(err, "no answer"));
	close(fd);
	/* an export smaller than a page */
	assert_int_equal(nbd_srv_nbdkit(&s, dir, "tiny", "memory", "1024", NULL), 0);
	assert_int_equal(swap_backend_nbd_open(s.uri, &p, &be, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "smaller than one page"));
	nbd_srv_kill(&s);
	/* a read-only export */
	assert_int_equal(nbd_srv_nbdkit(&s, dir, "ro", "-r", "memory", "64M", NULL), 0);
	assert_int_equal(swap_backend_nbd_open(s.uri, &p, &be, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "read-only"));
	nbd_srv_kill(&s);
	/* bad params */
	p.depth = 0;
	assert_int_equal(swap_backend_nbd_open(s.uri, &p, &be, err, sizeof(err)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_integrity_nbdkit),
		cmocka_unit_test(test_integrity_nbd_server),
		cmocka_unit_test(test_error_filter),
		cmocka_unit_test(test_delay_filter),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_killed),
		cmocka_unit_test(test_restart),
		cmocka_unit_test(test_restart_empty),
		cmocka_unit_test(test_reconnect_silent),
		cmocka_unit_test(test_discard),
		cmocka_unit_test(test_bad_input),
	};

	return test_run_in_tmpdir("backend_nbd", tests, sizeof(tests) / sizeof(tests[0]), "nbd", dir,
				  sizeof(dir));
}
