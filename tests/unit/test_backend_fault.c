/* SPDX-License-Identifier: MIT */
/*
 * The fault wrapper fails exactly the chosen request and only it, over a
 * synchronous inner backend (zram) and an asynchronous one (io_uring
 * file); a sweep over N checks that a failed write leaves the old data and
 * every other request lands.
 */
#include <errno.h>
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

#define PS		SWAP_BACKEND_PAGE_SIZE
#define NR_SLOTS	64U
#define NR_REQ		8U

struct fixture {
	char path[64];
	struct swap_backend *be;
};

static int setup_zram(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct swap_backend *inner;
	int ret;

	assert_non_null(fx);
	assert_int_equal(swap_backend_zram_create(NR_SLOTS, SWAP_ZRAM_LZ4, &inner), 0);
	ret = swap_backend_fault_create(inner, &fx->be);
	assert_int_equal(ret, 0);
	*state = fx;
	return 0;
}

static int setup_file(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct swap_backend *inner;
	int fd;

	assert_non_null(fx);
	strcpy(fx->path, "/tmp/uswap-test-fault-XXXXXX");
	fd = mkstemp(fx->path);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)NR_SLOTS * PS), 0);
	close(fd);
	assert_int_equal(swap_backend_file_open(fx->path, 0, &inner), 0);
	assert_int_equal(swap_backend_fault_create(inner, &fx->be), 0);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	swap_backend_destroy(fx->be);
	if (fx->path[0])
		unlink(fx->path);
	free(fx);
	return 0;
}

/* Page i of generation g: every byte (g * 16 + i). */
static void fill(char *buf, unsigned int g)
{
	unsigned int i;

	for (i = 0; i < NR_REQ; i++)
		memset(buf + (size_t)i * PS, (int)(g * 16 + i), PS);
}

static void make_batch(struct swap_io_req *r, int op, char *buf)
{
	unsigned int i;

	for (i = 0; i < NR_REQ; i++)
		r[i] = (struct swap_io_req){ .op = op, .offset = 2 * i + 1, .nr = 1,
					     .buf = buf + (size_t)i * PS };
}

/* For every N: the N-th write of a batch fails alone and keeps old data. */
static void test_nth_write_sweep(void **state)
{
	struct fixture *fx = *state;
	char *buf = malloc(NR_REQ * PS), *out = malloc(NR_REQ * PS);
	struct swap_io_req r[NR_REQ];
	unsigned int n, i;

	assert_non_null(buf);
	assert_non_null(out);
	fill(buf, 0);
	make_batch(r, SWAP_IO_WRITE, buf);
	assert_int_equal(swap_backend_rw_sync(fx->be, r, NR_REQ), 0);
	for (n = 1; n <= NR_REQ; n++) {
		fill(buf, n);
		make_batch(r, SWAP_IO_WRITE, buf);
		assert_int_equal(swap_backend_fault_fail_nth(fx->be, SWAP_FAULT_WRITE,
							     n, -EIO), 0);
		assert_int_equal(swap_backend_rw_sync(fx->be, r, NR_REQ), -EIO);
		for (i = 0; i < NR_REQ; i++)
			assert_int_equal(r[i].result, i + 1 == n ? -EIO : 0);
		assert_int_equal(swap_backend_fault_injected(fx->be), n);

		make_batch(r, SWAP_IO_READ, out);
		assert_int_equal(swap_backend_rw_sync(fx->be, r, NR_REQ), 0);
		for (i = 0; i < NR_REQ; i++) {
			/* the failed one still holds what the last good write left */
			unsigned int g = i + 1 == n ? (n == 1 ? 0 : n - 1) : n;

			assert_int_equal((unsigned char)out[(size_t)i * PS],
					 g * 16 + i);
			assert_int_equal((unsigned char)out[(size_t)i * PS + PS - 1],
					 g * 16 + i);
		}
		/* one-shot: the next batch goes through */
		fill(buf, n);
		make_batch(r, SWAP_IO_WRITE, buf);
		assert_int_equal(swap_backend_rw_sync(fx->be, r, NR_REQ), 0);
	}
	free(buf);
	free(out);
}

/* Reads counted separately from writes; a chosen errno. */
static void test_nth_read(void **state)
{
	struct fixture *fx = *state;
	char buf[PS];
	struct swap_backend_stats st;

	memset(buf, 7, PS);
	assert_int_equal(swap_backend_fault_fail_nth(fx->be, SWAP_FAULT_READ, 2,
						     -ENODATA), 0);
	assert_int_equal(swap_backend_write(fx->be, 5, 1, buf), 0);	/* not counted */
	assert_int_equal(swap_backend_read(fx->be, 5, 1, buf), 0);
	assert_int_equal(swap_backend_read(fx->be, 5, 1, buf), -ENODATA);
	assert_int_equal(swap_backend_read(fx->be, 5, 1, buf), 0);
	assert_int_equal((unsigned char)buf[0], 7);
	swap_backend_get_stats(fx->be, &st);
	assert_int_equal(st.errors, 1);		/* the wrapper counts injections */
	assert_int_equal(st.reads, 1);
}

/* Every request covering a chosen slot fails, until cleared. */
static void test_offsets(void **state)
{
	struct fixture *fx = *state;
	char buf[4 * PS];
	unsigned int i;

	memset(buf, 1, sizeof(buf));
	assert_int_equal(swap_backend_fault_fail_offset(fx->be, SWAP_FAULT_RW, 10,
							-EIO), 0);
	assert_int_equal(swap_backend_fault_fail_offset(fx->be, SWAP_FAULT_WRITE, 20,
							-ENOSPC), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(swap_backend_write(fx->be, 10, 1, buf), -EIO);
		assert_int_equal(swap_backend_read(fx->be, 8, 4, buf), -EIO);	/* covers 10 */
		assert_int_equal(swap_backend_write(fx->be, 11, 4, buf), 0);
		assert_int_equal(swap_backend_write(fx->be, 17, 4, buf), -ENOSPC);
		assert_int_equal(swap_backend_read(fx->be, 20, 1, buf), 0);
	}
	assert_int_equal(swap_backend_fault_injected(fx->be), 9);
	swap_backend_fault_clear(fx->be);
	assert_int_equal(swap_backend_write(fx->be, 10, 1, buf), 0);
	assert_int_equal(swap_backend_write(fx->be, 17, 4, buf), 0);
	assert_int_equal(swap_backend_fault_injected(fx->be), 9);
}

static void test_bad_args(void **state)
{
	struct fixture *fx = *state;
	struct swap_backend *z, *w;
	unsigned int i;

	assert_int_equal(swap_backend_fault_fail_nth(fx->be, 0, 1, -EIO), -EINVAL);
	assert_int_equal(swap_backend_fault_fail_nth(fx->be, SWAP_FAULT_RW, 0, -EIO),
			 -EINVAL);
	assert_int_equal(swap_backend_fault_fail_nth(fx->be, SWAP_FAULT_RW, 1, EIO),
			 -EINVAL);
	assert_int_equal(swap_backend_fault_fail_offset(fx->be, SWAP_FAULT_RW,
							NR_SLOTS, -EIO), -EINVAL);
	for (i = 0; i < SWAP_FAULT_MAX_OFFSETS; i++)
		assert_int_equal(swap_backend_fault_fail_offset(fx->be, SWAP_FAULT_READ,
								i, -EIO), 0);
	assert_int_equal(swap_backend_fault_fail_offset(fx->be, SWAP_FAULT_READ, 0,
							-EIO), -ENOSPC);
	assert_int_equal(swap_backend_fault_create(NULL, &w), -EINVAL);
	/* not a wrapper */
	assert_int_equal(swap_backend_zram_create(16, SWAP_ZRAM_LZ4, &z), 0);
	assert_int_equal(swap_backend_fault_fail_nth(z, SWAP_FAULT_RW, 1, -EIO),
			 -EINVAL);
	assert_int_equal(swap_backend_fault_injected(z), 0);
	swap_backend_destroy(z);
	assert_non_null(strstr(swap_backend_describe(fx->be), "fault("));
}

#define BOTH(t) \
	cmocka_unit_test_setup_teardown(t, setup_zram, teardown), \
	cmocka_unit_test_setup_teardown(t, setup_file, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_nth_write_sweep),
		BOTH(test_nth_read),
		BOTH(test_offsets),
		BOTH(test_bad_args),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
