/* SPDX-License-Identifier: MIT */
/*
 * The slot designs a device may have, chosen by name at swapon: "table"
 * (the swap table, swap_table_ops.c, the default) and "legacy" (the old
 * swap_map, src/legacy/). The rest of the swap layer sees a design only
 * through its ops (struct swap_design_ops).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <uswap/swap.h>
#include "swap/swap_internal.h"
#include "util/debug.h"

static const struct swap_design_ops *const swap_designs[] = {
	&swap_table_ops,
	&swap_legacy_ops,
};

/**
 * swap_design_lookup() - the design called @name (NULL: the default,
 * the swap table). Context: any. Return: its ops, or NULL if none is
 * called that.
 */
const struct swap_design_ops *swap_design_lookup(const char *name)
{
	size_t i;

	if (!name)
		return &swap_table_ops;
	for (i = 0; i < sizeof(swap_designs) / sizeof(swap_designs[0]); i++)
		if (!strcmp(swap_designs[i]->name, name))
			return swap_designs[i];
	return NULL;
}

/** uswap_swapon_spec_design() - see uswap/swap.h. */
USWAP_API int uswap_swapon_spec_design(const char *spec, int flags, const char *design,
				       char *err, size_t errlen)
{
	const struct swap_design_ops *ops = swap_design_lookup(design);

	if (!ops) {
		if (err && errlen)
			snprintf(err, errlen, "unknown slot design '%s' (table or legacy)", design);
		return -EINVAL;
	}
	return swapon_spec_design(spec, flags, ops, err, errlen);
}

/** uswap_swapon_mem_design() - see uswap/swap.h. */
USWAP_API int uswap_swapon_mem_design(uint64_t nr_pages, int flags, const char *design)
{
	struct swap_device_params p = {
		.nr_pages = nr_pages,
		.flags = flags,
		.design = swap_design_lookup(design),
	};
	char err[160] = "";
	int ret;

	if (!p.design)
		return -EINVAL;
	ret = swap_device_create(&p, err, sizeof(err));
	if (ret < 0 && err[0])
		uswap_warn("swapon: %s", err);
	return ret;
}
