/* SPDX-License-Identifier: MIT */
/*
 * The library's output: with a function set by uswap_set_output(), a
 * message the library reports reaches it and nothing reaches stderr;
 * without one, debug messages go to stderr at USWAP_DEBUG >= 1 only, and
 * USWAP_QUIET drops them either way.
 *
 * The message provoked is swap_entry_pin()'s report of an entry whose
 * device type is out of range, through the public swp_swapcount().
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uswap/uswap.h>

#define BAD_TYPE_MSG "bad swap file entry"

struct captured {
	unsigned int calls;
	char last[512];
	void *arg_seen;
};

static void capture(const char *msg, void *arg)
{
	struct captured *c = arg;

	c->calls++;
	c->arg_seen = arg;
	snprintf(c->last, sizeof(c->last), "%s", msg);
}

/* Where fd 2 went while stderr_begin() .. stderr_end() ran. */
struct stderr_capture {
	FILE *file;
	int saved_fd;
	char text[1024];
};

static void stderr_begin(struct stderr_capture *sc)
{
	sc->file = tmpfile();
	assert_non_null(sc->file);
	fflush(stderr);
	sc->saved_fd = dup(2);
	assert_true(sc->saved_fd >= 0);
	assert_true(dup2(fileno(sc->file), 2) == 2);
}

static void stderr_end(struct stderr_capture *sc)
{
	size_t n;

	fflush(stderr);
	assert_true(dup2(sc->saved_fd, 2) == 2);
	close(sc->saved_fd);
	rewind(sc->file);
	n = fread(sc->text, 1, sizeof(sc->text) - 1, sc->file);
	sc->text[n] = '\0';
	fclose(sc->file);
}

/* A misuse the library reports at USWAP_DEBUG >= 1: device type 30. */
static void provoke(void)
{
	assert_int_equal(swp_swapcount(swp_entry(30, 1)), -EINVAL);
}

static int setup(void **state)
{
	unsetenv("USWAP_QUIET");
	uswap_set_output(NULL, NULL);
	return 0;
}

static void test_callback_gets_message_not_stderr(void **state)
{
	struct captured c = { 0 };
	struct stderr_capture sc;

	uswap_set_output(capture, &c);
	stderr_begin(&sc);
	provoke();
	stderr_end(&sc);
	uswap_set_output(NULL, NULL);

	assert_string_equal(sc.text, "");
	if (USWAP_DEBUG < 1) {
		/* Level 0 reports no misuse at all. */
		assert_int_equal(c.calls, 0);
		return;
	}
	assert_int_equal(c.calls, 1);
	assert_ptr_equal(c.arg_seen, &c);
	/* The text as it always was, without prefix or newline. */
	assert_non_null(strstr(c.last, BAD_TYPE_MSG));
	assert_null(strstr(c.last, "uswap:"));
	assert_null(strchr(c.last, '\n'));
}

static void test_default_is_stderr_at_debug(void **state)
{
	struct stderr_capture sc;

	stderr_begin(&sc);
	provoke();
	stderr_end(&sc);
	if (USWAP_DEBUG < 1) {
		assert_string_equal(sc.text, "");
		return;
	}
	assert_non_null(strstr(sc.text, "uswap: " BAD_TYPE_MSG));
}

static void test_reset_restores_default(void **state)
{
	struct captured c = { 0 };
	struct stderr_capture sc;

	uswap_set_output(capture, &c);
	uswap_set_output(NULL, &c);
	stderr_begin(&sc);
	provoke();
	stderr_end(&sc);
	assert_int_equal(c.calls, 0);
	if (USWAP_DEBUG >= 1)
		assert_non_null(strstr(sc.text, BAD_TYPE_MSG));
}

static void test_quiet_drops_debug_messages(void **state)
{
	struct captured c = { 0 };
	struct stderr_capture sc;

	setenv("USWAP_QUIET", "1", 1);
	stderr_begin(&sc);
	provoke();
	uswap_set_output(capture, &c);
	provoke();
	stderr_end(&sc);
	uswap_set_output(NULL, NULL);
	unsetenv("USWAP_QUIET");
	assert_string_equal(sc.text, "");
	assert_int_equal(c.calls, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_callback_gets_message_not_stderr, setup),
		cmocka_unit_test_setup(test_default_is_stderr_at_debug, setup),
		cmocka_unit_test_setup(test_reset_restores_default, setup),
		cmocka_unit_test_setup(test_quiet_drops_debug_messages, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
