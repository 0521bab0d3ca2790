/* SPDX-License-Identifier: MIT */
/*
 * uploader/collector/coll_validate.h - is a request body a `jitt.report` (docs/report-format.md)?
 *
 * The envelope is checked strictly (every member present, no other, each of its exact form),
 * since it is what the collector files a report under; inside the summary only what the
 * collector itself reads (functions, modules, the indices top_window and top_trace use, and
 * in version 2 the preempted time of their entries and the window's scheduling source) is
 * checked, as later summary versions may add members a reader must ignore.
 */
#ifndef JITT_COLL_VALIDATE_H
#define JITT_COLL_VALIDATE_H

#include <stddef.h>

#define COLL_BUILD_ID_MAX 128 /* hex digits: a SHA-1 build-id is 40, SHA-256 64 */
#define COLL_NAME_MAX 255

struct coll_report {
	char key[37];	/* the UUID, as sent */
	int version;	/* the report's: 1, or 2 with the scheduling figures */
	char build_id[COLL_BUILD_ID_MAX + 1];
	char name[COLL_NAME_MAX + 1];
};

/*
 * Validate body[0..len). Returns 0 and fills out, or -EINVAL with a one-line reason in why
 * (-ENOMEM when the parser ran out of memory).
 */
int coll_validate(const char *body, size_t len, struct coll_report *out, char *why,
		  size_t whysize);

#endif
