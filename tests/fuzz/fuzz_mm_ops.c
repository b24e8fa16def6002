/* SPDX-License-Identifier: MIT */
/*
 * Fuzz mm operation sequences against mm_differential's byte model
 * (tests/stress/mm_model.h). Input: one byte whose low bit picks the slot
 * design (0 table, 1 legacy) and whose next bit allows large folios
 * (max order 4), then the steps: each takes its operation (two bytes:
 * mmap, write, read, fork, exit, munmap, madvise, reclaim, shmem,
 * swapoff/on of device B) and its own choices from the input (zeros once
 * it is used up), at most MAX_STEPS of them; written bytes come from a
 * generator seeded by 8 input bytes. One thread, direct reclaim, the
 * smallest budget (1 MiB, 256 frames) over a 4 MiB compressed device
 * (1024 slots; mappings of up to 48 pages, 16 of them, and a 24-page
 * shmem object: at most 792 pages of data), so that pages go out and come
 * back all the time. Every read is compared with the model, every byte every
 * CHECK_EVERY_FZ steps and at the end; then every address space and the
 * shmem object go, and no slot may stay in use nor any frame stay taken,
 * and both devices must swap off. Any divergence is described on stderr
 * and aborts.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_input.h"

#define MAX_VMA_PAGES	48
#define SHM_PAGES	24
#define MD_ZRAM_B	"zram:4M"
#define MD_RAND_BELOW(w, n)	((void)(w), fz_below(n))
#define MD_FILL_SEED(w)		((void)(w), fz_bytes(8) | 1)
#include "mm_model.h"

#define MAX_STEPS	96
#define CHECK_EVERY_FZ	32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(cond, what) do {						\
	if (!(cond)) {								\
		fprintf(stderr, "fuzz_mm_ops: %s (%s)\n", what, #cond);		\
		abort();							\
	}									\
} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct uswap_mem_config cfg = { .budget_bytes = 1 << 20, .no_kswapd = true };
	static struct world world;
	struct world *w = &world;
	struct uswap_mem_stats st;
	char err[160] = "";
	unsigned int k;

	if (!size)
		return 0;
	setenv("USWAP_QUIET", "1", 0);
	design = data[0] & 1 ? "legacy" : "table";
	cfg.max_order = data[0] & 2 ? 4 : 0;
	fz_data = data + 1;
	fz_left = size - 1;
	memset(w, 0, sizeof(*w));
	atomic_store(&failed, 0);
	FZ_CHECK(!uswap_mem_create(&cfg, &mem), "mem_create");
	dev_a = uswap_swapon_spec_design("zram:4M", SWAP_FLAG_PREFER | 10, design, err,
					 sizeof(err));
	FZ_CHECK(dev_a >= 0, err);
	dev_b = -1;
	FZ_CHECK(world_init(w), "world_init");
	for (w->step = 0; w->step < MAX_STEPS && fz_left; w->step++) {
		FZ_CHECK(step(w), "step");
		if ((w->step + 1) % CHECK_EVERY_FZ == 0) {
			w->op = "check all";
			FZ_CHECK(check_all(w), "check_all");
		}
	}
	w->op = "final check";
	FZ_CHECK(check_all(w), "final check");
	world_fini(w);
	/* Nothing maps or holds anything: reclaim drops the cache. */
	uswap_mem_get_stats(mem, &st);
	for (k = 0; k < 8; k++) {
		uswap_mem_reclaim(mem, st.nr_frames * 4);
		uswap_mem_get_stats(mem, &st);
		if (st.free_frames == st.nr_frames && !dev_inuse(dev_a) && !dev_inuse(dev_b))
			break;
	}
	FZ_CHECK(!dev_inuse(dev_a) && !dev_inuse(dev_b), "slots left in use");
	FZ_CHECK(st.free_frames == st.nr_frames, "frames left taken");
	uswap_mem_destroy(mem);
	FZ_CHECK(!uswap_swapoff_type((unsigned int)dev_a), "swapoff of device A");
	if (dev_b >= 0)
		FZ_CHECK(!uswap_swapoff_type((unsigned int)dev_b), "swapoff of device B");
	dev_b = -1;
	return 0;
}
