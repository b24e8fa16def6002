/* SPDX-License-Identifier: MIT */
/*
 * The program's allocation calls, passed on to the allocator that would
 * have served them (the next definition after the shim: glibc's, or a
 * libjemalloc/libtcmalloc the program is linked with), and a large block
 * reported to the shim before the caller gets it (shim_note_alloc():
 * glibc maps large blocks with its own mmap(), which the mmap interposer
 * never sees). free() is not wrapped: every block comes from the next
 * allocator, which frees it. Part of libuswap_preload.so only.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "runtime/shim_vm.h"

/* glibc's own entry points, for a call that comes while the next
 * definitions are being looked up (dlsym() does not allocate when it
 * succeeds, so none is expected). */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t k, size_t n);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);

static struct {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*reallocarray)(void *, size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
} next;
static atomic_int resolved;	/* 0 not yet, 1 in progress, 2 done */
static pthread_t resolver;	/* the thread looking them up (while 1) */

/*
 * Look the next definitions up, once. Context: any allocation call; a
 * call from inside the lookup (none is expected) is served by glibc's
 * entry points, another thread's waits for the lookup to end (its block
 * must come from the allocator that will free it).
 * Return: true when next holds them.
 */
static bool resolve(void)
{
	int want = 0;

	if (atomic_load_explicit(&resolved, memory_order_acquire) == 2)
		return true;
	if (!atomic_compare_exchange_strong(&resolved, &want, 1)) {
		if (pthread_equal(resolver, pthread_self()))
			return false;
		while (atomic_load_explicit(&resolved, memory_order_acquire) != 2)
			sched_yield();
		return true;
	}
	resolver = pthread_self();
	next.malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	next.calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	next.realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	next.reallocarray = (void *(*)(void *, size_t, size_t))dlsym(RTLD_NEXT, "reallocarray");
	next.posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
	next.aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
	next.memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
	next.valloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "valloc");
	atomic_store_explicit(&resolved, 2, memory_order_release);
	return true;
}

/* A block of @n bytes at @p: a large one is reported. Return: @p. */
static void *note(void *p, size_t n)
{
	if (p && n >= SHIM_ALLOC_MIN)
		shim_note_alloc(p, n);
	return p;
}

__attribute__((visibility("default"))) void *malloc(size_t n)
{
	if (!resolve() || !next.malloc)
		return __libc_malloc(n);
	return note(next.malloc(n), n);
}

__attribute__((visibility("default"))) void *calloc(size_t k, size_t n)
{
	if (!resolve() || !next.calloc)
		return __libc_calloc(k, n);
	/* an overflowing product fails in the allocator; no block then */
	return note(next.calloc(k, n), k && n <= (size_t)-1 / k ? k * n : 0);
}

__attribute__((visibility("default"))) void *realloc(void *p, size_t n)
{
	if (!resolve() || !next.realloc)
		return __libc_realloc(p, n);
	return note(next.realloc(p, n), n);
}

__attribute__((visibility("default"))) void *reallocarray(void *p, size_t k, size_t n)
{
	if (!resolve() || !next.reallocarray) {
		if (n && k > (size_t)-1 / n) {
			errno = ENOMEM;
			return NULL;
		}
		return __libc_realloc(p, k * n);
	}
	return note(next.reallocarray(p, k, n), n && k <= (size_t)-1 / n ? k * n : 0);
}

__attribute__((visibility("default"))) int posix_memalign(void **out, size_t align, size_t n)
{
	int r;

	if (!resolve() || !next.posix_memalign) {
		if (!align || (align & (align - 1)) || align % sizeof(void *))
			return EINVAL;
		*out = __libc_memalign(align, n);
		return *out ? 0 : ENOMEM;
	}
	r = next.posix_memalign(out, align, n);
	if (!r)
		note(*out, n);
	return r;
}

__attribute__((visibility("default"))) void *aligned_alloc(size_t align, size_t n)
{
	if (!resolve() || !next.aligned_alloc)
		return __libc_memalign(align, n);
	return note(next.aligned_alloc(align, n), n);
}

__attribute__((visibility("default"))) void *memalign(size_t align, size_t n)
{
	if (!resolve() || !next.memalign)
		return __libc_memalign(align, n);
	return note(next.memalign(align, n), n);
}

__attribute__((visibility("default"))) void *valloc(size_t n)
{
	if (!resolve() || !next.valloc)
		return __libc_memalign(4096, n);
	return note(next.valloc(n), n);
}
