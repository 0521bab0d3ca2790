/* SPDX-License-Identifier: MIT */
/*
 * The control sockets of agent/ctl.h. Linked into jittd, the `jitt` command and libjitt
 * (which rides inside instrumented programs), so nothing here is instrumented and nothing
 * prints. The server never waits (agent_ctl_server_step: every client has its own deadline,
 * 200 ms in all to send its line however it dribbles the bytes, and 200 ms to take the
 * reply); the client gives the server timeout_ms.
 */
#define _GNU_SOURCE
#include "agent/ctl.h"
#include "agent/escape.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CTL __attribute__((no_instrument_function))

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

/* probe: whether a socket file already there is probed (kept if it answers) or, for a
 * caller that knows no live server can be there, replaced at once. */
CTL static int listen_at(const char *path, bool probe)
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
		int answer = probe ? connect_to(&a, now_ms() + PROBE_TIMEOUT_MS) : -ECONNREFUSED;
		if (answer >= 0 || answer == -ETIMEDOUT) {
			if (answer >= 0)
				close(answer);
			e = -EADDRINUSE;
			goto fail;
		}
		if (answer != -ECONNREFUSED) {
			e = answer;
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

CTL int agent_ctl_listen(const char *path)
{
	return listen_at(path, true);
}

CTL int agent_ctl_listen_owned(const char *path)
{
	return listen_at(path, false);
}

/* "jitt-<pid>.sock", pid a positive int, nothing else: *pid. */
CTL static bool socket_name(const char *name, pid_t *pid)
{
	if (strncmp(name, "jitt-", 5) || name[5] == '0') /* as agent_config_socket writes it */
		return false;
	const char *p = name + 5;
	long long v = 0;
	int digits = 0;
	for (; *p >= '0' && *p <= '9' && digits < 10; p++, digits++)
		v = v * 10 + (*p - '0');
	if (!digits || v <= 0 || v > INT_MAX || strcmp(p, ".sock"))
		return false;
	*pid = (pid_t)v;
	return true;
}

/* Does connecting to it fail with ECONNREFUSED (a socket nobody listens on)? One try that
 * never waits: success, a full backlog (EAGAIN) or any other error means keep it. */
CTL static bool nobody_listens(const char *dir, const char *name)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
	struct sockaddr_un a;
	int n = snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= sizeof(path) || fill_addr(&a, path))
		return false;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	int r = connect(fd, (struct sockaddr *)&a, sizeof(a));
	bool refused = r != 0 && errno == ECONNREFUSED;
	close(fd);
	return refused;
}

CTL int agent_ctl_remove_stale(const char *run_dir)
{
	int dfd = open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	DIR *d = fdopendir(dfd);
	if (!d) {
		int e = -errno;
		close(dfd);
		return e;
	}
	uid_t me = geteuid();
	int removed = 0, seen = 0;
	struct dirent *ent;
	while (seen++ < AGENT_CTL_SWEEP_MAX && (ent = readdir(d))) {
		pid_t pid;
		struct stat st, again;
		if (!socket_name(ent->d_name, &pid) ||
		    fstatat(dfd, ent->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISSOCK(st.st_mode) || (me != 0 && st.st_uid != me))
			continue;
		/* Alive (EPERM: another user's) or unknown: keep. The pid alone is not enough
		 * either way: a process of another pid namespace may hold it, and it answers. */
		if (kill(pid, 0) == 0 || errno != ESRCH || !nobody_listens(run_dir, ent->d_name))
			continue;
		/* The same file as the one looked at: a process that just replaced it (its own
		 * start, agent_ctl_listen) keeps its new one. */
		if (fstatat(dfd, ent->d_name, &again, AT_SYMLINK_NOFOLLOW) != 0 ||
		    again.st_ino != st.st_ino || again.st_dev != st.st_dev)
			continue;
		if (unlinkat(dfd, ent->d_name, 0) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}

/* ---- the request parser ---- */

CTL int agent_ctl_parse_request(const char *buf, size_t len, char *cmd, size_t cmd_size,
				const char **arg)
{
	size_t n = len < AGENT_CTL_LINE ? len : AGENT_CTL_LINE, end = n;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)buf[i];
		if (ch == '\n') {
			end = i;
			break;
		}
		/* A CR only as the first half of CRLF; one that ends what is looked at may still
		 * be (or, at the line's last byte, makes it too long whatever follows: the byte
		 * after the limit is never what decides). Anything else below 0x20, and DEL, is
		 * refused at once: a NUL would cut the line short where C strings read it
		 * ("status\0scan" read as "status"), and no command needs a control byte. */
		if (ch == '\r' && (i + 1 == n || buf[i + 1] == '\n'))
			continue;
		if (ch < 0x20 || ch == 0x7f)
			return -EINVAL;
	}
	if (end == n)
		return len >= AGENT_CTL_LINE ? -EMSGSIZE : -EAGAIN;
	size_t ln = end;
	if (ln && buf[ln - 1] == '\r')
		ln--;
	if (ln == 0 || buf[0] == ' ')
		return -EINVAL; /* no command */
	if (ln + 1 > cmd_size)
		return -ENOBUFS;
	memcpy(cmd, buf, ln);
	cmd[ln] = 0;
	char *sp = memchr(cmd, ' ', ln);
	if (sp) {
		*sp = 0;
		*arg = sp + 1;
	} else {
		*arg = cmd + ln;
	}
	return 0;
}

/* ---- the server ---- */

enum { CLIENT_READ, CLIENT_WRITE, CLIENT_DRAIN };

/* Connections accepted per step: a flood of connects costs the owner one step's worth,
 * then its own work (the hang detector) comes again. */
#define ACCEPT_BURST	(2 * AGENT_CTL_CLIENTS)
#define ACCEPT_PAUSE_MS 100

CTL int64_t agent_ctl_now_ms(void)
{
	return now_ms();
}

CTL void agent_ctl_server_init(struct agent_ctl_server *s, int listen_fd, agent_ctl_handler handler,
			       void *ctx)
{
	/* Not a memset of the whole: the buffers stay untouched until a client needs them. */
	memset(s, 0, offsetof(struct agent_ctl_server, in));
	s->listen_fd = listen_fd;
	s->handler = handler;
	s->ctx = ctx;
	s->deadline_ms = AGENT_CTL_DEADLINE_MS;
	for (int i = 0; i < AGENT_CTL_CLIENTS; i++) {
		s->c[i].fd = -1;
		s->c[i].in = s->in[i];
		s->c[i].out = s->out[i];
	}
}

CTL int agent_ctl_server_pollfds(const struct agent_ctl_server *s, struct pollfd *pfd, int max)
{
	int n = 0;
	if (n < max)
		/* While accepting is paused, a negative fd keeps the slot but is not polled. */
		pfd[n++] = (struct pollfd){ .fd = s->accept_paused_until_ms ? -1 : s->listen_fd,
					    .events = POLLIN };
	for (int i = 0; i < AGENT_CTL_CLIENTS && n < max; i++) {
		const struct agent_ctl_client *c = &s->c[i];
		if (c->fd >= 0)
			pfd[n++] = (struct pollfd){ .fd = c->fd,
						    .events = c->state == CLIENT_WRITE ? POLLOUT
										       : POLLIN };
	}
	return n;
}

CTL int64_t agent_ctl_server_deadline(const struct agent_ctl_server *s)
{
	int64_t d = s->accept_paused_until_ms ? s->accept_paused_until_ms : INT64_MAX;
	for (int i = 0; i < AGENT_CTL_CLIENTS; i++)
		if (s->c[i].fd >= 0 && s->c[i].deadline_ms < d)
			d = s->c[i].deadline_ms;
	return d;
}

/* "error ENAME: what\n" into out; its length. */
CTL static size_t format_error(char *out, size_t size, int err, const char *what)
{
	char nb[16];
	size_t len = strnlen(what, AGENT_CTL_REPLY);
	while (len && what[len - 1] == '\n')
		len--;
	int n = snprintf(out, size, "error %s: %.*s\n", err_name(err, nb, sizeof(nb)), (int)len,
			 what);
	return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

/* Read and throw away what the client sent that we will not read: closing a unix socket
 * with unread bytes makes the peer's next read fail with ECONNRESET instead of seeing the
 * reply and the end. A bounded amount, without waiting. */
CTL static void discard_input(int fd)
{
	char buf[1024];
	for (int i = 0; i < 4; i++) {
		ssize_t r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r <= 0 && !(r < 0 && errno == EINTR))
			return;
	}
}

/* A connection refused at the door: one error line if the socket takes it now, then
 * closed. Never waits. */
CTL static void refuse(int fd, int err, const char *what)
{
	char out[128];
	size_t n = format_error(out, sizeof(out), err, what);
	(void)!send(fd, out, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	discard_input(fd);
	shutdown(fd, SHUT_WR);
	discard_input(fd);
	close(fd);
}

CTL static void client_close(struct agent_ctl_client *c)
{
	close(c->fd);
	c->fd = -1;
}

/* The bytes of a refused request as text for its error line: NULs as \x00, everything
 * else through agent_escape (agent/escape.h), so the reply (and a log line made of it)
 * holds no raw byte of the client's. */
CTL static void quote_request(const char *in, size_t len, char *out, size_t size)
{
	char seg[AGENT_CTL_LINE + 1];
	size_t at = 0;
	out[0] = 0;
	for (size_t i = 0; i < len && at + 8 < size;) {
		size_t k = strnlen(in + i, len - i);
		memcpy(seg, in + i, k);
		seg[k] = 0;
		agent_escape(out + at, size - at, seg);
		at += strlen(out + at);
		i += k;
		if (i < len && at + 8 < size) {
			memcpy(out + at, "\\x00", 5);
			at += 4;
			i++;
		}
	}
}

/* Put the reply (the handler's result e and its text) into c->out and start writing. */
CTL static void set_reply(struct agent_ctl_client *c, int e, const char *text, int deadline_ms)
{
	if (e < 0) {
		c->out_len = format_error(c->out, AGENT_CTL_OUT, -e, text[0] ? text : strerror(-e));
	} else {
		size_t rn = strnlen(text, AGENT_CTL_REPLY - 1);
		memcpy(c->out, "ok\n", 3);
		memcpy(c->out + 3, text, rn);
		c->out_len = 3 + rn;
		if (rn && text[rn - 1] != '\n')
			c->out[c->out_len++] = '\n';
	}
	c->out_at = 0;
	c->state = CLIENT_WRITE;
	c->deadline_ms = now_ms() + deadline_ms;
}

/* A whole request, or the reason there is none: the handler's reply, or the error. */
CTL static void answer(struct agent_ctl_server *s, struct agent_ctl_client *c, int parsed,
		       char *cmd, const char *arg)
{
	char text[AGENT_CTL_REPLY];
	text[0] = 0;
	if (parsed == 0) {
		int e = s->handler(s->ctx, &c->peer, cmd, arg, text, sizeof(text));
		text[sizeof(text) - 1] = 0;
		s->st.served++;
		set_reply(c, e < 0 ? e : 0, text, s->deadline_ms);
		return;
	}
	s->st.refused++;
	if (parsed == -EMSGSIZE) {
		snprintf(text, sizeof(text), "request longer than %d bytes", AGENT_CTL_LINE);
		set_reply(c, -EMSGSIZE, text, s->deadline_ms);
		return;
	}
	size_t n = 0;
	while (n < c->in_len && c->in[n] != '\n')
		n++;
	int control = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)c->in[i];
		control |= (ch < 0x20 || ch == 0x7f) && !(ch == '\r' && i + 1 == n);
	}
	if (!control) {
		set_reply(c, -EINVAL, "empty request", s->deadline_ms);
		return;
	}
	char q[4 * AGENT_CTL_LINE + 8];
	quote_request(c->in, n, q, sizeof(q));
	snprintf(text, sizeof(text), "control characters in request \"%s\"", q);
	set_reply(c, -EINVAL, text, s->deadline_ms);
}

/* Read what the client sent; answer once there is a whole line (or there never will be). */
CTL static void client_read(struct agent_ctl_server *s, struct agent_ctl_client *c)
{
	char cmd[AGENT_CTL_LINE + 1];
	const char *arg = NULL;
	for (;;) {
		ssize_t r = recv(c->fd, c->in + c->in_len, AGENT_CTL_LINE - c->in_len, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (r < 0) {
			client_close(c);
			return;
		}
		int e;
		if (r == 0) {
			/* The client closed its side without a newline: what came is the request
			 * (in_len < AGENT_CTL_LINE here, or the parse had said EMSGSIZE). A client
			 * that sent nothing (agent_ctl_listen's probe) gets nothing. */
			if (!c->in_len) {
				client_close(c);
				return;
			}
			c->in[c->in_len] = '\n';
			e = agent_ctl_parse_request(c->in, c->in_len + 1, cmd, sizeof(cmd), &arg);
		} else {
			c->in_len += (size_t)r;
			e = agent_ctl_parse_request(c->in, c->in_len, cmd, sizeof(cmd), &arg);
			if (e == -EAGAIN)
				continue;
		}
		answer(s, c, e, cmd, arg);
		return;
	}
}

/* Write what the socket takes of the reply; when it is all out, the end of it. */
CTL static void client_write(struct agent_ctl_client *c)
{
	while (c->out_at < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_at, c->out_len - c->out_at,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			c->out_at += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		client_close(c); /* the client went away */
		return;
	}
	/* One request per connection: our side is done. Reading on until the client closes
	 * makes its close, not ours, the last word (no reset over bytes it sent after the
	 * line), within the same deadline. */
	shutdown(c->fd, SHUT_WR);
	c->state = CLIENT_DRAIN;
}

CTL static void client_drain(struct agent_ctl_client *c)
{
	char buf[1024];
	ssize_t r = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		client_close(c);
}

CTL static void client_io(struct agent_ctl_server *s, struct agent_ctl_client *c)
{
	if (c->state == CLIENT_READ)
		client_read(s, c);
	if (c->fd >= 0 && c->state == CLIENT_WRITE)
		client_write(c);
	if (c->fd >= 0 && c->state == CLIENT_DRAIN)
		client_drain(c);
}

/* A slot for a newcomer: a free one, else the client that has waited longest for its
 * request line (else the oldest), which is told and dropped. */
CTL static struct agent_ctl_client *take_slot(struct agent_ctl_server *s)
{
	struct agent_ctl_client *oldest = NULL, *oldest_reading = NULL;
	for (int i = 0; i < AGENT_CTL_CLIENTS; i++) {
		struct agent_ctl_client *c = &s->c[i];
		if (c->fd < 0)
			return c;
		if (!oldest || c->since_ms < oldest->since_ms)
			oldest = c;
		if (c->state == CLIENT_READ &&
		    (!oldest_reading || c->since_ms < oldest_reading->since_ms))
			oldest_reading = c;
	}
	struct agent_ctl_client *victim = oldest_reading ? oldest_reading : oldest;
	refuse(victim->fd, EAGAIN, "server busy");
	victim->fd = -1;
	s->st.dropped++;
	return victim;
}

/* Take the connections waiting on the listening socket. */
CTL static int accept_clients(struct agent_ctl_server *s)
{
	for (int k = 0; k < ACCEPT_BURST; k++) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			int e = errno;
			if (e == EINTR || e == ECONNABORTED)
				continue; /* a client that gave up before we got to it */
			if (e == EAGAIN || e == EWOULDBLOCK)
				return 0;
			if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
				/* The listening socket stays readable: without a pause the owner
				 * would spin. The waiting clients keep their place in the backlog.
				 */
				s->accept_paused_until_ms = now_ms() + ACCEPT_PAUSE_MS;
			}
			return -e;
		}
		struct ucred cred = { .pid = 0 }; /* what the reply names if the kernel says nothing */
		socklen_t len = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
		    len != sizeof(cred)) {
			/* Without the kernel's word on who asks, nobody gets anything. */
			refuse(fd, EACCES, "peer credentials unavailable");
			continue;
		}
		int same = 0;
		for (int i = 0; i < AGENT_CTL_CLIENTS; i++)
			same += s->c[i].fd >= 0 && s->c[i].peer.uid == cred.uid;
		if (same >= AGENT_CTL_PER_UID) {
			s->st.over_uid++;
			refuse(fd, EAGAIN, "too many connections");
			continue;
		}
		struct agent_ctl_client *c = take_slot(s);
		c->fd = fd;
		c->state = CLIENT_READ;
		c->since_ms = now_ms();
		c->deadline_ms = c->since_ms + s->deadline_ms;
		c->peer = (struct agent_ctl_peer){ .pid = cred.pid,
						   .uid = cred.uid,
						   .gid = cred.gid };
		c->in_len = c->out_len = c->out_at = 0;
		/* A client usually sent its line before we accepted: answer it now. */
		client_io(s, c);
	}
	return 0;
}

CTL int agent_ctl_server_step(struct agent_ctl_server *s, const struct pollfd *pfd, int n,
			      int64_t now)
{
	uint64_t served = s->st.served + s->st.refused;
	for (int i = 0; i < AGENT_CTL_CLIENTS; i++) {
		struct agent_ctl_client *c = &s->c[i];
		if (c->fd < 0)
			continue;
		for (int k = 0; k < n; k++) {
			if (pfd[k].fd == c->fd) {
				if (pfd[k].revents)
					client_io(s, c);
				break;
			}
		}
	}
	int e = 0;
	if (s->accept_paused_until_ms && now >= s->accept_paused_until_ms)
		s->accept_paused_until_ms = 0;
	for (int k = 0; k < n; k++)
		if (pfd[k].fd == s->listen_fd && s->listen_fd >= 0 && pfd[k].revents &&
		    !s->accept_paused_until_ms)
			e = accept_clients(s);
	/* Judged by the caller's clock: a client accepted in this step cannot be past due. */
	for (int i = 0; i < AGENT_CTL_CLIENTS; i++) {
		struct agent_ctl_client *c = &s->c[i];
		if (c->fd < 0 || now < c->deadline_ms)
			continue;
		s->st.timed_out++;
		if (c->state == CLIENT_READ) {
			refuse(c->fd, ETIMEDOUT, "no request line in time");
			c->fd = -1;
		} else {
			client_close(c);
		}
	}
	return e ? e : (int)(s->st.served + s->st.refused - served);
}

CTL void agent_ctl_server_close(struct agent_ctl_server *s)
{
	for (int i = 0; i < AGENT_CTL_CLIENTS; i++)
		if (s->c[i].fd >= 0)
			client_close(&s->c[i]);
}

CTL int agent_ctl_request(const char *path, const char *cmd, const char *arg, char *reply,
			  size_t size, unsigned timeout_ms)
{
	return agent_ctl_request_pid(path, 0, cmd, arg, reply, size, timeout_ms);
}

CTL int agent_ctl_request_pid(const char *path, pid_t server, const char *cmd, const char *arg,
			      char *reply, size_t size, unsigned timeout_ms)
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
	/* The kernel's record of who listens (the process that called listen()), asked before
	 * a byte is sent: anyone may make jitt-<pid>.sock in the run folder before that pid
	 * exists, and the request is not for them. */
	if (server > 0) {
		struct ucred cred = { .pid = 0 }; /* what the reply names if the kernel says nothing */
		socklen_t len = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid != server) {
			if (size)
				snprintf(reply, size, "%s is served by process %d, not %d", path,
					 (int)cred.pid, (int)server);
			close(fd);
			return -ESRCH;
		}
	}
	/* A server that refuses before reading (a uid over its cap) answers and closes at
	 * once: the send may then fail, but its answer is there to be read. */
	int sent = send_all(fd, req, (size_t)n, deadline);
	if (sent && sent != -EPIPE && sent != -ECONNRESET) {
		close(fd);
		return sent;
	}
	if (!sent)
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
	if (!got && (e || sent))
		return e ? e : sent;
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
