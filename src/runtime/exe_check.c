/* SPDX-License-Identifier: MIT */
/*
 * Whether the shim can reach the program `uswap run` starts: only the
 * dynamic loader reads LD_PRELOAD, so a static, 32-bit or secure-mode
 * program runs without a budget (docs/RUNTIME.md, "The start-up check").
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/runtime.h"

#define RT_SCRIPT_DEPTH 4	/* the kernel's own limit on nested #! is 4 too */

/* Find @file as execvp() would: as given when it holds a '/', else in PATH.
 * Return: 0 and the path in @out, or -ENOENT. */
static int resolve(const char *file, char *out, size_t len)
{
	const char *path = getenv("PATH");

	if (strchr(file, '/')) {
		snprintf(out, len, "%s", file);
		return access(out, X_OK) ? -ENOENT : 0;
	}
	if (!path)
		path = "/bin:/usr/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		snprintf(out, len, "%.*s%s%s", (int)n, path, n ? "/" : "", file);
		if (!access(out, X_OK)) {
			struct stat st;

			if (!stat(out, &st) && S_ISREG(st.st_mode))
				return 0;
		}
		path += n + (path[n] == ':');
	}
	return -ENOENT;
}

/* Whether an exec of a file with @st changes our identity (AT_SECURE). */
static bool secure_exec(const struct stat *st)
{
	return ((st->st_mode & S_ISUID) && st->st_uid != geteuid()) ||
	       ((st->st_mode & S_ISGID) && st->st_gid != getegid());
}

/* Why the ELF image in @hdr (@n bytes read of the file at @fd) cannot load
 * the shim, or NULL: it can if 64-bit with a PT_INTERP (else it is static). */
static const char *elf_why(int fd, const unsigned char *hdr, size_t n)
{
	Elf64_Ehdr eh;

	if (hdr[EI_CLASS] != ELFCLASS64)
		return "a 32-bit program (the shim is a 64-bit object)";
	if (n < sizeof(eh))
		return "not an ELF image the loader reads";
	memcpy(&eh, hdr, sizeof(eh));
	if (eh.e_phentsize != sizeof(Elf64_Phdr))
		return "not an ELF image the loader reads";
	for (unsigned int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph))
			return "not an ELF image the loader reads";
		if (ph.p_type == PT_INTERP)
			return NULL;
	}
	return "statically linked";
}

/**
 * rt_exe_check() - say whether the shim will reach the program @file (the
 * command as `uswap run` got it; a script is followed to its interpreter),
 * with a warning when it will not. Context: before the program starts.
 * Return: true when the shim will be loaded (or the file cannot be read:
 * execvp() reports it), false after a warning.
 */
bool rt_exe_check(const char *file)
{
	char path[PATH_MAX];
	const char *why = NULL;

	if (resolve(file, path, sizeof(path)))
		return true;
	for (int depth = 0; depth <= RT_SCRIPT_DEPTH && !why; depth++) {
		unsigned char hdr[256];	/* the kernel reads no more of a #! line */
		struct stat st;
		ssize_t n;
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			return true;
		n = fstat(fd, &st) ? -1 : read(fd, hdr, sizeof(hdr) - 1);
		if (n >= 2 && hdr[0] == '#' && hdr[1] == '!') {
			char *p = (char *)hdr + 2;

			close(fd);
			hdr[n] = '\0';
			p += strspn(p, " \t");
			p[strcspn(p, " \t\n")] = '\0';
			if (!*p)
				return true;	/* the kernel refuses it: execvp says so */
			snprintf(path, sizeof(path), "%s", p);
			continue;
		}
		if (n >= SELFMAG && !memcmp(hdr, ELFMAG, SELFMAG))
			why = secure_exec(&st) ? "set-user-ID or set-group-ID (the loader then "
				"ignores LD_PRELOAD)" : elf_why(fd, hdr, (size_t)n);
		close(fd);
		if (!why)
			return true;
	}
	if (!why)
		return true;	/* scripts nested deeper than the kernel runs */
	fprintf(stderr, "uswap run: warning: %s is %s: the shim cannot be loaded into it, so its "
		"memory is neither swapped nor held to --memory (programs it starts may be)\n",
		path, why);
	return false;
}
