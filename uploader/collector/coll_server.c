/* SPDX-License-Identifier: MIT */
/*
 * uploader/collector/coll_server.c - the accept loop, connections, TLS, the request cycle
 * and the fault injection the uploader's tests ask for.
 */
#define _GNU_SOURCE
#include "uploader/collector/coll_server.h"

#include "uploader/collector/coll_http.h"
#include "uploader/collector/coll_validate.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 128		 /* beyond: accepted, counted, closed at once */
#define IDLE_MS 30000		 /* between requests, and inside one */
#define HANDSHAKE_MS 10000	 /* per read during the TLS handshake */
#define SLICE_MS 200		 /* how often a waiting connection looks at the stop flag */
#define DRAIN_MAX (1024 * 1024) /* what a closing connection reads and drops, at most */
#define SLOW_BYTES 16		 /* --slow-read: bytes per read */
#define SLOW_NS 1000000		 /* --slow-read: pause between reads */

static const struct coll_options *opt;
static struct coll_store *store;
static atomic_int stopping;
static atomic_ullong connections, requests;
static int dump_fd = -1;
static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t active_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t active_gone = PTHREAD_COND_INITIALIZER;
static int active;

static mbedtls_ssl_config tls_conf;
static mbedtls_x509_crt tls_crt;
static mbedtls_pk_context tls_key;
static mbedtls_entropy_context entropy;
static mbedtls_ctr_drbg_context drbg;

/* TLS 1.2 only, ECDHE key exchange and AEAD ciphers only (forward secrecy, no CBC). */
static const int suites[] = {
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	MBEDTLS_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	0,
};

struct conn {
	int fd;
	bool tls, reset;
	int timeout_ms; /* for the next read; -1: until the peer goes or we stop */
	unsigned long long id;
	mbedtls_ssl_context ssl;
	size_t have;		    /* bytes in head */
	char head[COLL_HEAD_MAX];   /* the request head, and what followed it */
	char body[COLL_BODY_MAX];
};

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stopping, 1);
}

/* Write data to path atomically (a temporary name, then rename), so a test polling for
 * the file never reads half of it. */
static int write_file_atomic(const char *path, const char *data)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	FILE *f = fopen(tmp, "w");
	if (!f)
		return -errno;
	int ok = fputs(data, f) >= 0;
	ok = (fflush(f) == 0) & ok;
	ok = (fsync(fileno(f)) == 0) & ok;
	ok = (fclose(f) == 0) & ok;
	if (!ok || rename(tmp, path) != 0) {
		int e = errno ? errno : EIO;
		unlink(tmp);
		return -e;
	}
	return 0;
}

/* Replace what a terminal could take as a control sequence: log lines carry text that
 * came from the network. */
static void clean(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			*s = '?';
}

/* ---- raw socket I/O, shared by plain HTTP and mbedtls' BIO callbacks ---- */

/* Wait until fd is readable: 1, 0 on timeout, -1 when stopping or on error. */
static int wait_readable(struct conn *c)
{
	int left = c->timeout_ms;
	for (;;) {
		if (atomic_load(&stopping))
			return -1;
		int slice = left < 0 || left > SLICE_MS ? SLICE_MS : left;
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		int n = poll(&p, 1, slice);
		if (n > 0)
			return 1;
		if (n < 0 && errno != EINTR)
			return -1;
		if (left >= 0 && (left -= slice) <= 0)
			return 0;
	}
}

/* >0 bytes, 0 at EOF, -1 on error, timeout or stop. */
static int raw_recv(struct conn *c, unsigned char *buf, size_t len)
{
	if (opt->slow_read) {
		/* Read a few bytes at a time, pausing: the client's writes then block on a
		 * full window, as they would behind a slow link. */
		struct timespec ts = { 0, SLOW_NS };
		nanosleep(&ts, NULL);
		if (len > SLOW_BYTES)
			len = SLOW_BYTES;
	}
	for (;;) {
		int w = wait_readable(c);
		if (w <= 0)
			return -1;
		ssize_t n = recv(c->fd, buf, len, 0);
		if (n >= 0)
			return (int)n;
		if (errno != EINTR && errno != EAGAIN)
			return -1;
	}
}

static int raw_send(struct conn *c, const unsigned char *buf, size_t len)
{
	for (;;) {
		ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);
		if (n >= 0)
			return (int)n;
		if (errno != EINTR)
			return -1;
	}
}

static int bio_recv(void *ctx, unsigned char *buf, size_t len)
{
	int n = raw_recv(ctx, buf, len);
	return n < 0 ? MBEDTLS_ERR_NET_RECV_FAILED : n;
}

static int bio_send(void *ctx, const unsigned char *buf, size_t len)
{
	int n = raw_send(ctx, buf, len);
	return n < 0 ? MBEDTLS_ERR_NET_SEND_FAILED : n;
}

/* ---- the connection's byte stream: decrypted when TLS ---- */

/* >0 bytes, 0 at EOF (or close_notify), -1 on error, timeout or stop. Every byte read is
 * appended to the dump file, so a test can look for identifiers in all that arrived. */
static int conn_read(struct conn *c, char *buf, size_t len)
{
	int n;
	if (!c->tls) {
		n = raw_recv(c, (unsigned char *)buf, len);
	} else {
		do
			n = mbedtls_ssl_read(&c->ssl, (unsigned char *)buf, len);
		while (n == MBEDTLS_ERR_SSL_WANT_READ || n == MBEDTLS_ERR_SSL_WANT_WRITE);
		if (n == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY)
			n = 0;
		else if (n < 0)
			n = -1;
	}
	if (n > 0 && dump_fd >= 0) {
		pthread_mutex_lock(&dump_lock);
		for (ssize_t off = 0, w; off < n; off += w)
			if ((w = write(dump_fd, buf + off, (size_t)(n - off))) <= 0)
				break;
		pthread_mutex_unlock(&dump_lock);
	}
	return n;
}

static int conn_write(struct conn *c, const char *buf, size_t len)
{
	while (len) {
		int n = c->tls ? mbedtls_ssl_write(&c->ssl, (const unsigned char *)buf, len)
			       : raw_send(c, (const unsigned char *)buf, len);
		if (n == MBEDTLS_ERR_SSL_WANT_READ || n == MBEDTLS_ERR_SSL_WANT_WRITE)
			continue;
		if (n <= 0)
			return -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---- answers ---- */

/* Append s to out as JSON string content (quotes not included). */
static void json_escape(char *out, size_t size, const char *s)
{
	size_t o = strlen(out);
	for (; *s && o + 7 < size; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			o += (size_t)snprintf(out + o, size - o, "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)
			o += (size_t)snprintf(out + o, size - o, "\\u%04x", ch);
		else
			out[o++] = (char)ch;
	}
	out[o] = 0;
}

/*
 * Answer status with a small JSON receipt, and log one line: the demo's "receipt". key may
 * be NULL; why is the reason of a refusal. extra: more header lines, each ending in CRLF.
 */
static int answer(struct conn *c, int status, const char *key, const char *why,
		  const char *extra, bool close)
{
	char body[512] = "", head[512], line[512];
	if (status == 200 || status == 201) {
		snprintf(body, sizeof(body), "{\"stored\":true,%s\"key\":\"%s\"}\n",
			 status == 200 ? "\"duplicate\":true," : "", key);
	} else {
		strcpy(body, "{\"stored\":false,\"error\":\"");
		json_escape(body, sizeof(body) - 4, why ? why : coll_http_reason(status));
		strcat(body, "\"}\n");
	}
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
			 "Content-Length: %zu\r\n%s%s\r\n",
			 status, coll_http_reason(status), strlen(body), extra ? extra : "",
			 close ? "Connection: close\r\n" : "");
	snprintf(line, sizeof(line), "collector: conn %llu: %d %s%s%s", c->id, status,
		 coll_http_reason(status), key ? " key=" : "", key ? key : "");
	if (why) {
		size_t l = strlen(line);
		snprintf(line + l, sizeof(line) - l, ": %s", why);
	}
	clean(line);
	fprintf(stderr, "%s\n", line);
	if (n < 0 || (size_t)n >= sizeof(head) || conn_write(c, head, (size_t)n) ||
	    conn_write(c, body, strlen(body)))
		return -EIO;
	return 0;
}

/* ---- one request, then the next on the same connection ---- */

/* Read the request head into c->head; its length, 0 at a quiet end, or -status when it is
 * bad (why says how). */
static int read_head(struct conn *c, char *why, size_t whysize)
{
	size_t end;
	while (!(end = coll_http_head_end(c->head, c->have))) {
		int st = coll_http_check_line(c->head, c->have, why, whysize);
		if (st)
			return -st;
		if (c->have == sizeof(c->head)) {
			snprintf(why, whysize, "request head over 8 KiB");
			return -431;
		}
		int n = conn_read(c, c->head + c->have, sizeof(c->head) - c->have);
		if (n <= 0)
			return 0;
		c->have += (size_t)n;
		c->timeout_ms = IDLE_MS;
	}
	return (int)end;
}

/* Serve one request. Returns true when the connection goes on to the next one. */
static bool serve_one(struct conn *c)
{
	struct coll_request req;
	struct coll_report rep;
	char why[256];
	int st;

	c->timeout_ms = IDLE_MS;
	int end = read_head(c, why, sizeof(why));
	if (end == 0)
		return false;
	if (end < 0) {
		answer(c, -end, NULL, why, NULL, true);
		return false;
	}
	if ((st = coll_http_parse(c->head, (size_t)end, &req, why, sizeof(why)))) {
		answer(c, st, NULL, why, NULL, true);
		return false;
	}
	/* Routing. The body of a request we refuse is not read: close after the answer. */
	if (strcmp(req.target, "/v1/reports") != 0) {
		answer(c, 404, NULL, "no such resource: only /v1/reports", NULL, true);
		return false;
	}
	if (strcmp(req.method, "POST") != 0) {
		answer(c, 405, NULL, "only POST", "Allow: POST\r\n", true);
		return false;
	}
	if (req.content_length < 0) {
		answer(c, 411, NULL, "Content-Length required", NULL, true);
		return false;
	}
	unsigned long long seq = atomic_fetch_add(&requests, 1) + 1;
	if (req.expect_continue && conn_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25))
		return false;

	/* The body: first what came with the head, then the rest; what follows the body in
	 * c->head (a pipelined request) stays there for the next round. */
	size_t cl = (size_t)req.content_length, got = c->have - (size_t)end;
	if (got > cl)
		got = cl;
	memcpy(c->body, c->head + end, got);
	c->have -= (size_t)end + got;
	memmove(c->head, c->head + end + got, c->have);
	bool reset = seq <= (unsigned long long)opt->reset_first;
	size_t want = reset ? cl / 2 : cl;
	while (got < want) {
		int n = conn_read(c, c->body + got, want - got);
		if (n <= 0)
			return false;
		got += (size_t)n;
	}
	if (reset) {
		fprintf(stderr, "collector: conn %llu: request %llu: reset after %zu of %zu bytes\n",
			c->id, seq, got, cl);
		c->reset = true;
		return false;
	}
	if (seq <= (unsigned long long)opt->stall_first) {
		/* Never answer; hold the socket until the client gives up (or we stop). */
		char sink[512];
		fprintf(stderr, "collector: conn %llu: request %llu: stalled\n", c->id, seq);
		c->timeout_ms = -1;
		while (conn_read(c, sink, sizeof(sink)) > 0)
			;
		return false;
	}
	if (seq <= (unsigned long long)opt->fail_first)
		return answer(c, 503, NULL, "injected failure", "Retry-After: 1\r\n", req.close) == 0 &&
		       !req.close;
	if (seq <= (unsigned long long)opt->status_first)
		return answer(c, opt->status_code, NULL, "injected status", NULL, req.close) == 0 &&
		       !req.close;

	if (coll_validate(c->body, cl, &rep, why, sizeof(why)))
		return answer(c, 400, NULL, why, NULL, req.close) == 0 && !req.close;
	if (!req.has_key)
		return answer(c, 400, NULL, "Idempotency-Key header missing", NULL, req.close) == 0 &&
		       !req.close;
	if (strcmp(req.key, rep.key) != 0)
		return answer(c, 400, NULL, "Idempotency-Key differs from the report's key", NULL,
			      req.close) == 0 && !req.close;
	st = coll_store_put(store, rep.key, rep.build_id, rep.name, c->body, cl);
	if (st < 0)
		return answer(c, 500, rep.key, "could not store", NULL, true), false;
	return answer(c, st ? 201 : 200, rep.key, NULL, NULL, req.close) == 0 && !req.close;
}

/* Close gracefully: our side first, then read and drop what the client still sends (a
 * refused body) for a moment, so the kernel does not answer it with a reset that could
 * destroy our answer before the client read it. */
static void conn_close(struct conn *c)
{
	if (c->reset) {
		/* SO_LINGER 0: close sends RST, as a crashed or cut-off server would. */
		struct linger l = { 1, 0 };
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		close(c->fd);
		return;
	}
	if (c->tls)
		mbedtls_ssl_close_notify(&c->ssl);
	shutdown(c->fd, SHUT_WR);
	c->timeout_ms = 1000;
	unsigned char sink[4096];
	for (size_t total = 0; total < DRAIN_MAX;) {
		if (wait_readable(c) <= 0)
			break;
		ssize_t n = recv(c->fd, sink, sizeof(sink), 0);
		if (n <= 0)
			break;
		total += (size_t)n;
	}
	close(c->fd);
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	if (c->tls) {
		mbedtls_ssl_init(&c->ssl);
		int rc = mbedtls_ssl_setup(&c->ssl, &tls_conf);
		mbedtls_ssl_set_bio(&c->ssl, c, bio_send, bio_recv, NULL);
		c->timeout_ms = HANDSHAKE_MS;
		while (rc == 0 && (rc = mbedtls_ssl_handshake(&c->ssl)) != 0)
			if (rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE)
				rc = 0;
		if (rc) {
			char msg[128];
			mbedtls_strerror(rc, msg, sizeof(msg));
			fprintf(stderr, "collector: conn %llu: TLS handshake failed: %s\n", c->id, msg);
			c->reset = false;
			close(c->fd);
			goto out;
		}
	}
	while (serve_one(c))
		;
	conn_close(c);
out:
	if (c->tls)
		mbedtls_ssl_free(&c->ssl);
	free(c);
	pthread_mutex_lock(&active_lock);
	if (--active == 0)
		pthread_cond_broadcast(&active_gone);
	pthread_mutex_unlock(&active_lock);
	return NULL;
}

/* ---- setup ---- */

static int tls_setup(const struct coll_options *o)
{
	static const char pers[] = "jitt-collector";
	char msg[128];
	int rc;
	mbedtls_ssl_config_init(&tls_conf);
	mbedtls_x509_crt_init(&tls_crt);
	mbedtls_pk_init(&tls_key);
	mbedtls_entropy_init(&entropy);
	mbedtls_ctr_drbg_init(&drbg);
	const char *what = o->cert;
	if ((rc = mbedtls_x509_crt_parse_file(&tls_crt, o->cert)))
		goto fail;
	what = o->key;
	if ((rc = mbedtls_pk_parse_keyfile(&tls_key, o->key, NULL)))
		goto fail;
	what = "the certificate and key";
	if ((rc = mbedtls_pk_check_pair(&tls_crt.pk, &tls_key)))
		goto fail;
	what = "the random generator";
	if ((rc = mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy,
					(const unsigned char *)pers, sizeof(pers) - 1)))
		goto fail;
	what = "the TLS configuration";
	if ((rc = mbedtls_ssl_config_defaults(&tls_conf, MBEDTLS_SSL_IS_SERVER,
					      MBEDTLS_SSL_TRANSPORT_STREAM,
					      MBEDTLS_SSL_PRESET_DEFAULT)))
		goto fail;
	/* The drbg locks itself: Debian's mbedtls is built with MBEDTLS_THREADING_PTHREAD. */
	mbedtls_ssl_conf_rng(&tls_conf, mbedtls_ctr_drbg_random, &drbg);
	mbedtls_ssl_conf_min_version(&tls_conf, MBEDTLS_SSL_MAJOR_VERSION_3,
				     MBEDTLS_SSL_MINOR_VERSION_3);
	mbedtls_ssl_conf_max_version(&tls_conf, MBEDTLS_SSL_MAJOR_VERSION_3,
				     MBEDTLS_SSL_MINOR_VERSION_3);
	mbedtls_ssl_conf_ciphersuites(&tls_conf, suites);
	mbedtls_ssl_conf_renegotiation(&tls_conf, MBEDTLS_SSL_RENEGOTIATION_DISABLED);
	if ((rc = mbedtls_ssl_conf_own_cert(&tls_conf, &tls_crt, &tls_key)))
		goto fail;
	return 0;
fail:
	mbedtls_strerror(rc, msg, sizeof(msg));
	fprintf(stderr, "collector: %s: %s\n", what, msg);
	return -EINVAL;
}

static void tls_free(void)
{
	mbedtls_ssl_config_free(&tls_conf);
	mbedtls_x509_crt_free(&tls_crt);
	mbedtls_pk_free(&tls_key);
	mbedtls_ctr_drbg_free(&drbg);
	mbedtls_entropy_free(&entropy);
}

static int listen_on(int port, int *out_port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	socklen_t alen = sizeof(a);
	if (fd < 0)
		return -errno;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&a, &alen)) {
		int e = -errno;
		close(fd);
		return e;
	}
	*out_port = ntohs(a.sin_port);
	return fd;
}

/* One more connection: counted in memory, in the db and in --conn-file. */
static void count_connection(void)
{
	unsigned long long n = atomic_fetch_add(&connections, 1) + 1;
	if (coll_store_count_connection(store))
		fprintf(stderr, "collector: could not count the connection in the db\n");
	if (opt->conn_file) {
		static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
		char text[32];
		snprintf(text, sizeof(text), "%llu\n", n);
		pthread_mutex_lock(&lock);
		if (write_file_atomic(opt->conn_file, text))
			fprintf(stderr, "collector: %s: could not write\n", opt->conn_file);
		pthread_mutex_unlock(&lock);
	}
}

int coll_serve(const struct coll_options *o, struct coll_store *st)
{
	int port = 0, lfd, rc = 0;
	char text[32];
	opt = o;
	store = st;
	if (!o->plain && tls_setup(o)) {
		tls_free();
		return -EINVAL;
	}
	if (o->dump && (dump_fd = open(o->dump, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) < 0) {
		rc = -errno;
		fprintf(stderr, "collector: %s: %s\n", o->dump, strerror(errno));
		goto out;
	}
	if ((lfd = listen_on(o->port, &port)) < 0) {
		rc = lfd;
		fprintf(stderr, "collector: cannot listen on 127.0.0.1:%d: %s\n", o->port, strerror(-rc));
		goto out;
	}
	/* No SA_RESTART: a signal interrupts poll, and the loop sees the flag at once. */
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (o->conn_file)
		write_file_atomic(o->conn_file, "0\n");
	snprintf(text, sizeof(text), "%d\n", port);
	if (o->port_file && (rc = write_file_atomic(o->port_file, text))) {
		fprintf(stderr, "collector: %s: %s\n", o->port_file, strerror(-rc));
		close(lfd);
		goto out;
	}
	fprintf(stderr, "collector: listening on %s://127.0.0.1:%d/v1/reports\n",
		o->plain ? "http" : "https", port);

	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	while (!atomic_load(&stopping)) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		if (poll(&p, 1, 1000) <= 0)
			continue;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		/* An answer goes out in more than one record: without this, Nagle holds the
		 * last until the client's delayed ACK (40 ms a request on Linux). */
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		count_connection();
		struct conn *c = NULL;
		pthread_mutex_lock(&active_lock);
		bool room = active < MAX_CONNS;
		if (room)
			active++;
		pthread_mutex_unlock(&active_lock);
		/* A client that never reads must not hold a thread forever in a write. */
		struct timeval tv = { IDLE_MS / 1000, 0 };
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		pthread_t t;
		if (room && (c = calloc(1, sizeof(*c)))) {
			c->fd = fd;
			c->tls = !o->plain;
			c->id = atomic_load(&connections);
			if (pthread_create(&t, &attr, conn_main, c) == 0)
				continue;
			free(c);
		}
		fprintf(stderr, "collector: too many connections; closed one\n");
		close(fd);
		if (room) {
			pthread_mutex_lock(&active_lock);
			active--;
			pthread_mutex_unlock(&active_lock);
		}
	}
	pthread_attr_destroy(&attr);
	close(lfd);
	/* Connections see the flag within SLICE_MS; wait for them, bounded. */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	pthread_mutex_lock(&active_lock);
	while (active > 0 && pthread_cond_timedwait(&active_gone, &active_lock, &until) == 0)
		;
	/* A thread still running (stuck in a write) may use the store and TLS: leave them to
	 * the process's exit (SQLite's WAL is safe for that). */
	if (active > 0)
		rc = -EBUSY;
	pthread_mutex_unlock(&active_lock);
	fprintf(stderr, "collector: stopped after %llu connections, %llu requests\n",
		(unsigned long long)atomic_load(&connections), (unsigned long long)atomic_load(&requests));
out:
	if (dump_fd >= 0)
		close(dump_fd);
	if (!o->plain && rc != -EBUSY)
		tls_free();
	return rc;
}
