/* SPDX-License-Identifier: MIT */
/*
 * How every `jitt` subcommand reads its command line (agent/cli/cli_args.c): options and
 * operands in any order, `--opt=value` and `--opt value` alike, "--" ends the options; a
 * missing value, an unknown option and a value given to an option that takes none are each
 * named in one line, then the synopsis, status 2; -h prints the help on stdout, status 0.
 * tests/golden/cli-args.txt shows the same through the real command, subcommand by
 * subcommand.
 */
#include "harness.h"
#include "agent/cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void help(FILE *out)
{
	fputs("  the rest of the help\n", out);
}

static const struct option longopts[] = {
	{ "format", required_argument, NULL, 'f' },
	{ "json", no_argument, NULL, 'j' },
	{ "output", required_argument, NULL, 'o' },
	CLI_HELP_OPTION,
	{ NULL, 0, NULL, 0 },
};
static const struct cli_command command = { "jitt test", "usage: jitt test [opts] FILE\n", help,
					    "o:vk:", longopts };

struct parsed {
	char codes[512]; /* what cli_next returned: "f=chrome @FILE exit 2" */
	char out[1024], err[1024];
};

/* fd (1 or 2) into a new file of the test's folder; returns the saved fd. */
static int catch_fd(int fd, const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	int saved = dup(fd), f = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	dup2(f, fd);
	close(f);
	return saved;
}

static void release_fd(int fd, int saved, const char *name, char *text, size_t size)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	dup2(saved, fd);
	close(saved);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(text, 1, size - 1, f) : 0;
	text[n] = 0;
	if (f)
		fclose(f);
}

/* Runs the parser over argv (NULL-terminated) as a subcommand would. */
static void parse(char **argv, struct parsed *r)
{
	int argc = 0;
	while (argv[argc])
		argc++;
	fflush(NULL);
	int out = catch_fd(STDOUT_FILENO, "out"), err = catch_fd(STDERR_FILENO, "err");
	struct cli_args p;
	cli_args_init(&p, &command, argc, argv);
	size_t n = 0;
	r->codes[0] = 0;
	for (int c; (c = cli_next(&p)) != CLI_END && n < sizeof(r->codes);) {
		const char *sep = n ? " " : "";
		if (c == CLI_EXIT) {
			n += (size_t)snprintf(r->codes + n, sizeof(r->codes) - n, "%sexit %d", sep,
					      p.status);
			break;
		}
		if (c == CLI_OPERAND)
			n += (size_t)snprintf(r->codes + n, sizeof(r->codes) - n, "%s@%s", sep, p.arg);
		else if (c == 'v' || c == 'j')
			n += (size_t)snprintf(r->codes + n, sizeof(r->codes) - n, "%s%c", sep, c);
		else
			n += (size_t)snprintf(r->codes + n, sizeof(r->codes) - n, "%s%c=%s", sep, c,
					      p.arg);
	}
	fflush(NULL);
	release_fd(STDOUT_FILENO, out, "out", r->out, sizeof(r->out));
	release_fd(STDERR_FILENO, err, "err", r->err, sizeof(r->err));
}

TEST(cli_next_reads_options_and_operands_in_the_order_given)
{
	char *argv[] = { "test", "a",  "--format=chrome", "-o",	   "out", "--format", "folded",
			 "-oX",	 "-vk3", "--out=Y",	  "b",	   "--",  "-c",	      "--json",
			 NULL };
	struct parsed r;
	parse(argv, &r);
	CHECK_STR(r.codes, "@a f=chrome o=out f=folded o=X v k=3 o=Y @b @-c @--json");
	CHECK_STR(r.err, "");
	/* "-": an operand (standard input), in musl's getopt too; options go on after it */
	char *lone[] = { "test", "-", "--json", "-", "-v", NULL };
	parse(lone, &r);
	CHECK_STR(r.codes, "@- j @- v");
}

TEST(cli_next_names_the_option_that_lacks_a_value)
{
	static const struct {
		char *arg;
		const char *said;
	} cases[] = {
		{ "--format", "jitt test: --format needs a value\n" },
		{ "-o", "jitt test: -o needs a value\n" },
		{ "-vk", "jitt test: -k needs a value\n" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[] = { "test", "FILE", cases[i].arg, NULL };
		struct parsed r;
		char want[256];
		parse(argv, &r);
		snprintf(want, sizeof(want), "%susage: jitt test [opts] FILE\n", cases[i].said);
		CHECK(strcmp(r.codes, "@FILE exit 2") == 0 || strcmp(r.codes, "@FILE v exit 2") == 0);
		CHECK_STR(r.err, want);
		CHECK_STR(r.out, "");
	}
}

TEST(cli_next_names_an_unknown_option_and_a_value_where_none_is_taken)
{
	static const struct {
		char *arg;
		const char *said;
	} cases[] = {
		{ "--bogus", "jitt test: unknown option '--bogus'\n" },
		{ "--bogus=1", "jitt test: unknown option '--bogus'\n" },
		{ "-vx", "jitt test: unknown option '-x'\n" },
		{ "--json=1", "jitt test: --json takes no value\n" },
		{ "--help=1", "jitt test: --help takes no value\n" },
		/* what was typed reaches the terminal escaped */
		{ "--\033[2J", "jitt test: unknown option '--\\x1b[2J'\n" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[] = { "test", cases[i].arg, "FILE", NULL };
		struct parsed r;
		char want[256];
		parse(argv, &r);
		snprintf(want, sizeof(want), "%susage: jitt test [opts] FILE\n", cases[i].said);
		CHECK(strcmp(r.codes, "exit 2") == 0 || strcmp(r.codes, "v exit 2") == 0);
		CHECK_STR(r.err, want);
	}
}

TEST(cli_next_prints_the_help_on_stdout_with_status_0)
{
	for (int i = 0; i < 2; i++) {
		char *argv[] = { "test", "FILE", i ? "--help" : "-h", "--bogus", NULL };
		struct parsed r;
		parse(argv, &r);
		CHECK_STR(r.codes, "@FILE exit 0");
		CHECK_STR(r.out, "usage: jitt test [opts] FILE\n  the rest of the help\n");
		CHECK_STR(r.err, "");
	}
}

TEST(cli_parse_long_takes_digits_within_bounds_only)
{
	long v = -7;
	CHECK_EQ_INT(cli_parse_long("5", 1, 10, &v), 0);
	CHECK_EQ_INT(v, 5);
	CHECK_EQ_INT(cli_parse_long("10", 1, 10, &v), 0);
	static const char *const bad[] = { "",	 " 5", "+5", "-1", "5x", "0x5",
					   "11", "0",  "99999999999999999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (!CHECK(cli_parse_long(bad[i], 1, 10, &v) == -EINVAL))
			printf("    '%s' was taken\n", bad[i]);
	CHECK_EQ_INT(v, 10);
}

TEST(cli_analysis_error_has_one_wording_for_every_command)
{
	char text[512];
	fflush(NULL);
	int err = catch_fd(STDERR_FILENO, "err");
	CHECK_EQ_INT(cli_analysis_error("jitt summarize", "a.jtr", -EINVAL), 1);
	CHECK_EQ_INT(cli_analysis_error("jitt export", "a.jtr", -EINVAL), 1);
	CHECK_EQ_INT(cli_analysis_error("jitt decode", "b\033.jtr", -ENOMEM), 1);
	CHECK_EQ_INT(cli_analysis_error("jitt exclude", "c.jtr", -ENOENT), 1);
	fflush(NULL);
	release_fd(STDERR_FILENO, err, "err", text, sizeof(text));
	CHECK_STR(text, "jitt summarize: a.jtr: a thread's ring cannot be decoded\n"
			"jitt export: a.jtr: a thread's ring cannot be decoded\n"
			"jitt decode: b\\x1b.jtr: out of memory\n"
			"jitt exclude: c.jtr: No such file or directory\n");
}
