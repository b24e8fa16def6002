/* SPDX-License-Identifier: MIT */
/*
 * Compressed memory backend, zram-like and synchronous: every request
 * completes inside submit.
 *
 * Per slot one of: empty (reads as zeroes), same-filled (the page is one
 * 8-byte word repeated; only the word is kept), compressed (lz4 or zstd
 * output, kept when it is smaller than ZRAM_MAX_COMP) or raw (the page as
 * is). Stored buffers come from a zpool (zpool.h), in 32-byte classes.
 *
 * Locking: a slot is guarded by one of ZRAM_NR_LOCKS striped mutexes
 * (slot & mask). Compression runs outside the lock into a codec context's
 * scratch buffer, so the lock covers only the swap of the slot's pointer
 * and, for reads, the copy or decompression out of it. Codec contexts
 * (zstd CCtx/DCtx, lz4 state, scratch) come from a free list under
 * ctx_lock; a thread takes one per submit and gives it back, so contexts
 * are reused without thread-local storage and at most one exists per
 * thread concurrently in submit.
 * Lock order: ctx_lock and the slot locks are never held together.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <zstd.h>

#include "io/backend.h"
#include "io/zpool.h"
#include "util/alloc.h"
#include "util/debug.h"
#include "util/lock.h"

#define ZRAM_NR_LOCKS	256U		/* power of two */
#define ZRAM_MAX_COMP	(SWAP_BACKEND_PAGE_SIZE * 3 / 4)	/* keep if < this */
#define ZRAM_ZSTD_LEVEL	1

enum zslot_state {
	ZSLOT_EMPTY = 0,
	ZSLOT_SAME,
	ZSLOT_COMP,
	ZSLOT_RAW,
};

/*
 * One per slot, 16 bytes. Protected by the slot's stripe lock.
 * state == EMPTY/SAME => size == 0; COMP => 0 < size < ZRAM_MAX_COMP;
 * RAW => size == 4096.
 */
struct zslot {
	union {
		void *data;		/* COMP, RAW: from the zpool, size bytes */
		uint64_t fill;		/* SAME: the repeated word */
	};
	uint16_t size;
	uint8_t state;			/* enum zslot_state */
};
_Static_assert(sizeof(struct zslot) == 16, "zram slot metadata is 16 bytes");
_Static_assert(SWAP_BACKEND_PAGE_SIZE <= UINT16_MAX, "size fits in 16 bits");

struct zctx {
	struct zctx *next;		/* ctx free list, under ctx_lock */
	ZSTD_CCtx *cctx;
	ZSTD_DCtx *dctx;
	void *lz4_state;
	char scratch[ZRAM_MAX_COMP];
};

/*
 * A stripe: the lock of every slot with off & (ZRAM_NR_LOCKS - 1) equal to
 * its index, and the counts of those slots. The counts change under the
 * lock (a plain load and store, no locked instruction: writers on other
 * stripes never share its cache line) and are read without it.
 * Invariants at rest (no I/O in flight), per stripe:
 *   nr_same + nr_comp + nr_raw == number of its non-empty slots
 *   compr_bytes == sum of size over its slots
 */
struct zstripe {
	alignas(64) struct uswap_mutex lock;
	_Atomic uint64_t nr_same, nr_comp, nr_raw, compr_bytes;	/* lock */
};

struct zram {
	struct swap_backend be;
	enum swap_zram_algo algo;	/* constant */
	struct zslot *slots;		/* nr_slots entries */
	struct zpool *pool;		/* stored data; constant */
	struct zstripe stripes[ZRAM_NR_LOCKS];
	struct uswap_mutex ctx_lock;
	struct zctx *ctx_free;		/* under ctx_lock */
	uint64_t meta_bytes;		/* constant */
};

static inline struct zram *to_zram(struct swap_backend *be)
{
	return container_of(be, struct zram, be);
}

static inline struct zstripe *slot_stripe(struct zram *z, uint64_t off)
{
	return &z->stripes[off & (ZRAM_NR_LOCKS - 1)];
}

/**
 * swap_zram_algo_name() - the name of a compression algorithm
 * @algo: SWAP_ZRAM_LZ4 or SWAP_ZRAM_ZSTD
 *
 * Context: any.
 * Return: "lz4", "zstd", or "?" for an unknown value.
 */
const char *swap_zram_algo_name(enum swap_zram_algo algo)
{
	switch (algo) {
	case SWAP_ZRAM_LZ4:
		return "lz4";
	case SWAP_ZRAM_ZSTD:
		return "zstd";
	}
	return "?";
}

static void zctx_free(struct zctx *c)
{
	if (!c)
		return;
	ZSTD_freeCCtx(c->cctx);
	ZSTD_freeDCtx(c->dctx);
	free(c->lz4_state);
	free(c);
}

static struct zctx *zctx_get(struct zram *z)
{
	struct zctx *c;

	uswap_mutex_lock(&z->ctx_lock);
	c = z->ctx_free;
	if (c)
		z->ctx_free = c->next;
	uswap_mutex_unlock(&z->ctx_lock);
	if (c)
		return c;

	c = uswap_calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	if (z->algo == SWAP_ZRAM_ZSTD) {
		c->cctx = ZSTD_createCCtx();
		c->dctx = ZSTD_createDCtx();
		if (!c->cctx || !c->dctx)
			goto fail;
	} else {
		c->lz4_state = uswap_malloc((size_t)LZ4_sizeofState());
		if (!c->lz4_state)
			goto fail;
	}
	return c;
fail:
	zctx_free(c);
	return NULL;
}

static void zctx_put(struct zram *z, struct zctx *c)
{
	uswap_mutex_lock(&z->ctx_lock);
	c->next = z->ctx_free;
	z->ctx_free = c;
	uswap_mutex_unlock(&z->ctx_lock);
}

/* True (and *fill set) when the page is one 8-byte word repeated. */
static bool page_same_filled(const void *page, uint64_t *fill)
{
	const uint64_t *w = page;
	uint64_t v = w[0];
	size_t i;

	for (i = 1; i < SWAP_BACKEND_PAGE_SIZE / sizeof(*w); i++)
		if (w[i] != v)
			return false;
	*fill = v;
	return true;
}

/* Add @d to a stripe count. Context: the stripe's lock. */
static void stat_add(_Atomic uint64_t *c, int64_t d)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + (uint64_t)d,
			      memory_order_relaxed);
}

static void __zslot_account(struct zstripe *st, const struct zslot *s, int sign)
{
	uswap_assert_held(&st->lock);
	switch (s->state) {
	case ZSLOT_SAME:
		stat_add(&st->nr_same, sign);
		break;
	case ZSLOT_COMP:
		stat_add(&st->nr_comp, sign);
		break;
	case ZSLOT_RAW:
		stat_add(&st->nr_raw, sign);
		break;
	default:
		return;
	}
	stat_add(&st->compr_bytes, sign * (int64_t)s->size);
}

/* Replace slot @off with @new; the old data is freed outside the lock. */
static void zslot_replace(struct zram *z, uint64_t off, struct zslot new)
{
	struct zstripe *st = slot_stripe(z, off);
	struct zslot old;

	uswap_mutex_lock(&st->lock);
	old = z->slots[off];
	z->slots[off] = new;
	__zslot_account(st, &old, -1);
	__zslot_account(st, &new, 1);
	uswap_mutex_unlock(&st->lock);
	if (old.state == ZSLOT_COMP || old.state == ZSLOT_RAW)
		zpool_free(z->pool, old.data);
}

static int zram_write_page(struct zram *z, struct zctx *c, uint64_t off,
			   const void *src)
{
	struct zslot new = { .state = ZSLOT_EMPTY };
	size_t n = 0;
	uint64_t fill;

	if (page_same_filled(src, &fill)) {
		new.fill = fill;
		new.state = ZSLOT_SAME;
		zslot_replace(z, off, new);
		return 0;
	}
	if (z->algo == SWAP_ZRAM_ZSTD) {
		size_t r = ZSTD_compressCCtx(c->cctx, c->scratch, ZRAM_MAX_COMP - 1,
					     src, SWAP_BACKEND_PAGE_SIZE,
					     ZRAM_ZSTD_LEVEL);
		n = ZSTD_isError(r) ? 0 : r;	/* dstSize_tooSmall: raw */
	} else {
		int r = LZ4_compress_fast_extState(c->lz4_state, src, c->scratch,
						   SWAP_BACKEND_PAGE_SIZE,
						   ZRAM_MAX_COMP - 1, 1);
		n = r > 0 ? (size_t)r : 0;
	}
	if (n) {
		new.state = ZSLOT_COMP;
		new.size = (uint16_t)n;
		new.data = zpool_alloc(z->pool, n);
		if (!new.data)
			return -ENOMEM;
		memcpy(new.data, c->scratch, n);
	} else {
		new.state = ZSLOT_RAW;
		new.size = SWAP_BACKEND_PAGE_SIZE;
		new.data = zpool_alloc(z->pool, SWAP_BACKEND_PAGE_SIZE);
		if (!new.data)
			return -ENOMEM;
		memcpy(new.data, src, SWAP_BACKEND_PAGE_SIZE);
	}
	zslot_replace(z, off, new);
	return 0;
}

static int zram_read_page(struct zram *z, struct zctx *c, uint64_t off,
			  void *dst)
{
	struct uswap_mutex *lk = &slot_stripe(z, off)->lock;
	struct zslot *s = &z->slots[off];
	uint64_t *w = dst;
	int ret = 0;
	size_t i;

	uswap_mutex_lock(lk);
	switch (s->state) {
	case ZSLOT_EMPTY:
		memset(dst, 0, SWAP_BACKEND_PAGE_SIZE);
		break;
	case ZSLOT_SAME:
		for (i = 0; i < SWAP_BACKEND_PAGE_SIZE / sizeof(*w); i++)
			w[i] = s->fill;
		break;
	case ZSLOT_RAW:
		memcpy(dst, s->data, SWAP_BACKEND_PAGE_SIZE);
		break;
	case ZSLOT_COMP:
		if (z->algo == SWAP_ZRAM_ZSTD) {
			size_t r = ZSTD_decompressDCtx(c->dctx, dst,
						       SWAP_BACKEND_PAGE_SIZE,
						       s->data, s->size);
			if (ZSTD_isError(r) || r != SWAP_BACKEND_PAGE_SIZE)
				ret = -EIO;
		} else {
			int r = LZ4_decompress_safe(s->data, dst, s->size,
						    SWAP_BACKEND_PAGE_SIZE);
			if (r != (int)SWAP_BACKEND_PAGE_SIZE)
				ret = -EIO;
		}
		break;
	default:
		ret = -EIO;
	}
	uswap_mutex_unlock(lk);
	return ret;
}

/* Whether a batch needs a codec context: lz4 decompresses without one. */
static bool zram_needs_ctx(const struct zram *z, const struct swap_io_req *reqs,
			   unsigned int nr)
{
	unsigned int i;

	if (z->algo != SWAP_ZRAM_LZ4)
		return true;
	for (i = 0; i < nr; i++)
		if (reqs[i].op == SWAP_IO_WRITE)
			return true;
	return false;
}

static int zram_submit(struct swap_backend *be, struct swap_io_req *reqs,
		       unsigned int nr)
{
	struct zram *z = to_zram(be);
	bool need = zram_needs_ctx(z, reqs, nr);
	struct zctx *c = need ? zctx_get(z) : NULL;
	unsigned int i, j;

	for (i = 0; i < nr; i++) {
		struct swap_io_req *r = &reqs[i];
		int ret = c || !need ? 0 : -ENOMEM;

		for (j = 0; !ret && j < r->nr; j++) {
			char *page = (char *)r->buf +
				     ((size_t)j << SWAP_BACKEND_PAGE_SHIFT);

			if (r->op == SWAP_IO_WRITE)
				ret = zram_write_page(z, c, r->offset + j, page);
			else
				ret = zram_read_page(z, c, r->offset + j, page);
		}
		swap_backend_complete(be, r, ret);
	}
	if (c)
		zctx_put(z, c);
	return 0;
}

static void zram_free_slot(struct zram *z, uint64_t off)
{
	struct zslot empty = { .state = ZSLOT_EMPTY };

	zslot_replace(z, off, empty);
}

static int zram_discard(struct swap_backend *be, uint64_t offset, uint64_t nr)
{
	struct zram *z = to_zram(be);
	uint64_t i;

	for (i = 0; i < nr; i++)
		zram_free_slot(z, offset + i);
	return 0;
}

static void zram_slot_free_notify(struct swap_backend *be, uint64_t offset)
{
	zram_free_slot(to_zram(be), offset);
}

static void zram_destroy(struct swap_backend *be)
{
	struct zram *z = to_zram(be);
	struct zctx *c, *next;
	unsigned int k;

	zpool_destroy(z->pool);		/* all stored data with it */
	free(z->slots);
	for (c = z->ctx_free; c; c = next) {
		next = c->next;
		zctx_free(c);
	}
	for (k = 0; k < ZRAM_NR_LOCKS; k++)
		uswap_mutex_destroy(&z->stripes[k].lock);
	uswap_mutex_destroy(&z->ctx_lock);
	free(z);
}

static const struct swap_backend_ops zram_ops = {
	.name = "zram",
	.submit = zram_submit,
	.discard = zram_discard,
	.slot_free_notify = zram_slot_free_notify,
	.destroy = zram_destroy,
};

static void format_size(char *buf, size_t len, uint64_t bytes)
{
	static const char sfx[] = "KMGT";
	int i = -1;

	while (i < 3 && bytes && !(bytes & 1023)) {
		bytes >>= 10;
		i++;
	}
	if (i < 0)
		snprintf(buf, len, "%" PRIu64, bytes);
	else
		snprintf(buf, len, "%" PRIu64 "%c", bytes, sfx[i]);
}

/**
 * swap_backend_zram_create() - a compressed in-memory backend
 * @nr_slots: size in slots, >= 1 (slot 0 included; the swap layer writes
 *            its header there with an ordinary write)
 * @algo: SWAP_ZRAM_LZ4 or SWAP_ZRAM_ZSTD
 * @out: the new backend
 *
 * Every slot starts empty and reads as zeroes. The slot metadata (16 bytes
 * per slot) is allocated here; page data as pages are written.
 *
 * Context: any thread; allocates.
 * Return: 0; -EINVAL for nr_slots 0 or an unknown @algo; -ENOMEM.
 */
int swap_backend_zram_create(uint64_t nr_slots, enum swap_zram_algo algo,
			     struct swap_backend **out)
{
	char size[32];
	struct zram *z;
	unsigned int k;

	if (!out || !nr_slots || (algo != SWAP_ZRAM_LZ4 && algo != SWAP_ZRAM_ZSTD))
		return -EINVAL;
	if (nr_slots > SIZE_MAX / sizeof(struct zslot))
		return -ENOMEM;
	z = uswap_aligned_alloc(alignof(struct zram), sizeof(*z));	/* stripes: own lines */
	if (!z)
		return -ENOMEM;
	memset(z, 0, sizeof(*z));
	z->slots = uswap_calloc((size_t)nr_slots, sizeof(struct zslot));
	if (!z->slots || zpool_create(&z->pool)) {
		free(z->slots);
		free(z);
		return -ENOMEM;
	}
	swap_backend_init(&z->be, &zram_ops, nr_slots, true);
	z->be.stable_writes = true;	/* it compresses the page (zram does) */
	z->algo = algo;
	for (k = 0; k < ZRAM_NR_LOCKS; k++)
		uswap_mutex_init(&z->stripes[k].lock);
	uswap_mutex_init(&z->ctx_lock);
	z->meta_bytes = sizeof(*z) + nr_slots * sizeof(struct zslot);
	format_size(size, sizeof(size), nr_slots << SWAP_BACKEND_PAGE_SHIFT);
	snprintf(z->be.desc, sizeof(z->be.desc), "zram:%s %s", size,
		 swap_zram_algo_name(algo));
	*out = &z->be;
	return 0;
}

/**
 * swap_backend_zram_stats() - memory accounting of a zram backend
 * @be: a backend made by swap_backend_zram_create()
 * @out: filled in (see struct swap_zram_stats)
 *
 * Context: any thread; lockless snapshot.
 * Return: 0; -EINVAL if @be is not a zram backend.
 */
int swap_backend_zram_stats(struct swap_backend *be, struct swap_zram_stats *out)
{
	struct zram *z;
	unsigned int k;

	if (!be || !out)
		return -EINVAL;
	be = swap_backend_base(be);
	if (be->ops != &zram_ops)
		return -EINVAL;
	z = to_zram(be);
	memset(out, 0, sizeof(*out));
	for (k = 0; k < ZRAM_NR_LOCKS; k++) {
		struct zstripe *st = &z->stripes[k];

		out->same_pages += atomic_load_explicit(&st->nr_same, memory_order_relaxed);
		out->compressed_pages += atomic_load_explicit(&st->nr_comp,
							      memory_order_relaxed);
		out->raw_pages += atomic_load_explicit(&st->nr_raw, memory_order_relaxed);
		out->compr_data_size += atomic_load_explicit(&st->compr_bytes,
							     memory_order_relaxed);
	}
	out->pages_stored = out->same_pages + out->compressed_pages +
			    out->raw_pages;
	out->orig_data_size = out->pages_stored << SWAP_BACKEND_PAGE_SHIFT;
	out->meta_bytes = z->meta_bytes;
	out->pool_bytes = zpool_bytes(z->pool);
	out->mem_used = out->compr_data_size + out->meta_bytes;
	out->ratio = (double)out->orig_data_size / (double)out->mem_used;
	return 0;
}
