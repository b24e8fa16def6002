/* SPDX-License-Identifier: MIT */
/*
 * Encryption wrapper: a backend that seals every page it writes to another
 * backend and opens every page it reads back, so that what a device holds
 * is neither readable nor changeable without the swap layer noticing.
 *
 * Cipher. An AEAD from libsodium: AES-256-GCM where the CPU has AES-NI and
 * PCLMUL (crypto_aead_aes256gcm_is_available()), else XChaCha20-Poly1305;
 * one 16-byte tag per 4096-byte page. The key is made at create from the
 * system's random source and lives only in this process, in locked memory
 * (sodium_malloc: mlock'd, guard pages, excluded from core dumps, wiped on
 * fork, zeroed at destroy). It is never written anywhere, so what a device
 * holds is unreadable once the device is gone, as with a swap partition on
 * dm-crypt with a throw-away key.
 *
 * Nonce. One 64-bit counter per key, taken once per page written, never 0
 * and never reused (2^64 writes do not happen); the nonce is the counter in
 * little-endian, zero-padded to the cipher's nonce size. Associated data:
 * the slot number, so that a page copied to another slot fails to open.
 *
 * Metadata. Per slot, in memory: the counter of its last write and its tag,
 * 24 bytes (0.59% of the page), in an anonymous mapping that the kernel
 * fills a page at a time as slots are first written (and keeps). A write's counter and
 * tag are stored when the write completes without error, so that a failed
 * write leaves the slot's earlier content readable; a slot never written
 * (counter 0), discarded or freed reads as -EIO.
 *
 * Slot 0 holds the swap header, written by mkswap before this key existed:
 * it passes through unchanged both ways (it holds no program data).
 *
 * A read whose page fails to open completes with -EIO and that page's
 * buffer zeroed (never the device's bytes); the swap layer reads
 * non-synchronous devices a page per folio, so the error reaches that page
 * alone.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <sodium.h>

#include "io/backend.h"
#include "util/alloc.h"
#include "util/debug.h"
#include "util/lock.h"

#define CRYPT_TAG_BYTES		16
#define CRYPT_KEY_BYTES		32
/*
 * Bounce buffers are kept for reuse, by size class (1 << c pages, c up to
 * CRYPT_CLASSES - 1: one cluster), CRYPT_KEEP of each: a 2 MiB buffer
 * fresh from the C library is a fresh mapping, and faulting its 512 pages
 * in cost several times the sealing (order-9 swap-out at 47 k pages/s
 * against 310 k expected from the AES floor).
 */
#define CRYPT_CLASSES		10
#define CRYPT_KEEP		4
/* Reads waited for in batches up to this long take no allocation (the
 * swap layer's read batches are at most SWAP_READ_BATCH_MAX). */
#define CRYPT_STACK_READS	64

/* What a slot's last successful write was sealed with. ctr 0: none. */
struct crypt_slot {
	uint64_t ctr;
	uint8_t tag[CRYPT_TAG_BYTES];
};

_Static_assert(sizeof(struct crypt_slot) == SWAP_CRYPT_META_PER_SLOT, "the figure in backend.h");

struct crypt_backend {
	struct swap_backend be;
	struct swap_backend *inner;		/* owned */
	enum swap_crypt_cipher cipher;		/* XCHACHA20 or AES256GCM */
	unsigned char *key;			/* sodium_malloc, read-only */
	crypto_aead_aes256gcm_state *aes;	/* sodium_malloc, AES only */
	struct crypt_slot *meta;		/* nr_slots entries, mmap */
	size_t meta_len;
	_Atomic uint64_t next_ctr;		/* last counter handed out */
	_Atomic uint64_t sealed, opened, auth_failures;
	struct uswap_mutex pool_lock;		/* the kept buffers below */
	void *pool[CRYPT_CLASSES][CRYPT_KEEP];
	unsigned int pool_nr[CRYPT_CLASSES];
};

/*
 * One batch handed to the inner backend: its requests, the caller's
 * requests they stand for, and what each written page was sealed with.
 * Freed by the last inner completion.
 */
struct crypt_batch {
	struct crypt_backend *cb;
	_Atomic unsigned int left;		/* inner requests not yet completed */
	unsigned int nr;
	void *bounce;				/* the sealed pages of the writes */
	int bounce_class;			/* its size class, -1: not kept */
	struct swap_io_req **outer;		/* [nr] */
	struct crypt_slot **seal;		/* [nr]: a write's first page's seal */
	struct swap_io_req *inner;		/* [nr] */
	struct crypt_slot seals[];		/* one per page written */
};

static inline struct crypt_backend *to_crypt(struct swap_backend *be)
{
	return container_of(be, struct crypt_backend, be);
}

static void crypt_nonce(uint64_t ctr, unsigned char *nonce, size_t len)
{
	memset(nonce, 0, len);
	for (unsigned int i = 0; i < 8; i++)
		nonce[i] = (unsigned char)(ctr >> (8 * i));
}

static void crypt_ad(uint64_t slot, unsigned char ad[8])
{
	for (unsigned int i = 0; i < 8; i++)
		ad[i] = (unsigned char)(slot >> (8 * i));
}

/*
 * Seal the page @src of slot @slot into @dst with a fresh counter; the
 * counter and tag go in @s. Context: any. Return: nothing (sealing cannot
 * fail for a 4096-byte page).
 */
static void seal_page(struct crypt_backend *cb, uint64_t slot, const void *src, void *dst,
		      struct crypt_slot *s)
{
	unsigned char nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES], ad[8];

	s->ctr = atomic_fetch_add_explicit(&cb->next_ctr, 1, memory_order_relaxed) + 1;
	crypt_ad(slot, ad);
	if (cb->cipher == SWAP_CRYPT_AES256GCM) {
		crypt_nonce(s->ctr, nonce, crypto_aead_aes256gcm_NPUBBYTES);
		crypto_aead_aes256gcm_encrypt_detached_afternm(dst, s->tag, NULL, src,
							       SWAP_BACKEND_PAGE_SIZE, ad, sizeof(ad),
							       NULL, nonce, cb->aes);
	} else {
		crypt_nonce(s->ctr, nonce, sizeof(nonce));
		crypto_aead_xchacha20poly1305_ietf_encrypt_detached(dst, s->tag, NULL, src,
								    SWAP_BACKEND_PAGE_SIZE, ad,
								    sizeof(ad), NULL, nonce, cb->key);
	}
}

/*
 * Open the page of slot @slot in place at @buf against its metadata.
 * Context: no I/O on the slot in flight but this read. Return: 0, or
 * -EIO (never written, or the page or its tag changed) with @buf zeroed.
 */
static int open_page(struct crypt_backend *cb, uint64_t slot, void *buf)
{
	const struct crypt_slot *s = &cb->meta[slot];
	unsigned char nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES], ad[8];
	int ret;

	if (!s->ctr) {
		ret = -1;
	} else if (cb->cipher == SWAP_CRYPT_AES256GCM) {
		crypt_ad(slot, ad);
		crypt_nonce(s->ctr, nonce, crypto_aead_aes256gcm_NPUBBYTES);
		ret = crypto_aead_aes256gcm_decrypt_detached_afternm(buf, NULL, buf,
								     SWAP_BACKEND_PAGE_SIZE, s->tag,
								     ad, sizeof(ad), nonce, cb->aes);
	} else {
		crypt_ad(slot, ad);
		crypt_nonce(s->ctr, nonce, sizeof(nonce));
		ret = crypto_aead_xchacha20poly1305_ietf_decrypt_detached(buf, NULL, buf,
									  SWAP_BACKEND_PAGE_SIZE,
									  s->tag, ad, sizeof(ad),
									  nonce, cb->key);
	}
	if (!ret)
		return 0;
	memset(buf, 0, SWAP_BACKEND_PAGE_SIZE);
	/* The first few changed pages are told (debug builds); all are counted. */
	if (s->ctr && atomic_fetch_add_explicit(&cb->auth_failures, 1, memory_order_relaxed) < 8)
		uswap_warn("crypt: slot %" PRIu64 " changed on the device: read as lost", slot);
	return -EIO;
}

/* Open every page of the read @r in place. Return: 0 or -EIO. */
static int open_run(struct crypt_backend *cb, const struct swap_io_req *r)
{
	int ret = 0;

	for (unsigned int j = 0; j < r->nr; j++) {
		uint64_t slot = r->offset + j;

		if (slot && open_page(cb, slot, (char *)r->buf + ((size_t)j << SWAP_BACKEND_PAGE_SHIFT)))
			ret = -EIO;
	}
	if (!ret)
		atomic_fetch_add_explicit(&cb->opened, r->nr, memory_order_relaxed);
	return ret;
}

/* The size class of @pages (1 << class >= @pages), -1 past the largest. */
static int bounce_class(size_t pages)
{
	int c = 0;

	while ((1UL << c) < pages)
		c++;
	return c < CRYPT_CLASSES ? c : -1;
}

/* A bounce buffer of @pages pages: a kept one of its class, or a new one.
 * Context: any; takes pool_lock. Return: the buffer or NULL. */
static void *bounce_get(struct crypt_backend *cb, size_t pages, int *cls)
{
	int c = bounce_class(pages);
	void *buf = NULL;

	*cls = c;
	if (c < 0)
		return uswap_aligned_alloc(SWAP_BACKEND_PAGE_SIZE, pages << SWAP_BACKEND_PAGE_SHIFT);
	uswap_mutex_lock(&cb->pool_lock);
	if (cb->pool_nr[c])
		buf = cb->pool[c][--cb->pool_nr[c]];
	uswap_mutex_unlock(&cb->pool_lock);
	return buf ? buf : uswap_aligned_alloc(SWAP_BACKEND_PAGE_SIZE,
					 (size_t)SWAP_BACKEND_PAGE_SIZE << c);
}

/* Keep @buf of class @c for reuse, or free it. Context: any; takes pool_lock. */
static void bounce_put(struct crypt_backend *cb, void *buf, int c)
{
	if (buf && c >= 0) {
		uswap_mutex_lock(&cb->pool_lock);
		if (cb->pool_nr[c] < CRYPT_KEEP) {
			cb->pool[c][cb->pool_nr[c]++] = buf;
			buf = NULL;
		}
		uswap_mutex_unlock(&cb->pool_lock);
	}
	free(buf);
}

static void batch_free(struct crypt_batch *b)
{
	bounce_put(b->cb, b->bounce, b->bounce_class);
	free(b);
}

/*
 * Inner request @i has completed: open a read, record a write's seals,
 * complete the caller's request, and free the batch after the last.
 * Context: the thread that saw the inner request complete.
 */
static void inner_done(struct crypt_batch *b, unsigned int i)
{
	struct crypt_backend *cb = b->cb;
	struct swap_io_req *out = b->outer[i];
	int result = b->inner[i].result;

	if (!result && out->op == SWAP_IO_READ) {
		result = open_run(cb, out);
	} else if (!result) {
		for (unsigned int j = 0; j < out->nr; j++)
			if (out->offset + j)
				cb->meta[out->offset + j] = b->seal[i][j];
		atomic_fetch_add_explicit(&cb->sealed, out->nr, memory_order_relaxed);
	}
	if (swap_backend_failed(cb->inner))
		atomic_store_explicit(&cb->be.failed, true, memory_order_release);
	swap_backend_complete(&cb->be, out, result);
	if (atomic_fetch_sub_explicit(&b->left, 1, memory_order_acq_rel) == 1)
		batch_free(b);
}

/* end_io of an inner request submitted asynchronously. */
static void crypt_end_io(struct swap_io_req *in)
{
	struct crypt_batch *b = in->private;

	inner_done(b, (unsigned int)(in - b->inner));
}

/*
 * Build the inner batch for @reqs: reads go to the caller's buffers, writes
 * are sealed into a bounce buffer. Context: any. Return: the batch, or
 * NULL (-ENOMEM) with nothing changed.
 */
static struct crypt_batch *batch_build(struct crypt_backend *cb, struct swap_io_req *reqs,
				       unsigned int nr)
{
	size_t wpages = 0, w = 0, sz;
	struct crypt_batch *b;
	unsigned int i;

	for (i = 0; i < nr; i++)
		if (reqs[i].op == SWAP_IO_WRITE)
			wpages += reqs[i].nr;
	sz = sizeof(*b) + wpages * sizeof(struct crypt_slot);
	b = uswap_calloc(1, sz + nr * (sizeof(*b->outer) + sizeof(*b->seal) + sizeof(*b->inner)));
	if (!b)
		return NULL;
	b->inner = (struct swap_io_req *)((char *)b + sz);
	b->outer = (struct swap_io_req **)(b->inner + nr);
	b->seal = (struct crypt_slot **)(b->outer + nr);
	b->cb = cb;
	b->bounce_class = -1;
	if (wpages) {
		b->bounce = bounce_get(cb, wpages, &b->bounce_class);
		if (!b->bounce) {
			free(b);
			return NULL;
		}
	}
	b->nr = nr;
	atomic_init(&b->left, nr);
	for (i = 0; i < nr; i++) {
		struct swap_io_req *r = &reqs[i], *in = &b->inner[i];

		b->outer[i] = r;
		in->op = r->op;
		in->nr = r->nr;
		in->offset = r->offset;
		in->end_io = crypt_end_io;
		in->private = b;
		if (r->op == SWAP_IO_READ) {
			in->buf = r->buf;
			continue;
		}
		in->buf = (char *)b->bounce + (w << SWAP_BACKEND_PAGE_SHIFT);
		b->seal[i] = &b->seals[w];
		for (unsigned int j = 0; j < r->nr; j++) {
			size_t at = (size_t)j << SWAP_BACKEND_PAGE_SHIFT;

			if (r->offset + j)
				seal_page(cb, r->offset + j, (char *)r->buf + at,
					  (char *)in->buf + at, &b->seals[w + j]);
			else
				memcpy((char *)in->buf + at, (char *)r->buf + at,
				       SWAP_BACKEND_PAGE_SIZE);
		}
		w += r->nr;
	}
	return b;
}

/*
 * A batch of reads, waited for on this thread, with its inner requests on
 * the stack: reads allocate nothing, so that a swap-in never fails for
 * want of memory here (the swap layer would take a refused read for a
 * lost page). Context: may sleep. Return: 0 (each completed), or the
 * inner backend's refusal of the whole batch.
 */
static int crypt_read_sync(struct crypt_backend *cb, struct swap_io_req *reqs, unsigned int nr)
{
	struct swap_io_req in[CRYPT_STACK_READS];
	unsigned int i;
	int ret;

	for (i = 0; i < nr; i++)
		in[i] = (struct swap_io_req){ .op = SWAP_IO_READ, .nr = reqs[i].nr,
					      .offset = reqs[i].offset, .buf = reqs[i].buf };
	ret = swap_backend_rw_sync(cb->inner, in, nr);
	for (i = 0; ret && i < nr && !in[i].result; i++)
		;
	if (ret && i == nr)
		return ret;
	for (i = 0; i < nr; i++) {
		int result = in[i].result ? in[i].result : open_run(cb, &reqs[i]);

		if (swap_backend_failed(cb->inner))
			atomic_store_explicit(&cb->be.failed, true, memory_order_release);
		swap_backend_complete(&cb->be, &reqs[i], result);
	}
	return 0;
}

/*
 * ops->submit and ops->rw_sync: the inner backend's, on a sealed batch.
 * swap_backend_rw_sync() takes the inner requests' end_io for its own
 * wait, so with @sync each is finished here once it returns.
 */
static int crypt_run(struct swap_backend *be, struct swap_io_req *reqs, unsigned int nr,
		     bool sync)
{
	struct crypt_backend *cb = to_crypt(be);
	struct crypt_batch *b;
	unsigned int i;
	int ret;

	for (i = 0; sync && nr <= CRYPT_STACK_READS && i < nr && reqs[i].op == SWAP_IO_READ; i++)
		;
	if (sync && i == nr && nr <= CRYPT_STACK_READS)
		return crypt_read_sync(cb, reqs, nr);
	b = batch_build(cb, reqs, nr);
	if (!b)
		return -ENOMEM;
	if (!sync) {
		ret = swap_backend_submit(cb->inner, b->inner, nr);
		if (ret)
			batch_free(b);	/* none accepted: no end_io ran, none will */
		return ret;
	}
	ret = swap_backend_rw_sync(cb->inner, b->inner, nr);
	for (i = 0; ret && i < nr && !b->inner[i].result; i++)
		;
	if (ret && i == nr) {
		batch_free(b);		/* rejected whole: nothing ran */
		return ret;
	}
	for (i = 0; i < nr; i++)
		inner_done(b, i);	/* the last frees b */
	return 0;
}

static int crypt_submit(struct swap_backend *be, struct swap_io_req *reqs, unsigned int nr)
{
	return crypt_run(be, reqs, nr, false);
}

static int crypt_rw_sync(struct swap_backend *be, struct swap_io_req *reqs, unsigned int nr)
{
	return crypt_run(be, reqs, nr, true);
}

static int crypt_reap(struct swap_backend *be, unsigned int min_complete)
{
	return swap_backend_reap(to_crypt(be)->inner, min_complete);
}

static int crypt_flush(struct swap_backend *be)
{
	return swap_backend_flush(to_crypt(be)->inner);
}

/*
 * A discarded or freed slot no longer opens: its seal is forgotten. A run
 * of up to CRYPT_MEMSET_MAX bytes of metadata (a cluster's 12 KiB among
 * them) is zeroed in place and stays resident: giving a discarded
 * cluster's pages back with MADV_DONTNEED costs a TLB flush and a fault
 * to bring each back, per page swapped out (docs/BENCHMARKS.md,
 * "Encryption"). A longer run
 * (the whole device discarded at swapon) gives its whole pages back: a
 * memset would fault in 24 bytes for every slot (6 GiB for 1 TiB).
 */
#define CRYPT_MEMSET_MAX	(64U << 10)

static void forget_slots(struct crypt_backend *cb, uint64_t offset, uint64_t nr)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), a, e;
	char *lo, *hi;

	if (!offset) {
		offset++;
		nr--;
	}
	if (!nr)
		return;
	lo = (char *)&cb->meta[offset];
	hi = (char *)&cb->meta[offset + nr];
	a = ((uintptr_t)lo + pg - 1) & ~(pg - 1);
	e = (uintptr_t)hi & ~(pg - 1);
	if ((size_t)(hi - lo) > CRYPT_MEMSET_MAX && a < e &&
	    !madvise((void *)a, e - a, MADV_DONTNEED)) {
		memset(lo, 0, (size_t)((char *)a - lo));
		memset((char *)e, 0, (size_t)(hi - (char *)e));
		return;
	}
	memset(lo, 0, (size_t)(hi - lo));
}

static int crypt_discard(struct swap_backend *be, uint64_t offset, uint64_t nr)
{
	struct crypt_backend *cb = to_crypt(be);

	forget_slots(cb, offset, nr);
	return swap_backend_discard(cb->inner, offset, nr);
}

static void crypt_slot_free_notify(struct swap_backend *be, uint64_t offset)
{
	struct crypt_backend *cb = to_crypt(be);

	forget_slots(cb, offset, 1);
	swap_backend_slot_free_notify(cb->inner, offset);
}

static struct swap_backend *crypt_inner(struct swap_backend *be)
{
	return to_crypt(be)->inner;
}

static void crypt_destroy(struct swap_backend *be)
{
	struct crypt_backend *cb = to_crypt(be);

	swap_backend_destroy_inner(cb->inner);
	for (unsigned int c = 0; c < CRYPT_CLASSES; c++)
		while (cb->pool_nr[c])
			free(cb->pool[c][--cb->pool_nr[c]]);
	uswap_mutex_destroy(&cb->pool_lock);
	sodium_free(cb->aes);
	sodium_free(cb->key);
	munmap(cb->meta, cb->meta_len);
	free(cb);
}

static const struct swap_backend_ops crypt_ops = {
	.name = "crypt",
	.submit = crypt_submit,
	.rw_sync = crypt_rw_sync,
	.reap = crypt_reap,
	.flush = crypt_flush,
	.discard = crypt_discard,
	.slot_free_notify = crypt_slot_free_notify,
	.inner = crypt_inner,
	.destroy = crypt_destroy,
};

/*
 * A fork's child must not inherit the key: the pages sodium_malloc gave it
 * are wiped in a child (MADV_WIPEONFORK, Linux 4.14). Best effort: without
 * it the key still dies with the child's exec or exit.
 */
static void wipe_on_fork(void *p, size_t len)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(pg - 1);
	uintptr_t e = ((uintptr_t)p + len + pg - 1) & ~(pg - 1);

	(void)madvise((void *)a, e - a, MADV_WIPEONFORK);
}

/**
 * swap_backend_crypt_create() - wrap a backend in the encryption wrapper
 * @inner: the backend to seal pages into; the wrapper owns it from now on
 * @cipher: SWAP_CRYPT_AUTO (AES-256-GCM where the CPU accelerates it, else
 *          XChaCha20-Poly1305), SWAP_CRYPT_XCHACHA20 or SWAP_CRYPT_AES256GCM
 * @out: the wrapper, with @inner's size and flags, a fresh key
 *
 * Context: any thread; allocates.
 * Return: 0; -EINVAL for a bad argument; -EOPNOTSUPP for AES-256-GCM on a
 * CPU without AES-NI; -ENOMEM (then @inner is still the caller's);
 * -EIO when libsodium cannot start.
 */
int swap_backend_crypt_create(struct swap_backend *inner, enum swap_crypt_cipher cipher,
			      struct swap_backend **out)
{
	struct crypt_backend *cb;

	if (!inner || !out || cipher == SWAP_CRYPT_NONE || cipher > SWAP_CRYPT_AES256GCM)
		return -EINVAL;
	if (sodium_init() < 0)
		return -EIO;
	if (cipher == SWAP_CRYPT_AUTO)
		cipher = crypto_aead_aes256gcm_is_available() ? SWAP_CRYPT_AES256GCM :
								SWAP_CRYPT_XCHACHA20;
	if (cipher == SWAP_CRYPT_AES256GCM && !crypto_aead_aes256gcm_is_available())
		return -EOPNOTSUPP;
	cb = uswap_calloc(1, sizeof(*cb));
	if (!cb)
		return -ENOMEM;
	cb->cipher = cipher;
	uswap_mutex_init(&cb->pool_lock);
	cb->meta_len = inner->nr_slots * sizeof(*cb->meta);
	cb->meta = mmap(NULL, cb->meta_len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	cb->key = sodium_malloc(CRYPT_KEY_BYTES);
	if (cipher == SWAP_CRYPT_AES256GCM)
		cb->aes = sodium_malloc(sizeof(*cb->aes));
	if (cb->meta == MAP_FAILED || !cb->key || (cipher == SWAP_CRYPT_AES256GCM && !cb->aes)) {
		if (cb->meta != MAP_FAILED)
			munmap(cb->meta, cb->meta_len);
		sodium_free(cb->key);
		sodium_free(cb->aes);
		uswap_mutex_destroy(&cb->pool_lock);
		free(cb);
		return -ENOMEM;
	}
	wipe_on_fork(cb->key, CRYPT_KEY_BYTES);
	randombytes_buf(cb->key, CRYPT_KEY_BYTES);
	if (cb->aes) {
		wipe_on_fork(cb->aes, sizeof(*cb->aes));
		crypto_aead_aes256gcm_beforenm(cb->aes, cb->key);
		sodium_mprotect_readonly(cb->aes);
	}
	sodium_mprotect_readonly(cb->key);
	swap_backend_init(&cb->be, &crypt_ops, inner->nr_slots, inner->synchronous);
	cb->be.rotational = inner->rotational;
	cb->inner = inner;
	snprintf(cb->be.desc, sizeof(cb->be.desc), "%.200s, %s",
		 swap_backend_describe(inner), swap_crypt_cipher_name(cipher));
	*out = &cb->be;
	return 0;
}

static struct crypt_backend *crypt_of(struct swap_backend *be)
{
	for (; be; be = be->ops->inner ? be->ops->inner(be) : NULL)
		if (be->ops == &crypt_ops)
			return to_crypt(be);
	return NULL;
}

/**
 * swap_backend_crypt_stats() - what the encryption wrapper has done
 * @be: the wrapper, or a wrapper around it (a fault wrapper)
 * @out: filled
 *
 * Context: any; relaxed counters.
 * Return: 0; -EINVAL when @be holds no encryption wrapper.
 */
int swap_backend_crypt_stats(struct swap_backend *be, struct swap_crypt_stats *out)
{
	struct crypt_backend *cb = crypt_of(be);

	if (!cb || !out)
		return -EINVAL;
	out->cipher = cb->cipher;
	out->pages_sealed = atomic_load_explicit(&cb->sealed, memory_order_relaxed);
	out->pages_opened = atomic_load_explicit(&cb->opened, memory_order_relaxed);
	out->auth_failures = atomic_load_explicit(&cb->auth_failures, memory_order_relaxed);
	out->meta_bytes = cb->meta_len;
	return 0;
}

/**
 * swap_crypt_cipher_name() - the name of a cipher as specs and reports say it
 * @c: the cipher
 *
 * Context: any. Return: a static string.
 */
const char *swap_crypt_cipher_name(enum swap_crypt_cipher c)
{
	switch (c) {
	case SWAP_CRYPT_NONE:
		return "none";
	case SWAP_CRYPT_AUTO:
		return "auto";
	case SWAP_CRYPT_XCHACHA20:
		return "xchacha20-poly1305";
	case SWAP_CRYPT_AES256GCM:
		return "aes256-gcm";
	}
	return "?";
}
