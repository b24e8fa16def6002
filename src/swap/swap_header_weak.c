/* SPDX-License-Identifier: MIT */
/*
 * TEMPORARY, delete at merge: a weak stand-in for
 * uswap_swap_static_metadata_bytes() so that the header branch links
 * before the swap device code that defines it for real is merged.
 */
#include "swap/swap_internal.h"

/**
 * uswap_swap_static_metadata_bytes() - static cluster metadata of a device
 * @max_slots: the device's slot count
 *
 * Context: any; pure.
 * Return: ceil(@max_slots / SWAPFILE_CLUSTER) * sizeof(struct swap_cluster_info).
 */
__attribute__((weak)) uint64_t uswap_swap_static_metadata_bytes(uint64_t max_slots)
{
	return (max_slots + SWAPFILE_CLUSTER - 1) / SWAPFILE_CLUSTER *
	       sizeof(struct swap_cluster_info);
}
