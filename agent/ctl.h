/* SPDX-License-Identifier: MIT */
/*
 * agent/ctl.h - the control sockets: jittd's (<run_dir>/jittd.sock) and each traced
 * process's (<run_dir>/jitt-<pid>.sock, served by its control thread). Unix stream
 * sockets, one request per connection:
 *
 *   request:  one line, "COMMAND[ ARG]\n", at most AGENT_CTL_LINE bytes
 *   reply:    "ok\n" followed by lines of text, or "error ENAME: what\n" (ENAME the errno's
 *             name: EPERM, EINVAL, EAGAIN, ...); then the server closes
 *
 * Commands: "status" (anyone), "trigger REASON" (a traced process: persist now). Who
 * asks comes from the kernel (SO_PEERCRED), never from the request: changes are allowed
 * to root, to the configured system user and to the socket owner's own uid.
 */
#ifndef JITT_AGENT_CTL_H
#define JITT_AGENT_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define AGENT_CTL_LINE 256
#define AGENT_CTL_REPLY 4096

struct agent_ctl_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
};

/*
 * Listen on a unix socket at path (a stale socket file left by a dead process is
 * replaced; a live one is -EADDRINUSE). The socket is non-blocking and close-on-exec,
 * mode 0666 (anyone may ask for status). Returns the fd or a negative errno.
 */
int agent_ctl_listen(const char *path);

/*
 * The server's answer to one request: write the reply text (without the leading "ok")
 * into reply and return 0, or return a negative errno and put the reason (without
 * "error: ") into reply (empty: strerror's text is sent). cmd is the request's first word,
 * arg the rest after one space ("" when there is none); both are printable text, since
 * requests with control characters are refused before the handler is called.
 */
typedef int (*agent_ctl_handler)(void *ctx, const struct agent_ctl_peer *peer, const char *cmd,
				 const char *arg, char *reply, size_t size);

/*
 * Accept one waiting connection on the listening fd, read its request (giving up after
 * 200 ms: a silent client cannot stall the server), call the handler, send the reply and
 * close. Returns 0, -EAGAIN when nobody was waiting, or a negative errno.
 */
int agent_ctl_serve_one(int listen_fd, agent_ctl_handler handler, void *ctx);

/*
 * Client side: send "cmd arg" to the socket at path and read the whole reply (with a
 * timeout of timeout_ms). Returns 0 when the reply began with "ok" (the rest, without that
 * line, is in reply), the server's -errno (EPERM, EINVAL, ...; its message in reply), or a
 * negative errno for the connection (-ENOENT: no such socket, -ECONNREFUSED: nobody
 * listening).
 */
int agent_ctl_request(const char *path, const char *cmd, const char *arg, char *reply,
		      size_t size, unsigned timeout_ms);

/* May this peer change anything: root, system_uid (-1: none), or the server's own uid. */
bool agent_ctl_may_change(const struct agent_ctl_peer *peer, int64_t system_uid);

#endif
