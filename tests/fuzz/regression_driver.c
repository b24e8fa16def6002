/* SPDX-License-Identifier: MIT */
/*
 * Replays a fuzz corpus through a target's LLVMFuzzerTestOneInput() without
 * libFuzzer, so that every build runs the checked-in inputs as a test.
 * Usage: regression_driver FILE_OR_DIR...  (exit 0 all ran, 1 error; a
 * target's failure aborts).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, n;
	FILE *f = fopen(path, "rb");

	if (!f) {
		perror(path);
		return -1;
	}
	do {
		if (len == cap) {
			uint8_t *nbuf;

			cap = cap ? 2 * cap : 8192;
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				fprintf(stderr, "%s: out of memory\n", path);
				free(buf);
				fclose(f);
				return -1;
			}
			buf = nbuf;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n);
	if (ferror(f)) {
		fprintf(stderr, "%s: read error\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

static int run_path(const char *path, unsigned long *count)
{
	struct dirent *de;
	struct stat st;
	char sub[4096];
	DIR *d;
	int ret = 0;

	if (stat(path, &st) < 0) {
		perror(path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		if (run_file(path))
			return -1;
		(*count)++;
		return 0;
	}
	d = opendir(path);
	if (!d) {
		perror(path);
		return -1;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) >= sizeof(sub)) {
			fprintf(stderr, "%s/%s: path too long\n", path, de->d_name);
			ret = -1;
			continue;
		}
		if (run_path(sub, count))
			ret = -1;
	}
	closedir(d);
	return ret;
}

int main(int argc, char **argv)
{
	unsigned long count = 0;
	int i, ret = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
		return 1;
	}
	for (i = 1; i < argc; i++)
		if (run_path(argv[i], &count))
			ret = 1;
	printf("%lu input(s) replayed\n", count);
	if (!count) {
		fprintf(stderr, "no inputs found\n");
		return 1;
	}
	return ret;
}
