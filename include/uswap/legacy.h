/* SPDX-License-Identifier: MIT */
/*
 * The old slot design (the kernel before the swap table phases, ~6.18)
 * behind the same API: a byte per slot (swap_map) with SWAP_HAS_CACHE as a
 * bit lock, counts above 62 in continuation pages, and the swap-cache
 * bypass for synchronous devices when a slot's count is 1. It exists so
 * that one workload can run through both designs in one process; a device
 * gets it from uswap_swapon_spec_design() or uswap_swapon_mem_design()
 * (uswap/swap.h) with the design "legacy".
 *
 * On a legacy device uswap_swap_tb_peek() returns the slot's swap_map byte
 * in *tb (0 free, 1..0x3e count, 0x3f bad, | 0x40 SWAP_HAS_CACHE,
 * | 0x80 COUNT_CONTINUED) and the exact count in *count.
 */
#ifndef USWAP_LEGACY_H
#define USWAP_LEGACY_H

#include <uswap/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Figures of a legacy device. Fixed size (USWAP_LEGACY_STAT_SIZE): later
 * fields come from the front of __reserved, which the library zeroes.
 */
#define USWAP_LEGACY_STAT_SIZE 128

struct uswap_legacy_stat {
	uint64_t map_bytes;		/* the swap_map: one byte per slot (static) */
	uint64_t nr_cont_pages;		/* continuation pages allocated (freed at swapoff) */
	uint64_t cont_bytes;		/* continuation pages + their list heads (dynamic) */
	uint64_t bypass_swapins;	/* swap-ins that bypassed the swap cache */
	uint64_t bypass_retries;	/* bypass reads that found SWAP_HAS_CACHE taken */
	uint64_t cache_retries;		/* cache reads that waited for a racing reader */
	/* Appended from __reserved (the size stays 128 bytes) */
	uint64_t swap_cgroup_bytes;	/* memcg id per slot, 2 bytes each (static) */
	uint64_t zeromap_bytes;		/* zero-page bit per slot (static) */
	uint64_t __reserved[8];		/* zeroed; later fields come from here */
};

/**
 * uswap_legacy_stat() - the legacy figures of device @type, copied into *@st.
 * Context: any; lockless, the figures are not one atomic snapshot.
 * Return: 0; -ENODEV (no such device); -EINVAL (@type out of range, or the
 * device does not use the legacy design).
 */
USWAP_API int uswap_legacy_stat(unsigned int type, struct uswap_legacy_stat *st);

#ifdef __cplusplus
}
#endif
#endif
