/* SPDX-License-Identifier: MIT */
/*
 * The userfaultfd and PAGEMAP_SCAN definitions that older headers lack
 * (Debian 12's), with the kernel's values.
 */
#ifndef USWAP_RUNTIME_UFFD_COMPAT_H
#define USWAP_RUNTIME_UFFD_COMPAT_H

#include <linux/types.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>

#ifndef UFFD_FEATURE_POISON
#define UFFD_FEATURE_POISON		(1 << 14)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC		(1 << 15)
#endif
#ifndef UFFD_FEATURE_MOVE
#define UFFD_FEATURE_MOVE		(1 << 16)
#endif

#ifndef UFFDIO_MOVE
#define _UFFDIO_MOVE			(0x05)
struct uffdio_move {
	__u64 dst;
	__u64 src;
	__u64 len;
#define UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES	((__u64)1 << 1)
	__u64 mode;
	__s64 move;			/* bytes moved, or -errno */
};
#define UFFDIO_MOVE	_IOWR(UFFDIO, _UFFDIO_MOVE, struct uffdio_move)
#endif

#ifndef UFFDIO_POISON
#define _UFFDIO_POISON			(0x08)
struct uffdio_poison {
	struct uffdio_range range;
	__u64 mode;
	__s64 updated;			/* bytes poisoned, or -errno */
};
#define UFFDIO_POISON	_IOWR(UFFDIO, _UFFDIO_POISON, struct uffdio_poison)
#endif

/* PAGEMAP_SCAN (<linux/fs.h>, kernel 6.7+), on /proc/PID/pagemap. */
#ifndef PAGEMAP_SCAN
#define PAGE_IS_WRITTEN		(1 << 1)
#define PAGE_IS_PRESENT		(1 << 3)
#define PAGE_IS_SWAPPED		(1 << 4)
struct page_region {
	__u64 start;
	__u64 end;
	__u64 categories;
};
#define PM_SCAN_WP_MATCHING	(1 << 0)	/* write-protect the pages matched */
#define PM_SCAN_CHECK_WPASYNC	(1 << 1)	/* fail unless the VMAs have WP_ASYNC */
struct pm_scan_arg {
	__u64 size;
	__u64 flags;
	__u64 start;
	__u64 end;
	__u64 walk_end;
	__u64 vec;
	__u64 vec_len;
	__u64 max_pages;
	__u64 category_inverted;
	__u64 category_mask;
	__u64 category_anyof_mask;
	__u64 return_mask;
};
#define PAGEMAP_SCAN	_IOWR('f', 16, struct pm_scan_arg)
#endif

#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC		0xAA
#define USERFAULTFD_IOC_NEW	_IO(USERFAULTFD_IOC, 0x00)
#endif

#endif
