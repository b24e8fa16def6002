/* SPDX-License-Identifier: MIT */
/*
 * swapon and swapoff of real devices: a file or block device carrying a
 * Linux swap header, or a compressed-memory device given by a spec. The
 * header is read through the device's backend, checked as the kernel does
 * (swap_header.c), and the device is created with its bad slots marked in
 * the swap table (swap_device.c).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/backend.h"
#include "swap/swap_header.h"
#include "swap/swap_internal.h"
#include "swap/swap_io.h"
#include "swap/swapon.h"
#include "util/alloc.h"

static int swap_discard_slots(struct swap_info_struct *si, uint64_t offset, uint64_t nr)
{
	return swap_backend_discard(si->bdev, offset, nr);
}

/* Freed slots release their data at once (zram frees its memory). */
static void swap_free_slots_notify(struct swap_info_struct *si, uint64_t offset, unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < nr; i++)
		swap_backend_slot_free_notify(si->bdev, offset + i);
}

/* The file a swapon claims (see swap_inode_claim()). */
struct swapon_claim {
	uint64_t dev, ino;
};

/*
 * Swap on the area held by @be: read and check its header, then create the
 * device. On success the device owns @be and @claim (if any). Context: may
 * sleep.
 */
static int swapon_backend(struct swap_backend *be, const char *path,
			  const struct swapon_claim *claim, int flags,
			  const struct swap_design_ops *design, char *err, size_t errlen)
{
	struct uswap_swap_header *h;
	struct swap_device_params p = { 0 };
	uint64_t usable, max_slots;
	void *page;
	int ret;

	page = uswap_aligned_alloc(USWAP_PAGE_SIZE, USWAP_PAGE_SIZE);
	h = uswap_calloc(1, sizeof(*h));
	if (!page || !h) {
		free(page);
		free(h);
		return -ENOMEM;
	}
	ret = swap_backend_read(be, 0, 1, page);
	if (ret) {
		snprintf(err, errlen, "reading the swap header: %s", strerror(-ret));
		goto out;
	}
	ret = uswap_swap_header_parse(page, h, err, errlen);
	if (ret)
		goto out;
	ret = uswap_swap_header_validate(h, be->nr_slots, &usable, &max_slots, err, errlen);
	if (ret)
		goto out;
	p.nr_pages = max_slots;
	p.badpages = h->badpages;
	p.nr_badpages = h->nr_badpages;
	p.flags = flags | (be->synchronous ? USWAP_FLAG_SYNCHRONOUS : 0) |
		  (be->rotational ? USWAP_FLAG_ROTATIONAL : 0);
	p.bdev = be;
	p.path = path;
	p.discard = swap_discard_slots;
	p.slots_freed = swap_free_slots_notify;
	p.design = design;
	if (claim) {
		p.claimed = true;
		p.claim_dev = claim->dev;
		p.claim_ino = claim->ino;
	}
	ret = swap_io_ctx_create(be, &p.io);
	if (ret) {
		snprintf(err, errlen, "starting the I/O completion thread: %s", strerror(-ret));
		goto out;
	}
	ret = swap_device_create(&p, err, errlen);
	if (ret < 0)
		swap_io_ctx_destroy(p.io);
out:
	free(page);
	free(h);
	return ret;
}

/**
 * uswap_swapon_backend() - swap on an area held by a backend the caller
 * built (tests: a fault-injection wrapper around zram or a file).
 * @be: the backend; slot 0 must already hold a swap header (nothing is
 *      written here)
 * @flags: SWAP_FLAG_* / USWAP_FLAG_*; USWAP_FLAG_SYNCHRONOUS is added when
 *         @be->synchronous
 * @err: receives the reason of a failure (may be NULL when @errlen is 0)
 *
 * Context: may sleep. Return: the device type (>= 0), owning @be from
 * then on; or as uswap_swapon() (-EINVAL bad header, -EPERM, -ENOMEM,
 * the header read's error), and then @be is still the caller's.
 */
int uswap_swapon_backend(struct swap_backend *be, int flags, char *err, size_t errlen)
{
	if (!be)
		return -EINVAL;
	return swapon_backend(be, NULL, NULL, flags, &swap_table_ops, err, errlen);
}

/*
 * Whether the swap file behind @be is safe to hold programs' memory: a
 * regular file that only its owner, the user swapping on it, can read or
 * write (a block device's access is the administrator's; it is not
 * checked). Read from the descriptor. Context: any. Return: 0 or -EPERM
 * (@err says why).
 */
static int swapon_file_private(struct swap_backend *be, const char *path, char *err, size_t errlen)
{
	struct stat st;
	int ret = swap_backend_file_stat(be, &st);

	if (ret) {
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	if (!S_ISREG(st.st_mode))
		return 0;
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(err, errlen,
			 "%s: mode %04o lets other users at it, and a swap file holds programs' memory (chmod 600 it)",
			 path, (unsigned int)(st.st_mode & 07777));
		return -EPERM;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s: owned by uid %u, who could read and change it (want uid %u)",
			 path, (unsigned int)st.st_uid, (unsigned int)geteuid());
		return -EPERM;
	}
	return 0;
}

/*
 * swapon_path_design() with the disk's kind forced (@rotational 0 or 1, a
 * spec's ",rotational=N") or read from sysfs by the file backend (-1), and
 * the pages sealed with @cipher (SWAP_CRYPT_NONE: as they are). The file is
 * claimed within this process (swap_inode_claim()) and across processes
 * (swap_backend_file_lock()), and must be private to its owner.
 * Context: may sleep. Return: as swapon_path_design(); -EPERM for a file
 * others can reach.
 */
static int swapon_path_rot(const char *path, int flags, int rotational,
			   enum swap_crypt_cipher cipher, const struct swap_design_ops *design,
			   char *err, size_t errlen)
{
	struct swapon_claim claim;
	struct swap_backend *be;
	char *real;
	struct stat st;
	int ret;

	if (!path)
		return -EINVAL;
	if (stat(path, &st)) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return ret;
	}
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file or block device", path);
		return -EINVAL;
	}
	real = realpath(path, NULL);
	if (!real)
		return -ENOMEM;
	ret = swap_backend_file_open(real, 0, &be);
	if (ret) {
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		free(real);
		return ret;
	}
	/*
	 * Claim what the descriptor opened, not what the path named a moment
	 * ago: with a rename between a stat and the open, two swapons could
	 * otherwise claim different inodes and write to the same one.
	 */
	ret = swap_backend_file_identity(be, &claim.dev, &claim.ino);
	if (!ret)
		ret = swap_inode_claim(claim.dev, claim.ino);
	if (ret) {
		snprintf(err, errlen, "%s: %s", path,
			 ret == -EBUSY ? "already swapped on" : strerror(-ret));
		goto out_destroy;
	}
	ret = swap_backend_file_lock(be);
	if (ret)
		snprintf(err, errlen, "%s: %s", path,
			 ret == -EBUSY ? "in use by another process (it holds the file's swap lock)" :
					 strerror(-ret));
	if (!ret)
		ret = swapon_file_private(be, path, err, errlen);
	if (!ret && rotational >= 0)
		be->rotational = rotational;
	if (!ret)
		ret = swap_backend_encrypt(&be, cipher, err, errlen);
	if (!ret)
		ret = swapon_backend(be, real, &claim, flags, design, err, errlen);
	if (ret < 0)
		swap_inode_release(claim.dev, claim.ino);
out_destroy:
	if (ret < 0)
		swap_backend_destroy(be);
	free(real);
	return ret;
}

/**
 * swapon_path_design() - swap on a file or block device with a given slot
 * design (&swap_table_ops or another, swap_design_lookup()). The file is
 * claimed by identity first, so that of concurrent swapons of one file (by
 * any of its names) one wins. A file on a rotational disk swaps on as
 * rotational (the kernel's nr_rotate_swap, SWP_SOLIDSTATE off).
 * Context: may sleep. Return: type or -errno (-EBUSY: already swapped on,
 * or being swapped on).
 */
int swapon_path_design(const char *path, int flags, const struct swap_design_ops *design,
		       char *err, size_t errlen)
{
	return swapon_path_rot(path, flags, -1, (flags & USWAP_FLAG_ENCRYPT) ? SWAP_CRYPT_AUTO :
			       SWAP_CRYPT_NONE, design, err, errlen);
}

/** uswap_swapon_ex() - see uswap/swap.h. */
USWAP_API int uswap_swapon_ex(const char *path, int flags, char *err, size_t errlen)
{
	return swapon_path_design(path, flags, &swap_table_ops, err, errlen);
}

/** uswap_swapon() - see uswap/swap.h. */
USWAP_API int uswap_swapon(const char *path, int flags)
{
	char err[256] = "";
	int ret = uswap_swapon_ex(path, flags, err, sizeof(err));

	if (ret < 0 && err[0])
		uswap_warn("swapon: %s", err);
	return ret;
}

/**
 * swapon_spec_design() - swap on a device spec with a given slot design.
 * A zram device is created with a header of its own (random UUID, label
 * "uswap-zram") in slot 0. Context: may sleep. Return: type or -errno.
 */
int swapon_spec_design(const char *spec, int flags, const struct swap_design_ops *design,
		       char *err, size_t errlen)
{
	struct swap_backend_spec sp;
	struct swap_backend *be;
	uint8_t uuid[16];
	void *page;
	int ret;

	ret = swap_backend_spec_parse(spec, &sp, err, errlen);
	if (ret)
		return ret;
	if (sp.kind != SWAP_BACKEND_ZRAM && sp.discard)
		flags |= SWAP_FLAG_DISCARD;
	if (sp.kind == SWAP_BACKEND_FILE)	/* never in a fault wrapper: parse refuses it */
		return swapon_path_rot(sp.path, flags, sp.rotational, sp.encrypt, design,
				       err, errlen);
	ret = swap_backend_open_spec(spec, &be, err, errlen);
	if (ret)
		return ret;
	if (sp.kind == SWAP_BACKEND_ZRAM) {
		if (be->nr_slots - 1 > UINT32_MAX) {
			snprintf(err, errlen, "%s: larger than a swap header can describe", spec);
			swap_backend_destroy(be);
			return -EINVAL;
		}
		page = uswap_aligned_alloc(USWAP_PAGE_SIZE, USWAP_PAGE_SIZE);
		if (!page || getrandom(uuid, sizeof(uuid), 0) != sizeof(uuid)) {
			free(page);
			swap_backend_destroy(be);
			return -ENOMEM;
		}
		uuid[6] = (uuid[6] & 0x0f) | 0x40;
		uuid[8] = (uuid[8] & 0x3f) | 0x80;
		ret = uswap_swap_header_build(page, (uint32_t)(be->nr_slots - 1), NULL, 0, uuid,
					      "uswap-zram");
		if (!ret)
			ret = swap_backend_write(be, 0, 1, page);
		free(page);
		if (ret) {
			snprintf(err, errlen, "%s: writing the header: %s", spec, strerror(-ret));
			swap_backend_destroy(be);
			return ret;
		}
	}
	ret = swapon_backend(be, NULL, NULL, flags, design, err, errlen);
	if (ret < 0)
		swap_backend_destroy(be);
	return ret;
}

/** uswap_swapon_spec() - see uswap/swap.h. */
USWAP_API int uswap_swapon_spec(const char *spec, int flags, char *err, size_t errlen)
{
	return swapon_spec_design(spec, flags, &swap_table_ops, err, errlen);
}

/** uswap_swapoff() - see uswap/swap.h. */
USWAP_API int uswap_swapoff(const char *path)
{
	unsigned int type;
	char *real;

	if (!path)
		return -EINVAL;
	real = realpath(path, NULL);
	if (!real)
		return -ENOENT;
	for (type = 0; type < MAX_SWAPFILES; type++) {
		struct swap_info_struct *si = atomic_load(&swap_info[type]);
		bool match = false;

		if (si && swap_device_tryget(si)) {
			match = si->path && !strcmp(si->path, real);
			put_swap_device(si);
		}
		if (match) {
			free(real);
			return uswap_swapoff_type(type);
		}
	}
	free(real);
	return -EINVAL;
}
