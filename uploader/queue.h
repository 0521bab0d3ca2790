/* SPDX-License-Identifier: MIT */
/*
 * uploader/queue.h - the reports waiting to be sent, one file each in the uploads folder,
 * holding the exact bytes that will go on the wire. What the upload policy needs about a
 * report is in its name, so a pass lists the folder and reads only the report it sends:
 *
 *   r-<queued unix s>-<severity us>-<idempotency key>-<attempts>.json
 *
 * A retry renames the file with one attempt more (atomic: the count survives a crash, so
 * a report that keeps failing is dropped after its last attempt even across restarts).
 */
#ifndef JITT_UPLOADER_QUEUE_H
#define JITT_UPLOADER_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#define UP_QUEUE_MAX 64 /* reports listed; the policy keeps far fewer (the budget) */

struct up_queued {
	char name[96];
	int64_t queued_s;    /* when it was queued (unix seconds) */
	uint64_t severity_us; /* the slow frame's (or window's) length */
	char key[37];	     /* the idempotency key */
	unsigned attempts;   /* made so far */
};

/* Parse a queue file's name. 0 or -EINVAL (not one of ours). */
int up_queue_parse_name(const char *name, struct up_queued *q);

/* The reports in dirfd, oldest first (then by name), at most max. 0 or -errno. */
int up_queue_list(int dirfd, struct up_queued *out, size_t max, size_t *n);
/* Queue report[0..len). 0 or -errno (-ENOSPC: the disk is full; nothing half-written). */
int up_queue_add(int dirfd, const char *key, int64_t queued_s, uint64_t severity_us,
		 const void *report, size_t len, struct up_queued *q);
/* The report's bytes (at most size). 0, -EINVAL (not a regular file of ours, or bigger than
 * size), or -errno. */
int up_queue_read(int dirfd, const struct up_queued *q, char *buf, size_t size, size_t *len);
/* One attempt more: renamed, *q updated. 0 or -errno. */
int up_queue_count_attempt(int dirfd, struct up_queued *q);
/* Done with (sent, or dropped). 0 or -errno (a missing file is 0). */
int up_queue_remove(int dirfd, const struct up_queued *q);
/* Every report and temporary in the folder (a revoke). Returns how many were removed. */
int up_queue_clear(int dirfd);

#endif
