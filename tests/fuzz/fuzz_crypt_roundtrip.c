/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the encryption wrapper's slot round trip (backend_crypt.c)
 * over a file backend on a memfd, against a model of what each slot must
 * read as. The input is a sequence of 4-byte operations:
 *   write a run of slots with pages named by (slot, generation);
 *   read a slot; change one byte of a slot's bytes on the file (any
 *   offset, any bit pattern); copy one slot's bytes over another's;
 *   discard a run; free a slot.
 * A slot reads back exactly its last page when it was written (and not
 * discarded or freed since) and its bytes on the file are the ones that
 * write left there (a change undone, or a copy of its own bytes brought
 * back, counts as untouched); -EIO with a zeroed buffer otherwise. abort()
 * on any other outcome. Slot 0, the header, is left out of the model: it passes
 * through unsealed by design.
 * The backend is made once per process (an io_uring ring per input would
 * dominate the time) and every slot is discarded before each input.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io/backend.h"

#define PS		SWAP_BACKEND_PAGE_SIZE
#define NR_SLOTS	32U
#define MAX_RUN		4U

struct slot_model {
	uint32_t gen;		/* 0: forgotten, reads as -EIO */
};

/* What each slot's last write left on the file. */
static char image[NR_SLOTS][PS];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct swap_backend *be;
static int memfd = -1;
static char *buf, *want, *raw;

static void fill(char *p, uint64_t slot, uint32_t gen)
{
	uint64_t *w = (uint64_t *)p;

	for (size_t i = 0; i < PS / 8; i++)
		w[i] = (slot << 40) ^ ((uint64_t)gen << 16) ^ (i * 0x9e3779b97f4a7c15ULL);
}

static void setup(void)
{
	char path[64];
	struct swap_backend *file;

	memfd = memfd_create("fuzz_crypt", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, (off_t)NR_SLOTS * PS))
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	buf = aligned_alloc(PS, MAX_RUN * PS);
	want = malloc(PS);
	raw = malloc(PS);
	if (!buf || !want || !raw || swap_backend_file_open(path, 0, &file) ||
	    swap_backend_crypt_create(file, SWAP_CRYPT_AUTO, &be))
		abort();
}

static void check_read(struct slot_model *m, unsigned int slot)
{
	int ret;

	bool intact;

	if (pread(memfd, raw, PS, (off_t)slot * PS) != PS)
		abort();
	intact = !memcmp(raw, image[slot], PS);
	memset(buf, 0xa5, PS);
	ret = swap_backend_read(be, slot, 1, buf);
	if (m[slot].gen && intact) {
		fill(want, slot, m[slot].gen);
		if (ret || memcmp(buf, want, PS)) {
			fprintf(stderr, "slot %u: gen %u read %d or wrong bytes\n", slot,
				m[slot].gen, ret);
			abort();
		}
		return;
	}
	memset(want, 0, PS);
	if (ret != -EIO || memcmp(buf, want, PS)) {
		fprintf(stderr, "slot %u: must fail, read %d%s\n", slot, ret,
			ret == -EIO ? " with bytes left" : "");
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct slot_model m[NR_SLOTS] = { { 0 } };
	uint32_t gen = 0;

	if (!be)
		setup();
	if (swap_backend_discard(be, 1, NR_SLOTS - 1))
		abort();
	for (size_t i = 0; i + 4 <= size; i += 4) {
		unsigned int op = data[i] % 6, slot = 1 + data[i + 1] % (NR_SLOTS - 1);
		unsigned int a = data[i + 2], b = data[i + 3];
		unsigned int n = 1 + a % MAX_RUN, to;
		off_t at;

		switch (op) {
		case 0:		/* write a run */
			n = slot + n <= NR_SLOTS ? n : NR_SLOTS - slot;
			gen++;
			for (unsigned int j = 0; j < n; j++)
				fill(buf + (size_t)j * PS, slot + j, gen);
			if (swap_backend_write(be, slot, n, buf))
				abort();
			for (unsigned int j = 0; j < n; j++) {
				m[slot + j].gen = gen;
				if (pread(memfd, image[slot + j], PS, (off_t)(slot + j) * PS) != PS)
					abort();
			}
			break;
		case 1:
			check_read(m, slot);
			break;
		case 2:		/* one byte changed on the file */
			at = (off_t)slot * PS + (off_t)((a << 4 | b >> 4) % PS);
			if (pread(memfd, raw, 1, at) != 1)
				abort();
			raw[0] ^= (char)(b | 1);
			if (pwrite(memfd, raw, 1, at) != 1)
				abort();
			break;
		case 3:		/* a slot's bytes copied over another's */
			to = 1 + b % (NR_SLOTS - 1);
			if (to == slot)
				break;
			if (pread(memfd, raw, PS, (off_t)slot * PS) != PS ||
			    pwrite(memfd, raw, PS, (off_t)to * PS) != PS)
				abort();
			break;
		case 4:		/* discard a run */
			n = slot + n <= NR_SLOTS ? n : NR_SLOTS - slot;
			if (swap_backend_discard(be, slot, n))
				abort();
			for (unsigned int j = 0; j < n; j++)
				m[slot + j].gen = 0;
			break;
		case 5:
			swap_backend_slot_free_notify(be, slot);
			m[slot].gen = 0;
			break;
		}
	}
	for (unsigned int s = 1; s < NR_SLOTS; s++)
		check_read(m, s);
	return 0;
}
