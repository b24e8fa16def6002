/* SPDX-License-Identifier: MIT */
/*
 * Fuzz slot-operation sequences against table_differential's reference
 * model (tests/stress/table_model.h), on both slot designs. Input: one
 * byte whose low bit picks the design (0 table, 1 legacy), then for each
 * step one byte choosing the operation, followed by the bytes the
 * operation's own choices take (slot, order, count, shadow: as many as
 * each choice needs; zeros once the input is used up). At most MAX_STEPS
 * steps on a device of DEV_PAGES slots. After every step the slots it
 * touched are compared with the model, every SWEEP_EVERY steps every
 * slot, every folio and the device's statistics; at the end everything
 * is given back and the device must swap off with every frame free. Any
 * divergence is described on stderr and aborts.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_input.h"

#define DEV_PAGES	700	/* 2 clusters, the last one tail-masked */
#define POOL_FRAMES	2048
#define BIG_COUNT	200	/* past the in-table count and the legacy map byte */
#define TD_RAND_BELOW(n)	fz_below(n)
#define TD_RAND64()		fz_bytes(8)
#define TD_FAIL_EXIT()		abort()
#include "table_model.h"

#define MAX_STEPS	256
#define SWEEP_EVERY_FZ	64
#define MAX_BIG		1	/* big counts per run: each is BIG_COUNT+ calls */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned int big = 0;

	if (!size)
		return 0;
	setenv("USWAP_QUIET", "1", 0);
	fz_data = data + 1;
	fz_left = size - 1;
	seed = 0;
	td_setup(data[0] & 1 ? "legacy" : "table");
	for (step = 0; step < MAX_STEPS && fz_left; step++) {
		unsigned int op = (unsigned int)fz_bytes(1) % NR_OPS;

		if (op == OP_BIG_PUT && !nr_big)
			continue;
		if (op == OP_BIG_DUP && big++ == MAX_BIG)
			continue;
		td_run_op(op);
		if ((step + 1) % SWEEP_EVERY_FZ == 0) {
			op_name = "sweep";
			sweep();
		}
	}
	td_finish();
	return 0;
}
