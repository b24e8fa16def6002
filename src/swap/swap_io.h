/* SPDX-License-Identifier: MIT */
/* Swap I/O between swap-cache folios and the device backend (swap_io.c). */
#ifndef USWAP_SWAP_IO_H
#define USWAP_SWAP_IO_H

#include "swap/swap_internal.h"

struct swap_backend;
struct swap_io_ctx;

/* Most folios one readahead submits at once. */
#define SWAP_READ_BATCH_MAX 64

int swap_io_ctx_create(struct swap_backend *be, struct swap_io_ctx **out);
void swap_io_ctx_destroy(struct swap_io_ctx *io);
int swap_writeout(struct folio *folio, bool sync);
int swap_read_folios(struct swap_info_struct *si, struct folio **folios, unsigned int n);
int swap_read_entry(swp_entry_t entry, void *buf);
bool swap_zero_uniform(struct swap_info_struct *si, uint64_t offset, unsigned int nr);

#endif
