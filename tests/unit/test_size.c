/* SPDX-License-Identifier: MIT */
/*
 * The size and count parser (util/size.h): the accepted shapes give their
 * exact value, everything else is -EINVAL or -ERANGE and leaves the output
 * alone.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "util/size.h"

#define UNTOUCHED 0x5a5a5a5a5a5a5a5aULL

static void size_ok(const char *s, uint64_t want)
{
	uint64_t v = UNTOUCHED;
	int ret = uswap_parse_size(s, &v);

	if (ret || v != want)
		fail_msg("size '%s': ret %d value %llu, want 0 and %llu", s, ret,
			 (unsigned long long)v, (unsigned long long)want);
}

static void size_bad(const char *s, int want)
{
	uint64_t v = UNTOUCHED;
	int ret = uswap_parse_size(s, &v);

	if (ret != want || v != UNTOUCHED)
		fail_msg("size '%s': ret %d value %llu, want %d and untouched", s ? s : "(null)",
			 ret, (unsigned long long)v, want);
}

static void count_ok(const char *s, uint64_t want)
{
	uint64_t v = UNTOUCHED;
	int ret = uswap_parse_count(s, &v);

	if (ret || v != want)
		fail_msg("count '%s': ret %d value %llu, want 0 and %llu", s, ret,
			 (unsigned long long)v, (unsigned long long)want);
}

static void count_bad(const char *s, int want)
{
	uint64_t v = UNTOUCHED;
	int ret = uswap_parse_count(s, &v);

	if (ret != want || v != UNTOUCHED)
		fail_msg("count '%s': ret %d value %llu, want %d and untouched", s ? s : "(null)",
			 ret, (unsigned long long)v, want);
}

static void test_plain(void **state)
{
	(void)state;
	size_ok("1", 1);
	size_ok("4096", 4096);
	size_ok("007", 7);
	size_ok("123456789012", 123456789012ULL);
}

static void test_zero(void **state)
{
	(void)state;
	size_ok("0", 0);
	size_ok("0K", 0);
	size_ok("0TiB", 0);
	size_ok("000", 0);
	count_ok("0", 0);
}

static void test_suffixes(void **state)
{
	(void)state;
	size_ok("3k", 3ULL << 10);
	size_ok("3K", 3ULL << 10);
	size_ok("5m", 5ULL << 20);
	size_ok("5M", 5ULL << 20);
	size_ok("7g", 7ULL << 30);
	size_ok("7G", 7ULL << 30);
	size_ok("2t", 2ULL << 40);
	size_ok("2T", 2ULL << 40);
}

static void test_ib_and_b(void **state)
{
	(void)state;
	size_ok("16KiB", 16ULL << 10);
	size_ok("16MiB", 16ULL << 20);
	size_ok("1GiB", 1ULL << 30);
	size_ok("1TiB", 1ULL << 40);
	size_ok("16KB", 16ULL << 10);
	size_ok("16mB", 16ULL << 20);
	size_ok("1GB", 1ULL << 30);
	/* "B" and "iB" only after a multiplier, in that case */
	size_bad("512B", -EINVAL);
	size_bad("512iB", -EINVAL);
	size_bad("1Gib", -EINVAL);
	size_bad("1GIB", -EINVAL);
	size_bad("1Gb", -EINVAL);
	size_bad("1GiBB", -EINVAL);
	size_bad("1Gi", -EINVAL);
	size_bad("1GBi", -EINVAL);
	size_bad("1KM", -EINVAL);
}

static void test_max(void **state)
{
	(void)state;
	size_ok("18446744073709551615", UINT64_MAX);
	count_ok("18446744073709551615", UINT64_MAX);
	size_ok("16777215T", 16777215ULL << 40);
	size_ok("17179869183G", 17179869183ULL << 30);
	size_ok("18014398509481983K", 18014398509481983ULL << 10);
}

static void test_overflow_digits(void **state)
{
	(void)state;
	size_bad("18446744073709551616", -ERANGE);
	size_bad("99999999999999999999", -ERANGE);
	size_bad("99999999999999999999G", -ERANGE);
	size_bad("00000000000000000000018446744073709551616", -ERANGE);
	count_bad("18446744073709551616", -ERANGE);
	/* malformed wins over large */
	size_bad("99999999999999999999Q", -EINVAL);
	size_bad("-99999999999999999999", -EINVAL);
}

static void test_overflow_suffix(void **state)
{
	(void)state;
	size_bad("16777216T", -ERANGE);
	size_bad("17179869184G", -ERANGE);
	size_bad("17592186044416M", -ERANGE);
	size_bad("18014398509481984K", -ERANGE);
	size_bad("18446744073709551615G", -ERANGE);
	size_bad("18446744073709551615K", -ERANGE);
}

static void test_sign(void **state)
{
	(void)state;
	size_bad("-5M", -EINVAL);
	size_bad("-1", -EINVAL);
	size_bad("+5M", -EINVAL);
	size_bad("-0", -EINVAL);
	size_bad("5-", -EINVAL);
	count_bad("-1", -EINVAL);
	count_bad("+1", -EINVAL);
}

static void test_space(void **state)
{
	(void)state;
	size_bad(" 5M", -EINVAL);
	size_bad("5M ", -EINVAL);
	size_bad("5 M", -EINVAL);
	size_bad("\t5", -EINVAL);
	size_bad("5\n", -EINVAL);
	count_bad(" 1", -EINVAL);
	count_bad("1 ", -EINVAL);
}

static void test_empty(void **state)
{
	(void)state;
	size_bad("", -EINVAL);
	size_bad("M", -EINVAL);
	size_bad("GiB", -EINVAL);
	size_bad(NULL, -EINVAL);
	count_bad("", -EINVAL);
	count_bad(NULL, -EINVAL);
	assert_int_equal(uswap_parse_size("1", NULL), -EINVAL);
	assert_int_equal(uswap_parse_count("1", NULL), -EINVAL);
}

static void test_trailing_junk(void **state)
{
	(void)state;
	size_bad("5Q", -EINVAL);
	size_bad("5MQ", -EINVAL);
	size_bad("5MiBx", -EINVAL);
	size_bad("1.5G", -EINVAL);
	size_bad("5e3", -EINVAL);
	size_bad("1,000", -EINVAL);
	count_bad("5K", -EINVAL);
	count_bad("12abc", -EINVAL);
	count_bad("1.0", -EINVAL);
}

static void test_hex(void **state)
{
	(void)state;
	size_bad("0x10", -EINVAL);
	size_bad("0X10", -EINVAL);
	size_bad("0x10M", -EINVAL);
	size_bad("ff", -EINVAL);
	count_bad("0x10", -EINVAL);
	/* a leading zero is decimal, never octal */
	count_ok("010", 10);
}

static void test_length_form(void **state)
{
	uint64_t v = UNTOUCHED;

	(void)state;
	assert_int_equal(uswap_parse_size_n("64M:zstd", 3, &v), 0);
	assert_int_equal(v, 64ULL << 20);
	assert_int_equal(uswap_parse_size_n("1GiB,x", 4, &v), 0);
	assert_int_equal(v, 1ULL << 30);
	assert_int_equal(uswap_parse_size_n("64M:zstd", 4, &v), -EINVAL);
	assert_int_equal(uswap_parse_size_n("64M", 0, &v), -EINVAL);
	assert_int_equal(uswap_parse_size_n("1G\0", 3, &v), -EINVAL);
	assert_int_equal(uswap_parse_size_n("16777216T:", 9, &v), -ERANGE);
	assert_int_equal(v, 1ULL << 30);
	assert_int_equal(uswap_parse_count_n("12:zram", 2, &v), 0);
	assert_int_equal(v, 12);
	assert_int_equal(uswap_parse_count_n("12:zram", 3, &v), -EINVAL);
	assert_int_equal(uswap_parse_count_n("1K", 2, &v), -EINVAL);
	assert_int_equal(uswap_parse_count_n("", 0, &v), -EINVAL);
	assert_int_equal(uswap_parse_count_n(NULL, 1, &v), -EINVAL);
	assert_int_equal(v, 12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_zero),
		cmocka_unit_test(test_suffixes),
		cmocka_unit_test(test_ib_and_b),
		cmocka_unit_test(test_max),
		cmocka_unit_test(test_overflow_digits),
		cmocka_unit_test(test_overflow_suffix),
		cmocka_unit_test(test_sign),
		cmocka_unit_test(test_space),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_trailing_junk),
		cmocka_unit_test(test_hex),
		cmocka_unit_test(test_length_form),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
