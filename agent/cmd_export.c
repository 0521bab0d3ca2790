/* SPDX-License-Identifier: MIT */
/* `jitt export`: being written. */
#include "cli.h"

#include <stdio.h>

int cmd_export(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "jitt export: not built yet\n");
	return 1;
}
