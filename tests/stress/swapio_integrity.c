/* SPDX-License-Identifier: MIT */
/*
 * swapio_integrity: pages written to swap come back byte for byte, through
 * every backend, at every folio order, with racing readers and with
 * injected I/O errors; and swap-in readahead behaves as swapin_nr_pages()
 * (mm/swap_state.c) sizes it.
 *
 *  (a) integrity: zram:64M (lz4, zstd) and a 64 MiB swap file made here
 *      (io_uring and the pread fallback), orders 0..9. Each folio gets
 *      seeded per-page content, is allocated slots, referenced once,
 *      written synchronously and dropped from the cache with a shadow; its
 *      frames are poisoned. Swap-in must return the data, the shadow, and
 *      read every slot exactly once: zram gives back large folios whole
 *      (order == the folio's when only orders up to it are allowed, >= it
 *      when all are), files give order 0 with readahead whose folios are
 *      then hits, never read twice (backend read counters).
 *  (b) races: 2-4 threads swap in the same entry at once; all get the same
 *      folio and identical data; each slot is read exactly once.
 *  (c) faults: a fault-injection wrapper under zram and a file. A failed
 *      write leaves the folio cached, dirty, intact; a failed read fails
 *      that folio alone, keeps the counts, leaves nothing cached, and the
 *      next swap-in reads the data; neighbours are unaffected.
 *  (d) readahead window on a file: sequential faults grow it to 8 pages
 *      (ra_pages 7), random faults halve it down to 1.
 *
 * Every case swaps on its own device and swaps it off (which must return
 * 0). USWAP_TEST_SEED; USWAP_TEST_OPS (default 100000) scales the rounds:
 * races ops/500, fault rounds ops/5000 (at least 1, at most 1000).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/backend.h"
#include "mm/workingset.h"
#include "swap/swap_header.h"
#include "swap/swap_internal.h"
#include "swap/swapon.h"
#include "testutil.h"

#define PAGE		USWAP_PAGE_SIZE
#define DEV_SIZE	(64ULL << 20)
#define DEV_SLOTS	(DEV_SIZE / PAGE)
#define POOL_FRAMES	4096
#define PAGES_PER_ORDER	512	/* (a): pages written per order and mode */
#define MAX_FOLIOS	1024
#define ALL_ORDERS	((1UL << SWAP_NR_ORDERS) - 1)

static uint64_t g_seed;
static const char *g_phase = "";	/* the step running, for failure messages */

#define FAIL(...) do { \
	fprintf(stderr, "swapio_integrity: %s:%d: [%s] ", __FILE__, __LINE__, g_phase); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); return -1; } while (0)
#define CHECK(cond) do { if (!(cond)) FAIL("%s", #cond); } while (0)
#define CHECK_EQ(a, b) do { long long _a = (long long)(a), _b = (long long)(b); \
	if (_a != _b) FAIL("%s == %lld, want %s == %lld", #a, _a, #b, _b); } while (0)
#define TRY(expr) do { if ((expr) < 0) return -1; } while (0)

/* ---- page contents ---- */

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/*
 * One page from its key: random (45%), text-like (25%), same-filled (10%),
 * zero (10%), half zero half random (10%): every zram storage class.
 */
static void fill_page(void *page, uint64_t key)
{
	static const char *const words[] = { "swap ", "table ", "cluster ", "folio ",
		"the ", "of ", "entry ", "count ", "shadow ", "cache ", "\n", "slot " };
	uint64_t s = mix64(key) | 1, *w = page;
	unsigned int kind = (unsigned int)(s % 20), i;
	char *c = page;
	size_t n = 0;

	switch (kind) {
	case 0 ... 8:
		for (i = 0; i < PAGE / 8; i++)
			w[i] = test_rand(&s);
		break;
	case 9 ... 13:
		while (n < PAGE) {
			const char *wd = words[test_rand(&s) % 12];
			size_t l = strlen(wd);

			if (l > PAGE - n)
				l = PAGE - n;
			memcpy(c + n, wd, l);
			n += l;
		}
		break;
	case 14 ... 15:
		for (i = 0; i < PAGE / 8; i++)
			w[i] = s;
		break;
	case 16 ... 17:
		memset(page, 0, PAGE);
		break;
	default:
		memset(page, 0, PAGE / 2);
		for (i = PAGE / 16; i < PAGE / 8; i++)
			w[i] = test_rand(&s);
		break;
	}
}

/* Whether fill_page() makes the page of @key all zeros. */
static bool key_is_zero(uint64_t key)
{
	unsigned int kind = (unsigned int)((mix64(key) | 1) % 20);

	return kind == 16 || kind == 17;
}

static int check_page(const void *got, uint64_t key, uint64_t offset, const char *what)
{
	unsigned char want[PAGE];
	size_t i;

	fill_page(want, key);
	if (!memcmp(got, want, PAGE))
		return 0;
	for (i = 0; i < PAGE && ((const unsigned char *)got)[i] == want[i]; i++)
		;
	FAIL("%s: slot %" PRIu64 " (key %" PRIu64 ") differs at byte %zu: %02x, want %02x",
	     what, offset, key, i, ((const unsigned char *)got)[i], want[i]);
}

/* ---- devices ---- */

struct dev {
	const char *name;
	int type;
	struct swap_info_struct *si;
	struct swap_backend *be;	/* the one whose counters count real I/O */
	struct swap_backend *fault;	/* the fault wrapper, or NULL */
	struct uswap_frame_pool *pool;
	bool sync;
	uint64_t max;
	uint64_t *key;			/* per slot: the content key, 0 = not ours */
	uint64_t *shadow;		/* per slot: the shadow it was evicted with */
	uint64_t next_key;
	uint64_t discard_waits;		/* large folios that waited for discards */
	char path[256];			/* swap file to unlink, or "" */
};

static int make_swapfile(char *path, size_t len, uint64_t slots)
{
	const char *tmp = getenv("TMPDIR");
	uint8_t uuid[16];
	void *page;
	int fd, i;

	snprintf(path, len, "%s/swapio-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	if (fd < 0)
		FAIL("mkstemp %s: %s", path, strerror(errno));
	page = aligned_alloc(PAGE, PAGE);
	for (i = 0; i < 16; i++)
		uuid[i] = (uint8_t)mix64(g_seed + (uint64_t)i);
	if (!page || fchmod(fd, 0600) || ftruncate(fd, (off_t)(slots * PAGE)) ||
	    uswap_swap_header_build(page, (uint32_t)(slots - 1), NULL, 0, uuid, "swapio") ||
	    pwrite(fd, page, PAGE, 0) != PAGE) {
		free(page);
		close(fd);
		unlink(path);
		FAIL("making swap file %s", path);
	}
	free(page);
	close(fd);
	return 0;
}

static int dev_attach(struct dev *d, int type)
{
	if (type < 0)
		FAIL("%s: swapon: %s", d->name, strerror(-type));
	d->type = type;
	d->si = atomic_load(&swap_info[type]);
	CHECK(d->si && d->si->bdev);
	if (!d->be)
		d->be = d->si->bdev;
	d->sync = uswap_swap_synchronous(swp_entry((unsigned int)type, 1));
	d->max = d->si->max;
	d->key = calloc(d->max, sizeof(*d->key));
	d->shadow = calloc(d->max, sizeof(*d->shadow));
	CHECK(d->key && d->shadow);
	if (uswap_frame_pool_create(POOL_FRAMES, &d->pool))
		FAIL("frame pool");
	d->next_key = mix64(g_seed ^ (uint64_t)type << 56);
	return 0;
}

/*
 * ThreadSanitizer cannot see the ordering io_uring gives between the
 * submitter's writes to a request and the reaper's (the kernel carries
 * it), and backend_file.c has no __tsan_release/__tsan_acquire pair for
 * it, so TSan reports a race in file_cqe_done() that is not one. Under
 * TSan the file cases run on the pread path, and say so.
 */
static bool file_uring_allowed(void)
{
	return true;
}

/* zram:SIZE:ALGO or file:PATH (a new swap file; USWAP_NO_IO_URING as asked). */
static int dev_open_spec(struct dev *d, const char *name, bool file, bool no_uring)
{
	char spec[300], err[256] = "";
	const char *old = getenv("USWAP_NO_IO_URING");
	char *saved = old ? strdup(old) : NULL;
	int type;

	memset(d, 0, sizeof(*d));
	d->name = name;
	if (file && !file_uring_allowed())
		no_uring = true;
	if (file) {
		TRY(make_swapfile(d->path, sizeof(d->path), DEV_SLOTS));
		snprintf(spec, sizeof(spec), "file:%s", d->path);
	} else {
		snprintf(spec, sizeof(spec), "zram:64M:%s", name + 5);
	}
	if (no_uring)
		setenv("USWAP_NO_IO_URING", "1", 1);
	type = uswap_swapon_spec(spec, 0, err, sizeof(err));
	if (no_uring) {
		if (saved)
			setenv("USWAP_NO_IO_URING", saved, 1);
		else
			unsetenv("USWAP_NO_IO_URING");
	}
	free(saved);
	if (type < 0)
		FAIL("%s: swapon %s: %s (%s)", name, spec, strerror(-type), err);
	TRY(dev_attach(d, type));
	if (file) {
		bool uring = swap_backend_file_uses_uring(swap_backend_base(d->be));

		if (no_uring)
			CHECK(!uring);
		else if (!uring)
			printf("swapio_integrity: %s: io_uring unavailable (%s), ran pread\n",
			       name, swap_backend_describe(d->be));
	}
	return 0;
}

/* A backend built here, wrapped with fault injection, header written. */
static int dev_open_fault(struct dev *d, const char *name, bool file)
{
	struct swap_backend *inner, *fb;
	char err[256] = "";
	uint8_t uuid[16] = { 1, 2, 3 };
	void *page;
	int ret, type;

	memset(d, 0, sizeof(*d));
	d->name = name;
	if (file) {
		TRY(make_swapfile(d->path, sizeof(d->path), DEV_SLOTS));
		ret = swap_backend_file_open(d->path,
					     file_uring_allowed() ? 0 : SWAP_FILE_NO_URING, &inner);
	} else {
		ret = swap_backend_zram_create(DEV_SLOTS, SWAP_ZRAM_LZ4, &inner);
	}
	if (ret)
		FAIL("%s: backend: %s", name, strerror(-ret));
	ret = swap_backend_fault_create(inner, &fb);
	if (ret)
		FAIL("%s: fault wrapper: %s", name, strerror(-ret));
	page = aligned_alloc(PAGE, PAGE);
	CHECK(page);
	CHECK_EQ(uswap_swap_header_build(page, (uint32_t)(DEV_SLOTS - 1), NULL, 0, uuid,
					 "swapio-fault"), 0);
	CHECK_EQ(swap_backend_write(fb, 0, 1, page), 0);
	free(page);
	type = uswap_swapon_backend(fb, 0, err, sizeof(err));
	if (type < 0) {
		swap_backend_destroy(fb);
		FAIL("%s: uswap_swapon_backend: %s (%s)", name, strerror(-type), err);
	}
	d->be = inner;
	d->fault = fb;
	return dev_attach(d, type);
}

static int dev_close(struct dev *d)
{
	struct uswap_swap_stat st;
	uint64_t i;
	int ret;

	for (i = 0; i < d->max; i++)
		if (d->key[i])
			FAIL("%s: slot %" PRIu64 " never swapped in", d->name, i);
	CHECK_EQ(uswap_swap_stat((unsigned int)d->type, &st), 0);
	CHECK_EQ(st.inuse_pages, 0);
	ret = uswap_swapoff_type((unsigned int)d->type);
	if (ret)
		FAIL("%s: swapoff: %s", d->name, strerror(-ret));
	CHECK_EQ(uswap_frame_pool_free_frames(d->pool), POOL_FRAMES);
	uswap_frame_pool_destroy(d->pool);
	free(d->key);
	free(d->shadow);
	if (d->path[0])
		unlink(d->path);
	return 0;
}

struct io_snap {
	struct swap_backend_stats st;
	uint64_t injected;
	uint64_t zero_out, zero_in;	/* zero pages the swap layer kept off the device */
};

static void snap(struct dev *d, struct io_snap *s)
{
	struct uswap_swap_stat ss;

	swap_backend_get_stats(d->be, &s->st);
	s->injected = swap_backend_fault_injected(d->fault);
	s->zero_out = s->zero_in = 0;
	if (!uswap_swap_stat(d->type, &ss)) {
		s->zero_out = ss.zero_out;
		s->zero_in = ss.zero_in;
	}
}

/* ---- swap-out and swap-in of one folio ---- */

/*
 * Slots for the locked @folio. On a device with page discard, emptied
 * clusters wait on the discard list for the device's worker; a large folio
 * fails (-ENOMEM) while every free cluster is still waiting, as in the
 * kernel, whose folio_alloc_swap() discards synchronously for order 0
 * only (its callers split the folio). That depends on how far the worker
 * lags, so here it is drained and the allocation must then succeed.
 */
static int alloc_slots(struct dev *d, struct folio *folio)
{
	struct swap_info_struct *si = d->si;
	int ret = folio_alloc_swap(folio);
	bool waiting;

	if (ret != -ENOMEM || !folio_order(folio))
		return ret;
	uswap_spin_lock(&si->lock);
	waiting = !cluster_list_empty(si, discard_clusters(si));
	uswap_spin_unlock(&si->lock);
	if (!waiting)
		return ret;
	swap_flush_work(si);
	d->discard_waits++;
	return folio_alloc_swap(folio);
}

/*
 * Allocate a folio of @order with fresh content, give it slots and one
 * reference, leaving it locked in the swap cache.
 */
static int prepare_folio(struct dev *d, unsigned int order, struct folio **out)
{
	struct folio *folio = uswap_folio_alloc(d->pool, order);
	unsigned long i;
	uint64_t off;

	CHECK(folio);
	/* Anonymous memory is uptodate before it meets swap (the kernel
	 * asserts it in folio_alloc_swap). */
	folio_mark_uptodate(folio);
	folio_lock(folio);
	CHECK_EQ(alloc_slots(d, folio), 0);
	CHECK_EQ(folio_dup_swap(folio, -1), 0);
	off = swp_offset(folio_swap_entry(folio));
	CHECK_EQ(swp_type(folio_swap_entry(folio)), d->type);
	CHECK(off + folio_nr_pages(folio) <= d->max);
	for (i = 0; i < folio_nr_pages(folio); i++) {
		uint64_t key = ++d->next_key;

		/* Injected errors need I/O: no zero pages on a fault device
		 * (the swap layer writes and reads none). */
		while (d->fault && key_is_zero(key))
			key = ++d->next_key;

		CHECK(!d->key[off + i]);
		fill_page((char *)folio_address(folio) + i * PAGE, key);
		d->key[off + i] = key;
	}
	*out = folio;
	return 0;
}

/* Drop a written, locked folio from the cache with a shadow, poison it, free it. */
static int evict_folio(struct dev *d, struct folio *folio)
{
	swp_entry_t e = folio_swap_entry(folio);
	uint64_t off = swp_offset(e), shadow;
	unsigned long i, nr = folio_nr_pages(folio);

	CHECK(folio_test_locked(folio) && folio_test_swapcache(folio));
	CHECK(!folio_test_dirty(folio) && !folio_test_writeback(folio));
	shadow = workingset_pack_shadow((uint16_t)off, (uint16_t)folio_order(folio),
					d->next_key, off & 1, 0);
	CHECK_EQ(swap_cache_del_folio(folio, shadow), 0);
	CHECK(!folio_test_swapcache(folio));
	memset(folio_address(folio), 0xa5, nr * PAGE);
	folio_unlock(folio);
	folio_put(folio);
	for (i = 0; i < nr; i++) {
		swp_entry_t s = swp_entry(swp_type(e), off + i);

		d->shadow[off + i] = shadow;
		CHECK_EQ(swp_swapcount(s), 1);
		CHECK_EQ(swap_cache_get_shadow(s), shadow);
		CHECK(!swap_cache_get_folio(s));
	}
	return 0;
}

static int swap_out(struct dev *d, unsigned int order, swp_entry_t *entry)
{
	struct folio *folio;

	TRY(prepare_folio(d, order, &folio));
	*entry = folio_swap_entry(folio);
	CHECK_EQ(uswap_swap_writeout(folio, true), 0);
	folio_lock(folio);
	return evict_folio(d, folio);
}

struct in_stats {
	uint64_t majors, hits, ra, pages;
	unsigned int min_order, max_order;
	const struct folio *last;	/* the last folio swapped in (compared only) */
};

/* Check a locked swapped-in folio's pages; then put, free and release it. */
static int finish_folio(struct dev *d, struct folio *f, const char *what)
{
	uint64_t head = swp_offset(folio_swap_entry(f));
	unsigned long i, nr = folio_nr_pages(f);
	unsigned int type = swp_type(folio_swap_entry(f));

	for (i = 0; i < nr; i++) {
		if (!d->key[head + i])
			FAIL("%s: slot %" PRIu64 " swapped in but not ours", what, head + i);
		TRY(check_page((char *)folio_address(f) + i * PAGE, d->key[head + i], head + i,
			       what));
		CHECK_EQ(swp_swapcount(swp_entry(type, head + i)), 1);
	}
	CHECK_EQ(folio_put_swap(f, -1), 0);
	CHECK_EQ(folio_free_swap(f), 1);
	for (i = 0; i < nr; i++) {
		uint64_t tb;
		long c;

		CHECK_EQ(uswap_swap_tb_peek(swp_entry(type, head + i), &tb, &c), 0);
		CHECK(swp_tb_is_null(tb));
		d->key[head + i] = 0;
	}
	folio_unlock(f);
	folio_put(f);
	return 0;
}

/* Swap in @e (single thread), check and release everything it brought. */
static int swap_in(struct dev *d, swp_entry_t e, unsigned long orders, struct in_stats *st,
		   struct uswap_swapin_info *infop)
{
	struct uswap_swapin_info info = { 0 };
	struct folio *f;
	uint64_t head;
	unsigned int order;
	int err;

	err = uswap_swapin(e, d->pool, orders, &f, &info);
	if (err)
		FAIL("%s: uswap_swapin(%" PRIu64 "): %s", d->name, swp_offset(e), strerror(-err));
	err = uswap_swapin_lock(f, e);
	if (err)
		FAIL("%s: uswap_swapin_lock(%" PRIu64 "): %s", d->name, swp_offset(e),
		     strerror(-err));
	CHECK(folio_test_uptodate(f));
	head = swp_offset(folio_swap_entry(f));
	order = folio_order(f);
	CHECK(head <= swp_offset(e) && swp_offset(e) < head + folio_nr_pages(f));
	CHECK(!(head & (folio_nr_pages(f) - 1)));
	/* A miss honours @orders; a hit returns whatever the cache holds. */
	if (info.major)
		CHECK(orders & (1UL << order) || order == 0);
	if (info.major) {
		st->majors++;
		st->ra += info.ra_pages;
		CHECK_EQ(info.shadow, d->shadow[head]);
	} else {
		st->hits++;
		CHECK_EQ(info.ra_pages, 0);
	}
	if (d->sync)
		CHECK_EQ(info.ra_pages, 0);
	st->pages += folio_nr_pages(f);
	if (order < st->min_order)
		st->min_order = order;
	if (order > st->max_order)
		st->max_order = order;
	if (infop)
		*infop = info;
	st->last = f;
	return finish_folio(d, f, d->name);
}

/*
 * Swap in every page still ours of @n folios: on synchronous devices from
 * a random page of each folio (the whole folio comes in), on others page
 * after page (sequential faults: readahead). @skip: a slot to leave alone.
 */
static int swap_in_list(struct dev *d, const swp_entry_t *entries, const unsigned int *order_of,
			unsigned int n, unsigned long orders, struct in_stats *st, uint64_t *rng,
			uint64_t skip)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		unsigned long nr = 1UL << order_of[i], p;
		unsigned long start = d->sync ? (unsigned long)test_rand_below(rng, nr) : 0;
		unsigned long folio_orders = orders ? orders : (2UL << order_of[i]) - 1;

		for (p = 0; p < nr; p++) {
			swp_entry_t e = entries[i];

			e.val += (start + p) % nr;
			if (d->key[swp_offset(e)] && swp_offset(e) != skip)
				TRY(swap_in(d, e, folio_orders, st, NULL));
		}
	}
	return 0;
}

/* ---- (a) integrity at every order ---- */

static int integrity_case(const char *name, bool file, bool no_uring)
{
	static swp_entry_t entries[MAX_FOLIOS];
	static unsigned int order_of[MAX_FOLIOS];
	struct dev d;
	unsigned int order, mode;
	const char *kind;

	g_phase = "integrity";
	TRY(dev_open_spec(&d, name, file, no_uring));
	for (order = 0; order <= USWAP_MAX_ORDER; order++) {
		for (mode = 0; mode < (d.sync ? 2u : 1u); mode++) {
			unsigned int n = PAGES_PER_ORDER >> order, i;
			unsigned long orders = mode ? ALL_ORDERS : (2UL << order) - 1;
			struct in_stats st = { .min_order = 99 };
			struct io_snap a, b, c;
			uint64_t pages = (uint64_t)n << order, r = g_seed ^ order, zpages, zfolios;

			if (!n)
				n = 1;
			snap(&d, &a);
			for (i = 0; i < n; i++) {
				order_of[i] = order;
				TRY(swap_out(&d, order, &entries[i]));
			}
			snap(&d, &b);
			/* Folios of zeros are flagged, not written (swap_io.c);
			 * a folio is written whole or not at all. */
			zpages = b.zero_out - a.zero_out;
			CHECK_EQ(zpages % (1U << order), 0);
			zfolios = zpages >> order;
			CHECK_EQ(b.st.writes - a.st.writes, n - zfolios);
			CHECK_EQ(b.st.write_bytes - a.st.write_bytes, (pages - zpages) * PAGE);
			TRY(swap_in_list(&d, entries, order_of, n, orders, &st, &r, 0));
			snap(&d, &c);
			CHECK_EQ(st.pages, pages);
			/* Each slot read once, or filled with zeros. */
			CHECK_EQ(c.zero_in - b.zero_in, zpages);
			CHECK_EQ(c.st.read_bytes - b.st.read_bytes, (pages - zpages) * PAGE);
			CHECK_EQ(c.st.errors, b.st.errors);
			if (d.sync && mode == 0) {
				/* Each folio comes back whole: a zero one reads nothing. */
				CHECK_EQ(c.st.reads - b.st.reads, st.majors - zfolios);
			} else if (d.sync) {
				/* Folios of any order: one mixing zero and written
				 * slots reads its written pages one by one. */
				CHECK(c.st.reads - b.st.reads <= st.majors + pages - zpages);
			}
			if (d.sync) {
				CHECK_EQ(st.hits, 0);
				CHECK_EQ(st.ra, 0);
				if (mode == 0) {
					/* Only orders up to the folio's: it comes back whole. */
					CHECK_EQ(st.min_order, order);
					CHECK_EQ(st.max_order, order);
					CHECK_EQ(st.majors, n);
				} else {
					CHECK(st.min_order >= order);
				}
			} else {
				CHECK_EQ(st.max_order, 0);
				/* Every slot read once (the misses' own plus
				 * readahead), or filled with zeros. */
				CHECK_EQ(c.st.reads - b.st.reads, pages - zpages);
				CHECK_EQ(st.majors + st.ra, pages);
				CHECK_EQ(st.hits, st.ra);
				if (pages >= 4)
					CHECK(st.ra > 0);
			}
		}
	}
	kind = !file ? "zram" :
	       swap_backend_file_uses_uring(swap_backend_base(d.be)) ? "io_uring" : "pread";
	TRY(dev_close(&d));
	printf("swapio_integrity: integrity %-12s ok (%s)\n", name, kind);
	return 0;
}

/* ---- (b) racing readers ---- */

#define MAX_THREADS 4

struct race {
	struct dev *d;
	pthread_barrier_t start, done;
	unsigned int nthreads;
	unsigned long orders;
	bool stop;				/* written before start */
	swp_entry_t entry[MAX_THREADS];		/* written before start */
	struct folio *got[MAX_THREADS];		/* read after done */
	int err[MAX_THREADS];
	int bad[MAX_THREADS];
};

struct racer {
	struct race *r;
	unsigned int id;
	pthread_t tid;
};

static int race_one(struct race *r, unsigned int id)
{
	struct dev *d = r->d;
	swp_entry_t e = r->entry[id];
	struct uswap_swapin_info info = { 0 };
	struct folio *f = NULL;
	uint64_t head;
	unsigned long i;
	int err;

	r->got[id] = NULL;
	err = uswap_swapin(e, d->pool, r->orders, &f, &info);
	r->err[id] = err;
	if (err)
		return 0;
	r->got[id] = f;
	err = uswap_swapin_lock(f, e);
	r->err[id] = err;
	if (err)
		return 0;
	head = swp_offset(folio_swap_entry(f));
	CHECK(head <= swp_offset(e) && swp_offset(e) < head + folio_nr_pages(f));
	for (i = 0; i < folio_nr_pages(f); i++)
		TRY(check_page((char *)folio_address(f) + i * PAGE, d->key[head + i], head + i,
			       "race"));
	folio_unlock(f);
	return 0;
}

static void *racer_main(void *arg)
{
	struct racer *t = arg;
	struct race *r = t->r;

	for (;;) {
		pthread_barrier_wait(&r->start);
		if (r->stop)
			return NULL;
		r->bad[t->id] = race_one(r, t->id) ? 1 : 0;
		pthread_barrier_wait(&r->done);
	}
}

/* One entry raced by every thread; then released by us. */
static int race_entry(struct race *r)
{
	struct dev *d = r->d;
	struct folio *f;
	unsigned int t;

	pthread_barrier_wait(&r->start);
	pthread_barrier_wait(&r->done);
	for (t = 0; t < r->nthreads; t++) {
		if (r->bad[t])
			FAIL("%s: racer %u saw bad data", d->name, t);
		if (r->err[t])
			FAIL("%s: racer %u on slot %" PRIu64 ": %s", d->name, t,
			     swp_offset(r->entry[t]), strerror(-r->err[t]));
		CHECK(r->got[t] == r->got[0]);
	}
	f = r->got[0];
	folio_lock(f);
	CHECK(folio_matches_swap_entry(f, r->entry[0]));
	TRY(finish_folio(d, f, "race"));	/* drops one reference */
	for (t = 1; t < r->nthreads; t++)
		folio_put(f);
	return 0;
}

static int race_case(const char *name, bool file, uint64_t rounds)
{
	static swp_entry_t entries[64];
	static unsigned int orders_of[64];
	struct racer th[MAX_THREADS];
	struct race r;
	struct dev d;
	uint64_t round, rng = g_seed ^ 0x7ace, reads = 0;
	int ret = 0;

	g_phase = "races";
	TRY(dev_open_spec(&d, name, file, false));
	memset(&r, 0, sizeof(r));
	r.d = &d;
	for (round = 0; round < rounds && !ret; round++) {
		unsigned int n = 4 + (unsigned int)test_rand_below(&rng, 5), i, t;
		struct io_snap a, b;
		uint64_t pages = 0;

		r.nthreads = 2 + (unsigned int)test_rand_below(&rng, MAX_THREADS - 1);
		r.stop = false;
		pthread_barrier_init(&r.start, NULL, r.nthreads + 1);
		pthread_barrier_init(&r.done, NULL, r.nthreads + 1);
		for (t = 0; t < r.nthreads; t++) {
			th[t].r = &r;
			th[t].id = t;
			if (pthread_create(&th[t].tid, NULL, racer_main, &th[t]))
				FAIL("pthread_create");
		}
		for (i = 0; i < n && !ret; i++) {
			orders_of[i] = (unsigned int)test_rand_below(&rng, 4);
			ret = swap_out(&d, orders_of[i], &entries[i]);
			pages += 1UL << orders_of[i];
		}
		snap(&d, &a);
		for (i = 0; i < n && !ret; i++) {
			unsigned long p, nr = 1UL << orders_of[i];

			if (d.sync) {
				struct io_snap x, y;

				/* Every thread faults some page of the same folio. */
				r.orders = (2UL << orders_of[i]) - 1;
				for (t = 0; t < r.nthreads; t++) {
					r.entry[t] = entries[i];
					r.entry[t].val += test_rand_below(&rng, nr);
				}
				snap(&d, &x);
				ret = race_entry(&r);
				snap(&d, &y);
				/* One read, or one zero fill of a folio of zeros. */
				if (!ret && y.st.reads - x.st.reads + (y.zero_in - x.zero_in) / nr != 1) {
					fprintf(stderr, "swapio_integrity: %s: %" PRIu64
						" reads, %" PRIu64 " zero pages for one folio\n", name,
						y.st.reads - x.st.reads, y.zero_in - x.zero_in);
					ret = -1;
				}
				continue;
			}
			/* Files: the same page, page after page (readahead too). */
			r.orders = 1;
			for (p = 0; p < nr && !ret; p++) {
				swp_entry_t e = entries[i];

				e.val += p;
				if (!d.key[swp_offset(e)])
					continue;
				for (t = 0; t < r.nthreads; t++)
					r.entry[t] = e;
				ret = race_entry(&r);
			}
		}
		r.stop = true;
		pthread_barrier_wait(&r.start);
		for (t = 0; t < r.nthreads; t++)
			pthread_join(th[t].tid, NULL);
		pthread_barrier_destroy(&r.start);
		pthread_barrier_destroy(&r.done);
		if (ret)
			return -1;
		snap(&d, &b);
		/* Each slot read exactly once, whoever won, or filled with zeros. */
		CHECK_EQ(b.st.read_bytes - a.st.read_bytes, (pages - (b.zero_in - a.zero_in)) * PAGE);
		reads += b.st.reads - a.st.reads;
	}
	TRY(dev_close(&d));
	printf("swapio_integrity: races %-12s ok (%" PRIu64 " rounds, %" PRIu64 " reads, %" PRIu64
	       " discard waits)\n", name, rounds, reads, d.discard_waits);
	return 0;
}

/* ---- (c) injected errors ---- */

/* Swap in @e expecting -EIO from the lock; the slot keeps its count. */
static int swap_in_eio(struct dev *d, swp_entry_t e, unsigned long orders)
{
	struct uswap_swapin_info info = { 0 };
	struct folio *f;
	long before = swp_swapcount(e);
	unsigned long i, nr;
	uint64_t head;
	int err;

	CHECK_EQ(before, 1);
	err = uswap_swapin(e, d->pool, orders, &f, &info);
	if (err)
		FAIL("%s: uswap_swapin(%" PRIu64 "): %s", d->name, swp_offset(e), strerror(-err));
	err = uswap_swapin_lock(f, e);
	if (err != -EIO)
		FAIL("%s: uswap_swapin_lock(%" PRIu64 ") = %d, want -EIO", d->name, swp_offset(e),
		     err);
	CHECK(!folio_test_swapcache(f));
	CHECK(!folio_test_uptodate(f));
	nr = folio_nr_pages(f);
	head = swp_offset(e) & ~(uint64_t)(nr - 1);
	folio_put(f);
	/* Every slot of the failed folio: count kept, nothing cached. */
	for (i = 0; i < nr; i++) {
		swp_entry_t s = swp_entry(swp_type(e), head + i);
		uint64_t tb;
		long c;

		CHECK_EQ(swp_swapcount(s), before);
		CHECK(!swap_cache_get_folio(s));
		CHECK_EQ(uswap_swap_tb_peek(s, &tb, &c), 0);
		CHECK(swp_tb_is_shadow(tb));
		CHECK_EQ(c, before);
		/* The shadow was consumed by the failed attempt's refault. */
		d->shadow[head + i] = swap_cache_get_shadow(s);
	}
	return 0;
}

/*
 * A failed readahead read leaves a folio in the cache that is not
 * uptodate; the fault on it gets -EIO and drops it. Return 1 if one was
 * there (and is now gone), 0 if not.
 */
static int drop_failed_readahead(struct dev *d, swp_entry_t e)
{
	struct folio *f = swap_cache_get_folio(e);
	bool uptodate;

	if (!f)
		return 0;
	folio_lock(f);		/* waits for its read */
	uptodate = folio_test_uptodate(f);
	folio_unlock(f);
	folio_put(f);
	if (uptodate)
		FAIL("%s: slot %" PRIu64 " cached and uptodate though its reads fail", d->name,
		     swp_offset(e));
	TRY(swap_in_eio(d, e, 1));
	return 1;
}

/* A failed write: the folio stays cached, dirty and intact. */
static int fault_write_round(struct dev *d, uint64_t *rng)
{
	struct folio *folios[8], *victim;
	swp_entry_t entries[8], ve;
	unsigned int order_of[8];
	unsigned int n = 3 + (unsigned int)test_rand_below(rng, 6), v, i;
	bool by_offset = test_rand(rng) & 1, rewrite = test_rand(rng) & 1;
	struct in_stats st = { .min_order = 99 };
	struct uswap_swapin_info info = { 0 };
	struct io_snap a, b;
	uint64_t pages = 0, vpages;
	unsigned long p;

	for (i = 0; i < n; i++) {
		order_of[i] = (unsigned int)test_rand_below(rng, 4);
		TRY(prepare_folio(d, order_of[i], &folios[i]));
		entries[i] = folio_swap_entry(folios[i]);
		pages += folio_nr_pages(folios[i]);
	}
	v = (unsigned int)test_rand_below(rng, n);
	victim = folios[v];
	ve = entries[v];
	vpages = folio_nr_pages(victim);
	if (by_offset)
		CHECK_EQ(swap_backend_fault_fail_offset(d->fault, SWAP_FAULT_WRITE,
			 swp_offset(ve) + test_rand_below(rng, vpages), -EIO), 0);
	else
		CHECK_EQ(swap_backend_fault_fail_nth(d->fault, SWAP_FAULT_WRITE, v + 1, -EIO), 0);
	snap(d, &a);
	for (i = 0; i < n; i++)
		CHECK_EQ(uswap_swap_writeout(folios[i], true), i == v ? -EIO : 0);
	snap(d, &b);
	swap_backend_fault_clear(d->fault);
	CHECK_EQ(b.injected - a.injected, 1);
	CHECK_EQ(b.st.write_bytes - a.st.write_bytes, (pages - vpages) * PAGE);
	/* The victim: still cached, dirty, not under writeback, data intact. */
	CHECK(!folio_test_locked(victim));
	CHECK(folio_test_swapcache(victim) && folio_matches_swap_entry(victim, ve));
	CHECK(folio_test_dirty(victim) && !folio_test_writeback(victim));
	for (p = 0; p < vpages; p++) {
		CHECK_EQ(swp_swapcount(swp_entry(swp_type(ve), swp_offset(ve) + p)), 1);
		TRY(check_page((char *)folio_address(victim) + p * PAGE,
			       d->key[swp_offset(ve) + p], swp_offset(ve) + p, "failed write"));
	}
	for (i = 0; i < n; i++) {
		if (i == v)
			continue;
		folio_lock(folios[i]);
		TRY(evict_folio(d, folios[i]));
	}
	if (rewrite) {
		/* Nothing was lost: write it again and evict it. */
		folio_lock(victim);
		CHECK_EQ(uswap_swap_writeout(victim, true), 0);
		folio_lock(victim);
		TRY(evict_folio(d, victim));
	} else {
		folio_put(victim);	/* the cache keeps it */
	}
	snap(d, &a);
	/* The victim first: without rewrite a hit on the very same folio. */
	g_phase = rewrite ? "write fault: rewritten victim" : "write fault: cached victim";
	TRY(swap_in(d, swp_entry(swp_type(ve), swp_offset(ve) + test_rand_below(rng, vpages)),
		    d->sync ? (2UL << order_of[v]) - 1 : 1, &st, &info));
	CHECK_EQ(info.major, rewrite);
	if (!rewrite)
		CHECK(st.last == victim);
	/* Everything else reads back fine. */
	g_phase = "write fault: the others";
	TRY(swap_in_list(d, entries, order_of, n, d->sync ? ALL_ORDERS : 1, &st, rng, 0));
	snap(d, &b);
	CHECK_EQ(st.pages, pages);
	CHECK_EQ(b.st.read_bytes - a.st.read_bytes, (rewrite ? pages : pages - vpages) * PAGE);
	return 0;
}

/* A failed read: that folio alone fails, keeps its counts, reads later. */
static int fault_read_round(struct dev *d, uint64_t *rng)
{
	swp_entry_t entries[8], vslot;
	unsigned int order_of[8];
	unsigned int n = 3 + (unsigned int)test_rand_below(rng, 6), v, i;
	bool direct = test_rand(rng) & 1;
	struct in_stats st = { .min_order = 99 };
	struct uswap_swapin_info info = { 0 };
	struct io_snap a, b;
	uint64_t pages = 0, eio = 0;

	for (i = 0; i < n; i++) {
		order_of[i] = (unsigned int)test_rand_below(rng, 4);
		TRY(swap_out(d, order_of[i], &entries[i]));
		pages += 1UL << order_of[i];
	}
	v = (unsigned int)test_rand_below(rng, n);
	vslot = entries[v];
	vslot.val += test_rand_below(rng, 1UL << order_of[v]);
	CHECK_EQ(swap_backend_fault_fail_offset(d->fault, SWAP_FAULT_READ, swp_offset(vslot),
						-EIO), 0);
	snap(d, &a);
	g_phase = "read fault: victim first";
	if (direct) {
		TRY(swap_in_eio(d, vslot, d->sync ? (2UL << order_of[v]) - 1 : 1));
		eio++;
	}
	/*
	 * The neighbours, with the fault still armed: each folio at its own
	 * order only, so that none covers the victim. On a file, readahead
	 * may pull the victim's slot in and fail on it.
	 */
	g_phase = "read fault: neighbours, armed";
	if (d->sync) {
		for (i = 0; i < n; i++)
			if (i != v)
				TRY(swap_in_list(d, &entries[i], &order_of[i], 1, 0, &st, rng, 0));
	} else {
		TRY(swap_in_list(d, entries, order_of, n, 1, &st, rng, swp_offset(vslot)));
	}
	g_phase = "read fault: victim after neighbours";
	if (!direct) {
		int r = d->sync ? 0 : drop_failed_readahead(d, vslot);

		TRY(r);
		if (!r)
			TRY(swap_in_eio(d, vslot, d->sync ? (2UL << order_of[v]) - 1 : 1));
		eio++;
	}
	swap_backend_fault_clear(d->fault);
	g_phase = "read fault: cleared";
	if (!d->sync) {
		int r = drop_failed_readahead(d, vslot);

		TRY(r);
		eio += (uint64_t)r;
	}
	/* Cleared: the next swap-in reads the right data. */
	TRY(swap_in(d, vslot, d->sync ? (2UL << order_of[v]) - 1 : 1, &st, &info));
	CHECK(info.major);
	TRY(swap_in_list(d, entries, order_of, n, 0, &st, rng, 0));
	snap(d, &b);
	CHECK_EQ(st.pages, pages);
	/* Each slot read successfully once; the injected failures on top. */
	CHECK_EQ(b.st.read_bytes - a.st.read_bytes, pages * PAGE);
	CHECK(b.injected - a.injected >= eio);
	return 0;
}

static int fault_case(const char *name, bool file, uint64_t rounds)
{
	uint64_t round, rng = g_seed ^ 0xfa17;
	struct dev d;
	int ret = dev_open_fault(&d, name, file);

	TRY(ret);
	for (round = 0; round < rounds; round++) {
		TRY(fault_write_round(&d, &rng));
		TRY(fault_read_round(&d, &rng));
	}
	TRY(dev_close(&d));
	printf("swapio_integrity: faults %-12s ok (%" PRIu64 " rounds)\n", name, rounds);
	return 0;
}

/* ---- (d) the readahead window ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

#define RA_PAGES	2048
#define RA_SEQ		256

static int readahead_case(void)
{
	static uint64_t offs[RA_PAGES];
	struct in_stats st = { .min_order = 99 };
	struct uswap_swapin_info info = { 0 };
	unsigned int i, last_ra = 0, max_ra = 0, nr_random = 0;
	uint64_t start = 0, run = 0, rng = g_seed ^ 0x4a;
	const unsigned int want_shrink[] = { 3, 1, 0, 0, 0, 0 };
	struct dev d;
	unsigned int type;

	g_phase = "readahead: sequential faults";
	TRY(dev_open_spec(&d, "file-ra", true, false));
	type = (unsigned int)d.type;
	CHECK(!d.sync);
	for (i = 0; i < RA_PAGES; i++) {
		swp_entry_t e;

		TRY(swap_out(&d, 0, &e));
		offs[i] = swp_offset(e);
	}
	qsort(offs, RA_PAGES, sizeof(offs[0]), cmp_u64);
	/* The longest run of consecutive slots, from a multiple of 16. */
	for (i = 0; i < RA_PAGES && !run; i++) {
		unsigned int j = i;

		if (offs[i] % 16)
			continue;
		while (j + 1 < RA_PAGES && offs[j + 1] == offs[j] + 1)
			j++;
		if (j - i + 1 >= RA_SEQ + 16 * 8) {
			start = offs[i];
			run = j - i + 1;
		}
	}
	if (!run)
		FAIL("no run of %d consecutive slots among %d order-0 allocations", RA_SEQ + 128,
		     RA_PAGES);
	/*
	 * Sequential: misses read ahead 0, 0, 1, 3, 7, 7, ... (window
	 * = hits + 2 rounded up to a power of two, capped at 8); every
	 * readahead folio is then a hit. Stop right after a miss so that no
	 * hits carry over into the random phase.
	 */
	for (i = 0; i < RA_SEQ; i++) {
		swp_entry_t e = swp_entry(type, start + i);

		if (!d.key[start + i])
			continue;
		TRY(swap_in(&d, e, 1, &st, &info));
		if (!info.major)
			continue;
		if (info.ra_pages < last_ra)
			FAIL("sequential fault at +%u: ra_pages %u after %u", i, info.ra_pages,
			     last_ra);
		last_ra = info.ra_pages;
		if (last_ra > max_ra)
			max_ra = last_ra;
		if (i >= RA_SEQ - 9 && last_ra == 7) {
			/* the last miss of the phase */
			CHECK_EQ(swap_cluster_ra_last_pages(), 8);
			break;
		}
	}
	CHECK_EQ(max_ra, 7);
	/* All readahead was hit but the last miss's, which we stopped at. */
	CHECK_EQ(st.hits + last_ra, st.ra);
	g_phase = "readahead: random faults";
	/*
	 * Random: faults far from each other and from the last, no hits in
	 * between: the window halves, 8 -> 4 -> 2 -> 1, never below half the
	 * last; readahead adds 3, 1, 0, 0, ...
	 */
	for (i = 0; i < sizeof(want_shrink) / sizeof(want_shrink[0]); i++) {
		/* A fresh 16-slot block in the run, past the sequential part. */
		uint64_t blk = (RA_SEQ + 32 + 16 * (uint64_t)(i * 2 + test_rand_below(&rng, 2))) ;
		uint64_t o = start + blk + 5 + test_rand_below(&rng, 8);

		CHECK(blk + 16 <= run);
		CHECK(d.key[o]);
		TRY(swap_in(&d, swp_entry(type, o), 1, &st, &info));
		CHECK(info.major);
		if (info.ra_pages != want_shrink[i])
			FAIL("random fault %u at %" PRIu64 ": ra_pages %u, want %u", i, o,
			     info.ra_pages, want_shrink[i]);
		nr_random++;
	}
	CHECK_EQ(swap_cluster_ra_last_pages(), 1);
	/* The rest, readahead leftovers included. */
	for (i = 0; i < RA_PAGES; i++)
		if (d.key[offs[i]])
			TRY(swap_in(&d, swp_entry(type, offs[i]), 1, &st, NULL));
	TRY(dev_close(&d));
	printf("swapio_integrity: readahead ok (run of %" PRIu64 " slots from %" PRIu64
	       ", %u random faults)\n", run, start, nr_random);
	return 0;
}

int main(void)
{
	uint64_t ops, races, faults;

	g_seed = test_seed("swapio_integrity");
	ops = test_ops(100000);
	races = ops / 500;
	faults = ops / 5000;
	races = races < 1 ? 1 : races > 1000 ? 1000 : races;
	faults = faults < 1 ? 1 : faults > 1000 ? 1000 : faults;
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (integrity_case("zram-lz4", false, false) ||
	    integrity_case("zram-zstd", false, false) ||
	    integrity_case("file-uring", true, false) ||
	    integrity_case("file-pread", true, true) ||
	    race_case("zram-lz4", false, races) ||
	    race_case("file-uring", true, races) ||
	    fault_case("fault-zram", false, faults) ||
	    fault_case("fault-file", true, faults) ||
	    readahead_case())
		return 1;
	printf("swapio_integrity: pass\n");
	return 0;
}
