/* SPDX-License-Identifier: MIT */
/*
 * The swap header: what we build parses back to the same fields, each of
 * swapon's checks refuses what it should with a message that names the
 * value, and the UUID helpers round-trip.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "swap/swap_header.h"
#include "util/uuid.h"

#define PAGE USWAP_SWAP_HEADER_SIZE

static const uint8_t test_uuid[16] = {
	0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0x4d, 0xef,
	0x81, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
};

static uint32_t get32(const uint8_t *p, size_t off)
{
	uint32_t v;

	memcpy(&v, p + off, 4);
	return v;
}

static void put32(uint8_t *p, size_t off, uint32_t v)
{
	memcpy(p + off, &v, 4);
}

/* Parse @page expecting -EINVAL and a message containing @want. */
static void expect_parse_error(const uint8_t *page, const char *want)
{
	struct uswap_swap_header h;
	char err[256];

	assert_int_equal(uswap_swap_header_parse(page, &h, err, sizeof(err)), -EINVAL);
	if (!strstr(err, want))
		fail_msg("error \"%s\" does not contain \"%s\"", err, want);
}

static void expect_validate_error(const struct uswap_swap_header *h, uint64_t file_pages,
				  const char *want)
{
	uint64_t usable = 12345, max = 12345;
	char err[256];

	assert_int_equal(uswap_swap_header_validate(h, file_pages, &usable, &max,
						    err, sizeof(err)), -EINVAL);
	if (!strstr(err, want))
		fail_msg("error \"%s\" does not contain \"%s\"", err, want);
	assert_int_equal(usable, 12345);	/* outputs untouched on error */
	assert_int_equal(max, 12345);
}

static void header_with_bad(struct uswap_swap_header *h, uint32_t last_page,
			    const uint32_t *bad, uint32_t nr)
{
	memset(h, 0, sizeof(*h));
	h->version = 1;
	h->last_page = last_page;
	h->nr_badpages = nr;
	if (nr)
		memcpy(h->badpages, bad, nr * sizeof(*bad));
}

static void test_build_layout(void **state)
{
	static const uint32_t bad[] = { 5, 9 };
	uint8_t page[PAGE];
	size_t i;

	(void)state;
	memset(page, 0xa5, sizeof(page));
	assert_int_equal(uswap_swap_header_build(page, 4095, bad, 2, test_uuid, "mylabel"), 0);
	for (i = 0; i < 1024; i++)
		assert_int_equal(page[i], 0);
	assert_int_equal(get32(page, 1024), 1);
	assert_int_equal(get32(page, 1028), 4095);
	assert_int_equal(get32(page, 1032), 2);
	assert_memory_equal(page + 1036, test_uuid, 16);
	assert_memory_equal(page + 1052, "mylabel\0\0\0\0\0\0\0\0\0", 16);
	for (i = 1068; i < 1536; i++)
		assert_int_equal(page[i], 0);
	assert_int_equal(get32(page, 1536), 5);
	assert_int_equal(get32(page, 1540), 9);
	for (i = 1544; i < PAGE - 10; i++)
		assert_int_equal(page[i], 0);
	assert_memory_equal(page + PAGE - 10, "SWAPSPACE2", 10);
}

static void test_round_trip(void **state)
{
	static const uint32_t bad[] = { 5, 9, 4095 };
	struct uswap_swap_header h;
	uint64_t usable, max;
	uint8_t page[PAGE];
	char err[256];

	(void)state;
	assert_int_equal(uswap_swap_header_build(page, 4095, bad, 3, test_uuid, "swap-1"), 0);
	assert_int_equal(uswap_swap_header_parse(page, &h, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(h.version, 1);
	assert_int_equal(h.last_page, 4095);
	assert_int_equal(h.nr_badpages, 3);
	assert_memory_equal(h.badpages, bad, sizeof(bad));
	assert_int_equal(h.badpages[3], 0);
	assert_memory_equal(h.uuid, test_uuid, 16);
	assert_string_equal(h.label, "swap-1");
	assert_false(h.byteswapped);

	assert_int_equal(uswap_swap_header_validate(&h, 4096, &usable, &max, err, sizeof(err)), 0);
	assert_int_equal(max, 4096);
	assert_int_equal(usable, 4096 - 1 - 3);
	/* A file longer than the header says is fine: the tail is unused. */
	assert_int_equal(uswap_swap_header_validate(&h, 9999, &usable, &max, NULL, 0), 0);
	assert_int_equal(max, 4096);
}

static void test_byteswapped(void **state)
{
	static const uint32_t bad[] = { 7, 100 };
	struct uswap_swap_header h;
	uint8_t page[PAGE];
	char err[256];

	(void)state;
	assert_int_equal(uswap_swap_header_build(page, 511, bad, 2, test_uuid, "x"), 0);
	assert_int_equal(uswap_swap_header_swab(page), 0);
	assert_int_equal(get32(page, 1024), 0x01000000);
	assert_int_equal(get32(page, 1536), __builtin_bswap32(7));
	assert_int_equal(uswap_swap_header_parse(page, &h, err, sizeof(err)), 0);
	assert_true(h.byteswapped);
	assert_int_equal(h.version, 1);
	assert_int_equal(h.last_page, 511);
	assert_int_equal(h.nr_badpages, 2);
	assert_int_equal(h.badpages[0], 7);
	assert_int_equal(h.badpages[1], 100);
	assert_string_equal(h.label, "x");

	/* And back. */
	assert_int_equal(uswap_swap_header_swab(page), 0);
	assert_int_equal(uswap_swap_header_parse(page, &h, err, sizeof(err)), 0);
	assert_false(h.byteswapped);

	/* A swapped bad count is bounded before the list is touched. */
	assert_int_equal(uswap_swap_header_swab(page), 0);
	put32(page, 1032, __builtin_bswap32(638));
	expect_parse_error(page, "nr_badpages 638");
	assert_int_equal(uswap_swap_header_swab(page), -EINVAL);
}

static void test_no_magic(void **state)
{
	uint8_t page[PAGE];

	(void)state;
	memset(page, 0, sizeof(page));
	expect_parse_error(page, "no swap signature (SWAPSPACE2) found");
	expect_parse_error(page, "\\x00");
	assert_int_equal(uswap_swap_header_build(page, 99, NULL, 0, NULL, NULL), 0);
	memcpy(page + PAGE - 10, "SWAPSPACE1", 10);
	expect_parse_error(page, "\"SWAPSPACE1\"");
}

static void test_v0_magic(void **state)
{
	uint8_t page[PAGE];

	(void)state;
	assert_int_equal(uswap_swap_header_build(page, 99, NULL, 0, NULL, NULL), 0);
	memcpy(page + PAGE - 10, "SWAP-SPACE", 10);
	expect_parse_error(page, "old swap format SWAP-SPACE (v0) is not supported");
}

static void test_version_2(void **state)
{
	uint8_t page[PAGE];

	(void)state;
	assert_int_equal(uswap_swap_header_build(page, 99, NULL, 0, NULL, NULL), 0);
	put32(page, 1024, 2);
	expect_parse_error(page, "version 2");
	put32(page, 1024, 0);
	expect_parse_error(page, "version 0");
}

static void test_last_page_0(void **state)
{
	struct uswap_swap_header h;
	uint8_t page[PAGE];

	(void)state;
	assert_int_equal(uswap_swap_header_build(page, 0, NULL, 0, NULL, NULL), -EINVAL);
	assert_int_equal(uswap_swap_header_build(page, 99, NULL, 0, NULL, NULL), 0);
	put32(page, 1028, 0);
	expect_parse_error(page, "empty swap area: last_page is 0");
	header_with_bad(&h, 0, NULL, 0);
	expect_validate_error(&h, 100, "empty swap area");
}

static void test_too_many_bad(void **state)
{
	static uint32_t bad[MAX_SWAP_BADPAGES + 1];
	struct uswap_swap_header h;
	uint8_t page[PAGE];
	uint64_t usable;
	uint32_t i;

	(void)state;
	for (i = 0; i < MAX_SWAP_BADPAGES + 1; i++)
		bad[i] = i + 1;
	assert_int_equal(uswap_swap_header_build(page, 9999, bad, 638, NULL, NULL), -EINVAL);
	assert_int_equal(uswap_swap_header_build(page, 9999, bad, 637, NULL, NULL), 0);
	assert_int_equal(uswap_swap_header_parse(page, &h, NULL, 0), 0);
	assert_int_equal(h.nr_badpages, 637);
	assert_int_equal(h.badpages[636], 637);
	assert_int_equal(uswap_swap_header_validate(&h, 10000, &usable, NULL, NULL, 0), 0);
	assert_int_equal(usable, 10000 - 1 - 637);
	put32(page, 1032, 638);
	expect_parse_error(page, "nr_badpages 638");
	h.nr_badpages = 638;
	expect_validate_error(&h, 10000, "638");
}

static void test_bad_page_0(void **state)
{
	static const uint32_t bad[] = { 3, 0 };
	struct uswap_swap_header h;

	(void)state;
	header_with_bad(&h, 99, bad, 2);
	expect_validate_error(&h, 100, "bad page 0 (entry 1) out of range");
}

static void test_bad_page_past_last(void **state)
{
	static const uint32_t bad[] = { 100 };
	struct uswap_swap_header h;

	(void)state;
	header_with_bad(&h, 99, bad, 1);
	expect_validate_error(&h, 100, "bad page 100 (entry 0) out of range: must be 1..last_page 99");
	/* Even when the file is long enough to hold it. */
	expect_validate_error(&h, 1000, "bad page 100");
}

static void test_bad_page_duplicate(void **state)
{
	static const uint32_t bad[] = { 8, 7, 9, 7 };
	struct uswap_swap_header h;

	(void)state;
	header_with_bad(&h, 99, bad, 4);
	expect_validate_error(&h, 100, "duplicated bad page 7");
}

/*
 * A bad page past the device's slot count is ignored. The count is capped
 * at UINT32_MAX (si->max is an unsigned int), so the only such page is
 * UINT32_MAX itself, in an area whose last_page is UINT32_MAX.
 */
static void test_bad_page_beyond_max_ignored(void **state)
{
	static const uint32_t bad[] = { UINT32_MAX, 3, UINT32_MAX };
	struct uswap_swap_header h;
	uint64_t usable, max;
	char err[256];

	(void)state;
	header_with_bad(&h, UINT32_MAX, bad, 3);
	assert_int_equal(uswap_swap_header_validate(&h, 1ULL << 32, &usable, &max,
						    err, sizeof(err)), 0);
	assert_int_equal(max, UINT32_MAX);
	assert_int_equal(usable, (uint64_t)UINT32_MAX - 1 - 1);
	/* One page short of the header's size is still refused. */
	expect_validate_error(&h, (1ULL << 32) - 1, "needs 4294967296 pages, file has 4294967295");
}

static void test_all_pages_bad(void **state)
{
	static const uint32_t bad[] = { 1, 2, 3 };
	struct uswap_swap_header h;
	uint64_t usable;

	(void)state;
	header_with_bad(&h, 3, bad, 3);
	expect_validate_error(&h, 4, "no usable page left: 4 pages, the header page and 3 bad pages");
	header_with_bad(&h, 3, bad, 2);
	assert_int_equal(uswap_swap_header_validate(&h, 4, &usable, NULL, NULL, 0), 0);
	assert_int_equal(usable, 1);
}

static void test_short_file(void **state)
{
	struct uswap_swap_header h;

	(void)state;
	header_with_bad(&h, 4095, NULL, 0);
	expect_validate_error(&h, 2048,
		"swap area shorter than its header says: header last_page 4095 needs 4096 pages, file has 2048");
	expect_validate_error(&h, 0, "file has 0");
}

static void test_labels(void **state)
{
	struct uswap_swap_header h;
	uint8_t page[PAGE];

	(void)state;
	assert_int_equal(uswap_swap_header_build(page, 99, NULL, 0, NULL, "0123456789abcdef"), -EINVAL);
	assert_int_equal(uswap_swap_header_build(page, 99, NULL, 0, NULL, "0123456789abcde"), 0);
	assert_int_equal(uswap_swap_header_parse(page, &h, NULL, 0), 0);
	assert_string_equal(h.label, "0123456789abcde");
	assert_true(uswap_uuid_is_null(h.uuid));
	/* Another writer may fill all 16 bytes: read them all. */
	memcpy(page + 1052, "0123456789abcdef", 16);
	assert_int_equal(uswap_swap_header_parse(page, &h, NULL, 0), 0);
	assert_string_equal(h.label, "0123456789abcdef");
	assert_int_equal(uswap_swap_header_build(page, 99, NULL, 1, NULL, NULL), -EINVAL);
	assert_int_equal(uswap_swap_header_parse(NULL, &h, NULL, 0), -EINVAL);
}

static void test_small_err_buffer(void **state)
{
	uint8_t page[PAGE];
	struct uswap_swap_header h;
	char err[8];

	(void)state;
	memset(page, 0, sizeof(page));
	memset(err, 'x', sizeof(err));
	assert_int_equal(uswap_swap_header_parse(page, &h, err, sizeof(err)), -EINVAL);
	assert_int_equal(strlen(err), sizeof(err) - 1);
}

static void test_read_file(void **state)
{
	static const uint32_t bad[] = { 4 };
	char path[] = "/tmp/uswap-test-header-XXXXXX";
	struct uswap_swap_header h;
	uint8_t page[PAGE];
	uint64_t pages = 0;
	char err[256];
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(uswap_swap_header_build(page, 15, bad, 1, test_uuid, "f"), 0);
	assert_int_equal(pwrite(fd, page, PAGE, 0), PAGE);
	assert_int_equal(ftruncate(fd, 16 * PAGE + 100), 0);
	assert_int_equal(uswap_swap_header_read_file(path, &h, &pages, err, sizeof(err)), 0);
	assert_int_equal(pages, 16);
	assert_int_equal(h.last_page, 15);
	assert_int_equal(h.badpages[0], 4);
	assert_string_equal(h.label, "f");

	assert_int_equal(ftruncate(fd, 100), 0);
	assert_int_equal(uswap_swap_header_read_file(path, &h, &pages, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "100 bytes"));
	assert_int_equal(pages, 0);

	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(ftruncate(fd, 4 * PAGE), 0);
	assert_int_equal(uswap_swap_header_read_file(path, &h, &pages, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no swap signature"));
	assert_int_equal(pages, 4);
	close(fd);
	unlink(path);

	assert_int_equal(uswap_swap_header_read_file(path, &h, &pages, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "cannot open"));
	assert_int_equal(uswap_swap_header_read_file("/tmp", &h, &pages, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a regular file or block device"));
}

static void test_uuid_helpers(void **state)
{
	static const char text[] = "12345678-9abc-4def-8123-456789abcdef";
	char out[USWAP_UUID_STR_SIZE];
	uint8_t u[16], v[16];
	int i;

	(void)state;
	assert_int_equal(uswap_uuid_parse(text, u), 0);
	assert_memory_equal(u, test_uuid, 16);
	uswap_uuid_format(u, out);
	assert_string_equal(out, text);
	assert_int_equal(uswap_uuid_parse("12345678-9ABC-4DEF-8123-456789ABCDEF", v), 0);
	assert_memory_equal(u, v, 16);

	assert_int_equal(uswap_uuid_parse("12345678-9abc-4def-8123-456789abcde", u), -EINVAL);
	assert_int_equal(uswap_uuid_parse("12345678-9abc-4def-8123-456789abcdef0", u), -EINVAL);
	assert_int_equal(uswap_uuid_parse("12345678+9abc-4def-8123-456789abcdef", u), -EINVAL);
	assert_int_equal(uswap_uuid_parse("1234567g-9abc-4def-8123-456789abcdef", u), -EINVAL);
	assert_int_equal(uswap_uuid_parse("", u), -EINVAL);
	assert_int_equal(uswap_uuid_parse(NULL, u), -EINVAL);
	assert_memory_equal(u, test_uuid, 16);	/* untouched on error */

	for (i = 0; i < 32; i++) {
		assert_int_equal(uswap_uuid_generate(u), 0);
		assert_int_equal(u[6] >> 4, 4);
		assert_int_equal(u[8] >> 6, 2);
		assert_false(uswap_uuid_is_null(u));
		uswap_uuid_format(u, out);
		assert_int_equal(uswap_uuid_parse(out, v), 0);
		assert_memory_equal(u, v, 16);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_layout),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_byteswapped),
		cmocka_unit_test(test_no_magic),
		cmocka_unit_test(test_v0_magic),
		cmocka_unit_test(test_version_2),
		cmocka_unit_test(test_last_page_0),
		cmocka_unit_test(test_too_many_bad),
		cmocka_unit_test(test_bad_page_0),
		cmocka_unit_test(test_bad_page_past_last),
		cmocka_unit_test(test_bad_page_duplicate),
		cmocka_unit_test(test_bad_page_beyond_max_ignored),
		cmocka_unit_test(test_all_pages_bad),
		cmocka_unit_test(test_short_file),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_small_err_buffer),
		cmocka_unit_test(test_read_file),
		cmocka_unit_test(test_uuid_helpers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
