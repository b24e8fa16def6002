/* SPDX-License-Identifier: MIT */
/*
 * zpool (see zpool.h): size classes over chunks, as the kernel's zsmalloc
 * keeps zram's pages, without its compaction.
 *
 * A chunk is ZPOOL_CHUNK bytes, aligned to its size, so an object's chunk
 * is its address rounded down. Its header sits at the start; objects of
 * one class follow, handed out by a bump offset the first time and from
 * the chunk's free list (an offset stored in each free object) after.
 * Chunks come from arenas of ZPOOL_ARENA bytes, mapped when needed and
 * unmapped only by zpool_destroy(). A chunk whose last object is freed goes
 * to the pool's empty list for any class to take, still resident: the
 * pool holds on to its peak size until it is destroyed (swapoff). The
 * kernel's zsmalloc gives empty pages back at once; here that is an
 * madvise() per chunk, whose TLB shootdown (an IPI to every CPU running
 * the process) took a third of the swap-in time in swapio, and a page
 * fault for each page when the chunk is used again.
 *
 * Locking: a class's lock guards its partial list and the headers of its
 * chunks; empty_lock guards the empty list and the arenas. A class lock is
 * never held while empty_lock is taken.
 *
 * Invariants (under the class lock): a chunk is on its class's partial
 * list iff 0 < used < per_chunk; used == objects handed out and not freed.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "io/zpool.h"
#include "util/alloc.h"
#include "util/debug.h"
#include "util/lock.h"

#define ZPOOL_CHUNK	(64U * 1024)	/* power of two */
#define ZPOOL_ARENA	(2U * 1024 * 1024)	/* a multiple of ZPOOL_CHUNK */
#define ZPOOL_HDR	64U		/* header room at the start of a chunk */
#define ZPOOL_NR_CLASSES (ZPOOL_MAX_OBJ / ZPOOL_GRAIN)

_Static_assert((ZPOOL_CHUNK & (ZPOOL_CHUNK - 1)) == 0, "chunk size is a power of two");
_Static_assert(ZPOOL_ARENA % ZPOOL_CHUNK == 0, "arenas hold whole chunks");
_Static_assert(ZPOOL_MAX_OBJ % ZPOOL_GRAIN == 0, "classes cover the largest object");

struct zchunk {
	struct zchunk *next, *prev;	/* partial list (class lock) or empty list */
	uint32_t cls;			/* size class; constant while used > 0 */
	uint32_t used;			/* objects handed out */
	uint32_t free;			/* offset of the first free object, 0: none */
	uint32_t bump;			/* offset of the first never-used object */
};
_Static_assert(sizeof(struct zchunk) <= ZPOOL_HDR, "the header fits its room");

struct zclass {
	alignas(64) struct uswap_mutex lock;
	struct zchunk *partial;		/* chunks with room; lock */
	uint32_t size;			/* object size; constant */
	uint32_t per_chunk;		/* objects per chunk; constant */
};

struct zarena {
	struct zarena *next;		/* empty_lock */
	void *map;			/* what mmap returned */
	size_t map_len;
};

struct zpool {
	struct zclass classes[ZPOOL_NR_CLASSES];
	struct uswap_mutex empty_lock;
	struct zchunk *empty;		/* empty chunks; empty_lock */
	struct zarena *arenas;		/* empty_lock */
	char *carve, *carve_end;	/* chunks not yet used, in the last arena */
	_Atomic uint64_t chunks;	/* chunks carved so far */
};

/**
 * zpool_create() - an empty pool
 * @out: the pool
 *
 * Context: any thread; allocates.
 * Return: 0 or -ENOMEM.
 */
int zpool_create(struct zpool **out)
{
	struct zpool *zp = uswap_aligned_alloc(64, sizeof(*zp));
	unsigned int k;

	if (!zp)
		return -ENOMEM;
	memset(zp, 0, sizeof(*zp));
	for (k = 0; k < ZPOOL_NR_CLASSES; k++) {
		struct zclass *c = &zp->classes[k];

		uswap_mutex_init(&c->lock);
		c->size = (k + 1) * ZPOOL_GRAIN;
		c->per_chunk = (ZPOOL_CHUNK - ZPOOL_HDR) / c->size;
	}
	uswap_mutex_init(&zp->empty_lock);
	*out = zp;
	return 0;
}

/**
 * zpool_destroy() - unmap every chunk and free the pool
 * @zp: the pool, or NULL; its objects become invalid
 *
 * Context: no other thread uses @zp.
 * Return: nothing.
 */
void zpool_destroy(struct zpool *zp)
{
	struct zarena *a, *next;
	unsigned int k;

	if (!zp)
		return;
	for (a = zp->arenas; a; a = next) {
		next = a->next;
		munmap(a->map, a->map_len);
		free(a);
	}
	for (k = 0; k < ZPOOL_NR_CLASSES; k++)
		uswap_mutex_destroy(&zp->classes[k].lock);
	uswap_mutex_destroy(&zp->empty_lock);
	free(zp);
}

/* Map an arena aligned to ZPOOL_CHUNK. Context: empty_lock. */
static int __zpool_add_arena(struct zpool *zp)
{
	size_t len = ZPOOL_ARENA + ZPOOL_CHUNK;
	struct zarena *a = uswap_malloc(sizeof(*a));
	char *map;
	uintptr_t start;

	uswap_assert_held(&zp->empty_lock);
	if (!a)
		return -ENOMEM;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		   -1, 0);
	if (map == MAP_FAILED) {
		free(a);
		return -ENOMEM;
	}
	madvise(map, len, MADV_DONTDUMP);	/* swapped pages: never in a core dump */
	start = ((uintptr_t)map + ZPOOL_CHUNK - 1) & ~(uintptr_t)(ZPOOL_CHUNK - 1);
	a->map = map;
	a->map_len = len;
	a->next = zp->arenas;
	zp->arenas = a;
	zp->carve = (char *)start;
	zp->carve_end = (char *)start + ZPOOL_ARENA;
	return 0;
}

/* An empty chunk for class @cls, or NULL. Context: no class lock held. */
static struct zchunk *zpool_chunk_get(struct zpool *zp, uint32_t cls)
{
	struct zchunk *ch = NULL;

	uswap_mutex_lock(&zp->empty_lock);
	if (zp->empty) {
		ch = zp->empty;
		zp->empty = ch->next;
	} else if (zp->carve < zp->carve_end || !__zpool_add_arena(zp)) {
		ch = (struct zchunk *)zp->carve;
		zp->carve += ZPOOL_CHUNK;
		atomic_fetch_add_explicit(&zp->chunks, 1, memory_order_relaxed);
	}
	uswap_mutex_unlock(&zp->empty_lock);
	if (ch) {
		ch->next = ch->prev = NULL;
		ch->cls = cls;
		ch->used = 0;
		ch->free = 0;
		ch->bump = ZPOOL_HDR;
	}
	return ch;
}

static void zpool_chunk_put(struct zpool *zp, struct zchunk *ch)
{
	uswap_mutex_lock(&zp->empty_lock);
	ch->next = zp->empty;
	zp->empty = ch;
	uswap_mutex_unlock(&zp->empty_lock);
}

static void __zclass_unlink(struct zclass *c, struct zchunk *ch)
{
	if (ch->prev)
		ch->prev->next = ch->next;
	else
		c->partial = ch->next;
	if (ch->next)
		ch->next->prev = ch->prev;
	ch->next = ch->prev = NULL;
}

static void __zclass_link(struct zclass *c, struct zchunk *ch)
{
	ch->prev = NULL;
	ch->next = c->partial;
	if (c->partial)
		c->partial->prev = ch;
	c->partial = ch;
}

/**
 * zpool_alloc() - an object of @size bytes
 * @zp: the pool
 * @size: 1..ZPOOL_MAX_OBJ
 *
 * Context: any thread; takes a class lock, maybe empty_lock; may map an
 * arena.
 * Return: the object (8-byte aligned at least), or NULL: out of memory or
 * a bad @size.
 */
void *zpool_alloc(struct zpool *zp, size_t size)
{
	uint32_t cls = (uint32_t)((size - 1) / ZPOOL_GRAIN);
	struct zclass *c;
	struct zchunk *ch;
	char *obj;

	if (!size || size > ZPOOL_MAX_OBJ)
		return NULL;
	c = &zp->classes[cls];
	uswap_mutex_lock(&c->lock);
	while (!(ch = c->partial)) {
		uswap_mutex_unlock(&c->lock);
		ch = zpool_chunk_get(zp, cls);
		if (!ch)
			return NULL;
		uswap_mutex_lock(&c->lock);
		__zclass_link(c, ch);
	}
	if (ch->free) {
		obj = (char *)ch + ch->free;
		memcpy(&ch->free, obj, sizeof(ch->free));
	} else {
		obj = (char *)ch + ch->bump;
		ch->bump += c->size;
	}
	if (++ch->used == c->per_chunk)
		__zclass_unlink(c, ch);
	uswap_mutex_unlock(&c->lock);
	return obj;
}

/**
 * zpool_free() - give an object back
 * @zp: its pool
 * @obj: from zpool_alloc(), or NULL
 *
 * Context: any thread; takes its class lock, maybe empty_lock.
 * Return: nothing.
 */
void zpool_free(struct zpool *zp, void *obj)
{
	struct zchunk *ch;
	struct zclass *c;
	uint32_t off;
	bool empty = false;

	if (!obj)
		return;
	ch = (struct zchunk *)((uintptr_t)obj & ~(uintptr_t)(ZPOOL_CHUNK - 1));
	off = (uint32_t)((char *)obj - (char *)ch);
	c = &zp->classes[ch->cls];	/* constant: we hold one of its objects */
	uswap_mutex_lock(&c->lock);
	USWAP_BUG_ON(!ch->used || off < ZPOOL_HDR || (off - ZPOOL_HDR) % c->size);
	memcpy(obj, &ch->free, sizeof(ch->free));
	ch->free = off;
	if (ch->used-- == c->per_chunk)
		__zclass_link(c, ch);
	if (!ch->used) {
		__zclass_unlink(c, ch);
		empty = true;
	}
	uswap_mutex_unlock(&c->lock);
	if (empty)
		zpool_chunk_put(zp, ch);
}

/**
 * zpool_bytes() - memory the pool has carved into chunks
 * @zp: the pool
 *
 * Empty chunks kept for reuse count too (their pages may have gone back
 * to the kernel by MADV_FREE).
 *
 * Context: any; a relaxed read.
 * Return: bytes.
 */
uint64_t zpool_bytes(const struct zpool *zp)
{
	return atomic_load_explicit(&((struct zpool *)zp)->chunks, memory_order_relaxed) *
	       ZPOOL_CHUNK;
}
