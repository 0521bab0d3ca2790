/* SPDX-License-Identifier: MIT */
/*
 * up-post: one upload through the uploader's transport, by hand and in tests/tls-check.sh.
 *
 *   up-post URL CA_FILE FILE [--pin HEX64] [--key UUID] [--timeout MS] [--abort-after MS]
 *
 * --abort-after: keep_going() says stop that long after the start (the consent-revoked
 * path), and the time from then to the return is printed to stderr.
 * Prints "status N retry-after S reusable 0|1" and exits 0 when the server answered (any
 * status); otherwise prints "error: -ERRNO NAME: what happened" and exits 1 (2: usage).
 * Also "up-post --uuid" prints a fresh UUID (random.c, by hand).
 */
#include "uploader/random.h"
#include "uploader/transport.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long long abort_at_ms; /* 0: never */

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool keep_going(void *arg)
{
	(void)arg;
	return !abort_at_ms || now_ms() < abort_at_ms;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: up-post URL CA_FILE FILE [--pin HEX64] [--key UUID] "
		"[--timeout MS]\n               [--abort-after MS]\n       up-post --uuid\n");
	return 2;
}

static int hex_pin(const char *s, unsigned char out[32])
{
	if (strlen(s) != 64)
		return -1;
	for (int i = 0; i < 32; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (unsigned char)v;
	}
	return 0;
}

static const char *errno_name(int e)
{
	switch (e) {
	case ETIMEDOUT:
		return "ETIMEDOUT";
	case ECANCELED:
		return "ECANCELED";
	case EACCES:
		return "EACCES";
	case EPROTO:
		return "EPROTO";
	case EBADMSG:
		return "EBADMSG";
	case ECONNREFUSED:
		return "ECONNREFUSED";
	case ECONNRESET:
		return "ECONNRESET";
	case EINVAL:
		return "EINVAL";
	case ENOMEM:
		return "ENOMEM";
	default:
		return "E?";
	}
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--uuid") == 0) {
		char id[37];
		if (up_uuid4(id))
			return 1;
		puts(id);
		return 0;
	}
	if (argc < 4)
		return usage();
	unsigned char pin[32];
	bool has_pin = false;
	const char *key = NULL;
	int timeout_ms = 10000;
	for (int i = 4; i < argc; i++) {
		if (strcmp(argv[i], "--pin") == 0 && i + 1 < argc) {
			if (hex_pin(argv[++i], pin))
				return usage();
			has_pin = true;
		} else if (strcmp(argv[i], "--key") == 0 && i + 1 < argc) {
			key = argv[++i];
		} else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
			timeout_ms = atoi(argv[++i]);
		} else if (strcmp(argv[i], "--abort-after") == 0 && i + 1 < argc) {
			abort_at_ms = now_ms() + atoi(argv[++i]);
		} else {
			return usage();
		}
	}

	struct up_url u;
	if (up_url_parse(argv[1], &u)) {
		fprintf(stderr, "up-post: not an https://host[:port]/path URL: %s\n", argv[1]);
		return 2;
	}
	FILE *f = fopen(argv[3], "rb");
	if (!f) {
		perror(argv[3]);
		return 1;
	}
	static char body[1 << 20];
	size_t len = fread(body, 1, sizeof(body), f);
	fclose(f);

	char id[37];
	if (!key) {
		if (up_uuid4(id)) {
			fprintf(stderr, "up-post: no random source\n");
			return 1;
		}
		key = id;
	}
	struct up_tls_settings s = {
		.ca_file = argv[2],
		.pin = has_pin ? pin : NULL,
		.timeout_ms = timeout_ms,
		.keep_going = keep_going,
	};
	char err[512];
	struct up_conn *c;
	int ret = up_conn_open(&c, &u, &s, err, sizeof(err));
	struct up_http_result res;
	if (ret == 0) {
		ret = up_conn_post(c, &u, key, body, len, &res, err, sizeof(err));
		up_conn_close(c);
	}
	if (ret == -ECANCELED && abort_at_ms)
		fprintf(stderr, "up-post: stopped %lld ms after the abort\n",
			now_ms() - abort_at_ms);
	if (ret) {
		printf("error: %d %s: %s\n", ret, errno_name(-ret), err);
		return 1;
	}
	printf("status %d retry-after %ld reusable %d\n", res.status, res.retry_after_s,
	       res.reusable);
	return 0;
}
