/* SPDX-License-Identifier: MIT */
/* A PIE program made of tests/traced.c and untraced.c, linked as an OEM's service is (the
 * SDK's glibc archive): tests/count-trace-insns.sh reads its trace points (make bench). */
#include "tests/traced.h"

int main(void)
{
	traced_empty();
	untraced_empty();
	return traced_top(1) == 0;
}
