/* SPDX-License-Identifier: MIT */
/*
 * uswap demo: swap a folio out to an in-memory device and back in, and
 * print the swap table entry of its slot at every step of the workflow.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <uswap/uswap.h>
#include "cli/commands.h"
#include "swap/swap_table.h"

static void show(const char *step, swp_entry_t e)
{
	uint64_t tb = 0;
	long count = -1;

	if (uswap_swap_tb_peek(e, &tb, &count)) {
		printf("%-44s (no device)\n", step);
		return;
	}
	printf("%-44s 0x%016" PRIx64 "  %-6s count %ld\n", step, tb, swp_tb_type_name(tb), count);
}

int cmd_demo(int argc, char **argv)
{
	struct uswap_frame_pool *pool;
	struct folio *folio, *back;
	unsigned long long refs = 100000, i;
	swp_entry_t e;
	int type, err;
	char data[64];

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: uswap demo\n");
		return 0;
	}
	if ((err = uswap_frame_pool_create(64, &pool))) {
		fprintf(stderr, "uswap demo: frame pool: %s\n", strerror(-err));
		return 1;
	}
	type = uswap_swapon_mem(4096, 0);	/* 16 MiB of swap in memory */
	if (type < 0) {
		fprintf(stderr, "uswap demo: swapon: %s\n", strerror(-type));
		return 1;
	}
	printf("swap table entries: %d count bits, in-table maximum %u\n\n",
	       USWAP_TB_COUNT_BITS, SWP_TB_COUNT_MAX);
	folio = uswap_folio_alloc(pool, 0);
	snprintf(data, sizeof(data), "hello from frame %" PRIu64, folio_pfn(folio));
	memcpy(folio_address(folio), data, sizeof(data));
	folio_mark_uptodate(folio);
	folio_lock(folio);

	if ((err = folio_alloc_swap(folio))) {
		fprintf(stderr, "uswap demo: folio_alloc_swap: %s\n", strerror(-err));
		return 1;
	}
	e = folio_swap_entry(folio);
	printf("slot: device %u offset %" PRIu64 "\n", swp_type(e), swp_offset(e));
	show("folio_alloc_swap (cached, pinned by cache)", e);
	folio_dup_swap(folio, -1);
	show("folio_dup_swap (a page table maps it)", e);
	folio_dup_swap(folio, -1);
	show("folio_dup_swap (fork: a second mapping)", e);
	swap_cache_del_folio(folio, 0);
	show("written out, left the cache (shadow)", e);
	folio_unlock(folio);
	folio_put(folio);

	for (i = 0; i < refs; i++)
		swap_dup_entry_direct(e);
	show("100000 x swap_dup_entry_direct", e);
	swap_put_entries_direct(e, 1);
	for (i = 1; i < refs; i++)
		swap_put_entries_direct(e, 1);
	show("100000 x swap_put_entries_direct", e);

	back = uswap_folio_alloc(pool, 0);
	folio_lock(back);
	err = swap_cache_add_folio(back, e, NULL);
	show("swap-in: swap_cache_add_folio", e);
	memcpy(folio_address(back), data, sizeof(data));	/* the "read" */
	folio_mark_uptodate(back);
	folio_put_swap(back, -1);
	show("mapped by the faulting task: folio_put_swap", e);
	swap_put_entries_direct(e, 1);
	show("the other task exits: swap_put_entries_direct", e);
	err = folio_free_swap(back);
	show("folio_free_swap", e);
	folio_unlock(back);
	printf("\ndata back: \"%s\"\n", (char *)folio_address(back));
	folio_put(back);
	err = uswap_swapoff_type((unsigned int)type);
	uswap_frame_pool_destroy(pool);
	return err ? 1 : 0;
}
