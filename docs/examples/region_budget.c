/* SPDX-License-Identifier: MIT */
/*
 * Example: the in-process mode. A 4 MiB buffer of this program's own memory
 * lives under a 1 MiB budget; the pages over it are swapped to a compressed
 * in-memory device and come back on access, with no change to the code that
 * uses the buffer. The compressed store counts too: resident + compressed
 * stays within 2 MiB (total_bytes).
 * Build: cc region_budget.c $(pkg-config --cflags --libs uswap)
 * Run as root (or with access to /dev/userfaultfd).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <uswap/uswap.h>

/* Data that compresses about 6:1: 64 varied words in each page of 512. */
static uint64_t word(size_t i)
{
	return i % 512 < 64 ? i * 2654435761u : 0;
}

int main(void)
{
	struct uswap_region_config cfg = { .budget_bytes = 1 << 20, .swap = "zram:16M",
					   .total_bytes = 2 << 20 };
	struct uswap_region_pool *pool;
	struct uswap_region_stat st;
	size_t n = (4 << 20) / sizeof(uint64_t), bad = 0;
	uint64_t *buf;
	int err;

	err = uswap_region_pool_create(&cfg, &pool);
	if (err) {
		fprintf(stderr, "uswap_region_pool_create: %s\n", strerror(-err));
		return 1;
	}
	err = uswap_region_create(pool, n * sizeof(uint64_t), (void **)&buf);
	if (err) {
		fprintf(stderr, "uswap_region_create: %s\n", strerror(-err));
		uswap_region_pool_destroy(pool);
		return 1;
	}
	for (size_t i = 0; i < n; i++)		/* four times the budget */
		buf[i] = word(i);
	for (size_t i = 0; i < n; i++)		/* back from swap */
		bad += buf[i] != word(i);
	uswap_region_pool_stat(pool, &st);
	printf("%zu wrong words; resident %llu of %llu pages at most %llu, swapped %llu, "
	       "swap-ins %llu (+%llu prefetched)\n", bad,
	       (unsigned long long)st.resident_pages, (unsigned long long)st.budget_pages,
	       (unsigned long long)st.peak_resident_pages, (unsigned long long)st.swapped_pages,
	       (unsigned long long)st.swapins, (unsigned long long)st.prefetched);
	printf("compressed %llu bytes; resident + compressed at most %llu of %llu pages; "
	       "%llu refaults per million evictions\n", (unsigned long long)st.compressed_bytes,
	       (unsigned long long)st.peak_total_pages, (unsigned long long)st.total_pages,
	       (unsigned long long)st.refault_ppm);
	uswap_region_destroy(pool, buf);
	uswap_region_pool_destroy(pool);
	return bad != 0;
}
