/* SPDX-License-Identifier: MIT */
/*
 * Output files named on the command line (see outfile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/outfile.h"

/*
 * Print why @path could not be opened. O_NOFOLLOW reports a symlink as
 * ELOOP and O_NONBLOCK a FIFO without reader as ENXIO, both misleading:
 * lstat() names what is there instead (a report only, decided nothing).
 */
static void open_failed(const char *what, const char *path, int err)
{
	struct stat st;

	if (err != ENOENT && !lstat(path, &st) && S_ISLNK(st.st_mode))
		fprintf(stderr, "%s %s: is a symbolic link; refusing to write through it\n",
			what, path);
	else if (err != ENOENT && !lstat(path, &st) && !S_ISREG(st.st_mode))
		fprintf(stderr, "%s %s: exists and is not a regular file\n", what, path);
	else
		fprintf(stderr, "%s %s: %s\n", what, path, strerror(err));
}

/**
 * cli_open_output() - open a file the command writes, for writing
 * @what: the message prefix, the command and its option ("uswap run: --json")
 * @path: the file
 * @created: set to whether this call created @path (may be NULL)
 *
 * Creates @path with O_CREAT | O_EXCL, mode 0600 (less the umask); if it
 * exists, opens it with O_NOFOLLOW and keeps it only if fstat() shows a
 * regular file with one link, owned by the effective uid. The content is
 * left as it is (no O_TRUNC): the caller truncates when it writes. The
 * descriptor is close-on-exec and blocking.
 *
 * Context: process context; prints the reason of a failure on stderr.
 * Return: the descriptor; -ELOOP (a final symlink), -EINVAL (not a
 * regular file), -EMLINK (another hard link), -EPERM (someone else's
 * file), or the -errno of open().
 */
int cli_open_output(const char *what, const char *path, bool *created)
{
	struct stat st;
	int fd, err;

	if (created)
		*created = false;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (created)
			*created = true;
		return fd;
	}
	if (errno != EEXIST) {
		err = errno;
		open_failed(what, path, err);
		return -err;
	}
	/* O_NONBLOCK: a FIFO put there does not hang us; cleared below. */
	fd = open(path, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		open_failed(what, path, err);
		return -err;
	}
	if (fstat(fd, &st) < 0) {
		err = -errno;
		fprintf(stderr, "%s %s: cannot stat: %s\n", what, path, strerror(-err));
	} else if (!S_ISREG(st.st_mode)) {
		err = -EINVAL;
		fprintf(stderr, "%s %s: exists and is not a regular file\n", what, path);
	} else if (st.st_nlink != 1) {
		err = -EMLINK;
		fprintf(stderr, "%s %s: exists with %lu hard links; refusing a file "
			"linked elsewhere\n", what, path, (unsigned long)st.st_nlink);
	} else if (st.st_uid != geteuid()) {
		err = -EPERM;
		fprintf(stderr, "%s %s: exists and belongs to uid %u, not to uid %u\n",
			what, path, (unsigned int)st.st_uid, (unsigned int)geteuid());
	} else if (fcntl(fd, F_SETFL, 0) < 0) {
		err = -errno;
		fprintf(stderr, "%s %s: %s\n", what, path, strerror(-err));
	} else {
		return fd;
	}
	close(fd);
	return err;
}
