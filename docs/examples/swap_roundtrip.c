/* SPDX-License-Identifier: MIT */
/*
 * Example: a page of data swapped out to a compressed in-memory device and
 * read back through the swap cache, with the kernel's folio workflow.
 * Build: cc swap_roundtrip.c $(pkg-config --cflags --libs uswap)
 */
#include <stdio.h>
#include <string.h>

#include <uswap/uswap.h>

int main(void)
{
	struct uswap_swapin_info info = { 0 };
	struct uswap_frame_pool *pool;
	struct folio *folio, *back;
	char err[256] = "";
	swp_entry_t entry;
	int type, ret = 1;

	type = uswap_swapon_spec("zram:16M", 0, err, sizeof(err));
	if (type < 0 || uswap_frame_pool_create(16, &pool)) {
		fprintf(stderr, "setup: %s\n", err);
		return 1;
	}
	folio = uswap_folio_alloc(pool, 0);
	strcpy(folio_address(folio), "kept across swap");
	folio_mark_uptodate(folio);

	/* Swap-out: slots, one reference (as one page table maps it), write,
	 * then the folio leaves the cache and its frame is freed. */
	folio_lock(folio);
	if (folio_alloc_swap(folio) || folio_dup_swap(folio, -1))
		goto out;
	entry = folio_swap_entry(folio);
	if (uswap_swap_writeout(folio, true))	/* unlocks */
		goto out;
	folio_lock(folio);
	swap_cache_del_folio(folio, 0);
	folio_unlock(folio);
	folio_put(folio);

	/* Swap-in: through the cache, then the reference moves to the mapper. */
	if (uswap_swapin(entry, pool, 1, &back, &info) || uswap_swapin_lock(back, entry))
		goto out;
	printf("read back: \"%s\" (count %ld)\n", (char *)folio_address(back), swp_swapcount(entry));
	folio_put_swap(back, -1);
	folio_free_swap(back);
	folio_unlock(back);
	folio_put(back);
	ret = 0;
out:
	if (uswap_swapoff_type((unsigned int)type))
		ret = 1;
	uswap_frame_pool_destroy(pool);
	return ret;
}
