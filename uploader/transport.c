/* SPDX-License-Identifier: MIT */
/*
 * uploader/transport.c - one HTTPS connection on mbedtls (see transport.h).
 *
 * mbedtls reads and writes through our own callbacks on a non-blocking socket: each waits
 * with poll() in slices of at most 100 ms, asking keep_going() between slices and before
 * every send, so an abort takes effect within 100 ms and no byte leaves after it. mbedtls
 * itself never blocks and never sees the socket.
 */
#include "uploader/transport.h"

#include "uploader/http.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/sha256.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

#include "uploader/random.h"

/* The longest poll() between two keep_going() questions (transport.h's promise). */
#define SLICE_MS 100

struct up_conn {
	int fd;
	int timeout_ms;
	bool (*keep_going)(void *arg);
	void *arg;
	bool has_pin;
	unsigned char pin[32];
	/* The leaf's SPKI hash, taken by the verify callback during the handshake (so mbedtls
	 * need not keep the peer's certificate). */
	bool have_leaf;
	unsigned char leaf_spki[32];
	/* Why the last callback failed, beyond what mbedtls can say. */
	int io_error;	       /* a negative errno */
	bool closing;	       /* close_notify: never wait */
	long long deadline_ms; /* of the whole step under way; 0 = each wait its own */
	mbedtls_ssl_context ssl;
	mbedtls_ssl_config conf;
	mbedtls_x509_crt ca;
};

/* ECDHE (forward secrecy) with an AEAD only: TLS 1.2's best, and what every current
 * server offers. RSA certificates stay possible (an OEM's collector may have one). */
static const int suites[] = {
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	MBEDTLS_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	0,
};

static void say(char *err, size_t errsize, const char *fmt, const char *a, const char *b)
{
	if (err && errsize)
		snprintf(err, errsize, fmt, a, b);
}

int up_url_parse(const char *url, struct up_url *u)
{
	static const char scheme[] = "https://";
	if (!url || !u || strncmp(url, scheme, sizeof(scheme) - 1) != 0)
		return -EINVAL;
	const char *h = url + sizeof(scheme) - 1;
	const char *slash = strchr(h, '/');
	if (!slash)
		return -EINVAL;
	const char *hend, *port = NULL;
	size_t hl;
	if (*h == '[') {
		/* An IPv6 literal: https://[::1]:8443/path */
		const char *close = memchr(h, ']', (size_t)(slash - h));
		if (!close)
			return -EINVAL;
		h++;
		hend = close;
		if (close[1] == ':')
			port = close + 2;
		else if (close + 1 != slash)
			return -EINVAL;
	} else {
		const char *colon = memchr(h, ':', (size_t)(slash - h));
		hend = colon ? colon : slash;
		port = colon ? colon + 1 : NULL;
	}
	hl = (size_t)(hend - h);
	if (hl == 0 || hl >= sizeof(u->host))
		return -EINVAL;
	for (size_t i = 0; i < hl; i++) {
		char c = h[i];
		/* A host name, an IPv4 address or (inside brackets) an IPv6 one; '@' (userinfo)
		 * and everything else is refused. */
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '.' || (c == ':' && url[sizeof(scheme) - 1] == '[')))
			return -EINVAL;
	}
	char portbuf[8] = "443";
	if (port) {
		size_t pl = (size_t)(slash - port);
		if (pl == 0 || pl > 5)
			return -EINVAL;
		long v = 0;
		for (size_t i = 0; i < pl; i++) {
			if (port[i] < '0' || port[i] > '9')
				return -EINVAL;
			v = v * 10 + (port[i] - '0');
		}
		if (v < 1 || v > 65535)
			return -EINVAL;
		snprintf(portbuf, sizeof(portbuf), "%ld", v);
	}
	size_t pl = strlen(slash);
	if (pl >= sizeof(u->path))
		return -EINVAL;
	for (size_t i = 0; i < pl; i++) {
		unsigned char c = (unsigned char)slash[i];
		if (c <= 0x20 || c >= 0x7f || c == '?' || c == '#')
			return -EINVAL;
	}
	memcpy(u->host, h, hl);
	u->host[hl] = '\0';
	memcpy(u->port, portbuf, sizeof(portbuf));
	memcpy(u->path, slash, pl + 1);
	return 0;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool going(struct up_conn *c)
{
	return !c->keep_going || c->keep_going(c->arg);
}

/* The abort: the socket closed at once, so not a byte more (not even an alert) leaves.
 * Linger 0 makes the close a reset that also drops what the kernel still held in the send
 * buffer: bytes written before the abort but not yet sent stay unsent. */
static int cancel(struct up_conn *c)
{
	if (c->fd >= 0) {
		struct linger now = { .l_onoff = 1, .l_linger = 0 };
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &now, sizeof(now));
		close(c->fd);
		c->fd = -1;
	}
	c->io_error = -ECANCELED;
	return -ECANCELED;
}

/*
 * Waits until fd is ready for events, in slices of SLICE_MS, asking keep_going between
 * them. 0, -ETIMEDOUT (timeout_ms, or the step's deadline), -ECANCELED or poll's error.
 */
static int wait_for(struct up_conn *c, short events)
{
	long long end = now_ms() + c->timeout_ms;
	if (c->deadline_ms && c->deadline_ms < end)
		end = c->deadline_ms;
	for (;;) {
		if (!going(c))
			return cancel(c);
		long long left = end - now_ms();
		if (left <= 0)
			return c->io_error = -ETIMEDOUT;
		struct pollfd pfd = { .fd = c->fd, .events = events };
		int n = poll(&pfd, 1, (int)(left < SLICE_MS ? left : SLICE_MS));
		if (n > 0)
			return 0; /* ready, or an error the next call reports */
		if (n < 0 && errno != EINTR)
			return c->io_error = -errno;
	}
}

/* mbedtls_ssl_send_t */
static int bio_send(void *ctx, const unsigned char *buf, size_t len)
{
	struct up_conn *c = ctx;
	if (c->fd < 0)
		return MBEDTLS_ERR_NET_INVALID_CONTEXT;
	if (!c->closing && !going(c)) {
		cancel(c);
		return MBEDTLS_ERR_NET_SEND_FAILED;
	}
	for (;;) {
		ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);
		if (n >= 0)
			return (int)n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			c->io_error = -errno;
			return errno == EPIPE || errno == ECONNRESET ? MBEDTLS_ERR_NET_CONN_RESET
								     : MBEDTLS_ERR_NET_SEND_FAILED;
		}
		if (c->closing || wait_for(c, POLLOUT) < 0)
			return MBEDTLS_ERR_NET_SEND_FAILED;
	}
}

/* mbedtls_ssl_recv_t */
static int bio_recv(void *ctx, unsigned char *buf, size_t len)
{
	struct up_conn *c = ctx;
	if (c->fd < 0)
		return MBEDTLS_ERR_NET_INVALID_CONTEXT;
	for (;;) {
		if (!going(c)) {
			cancel(c);
			return MBEDTLS_ERR_NET_RECV_FAILED;
		}
		ssize_t n = recv(c->fd, buf, len, 0);
		if (n >= 0)
			return (int)n; /* 0: the peer closed; mbedtls reports it */
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			c->io_error = -errno;
			return errno == ECONNRESET ? MBEDTLS_ERR_NET_CONN_RESET
						   : MBEDTLS_ERR_NET_RECV_FAILED;
		}
		if (c->closing || wait_for(c, POLLIN) < 0)
			return MBEDTLS_ERR_NET_RECV_FAILED;
	}
}

/* mbedtls' rng callback, on our generator. */
static int rng(void *unused, unsigned char *out, size_t len)
{
	(void)unused;
	return up_random(out, len) ? MBEDTLS_ERR_CTR_DRBG_ENTROPY_SOURCE_FAILED : 0;
}

/* Called for each certificate of the chain, the leaf last (depth 0): its SPKI's hash is
 * kept for the pin check. pk_raw is the whole SubjectPublicKeyInfo, DER. Verification
 * results (flags) are left as mbedtls found them. */
static int verify_cb(void *ctx, mbedtls_x509_crt *crt, int depth, uint32_t *flags)
{
	struct up_conn *c = ctx;
	(void)flags;
	if (depth == 0) {
		c->have_leaf =
			mbedtls_sha256_ret(crt->pk_raw.p, crt->pk_raw.len, c->leaf_spki, 0) == 0;
	}
	return 0;
}

/* Connects to one of host's addresses within the timeout. 0, or a negative errno. */
static int tcp_connect(struct up_conn *c, const struct up_url *u, char *err, size_t errsize)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	/* getaddrinfo blocks in musl's resolver (its own timeouts, about 5 s a try): neither
	 * keep_going nor timeout_ms reaches into it. */
	int gai = getaddrinfo(u->host, u->port, &hints, &res);
	if (gai != 0) {
		say(err, errsize, "cannot resolve %s: %s", u->host, gai_strerror(gai));
		return gai == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
	}
	int ret = -EHOSTUNREACH;
	c->deadline_ms = now_ms() + c->timeout_ms;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
				a->ai_protocol);
		if (fd < 0) {
			ret = -errno;
			continue;
		}
		c->fd = fd;
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
			ret = 0;
			break;
		}
		if (errno != EINPROGRESS) {
			ret = -errno;
		} else if ((ret = wait_for(c, POLLOUT)) == 0) {
			int soerr = 0;
			socklen_t sl = sizeof(soerr);
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
			ret = -soerr;
			if (ret == 0)
				break;
		}
		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
		if (ret == -ECANCELED || ret == -ETIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	c->deadline_ms = 0;
	if (ret == 0) {
		/* The request goes out in few writes; do not hold them back for ACKs. */
		int one = 1;
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	} else {
		char e[64];
		snprintf(e, sizeof(e), "%s", strerror(-ret));
		say(err, errsize, "cannot connect to %s: %s", u->host, e);
	}
	return ret;
}

/* What an mbedtls error means to the caller: the socket's own story first. */
static int tls_errno(struct up_conn *c, int ret, const char *what, char *err, size_t errsize)
{
	if (c->io_error) {
		char e[64];
		snprintf(e, sizeof(e), "%s", strerror(-c->io_error));
		say(err, errsize, "%s: %s", what, e);
		return c->io_error;
	}
	if (ret == MBEDTLS_ERR_NET_CONN_RESET || ret == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY) {
		say(err, errsize, "%s: %s", what, "the server closed the connection");
		return -ECONNRESET;
	}
	if (ret == MBEDTLS_ERR_SSL_ALLOC_FAILED || ret == MBEDTLS_ERR_X509_ALLOC_FAILED) {
		say(err, errsize, "%s: %s", what, "out of memory");
		return -ENOMEM;
	}
	char e[128];
	mbedtls_strerror(ret, e, sizeof(e));
	say(err, errsize, "%s: %s", what, e);
	return -EPROTO;
}

int up_conn_open(struct up_conn **cp, const struct up_url *u, const struct up_tls_settings *s,
		 char *err, size_t errsize)
{
	*cp = NULL;
	if (err && errsize)
		err[0] = '\0';
	if (!s || !s->ca_file || s->timeout_ms <= 0) {
		say(err, errsize, "%s%s", "no CA file or no timeout", "");
		return -EINVAL;
	}
	struct up_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = -1;
	c->timeout_ms = s->timeout_ms;
	c->keep_going = s->keep_going;
	c->arg = s->arg;
	if (s->pin) {
		c->has_pin = true;
		memcpy(c->pin, s->pin, sizeof(c->pin));
	}
	mbedtls_ssl_init(&c->ssl);
	mbedtls_ssl_config_init(&c->conf);
	mbedtls_x509_crt_init(&c->ca);

	int ret = mbedtls_x509_crt_parse_file(&c->ca, s->ca_file);
	if (ret != 0) {
		/* A positive value: that many certificates of the bundle did not parse. The
		 * others are still trusted; none parsed is a setup error. */
		if (ret < 0 || c->ca.version == 0) {
			say(err, errsize, "cannot read the CA bundle %s%s", s->ca_file, "");
			up_conn_close(c);
			return -EINVAL;
		}
	}
	ret = mbedtls_ssl_config_defaults(&c->conf, MBEDTLS_SSL_IS_CLIENT,
					  MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT);
	if (ret == 0) {
		/* TLS 1.2 only: 1.0 and 1.1 are broken, and 1.3 is experimental in 2.28. */
		mbedtls_ssl_conf_min_version(&c->conf, MBEDTLS_SSL_MAJOR_VERSION_3,
					     MBEDTLS_SSL_MINOR_VERSION_3);
		mbedtls_ssl_conf_max_version(&c->conf, MBEDTLS_SSL_MAJOR_VERSION_3,
					     MBEDTLS_SSL_MINOR_VERSION_3);
		mbedtls_ssl_conf_ciphersuites(&c->conf, suites);
		mbedtls_ssl_conf_authmode(&c->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
		mbedtls_ssl_conf_ca_chain(&c->conf, &c->ca, NULL);
		mbedtls_ssl_conf_rng(&c->conf, rng, NULL);
		mbedtls_ssl_conf_verify(&c->conf, verify_cb, c);
		/* No renegotiation, no session tickets: one request, and less code. */
		ret = mbedtls_ssl_setup(&c->ssl, &c->conf);
	}
	if (ret == 0)
		ret = mbedtls_ssl_set_hostname(&c->ssl, u->host);
	if (ret != 0) {
		ret = tls_errno(c, ret, "TLS setup", err, errsize);
		up_conn_close(c);
		return ret;
	}

	ret = tcp_connect(c, u, err, errsize);
	if (ret) {
		up_conn_close(c);
		return ret;
	}
	mbedtls_ssl_set_bio(&c->ssl, c, bio_send, bio_recv, NULL);

	/* The whole handshake within timeout_ms. */
	c->deadline_ms = now_ms() + c->timeout_ms;
	ret = mbedtls_ssl_handshake(&c->ssl);
	c->deadline_ms = 0;
	if (ret != 0) {
		uint32_t flags = mbedtls_ssl_get_verify_result(&c->ssl);
		if (ret == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED ||
		    (flags != 0 && flags != (uint32_t)-1)) {
			char info[256];
			int n = mbedtls_x509_crt_verify_info(info, sizeof(info), "", flags);
			/* Its lines become one, for the log. */
			for (int i = 0; i < n && info[i]; i++)
				if (info[i] == '\n')
					info[i] = (info[i + 1] ? ';' : '\0');
			say(err, errsize, "certificate of %s refused: %s", u->host,
			    n > 0 ? info : "not verified");
			ret = -EACCES;
		} else {
			ret = tls_errno(c, ret, "TLS handshake", err, errsize);
		}
		up_conn_close(c);
		return ret;
	}
	/* The pin, before a byte of the request: a chain that verifies is not enough. */
	if (c->has_pin && (!c->have_leaf || memcmp(c->pin, c->leaf_spki, 32) != 0)) {
		say(err, errsize, "the public key of %s does not match the pin%s", u->host, "");
		cancel(c);
		up_conn_close(c);
		return -EACCES;
	}
	*cp = c;
	return 0;
}

/* Writes all of buf, or fails. */
static int write_all(struct up_conn *c, const unsigned char *buf, size_t len, char *err,
		     size_t errsize)
{
	while (len) {
		int n = mbedtls_ssl_write(&c->ssl, buf, len);
		if (n < 0)
			return tls_errno(c, n, "sending", err, errsize);
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int up_conn_post(struct up_conn *c, const struct up_url *u, const char *idempotency_key,
		 const void *body, size_t len, struct up_http_result *res, char *err,
		 size_t errsize)
{
	char head[768];
	if (err && errsize)
		err[0] = '\0';
	if (!c || c->fd < 0)
		return -EBADF;
	int n = up_http_request(head, sizeof(head), u->host, u->port, u->path, idempotency_key,
				len);
	if (n < 0) {
		say(err, errsize, "cannot write the request to %s%s", u->path, "");
		return n;
	}
	/* The whole exchange within three timeouts, beside each wait's own: a server that
	 * trickles a byte just before each timeout cannot hold the uploader for hours. */
	c->deadline_ms = now_ms() + 3LL * c->timeout_ms;
	int ret = write_all(c, (const unsigned char *)head, (size_t)n, err, errsize);
	if (ret == 0)
		ret = write_all(c, body, len, err, errsize);

	struct up_http_parser p;
	up_http_parser_init(&p);
	unsigned char buf[1024];
	bool extra = false;
	while (ret == 0) {
		int r = mbedtls_ssl_read(&c->ssl, buf, sizeof(buf));
		if (r == MBEDTLS_ERR_SSL_WANT_READ || r == MBEDTLS_ERR_SSL_WANT_WRITE)
			continue;
		if (r == 0 || r == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY ||
		    (r == MBEDTLS_ERR_NET_CONN_RESET && !c->io_error)) {
			r = up_http_eof(&p);
			if (r == 1)
				break;
			ret = r;
			say(err, errsize, "reading the answer: %s%s",
			    r == -ECONNRESET ? "closed before any answer" : p.why, "");
			break;
		}
		if (r < 0) {
			ret = tls_errno(c, r, "reading the answer", err, errsize);
			break;
		}
		size_t used = 0;
		int f = up_http_feed(&p, buf, (size_t)r, &used);
		if (f < 0) {
			say(err, errsize, "the answer is not HTTP as we read it: %s%s", p.why, "");
			ret = -EBADMSG;
		} else if (f == 1) {
			extra = used < (size_t)r || mbedtls_ssl_get_bytes_avail(&c->ssl) > 0;
			break;
		}
	}
	c->deadline_ms = 0;
	if (ret)
		return ret;
	res->status = p.status;
	res->retry_after_s = p.retry_after_s;
	res->reusable = p.reusable && !extra;
	return 0;
}

void up_conn_close(struct up_conn *c)
{
	if (!c)
		return;
	if (c->fd >= 0) {
		/* A polite close_notify when it goes out at once and the caller still wants
		 * bytes to go; never a wait for it. */
		c->closing = true;
		if (c->ssl.state == MBEDTLS_SSL_HANDSHAKE_OVER && going(c))
			mbedtls_ssl_close_notify(&c->ssl);
		close(c->fd);
	}
	mbedtls_ssl_free(&c->ssl);
	mbedtls_ssl_config_free(&c->conf);
	mbedtls_x509_crt_free(&c->ca);
	free(c);
}
