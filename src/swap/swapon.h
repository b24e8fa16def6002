/* SPDX-License-Identifier: MIT */
/* swapon of a backend built by the caller (swapon.c); internal. */
#ifndef USWAP_SWAP_SWAPON_H
#define USWAP_SWAP_SWAPON_H

#include <stddef.h>

struct swap_backend;

int uswap_swapon_backend(struct swap_backend *be, int flags, char *err, size_t errlen);

#endif
