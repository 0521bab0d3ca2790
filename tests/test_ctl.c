/* SPDX-License-Identifier: MIT */
/*
 * The control sockets (agent/ctl.h): a request and its reply in both shapes, who asks as
 * the kernel says (SO_PEERCRED), a silent or garbled client cannot stall the server, stale
 * socket files are replaced and live ones kept, and the client's errors. The server runs in
 * a child process. Where unix sockets or SO_PEERCRED do not work (some qemu-user builds),
 * each test says so and checks nothing.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "agent/ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *sock_path(const char *name)
{
	static char path[256];
	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	return path;
}

/* Do unix stream sockets and SO_PEERCRED work here? Says why not when they do not. */
static int sockets_work(void)
{
	static int state; /* 0 unknown, 1 yes, -1 no */
	if (state)
		return state > 0;
	const char *path = sock_path("probe.sock");
	const char *why = NULL;
	int l = agent_ctl_listen(path), c = -1, a = -1;
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (l < 0)
		why = "listen";
	else if ((c = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 ||
		 connect(c, (struct sockaddr *)&addr, sizeof(addr)) != 0)
		why = "connect";
	else if (poll(&(struct pollfd){ .fd = l, .events = POLLIN }, 1, 2000) != 1 ||
		 (a = accept(l, NULL, NULL)) < 0)
		why = "accept";
	else if (getsockopt(a, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred) ||
		 cred.pid != getpid() || cred.uid != geteuid())
		why = "SO_PEERCRED";
	if (why)
		printf("    skipped: unix sockets do not work here (%s: %s); nothing checked\n",
		       why, strerror(errno));
	close(a);
	close(c);
	close(l);
	unlink(path);
	state = why ? -1 : 1;
	return state > 0;
}

static int handler(void *ctx, const struct agent_ctl_peer *peer, const char *cmd, const char *arg,
		   char *reply, size_t size)
{
	(void)ctx;
	if (!strcmp(cmd, "status")) {
		snprintf(reply, size, "pid %d uid %u", (int)peer->pid, (unsigned)peer->uid);
		return 0;
	}
	if (!strcmp(cmd, "echo")) {
		snprintf(reply, size, "[%s]\n", arg);
		return 0;
	}
	if (!strcmp(cmd, "quiet"))
		return 0;
	if (!strcmp(cmd, "fail")) {
		snprintf(reply, size, "not for you");
		return -EPERM;
	}
	if (!strcmp(cmd, "nomsg"))
		return -ENOSPC;
	if (!strcmp(cmd, "odd"))
		return -EHOSTDOWN; /* no name in the table: travels as a number */
	if (!strcmp(cmd, "big")) {
		memset(reply, 'x', size - 1);
		reply[size - 1] = 0;
		return 0;
	}
	snprintf(reply, size, "unknown command");
	return -EINVAL;
}

/* A child serving `count` requests on a socket listening at path; its pid. */
static pid_t start_server(const char *path, int count)
{
	int l = agent_ctl_listen(path);
	CHECK(l >= 0);
	if (l < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		alarm(20);
		for (int served = 0; served < count;) {
			poll(&(struct pollfd){ .fd = l, .events = POLLIN }, 1, -1);
			int e = agent_ctl_serve_one(l, handler, NULL);
			if (e == 0)
				served++;
			else if (e != -EAGAIN)
				_exit(3);
		}
		_exit(0);
	}
	close(l);
	return pid;
}

static void stop_server(pid_t pid, const char *path)
{
	int status = 0;
	for (int i = 0; i < 500 && waitpid(pid, &status, WNOHANG) == 0; i++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	if (waitpid(pid, &status, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		test_fail(__FILE__, __LINE__, "the server did not serve every request");
	} else {
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	unlink(path);
}

/* A raw client: connect, send `req` (len bytes), read the reply until EOF. */
static void raw(const char *path, const char *req, size_t len, char *out, size_t size)
{
	out[0] = 0;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (!CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)) {
		close(fd);
		return;
	}
	if (len)
		CHECK(send(fd, req, len, MSG_NOSIGNAL) == (ssize_t)len);
	shutdown(fd, SHUT_WR); /* all of the request was sent */
	size_t got = 0;
	ssize_t n;
	while (got < size - 1 && (n = recv(fd, out + got, size - 1 - got, 0)) > 0)
		got += (size_t)n;
	out[got] = 0;
	close(fd);
}

TEST(ctl_request_and_reply)
{
	if (!sockets_work())
		return;
	const char *path = sock_path("a.sock");
	pid_t srv = start_server(path, 9);
	char reply[AGENT_CTL_REPLY], want[64];

	/* Who asked comes from the kernel. */
	CHECK_EQ_INT(agent_ctl_request(path, "status", NULL, reply, sizeof(reply), 5000), 0);
	snprintf(want, sizeof(want), "pid %d uid %u\n", (int)getpid(), (unsigned)geteuid());
	CHECK_STR(reply, want);
	CHECK_EQ_INT(agent_ctl_request(path, "echo", "a b  c", reply, sizeof(reply), 5000), 0);
	CHECK_STR(reply, "[a b  c]\n");
	CHECK_EQ_INT(agent_ctl_request(path, "echo", NULL, reply, sizeof(reply), 5000), 0);
	CHECK_STR(reply, "[]\n");
	CHECK_EQ_INT(agent_ctl_request(path, "quiet", "", reply, sizeof(reply), 5000), 0);
	CHECK_STR(reply, "");
	/* Errors by name, with the server's reason. */
	CHECK_EQ_INT(agent_ctl_request(path, "fail", NULL, reply, sizeof(reply), 5000), -EPERM);
	CHECK_STR(reply, "not for you");
	CHECK_EQ_INT(agent_ctl_request(path, "nomsg", NULL, reply, sizeof(reply), 5000), -ENOSPC);
	CHECK_STR(reply, strerror(ENOSPC));
	CHECK_EQ_INT(agent_ctl_request(path, "odd", NULL, reply, sizeof(reply), 5000), -EHOSTDOWN);
	CHECK_EQ_INT(agent_ctl_request(path, "what", NULL, reply, sizeof(reply), 5000), -EINVAL);
	CHECK_STR(reply, "unknown command");
	/* A reply larger than the caller's buffer is cut to it. */
	char small[16];
	CHECK_EQ_INT(agent_ctl_request(path, "big", NULL, small, sizeof(small), 5000), 0);
	CHECK_STR(small, "xxxxxxxxxxxxxxx");
	stop_server(srv, path);
}

TEST(ctl_raw_wire_format)
{
	if (!sockets_work())
		return;
	const char *path = sock_path("w.sock");
	pid_t srv = start_server(path, 6);
	char out[AGENT_CTL_REPLY + 64], line[600];
	raw(path, "echo hi\n", 8, out, sizeof(out));
	CHECK_STR(out, "ok\n[hi]\n");
	raw(path, "fail\r\n", 6, out, sizeof(out));
	CHECK_STR(out, "error EPERM: not for you\n");
	/* No newline, then the client closes: what came is the request. */
	raw(path, "echo x", 6, out, sizeof(out));
	CHECK_STR(out, "ok\n[x]\n");
	memset(line, 'a', sizeof(line));
	raw(path, line, sizeof(line), out, sizeof(out));
	CHECK_STR(out, "error EINVAL: request longer than one line\n");
	raw(path, "echo \x01\n", 7, out, sizeof(out));
	CHECK_STR(out, "error EINVAL: control characters in request\n");
	raw(path, "\n", 1, out, sizeof(out));
	CHECK_STR(out, "error EINVAL: empty request\n");
	stop_server(srv, path);
}

TEST(ctl_silent_client_does_not_stall)
{
	if (!sockets_work())
		return;
	const char *path = sock_path("s.sock");
	pid_t srv = start_server(path, 2);
	/* Connected first and never sends: the server gives up on it and goes on. */
	int silent = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	CHECK(connect(silent, (struct sockaddr *)&a, sizeof(a)) == 0);
	char reply[AGENT_CTL_REPLY];
	CHECK_EQ_INT(agent_ctl_request(path, "echo", "after", reply, sizeof(reply), 10000), 0);
	CHECK_STR(reply, "[after]\n");
	char out[128] = "";
	ssize_t n = recv(silent, out, sizeof(out) - 1, 0);
	out[n > 0 ? n : 0] = 0;
	CHECK(strncmp(out, "error ETIMEDOUT:", 16) == 0);
	close(silent);
	stop_server(srv, path);
}

TEST(ctl_listen_rules)
{
	if (!sockets_work())
		return;
	char longpath[200];
	memset(longpath, 'p', sizeof(longpath));
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = 0;
	CHECK_EQ_INT(agent_ctl_listen(longpath), -ENAMETOOLONG);
	char reply[64];
	CHECK_EQ_INT(agent_ctl_request(longpath, "status", NULL, reply, sizeof(reply), 100),
		     -ENAMETOOLONG);

	/* A socket file left by a dead server is replaced. */
	const char *path = sock_path("l.sock");
	int raw_fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	CHECK(bind(raw_fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	close(raw_fd);
	CHECK_EQ_INT(agent_ctl_request(path, "status", NULL, reply, sizeof(reply), 1000),
		     -ECONNREFUSED);
	int l = agent_ctl_listen(path);
	CHECK(l >= 0);
	struct stat st;
	CHECK(stat(path, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0666);
	/* A live one is kept. */
	CHECK_EQ_INT(agent_ctl_listen(path), -EADDRINUSE);
	CHECK(stat(path, &st) == 0 && S_ISSOCK(st.st_mode));
	/* The probe that found it live waits as a connection without a request; then nobody. */
	CHECK_EQ_INT(agent_ctl_serve_one(l, handler, NULL), 0);
	CHECK_EQ_INT(agent_ctl_serve_one(l, handler, NULL), -EAGAIN);
	/* Listening but never answering: the client's timeout. */
	CHECK_EQ_INT(agent_ctl_request(path, "status", NULL, reply, sizeof(reply), 100),
		     -ETIMEDOUT);
	close(l);
	unlink(path);

	/* A file that is not a socket is not ours to remove. */
	int fd = open(path, O_WRONLY | O_CREAT, 0600);
	CHECK(fd >= 0 && write(fd, "keep", 4) == 4);
	close(fd);
	CHECK_EQ_INT(agent_ctl_listen(path), -EEXIST);
	CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 4);
	unlink(path);

	CHECK_EQ_INT(agent_ctl_request(path, "status", NULL, reply, sizeof(reply), 100), -ENOENT);
	/* A request must be one short line. */
	CHECK_EQ_INT(agent_ctl_request(path, "sta\ntus", NULL, reply, sizeof(reply), 100), -EINVAL);
	CHECK_EQ_INT(agent_ctl_request(path, "", NULL, reply, sizeof(reply), 100), -EINVAL);
	char big[AGENT_CTL_LINE + 8];
	memset(big, 'b', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	CHECK_EQ_INT(agent_ctl_request(path, "echo", big, reply, sizeof(reply), 100), -EINVAL);
}

TEST(ctl_peer_is_the_kernels_word)
{
	if (!sockets_work())
		return;
	if (geteuid() != 0) {
		printf("    skipped: needs root to ask as another user\n");
		return;
	}
	CHECK(chmod(test_tmpdir(), 0755) == 0); /* the other user must reach the socket */
	const char *path = sock_path("u.sock");
	pid_t srv = start_server(path, 1);
	int pipefd[2];
	CHECK(pipe(pipefd) == 0);
	pid_t kid = fork();
	if (kid == 0) {
		char reply[AGENT_CTL_REPLY];
		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(2);
		int e = agent_ctl_request(path, "status", NULL, reply, sizeof(reply), 5000);
		if (e == 0 && write(pipefd[1], reply, strlen(reply)) < 0)
			_exit(3);
		_exit(e ? 1 : 0);
	}
	close(pipefd[1]);
	char got[128] = "";
	ssize_t n = read(pipefd[0], got, sizeof(got) - 1);
	got[n > 0 ? n : 0] = 0;
	close(pipefd[0]);
	int status;
	waitpid(kid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	char want[64];
	snprintf(want, sizeof(want), "pid %d uid 65534\n", (int)kid);
	CHECK_STR(got, want);
	stop_server(srv, path);
}

TEST(ctl_may_change)
{
	struct agent_ctl_peer root = { 1, 0, 0 }, sys = { 2, 1000, 1000 },
			      other = { 3, 4242, 4242 }, self = { 4, geteuid(), getegid() };
	CHECK(agent_ctl_may_change(&root, -1));
	CHECK(agent_ctl_may_change(&self, -1));
	CHECK(agent_ctl_may_change(&sys, 1000));
	CHECK(!agent_ctl_may_change(&sys, -1) || geteuid() == 1000);
	CHECK(!agent_ctl_may_change(&other, 1000) || geteuid() == 4242);
	CHECK(!agent_ctl_may_change(&other, -1) || geteuid() == 4242);
}
