/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the control sockets' request parser and server (agent/ctl.h): the
 * bytes anyone may send to jittd's socket or a traced app's (mode 0666).
 *
 * Each input is first given to agent_ctl_parse_request() whole, with a command buffer of
 * every size from tiny to enough (allocated to the byte, so that the sanitizer sees any
 * write past it), and prefix by prefix: once a prefix is decided (a line, too long, or
 * refused), every longer one must be decided the same way. Then it is sent to a real
 * server (agent_ctl_server_step over a unix socket) in chunks whose sizes come from the
 * input's hash, stepping the server after each: the reply must be exactly one well-formed
 * line ("ok" and the handler's text, or "error ENAME: ...", with no control byte but the
 * newlines) followed by a clean end, "ok" exactly when the parser accepted the request, and
 * the server must be left with no client. Built with
 *   clang -fsanitize=fuzzer,address,undefined (the fuzz targets of the Makefile).
 */
#define _GNU_SOURCE
#include "agent/ctl.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int handler(void *ctx, const struct agent_ctl_peer *peer, const char *cmd, const char *arg,
		   char *reply, size_t size)
{
	(void)ctx;
	(void)peer;
	if (!strcmp(cmd, "fail")) {
		snprintf(reply, size, "refused '%s'", arg);
		return -EPERM;
	}
	snprintf(reply, size, "[%s] [%s]", cmd, arg);
	return 0;
}

static struct agent_ctl_server srv;
static struct sockaddr_un addr;
static char dir[] = "/tmp/fuzz-ctl-XXXXXX";

static void cleanup(void)
{
	unlink(addr.sun_path);
	rmdir(dir);
}

static void setup(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	if (!mkdtemp(dir))
		abort();
	atexit(cleanup);
	addr.sun_family = AF_UNIX;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/s.sock", dir);
	int l = agent_ctl_listen(addr.sun_path);
	if (l < 0)
		abort();
	agent_ctl_server_init(&srv, l, handler, NULL);
	srv.deadline_ms = 60000; /* sanitizers are slow; deadlines are not what is fuzzed */
}

/* One step of the server, waiting up to wait_ms for something to do. */
static void step(int wait_ms)
{
	struct pollfd p[AGENT_CTL_POLLFDS];
	int n = agent_ctl_server_pollfds(&srv, p, AGENT_CTL_POLLFDS);
	poll(p, (nfds_t)n, wait_ms);
	if (agent_ctl_server_step(&srv, p, n, agent_ctl_now_ms()) < 0)
		abort();
}

static int is_control(unsigned char ch)
{
	return ch < 0x20 || ch == 0x7f;
}

static void check_parse(const char *buf, size_t len)
{
	char full[AGENT_CTL_LINE + 1];
	const char *arg = NULL;
	int whole = agent_ctl_parse_request(buf, len, full, sizeof(full), &arg);
	if (whole != 0 && whole != -EAGAIN && whole != -EMSGSIZE && whole != -EINVAL)
		abort();
	if (whole == 0) {
		size_t cn = strlen(full), an = strlen(arg);
		if (!cn || arg < full || arg > full + cn + 1 || cn + an + 1 > AGENT_CTL_LINE)
			abort();
		for (size_t i = 0; i < cn; i++)
			if (is_control((unsigned char)full[i]) || full[i] == ' ')
				abort();
		for (size_t i = 0; i < an; i++)
			if (is_control((unsigned char)arg[i]))
				abort();
		if (!memchr(buf, '\n', len < AGENT_CTL_LINE ? len : AGENT_CTL_LINE))
			abort();
	}
	/* Every command buffer size: a copy never runs past it. */
	for (size_t size = 0; size <= AGENT_CTL_LINE + 1; size += size < 8 ? 1 : 37) {
		char *cmd = malloc(size ? size : 1);
		const char *a = NULL;
		int e = agent_ctl_parse_request(buf, len, cmd, size, &a);
		if (e != whole && !(whole == 0 && e == -ENOBUFS))
			abort();
		if (e == 0 && (strcmp(cmd, full) || strcmp(a, arg)))
			abort();
		free(cmd);
	}
	/* Prefixes: once decided, decided for good. */
	int decided = -EAGAIN;
	size_t at = 0;
	for (size_t k = 0; k <= len && k <= AGENT_CTL_LINE + 1; k++) {
		char cmd[AGENT_CTL_LINE + 1];
		const char *a;
		int e = agent_ctl_parse_request(buf, k, cmd, sizeof(cmd), &a);
		if (decided != -EAGAIN && e != decided)
			abort();
		if (decided == -EAGAIN && e != -EAGAIN) {
			decided = e;
			at = k;
		}
	}
	if (decided != -EAGAIN && decided != whole)
		abort();
	(void)at;
}

/* What the server should say to a client that sends buf and then closes its side. */
static int expect_ok(const char *buf, size_t len)
{
	char cmd[AGENT_CTL_LINE + 1], tmp[AGENT_CTL_LINE + 1];
	const char *arg;
	int e = agent_ctl_parse_request(buf, len, cmd, sizeof(cmd), &arg);
	if (e == -EAGAIN && len > 0 && len < AGENT_CTL_LINE) {
		memcpy(tmp, buf, len);
		tmp[len] = '\n';
		e = agent_ctl_parse_request(tmp, len + 1, cmd, sizeof(cmd), &arg);
	}
	return e == 0 && strcmp(cmd, "fail") != 0;
}

static void check_server(const uint8_t *data, size_t size)
{
	setup();
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0)
		abort();
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 16777619u;
	char reply[AGENT_CTL_REPLY + 128];
	size_t got = 0, sent = 0;
	int eof = 0;
	/* Sent in chunks, the server stepped between them; what it answers early is read as
	 * it comes (it may answer, and stop reading, before all is sent). */
	while (sent < size) {
		h = h * 1103515245u + 12345u;
		size_t chunk = 1 + (h >> 16) % 64;
		if (chunk > size - sent)
			chunk = size - sent;
		ssize_t n = send(fd, data + sent, chunk, MSG_NOSIGNAL);
		if (n <= 0)
			break; /* the server is done with us and gone (EPIPE), or full (EAGAIN) */
		sent += (size_t)n;
		step(0);
	}
	shutdown(fd, SHUT_WR);
	for (int i = 0; i < 2000 && !eof; i++) {
		step(1);
		ssize_t r;
		while ((r = recv(fd, reply + got, sizeof(reply) - 1 - got, 0)) > 0)
			got += (size_t)r;
		if (r == 0)
			eof = 1;
		else if (errno != EAGAIN)
			abort(); /* a reset: the server closed over unread bytes */
	}
	if (!eof)
		abort(); /* the server never finished with us */
	close(fd);
	for (int i = 0; i < 2000 && agent_ctl_server_deadline(&srv) != INT64_MAX; i++)
		step(1);
	if (agent_ctl_server_deadline(&srv) != INT64_MAX)
		abort(); /* a client left in the table */
	reply[got] = 0;

	if (size == 0 || (got == 0 && sent < size)) {
		if (got)
			abort();
		return;
	}
	/* One reply: "ok\n" and lines, or one "error ENAME: what\n"; nothing raw. */
	for (size_t i = 0; i < got; i++)
		if (reply[i] != '\n' && is_control((unsigned char)reply[i]))
			abort();
	if (!strncmp(reply, "ok\n", 3)) {
		if (!expect_ok((const char *)data, sent))
			abort();
	} else if (!strncmp(reply, "error E", 7)) {
		if (expect_ok((const char *)data, sent) || strchr(reply, '\n') != reply + got - 1)
			abort();
	} else {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_parse((const char *)data, size);
	check_server(data, size);
	return 0;
}
