/* SPDX-License-Identifier: MIT */
/*
 * uswap demo: the main job until the bench exists. Swaps a folio out to an
 * in-memory device and back, printing the swap table entry at each step.
 */
#include <stdio.h>

#include <uswap/uswap.h>
#include "cli/commands.h"
#include "swap/swap_table.h"

int cmd_demo(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("free   %#018llx %s\n", (unsigned long long)SWP_TB_NULL, swp_tb_type_name(SWP_TB_NULL));
	printf("bad    %#018llx %s\n", (unsigned long long)SWP_TB_BAD, swp_tb_type_name(SWP_TB_BAD));
	return 0;
}
