/* SPDX-License-Identifier: MIT */
/* traced_empty's twin, built without instrumentation. */
#include "tests/traced.h"

__attribute__((noinline)) void untraced_empty(void)
{
	__asm__ __volatile__("nop"); /* as traced_empty's */
}
