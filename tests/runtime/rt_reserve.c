/* SPDX-License-Identifier: MIT */
/*
 * Memory that becomes writable without a new mapping, run under `uswap
 * run` by run_reserve.sh:
 *   rt_reserve RESERVE_MB ARENA_MB
 * 1. a PROT_NONE reservation of RESERVE_MB committed 1 MiB at a time with
 *    mprotect(PROT_READ | PROT_WRITE), as V8 and other allocators do, each
 *    step written at once;
 * 2. a thread that mallocs ARENA_MB in 2 KiB blocks: glibc gives it an arena
 *    of its own, which grows by its internal mprotect() (no interposer sees
 *    it);
 * then every page is read back twice. Each page holds its own tag. Prints
 * "pid N" first (for the script's sampling of smaps_rollup) and
 * "reserve: wrong N" at the end; exit 1 on a wrong word.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define MB	(1UL << 20)
#define BLOCK	2048UL

static unsigned long wrong, arena_mb;
static unsigned char **blocks;
static unsigned long nr_blocks;

static uint64_t tag(uint64_t i)
{
	return (i + 1) * 0x9e3779b97f4a7c15ULL;
}

static void fill(uint64_t *w, uint64_t n, uint64_t base)
{
	for (uint64_t i = 0; i < n; i++)
		w[i] = tag(base + i);
}

static void check(const uint64_t *w, uint64_t n, uint64_t base)
{
	for (uint64_t i = 0; i < n; i++)
		if (w[i] != tag(base + i))
			wrong++;
}

/* Step 2: the thread's arena, grown by glibc itself. */
static void *arena_fill(void *arg)
{
	(void)arg;
	nr_blocks = arena_mb * MB / BLOCK;
	blocks = calloc(nr_blocks, sizeof(*blocks));
	if (!blocks)
		return NULL;
	for (unsigned long b = 0; b < nr_blocks; b++) {
		blocks[b] = malloc(BLOCK);
		if (!blocks[b])
			return NULL;
		fill((uint64_t *)blocks[b], BLOCK / 8, (1UL << 40) + b * (BLOCK / 8));
	}
	return blocks;
}

static void arena_check(void)
{
	for (unsigned long b = 0; b < nr_blocks; b++)
		check((uint64_t *)blocks[b], BLOCK / 8, (1UL << 40) + b * (BLOCK / 8));
}

int main(int argc, char **argv)
{
	unsigned long res_mb;
	uint64_t *r;
	pthread_t t;
	void *got;

	if (argc != 3) {
		fprintf(stderr, "usage: rt_reserve RESERVE_MB ARENA_MB\n");
		return 2;
	}
	res_mb = strtoul(argv[1], NULL, 10);
	arena_mb = strtoul(argv[2], NULL, 10);
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	usleep(100000);		/* the script's sampling starts */
	r = mmap(NULL, (res_mb ? res_mb : 1) * MB, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED) {
		perror("rt_reserve: mmap");
		return 2;
	}
	for (unsigned long m = 0; m < res_mb; m++) {
		uint64_t *w = r + m * (MB / 8);

		if (mprotect(w, MB, PROT_READ | PROT_WRITE)) {
			perror("rt_reserve: mprotect");
			return 2;
		}
		fill(w, MB / 8, m * (MB / 8));
	}
	if (pthread_create(&t, NULL, arena_fill, NULL) || pthread_join(t, &got) || !got) {
		fprintf(stderr, "rt_reserve: the arena thread failed\n");
		return 2;
	}
	for (int pass = 0; pass < 2; pass++) {
		check(r, res_mb * (MB / 8), 0);
		arena_check();
	}
	printf("reserve: wrong %lu\n", wrong);
	return wrong ? 1 : 0;
}
