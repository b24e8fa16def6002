/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the compressed memory backend gives back every page it was
 * given. The first input byte picks the algorithm, how the rest of the
 * input is laid out into one or two pages, and the slot; the pages are
 * written as one run, read back, compared, then freed, and the memory
 * accounting must return to its baseline. Any divergence aborts.
 *
 * fuzz_zram_roundtrip() is also run over fixed inputs by the unit test
 * test_backend_zram, which includes this file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/backend.h"

#define FZ_PS		SWAP_BACKEND_PAGE_SIZE
#define FZ_SLOTS	16U

int fuzz_zram_roundtrip(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fz_check(int ok)
{
	if (!ok)
		abort();
}

/* Lay @data out into @page: 0 zero pad, 1 repeat, 2 pad with the last byte,
 * 3 every other byte from the input, rest zero. */
static void fz_layout(uint8_t *page, const uint8_t *data, size_t size,
		      unsigned int mode)
{
	size_t n = size < FZ_PS ? size : FZ_PS, i;

	memset(page, 0, FZ_PS);
	switch (mode) {
	case 0:
		memcpy(page, data, n);
		break;
	case 1:
		for (i = 0; size && i < FZ_PS; i++)
			page[i] = data[i % size];
		break;
	case 2:
		memcpy(page, data, n);
		if (n)
			memset(page + n, data[n - 1], FZ_PS - n);
		break;
	default:
		for (i = 0; i < n; i++)
			page[2 * i % FZ_PS] = data[i];
		break;
	}
}

int fuzz_zram_roundtrip(const uint8_t *data, size_t size)
{
	static uint8_t in[2 * FZ_PS], out[2 * FZ_PS];
	struct swap_zram_stats base, st;
	struct swap_backend *be;
	enum swap_zram_algo algo;
	unsigned int mode, nr, i;
	uint64_t slot;

	if (!size)
		return 0;
	algo = (data[0] & 1) ? SWAP_ZRAM_ZSTD : SWAP_ZRAM_LZ4;
	mode = (data[0] >> 1) & 3;
	slot = (data[0] >> 3) % (FZ_SLOTS - 2);	/* slot+1 < FZ_SLOTS - 1 */
	data++;
	size--;
	nr = size > FZ_PS ? 2 : 1;

	fz_layout(in, data, size, mode);
	if (nr == 2)
		fz_layout(in + FZ_PS, data + FZ_PS, size - FZ_PS, mode);

	fz_check(swap_backend_zram_create(FZ_SLOTS, algo, &be) == 0);
	fz_check(swap_backend_zram_stats(be, &base) == 0);
	fz_check(swap_backend_write(be, slot, nr, in) == 0);
	memset(out, 0xa5, sizeof(out));
	fz_check(swap_backend_read(be, slot, nr, out) == 0);
	fz_check(memcmp(in, out, (size_t)nr * FZ_PS) == 0);

	fz_check(swap_backend_zram_stats(be, &st) == 0);
	fz_check(st.pages_stored == nr);
	fz_check(st.same_pages + st.compressed_pages + st.raw_pages == nr);
	fz_check(st.compr_data_size <= (uint64_t)st.compressed_pages * (FZ_PS * 3 / 4) +
				       (uint64_t)st.raw_pages * FZ_PS);
	fz_check(st.mem_used == base.mem_used + st.compr_data_size);

	/* an untouched neighbour still reads as zeroes */
	fz_check(swap_backend_read(be, FZ_SLOTS - 1, 1, out) == 0);
	for (i = 0; i < FZ_PS; i++)
		fz_check(out[i] == 0);

	for (i = 0; i < nr; i++)
		swap_backend_slot_free_notify(be, slot + i);
	fz_check(swap_backend_zram_stats(be, &st) == 0);
	fz_check(st.pages_stored == 0 && st.mem_used == base.mem_used);
	swap_backend_destroy(be);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_zram_roundtrip(data, size);
	return 0;
}
