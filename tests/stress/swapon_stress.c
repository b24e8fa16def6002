/* SPDX-License-Identifier: MIT */
/*
 * swapon and swapoff of different devices at once, while other threads
 * allocate and free slots on them, owners come and go, the same file is
 * swapped on by two threads at a time, and readers look at every type.
 * Checks: every swapon of a private device succeeds, a swapoff fails only
 * with -EBUSY (slots another thread still holds) and then succeeds, the
 * shared file is swapped on by at most one thread at a time, and free swap
 * has not drifted at the end. Meant for TSan as much as for the checks.
 *
 * USWAP_TEST_OPS (default 200000) / 1000 rounds per thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uswap/uswap.h>
#include "swap/swap_header.h"
#include "testutil.h"

#define NR_DEV_THREADS 3
#define NR_FOLIOS 48

static struct uswap_frame_pool *pool;
static unsigned long rounds;
static atomic_int failed;
static atomic_int file_holders;	/* threads that have the shared file on */
static atomic_bool stop;
static char file_path[256];

#define CHECK(cond, ...)                                                          \
	do {                                                                      \
		if (!(cond)) {                                                    \
			fprintf(stderr, "swapon_stress: %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                             \
			fputc('\n', stderr);                                      \
			atomic_store(&failed, 1);                                 \
		}                                                                 \
	} while (0)

static void swapoff_retry(unsigned int type)
{
	int err;

	while ((err = uswap_swapoff_type(type)) == -EBUSY)
		sched_yield();
	CHECK(!err, "swapoff of type %u: %d", type, err);
}

/* Swap a device on, use swap (any device's), give it all back, swap off. */
static void *dev_fn(void *arg)
{
	uint64_t seed = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ULL + 1;
	struct folio *f[NR_FOLIOS];
	bool locked[NR_FOLIOS];
	unsigned long r;
	int i, n;

	for (r = 0; r < rounds && !atomic_load(&failed); r++) {
		int type = uswap_swapon_mem(1024 + 512 * test_rand_below(&seed, 4),
					    SWAP_FLAG_PREFER | (int)test_rand_below(&seed, 3));

		CHECK(type >= 0, "swapon_mem: %d", type);
		if (type < 0)
			break;
		n = (int)test_rand_below(&seed, NR_FOLIOS + 1);
		for (i = 0; i < n; i++) {
			f[i] = uswap_folio_alloc(pool, 0);
			if (!f[i])
				break;
			folio_mark_uptodate(f[i]);
			folio_lock(f[i]);
			if (folio_alloc_swap(f[i])) {
				folio_unlock(f[i]);
				folio_put(f[i]);
				break;
			}
			locked[i] = test_rand_below(&seed, 2);
			if (!locked[i])
				folio_unlock(f[i]);	/* swapoff may reclaim it */
		}
		n = i;
		for (i = 0; i < n; i++) {
			if (!locked[i])
				folio_lock(f[i]);
			if (folio_test_swapcache(f[i]))
				CHECK(folio_free_swap(f[i]) == 1, "folio_free_swap");
			folio_unlock(f[i]);
			folio_put(f[i]);
		}
		swapoff_retry((unsigned int)type);
	}
	return NULL;
}

/* Two of these race on one file: never both have it on. */
static void *file_fn(void *arg)
{
	unsigned long r;

	(void)arg;
	for (r = 0; r < rounds && !atomic_load(&failed); r++) {
		int type = uswap_swapon(file_path, 0);

		if (type == -EBUSY)
			continue;
		CHECK(type >= 0, "swapon of the shared file: %d", type);
		if (type < 0)
			break;
		CHECK(atomic_fetch_add(&file_holders, 1) == 0, "the shared file is on twice");
		atomic_fetch_sub(&file_holders, 1);
		swapoff_retry((unsigned int)type);
	}
	return NULL;
}

static atomic_ulong unuse_calls;

static int stress_unuse(unsigned int type, void *arg)
{
	(void)type;
	(void)arg;
	atomic_fetch_add(&unuse_calls, 1);
	return 0;
}

/* An owner that comes and goes, and a reader of every type. */
static void *side_fn(void *arg)
{
	struct uswap_swap_stat st;
	unsigned int t;

	(void)arg;
	while (!atomic_load(&stop)) {
		CHECK(!uswap_swap_set_owner(stress_unuse, &unuse_calls, true), "set_owner");
		for (t = 0; t < MAX_SWAPFILES; t++)
			if (uswap_swap_type_active(t) && !uswap_swap_stat(t, &st))
				CHECK(st.inuse_pages <= st.pages, "type %u: inuse %" PRIu64
				      " > pages %" PRIu64, t, st.inuse_pages, st.pages);
		CHECK(!uswap_swap_set_owner(stress_unuse, &unuse_calls, false), "clear_owner");
		sched_yield();
	}
	return NULL;
}

/* Free swap did not drift: one fresh device is more than half full with
 * 520 of its 1023 slots in use, and not with 500. */
static void check_free_swap(void)
{
	static struct folio *f[520];
	int type = uswap_swapon_mem(1024, 0), i;

	CHECK(type >= 0, "last swapon: %d", type);
	if (type < 0)
		return;
	for (i = 0; i < 520; i++) {
		f[i] = uswap_folio_alloc(pool, 0);
		CHECK(f[i], "no folio");
		if (!f[i])
			exit(1);
		folio_mark_uptodate(f[i]);
		folio_lock(f[i]);
		CHECK(!folio_alloc_swap(f[i]), "folio_alloc_swap");
		if (i == 499)
			CHECK(!uswap_vm_swap_full(), "swap full with 500 of 1023 slots used");
	}
	CHECK(uswap_vm_swap_full(), "swap not full with 520 of 1023 slots used");
	for (i = 0; i < 520; i++) {
		folio_free_swap(f[i]);
		folio_unlock(f[i]);
		folio_put(f[i]);
	}
	swapoff_retry((unsigned int)type);
}

static void make_file(const char *path, uint32_t pages)
{
	static const uint8_t uuid[16] = { 1, 2, 3, 4, 5, 6, 0x47, 8, 0x89, 10, 11, 12, 13, 14, 15, 16 };
	void *page = aligned_alloc(4096, 4096);
	int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);

	if (!page || fd < 0 || uswap_swap_header_build(page, pages - 1, NULL, 0, uuid, "s") ||
	    ftruncate(fd, (off_t)pages * 4096) || pwrite(fd, page, 4096, 0) != 4096) {
		fprintf(stderr, "swapon_stress: cannot make %s\n", path);
		exit(1);
	}
	close(fd);
	free(page);
}

int main(void)
{
	pthread_t dev[NR_DEV_THREADS], file[2], side;
	char tmpl[] = "/tmp/uswap-swapon-stress-XXXXXX";
	int i;

	setenv("USWAP_QUIET", "1", 1);
	test_seed("swapon_stress");
	rounds = test_ops(200000) / 1000;
	if (!rounds)
		rounds = 1;
	if (!mkdtemp(tmpl) || uswap_frame_pool_create(1024, &pool)) {
		fprintf(stderr, "swapon_stress: setup failed\n");
		return 1;
	}
	snprintf(file_path, sizeof(file_path), "%s/shared", tmpl);
	make_file(file_path, 1024);
	pthread_create(&side, NULL, side_fn, NULL);
	for (i = 0; i < NR_DEV_THREADS; i++)
		pthread_create(&dev[i], NULL, dev_fn, (void *)(uintptr_t)(i + 1));
	for (i = 0; i < 2; i++)
		pthread_create(&file[i], NULL, file_fn, NULL);
	for (i = 0; i < NR_DEV_THREADS; i++)
		pthread_join(dev[i], NULL);
	for (i = 0; i < 2; i++)
		pthread_join(file[i], NULL);
	atomic_store(&stop, true);
	pthread_join(side, NULL);
	for (i = 0; i < MAX_SWAPFILES; i++)
		CHECK(!uswap_swap_type_active((unsigned int)i), "type %d still active", i);
	check_free_swap();
	unlink(file_path);
	rmdir(tmpl);
	uswap_frame_pool_destroy(pool);
	if (atomic_load(&failed))
		return 1;
	printf("swapon_stress: %lu rounds x %d device threads, 2 file threads; passed\n", rounds,
	       NR_DEV_THREADS);
	return 0;
}
