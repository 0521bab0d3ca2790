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
 * Requests on one server are served side by side, each with its own deadline, and none
 * can stall another or the server's owner (see struct agent_ctl_server).
 *
 * Commands: "status" (anyone), "trigger REASON" (a traced process: persist now). Who
 * asks comes from the kernel (SO_PEERCRED), never from the request: changes are allowed
 * to root, to the configured system user and to the socket owner's own uid.
 */
#ifndef JITT_AGENT_CTL_H
#define JITT_AGENT_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <poll.h>
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
 * The same for a caller that holds the lock making it the path's only server (jittd's
 * jittd.lock): a socket file there is a dead or dying server's (one killed with -9 still
 * holds its socket, and accepts connections into its backlog, until its last thread has
 * exited), and is replaced without a probe. A path that is not a socket is still refused.
 */
int agent_ctl_listen_owned(const char *path);

/*
 * Remove the sockets of traced processes that are gone (killed with -9, they leave
 * "<run_dir>/jitt-<pid>.sock" behind). Only an entry named exactly jitt-<digits>.sock that
 * is a socket itself (never through a symlink; any other kind of file is kept), owned by
 * the caller's euid (by anyone when the caller is root), whose pid names no process
 * (kill(pid, 0) is ESRCH), and on which a connect is refused: nobody listens. A reused pid
 * is alive, and a server in another pid namespace answers, so a live process's socket is
 * never removed. Looks at AGENT_CTL_SWEEP_MAX entries at most. Returns how many were
 * removed, or -errno when run_dir cannot be read.
 */
#define AGENT_CTL_SWEEP_MAX 4096
int agent_ctl_remove_stale(const char *run_dir);

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
 * The request parser, on the bytes received so far (buf, len; any bytes, none trusted).
 * Returns 0 when a whole line is there: its command word, NUL, and its argument (the rest
 * after one space, "" when there is none), NUL, are copied into cmd (cmd_size must hold the
 * line: AGENT_CTL_LINE + 1 always does, else -ENOBUFS) and *arg points at the argument
 * inside cmd. A "\r" before the "\n" is dropped; bytes after the "\n" are not looked at.
 * Returns -EAGAIN when more bytes are needed, -EMSGSIZE when no newline came within
 * AGENT_CTL_LINE bytes, and -EINVAL, as soon as it is seen, for a NUL or any other control
 * byte (below 0x20 or DEL; bytes from 0x80 up pass, to be escaped where they are shown) or
 * an empty command. Pure: no system call, no allocation.
 */
int agent_ctl_parse_request(const char *buf, size_t len, char *cmd, size_t cmd_size,
			    const char **arg);

/*
 * The server: a listening socket and a table of clients, driven by its owner's poll loop
 * and never blocking it (a hostile client: one silent client used to hold the hang
 * detector and jittd for 200 ms each). The owner asks for the pollfds and the next
 * deadline, polls, and calls agent_ctl_server_step() with what poll() said:
 *
 *	n = agent_ctl_server_pollfds(&s, pfd, AGENT_CTL_POLLFDS);
 *	poll(pfd, n, timeout no later than agent_ctl_server_deadline(&s));
 *	agent_ctl_server_step(&s, pfd, n, agent_ctl_now_ms());
 *
 * The caps, and why (docs/security.md):
 *   AGENT_CTL_CLIENTS   16 connections at once. A request takes microseconds once its line
 *                       is in, so 16 is room for 16 users asking together; the memory is
 *                       the table's (about 70 KiB, in the owner's .bss).
 *   AGENT_CTL_PER_UID   4 of them per peer uid (root's and the server's own included): one
 *                       user cannot take the table; a 5th connection of a uid gets
 *                       "error EAGAIN: too many connections" (when that can be sent without
 *                       waiting) and is closed.
 *   When the table is full all the same (4 users or more), the client that has waited
 *   longest for its request is dropped for the newcomer ("error EAGAIN: server busy").
 *   AGENT_CTL_DEADLINE_MS  200 ms from accept to a whole request line, and 200 ms again
 *                       for the reply to be taken: a local client sends its line at once
 *                       (agent_ctl_request writes it in one send), so 200 ms is slack for
 *                       a loaded board, and a silent client holds its slot no longer.
 *                       A client late with its line gets "error ETIMEDOUT: ...".
 * A request over AGENT_CTL_LINE bytes gets "error EMSGSIZE: ...", a request with a control
 * byte "error EINVAL: ..." (the request quoted, escaped). After every reply the server shuts
 * its side for writing and reads what the client still sends until it closes (or the
 * deadline), so a client's unread bytes never turn the close into a reset.
 */
#define AGENT_CTL_CLIENTS     16
#define AGENT_CTL_PER_UID     4
#define AGENT_CTL_DEADLINE_MS 200
/* pollfds the server may ask for: the listening socket and one per client. */
#define AGENT_CTL_POLLFDS (AGENT_CTL_CLIENTS + 1)

/* A reply's room: "ok\n" or "error ENAME: ", the handler's text and a newline. */
#define AGENT_CTL_OUT (AGENT_CTL_REPLY + 64)

struct agent_ctl_client {
	int fd;		  /* -1: a free slot */
	int state;	  /* ctl.c's CLIENT_*: reading the request, writing the reply, draining */
	int64_t since_ms; /* accepted (CLOCK_MONOTONIC): whom to drop when the table is full */
	int64_t deadline_ms; /* of the request line, then of the reply */
	struct agent_ctl_peer peer;
	size_t in_len, out_len, out_at;
	char *in;  /* the request so far, AGENT_CTL_LINE + 1 (a "\n" put at the client's EOF) */
	char *out; /* the reply, AGENT_CTL_OUT */
};

/* What the server did, for the owner's status. */
struct agent_ctl_stats {
	uint64_t served;    /* requests answered (ok or the handler's error) */
	uint64_t refused;   /* malformed requests: too long, control bytes, empty */
	uint64_t timed_out; /* clients that sent no whole line in time, or took no reply */
	uint64_t over_uid;  /* connections refused by the per-uid cap */
	uint64_t dropped;   /* clients dropped for a newcomer with the table full */
};

struct agent_ctl_server {
	int listen_fd;
	agent_ctl_handler handler;
	void *ctx;
	int64_t accept_paused_until_ms; /* after EMFILE and the like: 0 none */
	int deadline_ms; /* AGENT_CTL_DEADLINE_MS (tests lengthen it to keep silent clients) */
	struct agent_ctl_stats st;
	struct agent_ctl_client c[AGENT_CTL_CLIENTS];
	/* The buffers apart from the table: a poll loop walks the table, and an idle app
	 * should not keep a page of every slot resident for it. */
	char in[AGENT_CTL_CLIENTS][AGENT_CTL_LINE + 1];
	char out[AGENT_CTL_CLIENTS][AGENT_CTL_OUT];
};

/* CLOCK_MONOTONIC in ms: the server's clock. */
int64_t agent_ctl_now_ms(void);

/* An empty table serving listen_fd (from agent_ctl_listen) with handler. The server points
 * into itself: it stays where it was initialised (not copied). */
void agent_ctl_server_init(struct agent_ctl_server *s, int listen_fd, agent_ctl_handler handler,
			   void *ctx);

/* Fills pfd (room for max, AGENT_CTL_POLLFDS is enough) with what to poll for; returns how
 * many. Clients beyond max are not polled this round but still meet their deadline. */
int agent_ctl_server_pollfds(const struct agent_ctl_server *s, struct pollfd *pfd, int max);

/* The earliest deadline (CLOCK_MONOTONIC ms) at which the server has work without any
 * event, or INT64_MAX when there is none. */
int64_t agent_ctl_server_deadline(const struct agent_ctl_server *s);

/*
 * After poll(): pfd and n as agent_ctl_server_pollfds filled them (revents set), now_ms
 * the time deadlines are judged by (the caller's, so that it can order the server's
 * timeouts against its own). Accepts, reads, calls the handler for each whole request,
 * writes replies and closes what is done or past its deadline; never waits. Returns the
 * number of requests answered, or a negative errno when accepting failed for want of
 * descriptors or memory (accepting then pauses for 100 ms; the owner may log it).
 */
int agent_ctl_server_step(struct agent_ctl_server *s, const struct pollfd *pfd, int n,
			  int64_t now_ms);

/* Closes every client (not the listening socket). */
void agent_ctl_server_close(struct agent_ctl_server *s);

/*
 * Client side: send "cmd arg" to the socket at path and read the whole reply (with a
 * timeout of timeout_ms). Returns 0 when the reply began with "ok" (the rest, without that
 * line, is in reply), the server's -errno (EPERM, EINVAL, ...; its message in reply), or a
 * negative errno for the connection (-ENOENT: no such socket, -ECONNREFUSED: nobody
 * listening).
 */
int agent_ctl_request(const char *path, const char *cmd, const char *arg, char *reply,
		      size_t size, unsigned timeout_ms);
/* The same, to a server that must be process `server` (> 0): -ESRCH, and who serves it in
 * reply, when another process listens there (a socket made in that pid's name). */
int agent_ctl_request_pid(const char *path, pid_t server, const char *cmd, const char *arg,
			  char *reply, size_t size, unsigned timeout_ms);

/* May this peer change anything: root, system_uid (-1: none), or the server's own uid. */
bool agent_ctl_may_change(const struct agent_ctl_peer *peer, int64_t system_uid);

#endif
