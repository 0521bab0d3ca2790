/* SPDX-License-Identifier: MIT */
/*
 * `jitt report [--key UUID] [--id HEX] FILE.json`: the exact bytes jittd would send for a
 * summary (docs/report-format.md), built by uploader/report.c with this build's allow-lists,
 * so that a privacy reviewer reads what leaves the device and nothing else. Only the
 * idempotency key and the pseudonym differ on the wire: an upload carries a random key and
 * the install's pseudonym for the app (AppInsight section 6), which this command does not
 * know, so it writes fixed stand-ins unless given them.
 */
#include "agent/cli/cli.h"
#include "agent/escape.h"
#include "hal/fs.h"
#include "uploader/report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The allow-lists, read here once (Kconfig; the private defaults without the uploader). */
#ifdef CONFIG_UPLOADER
#define REPORT_THREAD_NAMES CONFIG_UPLOADER_THREAD_NAMES
#define REPORT_REASONS	    CONFIG_UPLOADER_REASONS
#define REPORT_ROTATION_DAYS CONFIG_UPLOADER_ROTATION_DAYS
#else
#define REPORT_THREAD_NAMES "main ui render"
#define REPORT_REASONS	    "hang jank slow-frame slow-start"
#define REPORT_ROTATION_DAYS 30
#endif

#define NIL_KEY "00000000-0000-4000-8000-000000000000"
#define NIL_ID	"0000000000000000000000000000000000000000000000000000000000000000"
/* A summary is at most 4 KiB; a file much bigger is not one. */
#define SUMMARY_FILE_MAX (64 * 1024)

#define SYNOPSIS "usage: jitt report [--key UUID] [--id HEX] FILE.json\n"

static const char details[] =
	"  FILE.json   a summary (jitt summarize --json, schema jitt.summary version 2 or 3)\n"
	"  --key UUID  the idempotency key to write (default: a fixed stand-in)\n"
	"  --id HEX    the pseudonym to write, 64 lowercase hex (default: all zeros)\n"
	"prints the exact bytes an upload of this summary sends (docs/report-format.md)\n"
	"exit status: 0 done, 1 the file could not be read or is not a summary, 2 bad arguments\n";

/* The file into a malloc'd buffer: a regular file only (hal_open_file: no FIFO or device
 * to block on), at most SUMMARY_FILE_MAX bytes. 0 or -errno (-EFBIG: too big). */
static int read_summary(const char *path, char **buf, size_t *len)
{
	struct stat st;
	int fd = hal_open_file(AT_FDCWD, path, true, &st);
	if (fd < 0)
		return fd;
	*buf = NULL;
	*len = 0;
	if (st.st_size > SUMMARY_FILE_MAX) {
		close(fd);
		return -EFBIG;
	}
	char *b = malloc(SUMMARY_FILE_MAX + 1);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, b + n, SUMMARY_FILE_MAX + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;
			free(b);
			close(fd);
			return e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > SUMMARY_FILE_MAX) { /* grew while read */
			free(b);
			close(fd);
			return -EFBIG;
		}
	}
	close(fd);
	*buf = b;
	*len = n;
	return 0;
}

static void help(FILE *out)
{
	fputs(details, out);
}

static const struct option longopts[] = {
	{ "key", required_argument, NULL, 'k' },
	{ "id", required_argument, NULL, 'i' },
	CLI_HELP_OPTION,
	{ NULL, 0, NULL, 0 },
};
static const struct cli_command command = { "jitt report", SYNOPSIS, help, "", longopts };

int cmd_report(int argc, char **argv)
{
	const char *key = NULL, *id = NULL, *file = NULL;
	struct cli_args a;
	cli_args_init(&a, &command, argc, argv);
	for (int c; (c = cli_next(&a)) != CLI_END;) {
		switch (c) {
		case CLI_EXIT:
			return a.status;
		case 'k':
			key = a.arg;
			break;
		case 'i':
			id = a.arg;
			break;
		case CLI_OPERAND:
			if (file)
				return cli_usage_error(&a, "one summary at a time; also given",
						       a.arg);
			file = a.arg;
			break;
		}
	}
	if (!file)
		return cli_usage_error(&a, "no summary given", NULL);
	char shown[512], why[512];
	agent_escape(shown, sizeof(shown), file);
	char *text;
	size_t len;
	int e = read_summary(file, &text, &len);
	if (e) {
		fprintf(stderr, "jitt report: %s: %s\n", shown,
			e == -EFBIG ? "larger than a summary can be (64 KiB)" : strerror(-e));
		return 1;
	}
	int64_t now = (int64_t)time(NULL);
	struct up_report_params p = {
		.key = key ? key : NIL_KEY,
		.id = id ? id : NIL_ID,
		.period = now / ((int64_t)REPORT_ROTATION_DAYS * 86400),
		.unix_s = now,
		.thread_names = REPORT_THREAD_NAMES,
		.reasons = REPORT_REASONS,
	};
	char out[UP_REPORT_MAX], err[256] = "";
	size_t outlen;
	e = up_report_build(text, len, &p, out, sizeof(out), &outlen, err, sizeof(err));
	free(text);
	if (e) {
		fprintf(stderr, "jitt report: %s: %s\n", shown,
			agent_escape(why, sizeof(why), e == -EINVAL ? err : strerror(-e)));
		return e == -EINVAL && (key || id) && strstr(err, "UUID") ? 2 : 1;
	}
	if (!key || !id)
		fprintf(stderr, "jitt report: a real upload carries a random idempotency key "
				"(\"key\") and this install's pseudonym for the app (\"id\") instead of "
				"the stand-ins below; every other byte is the same\n");
	fwrite(out, 1, outlen, stdout);
	return ferror(stdout) || fflush(stdout) ? 1 : 0;
}
