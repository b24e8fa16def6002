/* SPDX-License-Identifier: MIT */
/*
 * The swapio workload: pages per second through the swap I/O paths at
 * folio orders 0, 4 and 9, beside the cost of the work a page cannot avoid
 * (memcpy, lz4 and zstd on the same pages, in the same run).
 *
 *   swap-out: folio_alloc_swap + folio_dup_swap + uswap_swap_writeout(sync)
 *             + swap_cache_del_folio, per folio;
 *   swap-in:  uswap_swapin + uswap_swapin_lock + folio_put_swap +
 *             folio_free_swap, per fault (a file reads ahead, so a fault
 *             may find its page already read).
 *
 * One thread moves the whole page set out and back in. With --threads 2,
 * each run also splits the set in halves A and B and times, on one device:
 * A's swap-out alone, B's swap-in alone (one thread), then both at once on
 * two threads, stopping both when the first is done. The speedup is the
 * time one thread needs for the work the two did, over the time they took:
 * out2/out1 + in2/in1 (2.0 when neither slows the other).
 * Workload options: --breakdown times each step (clock reads around every
 * call: a little slower), per page.
 *
 * The page set is a seeded mix of text-like (50%), zero (20%) and random
 * (30%) pages. Every page read back is compared with what was written; a
 * difference counts in bad_pages (the exit status is 1 then). Each figure
 * is the median of --runs runs, with the min and max.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>
#include <stdatomic.h>

#include <lz4.h>
#include <sodium.h>
#include <zstd.h>

#include <uswap/uswap.h>
#include "cli/bench.h"
#include "io/backend.h"
#include "swap/swap_header.h"
#include "swap/swap_internal.h"

#define PAGE		USWAP_PAGE_SIZE
#define DEFAULT_SWAP	"zram:256M"
#define DEFAULT_FILE	(256ULL << 20)
#define DATA_BYTES	(64ULL << 20)	/* pages moved per run and order, at most */
#define MAX_RUNS	101

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Times the calling thread gave up its CPU to wait (a lock, I/O). */
static long vcsw(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nvcsw;
}

/* CPU time of the calling thread. */
static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* Text-like, zero or random, as anonymous memory tends to be. */
static void make_page(unsigned char *p, uint64_t *s)
{
	static const char *const words[] = { "the ", "swap ", "of ", "memory ", "page ",
		"and ", "table ", "to ", "{\"key\": ", "0x7f3a", ", ", "\n", "null", "cluster " };
	unsigned int kind = (unsigned int)(rnd(s) % 10);
	size_t n = 0, i;

	if (kind < 5) {
		while (n < PAGE) {
			const char *w = words[rnd(s) % (sizeof(words) / sizeof(words[0]))];
			size_t l = strlen(w);

			if (l > PAGE - n)
				l = PAGE - n;
			memcpy(p + n, w, l);
			n += l;
		}
	} else if (kind < 7) {
		memset(p, 0, PAGE);
	} else {
		for (i = 0; i < PAGE; i += 8) {
			uint64_t v = rnd(s);

			memcpy(p + i, &v, 8);
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* file:PATH that does not exist: make it a swap file of @size (0600). */
static int ensure_swapfile(const char *spec, uint64_t size)
{
	const char *path = spec + 5;
	uint64_t slots = size / PAGE;
	uint8_t uuid[16];
	void *page;
	int fd, ret = 0;

	if (strncmp(spec, "file:", 5) || !access(path, F_OK))
		return 0;
	if (slots < USWAP_SWAP_MIN_PAGES || slots - 1 > UINT32_MAX) {
		fprintf(stderr, "uswap bench: --size: %" PRIu64 " bytes cannot make a swap file\n",
			size);
		return -EINVAL;
	}
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		fprintf(stderr, "uswap bench: %s: %s\n", path, strerror(errno));
		return ret;
	}
	page = aligned_alloc(PAGE, PAGE);
	if (!page || getrandom(uuid, sizeof(uuid), 0) != sizeof(uuid)) {
		ret = -ENOMEM;
		goto out;
	}
	uuid[6] = (uuid[6] & 0x0f) | 0x40;
	uuid[8] = (uuid[8] & 0x3f) | 0x80;
	if (ftruncate(fd, (off_t)(slots * PAGE)) ||
	    uswap_swap_header_build(page, (uint32_t)(slots - 1), NULL, 0, uuid, "uswap-bench") ||
	    pwrite(fd, page, PAGE, 0) != PAGE || fsync(fd))
		ret = -EIO;
out:
	if (ret) {
		fprintf(stderr, "uswap bench: %s: cannot make a swap file\n", path);
		unlink(path);
	} else {
		fprintf(stderr, "uswap bench: made swap file %s (%" PRIu64 " MiB)\n", path,
			slots * PAGE >> 20);
	}
	free(page);
	close(fd);
	return ret;
}

#define NR_ORDERS	3
static const unsigned int orders[NR_ORDERS] = { 0, 4, 9 };

/* Shared by the threads of a run; each touches only its own pages' slots. */
struct swapio_ctx {
	unsigned int type;
	struct uswap_frame_pool *pool;
	const unsigned char *data;	/* npages pages */
	uint64_t npages;
	uint64_t max;			/* device slots */
	uint64_t *page_of;		/* slot -> data page + 1 (0: none) */
	uint8_t *done;			/* slot -> swapped in this pass */
	bool breakdown;			/* time each step (--breakdown) */
	_Atomic bool stop;		/* two threads: the first one done stops both */
	_Atomic unsigned int arrived;	/* two threads: both start timing together */
};

/* Time per step, summed over a pass (--breakdown). */
enum {
	T_ALLOC, T_DUP, T_WRITE, T_DEL,		/* swap-out */
	T_SWAPIN, T_LOCK, T_PUT, T_FREE,	/* swap-in */
	T_NR
};
static const char *const step_name[T_NR] = {
	"folio_alloc_swap", "folio_dup_swap", "swap_writeout", "swap_cache_del_folio",
	"uswap_swapin", "uswap_swapin_lock", "folio_put_swap", "folio_free_swap",
};

/* One thread's share of a pass: a range of the page set at one order. */
struct swapio_part {
	struct swapio_ctx *c;
	uint64_t first;			/* first data page (a multiple of 512) */
	uint64_t npages;		/* pages in the range */
	unsigned int order;
	struct folio **folios;		/* npages: frames, then swapped-in folios */
	uint64_t *heads;		/* per folio of the range: its first slot */
	uint64_t *expect;		/* per page swapped in: data page + 1 */
	uint64_t nout;			/* folios swapped out (a prefix) */
	uint64_t nout_in;		/* of those, the ones swap-in has passed */
	uint64_t nin;			/* folios swapped in, in folios[] */
	uint64_t nexpect;		/* pages swapped in, in expect[] */
	uint64_t pages_done;		/* pages the timed step moved */
	double seconds;			/* its time */
	double cpu;			/* the thread's CPU time in it */
	long vcsw;			/* its voluntary context switches */
	double step[T_NR];		/* --breakdown */
	uint64_t bad_pages;
	int err;
};

/* Compare a swapped-in folio with the pages @expect names. */
static void check_folio(struct swapio_ctx *c, struct swapio_part *p, struct folio *f,
			const uint64_t *expect)
{
	unsigned long i, nr = folio_nr_pages(f);

	for (i = 0; i < nr; i++) {
		uint64_t pg = expect[i];

		if (!pg || memcmp((char *)folio_address(f) + i * PAGE, c->data + (pg - 1) * PAGE,
				  PAGE))
			p->bad_pages++;
	}
}

static inline double step_start(const struct swapio_ctx *c)
{
	return c->breakdown ? now_s() : 0;
}

static inline void step_end(const struct swapio_ctx *c, struct swapio_part *p, int step,
			    double *t)
{
	double n;

	if (!c->breakdown)
		return;
	n = now_s();
	p->step[step] += n - *t;
	*t = n;
}

/* Frames for the range, filled with its data (not timed). */
static int part_fill(struct swapio_part *p)
{
	struct swapio_ctx *c = p->c;
	uint64_t nr = 1ULL << p->order, n = p->npages / nr, i;

	for (i = 0; i < n; i++) {
		struct folio *f = uswap_folio_alloc(c->pool, p->order);

		if (!f) {
			while (i--)
				folio_put(p->folios[i]);
			return -ENOMEM;
		}
		memcpy(folio_address(f), c->data + (p->first + i * nr) * PAGE, nr * PAGE);
		folio_mark_uptodate(f);
		p->folios[i] = f;
	}
	return 0;
}

/*
 * Swap the filled range out, folio by folio, timed; stops early when
 * c->stop is set. Then records which slot holds which page and lets the
 * frames go (poisoned: a read that did nothing must not pass).
 */
static void part_swap_out(struct swapio_part *p)
{
	struct swapio_ctx *c = p->c;
	uint64_t nr = 1ULL << p->order, n = p->npages / nr, i, k;
	double t0, t;
	int err = 0;

	p->nout = 0;
	p->vcsw = vcsw();
	p->cpu = cpu_s();
	t0 = now_s();
	for (i = 0; i < n && !err; i++) {
		struct folio *f = p->folios[i];

		if (atomic_load_explicit(&c->stop, memory_order_relaxed))
			break;
		t = step_start(c);
		folio_lock(f);
		err = folio_alloc_swap(f);
		step_end(c, p, T_ALLOC, &t);
		if (!err)
			err = folio_dup_swap(f, -1);
		step_end(c, p, T_DUP, &t);
		if (err) {
			folio_unlock(f);
			break;
		}
		p->heads[i] = swp_offset(folio_swap_entry(f));
		err = uswap_swap_writeout(f, true);	/* unlocks */
		step_end(c, p, T_WRITE, &t);
		if (!err) {
			folio_lock(f);
			err = swap_cache_del_folio(f, 0);
			folio_unlock(f);
			step_end(c, p, T_DEL, &t);
		}
		if (!err)
			p->nout = i + 1;
	}
	p->seconds = now_s() - t0;
	p->cpu = cpu_s() - p->cpu;
	p->vcsw = vcsw() - p->vcsw;
	p->pages_done = p->nout * nr;
	if (err) {
		fprintf(stderr, "uswap bench: swap-out of folio %" PRIu64 " (order %u): %s\n",
			i - 1, p->order, strerror(-err));
		p->err = err;
	}
	for (i = 0; i < n; i++) {
		if (i < p->nout) {
			for (k = 0; k < nr; k++)
				c->page_of[p->heads[i] + k] = p->first + i * nr + k + 1;
			memset(folio_address(p->folios[i]), 0x5a, nr * PAGE);
		}
		folio_put(p->folios[i]);	/* one not swapped out is freed */
	}
}

/*
 * Swap the range's swapped-out folios back in page after page, timed
 * (a large folio returns whole on a synchronous device; others read order
 * 0 with readahead); stops early when c->stop is set. c->done must be clear
 * for the range's slots.
 */
static void part_swap_in(struct swapio_part *p)
{
	struct swapio_ctx *c = p->c;
	uint64_t nr = 1ULL << p->order, i, k, j, start_nin = p->nin;
	double t0, t;
	int err = 0;

	p->vcsw = vcsw();
	p->cpu = cpu_s();
	t0 = now_s();
	for (i = p->nout_in; i < p->nout && !err; i++) {
		if (atomic_load_explicit(&c->stop, memory_order_relaxed))
			break;
		for (k = 0; k < nr && !err; k++) {
			swp_entry_t e = swp_entry(c->type, p->heads[i] + k);
			struct folio *f;
			uint64_t head;

			if (c->done[p->heads[i] + k])
				continue;
			t = step_start(c);
			err = uswap_swapin(e, c->pool, (2UL << p->order) - 1, &f, NULL);
			step_end(c, p, T_SWAPIN, &t);
			if (err)
				break;
			err = uswap_swapin_lock(f, e);
			step_end(c, p, T_LOCK, &t);
			if (err) {
				folio_put(f);
				break;
			}
			/* Which pages it should hold: its slots may be
			 * reused as soon as they are freed. */
			head = swp_offset(folio_swap_entry(f));
			for (j = 0; j < folio_nr_pages(f); j++) {
				p->expect[p->nexpect++] = c->page_of[head + j];
				c->page_of[head + j] = 0;
			}
			p->folios[p->nin++] = f;
			memset(c->done + head, 1, folio_nr_pages(f));
			err = folio_put_swap(f, -1);
			step_end(c, p, T_PUT, &t);
			if (!err && folio_free_swap(f) != 1)
				err = -EBUSY;
			folio_unlock(f);
			step_end(c, p, T_FREE, &t);
		}
	}
	p->seconds = now_s() - t0;
	p->cpu = cpu_s() - p->cpu;
	p->vcsw = vcsw() - p->vcsw;
	p->pages_done = 0;
	for (k = start_nin; k < p->nin; k++)
		p->pages_done += folio_nr_pages(p->folios[k]);
	p->nout_in = i;
	if (err) {
		fprintf(stderr, "uswap bench: swap-in (order %u): %s\n", p->order, strerror(-err));
		p->err = err;
	}
}

/* Compare what came back with what went out, and let the folios go. */
static void part_check(struct swapio_part *p)
{
	uint64_t i, e = 0;

	for (i = 0; i < p->nin; i++) {
		check_folio(p->c, p, p->folios[i], p->expect + e);
		e += folio_nr_pages(p->folios[i]);
		folio_put(p->folios[i]);
	}
	p->nin = p->nexpect = 0;
}

static int part_init(struct swapio_part *p, struct swapio_ctx *c, uint64_t first,
		     uint64_t npages, unsigned int order)
{
	memset(p, 0, sizeof(*p));
	p->c = c;
	p->first = first;
	p->npages = npages;
	p->order = order;
	p->folios = calloc(npages, sizeof(*p->folios));
	p->heads = calloc(npages, sizeof(*p->heads));
	p->expect = calloc(npages, sizeof(*p->expect));
	return p->folios && p->heads && p->expect ? 0 : -ENOMEM;
}

static void part_exit(struct swapio_part *p)
{
	free(p->folios);
	free(p->heads);
	free(p->expect);
}

static void clear_done(struct swapio_ctx *c, const struct swapio_part *p)
{
	uint64_t nr = 1ULL << p->order, i;

	for (i = 0; i < p->nout; i++)
		memset(c->done + p->heads[i], 0, nr);
}

/* Swap the rest of @p back in (not timed) and check all of it. */
static void part_drain(struct swapio_part *p)
{
	part_swap_in(p);
	part_check(p);
	p->nout = p->nout_in = 0;
}

/* Out (timed), in (timed), checked: the whole range on this thread. */
static int part_out_in(struct swapio_part *p, double *out_pps, double *in_pps)
{
	int err = part_fill(p);

	if (err)
		return err;
	part_swap_out(p);
	*out_pps = (double)p->pages_done / p->seconds;
	clear_done(p->c, p);
	p->nout_in = 0;
	part_swap_in(p);
	*in_pps = (double)p->pages_done / p->seconds;
	part_check(p);
	if (!p->err && p->nout_in != p->nout)
		p->err = -EIO;
	p->nout = p->nout_in = 0;
	return p->err;
}

/* The figures of one run. */
enum {
	M_OUT, M_IN = M_OUT + NR_ORDERS,			/* one thread */
	M_OUT1 = M_IN + NR_ORDERS, M_IN1 = M_OUT1 + NR_ORDERS,	/* halves, alone */
	M_OUT2 = M_IN1 + NR_ORDERS, M_IN2 = M_OUT2 + NR_ORDERS,	/* halves, together */
	M_SPEEDUP = M_IN2 + NR_ORDERS,
	M_CPU_OUT = M_SPEEDUP + NR_ORDERS, M_CPU_IN = M_CPU_OUT + NR_ORDERS,	/* per CPU-s */
	M_WAIT = M_CPU_IN + NR_ORDERS,		/* voluntary switches per 1000 pages */
	M_CPUS = M_WAIT + NR_ORDERS,		/* CPUs the two threads had */
	M_MEMCPY = M_CPUS + NR_ORDERS, M_LZ4C, M_LZ4D, M_LZ4, M_ZSTD, M_XCHACHA, M_AESGCM,
	M_STEP, M_NR = M_STEP + NR_ORDERS * T_NR
};

/*
 * Both threads start together, each on a CPU: a spinning barrier, not a
 * sleeping one. A thread that sleeps in a barrier may find its CPU taken
 * when woken (under `chrt -f`, by another real-time job of the same
 * priority until that job is done), and the run then times one thread
 * with the other waiting; spinning, each holds its CPU from its arrival.
 * Context: the two threads of run_two(). Return: nothing.
 */
static void part_start(struct swapio_ctx *c)
{
	atomic_fetch_add(&c->arrived, 1);
	while (atomic_load(&c->arrived) < 2)
		;
}

static void *part_thread(void *arg)
{
	struct swapio_part *p = arg;
	struct swapio_ctx *c = p->c;

	part_start(c);
	if (p->nout)
		part_swap_in(p);
	else
		part_swap_out(p);
	atomic_store(&c->stop, true);
	return NULL;
}

/*
 * Two threads at @order: A (first half) out while B (second half) comes
 * in, each measured alone first. Fills m[] at @oi; adds to *@bad.
 */
static int run_two(struct swapio_ctx *c, unsigned int oi, double *m, uint64_t *bad)
{
	unsigned int order = orders[oi];
	uint64_t half = c->npages / 2;
	struct swapio_part a = { 0 }, b = { 0 };
	pthread_t thr;
	int err;

	if (part_init(&a, c, 0, half, order) || part_init(&b, c, half, half, order)) {
		err = -ENOMEM;
		goto out;
	}
	/* alone: B out (not timed), B in; A out, A in (not timed) */
	err = part_fill(&b);
	if (err)
		goto out;
	part_swap_out(&b);
	clear_done(c, &b);
	part_swap_in(&b);
	m[M_IN1 + oi] = (double)b.pages_done / b.seconds;
	m[M_CPU_IN + oi] = (double)b.pages_done / b.cpu;
	part_check(&b);
	b.nout = b.nout_in = 0;
	err = b.err ? b.err : part_fill(&a);
	if (err)
		goto out;
	part_swap_out(&a);
	m[M_OUT1 + oi] = (double)a.pages_done / a.seconds;
	m[M_CPU_OUT + oi] = (double)a.pages_done / a.cpu;
	clear_done(c, &a);
	a.nout_in = 0;
	part_drain(&a);
	err = a.err;
	/* together: B is out, A is filled */
	if (!err)
		err = part_fill(&b);
	if (!err) {
		part_swap_out(&b);
		clear_done(c, &b);
		b.nout_in = 0;
		err = b.err ? b.err : part_fill(&a);
	}
	if (err)
		goto out;
	atomic_store(&c->stop, false);
	atomic_store(&c->arrived, 0);
	if (pthread_create(&thr, NULL, part_thread, &b)) {
		err = -EAGAIN;
		part_swap_out(&a);	/* the frames go back */
		part_drain(&a);
		part_drain(&b);
		goto out;
	}
	part_thread(&a);
	pthread_join(thr, NULL);
	atomic_store(&c->stop, false);
	m[M_OUT2 + oi] = (double)a.pages_done / a.seconds;
	m[M_IN2 + oi] = (double)b.pages_done / b.seconds;
	m[M_SPEEDUP + oi] = m[M_OUT2 + oi] / m[M_OUT1 + oi] + m[M_IN2 + oi] / m[M_IN1 + oi];
	/* pages per CPU-second together / alone: below 1 is contention,
	 * whatever share of the CPUs the threads got */
	m[M_CPU_OUT + oi] = ((double)a.pages_done / a.cpu) / m[M_CPU_OUT + oi];
	m[M_CPU_IN + oi] = ((double)b.pages_done / b.cpu) / m[M_CPU_IN + oi];
	/* ...and sleeping on a lock is not CPU time: count the sleeps */
	m[M_WAIT + oi] = (double)(a.vcsw + b.vcsw) * 1000.0 /
			 (double)(a.pages_done + b.pages_done + 1);
	/* CPU time over wall time: 2.0 if each had a CPU throughout */
	m[M_CPUS + oi] = (a.cpu + b.cpu) / (a.seconds > b.seconds ? a.seconds : b.seconds);
	clear_done(c, &a);
	a.nout_in = 0;
	part_drain(&a);
	part_drain(&b);
	err = a.err ? a.err : b.err;
out:
	*bad += a.bad_pages + b.bad_pages;
	part_exit(&a);
	part_exit(&b);
	return err;
}

static int run_one(struct swapio_ctx *c, unsigned int oi, double *m, uint64_t *bad)
{
	struct swapio_part p;
	unsigned int k;
	int err;

	err = part_init(&p, c, 0, c->npages, orders[oi]);
	if (!err)
		err = part_out_in(&p, &m[M_OUT + oi], &m[M_IN + oi]);
	for (k = 0; k < T_NR; k++)
		m[M_STEP + oi * T_NR + k] = p.step[k] / (double)c->npages * 1e6;
	*bad += p.bad_pages;
	part_exit(&p);
	return err;
}

/*
 * Seal and open every page with the AEAD the encryption wrapper uses
 * (backend_crypt.c: a counter nonce, the page number as associated data,
 * a detached tag, open in place). Return: pages/s, 0 when the CPU lacks
 * the cipher (AES-NI), -1 when a page fails to open.
 */
static double aead_floor(const unsigned char *data, uint64_t npages, unsigned char *dst,
			 bool aes)
{
	unsigned char key[32], nonce[24] = { 0 }, tag[16], ad[8];
	crypto_aead_aes256gcm_state *st = NULL;
	double t0, r;
	uint64_t i;

	if (sodium_init() < 0 || (aes && !crypto_aead_aes256gcm_is_available()))
		return 0;
	randombytes_buf(key, sizeof(key));
	if (aes) {
		st = sodium_malloc(sizeof(*st));
		if (!st)
			return -1;
		crypto_aead_aes256gcm_beforenm(st, key);
	}
	t0 = now_s();
	for (i = 0; i < npages; i++) {
		int bad;

		memcpy(nonce, &i, sizeof(i));
		memcpy(ad, &i, sizeof(i));
		if (aes) {
			crypto_aead_aes256gcm_encrypt_detached_afternm(dst, tag, NULL, data + i * PAGE,
								       PAGE, ad, 8, NULL, nonce, st);
			bad = crypto_aead_aes256gcm_decrypt_detached_afternm(dst, NULL, dst, PAGE,
									     tag, ad, 8, nonce, st);
		} else {
			crypto_aead_xchacha20poly1305_ietf_encrypt_detached(dst, tag, NULL,
									    data + i * PAGE, PAGE,
									    ad, 8, NULL, nonce, key);
			bad = crypto_aead_xchacha20poly1305_ietf_decrypt_detached(dst, NULL, dst,
										  PAGE, tag, ad, 8,
										  nonce, key);
		}
		if (bad || memcmp(dst, data + i * PAGE, 64)) {
			sodium_free(st);
			return -1;
		}
	}
	r = (double)npages / (now_s() - t0);
	sodium_free(st);
	return r;
}

/*
 * The floors, per page: memcpy; lz4 compress alone (swap-out's floor);
 * lz4 decompress, or a copy for a page lz4 cannot shrink below 3/4 (as
 * zram keeps it raw) (swap-in's floor); lz4 and zstd-1 compress +
 * decompress; XChaCha20-Poly1305 and AES-256-GCM seal + open.
 */
static int measure_floor(const unsigned char *data, uint64_t npages, double *m)
{
	int bound = LZ4_compressBound(PAGE);
	size_t zbound = ZSTD_compressBound(PAGE);
	unsigned char *dst = aligned_alloc(PAGE, PAGE), *cbuf = malloc(zbound > (size_t)bound ?
								       zbound : (size_t)bound);
	void *lz4_state = malloc((size_t)LZ4_sizeofState());
	char *comp = malloc(npages * PAGE);
	int *clen = calloc(npages, sizeof(*clen));
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	ZSTD_DCtx *dctx = ZSTD_createDCtx();
	volatile unsigned char sink = 0;
	uint64_t i;
	double t0;
	int ret = 0;

	if (!dst || !cbuf || !lz4_state || !comp || !clen || !cctx || !dctx) {
		ret = -ENOMEM;
		goto out;
	}
	t0 = now_s();
	for (i = 0; i < npages; i++) {
		memcpy(dst, data + i * PAGE, PAGE);
		sink ^= dst[i % PAGE];
	}
	m[M_MEMCPY] = (double)npages / (now_s() - t0);
	memset(comp, 0, npages * PAGE);	/* its page faults are no floor */
	t0 = now_s();
	for (i = 0; i < npages; i++)
		clen[i] = LZ4_compress_fast_extState(lz4_state, (const char *)data + i * PAGE,
						     comp + i * PAGE, PAGE, PAGE * 3 / 4 - 1, 1);
	m[M_LZ4C] = (double)npages / (now_s() - t0);
	t0 = now_s();
	for (i = 0; i < npages; i++) {
		if (clen[i] <= 0)
			memcpy(dst, data + i * PAGE, PAGE);
		else if (LZ4_decompress_safe(comp + i * PAGE, (char *)dst, clen[i], PAGE) != PAGE) {
			ret = -EIO;
			goto out;
		}
		sink ^= dst[i % PAGE];
	}
	m[M_LZ4D] = (double)npages / (now_s() - t0);
	t0 = now_s();
	for (i = 0; i < npages; i++) {
		int n = LZ4_compress_fast_extState(lz4_state, (const char *)data + i * PAGE,
						   (char *)cbuf, PAGE, bound, 1);

		if (n <= 0 || LZ4_decompress_safe((const char *)cbuf, (char *)dst, n, PAGE) != PAGE) {
			ret = -EIO;
			goto out;
		}
		sink ^= dst[i % PAGE];
	}
	m[M_LZ4] = (double)npages / (now_s() - t0);
	t0 = now_s();
	for (i = 0; i < npages; i++) {
		size_t n = ZSTD_compressCCtx(cctx, cbuf, zbound, data + i * PAGE, PAGE, 1);

		if (ZSTD_isError(n) || ZSTD_decompressDCtx(dctx, dst, PAGE, cbuf, n) != PAGE) {
			ret = -EIO;
			goto out;
		}
		sink ^= dst[i % PAGE];
	}
	m[M_ZSTD] = (double)npages / (now_s() - t0);
	m[M_XCHACHA] = aead_floor(data, npages, dst, false);
	m[M_AESGCM] = aead_floor(data, npages, dst, true);
	if (m[M_XCHACHA] < 0 || m[M_AESGCM] < 0)
		ret = -EIO;
	(void)sink;
out:
	ZSTD_freeCCtx(cctx);
	ZSTD_freeDCtx(dctx);
	free(lz4_state);
	free(comp);
	free(clen);
	free(cbuf);
	free(dst);
	return ret;
}

/* Median, min and max of metric @k over @runs runs. */
struct stat3 {
	double med, min, max;
};

static struct stat3 stat_of(double (*m)[M_NR], unsigned int runs, unsigned int k)
{
	double v[MAX_RUNS];
	unsigned int r;
	struct stat3 s;

	for (r = 0; r < runs; r++)
		v[r] = m[r][k];
	s.med = median(v, runs);
	s.min = v[0];
	s.max = v[runs - 1];
	return s;
}

static void print_row(const char *name, double (*m)[M_NR], unsigned int runs, unsigned int k0,
		      const char *fmt)
{
	unsigned int oi;

	printf("  %-30s", name);
	for (oi = 0; oi < NR_ORDERS; oi++) {
		struct stat3 s = stat_of(m, runs, k0 + oi);
		char cell[64];

		snprintf(cell, sizeof(cell), fmt, s.med, s.min, s.max);
		printf(" %26s", cell);
	}
	printf("\n");
}

static int parse_extra(const struct bench_opts *o, struct swapio_ctx *c)
{
	int i;

	for (i = 0; i < o->argc; i++) {
		if (!strcmp(o->argv[i], "--breakdown")) {
			c->breakdown = true;
			continue;
		}
		fprintf(stderr, "uswap bench swapio: bad option '%s' (see uswap bench --help)\n",
			o->argv[i]);
		return -1;
	}
	return 0;
}

/*
 * The device side of the run (text output): requests, readahead, and for
 * an NBD device the request latency and queue depth seen by the backend.
 * Context: the bench thread; pins the device. Return: nothing.
 */
static void swapio_device_report(unsigned int type)
{
	struct swap_info_struct *si = atomic_load(&swap_info[type]);
	struct uswap_swap_stat st;
	struct swap_nbd_stats ns;

	if (uswap_swap_stat(type, &st))
		return;
	printf("  device: %" PRIu64 " reads, %" PRIu64 " writes, %" PRIu64 " errors; "
	       "readahead %" PRIu64 " added, %" PRIu64 " hit\n", st.reads, st.writes,
	       st.read_errors + st.write_errors, st.ra_pages, st.ra_hits);
	if (!si || !swap_device_tryget(si))
		return;
	if (si->bdev && !swap_backend_nbd_stats(si->bdev, &ns))
		printf("  nbd: read p50 %" PRIu64 " us p99 %" PRIu64 " us, write p50 %" PRIu64
		       " us p99 %" PRIu64 " us; in flight max %" PRIu64 " mean %.1f (depth %u); "
		       "reconnects %" PRIu64 "\n", ns.read_p50_us, ns.read_p99_us,
		       ns.write_p50_us, ns.write_p99_us, ns.max_inflight, ns.avg_inflight,
		       ns.depth, ns.reconnects);
	put_swap_device(si);
}

int bench_swapio(const struct bench_opts *o)
{
	const char *spec = o->nr_swap ? o->swap[0] : DEFAULT_SWAP;
	static double m[MAX_RUNS][M_NR];
	static const char *const okey[NR_ORDERS] = { "", "_order4", "_order9" };
	struct swapio_ctx c = { 0 };
	struct uswap_swap_stat st;
	unsigned int runs = o->runs, r, oi, k;
	uint64_t seed = o->seed, i, data_bytes, bad = 0;
	bool two = o->threads >= 2;
	char err[256] = "";
	int type, ret = 1;

	if (o->nr_swap > 1)
		fprintf(stderr, "uswap bench: swapio uses only the first --swap\n");
	if (runs > MAX_RUNS) {
		fprintf(stderr, "uswap bench: swapio: at most %d runs\n", MAX_RUNS);
		return 2;
	}
	if (o->threads > 2)
		fprintf(stderr, "uswap bench: swapio runs one or two threads\n");
	if (parse_extra(o, &c))
		return 2;
	if (ensure_swapfile(spec, o->size ? o->size : DEFAULT_FILE))
		return 1;
	type = uswap_swapon_spec(spec, 0, err, sizeof(err));
	if (type < 0) {
		fprintf(stderr, "uswap bench: swapon %s: %s%s%s\n", spec, strerror(-type),
			err[0] ? ": " : "", err);
		return 1;
	}
	c.type = (unsigned int)type;
	memset(m, 0, sizeof(m));
	if (uswap_swap_stat(c.type, &st))
		goto off;
	c.max = st.max;
	/* The page set: 64 MiB, or what fits in 3/4 of the device, in whole
	 * order-9 folios, two halves of them with --threads 2. */
	data_bytes = DATA_BYTES;
	if (data_bytes / PAGE > st.pages * 3 / 4)
		data_bytes = st.pages * 3 / 4 * PAGE;
	c.npages = data_bytes / PAGE & ~1023ULL;
	if (c.npages < 1024) {
		fprintf(stderr, "uswap bench: %s is too small (4 MiB of pages at least)\n", spec);
		goto off;
	}
	c.data = malloc(c.npages * PAGE);
	c.page_of = calloc(c.max, sizeof(*c.page_of));
	c.done = calloc(c.max, 1);
	if (!c.data || !c.page_of || !c.done ||
	    uswap_frame_pool_create(c.npages + 1024, &c.pool)) {
		fprintf(stderr, "uswap bench: out of memory\n");
		goto off;
	}
	for (i = 0; i < c.npages; i++)
		make_page((unsigned char *)c.data + i * PAGE, &seed);
	if (!o->quiet && !o->json)
		fprintf(stderr, "uswap bench: swapio on %s: %" PRIu64 " pages, %u runs%s\n", spec,
			c.npages, runs, two ? ", two threads" : "");
	for (r = 0; r < runs; r++) {
		for (oi = 0; oi < NR_ORDERS; oi++) {
			if (run_one(&c, oi, m[r], &bad))
				goto off;
			if (two && run_two(&c, oi, m[r], &bad))
				goto off;
		}
		if (measure_floor(c.data, c.npages, m[r]))
			goto off;
	}
	if (o->json) {
		printf("{\"workload\": \"swapio\", \"swap\": \"%s\", \"runs\": %u, "
		       "\"pages\": %" PRIu64 ", \"seed\": %" PRIu64 ", \"threads\": %u",
		       spec, runs, c.npages, o->seed, two ? 2 : 1);
		for (oi = 0; oi < NR_ORDERS; oi++) {
			printf(", \"swapout_pages_per_s%s\": %.0f, \"swapin_pages_per_s%s\": %.0f",
			       okey[oi], stat_of(m, runs, M_OUT + oi).med,
			       okey[oi], stat_of(m, runs, M_IN + oi).med);
			if (two)
				printf(", \"two_threads_speedup%s\": %.3f, "
				       "\"two_threads_out_cpu_ratio%s\": %.3f, "
				       "\"two_threads_in_cpu_ratio%s\": %.3f", okey[oi],
				       stat_of(m, runs, M_SPEEDUP + oi).med, okey[oi],
				       stat_of(m, runs, M_CPU_OUT + oi).med, okey[oi],
				       stat_of(m, runs, M_CPU_IN + oi).med);
		}
		printf(", \"memcpy_pages_per_s\": %.0f, \"lz4_compress_pages_per_s\": %.0f, "
		       "\"lz4_decompress_pages_per_s\": %.0f, \"lz4_pages_per_s\": %.0f, "
		       "\"zstd_pages_per_s\": %.0f, \"xchacha20_pages_per_s\": %.0f, "
		       "\"aes256gcm_pages_per_s\": %.0f, \"bad_pages\": %" PRIu64 "}\n",
		       stat_of(m, runs, M_MEMCPY).med, stat_of(m, runs, M_LZ4C).med,
		       stat_of(m, runs, M_LZ4D).med, stat_of(m, runs, M_LZ4).med,
		       stat_of(m, runs, M_ZSTD).med, stat_of(m, runs, M_XCHACHA).med,
		       stat_of(m, runs, M_AESGCM).med, bad);
	} else {
		struct stat3 s;

		printf("swapio on %s: %" PRIu64 " pages (%" PRIu64 " MiB; 50%% text-like, 20%% "
		       "zero, 30%% random), %u runs: median [min max]\n",
		       spec, c.npages, c.npages * PAGE >> 20, runs);
		printf("  %-30s %26s %26s %26s\n", "pages/s, one thread", "order 0", "order 4",
		       "order 9");
		print_row("swap-out (alloc+dup+write)", m, runs, M_OUT, "%.0f [%.0f %.0f]");
		print_row("swap-in (fault+put+free)", m, runs, M_IN, "%.0f [%.0f %.0f]");
		if (two) {
			printf("  two threads, halves A and B:\n");
			print_row("A out, alone", m, runs, M_OUT1, "%.0f [%.0f %.0f]");
			print_row("B in, alone", m, runs, M_IN1, "%.0f [%.0f %.0f]");
			print_row("A out, with B in", m, runs, M_OUT2, "%.0f [%.0f %.0f]");
			print_row("B in, with A out", m, runs, M_IN2, "%.0f [%.0f %.0f]");
			print_row("speedup (out2/out1+in2/in1)", m, runs, M_SPEEDUP,
				  "%.2f [%.2f %.2f]");
			print_row("A out per CPU-s, with/alone", m, runs, M_CPU_OUT,
				  "%.2f [%.2f %.2f]");
			print_row("B in per CPU-s, with/alone", m, runs, M_CPU_IN,
				  "%.2f [%.2f %.2f]");
			print_row("sleeps per 1000 pages, A+B", m, runs, M_WAIT,
				  "%.1f [%.1f %.1f]");
			print_row("CPUs they had (CPU-s / s)", m, runs, M_CPUS,
				  "%.2f [%.2f %.2f]");
		}
		printf("  floor, pages/s:");
		for (k = M_MEMCPY; k <= M_AESGCM; k++) {
			static const char *const fname[] = { "memcpy", "lz4 compress",
				"lz4 decompress/copy", "lz4 both", "zstd-1 both",
				"xchacha20-poly1305 seal+open", "aes256-gcm seal+open" };

			s = stat_of(m, runs, k);
			printf("%s %s %.0f [%.0f %.0f]", k == M_MEMCPY ? "" : ",",
			       fname[k - M_MEMCPY], s.med, s.min, s.max);
		}
		printf("\n");
		/* out / floor within each run, then the median of those */
		for (oi = 0; oi < NR_ORDERS; oi++) {
			double ro[MAX_RUNS], ri[MAX_RUNS];

			for (r = 0; r < runs; r++) {
				ro[r] = m[r][M_OUT + oi] / m[r][M_LZ4C];
				ri[r] = m[r][M_IN + oi] / m[r][M_LZ4D];
			}
			printf("  order %u: swap-out / lz4 compress %.2f, swap-in / lz4 "
			       "decompress %.2f (medians of per-run ratios)\n", orders[oi],
			       median(ro, runs), median(ri, runs));
		}
		if (c.breakdown) {
			printf("  breakdown, us per page (median):\n");
			for (k = 0; k < T_NR; k++) {
				printf("    %-22s", step_name[k]);
				for (oi = 0; oi < NR_ORDERS; oi++)
					printf(" %8.3f", stat_of(m, runs, M_STEP + oi * T_NR + k).med);
				printf("\n");
			}
		}
		printf("  bad_pages %" PRIu64 "\n", bad);
		swapio_device_report(c.type);
	}
	ret = bad ? 1 : 0;
off:
	if (uswap_swapoff_type(c.type))
		fprintf(stderr, "uswap bench: swapoff failed\n");
	if (c.pool)
		uswap_frame_pool_destroy(c.pool);
	free((void *)c.data);
	free(c.page_of);
	free(c.done);
	return ret;
}
