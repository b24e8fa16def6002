/* SPDX-License-Identifier: MIT */
/*
 * swapon / swapoff of real files: headers from util-linux mkswap and from
 * uswap, bad pages marked in the swap table, refusals with their errors,
 * priorities and turn-taking, discard, the -EBUSY swapoff that leaves the
 * device working.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "swaptest.h"
#include "swap/swap_header.h"
#include "swap/swap_internal.h"


static void make_file(const char *path, uint32_t pages, const uint32_t *bad, uint32_t nbad)
{
	static const uint8_t uuid[16] = { 1, 2, 3, 4, 5, 6, 0x47, 8, 0x89, 10, 11, 12, 13, 14, 15, 16 };
	void *page = aligned_alloc(4096, 4096);
	int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);

	assert_true(fd >= 0);
	assert_int_equal(uswap_swap_header_build(page, pages - 1, bad, nbad, uuid, "t"), 0);
	assert_int_equal(ftruncate(fd, (off_t)pages * 4096), 0);
	assert_int_equal(pwrite(fd, page, 4096, 0), 4096);
	close(fd);
	free(page);
}

static struct folio *new_folio(struct uswap_frame_pool *pool)
{
	struct folio *f = uswap_folio_alloc(pool, 0);

	assert_non_null(f);
	folio_mark_uptodate(f);
	folio_lock(f);
	return f;
}

static void drop_folio(struct folio *f)
{
	assert_int_equal(folio_free_swap(f), 1);
	folio_unlock(f);
	folio_put(f);
}

/* A file made by util-linux mkswap opens, with the sizes it says. */
static void test_util_linux_mkswap(void **state)
{
	struct uswap_swap_stat st;
	char path[256], cmd[1024];
	int type;

	(void)state;
	/* util-linux is a build dependency (.ci/run installs it): its absence
	 * is a broken set-up, not a reason to pass. */
	if (access("/usr/sbin/mkswap", X_OK) && access("/sbin/mkswap", X_OK))
		fail_msg("util-linux's mkswap is not installed (apt-get install util-linux)");
	swaptest_path(path, "ul");
	snprintf(cmd, sizeof(cmd), "truncate -s 64M %s && chmod 600 %s && mkswap -L ul %s >/dev/null",
		 path, path, path);
	assert_int_equal(system(cmd), 0);
	type = uswap_swapon(path, 0);
	assert_true(type >= 0);
	assert_int_equal(uswap_swap_stat((unsigned int)type, &st), 0);
	assert_int_equal(st.max, 16384);
	assert_int_equal(st.pages, 16383);
	assert_int_equal(st.nr_bad, 1);
	assert_int_equal(uswap_swapon(path, 0), -EBUSY);
	assert_int_equal(uswap_swapoff(path), 0);
	unlink(path);
}

/* Bad pages are BAD entries in the table; duplicates and out-of-range
 * entries refuse the whole device with a message naming the page. */
static void test_bad_pages(void **state)
{
	uint32_t bad[] = { 5, 700, 1023 };
	uint32_t dup[] = { 5, 5 }, out[] = { 2000 }, zero[] = { 0 };
	struct uswap_swap_stat st;
	char path[256], err[256];
	uint64_t tb;
	long count;
	int type;

	(void)state;
	swaptest_path(path, "bad");
	make_file(path, 1024, bad, 3);
	type = uswap_swapon_ex(path, 0, err, sizeof(err));
	assert_true(type >= 0);
	assert_int_equal(uswap_swap_stat((unsigned int)type, &st), 0);
	assert_int_equal(st.pages, 1024 - 1 - 3);
	assert_int_equal(st.nr_bad, 4);
	for (unsigned int i = 0; i < 3; i++) {
		assert_int_equal(uswap_swap_tb_peek(swp_entry((unsigned int)type, bad[i]), &tb, &count), 0);
		assert_true(swp_tb_is_bad(tb));
		assert_int_equal(swap_dup_entry_direct(swp_entry((unsigned int)type, bad[i])), -EINVAL);
	}
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);

	make_file(path, 1024, dup, 2);
	assert_int_equal(uswap_swapon_ex(path, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "duplicated bad page 5"));
	make_file(path, 1024, out, 1);
	assert_int_equal(uswap_swapon_ex(path, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "2000"));
	make_file(path, 1024, zero, 1);
	assert_int_equal(uswap_swapon_ex(path, 0, err, sizeof(err)), -EINVAL);
	unlink(path);
}

/* No header, an old v0 header, a file shorter than its header. */
static void test_refusals(void **state)
{
	char path[256], err[256];
	void *page = calloc(1, 4096);
	int fd;

	(void)state;
	swaptest_path(path, "refuse");
	fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	assert_int_equal(uswap_swapon_ex(path, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "SWAPSPACE2"));
	memcpy((char *)page + 4096 - 10, "SWAP-SPACE", 10);
	assert_int_equal(pwrite(fd, page, 4096, 0), 4096);
	assert_int_equal(uswap_swapon_ex(path, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "SWAP-SPACE"));
	close(fd);
	make_file(path, 1024, NULL, 0);
	assert_int_equal(truncate(path, 512 * 4096), 0);
	assert_int_equal(uswap_swapon_ex(path, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "shorter"));
	assert_int_equal(uswap_swapon_ex("/nonexistent/x", 0, err, sizeof(err)), -ENOENT);
	free(page);
	unlink(path);
}

/* Higher priority first; equal priorities take turns; the next device
 * when one is full. */
static void test_priorities(void **state)
{
	struct uswap_frame_pool *pool;
	struct folio *f[600];
	char a[256], b[256], c[256];
	int ta, tb, tc, n_a = 0, n_b = 0, i;

	(void)state;
	assert_int_equal(uswap_frame_pool_create(4096, &pool), 0);
	swaptest_path(a, "pa");
	swaptest_path(b, "pb");
	swaptest_path(c, "pc");
	make_file(a, 2048, NULL, 0);
	make_file(b, 2048, NULL, 0);
	make_file(c, 600, NULL, 0);
	ta = uswap_swapon(a, SWAP_FLAG_PREFER | 5);
	tb = uswap_swapon(b, SWAP_FLAG_PREFER | 5);
	tc = uswap_swapon(c, SWAP_FLAG_PREFER | 9);
	assert_true(ta >= 0 && tb >= 0 && tc >= 0);
	/* The high-priority device fills first (599 usable slots). */
	for (i = 0; i < 599; i++) {
		f[i] = new_folio(pool);
		assert_int_equal(folio_alloc_swap(f[i]), 0);
		assert_int_equal(swp_type(folio_swap_entry(f[i])), (unsigned int)tc);
	}
	for (i = 0; i < 599; i++)
		drop_folio(f[i]);
	/* Fill c again, then the equal-priority pair shares the rest. */
	for (i = 0; i < 599; i++) {
		f[i] = new_folio(pool);
		assert_int_equal(folio_alloc_swap(f[i]), 0);
	}
	{
		/* A thread keeps its current cluster until it is used up (the
		 * kernel's per-CPU cluster); turns are taken on the slow path,
		 * so take three clusters' worth. */
		static struct folio *g[1536];

		for (int k = 0; k < 1536; k++) {
			g[k] = new_folio(pool);
			assert_int_equal(folio_alloc_swap(g[k]), 0);
			n_a += swp_type(folio_swap_entry(g[k])) == (unsigned int)ta;
			n_b += swp_type(folio_swap_entry(g[k])) == (unsigned int)tb;
		}
		assert_int_equal(n_a + n_b, 1536);
		assert_true(n_a >= 512 && n_b >= 512);
		for (int k = 0; k < 1536; k++)
			drop_folio(g[k]);
	}
	for (i = 0; i < 599; i++)
		drop_folio(f[i]);
	assert_int_equal(uswap_swapoff_type((unsigned int)ta), 0);
	assert_int_equal(uswap_swapoff_type((unsigned int)tb), 0);
	assert_int_equal(uswap_swapoff_type((unsigned int)tc), 0);
	uswap_frame_pool_destroy(pool);
	unlink(a);
	unlink(b);
	unlink(c);
}

/* swapoff with slots in use and no owner to give them back: -EBUSY, and
 * the device keeps working. */
static void test_swapoff_busy(void **state)
{
	struct uswap_frame_pool *pool;
	struct folio *f;
	swp_entry_t e;
	char path[256];
	int type;

	(void)state;
	assert_int_equal(uswap_frame_pool_create(16, &pool), 0);
	swaptest_path(path, "busy");
	make_file(path, 1024, NULL, 0);
	type = uswap_swapon(path, SWAP_FLAG_PREFER | 100);
	assert_true(type >= 0);
	f = new_folio(pool);
	assert_int_equal(folio_alloc_swap(f), 0);
	assert_int_equal(folio_dup_swap(f, -1), 0);
	e = folio_swap_entry(f);
	assert_int_equal(swp_type(e), (unsigned int)type);
	assert_int_equal(swap_cache_del_folio(f, 0), 0);
	folio_unlock(f);
	folio_put(f);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), -EBUSY);
	assert_int_equal(swap_dup_entry_direct(e), 0);
	assert_int_equal(swp_swapcount(e), 2);
	f = new_folio(pool);
	assert_int_equal(folio_alloc_swap(f), 0);	/* still allocating */
	drop_folio(f);
	assert_int_equal(swap_put_entries_direct(e, 1), 0);
	assert_int_equal(swap_put_entries_direct(e, 1), 0);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	assert_int_equal(swp_swapcount(e), -ENODEV);
	uswap_frame_pool_destroy(pool);
	unlink(path);
}

/* SWAP_FLAG_DISCARD: an emptied cluster is hole-punched before reuse. */
static void test_discard(void **state)
{
	struct uswap_frame_pool *pool;
	struct folio *f[512];
	struct stat st;
	char path[256];
	blkcnt_t before;
	int type, i, fd;

	(void)state;
	assert_int_equal(uswap_frame_pool_create(1024, &pool), 0);
	swaptest_path(path, "discard");
	make_file(path, 4096, NULL, 0);
	/* Make the file's blocks real, so that a hole punch shows. */
	fd = open(path, O_RDWR);
	{
		char *buf = malloc(1 << 20);

		memset(buf, 0x5a, 1 << 20);
		for (i = 1; i < 16; i++)
			assert_int_equal(pwrite(fd, buf, 1 << 20, (off_t)i << 20), 1 << 20);
		free(buf);
	}
	fsync(fd);
	close(fd);
	type = uswap_swapon(path, SWAP_FLAG_PREFER | 200 | SWAP_FLAG_DISCARD | SWAP_FLAG_DISCARD_PAGES);
	assert_true(type >= 0);
	stat(path, &st);
	before = st.st_blocks;
	for (i = 0; i < 512; i++) {
		f[i] = new_folio(pool);
		assert_int_equal(folio_alloc_swap(f[i]), 0);
	}
	for (i = 0; i < 512; i++)
		drop_folio(f[i]);
	/*
	 * The emptied cluster waits on the discard list for the device's
	 * worker (the kernel's discard_work), which punches it in the
	 * background: wait for it, up to 10 s. An allocation runs pending
	 * discards itself only when it finds no other free cluster.
	 */
	for (i = 0; i < 1000; i++) {
		stat(path, &st);
		if (st.st_blocks < before)
			break;
		usleep(10000);
	}
	/* ext4 and tmpfs (where the tests' files live) both punch holes: no
	 * hole means the discard did not run. */
	if (st.st_blocks >= before)
		print_message("no hole punched (%ld -> %ld blocks)\n", (long)before, (long)st.st_blocks);
	assert_true(st.st_blocks < before);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	uswap_frame_pool_destroy(pool);
	unlink(path);
}

/* A rotational device allocates from one global cluster per order, in
 * offset order, under its lock; frees and reuse work as on SSDs. */
static void test_rotational(void **state)
{
	struct uswap_frame_pool *pool;
	struct uswap_swap_stat st;
	static struct folio *f[1200];
	char path[256];
	uint64_t prev = 0;
	int type, i;

	(void)state;
	assert_int_equal(uswap_frame_pool_create(2048, &pool), 0);
	swaptest_path(path, "rot");
	make_file(path, 2048, NULL, 0);
	type = uswap_swapon(path, SWAP_FLAG_PREFER | 300 | USWAP_FLAG_ROTATIONAL);
	assert_true(type >= 0);
	assert_int_equal(uswap_swap_stat((unsigned int)type, &st), 0);
	assert_int_equal(st.flags & (1U << 4), 0);	/* not SWP_SOLIDSTATE */
	for (i = 0; i < 1200; i++) {
		f[i] = new_folio(pool);
		assert_int_equal(folio_alloc_swap(f[i]), 0);
		assert_int_equal(swp_type(folio_swap_entry(f[i])), (unsigned int)type);
		/* One global cluster at a time: offsets only go up. */
		assert_true(swp_offset(folio_swap_entry(f[i])) > prev);
		prev = swp_offset(folio_swap_entry(f[i]));
	}
	for (i = 0; i < 1200; i += 2)
		drop_folio(f[i]);
	for (i = 0; i < 1200; i += 2) {
		f[i] = new_folio(pool);
		assert_int_equal(folio_alloc_swap(f[i]), 0);
	}
	for (i = 0; i < 1200; i++)
		drop_folio(f[i]);
	assert_int_equal(uswap_swap_stat((unsigned int)type, &st), 0);
	assert_int_equal(st.inuse_pages, 0);
	assert_int_equal(uswap_swapoff_type((unsigned int)type), 0);
	uswap_frame_pool_destroy(pool);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_util_linux_mkswap),
		cmocka_unit_test(test_bad_pages),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_priorities),
		cmocka_unit_test(test_swapoff_busy),
		cmocka_unit_test(test_discard),
		cmocka_unit_test(test_rotational),
	};

	setenv("USWAP_QUIET", "1", 1);
	return cmocka_run_group_tests(tests, swaptest_dir_setup, swaptest_dir_teardown);
}
