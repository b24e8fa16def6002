/* SPDX-License-Identifier: MIT */
/*
 * Differential test of a slot design against a plain reference model.
 *
 * Random sequences of slot operations run on one in-memory device; a model
 * keeps, per slot, its exact count (uint64), the folio caching it, its
 * shadow, whether it is bad, its memory cgroup (three groups with
 * different swap limits, and the root) and its zero flag (a folio written
 * out with only zeros; the in-memory device writes nothing else). After every step the slots the operation
 * touched are compared with the device; every SWEEP_EVERY steps and at the
 * end every slot, every live folio and uswap_swap_stat are compared.
 *
 * USWAP_TEST_DESIGN picks the design under test ("table", the default, or
 * "legacy"); the operations and the model are the same, only the way a
 * slot's state is read back differs:
 *   table:  uswap_swap_tb_peek's raw entry (type, in-table count, PFN,
 *           shadow) and exact count;
 *   legacy: uswap_swap_tb_peek's swap_map byte (count % 63, SWAP_HAS_CACHE
 *           0x40, COUNT_CONTINUED 0x80, bad 0x3f) and exact count, the
 *           cached folio (swap_cache_get_folio) and the shadow
 *           (swap_cache_get_shadow); continuation pages are counted
 *           against uswap_legacy_stat. Documented differences:
 *           swap_cache_replace_folio is -EOPNOTSUPP (checked, nothing
 *           changes); no extend tables.
 *
 * The test holds every swap-cache folio locked (as mm would while it works
 * on it), so the library's opportunistic reclaim, which only trylocks,
 * never takes one away behind the model's back: a cached slot whose count
 * reaches 0 stays until the test drops the folio (second freeing rule).
 *
 * USWAP_TEST_OPS (default 1000000, 200000 under TSan), USWAP_TEST_SEED (default random,
 * always printed). On a divergence: the seed, the step, the operation and
 * the slot's model vs actual state; exit 1.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uswap/uswap.h>
#include <uswap/legacy.h>
#include "swap/swap_table.h"
#include "testutil.h"

static uint64_t rng;
#define TD_RAND_BELOW(n)	test_rand_below(&rng, (n))
#define TD_RAND64()		test_rand(&rng)
#define TD_FAIL_EXIT()		exit(1)
#include "table_model.h"


static volatile sig_atomic_t progress;

static void watchdog(int sig)
{
	char buf[200];
	int n;

	(void)sig;
	if (progress) {
		progress = 0;
		alarm(30);
		return;
	}
	n = snprintf(buf, sizeof(buf), "table_differential: HUNG with USWAP_TEST_DESIGN=%s"
		     " USWAP_TEST_SEED=%" PRIu64 " at step %" PRIu64 ", op %s (%s)\n", design,
		     seed, step, op_name, op_desc);
	if (n > 0 && write(2, buf, (size_t)n) < 0)
		_exit(1);
	_exit(1);
}

static unsigned int pick_op(uint64_t nr_ops)
{
	/*
	 * Phases of 40000 steps: balanced (allocating less as the device
	 * fills), filling up to full, draining.
	 */
	unsigned int fill = (unsigned int)(nr_inuse * 100 / (DEV_PAGES - 1));
	unsigned int phase = (unsigned int)(step / 40000 % 4);
	unsigned int w[NR_OPS] = {
		[OP_ALLOC] = fill < 50 ? 16 : fill < 85 ? 8 : 3,
		[OP_FOLIO_DUP] = 14, [OP_FOLIO_PUT] = 12, [OP_CACHE_DEL] = 7,
		[OP_SWAPIN] = 9, [OP_FREE_SWAP] = 5, [OP_DUP_DIRECT] = 8,
		[OP_PUT_DIRECT] = fill < 85 ? 12 : 20, [OP_HIB_ALLOC] = 2, [OP_HIB_FREE] = 2,
		[OP_REPLACE] = 2, [OP_MISUSE] = 3, [OP_WRITEOUT] = 4,
	};
	unsigned int total = 0, r, i;

	if (phase == 2) {
		w[OP_ALLOC] = 30;
		w[OP_HIB_ALLOC] = 6;
		w[OP_PUT_DIRECT] = 6;
		w[OP_FOLIO_PUT] = 4;
		w[OP_FREE_SWAP] = 1;
	} else if (phase == 3) {
		w[OP_ALLOC] = 2;
		w[OP_PUT_DIRECT] = 25;
		w[OP_FOLIO_DUP] = 4;
	}

	if (step == nr_ops / 3 || rnd(250000) == 0)
		return OP_BIG_DUP;
	if (nr_big && rnd(4000) == 0)
		return OP_BIG_PUT;
	for (i = 0; i < NR_OPS; i++)
		total += w[i];
	r = (unsigned int)rnd(total);
	for (i = 0; r >= w[i]; i++)
		r -= w[i];
	return i;
}

int main(void)
{
	uint64_t nr_ops = test_ops(DEFAULT_OPS);
	struct timespec t0, t1;
	unsigned int i;

	seed = test_seed("table_differential");
	rng = seed;
	if (!getenv("USWAP_TEST_VERBOSE"))
		setenv("USWAP_QUIET", "1", 0);
	if (getenv("USWAP_TEST_DESIGN") && *getenv("USWAP_TEST_DESIGN"))
		design = getenv("USWAP_TEST_DESIGN");
	if (strcmp(design, "table") && strcmp(design, "legacy")) {
		fprintf(stderr, "table_differential: USWAP_TEST_DESIGN=%s: table or legacy\n",
			design);
		return 1;
	}
	legacy = !strcmp(design, "legacy");
	if (legacy)
		printf("table_differential: design legacy, %" PRIu64 " ops, %d slots, map byte"
		       " max %d, continuation digits base %d\n", nr_ops, DEV_PAGES,
		       MAP_BASE - 1, CONT_BASE);
	else
		printf("table_differential: design table, %" PRIu64 " ops, %d slots, %d count"
		       " bits (in-table max %u)\n", nr_ops, DEV_PAGES, SWP_TB_COUNT_BITS,
		       SWP_TB_COUNT_MAX);
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	signal(SIGALRM, watchdog);
	alarm(30);

	td_setup(design);

	for (step = 0; step < nr_ops; step++) {
		unsigned int op = pick_op(nr_ops);

		td_run_op(op);
		if ((step + 1) % SWEEP_EVERY == 0) {
			op_name = "sweep";
			sweep();
			progress = 1;
		}
	}
	td_finish();
	uswap_frame_pool_destroy(pool);
	alarm(0);
	clock_gettime(CLOCK_MONOTONIC, &t1);

	printf("table_differential: %s passed in %.2f s; ops (errors):", design,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	for (i = 0; i < NR_OPS; i++)
		printf("%s %s %" PRIu64 " (%" PRIu64 ")", i ? "," : "", op_names[i], stats.ops[i],
		       stats.errs[i]);
	printf("; %" PRIu64 " multi-slot puts, %" PRIu64 " across clusters, %" PRIu64
	       " slots past %d references; most slots in use %" PRIu64 " of %d, full %" PRIu64
	       " times\n", stats.range_puts_multi, stats.cross_cluster_puts, stats.big_dups,
	       BIG_COUNT, stats.max_inuse, DEV_PAGES - 1, stats.full);
	return 0;
}
