/* SPDX-License-Identifier: MIT */
/*
 * The cold-pages test program, run under `uswap run` by run_lru.sh, run_poison.sh
 * and run_total.sh:
 *   rt_lru hotcold BUDGET_MB SWEEPS  a hot set of a quarter of the budget,
 *       touched before every chunk of a cold set three times the budget;
 *       before each touch, /proc/self/pagemap tells which pages are not
 *       present (evicted since the last touch). Prints the counts.
 *   rt_lru poison MB                 fill, then read every page with a
 *       SIGBUS handler (siglongjmp): prints the pages that raised SIGBUS
 *       and the wrong words of the others.
 *   rt_lru total MB SECONDS          fill with pages that compress ~7x, then
 *       read and check random pages for SECONDS.
 *   rt_lru skew MB OPS               fill, then OPS touches of random pages,
 *       9 in 10 in the first eighth (bench_lru.sh).
 *   rt_lru secret MB GOFILE          fill every page with the text
 *       "uswap-secret:" and its number, print "filled", wait until GOFILE
 *       exists (the test looks at and changes the device meanwhile), then
 *       read every page back as poison does (run_secret.sh).
 *   rt_lru wpcost MB                 (not under uswap run) the per-page
 *       cost of the written-bit signal: PAGEMAP_SCAN and WP_ASYNC faults.
 * Every page holds its own tag, checked on every read: exit 1 on a wrong
 * word.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/uffd_compat.h"

#define PG	4096UL
#define WORDS	(PG / 8)

static int pagemap = -1;
static unsigned long wrong;

static uint64_t tag(uint64_t page, uint64_t gen)
{
	return (page + 1) * 0x9e3779b97f4a7c15ULL ^ gen;
}

static uint64_t *map(uint64_t pages)
{
	uint64_t *a = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (a == MAP_FAILED) {
		perror("rt_lru: mmap");
		exit(2);
	}
	return a;
}

/* Pages of [p, p + n pages) not present now. */
static uint64_t absent(const uint64_t *p, uint64_t n)
{
	static uint64_t pm[4096];
	uint64_t miss = 0;

	for (uint64_t off = 0; off < n;) {
		uint64_t k = n - off > 4096 ? 4096 : n - off;

		if (pread(pagemap, pm, k * 8, (off_t)(((uintptr_t)p / PG + off) * 8)) != (ssize_t)(k * 8)) {
			perror("rt_lru: pagemap");
			exit(2);
		}
		for (uint64_t i = 0; i < k; i++)
			miss += !((pm[i] >> 63) & 1);
		off += k;
	}
	return miss;
}

/* Check page @i's first and last word against @gen, then write @ngen. */
static void touch(uint64_t *p, uint64_t i, uint64_t gen, uint64_t ngen)
{
	uint64_t *w = p + i * WORDS;

	if (gen && (w[0] != tag(i, gen) || w[WORDS - 1] != tag(i, gen)) && wrong++ < 5)
		fprintf(stderr, "rt_lru: page %lu at %p: 0x%llx ... 0x%llx, want 0x%llx\n",
			(unsigned long)i, (void *)w, (unsigned long long)w[0],
			(unsigned long long)w[WORDS - 1], (unsigned long long)tag(i, gen));
	w[0] = w[WORDS - 1] = tag(i, ngen);
}

static int hotcold(uint64_t budget_mb, uint64_t sweeps)
{
	uint64_t b = budget_mb * 256, nh = b / 4, nc = 3 * b, chunk = b / 4;
	uint64_t *hot = map(nh), *cold = map(nc), hgen = 0;
	uint64_t hmiss = 0, hchk = 0, cmiss = 0, cchk = 0;

	for (uint64_t s = 0; s < sweeps; s++) {
		for (uint64_t c = 0; c < nc; c += chunk) {
			if (s) {	/* the first sweep only faults pages in */
				hmiss += absent(hot, nh);
				hchk += nh;
				cmiss += absent(cold + c * WORDS, chunk);
				cchk += chunk;
			}
			for (uint64_t i = 0; i < nh; i++)
				touch(hot, i, hgen, hgen + 1);
			hgen++;
			for (uint64_t i = c; i < c + chunk; i++)
				touch(cold, i, s, s + 1);
		}
	}
	printf("hot_absent %lu hot_checked %lu cold_absent %lu cold_checked %lu wrong %lu\n",
	       (unsigned long)hmiss, (unsigned long)hchk, (unsigned long)cmiss,
	       (unsigned long)cchk, wrong);
	return wrong ? 1 : 0;
}

static sigjmp_buf jb;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	siglongjmp(jb, 1);
}

static int poison(uint64_t mb)
{
	uint64_t n = mb * 256, *p = map(n);
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	volatile uint64_t bus = 0, first = ~0ULL;

	for (uint64_t i = 0; i < n; i++)
		for (uint64_t k = 0; k < WORDS; k += 64)
			p[i * WORDS + k] = tag(i, k + 1);
	sigaction(SIGBUS, &sa, NULL);
	for (volatile uint64_t i = 0; i < n; i++) {
		if (sigsetjmp(jb, 1)) {
			if (first == ~0ULL)
				first = i;
			printf("sigbus_at 0x%lx\n", (unsigned long)(uintptr_t)(p + i * WORDS));
			bus++;
			continue;
		}
		for (uint64_t k = 0; k < WORDS; k += 64)
			if (p[i * WORDS + k] != tag(i, k + 1))
				wrong++;
	}
	/* A poisoned page stays poisoned: a second read faults again. */
	if (first != ~0ULL && !sigsetjmp(jb, 1)) {
		(void)*(volatile uint64_t *)(p + first * WORDS);
		printf("rt_lru: page %lu readable on the second try\n", (unsigned long)first);
		wrong++;
	}
	printf("sigbus_pages %lu wrong %lu\n", (unsigned long)bus, wrong);
	return wrong ? 1 : 0;
}

/* Page @i as "secret" fills it: "uswap-secret:NNNNNNNN " over and over. */
static void secret_page(char *pg, uint64_t i)
{
	char one[32];
	int n = snprintf(one, sizeof(one), "uswap-secret:%08lu ", (unsigned long)i);

	for (size_t o = 0; o < PG; o += (size_t)n)
		memcpy(pg + o, one, o + (size_t)n <= PG ? (size_t)n : PG - o);
}

static int secret(uint64_t mb, const char *go)
{
	uint64_t n = mb * 256, *p = map(n);
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	volatile uint64_t bus = 0;
	char want[PG];

	for (uint64_t i = 0; i < n; i++)
		secret_page((char *)(p + i * WORDS), i);
	printf("filled\n");
	fflush(stdout);
	for (int t = 0; access(go, F_OK); t++) {
		if (t > 120 * 100) {
			fprintf(stderr, "rt_lru: %s never came\n", go);
			return 2;
		}
		usleep(10000);
	}
	sigaction(SIGBUS, &sa, NULL);
	for (volatile uint64_t i = 0; i < n; i++) {
		if (sigsetjmp(jb, 1)) {
			printf("sigbus_at 0x%lx\n", (unsigned long)(uintptr_t)(p + i * WORDS));
			bus++;
			continue;
		}
		secret_page(want, i);
		if (memcmp((char *)(p + i * WORDS), want, PG))
			wrong++;
	}
	printf("sigbus_pages %lu wrong %lu\n", (unsigned long)bus, wrong);
	return wrong ? 1 : 0;
}

#define NOISE	64	/* words of a page's incompressible part (total) */

static int total(uint64_t mb, uint64_t secs)
{
	uint64_t n = mb * 256, *p = map(n), seed = 1;
	time_t end;

	printf("pid %d\n", (int)getpid());
	fflush(stdout);

	/* A page is its tag, 512 bytes of noise and zeros: zram stores it in
	 * about 600 bytes. */
	for (uint64_t i = 0; i < n; i++) {
		for (uint64_t k = 1; k <= NOISE; k++)
			p[i * WORDS + k] = tag(i, k);
		touch(p, i, 0, 1);
	}
	printf("filled\n");
	fflush(stdout);
	end = time(NULL) + (time_t)secs;
	while (time(NULL) < end)
		for (int k = 0; k < 1000; k++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			touch(p, (seed >> 33) % n, 1, 1);
		}
	for (uint64_t i = 0; i < n; i++) {
		for (uint64_t k = 1; k <= NOISE; k++)
			if (p[i * WORDS + k] != tag(i, k) && wrong++ < 5)
				fprintf(stderr, "rt_lru: page %lu word %lu: 0x%llx, want 0x%llx\n",
					(unsigned long)i, (unsigned long)k,
					(unsigned long long)p[i * WORDS + k],
					(unsigned long long)tag(i, k));
		touch(p, i, 1, 1);
	}
	printf("total: wrong %lu\n", wrong);
	return wrong ? 1 : 0;
}

/* OPS touches of random pages of MB: 9 in 10 within the first eighth
 * (the hot part), 1 in 10 anywhere; every touch checks and rewrites. */
static int skew(uint64_t mb, uint64_t ops)
{
	uint64_t n = mb * 256, *p = map(n), seed = 7;

	for (uint64_t i = 0; i < n; i++)
		touch(p, i, 0, 1);
	for (uint64_t k = 0; k < ops; k++) {
		uint64_t r, i;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		r = seed >> 33;
		i = r % 10 < 9 ? (r / 10) % (n / 8) : (r / 10) % n;
		touch(p, i, 1, 1);
	}
	printf("ops %lu wrong %lu\n", (unsigned long)ops, wrong);
	return wrong ? 1 : 0;
}

/* This thread's CPU time (user + system: fault handling included), so
 * that a loaded machine's waits do not count. */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One PAGEMAP_SCAN of @n pages at @p, resetting what it finds written.
 * Return: the pages found, or -1. */
static long wp_scan(char *p, uint64_t n)
{
	struct page_region r[512];
	uint64_t start = (uintptr_t)p, end = start + n * PG;
	long pages = 0;

	while (start < end) {
		struct pm_scan_arg a = {
			.size = sizeof(a), .flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
			.start = start, .end = end, .vec = (uintptr_t)r, .vec_len = 512,
			.category_mask = PAGE_IS_WRITTEN | PAGE_IS_PRESENT,
			.return_mask = PAGE_IS_WRITTEN,
		};
		long k = ioctl(pagemap, PAGEMAP_SCAN, &a);

		if (k < 0)
			return -1;
		for (long i = 0; i < k; i++)
			pages += (long)((r[i].end - r[i].start) / PG);
		if (a.walk_end <= start)
			break;
		start = a.walk_end;
	}
	return pages;
}

/*
 * The cost of the written-bit signal, in this process (not under uswap
 * run): a uffd with WP_ASYNC over MB of written pages; the time of a
 * PAGEMAP_SCAN that finds and resets them all, of one that finds none,
 * and of the first write to each page after a reset (a write-protect
 * fault the kernel resolves), per page, against a write to a page that is
 * not protected; in CPU time.
 */
static int wpcost(uint64_t mb)
{
	uint64_t n = mb * 256;
	char *p = (char *)map(n);
	int u = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_WP_ASYNC };
	struct uffdio_register r = {
		.range = { .start = (uintptr_t)p, .len = n * PG },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	double t0, t1, t2, t3, t4, t5;
	long all, none;

	if (u < 0 || ioctl(u, UFFDIO_API, &api) || ioctl(u, UFFDIO_REGISTER, &r)) {
		perror("rt_lru: userfaultfd WP_ASYNC");
		return 2;
	}
	for (uint64_t i = 0; i < n; i++)
		p[i * PG] = 1;
	t0 = now_s();
	for (uint64_t i = 0; i < n; i++)	/* plain writes: nothing protected */
		p[i * PG] = 2;
	t1 = now_s();
	all = wp_scan(p, n);
	t2 = now_s();
	none = wp_scan(p, n);
	t3 = now_s();
	for (uint64_t i = 0; i < n; i++)	/* each a write-protect fault */
		p[i * PG] = 3;
	t4 = now_s();
	wp_scan(p, n);
	t5 = now_s();
	printf("pages %lu plain_write_ns %.1f scan_reset_all_ns %.1f (found %ld) scan_none_ns %.1f "
	       "(found %ld) wp_fault_write_ns %.1f\n", (unsigned long)n, (t1 - t0) * 1e9 / n,
	       (t2 - t1) * 1e9 / n, all, (t3 - t2) * 1e9 / n, none, (t4 - t3) * 1e9 / n);
	(void)t5;
	return all == (long)n && none == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	uint64_t a = argc > 2 ? strtoull(argv[2], NULL, 10) : 4;
	uint64_t b = argc > 3 ? strtoull(argv[3], NULL, 10) : 3;

	pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (pagemap < 0) {
		perror("rt_lru: /proc/self/pagemap");
		return 2;
	}
	if (argc > 1 && !strcmp(argv[1], "hotcold"))
		return hotcold(a, b);
	if (argc > 1 && !strcmp(argv[1], "poison"))
		return poison(a);
	if (argc > 1 && !strcmp(argv[1], "total"))
		return total(a, b);
	if (argc > 1 && !strcmp(argv[1], "skew"))
		return skew(a, b);
	if (argc > 1 && !strcmp(argv[1], "wpcost"))
		return wpcost(a);
	if (argc > 3 && !strcmp(argv[1], "secret"))
		return secret(a, argv[3]);
	fprintf(stderr, "usage: rt_lru hotcold BUDGET_MB SWEEPS | poison MB | total MB SECONDS | "
		"skew MB OPS | wpcost MB | secret MB GOFILE\n");
	return 2;
}
