/* SPDX-License-Identifier: MIT */
/*
 * uploader/collector/coll_store.h - where the reference collector keeps reports: one SQLite
 * file. Each report is stored once, under its idempotency key (UNIQUE), so a retried upload
 * is answered "already stored" and adds nothing. The file also keeps how many connections
 * were ever accepted. Calls are serialised by a mutex (one writer at a time in any case).
 */
#ifndef JITT_COLL_STORE_H
#define JITT_COLL_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct coll_store;

/* Open (creating the tables when missing). Returns 0 or a negative errno; msg says why. */
int coll_store_open(const char *path, struct coll_store **out, char *msg, size_t msgsize);
void coll_store_close(struct coll_store *st);

/*
 * Store a report under key. Returns 1 when stored now, 0 when that key was stored already
 * (nothing written), or a negative errno.
 */
int coll_store_put(struct coll_store *st, const char *key, const char *build_id,
		   const char *name, const char *body, size_t len);

/* One more accepted connection (the total over every run on this file). */
int coll_store_count_connection(struct coll_store *st);

/* `collector stats`: counts, per build-id, and the top functions by self time in the
 * anomaly window (summary.top_window) over every report. Returns 0 or a negative errno. */
int coll_store_stats(struct coll_store *st, FILE *out, int top);

#endif
