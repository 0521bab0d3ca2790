/* SPDX-License-Identifier: MIT */
/* `jitt diff`: being written. */
#include "cli.h"

#include <stdio.h>

int cmd_diff(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "jitt diff: not built yet\n");
	return 1;
}
