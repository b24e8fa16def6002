/* SPDX-License-Identifier: MIT */
/*
 * The libc functions the shim interposes: mmap(), mmap64() and mprotect()
 * register what they make before the program can touch it; mmap(),
 * mremap() and munmap() end the records of what they replace or take
 * away. madvise() that drops pages, mremap(), munmap() and mmap(MAP_FIXED)
 * run under the fence: a read lock the fork's prepare handler takes for
 * writing, so that a fork in another thread never copies the page tables
 * between one of their events (REMOVE, UNMAP, REMAP) and its change.
 * docs/RUNTIME.md, "Races of a program with itself", gives the race and
 * what the fence does not close (calls that bypass these symbols). Each
 * interposer runs in the program thread that calls it.
 */
#include <pthread.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/shim_internal.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP	4
#endif
#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED	24
#endif

#define SHIM_EXPORT	__attribute__((visibility("default")))

static pthread_rwlock_t vm_lock = PTHREAD_RWLOCK_INITIALIZER;	/* the fence */

/* Take the fence for one call. The forking thread, which holds it for
 * writing while the atfork handlers run, gets EDEADLK and goes on (it
 * cannot race its own fork). Return: true if fence_out() must release it. */
static int fence_in(void)
{
	return pthread_rwlock_rdlock(&vm_lock) == 0;
}

static void fence_out(int held)
{
	if (held)
		pthread_rwlock_unlock(&vm_lock);
}

/**
 * shim_vm_fork_begin() - hold fenced calls back, once none is in flight.
 * Context: the forking thread, first in the atfork prepare handler.
 */
void shim_vm_fork_begin(void)
{
	pthread_rwlock_wrlock(&vm_lock);
}

/**
 * shim_vm_fork_end() - let fenced calls run (in the child, a new lock).
 * Context: the atfork parent or child (@child) handler.
 */
void shim_vm_fork_end(int child)
{
	if (child)
		pthread_rwlock_init(&vm_lock, NULL);
	else
		pthread_rwlock_unlock(&vm_lock);
}

/**
 * shim_raw_madvise() - madvise(2) unfenced: the shim's own, or fenced already.
 * Context: any. Return: 0, or -1 and errno.
 */
int shim_raw_madvise(void *addr, size_t len, int advice)
{
	return (int)syscall(SYS_madvise, addr, len, advice);
}

/* madvise() as the program calls it: advice that drops pages is fenced,
 * MADV_FREE goes through shim_free_pages(). Return: 0, -1 and errno. */
SHIM_EXPORT int madvise(void *addr, size_t len, int advice)
{
	int r, held;

	if (advice != MADV_DONTNEED && advice != MADV_FREE && advice != MADV_REMOVE &&
	    advice != MADV_DONTNEED_LOCKED)
		return shim_raw_madvise(addr, len, advice);
	held = fence_in();
	r = advice == MADV_FREE ? shim_free_pages(addr, len) : shim_raw_madvise(addr, len, advice);
	fence_out(held);
	return r;
}

/* munmap() as the program calls it, fenced. Return: 0, -1 and errno. */
SHIM_EXPORT int munmap(void *addr, size_t len)
{
	int held = fence_in();
	long r = syscall(SYS_munmap, addr, len);

	fence_out(held);
	if (!r)
		shim_forget_range((uint64_t)(uintptr_t)addr, (uint64_t)(uintptr_t)addr + len);
	return (int)r;
}

/* mremap() as the program calls it, fenced (a fifth argument only with
 * MREMAP_FIXED or MREMAP_DONTUNMAP, as in glibc). Return: as mremap(2). */
SHIM_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	void *new_addr = NULL;
	long r;
	int held;

	if (flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)) {
		va_list ap;

		va_start(ap, flags);
		new_addr = va_arg(ap, void *);
		va_end(ap);
	}
	held = fence_in();
	r = syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
	fence_out(held);
	if (r != -1 && r != (long)(uintptr_t)old)	/* moved: the old range is gone */
		shim_forget_range((uint64_t)(uintptr_t)old, (uint64_t)(uintptr_t)old + old_len);
	return r == -1 ? MAP_FAILED : (void *)r;
}

/*
 * mmap() as the program calls it: a large private anonymous mapping is
 * registered before the program can touch it; MAP_FIXED is fenced.
 * Context: any thread. Return: the address, MAP_FAILED and errno.
 */
SHIM_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	bool ours = shim_active() && (flags & MAP_ANONYMOUS) && (flags & MAP_PRIVATE) &&
		    prot == (PROT_READ | PROT_WRITE) && !(flags & (MAP_STACK | MAP_GROWSDOWN)) &&
		    len >= SHIM_MIN_VMA;
	/* MAP_POPULATE before the registration would pass the budget: it is
	 * done after, through the supervisor's faults. */
	bool populate = ours && (flags & MAP_POPULATE) && !(flags & MAP_LOCKED);
	int held = (flags & MAP_FIXED) && !(flags & MAP_FIXED_NOREPLACE) ? fence_in() : 0;
	long p = syscall(SYS_mmap, addr, len, prot, populate ? flags & ~MAP_POPULATE : flags, fd,
			 off);

	fence_out(held);
	if (p == -1)
		return MAP_FAILED;
	shim_forget_range((uint64_t)p, (uint64_t)p + len);
	if (ours)
		shim_scan_for_caller();
	if (populate)	/* errors ignored, as MAP_POPULATE's are */
		shim_raw_madvise((void *)p, len, MADV_POPULATE_WRITE);
	return (void *)p;
}

/* mprotect() as the program calls it: a large range made read-write (a
 * reservation committed) is registered before the program can touch it.
 * Context: any thread. Return: 0, -1 and errno. */
SHIM_EXPORT int mprotect(void *addr, size_t len, int prot)
{
	if (syscall(SYS_mprotect, addr, len, prot))
		return -1;
	if (shim_active() && prot == (PROT_READ | PROT_WRITE) && len >= SHIM_MIN_VMA)
		shim_scan_for_caller();
	return 0;
}

/* mmap64(): mmap(), off_t being 64 bits here. */
SHIM_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
}
