/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* MSG_NOSIGNAL, SOCK_NONBLOCK */
#include "agent/analysis/debuginfod.h"
#include "hal/fs.h"
#include "uploader/http.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void say(char *err, size_t size, const char *fmt, ...)
{
	if (!err || !size)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, size, fmt, ap);
	va_end(ap);
}

/* A byte a URL's host, port or path may hold here: printable ASCII but space. */
static bool url_byte(char c)
{
	return (unsigned char)c > 0x20 && (unsigned char)c < 0x7f;
}

int agent_debuginfod_url(const char *url, size_t len, struct agent_http_url *u)
{
	memset(u, 0, sizeof(*u));
	const char *end = url + len;
	for (const char *p = url; p < end; p++)
		if (!url_byte(*p) || *p == '?' || *p == '#')
			return -EINVAL;
	if (len >= 8 && strncmp(url, "https://", 8) == 0)
		return -EPROTONOSUPPORT;
	if (len < 7 || strncmp(url, "http://", 7) != 0) {
		/* Another scheme is named as one; anything else is not a URL. */
		for (size_t i = 0; i + 3 <= len; i++)
			if (memcmp(url + i, "://", 3) == 0)
				return i ? -EPROTONOSUPPORT : -EINVAL;
		return -EINVAL;
	}
	const char *h = url + 7, *slash = memchr(h, '/', (size_t)(end - h));
	const char *auth_end = slash ? slash : end;
	if (memchr(h, '@', (size_t)(auth_end - h)))
		return -EINVAL; /* userinfo: nothing of ours sends credentials */
	const char *port = NULL, *host_end = auth_end;
	if (*h == '[') { /* an IPv6 literal */
		const char *close = memchr(h, ']', (size_t)(auth_end - h));
		if (!close || close == h + 1)
			return -EINVAL;
		if (close + 1 < auth_end && close[1] != ':')
			return -EINVAL;
		port = close + 1 < auth_end ? close + 2 : NULL;
		host_end = close;
		h++;
	} else {
		port = memchr(h, ':', (size_t)(auth_end - h));
		if (port)
			host_end = port++;
	}
	size_t hn = (size_t)(host_end - h), pn = port ? (size_t)(auth_end - port) : 0;
	if (hn == 0 || hn >= sizeof(u->host) || (port && (pn == 0 || pn > 5)))
		return -EINVAL;
	memcpy(u->host, h, hn);
	if (port) {
		unsigned v = 0;
		for (size_t i = 0; i < pn; i++) {
			if (port[i] < '0' || port[i] > '9')
				return -EINVAL;
			v = v * 10 + (unsigned)(port[i] - '0');
		}
		if (v == 0 || v > 65535)
			return -EINVAL;
		snprintf(u->port, sizeof(u->port), "%u", v);
	} else {
		strcpy(u->port, "80");
	}
	size_t rn = slash ? (size_t)(end - slash) : 0;
	while (rn && slash[rn - 1] == '/')
		rn--;
	if (rn >= sizeof(u->prefix))
		return -EINVAL;
	memcpy(u->prefix, slash ? slash : "", rn);
	return 0;
}

int agent_debuginfod_cache_path(const char *cache, const char *hex, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/%s.debug", cache, hex);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* mkdir -p, each folder made 0700 (a user's cache is theirs alone). 0 or -errno. */
static int make_dirs(const char *path)
{
	char p[PATH_MAX];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		char c = p[i];
		p[i] = '\0';
		if (mkdir(p, 0700) != 0 && errno != EEXIST)
			return -errno;
		p[i] = c;
	}
	struct stat st;
	if (stat(path, &st) != 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* Waits for events on fd until deadline (ms, monotonic). 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, long long deadline)
{
	for (;;) {
		long long left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd pfd = { .fd = fd, .events = events };
		int n = poll(&pfd, 1, (int)(left > 60000 ? 60000 : left));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n > 0)
			return 0;
	}
}

/* A connected socket to one of u's addresses, each try within timeout_ms. fd or -errno. */
static int connect_to(const struct agent_http_url *u, int timeout_ms)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	/* getaddrinfo blocks in musl's resolver (its own timeouts); a numeric host or one in
	 * /etc/hosts does not wait. */
	int g = getaddrinfo(u->host, u->port, &hints, &res);
	if (g != 0)
		return -EHOSTUNREACH;
	int err = -ECONNREFUSED;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
				a->ai_protocol);
		if (fd < 0) {
			err = -errno;
			continue;
		}
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
			freeaddrinfo(res);
			return fd;
		}
		err = -errno;
		if (err == -EINPROGRESS) {
			err = wait_fd(fd, POLLOUT, now_ms() + timeout_ms);
			int so = 0;
			socklen_t sl = sizeof(so);
			if (!err && getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) != 0)
				err = -errno;
			else if (!err && so)
				err = -so;
			if (!err) {
				freeaddrinfo(res);
				return fd;
			}
		}
		close(fd);
	}
	freeaddrinfo(res);
	return err;
}

struct body {
	struct up_http_parser *p;
	int fd;
	uint64_t bytes;
	int err;
};

/* The parser's sink: a 200's body into the temporary; any other answer's is dropped. */
static int keep(void *arg, const void *data, size_t n)
{
	struct body *b = arg;
	if (b->p->status != 200)
		return 0;
	const char *d = data;
	while (n) {
		ssize_t w = write(b->fd, d, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			b->err = -errno;
			return -1;
		}
		d += w;
		n -= (size_t)w;
		b->bytes += (uint64_t)w;
	}
	return 0;
}

/* One GET of path from u into fd. The HTTP status, or a negative errno; *why for errors. */
static int get(const struct agent_http_url *u, const char *path, int fd, int timeout_ms,
	       uint64_t *bytes, const char **why)
{
	char req[1024];
	int n = up_http_get_request(req, sizeof(req), u->host, u->port, "80", path);
	*why = NULL;
	if (n < 0)
		return n;
	int s = connect_to(u, timeout_ms);
	if (s < 0)
		return s;
	long long deadline = now_ms() + (long long)AGENT_DEBUGINFOD_ROUNDS * timeout_ms;
	int err = 0;
	for (int off = 0; off < n && !err;) {
		long long step = now_ms() + timeout_ms;
		err = wait_fd(s, POLLOUT, step < deadline ? step : deadline);
		ssize_t w = err ? 0 : send(s, req + off, (size_t)(n - off), MSG_NOSIGNAL);
		if (!err && w < 0 && errno != EINTR && errno != EAGAIN)
			err = -errno;
		off += w > 0 ? (int)w : 0;
	}
	struct up_http_parser p;
	up_http_parser_init(&p);
	struct body b = { .p = &p, .fd = fd };
	p.sink = keep;
	p.sink_arg = &b;
	p.body_max = AGENT_DEBUGINFOD_MAX_BYTES;
	char buf[65536];
	int r = 0;
	while (!err && r == 0) {
		long long step = now_ms() + timeout_ms;
		err = wait_fd(s, POLLIN, step < deadline ? step : deadline);
		if (err)
			break;
		ssize_t got = recv(s, buf, sizeof(buf), 0);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got < 0)
			err = -errno;
		else if (got == 0)
			r = up_http_eof(&p);
		else
			r = up_http_feed(&p, buf, (size_t)got, NULL);
	}
	close(s);
	if (!err && r < 0) {
		bool big = p.why && strcmp(p.why, "body too large") == 0;
		err = b.err ? b.err : big ? -EFBIG : -EBADMSG;
		*why = p.why;
	}
	*bytes = b.bytes;
	return err ? err : p.status;
}

/* Fetch from one server into a temporary, check it and commit it. 0 or -errno. */
static int fetch_one(const struct agent_debuginfod *d, const struct agent_http_url *u,
		     const char *hex, const char *final, char *err, size_t errsize, const char *url,
		     int urllen)
{
	char path[512], tmp[PATH_MAX];
	int timeout = d->timeout_ms > 0 ? d->timeout_ms : AGENT_DEBUGINFOD_TIMEOUT_MS;
	if ((size_t)snprintf(path, sizeof(path), "%s/buildid/%s/debuginfo", u->prefix, hex) >=
		    sizeof(path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.%ld.tmp", d->cache, hex, (long)getpid()) >=
		    sizeof(tmp))
		return -ENAMETOOLONG;
	/* A temporary a crash left under this pid's name is ours: replaced, never followed. */
	(void)unlink(tmp);
	int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = -errno;
		say(err, errsize, "%s: %s", tmp, strerror(-e));
		return e;
	}
	uint64_t bytes = 0;
	const char *why = NULL;
	int status = get(u, path, fd, timeout, &bytes, &why);
	int e = 0;
	if (status < 0) {
		e = status;
		say(err, errsize, "%.*s: %s%s%s", urllen, url, strerror(-e), why ? ": " : "",
		    why ? why : "");
	} else if (status == 404) {
		e = -ENOENT;
		say(err, errsize, "%.*s: no debug file for build-id %s", urllen, url, hex);
	} else if (status != 200) {
		e = -EPROTO;
		say(err, errsize, "%.*s: answered HTTP %d", urllen, url, status);
	} else if ((e = d->check ? d->check(fd, bytes, d->arg) : 0) != 0) {
		say(err, errsize, "%.*s: the file it sent is not the debug file of %s (%s)", urllen,
		    url, hex, strerror(-e));
	}
	/* hal_file_commit closes fd, and on an error only removes the temporary. */
	int c = hal_file_commit(fd, e, tmp, final, d->cache);
	if (!e && c) {
		e = c;
		say(err, errsize, "%s: %s", final, strerror(-e));
	}
	return e;
}

int agent_debuginfod_fetch(const struct agent_debuginfod *d, const char *hex, char *err,
			   size_t errsize)
{
	size_t hl = strlen(hex);
	bool ok = hl >= 2 && hl <= 64;
	for (size_t i = 0; ok && i < hl; i++)
		ok = (hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f');
	if (!ok || !d->urls || !d->cache || !d->cache[0]) {
		say(err, errsize, "no server, cache or build-id to fetch by");
		return -EINVAL;
	}
	char final[PATH_MAX];
	int e = agent_debuginfod_cache_path(d->cache, hex, final, sizeof(final));
	if (!e && (e = make_dirs(d->cache)) != 0)
		say(err, errsize, "%s: %s", d->cache, strerror(-e));
	if (e)
		return e;
	/* Each server in turn; the result is 0 at the first that gives a good file, -ENOENT
	 * when all that were asked had none, else the last error met. */
	int result = -EINVAL, last = 0, bad_url = 0;
	const char *p = d->urls;
	say(err, errsize, "no server in the list");
	while (*p) {
		while (*p == ' ' || *p == '\t')
			p++;
		size_t len = strcspn(p, " \t");
		if (!len)
			break;
		struct agent_http_url u;
		int r = agent_debuginfod_url(p, len, &u);
		if (r) {
			say(err, errsize, "%.*s: %s", (int)len, p,
			    r == -EPROTONOSUPPORT ? "only http:// servers are asked" : "not a URL");
			bad_url = r;
		} else {
			r = fetch_one(d, &u, hex, final, err, errsize, p, (int)len);
			if (r == 0)
				return 0;
			if (r != -ENOENT)
				last = r;
			result = -ENOENT;
		}
		p += len;
	}
	/* A URL that could not be asked matters only when no server could. */
	return last ? last : result == -EINVAL && bad_url ? bad_url : result;
}
