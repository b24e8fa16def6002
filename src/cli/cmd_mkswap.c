/* SPDX-License-Identifier: MIT */
/*
 * uswap mkswap: write a version 1 swap header that util-linux tools
 * (blkid, swaplabel, swapon) and the kernel read as their own.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>

#include "cli/commands.h"
#include "io/backend.h"
#include "swap/swap_header.h"
#include "util/debug.h"
#include "util/size.h"
#include "util/uuid.h"

#define PROG "uswap mkswap"

struct mkswap_opts {
	const char *path;
	const char *size_arg;		/* NULL: use the existing file's size */
	char label[USWAP_SWAP_LABEL_SIZE];	/* at most 15 bytes and a NUL */
	bool has_label;
	uint8_t uuid[USWAP_UUID_SIZE];
	uint32_t bad[MAX_SWAP_BADPAGES];
	uint32_t nr_bad;
	bool force;			/* --force: any existing regular file */
};

static void mkswap_usage(FILE *out)
{
	fprintf(out,
		"usage: uswap mkswap [-f] [-L LABEL] [-U UUID] [--badpages N,N,...] FILE [SIZE]\n"
		"       uswap mkswap [options] NBD-URI [SIZE]\n"
		"\n"
		"Write a Linux swap header (version 1) on FILE, a regular file or a\n"
		"block device. With SIZE, a new regular file is created (mode 0600) at\n"
		"SIZE bytes (suffixes K, M, G, T, binary: 16M = 16 MiB; sparse);\n"
		"without it the existing size is used. At least %d pages of 4 KiB.\n"
		"FILE is never followed through a symbolic link. An existing regular\n"
		"file is taken (and with SIZE resized) only if it already holds a swap\n"
		"area (the SWAPSPACE2 signature), has no other hard link and is the\n"
		"caller's; --force takes any existing regular file.\n"
		"An NBD export (nbd://HOST[:PORT]/EXPORT, nbd+unix:///EXPORT?socket=PATH)\n"
		"is formatted in place: its size, or SIZE if no larger.\n"
		"\n"
		"  -f, --force           overwrite (and resize) an existing regular file\n"
		"                        that is not a swap area, has other hard links or\n"
		"                        belongs to someone else\n"
		"  -L, --label LABEL     volume label, at most 15 bytes (longer is cut)\n"
		"  -U, --uuid UUID       UUID text, 'random' (default) or 'clear'\n"
		"      --badpages LIST   comma-separated page numbers to mark bad\n",
		USWAP_SWAP_MIN_PAGES);
}

/* Comma-separated decimal page numbers into @o->bad. Context: option
 * parsing. Return: 0, -EINVAL (not a number), -ERANGE (above
 * UINT32_MAX), -E2BIG (more than MAX_SWAP_BADPAGES). */
static int parse_badpages(const char *s, struct mkswap_opts *o)
{
	const char *p = s;

	while (*p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		uint64_t v;
		int ret;

		if (o->nr_bad == MAX_SWAP_BADPAGES)
			return -E2BIG;
		ret = uswap_parse_count_n(p, len, &v);
		if (ret)
			return ret;
		if (v > UINT32_MAX)
			return -ERANGE;
		o->bad[o->nr_bad++] = (uint32_t)v;
		p += len + (comma ? 1 : 0);
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct mkswap_opts *o)
{
	static const struct option longopts[] = {
		{ "label", required_argument, NULL, 'L' },
		{ "uuid", required_argument, NULL, 'U' },
		{ "badpages", required_argument, NULL, 'b' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *uuid_arg = NULL;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "fL:U:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'L':
			if (strlen(optarg) >= USWAP_SWAP_LABEL_SIZE)
				fprintf(stderr, PROG ": warning: label '%s' cut to %d bytes\n",
					optarg, USWAP_SWAP_LABEL_SIZE - 1);
			snprintf(o->label, sizeof(o->label), "%s", optarg);
			o->has_label = o->label[0] != '\0';
			break;
		case 'U':
			uuid_arg = optarg;
			break;
		case 'f':
			o->force = true;
			break;
		case 'b':
			ret = parse_badpages(optarg, o);
			if (ret) {
				fprintf(stderr, PROG ": bad --badpages list '%s': %s\n", optarg,
					ret == -E2BIG ? "more than 637 pages" :
					ret == -ERANGE ? "a page number is above 4294967295" :
					"expected page numbers separated by commas");
				return -EINVAL;
			}
			break;
		case 'h':
			mkswap_usage(stdout);
			return 1;
		default:
			mkswap_usage(stderr);
			return -EINVAL;
		}
	}
	if (argc - optind < 1 || argc - optind > 2) {
		mkswap_usage(stderr);
		return -EINVAL;
	}
	o->path = argv[optind];
	o->size_arg = argc - optind == 2 ? argv[optind + 1] : NULL;

	if (!uuid_arg || !strcmp(uuid_arg, "random")) {
		ret = uswap_uuid_generate(o->uuid);
		if (ret) {
			fprintf(stderr, PROG ": cannot make a random UUID: %s\n", strerror(-ret));
			return ret;
		}
	} else if (!strcmp(uuid_arg, "clear")) {
		memset(o->uuid, 0, sizeof(o->uuid));
	} else if (uswap_uuid_parse(uuid_arg, o->uuid)) {
		fprintf(stderr, PROG ": bad UUID '%s': expected xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx\n",
			uuid_arg);
		return -EINVAL;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/*
 * Keep a DOS/GPT protective MBR in the boot bits of a block device, as
 * mkswap does when it sees a partition table: swap on a whole disk that
 * still carries one is more likely a mistake than the intent.
 */
static void keep_partition_table(int fd, const char *path, uint8_t *page)
{
	uint8_t boot[1024];

	if (pread(fd, boot, sizeof(boot), 0) != (ssize_t)sizeof(boot))
		return;
	if (boot[510] != 0x55 || boot[511] != 0xaa)
		return;
	fprintf(stderr, PROG ": warning: %s has a partition table in its first sector; "
		"keeping the boot bits\n", path);
	memcpy(page, boot, sizeof(boot));
}

/* Build and check the header page for @size bytes; *@usable pages.
 * Context: any; prints the reason of a failure. Return: 0 or -errno. */
static int mkswap_build(const struct mkswap_opts *o, uint64_t size, uint8_t *page,
			uint64_t *usable)
{
	struct uswap_swap_header h;
	uint64_t pages;
	char err[256];
	int ret;

	pages = size / USWAP_SWAP_HEADER_SIZE;
	if (pages < USWAP_SWAP_MIN_PAGES) {
		fprintf(stderr, PROG ": %s: swap space needs at least %d pages (%d KiB); "
			"size %llu bytes is %llu pages\n", o->path, USWAP_SWAP_MIN_PAGES,
			USWAP_SWAP_MIN_PAGES * USWAP_SWAP_HEADER_SIZE / 1024,
			(unsigned long long)size, (unsigned long long)pages);
		return -EINVAL;
	}
	if (pages > (uint64_t)UINT32_MAX + 1) {
		fprintf(stderr, PROG ": warning: %s: %llu pages is more than a swap header "
			"can describe; using %llu\n", o->path, (unsigned long long)pages,
			(unsigned long long)UINT32_MAX + 1);
		pages = (uint64_t)UINT32_MAX + 1;
	}

	ret = uswap_swap_header_build(page, (uint32_t)(pages - 1), o->bad, o->nr_bad, o->uuid,
				      o->has_label ? o->label : NULL);
	if (ret) {
		fprintf(stderr, PROG ": cannot build the header: %s\n", strerror(-ret));
		return ret;
	}
	/* Refuse what swapon would refuse, before the file is touched. */
	ret = uswap_swap_header_parse(page, &h, err, sizeof(err));
	if (!ret)
		ret = uswap_swap_header_validate(&h, pages, usable, NULL, err, sizeof(err));
	if (ret) {
		fprintf(stderr, PROG ": %s: %s\n", o->path, err);
		return ret;
	}
	return 0;
}

/* Print what was set up, as util-linux mkswap does. Context: any.
 * Return: nothing. */
static void mkswap_report(const struct mkswap_opts *o, uint64_t usable)
{
	char uuid_text[USWAP_UUID_STR_SIZE];

	uswap_uuid_format(o->uuid, uuid_text);
	printf("Setting up swapspace version 1, size = %llu KiB (%llu bytes)\n",
	       (unsigned long long)(usable * USWAP_SWAP_HEADER_SIZE / 1024),
	       (unsigned long long)(usable * USWAP_SWAP_HEADER_SIZE));
	if (o->has_label)
		printf("LABEL=%s, UUID=%s\n", o->label, uuid_text);
	else
		printf("no label, UUID=%s\n", uuid_text);
}

static int mkswap(const struct mkswap_opts *o, uint64_t size, int fd, const struct stat *st)
{
	static uint8_t page[USWAP_SWAP_HEADER_SIZE];
	uint64_t usable;
	int ret;

	ret = mkswap_build(o, size, page, &usable);
	if (ret)
		return ret;
	if (S_ISREG(st->st_mode) && o->size_arg && ftruncate(fd, (off_t)size) < 0) {
		ret = -errno;
		fprintf(stderr, PROG ": %s: cannot set the size to %llu bytes: %s\n", o->path,
			(unsigned long long)size, strerror(-ret));
		return ret;
	}
	if (S_ISBLK(st->st_mode))
		keep_partition_table(fd, o->path, page);
	ret = write_all(fd, page, sizeof(page), 0);
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	if (ret) {
		fprintf(stderr, PROG ": %s: cannot write the header: %s\n", o->path, strerror(-ret));
		return ret;
	}
	mkswap_report(o, usable);
	return 0;
}

/*
 * mkswap on an NBD export (nbd:// or nbd+unix:// URI): the export's size,
 * or SIZE if given and no larger; the header goes to slot 0 and is flushed.
 * Nothing is written when anything is wrong. Context: sleeps (network).
 * Return: 0 or -errno.
 */
static int mkswap_nbd(const struct mkswap_opts *o, uint64_t size)
{
	static uint8_t page[USWAP_SWAP_HEADER_SIZE] __attribute__((aligned(4096)));
	struct swap_backend *be;
	uint64_t usable, dev_size;
	char err[512];
	int ret;

	ret = swap_backend_open_spec(o->path, &be, err, sizeof(err));
	if (ret) {
		fprintf(stderr, PROG ": %s\n", err);
		return ret;
	}
	dev_size = be->nr_slots * USWAP_SWAP_HEADER_SIZE;
	if (o->size_arg && size > dev_size) {
		fprintf(stderr, PROG ": %s: SIZE %llu bytes is larger than the export "
			"(%llu bytes)\n", o->path, (unsigned long long)size,
			(unsigned long long)dev_size);
		ret = -EINVAL;
		goto out;
	}
	ret = mkswap_build(o, o->size_arg ? size : dev_size, page, &usable);
	if (ret)
		goto out;
	ret = swap_backend_write(be, 0, 1, page);
	if (!ret)
		ret = swap_backend_flush(be);
	if (ret) {
		fprintf(stderr, PROG ": %s: cannot write the header: %s\n", o->path, strerror(-ret));
		goto out;
	}
	mkswap_report(o, usable);
out:
	swap_backend_destroy(be);
	return ret;
}

/* Whether the open file @fd holds a swap signature: "SWAPSPACE2" in the
 * last 10 bytes of its first page, at uswap's page size or the host's.
 * Context: process context; blocking reads. Return: true if it does. */
static bool has_swap_signature(int fd)
{
	off_t offs[2] = { USWAP_SWAP_HDR_MAGIC_OFF, (off_t)sysconf(_SC_PAGESIZE) - USWAP_SWAP_MAGIC_LEN };
	char magic[USWAP_SWAP_MAGIC_LEN];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(offs); i++)
		if (offs[i] > 0 &&
		    pread(fd, magic, sizeof(magic), offs[i]) == (ssize_t)sizeof(magic) &&
		    !memcmp(magic, USWAP_SWAP_MAGIC, USWAP_SWAP_MAGIC_LEN))
			return true;
	return false;
}

/*
 * Open @o->path for writing the header: with SIZE a new file is created
 * (O_CREAT | O_EXCL, mode 0600), else, or if it exists, the existing one
 * is opened; never through a final symlink (O_NOFOLLOW, which also keeps
 * O_CREAT | O_EXCL off a dangling link). *@created says which.
 * Context: process context; prints the reason of a failure.
 * Return: the descriptor (close-on-exec, blocking), or -errno.
 */
static int mkswap_open(const struct mkswap_opts *o, bool *created)
{
	struct stat lst;
	int fd, err;

	*created = false;
	if (o->size_arg) {
		fd = open(o->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			*created = true;
			return fd;
		}
		if (errno != EEXIST)
			goto fail;
	}
	/* O_NONBLOCK: a FIFO or a device does not hang the open; cleared below. */
	fd = open(o->path, O_RDWR | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		goto fail;
	if (fcntl(fd, F_SETFL, 0) < 0) {
		err = -errno;
		close(fd);
		fprintf(stderr, PROG ": %s: %s\n", o->path, strerror(-err));
		return err;
	}
	return fd;
fail:
	err = -errno;
	if (err != -ENOENT && !lstat(o->path, &lst) && S_ISLNK(lst.st_mode))
		fprintf(stderr, PROG ": %s is a symbolic link; refusing to follow it "
			"(give the path of the file itself)\n", o->path);
	else if (err == -ENOENT && !o->size_arg)
		fprintf(stderr, PROG ": %s does not exist: give a SIZE to create it\n", o->path);
	else
		fprintf(stderr, PROG ": cannot open %s: %s\n", o->path, strerror(-err));
	return err;
}

/*
 * Whether the existing regular file @fd (stat @st) may be overwritten
 * without --force: it already holds a swap area, has no other hard link
 * and belongs to the caller. Anything else could be a file someone
 * pointed us at (a hard link to /etc/shadow, a file of theirs), and the
 * header and the resize would destroy it.
 * Context: process context; blocking reads; prints the reason.
 * Return: 0 or -EPERM.
 */
static int mkswap_check_existing(const struct mkswap_opts *o, int fd, const struct stat *st)
{
	if (o->force)
		return 0;
	if (st->st_nlink > 1) {
		fprintf(stderr, PROG ": %s has %lu hard links: writing it would change the file "
			"under its other names too; refusing without --force\n", o->path,
			(unsigned long)st->st_nlink);
		return -EPERM;
	}
	if (st->st_uid != geteuid()) {
		fprintf(stderr, PROG ": %s belongs to uid %u, not to uid %u; refusing without "
			"--force\n", o->path, (unsigned int)st->st_uid, (unsigned int)geteuid());
		return -EPERM;
	}
	if (!has_swap_signature(fd)) {
		fprintf(stderr, PROG ": %s exists and is not a swap area (no SWAPSPACE2 "
			"signature); refusing to overwrite it without --force\n", o->path);
		return -EPERM;
	}
	return 0;
}

/**
 * cmd_mkswap() - the "uswap mkswap" subcommand
 * @argc: argument count, argv[0] included
 * @argv: "mkswap", options, FILE and optional SIZE
 *
 * Creates FILE (mode 0600) at SIZE, or uses an existing regular file
 * (resized to SIZE if given) or block device at its size; writes the
 * header page and fsyncs. Never opens FILE through a final symlink; an
 * existing regular file must be a swap area with one link, owned by the
 * caller, unless --force. A file it created is removed again if it fails.
 *
 * Context: process context; blocking I/O.
 * Return: exit status, 0 on success, 1 on any error.
 */
int cmd_mkswap(int argc, char **argv)
{
	struct mkswap_opts o = { 0 };
	bool created = false;
	uint64_t size = 0;
	struct stat st;
	int fd, ret;

	ret = parse_args(argc, argv, &o);
	if (ret)
		return ret > 0 ? 0 : 1;
	if (o.size_arg) {
		ret = uswap_parse_size(o.size_arg, &size);
		if (!ret && size > INT64_MAX)
			ret = -ERANGE;
		if (ret) {
			fprintf(stderr, PROG ": bad SIZE '%s': %s\n", o.size_arg,
				ret == -ERANGE ? "too large" :
				"expected decimal bytes with an optional K, M, G or T suffix");
			return 1;
		}
		if (size / USWAP_SWAP_HEADER_SIZE < USWAP_SWAP_MIN_PAGES) {
			fprintf(stderr, PROG ": %s: swap space needs at least %d pages (%d KiB); "
				"SIZE %s is %llu pages\n", o.path, USWAP_SWAP_MIN_PAGES,
				USWAP_SWAP_MIN_PAGES * USWAP_SWAP_HEADER_SIZE / 1024,
				o.size_arg,
				(unsigned long long)(size / USWAP_SWAP_HEADER_SIZE));
			return 1;
		}
	}

	if (!strncmp(o.path, "nbd://", 6) || !strncmp(o.path, "nbd+unix://", 11))
		return mkswap_nbd(&o, size) ? 1 : 0;

	fd = mkswap_open(&o, &created);
	if (fd < 0)
		return 1;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		fprintf(stderr, PROG ": cannot stat %s: %s\n", o.path, strerror(-ret));
		goto out;
	}
	/* The umask may have taken bits away; the mode is exactly 0600. */
	if (created && fchmod(fd, 0600) < 0) {
		ret = -errno;
		fprintf(stderr, PROG ": cannot chmod %s: %s\n", o.path, strerror(-ret));
		goto out;
	}

	if (S_ISREG(st.st_mode)) {
		if (!created) {
			ret = mkswap_check_existing(&o, fd, &st);
			if (ret)
				goto out;
		}
		if (!o.size_arg)
			size = (uint64_t)st.st_size;
		if (st.st_mode & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH))
			fprintf(stderr, PROG ": warning: %s has insecure permissions %04o: "
				"a swap area holds process memory; use chmod 0600\n",
				o.path, (unsigned int)(st.st_mode & 07777));
	} else if (S_ISBLK(st.st_mode)) {
		uint64_t dev_size;

		if (ioctl(fd, BLKGETSIZE64, &dev_size) < 0) {
			ret = -errno;
			fprintf(stderr, PROG ": %s: cannot get the device size: %s\n", o.path,
				strerror(-ret));
			goto out;
		}
		if (o.size_arg && size > dev_size) {
			ret = -EINVAL;
			fprintf(stderr, PROG ": %s: SIZE %llu bytes is larger than the device "
				"(%llu bytes)\n", o.path, (unsigned long long)size,
				(unsigned long long)dev_size);
			goto out;
		}
		if (!o.size_arg)
			size = dev_size;
	} else {
		ret = -EINVAL;
		fprintf(stderr, PROG ": %s is not a regular file or block device\n", o.path);
		goto out;
	}

	ret = mkswap(&o, size, fd, &st);
out:
	if (close(fd) < 0 && !ret) {
		ret = -errno;
		fprintf(stderr, PROG ": %s: close: %s\n", o.path, strerror(-ret));
	}
	if (ret && created)
		unlink(o.path);
	return ret ? 1 : 0;
}
