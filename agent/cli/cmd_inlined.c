/* SPDX-License-Identifier: MIT */
/*
 * `jitt inlined PLAIN INSTRUMENTED [-o FILE] [-v]`: the functions the plain build inlined
 * everywhere, as GCC's -finstrument-functions-exclude-function-list= options, so that the
 * instrumented build traces what the compiler kept (agent/analysis/inlined.h,
 * docs/exclude.md "What the compiler kept"). FILE is written as `jitt exclude -o` writes
 * its list (agent/cli/cli_out.c): whole or not at all, never over an input.
 */
#include "agent/cli/cli.h"
#include "agent/analysis/exclude.h"
#include "agent/analysis/inlined.h"
#include "agent/escape.h"
#include "ringbuf/elf.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define SHOWN 20 /* entries listed without -v */

#define SYNOPSIS "usage: jitt inlined PLAIN INSTRUMENTED [-o FILE] [-v]\n"

static const char details[] =
	"  PLAIN          the program built without jitt (as it ships), with its symbols\n"
	"  INSTRUMENTED   the same program built with jitt's flags, with its symbols\n"
	"  -o FILE        write the list as GCC options, for `gcc @FILE` (also --output)\n"
	"  -v             show every entry (default: the first %d; also --verbose)\n"
	"Functions INSTRUMENTED has and PLAIN lacks were inlined everywhere by the compiler\n"
	"that builds the product: the list leaves them without trace points.\n"
	"exit status: 0 done, 1 a file could not be read or written, 2 bad arguments\n";

static void help(FILE *out)
{
	fprintf(out, details, SHOWN);
}

static const struct option longopts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "verbose", no_argument, NULL, 'v' },
	CLI_HELP_OPTION,
	{ NULL, 0, NULL, 0 },
};
static const struct cli_command command = { "jitt inlined", SYNOPSIS, help, "o:v", longopts };

/* path's function symbols, or an error printed: 0 or 1. */
static int load(const char *path, struct rb_elf *elf)
{
	int e = rb_elf_load(path, elf);
	if (!e && elf->full_symtab)
		return 0;
	fputs("jitt inlined: ", stderr);
	agent_escape_fput(stderr, path);
	if (!e)
		fputs(": no symbol table (stripped?): give the build with its symbols\n", stderr);
	else if (e == -EINVAL)
		fputs(": not an ELF file\n", stderr);
	else
		fprintf(stderr, ": %s\n", strerror(-e));
	rb_elf_free(elf);
	return 1;
}

static int write_list(const char *path, const char *const *inputs, const struct inlined_result *r)
{
	struct cli_out out;
	if (cli_out_open("jitt inlined", path, 0644, inputs, 2, &out) != 0)
		return 1;
	int e = cli_out_close(&out,
			      exclude_write_names(out.f, (const char *const *)r->list, r->nlist));
	if (e) {
		fputs("jitt inlined: ", stderr);
		agent_escape_fput(stderr, path);
		fprintf(stderr, ": %s\n", strerror(-e));
	}
	return e ? 1 : 0;
}

static void report(const struct inlined_result *r, bool verbose)
{
	printf("plain:        %zu functions\n", r->plain);
	printf("instrumented: %zu functions, %zu of them also in plain (their trace points stay)\n",
	       r->instr, r->kept);
	printf("inlined:      %zu functions plain has no body for: inlined everywhere, or "
	       "dropped\n",
	       r->inlined);
	printf("list:         %zu entries\n", r->nlist);
	if (r->clash)
		printf("not listed:   %zu whose name is part of a kept function's (GCC matches "
		       "substrings)\n",
		       r->clash);
	if (r->reserved)
		printf("left out:     %zu names C reserves (jitt's wrappers, the compiler's "
		       "helpers)\n",
		       r->reserved);
	if (r->unlistable)
		printf("not listed:   %zu that are not C names GCC's list can hold\n",
		       r->unlistable);
	size_t shown = verbose || r->nlist <= SHOWN + 2 ? r->nlist : SHOWN;
	char nm[256];
	for (size_t i = 0; i < shown; i++)
		printf("  %s\n", agent_escape(nm, sizeof(nm), r->list[i]));
	if (shown < r->nlist)
		printf("  ... %zu more (-v shows them; -o FILE writes them all)\n",
		       r->nlist - shown);
}

int cmd_inlined(int argc, char **argv)
{
	const char *outpath = NULL, *in[2] = { NULL, NULL };
	int nin = 0;
	bool verbose = false;
	struct cli_args p;
	cli_args_init(&p, &command, argc, argv);
	int status = -1; /* until the command line is read */
	for (int c; status < 0 && (c = cli_next(&p)) != CLI_END;) {
		switch (c) {
		case CLI_EXIT:
			status = p.status;
			break;
		case 'o':
			if (!*p.arg)
				status = cli_usage_error(&p, "-o needs a file name", NULL);
			outpath = p.arg;
			break;
		case 'v':
			verbose = true;
			break;
		case CLI_OPERAND:
			if (nin == 2)
				status = cli_usage_error(&p, "one file too many:", p.arg);
			else
				in[nin++] = p.arg;
			break;
		}
	}
	if (status < 0 && nin < 2)
		status = cli_usage_error(&p, nin ? "no instrumented build given"
						 : "no plain build given",
					 NULL);
	if (status >= 0)
		return status;

	struct rb_elf plain, instr;
	if (load(in[0], &plain))
		return 1;
	if (load(in[1], &instr)) {
		rb_elf_free(&plain);
		return 1;
	}
	struct inlined_result r;
	int e = inlined_select(&plain, &instr, &r);
	rb_elf_free(&plain);
	rb_elf_free(&instr);
	if (e) {
		fprintf(stderr, "jitt inlined: %s\n", strerror(-e));
		return 1;
	}
	report(&r, verbose);
	status = 0;
	if (outpath) {
		status = write_list(outpath, in, &r);
		if (!status) {
			char shown[512];
			agent_escape(shown, sizeof(shown), outpath);
			printf("\nwrote %zu entr%s to %s: add @%s to the instrumented compiles "
			       "(docs/exclude.md)\n",
			       r.nlist, r.nlist == 1 ? "y" : "ies", shown, shown);
		}
	}
	if (fflush(stdout) != 0)
		status = 1;
	inlined_free(&r);
	return status;
}
