/* SPDX-License-Identifier: MIT */
/*
 * The userfaultfd operations of uffd_ops.h: each is one ioctl with the
 * rules its callers need around it: partial counts, EAGAIN (an event is
 * pending: the caller reads it and retries), and never a faulting thread
 * left waiting. Context: any thread, unless a function says otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "runtime/uffd_ops.h"

/**
 * rt_uffd_open() - a new userfaultfd with @flags (O_CLOEXEC, O_NONBLOCK):
 * the system call, or /dev/userfaultfd where the system call is refused.
 * Return: the descriptor, or -errno of the last attempt.
 */
int rt_uffd_open(int flags)
{
	int fd = (int)syscall(SYS_userfaultfd, flags);
	int dev;

	if (fd >= 0)
		return fd;
	dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -errno;
	fd = ioctl(dev, USERFAULTFD_IOC_NEW, flags);
	if (fd < 0)
		fd = -errno;
	close(dev);
	return fd;
}

/**
 * rt_uffd_read() - read messages of @uffd into @buf (@len bytes) without
 * ever waiting, whatever the O_NONBLOCK flag of the file (which the program
 * shares) says: with RWF_NOWAIT (Linux 6.9+), else only while the flag is
 * set. Return: bytes read, or -1 and errno (EAGAIN: none; EBADFD: the file
 * was made blocking, its flag set again).
 */
ssize_t rt_uffd_read(int uffd, void *buf, size_t len)
{
	static _Atomic int plain;	/* RWF_NOWAIT refused once: never tried again */
	struct iovec v = { .iov_base = buf, .iov_len = len };
	int fl;

	if (!atomic_load_explicit(&plain, memory_order_relaxed)) {
		ssize_t r = preadv2(uffd, &v, 1, -1, RWF_NOWAIT);

		if (r >= 0 || errno != EOPNOTSUPP)
			return r;
		atomic_store_explicit(&plain, 1, memory_order_relaxed);
	}
	fl = fcntl(uffd, F_GETFL);
	if (fl < 0)
		return -1;
	if (!(fl & O_NONBLOCK)) {
		fcntl(uffd, F_SETFL, fl | O_NONBLOCK);
		errno = EBADFD;
		return -1;
	}
	return read(uffd, buf, len);
}

/**
 * rt_uffd_api() - the UFFDIO_API handshake: ask for the features of @want
 * the kernel has (found on a scratch uffd: asking for a missing one fails).
 * Context: any; @uffd must not have had its handshake.
 * Return: 0 and *@got (the features enabled), -errno.
 */
int rt_uffd_api(int uffd, uint64_t want, uint64_t *got)
{
	struct uffdio_api api = { .api = UFFD_API };
	int probe = rt_uffd_open(O_CLOEXEC);

	if (probe >= 0) {
		if (!ioctl(probe, UFFDIO_API, &api))
			want &= api.features;
		close(probe);
	}
	api = (struct uffdio_api){ .api = UFFD_API, .features = want };
	if (ioctl(uffd, UFFDIO_API, &api))
		return -errno;
	*got = api.features & want;
	return 0;
}

/**
 * rt_uffd_register() - register [@start, @start + @len) in MISSING mode
 * (whole VMAs only, or the range splits them). Return: 0, -errno.
 */
int rt_uffd_register(int uffd, uint64_t start, uint64_t len)
{
	struct uffdio_register r = {
		.range = { .start = start, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};

	return ioctl(uffd, UFFDIO_REGISTER, &r) ? -errno : 0;
}

/**
 * rt_uffd_unregister() - unregister [@start, @start + @len), waking the
 * threads waiting on a fault there; no event is raised. Return: 0, -errno.
 */
int rt_uffd_unregister(int uffd, uint64_t start, uint64_t len)
{
	struct uffdio_range r = { .start = start, .len = len };

	return ioctl(uffd, UFFDIO_UNREGISTER, &r) ? -errno : 0;
}

/** rt_uffd_wake() - wake the threads waiting on a fault in [@addr, @addr + @len). */
void rt_uffd_wake(int uffd, uint64_t addr, uint64_t len)
{
	struct uffdio_range r = { .start = addr, .len = len };

	ioctl(uffd, UFFDIO_WAKE, &r);
}

/**
 * rt_uffd_copy() - serve a run: UFFDIO_COPY @len bytes from @src to @dst,
 * waking the waiters. A run that fails with nothing copied for another
 * reason than EAGAIN or EEXIST (it crosses into another VMA) is retried as
 * its first page alone; if that fails too, the waiters on @dst are woken.
 * Return: 0 and *@done = @len; -errno with *@done the bytes copied.
 */
int rt_uffd_copy(int uffd, uint64_t dst, const void *src, uint64_t len, uint64_t *done)
{
	struct uffdio_copy c = { .dst = dst, .src = (uint64_t)(uintptr_t)src, .len = len };
	int err = ioctl(uffd, UFFDIO_COPY, &c) ? -errno : 0;

	*done = err ? (c.copy > 0 ? (uint64_t)c.copy : 0) : len;
	if (!err || err == -EAGAIN || err == -EEXIST || *done)
		return err;
	if (len > RT_UFFD_PAGE)
		return rt_uffd_copy(uffd, dst, src, RT_UFFD_PAGE, done);
	rt_uffd_wake(uffd, dst, RT_UFFD_PAGE);
	return err;
}

/**
 * rt_uffd_poison() - map a poison marker (SIGBUS: the data was lost) at
 * [@addr, @addr + @len), waking the waiters. Return: 0, -EAGAIN, -errno.
 */
int rt_uffd_poison(int uffd, uint64_t addr, uint64_t len)
{
	struct uffdio_poison p = { .range = { .start = addr, .len = len } };

	return ioctl(uffd, UFFDIO_POISON, &p) ? -errno : 0;
}

/* Whether the page at @dst was moved from @src: its destination is mapped
 * and its source is not (mincore()). */
static bool page_moved(uint64_t dst, uint64_t src)
{
	unsigned char d, s;

	return !mincore((void *)(uintptr_t)dst, RT_UFFD_PAGE, &d) &&
	       !mincore((void *)(uintptr_t)src, RT_UFFD_PAGE, &s) && (d & 1) && !(s & 1);
}

/*
 * After a failed UFFDIO_MOVE of @len bytes from @src to @dst, of which the
 * kernel reported @done moved: the bytes really moved. The kernel's count
 * can be short (6.18): move_pages() retries a step that met a PTE change
 * with its error still -EAGAIN, so the next step moves its pages uncounted
 * and its retry then fails with -EEXIST. A page counts as moved when its
 * destination is mapped and its source is not (mincore()); the caller
 * guarantees an empty @dst and holds the source's faults meanwhile. Pages
 * move in address order, so the moved ones are a prefix of the range: the
 * first page after @done, not moved, ends the look at once (a page shared
 * after a fork, EBUSY, the usual case: one page looked at, not the rest of
 * the range at every page of a shared run).
 * Return: the bytes moved (>= @done).
 */
static uint64_t moved_bytes(uint64_t dst, uint64_t src, uint64_t len, uint64_t done)
{
	unsigned char d[64], s[64];

	if (done < len && !page_moved(dst + done, src + done))
		return done;
	if (done < len)
		done += RT_UFFD_PAGE;	/* that page moved: look on from the next */
	while (done < len) {
		uint64_t n = (len - done) / RT_UFFD_PAGE;

		if (n > 64)
			n = 64;
		if (mincore((void *)(uintptr_t)(dst + done), n * RT_UFFD_PAGE, d) ||
		    mincore((void *)(uintptr_t)(src + done), n * RT_UFFD_PAGE, s))
			return done;
		for (uint64_t i = 0; i < n; i++, done += RT_UFFD_PAGE)
			if (!(d[i] & 1) || (s[i] & 1))
				return done;
	}
	return done;
}

/**
 * rt_uffd_move() - take [@src, @src + @len) out of the process with
 * UFFDIO_MOVE into @dst (registered with @uffd, empty). A write before the
 * PTE is cleared lands in the moved page; one after it faults MISSING.
 * EAGAIN with nothing moved is retried @tries times, 50 us apart. After a
 * failure the count is checked against the pages (moved_bytes()): pages
 * moved past the kernel's count make a partial move (-EAGAIN: the caller
 * moves the rest again, for its real error), or a success if all moved.
 * Context: not the thread that reads @uffd's events when @tries > 0;
 * nothing may serve a fault in [@src, @src + @len) meanwhile.
 * Return: 0 and *@done = @len; -errno with *@done the bytes moved (EBUSY:
 * a page shared copy-on-write; ENOENT: a hole; EAGAIN).
 */
int rt_uffd_move(int uffd, uint64_t dst, uint64_t src, uint64_t len, int tries,
		 uint64_t *done)
{
	struct uffdio_move mv = { .dst = dst, .src = src, .len = len };
	uint64_t real;
	int err;

	while ((err = ioctl(uffd, UFFDIO_MOVE, &mv) ? -errno : 0) == -EAGAIN && mv.move <= 0 &&
	       tries-- > 0) {
		usleep(50);
		mv.move = 0;
	}
	*done = err ? (mv.move > 0 ? (uint64_t)mv.move : 0) : len;
	if (!err)
		return 0;
	real = moved_bytes(dst, src, len, *done);
	if (real > *done) {
		*done = real;
		err = real == len ? 0 : -EAGAIN;
	}
	return err;
}
