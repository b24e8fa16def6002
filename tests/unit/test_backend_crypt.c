/* SPDX-License-Identifier: MIT */
/*
 * The encryption wrapper over a real file (io_uring, asynchronous) and
 * zram (synchronous), with each cipher: pages read back as written; the
 * file holds none of their bytes; a byte changed on the file, a page moved
 * to another slot, a slot never written, discarded or freed read as -EIO
 * for that page alone with its buffer zeroed; a failed write leaves the
 * slot's earlier page readable; slot 0 (the header) passes through.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <sodium.h>

#include "io/backend.h"
#include "testutil.h"

#define PS		SWAP_BACKEND_PAGE_SIZE
#define NR_SLOTS	64U

struct fixture {
	char path[64];
	int fd;				/* the file, for tampering; -1 for zram */
	struct swap_backend *fault;	/* between the wrapper and the device */
	struct swap_backend *be;	/* the wrapper */
	enum swap_crypt_cipher cipher;
};

/* Slot @slot's page for generation @gen: words that name both. */
static void fill(void *buf, uint64_t slot, uint64_t gen)
{
	uint64_t *w = buf;

	for (size_t i = 0; i < PS / 8; i++)
		w[i] = 0x5ec2e7000000000ULL ^ (slot << 32) ^ (gen << 16) ^ i;
}

static int setup(void **state, bool file, enum swap_crypt_cipher cipher)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct swap_backend *inner;

	assert_non_null(fx);
	fx->fd = -1;
	fx->cipher = cipher;
	if (file) {
		strcpy(fx->path, "/tmp/uswap-test-crypt-XXXXXX");
		fx->fd = mkstemp(fx->path);
		assert_true(fx->fd >= 0);
		assert_int_equal(ftruncate(fx->fd, (off_t)NR_SLOTS * PS), 0);
		assert_int_equal(swap_backend_file_open(fx->path, 0, &inner), 0);
	} else {
		assert_int_equal(swap_backend_zram_create(NR_SLOTS, SWAP_ZRAM_LZ4, &inner), 0);
	}
	assert_int_equal(swap_backend_fault_create(inner, &fx->fault), 0);
	if (cipher == SWAP_CRYPT_AES256GCM && sodium_init() >= 0 &&
	    !crypto_aead_aes256gcm_is_available()) {
		assert_int_equal(swap_backend_crypt_create(fx->fault, cipher, &fx->be), -EOPNOTSUPP);
		fx->cipher = SWAP_CRYPT_XCHACHA20;	/* said, and the rest still runs */
	}
	assert_int_equal(swap_backend_crypt_create(fx->fault, fx->cipher, &fx->be), 0);
	*state = fx;
	return 0;
}

static int setup_file_x(void **s) { return setup(s, true, SWAP_CRYPT_XCHACHA20); }
static int setup_file_a(void **s) { return setup(s, true, SWAP_CRYPT_AES256GCM); }
static int setup_zram_x(void **s) { return setup(s, false, SWAP_CRYPT_XCHACHA20); }
static int setup_zram_a(void **s) { return setup(s, false, SWAP_CRYPT_AES256GCM); }

static int teardown(void **state)
{
	struct fixture *fx = *state;

	swap_backend_destroy(fx->be);
	if (fx->fd >= 0) {
		close(fx->fd);
		unlink(fx->path);
	}
	free(fx);
	return 0;
}

/* Write slots [1, n) with generation @gen, half through one batch of
 * asynchronous requests, half through rw_sync. */
static void write_all(struct swap_backend *be, unsigned int n, uint64_t gen)
{
	static struct swap_io_req reqs[NR_SLOTS];
	char *buf = aligned_alloc(PS, (size_t)n * PS);
	unsigned int i, k = 0;

	assert_non_null(buf);
	for (i = 1; i < n; i++)
		fill(buf + (size_t)i * PS, i, gen);
	/* slots 1..n/2 as two-page runs where they fit, submitted at once */
	for (i = 1; i < n / 2; i += 2, k++) {
		memset(&reqs[k], 0, sizeof(reqs[k]));
		reqs[k].op = SWAP_IO_WRITE;
		reqs[k].offset = i;
		reqs[k].nr = i + 1 < n / 2 ? 2 : 1;
		reqs[k].buf = buf + (size_t)i * PS;
	}
	assert_int_equal(swap_backend_rw_sync(be, reqs, k), 0);
	for (i = 0; i < k; i++)
		assert_int_equal(reqs[i].result, 0);
	for (i = n / 2; i < n; i++)
		assert_int_equal(swap_backend_write(be, i, 1, buf + (size_t)i * PS), 0);
	free(buf);
}

static void expect_page(struct swap_backend *be, uint64_t slot, uint64_t gen)
{
	char *got = aligned_alloc(PS, PS), *want = malloc(PS);

	assert_non_null(got);
	assert_non_null(want);
	fill(want, slot, gen);
	assert_int_equal(swap_backend_read(be, slot, 1, got), 0);
	assert_memory_equal(got, want, PS);
	free(got);
	free(want);
}

static void expect_eio(struct swap_backend *be, uint64_t slot)
{
	char *got = aligned_alloc(PS, PS), *zero = calloc(1, PS);

	assert_non_null(got);
	assert_non_null(zero);
	memset(got, 0xa5, PS);
	assert_int_equal(swap_backend_read(be, slot, 1, got), -EIO);
	assert_memory_equal(got, zero, PS);
	free(got);
	free(zero);
}

static void roundtrip_and_secrecy(void **state)
{
	struct fixture *fx = *state;
	struct swap_crypt_stats cs;
	char *page = malloc(PS), *want = malloc(PS);

	assert_non_null(page);
	assert_non_null(want);
	write_all(fx->be, NR_SLOTS, 1);
	for (unsigned int i = 1; i < NR_SLOTS; i++)
		expect_page(fx->be, i, 1);
	/* a two-page read through the asynchronous path */
	{
		char *two = aligned_alloc(PS, 2 * PS);

		assert_non_null(two);
		assert_int_equal(swap_backend_read(fx->be, 10, 2, two), 0);
		fill(want, 11, 1);
		assert_memory_equal(two + PS, want, PS);
		free(two);
	}
	if (fx->fd >= 0) {
		/* no 16-byte run of any page's plaintext is on the file */
		for (unsigned int i = 1; i < NR_SLOTS; i++) {
			assert_int_equal(pread(fx->fd, page, PS, (off_t)i * PS), (ssize_t)PS);
			fill(want, i, 1);
			for (size_t o = 0; o + 16 <= PS; o += 16)
				assert_null(memmem(page, PS, want + o, 16));
		}
	}
	assert_int_equal(swap_backend_crypt_stats(fx->be, &cs), 0);
	assert_int_equal(cs.cipher, fx->cipher);
	assert_int_equal(cs.pages_sealed, NR_SLOTS - 1);
	assert_int_equal(cs.auth_failures, 0);
	assert_int_equal(cs.meta_bytes, (uint64_t)NR_SLOTS * SWAP_CRYPT_META_PER_SLOT);
	free(page);
	free(want);
}

/* Each byte position class of a page, changed on the file: that page alone fails. */
static void tamper_fails_that_page(void **state)
{
	struct fixture *fx = *state;
	const off_t at[] = { 0, 1, 777, PS / 2, PS - 1 };
	struct swap_crypt_stats cs;

	if (fx->fd < 0)
		return;	/* tampering needs the bytes on a file */
	write_all(fx->be, NR_SLOTS, 2);
	for (unsigned int k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
		uint64_t slot = 5 + 7 * k;
		unsigned char c;

		assert_int_equal(pread(fx->fd, &c, 1, (off_t)slot * PS + at[k]), 1);
		c ^= 0x01;
		assert_int_equal(pwrite(fx->fd, &c, 1, (off_t)slot * PS + at[k]), 1);
		expect_eio(fx->be, slot);
		expect_page(fx->be, slot - 1, 2);
		expect_page(fx->be, slot + 1, 2);
		/* rewritten, it reads again */
		{
			char *p = aligned_alloc(PS, PS);

			assert_non_null(p);
			fill(p, slot, 3);
			assert_int_equal(swap_backend_write(fx->be, slot, 1, p), 0);
			free(p);
			expect_page(fx->be, slot, 3);
		}
	}
	assert_int_equal(swap_backend_crypt_stats(fx->be, &cs), 0);
	assert_int_equal(cs.auth_failures, 5);
}

/* A page copied to another slot (the slot is the associated data), and an
 * old page written back over a newer one (the nonce moved on), both fail. */
static void moved_and_replayed_pages_fail(void **state)
{
	struct fixture *fx = *state;
	char *c = malloc(PS);

	assert_non_null(c);
	if (fx->fd < 0) {
		free(c);
		return;
	}
	write_all(fx->be, NR_SLOTS, 4);
	assert_int_equal(pread(fx->fd, c, PS, 20 * PS), (ssize_t)PS);
	assert_int_equal(pwrite(fx->fd, c, PS, 21 * PS), (ssize_t)PS);
	expect_eio(fx->be, 21);
	expect_page(fx->be, 20, 4);
	/* replay: slot 30's ciphertext of generation 4, after generation 5 */
	assert_int_equal(pread(fx->fd, c, PS, 30 * PS), (ssize_t)PS);
	write_all(fx->be, NR_SLOTS, 5);
	assert_int_equal(pwrite(fx->fd, c, PS, 30 * PS), (ssize_t)PS);
	expect_eio(fx->be, 30);
	expect_page(fx->be, 31, 5);
	free(c);
}

/* Never written, discarded, freed: -EIO; the header slot passes through. */
static void unwritten_discarded_freed_and_header(void **state)
{
	struct fixture *fx = *state;
	char *p = aligned_alloc(PS, PS), *h = aligned_alloc(PS, PS);

	assert_non_null(p);
	assert_non_null(h);
	expect_eio(fx->be, 3);
	write_all(fx->be, NR_SLOTS, 6);
	assert_int_equal(swap_backend_discard(fx->be, 8, 4), 0);
	for (unsigned int i = 8; i < 12; i++)
		expect_eio(fx->be, i);
	expect_page(fx->be, 12, 6);
	swap_backend_slot_free_notify(fx->be, 13);
	expect_eio(fx->be, 13);
	memset(h, 0x11, PS);
	memcpy(h + PS - 10, "SWAPSPACE2", 10);
	assert_int_equal(swap_backend_write(fx->be, 0, 1, h), 0);
	if (fx->fd >= 0) {
		assert_int_equal(pread(fx->fd, p, PS, 0), (ssize_t)PS);
		assert_memory_equal(p, h, PS);
	}
	assert_int_equal(swap_backend_read(fx->be, 0, 1, p), 0);
	assert_memory_equal(p, h, PS);
	free(p);
	free(h);
}

/* A write that fails on the device leaves the slot's earlier page readable. */
static void failed_write_keeps_old_page(void **state)
{
	struct fixture *fx = *state;
	char *p = aligned_alloc(PS, PS);

	assert_non_null(p);
	write_all(fx->be, NR_SLOTS, 7);
	assert_int_equal(swap_backend_fault_fail_nth(fx->fault, SWAP_FAULT_WRITE, 1, -EIO), 0);
	fill(p, 40, 8);
	assert_int_equal(swap_backend_write(fx->be, 40, 1, p), -EIO);
	expect_page(fx->be, 40, 7);
	assert_int_equal(swap_backend_write(fx->be, 40, 1, p), 0);
	expect_page(fx->be, 40, 8);
	free(p);
}

static void count_end_io(struct swap_io_req *r)
{
	(*(unsigned int *)r->private)++;
}

/* The asynchronous path the swap layer takes: submit, end_io, reap. */
static void async_submit_and_reap(void **state)
{
	struct fixture *fx = *state;
	struct swap_io_req reqs[NR_SLOTS];
	char *buf = aligned_alloc(PS, (size_t)NR_SLOTS * PS), *want = malloc(PS);
	unsigned int done = 0, k = 0, i;

	assert_non_null(buf);
	assert_non_null(want);
	for (int pass = 0; pass < 2; pass++) {
		done = k = 0;
		memset(reqs, 0, sizeof(reqs));
		for (i = 1; i < NR_SLOTS; i += 3, k++) {
			reqs[k].op = pass ? SWAP_IO_READ : SWAP_IO_WRITE;
			reqs[k].offset = i;
			reqs[k].nr = i + 3 <= NR_SLOTS ? 3 : NR_SLOTS - i;
			reqs[k].buf = buf + (size_t)i * PS;
			reqs[k].end_io = count_end_io;
			reqs[k].private = &done;
			for (unsigned int j = 0; !pass && j < reqs[k].nr; j++)
				fill(buf + (size_t)(i + j) * PS, i + j, 9);
		}
		if (pass)
			memset(buf, 0, (size_t)NR_SLOTS * PS);
		assert_int_equal(swap_backend_submit(fx->be, reqs, k), 0);
		while (done < k)
			assert_true(swap_backend_reap(fx->be, 1) >= 0);
		for (i = 0; i < k; i++)
			assert_int_equal(reqs[i].result, 0);
	}
	for (i = 1; i < NR_SLOTS; i++) {
		fill(want, i, 9);
		assert_memory_equal(buf + (size_t)i * PS, want, PS);
	}
	free(buf);
	free(want);
}

/* A discarded cluster (its metadata spans whole pages): its slots read as
 * -EIO, its neighbours still open, and it takes writes again. */
static void discard_whole_metadata_pages(void **state)
{
	struct swap_backend *z, *be;
	char *p = aligned_alloc(PS, PS);
	uint64_t s;

	(void)state;
	assert_non_null(p);
	assert_int_equal(swap_backend_zram_create(4096, SWAP_ZRAM_LZ4, &z), 0);
	assert_int_equal(swap_backend_crypt_create(z, SWAP_CRYPT_XCHACHA20, &be), 0);
	for (s = 1; s < 4096; s++) {
		fill(p, s, 1);
		assert_int_equal(swap_backend_write(be, s, 1, p), 0);
	}
	assert_int_equal(swap_backend_discard(be, 512, 512), 0);
	for (s = 500; s < 1100; s++) {
		if (s >= 512 && s < 1024)
			expect_eio(be, s);
		else
			expect_page(be, s, 1);
	}
	/* a run past the in-place zeroing (its pages go back to the kernel) */
	assert_int_equal(swap_backend_discard(be, 7, 4000), 0);
	for (s = 1; s < 4096; s++) {
		if (s >= 7 && s < 4007)
			expect_eio(be, s);
		else
			expect_page(be, s, 1);
	}
	fill(p, 700, 2);
	assert_int_equal(swap_backend_write(be, 700, 1, p), 0);
	expect_page(be, 700, 2);
	swap_backend_destroy(be);
	free(p);
}

#define BOTH(t) \
	cmocka_unit_test_setup_teardown(t, setup_file_x, teardown), \
	cmocka_unit_test_setup_teardown(t, setup_file_a, teardown), \
	cmocka_unit_test_setup_teardown(t, setup_zram_x, teardown), \
	cmocka_unit_test_setup_teardown(t, setup_zram_a, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(roundtrip_and_secrecy),
		BOTH(async_submit_and_reap),
		BOTH(tamper_fails_that_page),
		BOTH(moved_and_replayed_pages_fail),
		BOTH(unwritten_discarded_freed_and_header),
		BOTH(failed_write_keeps_old_page),
		cmocka_unit_test(discard_whole_metadata_pages),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
