/* SPDX-License-Identifier: MIT */
/*
 * The control sockets of agent/ctl.h. Linked into jittd, the `jitt` command and libjitt
 * (which rides inside instrumented programs), so nothing here is instrumented and nothing
 * prints. Every wait has a deadline: the server gives a client 200 ms in all to send its
 * line, however it dribbles the bytes, and the client gives the server timeout_ms.
 */
#define _GNU_SOURCE
#include "agent/ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CTL __attribute__((no_instrument_function))

#define SERVE_TIMEOUT_MS 200
/* Waiting for a stale socket's former owner to answer takes no time: a dead socket refuses
 * at once, a live one accepts into its backlog. */
#define PROBE_TIMEOUT_MS 200

/* The errno names a reply may carry; anything else travels as "E<number>". */
static const struct {
	int err;
	const char *name;
} names[] = {
	{ EPERM, "EPERM" },	    { ENOENT, "ENOENT" },	{ EIO, "EIO" },
	{ E2BIG, "E2BIG" },	    { EAGAIN, "EAGAIN" },	{ ENOMEM, "ENOMEM" },
	{ EACCES, "EACCES" },	    { EBUSY, "EBUSY" },		{ EEXIST, "EEXIST" },
	{ EINVAL, "EINVAL" },	    { ENOSPC, "ENOSPC" },	{ ERANGE, "ERANGE" },
	{ ENOSYS, "ENOSYS" },	    { ENOTSUP, "ENOTSUP" },	{ EALREADY, "EALREADY" },
	{ ETIMEDOUT, "ETIMEDOUT" }, { ECANCELED, "ECANCELED" }, { EPROTO, "EPROTO" },
	{ EMSGSIZE, "EMSGSIZE" },   { ESRCH, "ESRCH" },		{ EDQUOT, "EDQUOT" },
};

CTL static const char *err_name(int err, char *buf, size_t size)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].err == err)
			return names[i].name;
	snprintf(buf, size, "E%d", err);
	return buf;
}

/* "EPERM" -> EPERM, "E123" -> 123; 0 for a name that is neither. */
CTL static int err_parse(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i].name) == n && !memcmp(names[i].name, s, n))
			return names[i].err;
	if (n < 2 || n > 5 || s[0] != 'E')
		return 0;
	int v = 0;
	for (size_t i = 1; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

CTL static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for events on fd until the deadline. 0 ready, -ETIMEDOUT, or -errno. */
CTL static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = { .fd = fd, .events = events };
		int r = poll(&p, 1, (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* Write all of buf to a non-blocking socket before the deadline. */
CTL static int send_all(int fd, const char *buf, size_t len, int64_t deadline)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return -errno;
		int e = wait_fd(fd, POLLOUT, deadline);
		if (e)
			return e;
	}
	return 0;
}

CTL static int fill_addr(struct sockaddr_un *a, const char *path)
{
	size_t n = strlen(path);
	if (n == 0)
		return -EINVAL;
	if (n >= sizeof(a->sun_path))
		return -ENAMETOOLONG;
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	memcpy(a->sun_path, path, n + 1);
	return 0;
}

/* Connect a non-blocking socket to a; a full backlog (EAGAIN on unix sockets) is retried
 * until the deadline. Returns the fd or -errno. */
CTL static int connect_to(const struct sockaddr_un *a, int64_t deadline)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (connect(fd, (const struct sockaddr *)a, sizeof(*a)) == 0)
			return fd;
		int e = errno;
		if (e == EINTR)
			continue;
		if (e != EAGAIN || now_ms() >= deadline) {
			close(fd);
			return e == EAGAIN ? -ETIMEDOUT : -e;
		}
		struct timespec ts = { 0, 10 * 1000000 };
		nanosleep(&ts, NULL);
	}
}

CTL int agent_ctl_listen(const char *path)
{
	struct sockaddr_un a;
	int e = fill_addr(&a, path);
	if (e)
		return e;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		e = -errno;
		if (e != -EADDRINUSE)
			goto fail;
		/* Something is there. Only a socket nobody answers on may be replaced: a live
		 * server keeps it, and a file that is not a socket is not ours to remove. */
		struct stat st;
		if (lstat(path, &st) != 0) {
			e = -errno;
			goto fail;
		}
		if (!S_ISSOCK(st.st_mode)) {
			e = -EEXIST;
			goto fail;
		}
		int probe = connect_to(&a, now_ms() + PROBE_TIMEOUT_MS);
		if (probe >= 0 || probe == -ETIMEDOUT) {
			if (probe >= 0)
				close(probe);
			e = -EADDRINUSE;
			goto fail;
		}
		if (probe != -ECONNREFUSED) {
			e = probe;
			goto fail;
		}
		if (unlink(path) != 0 && errno != ENOENT) {
			e = -errno;
			goto fail;
		}
		if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
			e = -errno;
			goto fail;
		}
	}
	/* Anyone may ask for status; who may change things is decided per request from the
	 * kernel's credentials. */
	if (chmod(path, 0666) != 0 || listen(fd, 16) != 0) {
		e = -errno;
		unlink(path);
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return e;
}

/* Read one request line within the deadline: 0 with the line (no newline) in buf, or
 * -ETIMEDOUT, -EMSGSIZE (no newline within AGENT_CTL_LINE bytes), -ECONNRESET. */
CTL static int read_line(int fd, char *buf, size_t size, int64_t deadline)
{
	size_t n = 0;
	for (;;) {
		ssize_t r = recv(fd, buf + n, size - 1 - n, 0);
		if (r > 0) {
			char *nl = memchr(buf + n, '\n', (size_t)r);
			n += (size_t)r;
			if (nl) {
				*nl = 0;
				return 0;
			}
			if (n == size - 1)
				return -EMSGSIZE;
			continue;
		}
		if (r == 0) { /* the client closed without a newline: take what came */
			buf[n] = 0;
			return n ? 0 : -ECONNRESET;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		int e = wait_fd(fd, POLLIN, deadline);
		if (e)
			return e;
	}
}

CTL static int reply_error(int fd, int err, const char *what, int64_t deadline)
{
	char out[AGENT_CTL_REPLY + 64], nb[16];
	size_t len = strnlen(what, AGENT_CTL_REPLY);
	while (len && what[len - 1] == '\n')
		len--;
	int n = snprintf(out, sizeof(out), "error %s: %.*s\n", err_name(err, nb, sizeof(nb)),
			 (int)len, what);
	return send_all(fd, out, (size_t)n < sizeof(out) ? (size_t)n : sizeof(out) - 1, deadline);
}

CTL int agent_ctl_serve_one(int listen_fd, agent_ctl_handler handler, void *ctx)
{
	int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		/* A client that gave up before we got to it is nobody waiting. */
		return e == EWOULDBLOCK || e == ECONNABORTED || e == EINTR ? -EAGAIN : -e;
	}
	int64_t deadline = now_ms() + SERVE_TIMEOUT_MS;
	struct agent_ctl_peer peer = { .pid = -1, .uid = (uid_t)-1, .gid = (gid_t)-1 };
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int e = 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred)) {
		/* Without the kernel's word on who asks, nobody gets anything. */
		e = errno ? -errno : -EPROTO;
		reply_error(fd, EACCES, "peer credentials unavailable", deadline);
		close(fd);
		return e;
	}
	peer.pid = cred.pid;
	peer.uid = cred.uid;
	peer.gid = cred.gid;

	char line[AGENT_CTL_LINE + 1];
	e = read_line(fd, line, sizeof(line), deadline);
	if (e == -EMSGSIZE) {
		reply_error(fd, EINVAL, "request longer than one line", deadline);
		close(fd);
		return 0;
	}
	if (e) {
		if (e == -ETIMEDOUT)
			reply_error(fd, ETIMEDOUT, "no request line in time", deadline);
		close(fd);
		return e == -ETIMEDOUT || e == -ECONNRESET ? 0 : e;
	}
	size_t n = strlen(line);
	if (n && line[n - 1] == '\r')
		line[--n] = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)line[i];
		if (ch < 0x20 || ch == 0x7f) {
			reply_error(fd, EINVAL, "control characters in request", deadline);
			close(fd);
			return 0;
		}
	}
	char *cmd = line, *arg = strchr(line, ' ');
	if (arg)
		*arg++ = 0;
	else
		arg = line + n; /* "": no argument */
	if (!*cmd) {
		reply_error(fd, EINVAL, "empty request", deadline);
		close(fd);
		return 0;
	}

	char reply[AGENT_CTL_REPLY];
	reply[0] = 0;
	e = handler(ctx, &peer, cmd, arg, reply, sizeof(reply));
	reply[sizeof(reply) - 1] = 0;
	if (e < 0) {
		reply_error(fd, -e, reply[0] ? reply : strerror(-e), deadline);
	} else {
		size_t rn = strlen(reply);
		if (send_all(fd, "ok\n", 3, deadline) == 0 && rn) {
			if (send_all(fd, reply, rn, deadline) == 0 && reply[rn - 1] != '\n')
				send_all(fd, "\n", 1, deadline);
		}
	}
	close(fd);
	return 0;
}

CTL int agent_ctl_request(const char *path, const char *cmd, const char *arg, char *reply,
			  size_t size, unsigned timeout_ms)
{
	if (size)
		reply[0] = 0;
	struct sockaddr_un a;
	int e = fill_addr(&a, path);
	if (e)
		return e;
	char req[AGENT_CTL_LINE + 2];
	int n = arg && *arg ? snprintf(req, sizeof(req), "%s %s\n", cmd, arg)
			    : snprintf(req, sizeof(req), "%s\n", cmd);
	if (!*cmd || n < 0 || n > AGENT_CTL_LINE || strchr(req, '\n') != req + n - 1)
		return -EINVAL;

	int64_t deadline = now_ms() + timeout_ms;
	int fd = connect_to(&a, deadline);
	if (fd < 0)
		return fd;
	e = send_all(fd, req, (size_t)n, deadline);
	if (e) {
		close(fd);
		return e;
	}
	shutdown(fd, SHUT_WR);

	/* The whole reply, up to its size limit; the rest of a longer one is dropped. */
	char buf[AGENT_CTL_REPLY + 128];
	size_t got = 0;
	for (;;) {
		ssize_t r = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (r > 0) {
			got += (size_t)r;
			if (got == sizeof(buf) - 1)
				break;
			continue;
		}
		if (r == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			e = -errno;
			break;
		}
		e = wait_fd(fd, POLLIN, deadline);
		if (e)
			break;
	}
	close(fd);
	if (e && !got)
		return e;
	buf[got] = 0;

	if (!strncmp(buf, "ok\n", 3) || !strcmp(buf, "ok")) {
		if (size)
			snprintf(reply, size, "%s", buf + (got > 3 ? 3 : got));
		return 0;
	}
	if (!strncmp(buf, "error ", 6)) {
		const char *name = buf + 6, *colon = strchr(name, ':');
		int err = colon ? err_parse(name, (size_t)(colon - name)) : 0;
		if (err > 0) {
			const char *what = colon + 1 + (colon[1] == ' ');
			size_t wn = strcspn(what, "\n");
			if (size)
				snprintf(reply, size, "%.*s", (int)wn, what);
			return -err;
		}
	}
	if (size)
		snprintf(reply, size, "unexpected reply: %.60s", buf);
	return e ? e : -EPROTO;
}

CTL bool agent_ctl_may_change(const struct agent_ctl_peer *peer, int64_t system_uid)
{
	return peer->uid == 0 || (system_uid >= 0 && (int64_t)peer->uid == system_uid) ||
	       peer->uid == geteuid();
}
