/* SPDX-License-Identifier: MIT */
/*
 * zpool: the memory a compressed backend keeps pages in (zpool.c).
 *
 * Objects of 1..4096 bytes in size classes of ZPOOL_GRAIN bytes, carved
 * from chunks that the pool keeps until it is destroyed: freeing an object
 * and allocating the next one costs neither a system call nor a page
 * fault, where malloc of each compressed page gave its memory back and
 * faulted it in again.
 * Thread safe; a lock per size class.
 */
#ifndef USWAP_IO_ZPOOL_H
#define USWAP_IO_ZPOOL_H

#include <stddef.h>
#include <stdint.h>

#define ZPOOL_GRAIN	32U		/* size classes are multiples of this */
#define ZPOOL_MAX_OBJ	4096U		/* largest object */

struct zpool;

int zpool_create(struct zpool **out);
void zpool_destroy(struct zpool *zp);
void *zpool_alloc(struct zpool *zp, size_t size);
void zpool_free(struct zpool *zp, void *obj);
uint64_t zpool_bytes(const struct zpool *zp);

#endif
