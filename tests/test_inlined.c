/* SPDX-License-Identifier: MIT */
/*
 * `jitt inlined`'s list (agent/analysis/inlined.h) from two symbol tables made here: what
 * only the instrumented build has is listed, clones count as their source function, names
 * the plain build keeps stay, an entry that is part of a kept name is not listed (GCC
 * matches substrings), reserved and non-C names are left out, and the list is sorted.
 */
#include "harness.h"
#include "agent/analysis/inlined.h"

#include <string.h>

static void table(struct rb_elf *elf, struct rb_symbol *syms, const char *const *names,
		  size_t n)
{
	memset(elf, 0, sizeof(*elf));
	for (size_t i = 0; i < n; i++)
		syms[i] = (struct rb_symbol){ .addr = 0x1000 + 16 * i, .size = 16, .name = names[i] };
	elf->syms = syms;
	elf->nsyms = n;
	elf->full_symtab = true;
}

TEST(inlined_lists_what_only_the_instrumented_build_has)
{
	static const char *const plain_names[] = {
		"main", "parse_expr", "eval.lto_priv.0", "get_value_slow", "memcpy",
	};
	static const char *const instr_names[] = {
		"main",		  /* kept */
		"parse_expr.isra.0", /* kept (a clone of a kept function) */
		"eval",		  /* kept */
		"get_value_slow", /* kept */
		"get_value",	  /* inlined, but part of get_value_slow: not listed */
		"push.part.0",	  /* inlined: listed as "push" */
		"push",		  /* the same function */
		"skip_space",	  /* inlined: listed */
		"__wrap_read",	  /* jitt's wrapper: reserved, left out */
		"_Z3foov",	  /* C++: GCC matches demangled names, left out */
		"arg$1",	  /* not a C name */
		"advance",	  /* inlined: listed */
	};
	struct rb_symbol a[8], b[16];
	struct rb_elf plain, instr;
	table(&plain, a, plain_names, sizeof(plain_names) / sizeof(*plain_names));
	table(&instr, b, instr_names, sizeof(instr_names) / sizeof(*instr_names));
	struct inlined_result r;
	if (!CHECK(inlined_select(&plain, &instr, &r) == 0))
		return;
	CHECK_EQ_U64(r.plain, 5);
	CHECK_EQ_U64(r.instr, 11);
	CHECK_EQ_U64(r.kept, 4);
	CHECK_EQ_U64(r.reserved, 2);
	CHECK_EQ_U64(r.unlistable, 1);
	CHECK_EQ_U64(r.clash, 1);
	CHECK_EQ_U64(r.inlined, 5);
	if (CHECK(r.nlist == 3)) {
		CHECK(strcmp(r.list[0], "advance") == 0);
		CHECK(strcmp(r.list[1], "push") == 0);
		CHECK(strcmp(r.list[2], "skip_space") == 0);
	}
	inlined_free(&r);

	/* Nothing inlined: an empty list. */
	table(&instr, b, plain_names, sizeof(plain_names) / sizeof(*plain_names));
	if (CHECK(inlined_select(&plain, &instr, &r) == 0))
		CHECK_EQ_U64(r.nlist, 0);
	inlined_free(&r);
}
