/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/debuginfod.h - a debuginfod client of our own: GET /buildid/HEX/debuginfo
 * from each server of a list in turn, over plain HTTP/1.1, into a cache folder.
 *
 * Why not Debian's libdebuginfod or its debuginfod-find: jitt is a static musl program
 * (the library is a glibc shared object with libcurl behind it), and a phone has neither;
 * running a program found on PATH would also be one more thing a user's environment could
 * swap. What we need is one GET, and uploader/http.c already reads HTTP/1.1 answers as
 * hostile input (caps, strict framing); this file adds the socket and the cache.
 *
 * Only http:// URLs: the `jitt` command carries no TLS (mbedtls is jittd's), and a debug
 * file is checked by its build-id and CRC before it is used, whoever served it. An https://
 * server is skipped with an error naming it (docs/symbols.md).
 *
 * A server's answer is hostile input: a body over AGENT_DEBUGINFOD_MAX_BYTES, anything
 * uploader/http.c cannot read exactly, a wait longer than the timeout or a whole fetch
 * longer than AGENT_DEBUGINFOD_ROUNDS timeouts are errors, and nothing is kept. The file is
 * written to a temporary name in the cache, checked by the caller's check (its build-id)
 * and only then committed (fsync, rename): the cache never holds a partial or a foreign
 * file under a build-id's name.
 */
#ifndef JITT_AGENT_DEBUGINFOD_H
#define JITT_AGENT_DEBUGINFOD_H

#include <stddef.h>
#include <stdint.h>

/* A debug file of 1 GiB is far past any a phone's libraries have (Chromium's is ~700 MB
 * on a desktop); a server claiming more is refused, not believed. */
#define AGENT_DEBUGINFOD_MAX_BYTES (1ull << 30)
/* Each wait (connect, every read) times out after timeout_ms; the whole fetch of one file
 * after this many of them, so a server trickling a byte at a time cannot hold us for
 * hours. */
#define AGENT_DEBUGINFOD_ROUNDS 30
#define AGENT_DEBUGINFOD_TIMEOUT_MS 10000

struct agent_debuginfod {
	const char *urls;  /* servers, separated by spaces: http://host[:port][/prefix] */
	const char *cache; /* the folder fetched files are kept in (made, 0700, if missing) */
	int timeout_ms;	   /* <= 0: AGENT_DEBUGINFOD_TIMEOUT_MS */
	/* Asked about the fetched file (fd open for reading, size bytes) before it is kept:
	 * nonzero refuses it (and is returned). */
	int (*check)(int fd, uint64_t size, void *arg);
	void *arg;
};

/* The cache's file for a build-id (hex): "<cache>/<hex>.debug". 0 or -ENAMETOOLONG. */
int agent_debuginfod_cache_path(const char *cache, const char *hex, char *buf, size_t size);

/*
 * Fetch the debug file of build-id hex (lowercase hex, 2 to 64 digits) from the first server
 * that has it, check it, and keep it at agent_debuginfod_cache_path. 0 when kept; -ENOENT
 * when every server answered 404; -EINVAL for a bad URL list or id; else the last server's
 * error (-ETIMEDOUT, -ECONNREFUSED, -EBADMSG for an answer that is not HTTP as we read it,
 * -EFBIG, the check's). err says which server answered what (for the command to print).
 */
int agent_debuginfod_fetch(const struct agent_debuginfod *d, const char *hex, char *err,
			   size_t errsize);

/* One URL of the list: "http://host[:port][/prefix]" into its parts (prefix without a
 * trailing '/'). 0, -EPROTONOSUPPORT (https:// or another scheme) or -EINVAL. */
struct agent_http_url {
	char host[256];
	char port[8];
	char prefix[256];
};
int agent_debuginfod_url(const char *url, size_t len, struct agent_http_url *u);

#endif
