/* SPDX-License-Identifier: MIT */
/*
 * uploader/collector/collector.c - the reference collector: `collector serve` receives jitt
 * reports over HTTPS and stores each once; `collector stats` says what was received.
 * A host tool for OEMs and for jitt's own tests (docs/uploader.md, "The reference
 * collector"); it never runs on a device.
 */
#include "uploader/collector/coll_server.h"
#include "uploader/collector/coll_store.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
	fprintf(stderr,
		"usage: collector serve [--port N] [--port-file F] [--cert F --key F | --plain]\n"
		"                       [--db FILE] [--dump FILE] [--conn-file F]\n"
		"                       [--fail-first N] [--stall-first N] [--reset-first N]\n"
		"                       [--status-first N:CODE] [--slow-read]\n"
		"       collector stats [--db FILE] [--top N]\n");
	return 2;
}

/* A decimal integer in [lo, hi], all of s. */
static int number(const char *s, long lo, long hi, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

static int open_store(const char *db, struct coll_store **st)
{
	char msg[512];
	if (coll_store_open(db, st, msg, sizeof(msg))) {
		fprintf(stderr, "collector: %s\n", msg);
		return 1;
	}
	return 0;
}

static int cmd_serve(int argc, char **argv)
{
	struct coll_options o = { 0 };
	const char *db = "collector.db";
	struct coll_store *st;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int *n = NULL, lo = 0, hi = INT_MAX;
		if (!strcmp(a, "--plain")) {
			o.plain = true;
			continue;
		}
		if (!strcmp(a, "--slow-read")) {
			o.slow_read = true;
			continue;
		}
		if (!v)
			return usage();
		i++;
		if (!strcmp(a, "--port"))
			n = &o.port, hi = 65535;
		else if (!strcmp(a, "--fail-first"))
			n = &o.fail_first;
		else if (!strcmp(a, "--stall-first"))
			n = &o.stall_first;
		else if (!strcmp(a, "--reset-first"))
			n = &o.reset_first;
		else if (!strcmp(a, "--port-file"))
			o.port_file = v;
		else if (!strcmp(a, "--conn-file"))
			o.conn_file = v;
		else if (!strcmp(a, "--dump"))
			o.dump = v;
		else if (!strcmp(a, "--cert"))
			o.cert = v;
		else if (!strcmp(a, "--key"))
			o.key = v;
		else if (!strcmp(a, "--db"))
			db = v;
		else if (!strcmp(a, "--status-first")) {
			/* N:CODE, CODE a status a client must handle: 4xx or 5xx. */
			char first[16];
			const char *colon = strchr(v, ':');
			if (!colon || colon - v >= (long)sizeof(first))
				return usage();
			memcpy(first, v, (size_t)(colon - v));
			first[colon - v] = 0;
			if (number(first, 0, INT_MAX, &o.status_first) ||
			    number(colon + 1, 400, 599, &o.status_code))
				return usage();
		} else
			return usage();
		if (n && number(v, lo, hi, n))
			return usage();
	}
	if (!o.plain && (!o.cert || !o.key)) {
		fprintf(stderr, "collector: --cert and --key are needed (or --plain)\n");
		return usage();
	}
	if (open_store(db, &st))
		return 1;
	int rc = coll_serve(&o, st);
	if (rc == -EBUSY)
		return 0; /* threads still running hold the store: the exit closes it */
	coll_store_close(st);
	return rc ? 1 : 0;
}

static int cmd_stats(int argc, char **argv)
{
	const char *db = "collector.db";
	int top = 10;
	struct coll_store *st;
	for (int i = 2; i < argc; i += 2) {
		if (i + 1 >= argc)
			return usage();
		if (!strcmp(argv[i], "--db"))
			db = argv[i + 1];
		else if (!strcmp(argv[i], "--top")) {
			if (number(argv[i + 1], 0, 100000, &top))
				return usage();
		} else
			return usage();
	}
	if (open_store(db, &st))
		return 1;
	int rc = coll_store_stats(st, stdout, top);
	coll_store_close(st);
	if (rc) {
		fprintf(stderr, "collector: %s: could not read the reports (%s)\n", db, strerror(-rc));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "serve"))
		return cmd_serve(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "stats"))
		return cmd_stats(argc, argv);
	return usage();
}
