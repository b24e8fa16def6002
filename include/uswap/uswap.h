/* SPDX-License-Identifier: MIT */
/*
 * uswap: the Linux swap-table design as a user-space library.
 * The one header a user includes.
 */
#ifndef USWAP_H
#define USWAP_H

#include <uswap/version.h>
#include <uswap/common.h>
#include <uswap/folio.h>
#include <uswap/swap.h>
#include <uswap/mm.h>
#include <uswap/legacy.h>
#include <uswap/region.h>

#endif
