/* SPDX-License-Identifier: MIT */
/*
 * What a shim's hello brings, checked before a session is made of it
 * (docs/SECURITY.md says why each check is there).
 * Context of everything here: the supervisor's one thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "runtime/uffd_compat.h"
#include "runtime/xfer_ctl.h"

#define PAGE	RT_PAGE

/**
 * rt_xfer_map() - map the transfer buffer @memfd a shim sent: a regular
 * file as large as the buffer, sealed against shrinking (F_SEAL_SHRINK;
 * a file that cannot take the seal is refused), so that no access can
 * raise SIGBUS here. Context: supervisor thread.
 * Return: the mapping, or a -errno cast to a pointer (IS_ERR_XFER()).
 */
char *rt_xfer_map(int memfd)
{
	struct stat st;
	char *x;
	int seals;

	if (fstat(memfd, &st))
		return (char *)(intptr_t)-errno;
	if (!S_ISREG(st.st_mode))
		return (char *)(intptr_t)-EINVAL;
	if (fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) ||
	    (seals = fcntl(memfd, F_GET_SEALS)) < 0 || !(seals & F_SEAL_SHRINK))
		return (char *)(intptr_t)-EPERM;
	/* The size is read after the seal: it can only grow from here. */
	if (fstat(memfd, &st))
		return (char *)(intptr_t)-errno;
	if (st.st_size < (off_t)RT_XFER_BYTES)
		return (char *)(intptr_t)-EINVAL;
	x = mmap(NULL, RT_XFER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (x == MAP_FAILED)
		return (char *)(intptr_t)-errno;
	madvise(x, RT_XFER_BYTES, MADV_DONTDUMP);	/* the program's pages pass here */
	return x;
}

/**
 * rt_hello_check() - the fields of hello @h a shim always sends the same
 * way: the transfer buffer's size, a staging area of exactly one batch,
 * page aligned, in user space (its faults are not counted: this bounds
 * what a program keeps out of its budget). Context: supervisor thread.
 * Return: NULL when they are right, else what is wrong.
 */
const char *rt_hello_check(const struct rt_hello *h)
{
	if (h->xfer_pages != RT_XFER_PAGES)
		return "a transfer buffer of another size";
	if (h->staging_len != (uint64_t)RT_BATCH * PAGE || (h->staging & (PAGE - 1)) ||
	    !h->staging || h->staging > rt_user_top() - h->staging_len)
		return "a staging area that is not one batch of pages in user space";
	return NULL;
}

/**
 * rt_uffd_adopt() - take the userfaultfd @uffd a shim sent: check that it
 * is one, make it non-blocking and enable @features (UFFDIO_API fails on
 * a uffd the program initialised itself). docs/SECURITY.md says why.
 * Context: supervisor thread.
 * Return: 0, or -errno (the hello is refused).
 */
int rt_uffd_adopt(int uffd, uint64_t features)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", uffd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -errno;
	link[n] = 0;
	if (strcmp(link, "anon_inode:[userfaultfd]"))
		return -EBADF;
	if (fcntl(uffd, F_SETFL, O_NONBLOCK))
		return -errno;
	if (ioctl(uffd, UFFDIO_API, &api))
		return -errno;
	return 0;
}
