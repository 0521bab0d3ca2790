/* SPDX-License-Identifier: MIT */
/*
 * uploader/collector/coll_server.h - `collector serve`: HTTPS (TLS 1.2 on mbedtls, or plain
 * HTTP behind a TLS-terminating proxy) on 127.0.0.1, one thread per connection, so a
 * stalled client holds only its own thread and its own bounded buffers.
 */
#ifndef JITT_COLL_SERVER_H
#define JITT_COLL_SERVER_H

#include "uploader/collector/coll_store.h"

#include <stdbool.h>

struct coll_options {
	int port; /* 0: the kernel picks a free one (see port_file) */
	const char *port_file, *conn_file, *dump;
	const char *cert, *key;
	bool plain;
	/* Fault injection, by the arrival order of POST /v1/reports requests (1, 2, ...). */
	int fail_first, stall_first, reset_first, status_first, status_code;
	bool slow_read;
};

/*
 * Serve until SIGTERM or SIGINT. Returns 0 after a clean stop, or a negative errno when the
 * server could not start (a message was printed).
 */
int coll_serve(const struct coll_options *o, struct coll_store *st);

#endif
