/* SPDX-License-Identifier: MIT */
/*
 * zpool, the memory of the zram backend: every size gets an object of at
 * least that size that nobody else holds; what is freed is reused, so the
 * same load run twice does not grow the pool; chunks fill, empty and move
 * between classes; several threads at once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "io/zpool.h"
#include "testutil.h"

#define CHUNK	(64U * 1024)	/* zpool.c's chunk size */

static uint64_t seed;

struct obj {
	unsigned char *p;
	size_t size;
	unsigned char tag;
};

static void obj_fill(struct obj *o, unsigned char tag)
{
	o->tag = tag;
	memset(o->p, tag, o->size);
}

static int obj_intact(const struct obj *o)
{
	size_t i;

	for (i = 0; i < o->size; i++)
		if (o->p[i] != o->tag)
			return 0;
	return 1;
}

static void test_bad_sizes(void **state)
{
	struct zpool *zp;

	(void)state;
	assert_int_equal(zpool_create(&zp), 0);
	assert_null(zpool_alloc(zp, 0));
	assert_null(zpool_alloc(zp, ZPOOL_MAX_OBJ + 1));
	zpool_free(zp, NULL);
	assert_int_equal(zpool_bytes(zp), 0);
	zpool_destroy(zp);
	zpool_destroy(NULL);
}

/* Every size 1..4096 at once: objects are disjoint and keep their bytes. */
static void test_every_size(void **state)
{
	struct obj *o = calloc(ZPOOL_MAX_OBJ, sizeof(*o));
	struct zpool *zp;
	size_t i;

	(void)state;
	assert_non_null(o);
	assert_int_equal(zpool_create(&zp), 0);
	for (i = 0; i < ZPOOL_MAX_OBJ; i++) {
		o[i].size = i + 1;
		o[i].p = zpool_alloc(zp, o[i].size);
		assert_non_null(o[i].p);
		assert_int_equal((uintptr_t)o[i].p % 8, 0);
		obj_fill(&o[i], (unsigned char)(i * 7 + 1));
	}
	for (i = 0; i < ZPOOL_MAX_OBJ; i++)
		assert_true(obj_intact(&o[i]));
	/* free every other one, refill the holes, check all again */
	for (i = 0; i < ZPOOL_MAX_OBJ; i += 2) {
		zpool_free(zp, o[i].p);
		o[i].p = zpool_alloc(zp, o[i].size);
		assert_non_null(o[i].p);
		obj_fill(&o[i], (unsigned char)(i * 13 + 5));
	}
	for (i = 0; i < ZPOOL_MAX_OBJ; i++) {
		assert_true(obj_intact(&o[i]));
		zpool_free(zp, o[i].p);
	}
	zpool_destroy(zp);
	free(o);
}

/*
 * Whole pages: 15 fit a chunk. The 16th needs a second chunk; after all
 * are freed, the same load takes no new chunk, nor does a load of another
 * class that fits in the two empty chunks.
 */
static void test_chunks_reused(void **state)
{
	enum { N = 16, PER = (CHUNK - 64) / 4096 };
	void *p[N * 16];
	struct zpool *zp;
	unsigned int i;

	(void)state;
	_Static_assert(PER == 15, "fifteen pages to a chunk");
	assert_int_equal(zpool_create(&zp), 0);
	for (i = 0; i < PER; i++)
		assert_non_null(p[i] = zpool_alloc(zp, 4096));
	assert_int_equal(zpool_bytes(zp), CHUNK);
	assert_non_null(p[PER] = zpool_alloc(zp, 4096));
	assert_int_equal(zpool_bytes(zp), 2 * CHUNK);
	/* two objects of one chunk are in one chunk */
	assert_true((uintptr_t)p[0] / CHUNK == (uintptr_t)p[1] / CHUNK);
	for (i = 0; i < N; i++)
		zpool_free(zp, p[i]);
	for (i = 0; i < N; i++)
		assert_non_null(p[i] = zpool_alloc(zp, 4096));
	assert_int_equal(zpool_bytes(zp), 2 * CHUNK);
	for (i = 0; i < N; i++)
		zpool_free(zp, p[i]);
	/* 2 empty chunks, now for 1 KiB objects: 63 per chunk */
	for (i = 0; i < 2 * 63; i++)
		assert_non_null(p[i % N] = zpool_alloc(zp, 1000));
	assert_int_equal(zpool_bytes(zp), 2 * CHUNK);
	assert_non_null(zpool_alloc(zp, 1000));
	assert_int_equal(zpool_bytes(zp), 3 * CHUNK);
	zpool_destroy(zp);	/* frees what is still allocated */
}

/* A random load, run once; everything freed; then run again. */
static uint64_t random_load(struct zpool *zp, struct obj *o, unsigned int live, uint64_t s)
{
	enum { OPS = 40000 };
	unsigned int i, k;

	for (i = 0; i < OPS; i++) {
		k = (unsigned int)test_rand_below(&s, live);
		if (o[k].p) {
			assert_true(obj_intact(&o[k]));
			zpool_free(zp, o[k].p);
			o[k].p = NULL;
			continue;
		}
		/* compressed pages: mostly 200 B - 3 KiB, some whole */
		o[k].size = test_rand_below(&s, 8) ? 200 + test_rand_below(&s, 2800) : 4096;
		o[k].p = zpool_alloc(zp, o[k].size);
		assert_non_null(o[k].p);
		obj_fill(&o[k], (unsigned char)(i | 1));
	}
	for (k = 0; k < live; k++) {
		if (!o[k].p)
			continue;
		assert_true(obj_intact(&o[k]));
		zpool_free(zp, o[k].p);
		o[k].p = NULL;
	}
	return zpool_bytes(zp);
}

/*
 * The second run of the same load finds every chunk it needs among the
 * ones the first left empty: the pool does not grow.
 */
static void test_random_reuse(void **state)
{
	enum { LIVE = 3000 };
	struct obj *o = calloc(LIVE, sizeof(*o));
	struct zpool *zp;
	uint64_t first;

	(void)state;
	assert_non_null(o);
	assert_int_equal(zpool_create(&zp), 0);
	first = random_load(zp, o, LIVE, seed);
	assert_true(first > 0);
	assert_int_equal(random_load(zp, o, LIVE, seed), first);
	zpool_destroy(zp);
	free(o);
}

struct thr {
	struct zpool *zp;
	uint64_t seed;
	int bad;
};

static void *thr_main(void *arg)
{
	enum { LIVE = 200, OPS = 20000 };
	struct thr *t = arg;
	struct obj o[LIVE];
	uint64_t s = t->seed;
	unsigned int i, k;

	memset(o, 0, sizeof(o));
	for (i = 0; i < OPS && !t->bad; i++) {
		k = (unsigned int)test_rand_below(&s, LIVE);
		if (o[k].p) {
			if (!obj_intact(&o[k]))
				t->bad = 1;
			zpool_free(t->zp, o[k].p);
			o[k].p = NULL;
			continue;
		}
		o[k].size = 1 + test_rand_below(&s, ZPOOL_MAX_OBJ);
		o[k].p = zpool_alloc(t->zp, o[k].size);
		if (!o[k].p) {
			t->bad = 1;
			break;
		}
		obj_fill(&o[k], (unsigned char)(i | 1));
	}
	for (k = 0; k < LIVE; k++) {
		if (!o[k].p)
			continue;
		if (!obj_intact(&o[k]))
			t->bad = 1;
		zpool_free(t->zp, o[k].p);
	}
	return NULL;
}

/* Four threads over the same classes: nobody sees another's bytes. */
static void test_threads(void **state)
{
	struct thr t[4];
	pthread_t th[4];
	struct zpool *zp;
	unsigned int i;

	(void)state;
	assert_int_equal(zpool_create(&zp), 0);
	for (i = 0; i < 4; i++) {
		t[i] = (struct thr){ .zp = zp, .seed = seed + i * 977 };
		assert_int_equal(pthread_create(&th[i], NULL, thr_main, &t[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(t[i].bad, 0);
	}
	zpool_destroy(zp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_sizes),
		cmocka_unit_test(test_every_size),
		cmocka_unit_test(test_chunks_reused),
		cmocka_unit_test(test_random_reuse),
		cmocka_unit_test(test_threads),
	};

	seed = test_seed("backend_zpool");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
