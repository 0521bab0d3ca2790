/* SPDX-License-Identifier: MIT */
/*
 * Where the `jitt` command finds the debug files of stripped modules (agent/analysis/
 * debugfile.h, docs/symbols.md): the local places always; a debuginfod server when the
 * user names one, by DEBUGINFOD_URLS (as elfutils' tools read it, so one setting serves
 * both) or else the settings file's debuginfod_urls. Only this command asks a server: it
 * runs as its user, for that user; jittd never sets a URL.
 */
#define _GNU_SOURCE /* secure_getenv */
#include "agent/cli/cli.h"
#include "agent/analysis/debugfile.h"
#include "agent/config.h"
#include "agent/escape.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct agent_config conf;

/* A failed fetch is told once, at the end, after what the command printed: the names it
 * could not give are shown by build-id and offset meanwhile. */
static void tell_fetch_error(void)
{
	const char *e = agent_debug_error();
	if (e[0]) {
		fputs("jitt: debuginfod: ", stderr);
		agent_escape_fput(stderr, e);
		fputc('\n', stderr);
	}
}

void cli_symbols_setup(void)
{
	char err[256], cache[PATH_MAX] = "";
	agent_config_defaults(&conf);
	int e = agent_config_load(&conf, NULL, err, sizeof(err));
	if (e && e != -ENOENT) {
		/* Not fatal: only the servers it may name are lost. */
		fputs("jitt: settings not read (debuginfod_urls unused): ", stderr);
		agent_escape_fput(stderr, err);
		fputc('\n', stderr);
		agent_config_defaults(&conf);
	}
	const char *urls = secure_getenv("DEBUGINFOD_URLS");
	if (!urls)
		urls = conf.debuginfod_urls;
	const char *xdg = secure_getenv("XDG_CACHE_HOME"), *home = secure_getenv("HOME");
	if (conf.debuginfod_cache[0])
		snprintf(cache, sizeof(cache), "%s", conf.debuginfod_cache);
	else if (xdg && xdg[0] == '/')
		snprintf(cache, sizeof(cache), "%s/jitt/debuginfod", xdg);
	else if (home && home[0] == '/')
		snprintf(cache, sizeof(cache), "%s/.cache/jitt/debuginfod", home);
	/* DEBUGINFOD_TIMEOUT: seconds, as elfutils reads it; each wait, not the whole fetch. */
	const char *t = secure_getenv("DEBUGINFOD_TIMEOUT");
	char *end;
	long secs = t ? strtol(t, &end, 10) : 0;
	struct agent_debug_settings s = {
		.urls = urls,
		.cache = cache,
		.timeout_ms = t && *t && !*end && secs > 0 && secs <= 3600 ? (int)secs * 1000 : 0,
	};
	if (agent_debug_set(&s) != 0)
		fputs("jitt: DEBUGINFOD_URLS or the cache folder is too long: no server asked\n",
		      stderr);
	else if (urls[0])
		atexit(tell_fetch_error);
}
