/* SPDX-License-Identifier: MIT */
/* What the libFuzzer targets share (tests/fuzz_common.h). */
#define _GNU_SOURCE /* fopencookie */
#include "tests/fuzz_common.h"
#include "ringbuf/crc32.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void fuzz_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
	abort();
}

int fuzz_trace_open(struct fuzz_trace *ft, const uint8_t *data, size_t size, bool crc_fix)
{
	char err[256];
	memset(ft, 0, sizeof(*ft));
	ft->buf = aligned_alloc(8, (size + 8) & ~(size_t)7);
	if (!ft->buf)
		return -EINVAL;
	memcpy(ft->buf, data, size);
	/* The footer is the CRC of every byte before it, then "JEND" (docs/trace-format.md). */
	if (crc_fix && size >= 104) {
		uint32_t crc = rb_crc32(0, ft->buf, size - 8);
		memcpy(ft->buf + size - 8, &crc, 4);
	}
	if (rb_trace_parse(ft->buf, size, &ft->t, err, sizeof(err)) != 0) {
		free(ft->buf);
		ft->buf = NULL;
		return -EINVAL;
	}
	if (agent_symbols_open(&ft->syms, &ft->t) != 0) {
		rb_trace_close(&ft->t);
		free(ft->buf);
		ft->buf = NULL;
		return -EINVAL;
	}
	for (uint32_t m = 0; m < ft->t.nmodules; m++)
		ft->syms.state[m] = -1; /* unusable: never opened */
	return 0;
}

void fuzz_trace_close(struct fuzz_trace *ft)
{
	if (!ft->buf)
		return;
	agent_symbols_close(&ft->syms);
	rb_trace_close(&ft->t);
	free(ft->buf);
	ft->buf = NULL;
}

static ssize_t sink_write(void *cookie, const char *buf, size_t n)
{
	struct fuzz_sink *s = cookie;
	size_t keep = n;
	if (keep > s->cap - s->len) {
		keep = s->cap - s->len;
		s->truncated = true;
	}
	memcpy(s->data + s->len, buf, keep);
	s->len += keep;
	s->data[s->len] = '\0';
	s->total += n;
	return (ssize_t)n;
}

FILE *fuzz_sink_open(struct fuzz_sink *s, size_t cap)
{
	memset(s, 0, sizeof(*s));
	s->data = malloc(cap + 1);
	if (!s->data)
		return NULL;
	s->data[0] = '\0';
	s->cap = cap;
	cookie_io_functions_t io = { .write = sink_write };
	FILE *f = fopencookie(s, "w", io);
	if (!f) {
		free(s->data);
		s->data = NULL;
	}
	return f;
}

void fuzz_sink_free(struct fuzz_sink *s)
{
	free(s->data);
	s->data = NULL;
}

bool fuzz_env(const char *name)
{
	const char *v = getenv(name);
	return v && *v && strcmp(v, "0") != 0;
}
