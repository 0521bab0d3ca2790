/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/inlined.h - trace what the compiler kept: the functions a plain build
 * inlined everywhere, as GCC's exclude list for the instrumented build (`jitt inlined`,
 * docs/exclude.md "What the compiler kept").
 *
 * GCC's -finstrument-functions adds the trace points while it parses, before it inlines:
 * a helper inlined into its callers keeps its entry and exit in every copy, and the points
 * make helpers too big to inline, so the instrumented program calls out of line what the
 * product inlines (duktape: 3,188 trace points where the plain build has 813 functions).
 * clang has -finstrument-functions-after-inlining; GCC does not. What GCC can do is leave
 * named functions alone, so the list comes from the two builds' symbol tables:
 *
 *   every function of the instrumented build has a body there (the trace points take its
 *   address, so it is emitted even where every call was inlined), while the plain build
 *   has bodies only for what it kept out of line. A name the instrumented build has and
 *   the plain build lacks was inlined everywhere (or dropped) by the compiler that builds
 *   the product: its trace points cost on every call and describe a function the product
 *   does not have.
 *
 * Names are symbols up to their first '.' (GCC's clones "f.isra.0", "f.lto_priv.0" are the
 * source function f). GCC matches each entry of its list as a substring of a function's
 * name, so an entry that is part of a kept function's name (one both builds have) is not
 * listed: it would take that function's trace points too. Nor is a name the list cannot
 * hold (exclude_listable). jitt's runtime, linked only into the instrumented build, has
 * functions of its own there: they carry no trace point, and their entries are harmless
 * (a name that contains one is kept, and not listed, or was inlined, and listed too); the
 * names C reserves (__wrap_read, __divti3) are left out. A function the plain build inlined at some call sites and kept
 * at others stays instrumented, its inlined copies too: what is left of GCC's excess, and
 * what clang's after-inlining would also remove.
 */
#ifndef JITT_AGENT_INLINED_H
#define JITT_AGENT_INLINED_H

#include "ringbuf/elf.h"

#include <stddef.h>
#include <stdio.h>

struct inlined_result {
	char **list;	      /* the entries, sorted */
	size_t nlist;
	size_t plain, instr;  /* distinct function names in each build */
	size_t kept;	      /* names both builds have: their trace points stay */
	size_t reserved;      /* names only the instrumented build has, reserved to the
			       * implementation (__wrap_read: jitt's runtime, the compiler's) */
	size_t inlined;	      /* the others only the instrumented build has */
	size_t clash;	      /* of those, not listed: part of a kept function's name */
	size_t unlistable;    /* of those, not listed: not a name GCC's list can hold */
};

/* The list (above) from the plain and the instrumented builds' function symbols. 0 or
 * -ENOMEM (r is then empty). */
int inlined_select(const struct rb_elf *plain, const struct rb_elf *instr,
		   struct inlined_result *r);
void inlined_free(struct inlined_result *r);

#endif
