/* SPDX-License-Identifier: MIT */
/*
 * Device specs: the parser accepts what uswap(1) lists and rejects the
 * rest with a message that names the problem; open_spec opens the backend.
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

static void accept_zram(const char *spec, uint64_t size, enum swap_zram_algo algo)
{
	struct swap_backend_spec s;
	char err[256] = "junk";

	assert_int_equal(swap_backend_spec_parse(spec, &s, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(s.kind, SWAP_BACKEND_ZRAM);
	assert_int_equal(s.size, size);
	assert_int_equal(s.nr_slots, size / 4096);
	assert_int_equal(s.algo, algo);
}

static void reject(const char *spec, int want, const char *msg_part)
{
	struct swap_backend_spec s;
	char err[256] = "";

	assert_int_equal(swap_backend_spec_parse(spec, &s, err, sizeof(err)), want);
	if (!strstr(err, msg_part))
		fail_msg("spec '%s': message '%s' lacks '%s'", spec ? spec : "(null)",
			 err, msg_part);
}

static void test_zram_accepts(void **state)
{
	(void)state;
	accept_zram("zram:1G", 1ULL << 30, SWAP_ZRAM_LZ4);
	accept_zram("zram:1g:lz4", 1ULL << 30, SWAP_ZRAM_LZ4);
	accept_zram("zram:512M:zstd", 512ULL << 20, SWAP_ZRAM_ZSTD);
	accept_zram("zram:40K", 40960, SWAP_ZRAM_LZ4);
	accept_zram("zram:40960", 40960, SWAP_ZRAM_LZ4);
	accept_zram("zram:2T", 2ULL << 40, SWAP_ZRAM_LZ4);
	accept_zram("zram:1048576:zstd", 1ULL << 20, SWAP_ZRAM_ZSTD);
	accept_zram("zram:1GB", 1ULL << 30, SWAP_ZRAM_LZ4);
	accept_zram("zram:64MiB:zstd", 64ULL << 20, SWAP_ZRAM_ZSTD);
}

static void test_zram_rejects(void **state)
{
	(void)state;
	reject("zram:", -EINVAL, "bad size");
	reject("zram:abc", -EINVAL, "bad size 'abc'");
	reject("zram:abc", -EINVAL, "");
	reject("zram:1X", -EINVAL, "bad size '1X'");
	reject("zram:1Gb", -EINVAL, "bad size");
	reject("zram:0x100000", -EINVAL, "bad size");
	reject("zram:+1G", -EINVAL, "bad size");
	reject("zram:-1G", -EINVAL, "bad size");
	reject("zram: 1G", -EINVAL, "bad size");
	reject("zram:36K", -EINVAL, "below the minimum of 10 pages");
	reject("zram:0", -EINVAL, "below the minimum");
	reject("zram:40961", -EINVAL, "not a multiple of 4096");
	reject("zram:1G:lzo", -EINVAL, "unknown algorithm 'lzo'");
	reject("zram:1G:", -EINVAL, "unknown algorithm ''");
	reject("zram:1G:lz4:x", -EINVAL, "unknown algorithm 'lz4:x'");
	reject("zram:99999999999999999999", -EINVAL, "too large");
	reject("zram:16777216T", -EINVAL, "too large");
}

static void test_file_and_others(void **state)
{
	struct swap_backend_spec s;
	char err[256];
	char *longpath;

	(void)state;
	assert_int_equal(swap_backend_spec_parse("file:/var/swap", &s, err,
						 sizeof(err)), 0);
	assert_int_equal(s.kind, SWAP_BACKEND_FILE);
	assert_string_equal(s.path, "/var/swap");
	assert_int_equal(swap_backend_spec_parse("file:rel:with:colons", &s, err,
						 sizeof(err)), 0);
	assert_string_equal(s.path, "rel:with:colons");
	reject("file:", -EINVAL, "empty path");
	assert_int_equal(swap_backend_spec_parse("nbd://host:10809/export", &s, err,
						 sizeof(err)), 0);
	assert_int_equal(s.kind, SWAP_BACKEND_NBD);
	assert_string_equal(s.path, "nbd://host:10809/export");
	assert_int_equal(swap_backend_spec_parse("nbd+unix:///e?socket=/tmp/s", &s, err,
						 sizeof(err)), 0);
	assert_int_equal(s.kind, SWAP_BACKEND_NBD);
	reject("nbd://", -EINVAL, "missing host");
	reject("nbd://:10809/e", -EINVAL, "missing host");
	reject("nbd://h:x1/e", -EINVAL, "is not a number");
	reject("nbd://h:/e", -EINVAL, "empty port");
	reject("nbd://h/e x", -EINVAL, "space");
	reject("nbd+unix:///e", -EINVAL, "missing ?socket=PATH");
	reject("nbd+unix://host/e?socket=/s", -EINVAL, "no host allowed");
	reject("nfs://x", -EINVAL, "unknown device spec 'nfs://x'");
	reject("", -EINVAL, "want zram:SIZE");
	reject("ZRAM:1G", -EINVAL, "unknown device spec");
	reject("fault:read_err=1K:zram:1G", -EINVAL, "decimal N");
	reject("fault:read_err=-1:zram:1G", -EINVAL, "decimal N");
	reject("fault:read_err=0:zram:1G", -EINVAL, "decimal N");
	reject("fault:read_err=18446744073709551616:zram:1G", -EINVAL, "decimal N");
	assert_int_equal(swap_backend_spec_parse("fault:read_err=18446744073709551615:zram:1G",
						 &s, err, sizeof(err)), 0);
	assert_int_equal(s.fault_read_nth, UINT64_MAX);
	assert_int_equal(swap_backend_spec_parse("fault:write_err=7:zram:1G", &s, err,
						 sizeof(err)), 0);
	assert_int_equal(s.fault_write_nth, 7);
	assert_int_equal(s.fault_read_nth, 0);
	reject("fault:write_err=0:zram:1G", -EINVAL, "decimal N");
	reject("fault:write_err:zram:1G", -EINVAL, "write_err=N");
	reject(NULL, -EINVAL, "no device spec");
	longpath = malloc(5000);
	assert_non_null(longpath);
	memcpy(longpath, "file:", 5);
	memset(longpath + 5, 'a', 4994);
	longpath[4999] = '\0';
	reject(longpath, -ENAMETOOLONG, "longer than");
	memcpy(longpath, "nbd://h/", 8);
	reject(longpath, -ENAMETOOLONG, "longer than");
	memcpy(longpath, "fault:read_err=1:nbd://h/", 25);
	reject(longpath, -ENAMETOOLONG, "longer than");
	free(longpath);
	/* NULL/short err buffers are fine */
	assert_int_equal(swap_backend_spec_parse("bogus", &s, NULL, 0), -EINVAL);
	assert_int_equal(swap_backend_spec_parse("bogus", &s, err, 4), -EINVAL);
	assert_int_equal(strlen(err), 3);
}

static void test_open_spec(void **state)
{
	struct swap_backend *be;
	char err[256], path[64], spec[80];
	char page[4096], out[4096];
	int fd;

	(void)state;
	assert_int_equal(swap_backend_open_spec("zram:64M:zstd", &be, err,
						sizeof(err)), 0);
	assert_string_equal(swap_backend_describe(be), "zram:64M zstd");
	assert_int_equal(be->nr_slots, 16384);
	memset(page, 'x', sizeof(page));
	assert_int_equal(swap_backend_write(be, 0, 1, page), 0);
	assert_int_equal(swap_backend_read(be, 0, 1, out), 0);
	assert_memory_equal(page, out, sizeof(page));
	swap_backend_destroy(be);

	strcpy(path, "/tmp/uswap-test-spec-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 16 * 4096), 0);
	close(fd);
	snprintf(spec, sizeof(spec), "file:%s", path);
	assert_int_equal(swap_backend_open_spec(spec, &be, err, sizeof(err)), 0);
	assert_int_equal(be->nr_slots, 16);
	assert_non_null(strstr(swap_backend_describe(be), path));
	swap_backend_destroy(be);
	unlink(path);

	assert_int_equal(swap_backend_open_spec("file:/nonexistent/x", &be, err,
						sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "cannot open '/nonexistent/x'"));
	/* a Unix socket that does not exist: the connection's own error */
	assert_true(swap_backend_open_spec("nbd+unix:///e?socket=/nonexistent/s", &be, err,
					   sizeof(err)) < 0);
	assert_non_null(strstr(err, "cannot connect"));
	assert_int_equal(swap_backend_open_spec("zram:1Q", &be, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "bad size"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zram_accepts),
		cmocka_unit_test(test_zram_rejects),
		cmocka_unit_test(test_file_and_others),
		cmocka_unit_test(test_open_spec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
