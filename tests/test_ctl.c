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
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
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

/* Serve on s until `count` requests were answered (0: until killed). */
static void serve_loop(struct agent_ctl_server *s, int count)
{
	for (int served = 0; !count || served < count;) {
		struct pollfd p[AGENT_CTL_POLLFDS];
		int n = agent_ctl_server_pollfds(s, p, AGENT_CTL_POLLFDS);
		int64_t due = agent_ctl_server_deadline(s), left = due - agent_ctl_now_ms();
		poll(p, (nfds_t)n, due == INT64_MAX ? -1 : left < 0 ? 0 : (int)left);
		int e = agent_ctl_server_step(s, p, n, agent_ctl_now_ms());
		if (e < 0)
			_exit(3);
		served += e;
	}
}

/* A child serving `count` requests (0: until killed) on a socket listening at path, giving
 * each client deadline_ms; its pid. */
static pid_t start_server_ex(const char *path, int count, int deadline_ms)
{
	int l = agent_ctl_listen(path);
	CHECK(l >= 0);
	if (l < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		alarm(20);
		static struct agent_ctl_server s;
		agent_ctl_server_init(&s, l, handler, NULL);
		s.deadline_ms = deadline_ms;
		serve_loop(&s, count);
		/* The last replies are out; let their clients read them to the end. */
		while (agent_ctl_server_deadline(&s) != INT64_MAX) {
			struct pollfd p[AGENT_CTL_POLLFDS];
			int n = agent_ctl_server_pollfds(&s, p, AGENT_CTL_POLLFDS);
			poll(p, (nfds_t)n, 10);
			agent_ctl_server_step(&s, p, n, agent_ctl_now_ms());
		}
		_exit(0);
	}
	close(l);
	return pid;
}

static pid_t start_server(const char *path, int count)
{
	return start_server_ex(path, count, AGENT_CTL_DEADLINE_MS);
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

/* A raw client: connect, send `req` (len bytes; then shut our side unless keep_open), read
 * the reply until the end. Returns 0 when the reply ended cleanly, else the recv's -errno
 * (-ECONNRESET: the server's close was a reset). */
static int raw_ex(const char *path, const char *req, size_t len, bool keep_open, char *out,
		  size_t size)
{
	out[0] = 0;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (!CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)) {
		close(fd);
		return -ENOTCONN;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ 10, 0 }, sizeof(struct timeval));
	if (len)
		CHECK(send(fd, req, len, MSG_NOSIGNAL) == (ssize_t)len);
	if (!keep_open)
		shutdown(fd, SHUT_WR); /* all of the request was sent */
	size_t got = 0;
	ssize_t n;
	while ((n = recv(fd, out + got, size - 1 - got, 0)) > 0 && got + (size_t)n < size - 1)
		got += (size_t)n;
	int e = n < 0 ? -errno : 0;
	got += n > 0 ? (size_t)n : 0;
	out[got] = 0;
	close(fd);
	return e;
}

static void raw(const char *path, const char *req, size_t len, char *out, size_t size)
{
	CHECK_EQ_INT(raw_ex(path, req, len, false, out, size), 0);
}

/* A socket in a pid's name made by another process (anyone may, in the 1733 run folder,
 * before that pid exists): a request for that pid is not sent to it. */
TEST(ctl_request_to_a_pid_is_not_sent_to_another_listener)
{
	if (!sockets_work())
		return;
	const char *path = sock_path("squat.sock");
	int l = agent_ctl_listen(path);
	CHECK(l >= 0);
	pid_t other = test_dead_pid();
	char reply[AGENT_CTL_REPLY], want[96];
	CHECK_EQ_INT(agent_ctl_request_pid(path, other, "trigger", NULL, reply, sizeof(reply), 1000),
		     -ESRCH);
	snprintf(want, sizeof(want), "served by process %d, not %d", (int)getpid(), (int)other);
	CHECK(strstr(reply, want) != NULL);
	/* Nothing was sent: the connection waiting in the backlog holds no byte. */
	int c = accept(l, NULL, NULL);
	CHECK(c >= 0);
	char b;
	CHECK_EQ_INT((int)recv(c, &b, 1, MSG_DONTWAIT), 0);
	close(c);
	close(l);
	unlink(path);
}

TEST(ctl_request_and_reply)
{
	if (!sockets_work())
		return;
	const char *path = sock_path("a.sock");
	pid_t srv = start_server(path, 10);
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
	/* Asked as the server of one pid: the kernel names the process that called listen(),
	 * here this one (the child only serves). */
	CHECK_EQ_INT(agent_ctl_request_pid(path, getpid(), "echo", "me", reply, sizeof(reply),
					   5000), 0);
	CHECK_STR(reply, "[me]\n");
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
	CHECK_STR(out, "error EMSGSIZE: request longer than 256 bytes\n");
	raw(path, "echo \x01\n", 7, out, sizeof(out));
	CHECK_STR(out, "error EINVAL: control characters in request \"echo \\x01\"\n");
	raw(path, "\n", 1, out, sizeof(out));
	CHECK_STR(out, "error EINVAL: empty request\n");
	stop_server(srv, path);
}

TEST(ctl_silent_client_does_not_stall)
{
	if (!sockets_work())
		return;
	const char *path = sock_path("s.sock");
	pid_t srv = start_server(path, 1);
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
	/* The probe that found it live came and went without a request: nothing to answer,
	 * nobody left. */
	static struct agent_ctl_server srv;
	agent_ctl_server_init(&srv, l, handler, NULL);
	struct pollfd p[AGENT_CTL_POLLFDS];
	int np = agent_ctl_server_pollfds(&srv, p, AGENT_CTL_POLLFDS);
	CHECK_EQ_INT(np, 1);
	CHECK_EQ_INT(poll(p, (nfds_t)np, 5000), 1);
	CHECK_EQ_INT(agent_ctl_server_step(&srv, p, np, agent_ctl_now_ms()), 0);
	CHECK(agent_ctl_server_deadline(&srv) == INT64_MAX);
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

/* A socket file at dir/name that nobody listens on (its server gone). */
static void dead_socket(const char *dir, const char *name)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/%s", dir, name);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	close(fd);
}

static bool exists(const char *dir, const char *name)
{
	char path[512];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return lstat(path, &st) == 0;
}

/* Stale sockets: an app killed with -9 leaves run_dir/jitt-PID.sock; jittd and the next app
 * remove those of processes that are gone, and nothing else, least of all a live socket. */
TEST(ctl_remove_stale_removes_dead_sockets_only)
{
	if (!sockets_work())
		return;
	char dir[300], name[64], listening[64], reused[64], regular[64], link[64], odd[64];
	snprintf(dir, sizeof(dir), "%s/run", test_tmpdir());
	CHECK(mkdir(dir, 0755) == 0);
	pid_t gone = test_dead_pid(), gone2 = test_dead_pid(), gone3 = test_dead_pid(), gone4 = test_dead_pid();
	/* Gone, and nobody listens: the one to remove. */
	snprintf(name, sizeof(name), "jitt-%d.sock", (int)gone);
	dead_socket(dir, name);
	/* Gone in our pid namespace, but listening (a process of another namespace): kept. */
	snprintf(listening, sizeof(listening), "jitt-%d.sock", (int)gone2);
	char path[600];
	snprintf(path, sizeof(path), "%s/%s", dir, listening);
	int l = agent_ctl_listen(path);
	CHECK(l >= 0);
	/* Nobody listens, but the pid is alive (reused): kept. */
	snprintf(reused, sizeof(reused), "jitt-%d.sock", (int)getpid());
	dead_socket(dir, reused);
	/* Not a socket; a symlink to a dead socket; names that are not ours: kept. */
	snprintf(regular, sizeof(regular), "jitt-%d.sock", (int)gone3);
	snprintf(path, sizeof(path), "%s/%s", dir, regular);
	int fd = open(path, O_WRONLY | O_CREAT, 0600);
	CHECK(fd >= 0);
	close(fd);
	dead_socket(dir, "target.sock");
	snprintf(link, sizeof(link), "jitt-%d.sock", (int)gone4);
	snprintf(path, sizeof(path), "%s/%s", dir, link);
	CHECK(symlink("target.sock", path) == 0);
	snprintf(odd, sizeof(odd), "jitt-0%d.sock", (int)gone);
	dead_socket(dir, odd);
	dead_socket(dir, "jitt-12x.sock");
	dead_socket(dir, "jittd.sock");

	CHECK_EQ_INT(agent_ctl_remove_stale(dir), 1);
	CHECK(!exists(dir, name));
	CHECK(exists(dir, listening));
	CHECK(exists(dir, reused));
	CHECK(exists(dir, regular));
	CHECK(exists(dir, link) && exists(dir, "target.sock"));
	CHECK(exists(dir, odd) && exists(dir, "jitt-12x.sock") && exists(dir, "jittd.sock"));
	CHECK_EQ_INT(agent_ctl_remove_stale(dir), 0);
	close(l);
	snprintf(path, sizeof(path), "%s/nowhere", dir);
	CHECK_EQ_INT(agent_ctl_remove_stale(path), -ENOENT);

	/* Another user removes only its own: root's dead socket stays, though the folder
	 * would let it go. */
	if (geteuid() != 0) {
		printf("    (not root: the owner part needs another user)\n");
		return;
	}
	CHECK(chmod(test_tmpdir(), 0755) == 0 && chmod(dir, 0777) == 0);
	snprintf(name, sizeof(name), "jitt-%d.sock", (int)test_dead_pid());
	dead_socket(dir, name);
	pid_t kid = fork();
	if (kid == 0) {
		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(2);
		_exit(agent_ctl_remove_stale(dir) == 0 ? 0 : 1);
	}
	int status;
	CHECK(waitpid(kid, &status, 0) == kid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(exists(dir, name));
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

/* ---- hostile clients: silent connections, malformed requests ---- */

TEST(ctl_parse_request)
{
	char cmd[AGENT_CTL_LINE + 1];
	const char *arg = NULL;
#define PARSE(s) agent_ctl_parse_request(s, sizeof(s) - 1, cmd, sizeof(cmd), &arg)
	CHECK_EQ_INT(PARSE("status\n"), 0);
	CHECK_STR(cmd, "status");
	CHECK_STR(arg, "");
	CHECK_EQ_INT(PARSE("trigger slow  scroll\r\nmore"), 0);
	CHECK_STR(cmd, "trigger");
	CHECK_STR(arg, "slow  scroll");
	CHECK_EQ_INT(PARSE("trigger \n"), 0);
	CHECK_STR(arg, "");
	/* More to come, until the line is too long. */
	CHECK_EQ_INT(PARSE(""), -EAGAIN);
	CHECK_EQ_INT(PARSE("stat"), -EAGAIN);
	CHECK_EQ_INT(PARSE("status\r"), -EAGAIN);
	char line[AGENT_CTL_LINE + 2];
	memset(line, 'a', sizeof(line));
	CHECK_EQ_INT(agent_ctl_parse_request(line, AGENT_CTL_LINE - 1, cmd, sizeof(cmd), &arg),
		     -EAGAIN);
	CHECK_EQ_INT(agent_ctl_parse_request(line, AGENT_CTL_LINE, cmd, sizeof(cmd), &arg),
		     -EMSGSIZE);
	CHECK_EQ_INT(agent_ctl_parse_request(line, sizeof(line), cmd, sizeof(cmd), &arg),
		     -EMSGSIZE);
	/* The longest line: AGENT_CTL_LINE bytes with its newline. */
	line[AGENT_CTL_LINE - 1] = '\n';
	CHECK_EQ_INT(agent_ctl_parse_request(line, AGENT_CTL_LINE, cmd, sizeof(cmd), &arg), 0);
	CHECK_EQ_INT((int)strlen(cmd), AGENT_CTL_LINE - 1);
	CHECK_EQ_INT(agent_ctl_parse_request(line, AGENT_CTL_LINE, cmd, 16, &arg), -ENOBUFS);
	/* A CR as the line's last byte: too long, whatever follows it (found by fuzz_ctl). */
	line[AGENT_CTL_LINE - 1] = '\r';
	CHECK_EQ_INT(agent_ctl_parse_request(line, AGENT_CTL_LINE, cmd, sizeof(cmd), &arg),
		     -EMSGSIZE);
	CHECK_EQ_INT(agent_ctl_parse_request(line, sizeof(line), cmd, sizeof(cmd), &arg),
		     -EMSGSIZE);
	line[AGENT_CTL_LINE - 1] = 'a';
	line[AGENT_CTL_LINE] = '\n';
	CHECK_EQ_INT(agent_ctl_parse_request(line, sizeof(line), cmd, sizeof(cmd), &arg),
		     -EMSGSIZE);
	/* A NUL is not the end of the line (it was: "status\0scan" read as "status"), nor is
	 * any other control byte allowed; refused as soon as it is seen. */
	CHECK_EQ_INT(PARSE("status\0scan\n"), -EINVAL);
	CHECK_EQ_INT(PARSE("status\0"), -EINVAL);
	CHECK_EQ_INT(PARSE("echo \x1b[2J\n"), -EINVAL);
	CHECK_EQ_INT(PARSE("echo a\rb\n"), -EINVAL);
	CHECK_EQ_INT(PARSE("echo \x7f\n"), -EINVAL);
	CHECK_EQ_INT(PARSE("echo\t1\n"), -EINVAL);
	/* No command. */
	CHECK_EQ_INT(PARSE("\n"), -EINVAL);
	CHECK_EQ_INT(PARSE("\r\n"), -EINVAL);
	CHECK_EQ_INT(PARSE(" status\n"), -EINVAL);
	/* Bytes from 0x80 pass (a UTF-8 reason); they are escaped where they are shown. */
	CHECK_EQ_INT(PARSE("trigger caf\xc3\xa9\n"), 0);
	CHECK_STR(arg, "caf\xc3\xa9");
#undef PARSE
}

TEST(ctl_long_request_gets_emsgsize_not_a_reset)
{
	if (!sockets_work())
		return;
	const char *path = sock_path("m.sock");
	pid_t srv = start_server(path, 2);
	char req[300], out[AGENT_CTL_REPLY + 64];
	memset(req, 'x', sizeof(req));
	memcpy(req, "echo ", 5);
	req[sizeof(req) - 1] = '\n';
	/* Sent, then read while our side stays open, as most clients do: the error line, then
	 * the end, not ECONNRESET over the 44 bytes the server did not read. */
	CHECK_EQ_INT(raw_ex(path, req, sizeof(req), true, out, sizeof(out)), 0);
	CHECK_STR(out, "error EMSGSIZE: request longer than 256 bytes\n");
	CHECK_EQ_INT(raw_ex(path, req, sizeof(req), false, out, sizeof(out)), 0);
	CHECK_STR(out, "error EMSGSIZE: request longer than 256 bytes\n");
	stop_server(srv, path);
}

TEST(ctl_nul_in_request_is_refused)
{
	if (!sockets_work())
		return;
	const char *path = sock_path("n.sock");
	pid_t srv = start_server(path, 3);
	char out[AGENT_CTL_REPLY + 64];
	/* Was read as "status". */
	CHECK_EQ_INT(raw_ex(path, "status\0scan\n", 12, true, out, sizeof(out)), 0);
	CHECK_STR(out, "error EINVAL: control characters in request \"status\\x00scan\"\n");
	/* The request's bytes come back escaped, never raw. */
	raw(path, "echo \x1b]0;owned\x07\xc2\x9b\n", 17, out, sizeof(out));
	CHECK_STR(out, "error EINVAL: control characters in request "
		       "\"echo \\x1b]0;owned\\x07\\xc2\\x9b\"\n");
	raw(path, "echo ok\n", 8, out, sizeof(out));
	CHECK_STR(out, "ok\n[ok]\n");
	stop_server(srv, path);
}

/* A connected socket that sends nothing; -1 on failure. */
static int silent_client(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* What the server sent on fd before its end (waiting up to 10 s). */
static void read_all(int fd, char *out, size_t size)
{
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ 10, 0 }, sizeof(struct timeval));
	size_t got = 0;
	ssize_t n;
	while (got < size - 1 && (n = recv(fd, out + got, size - 1 - got, 0)) > 0)
		got += (size_t)n;
	out[got] = 0;
}

/* A server that runs until killed and gives clients 30 s, so that silent ones keep their
 * slots however slow the machine is. */
static pid_t start_server_forever(const char *path)
{
	return start_server_ex(path, 0, 30000);
}

static void kill_server(pid_t pid, const char *path)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(path);
}

TEST(ctl_per_uid_cap)
{
	if (!sockets_work())
		return;
	const char *path = sock_path("c.sock");
	pid_t srv = start_server_forever(path);
	int fds[AGENT_CTL_PER_UID];
	for (int i = 0; i < AGENT_CTL_PER_UID; i++)
		CHECK((fds[i] = silent_client(path)) >= 0);
	/* One more of ours, with its request sent: refused at once, with the reason. */
	char out[256], reply[AGENT_CTL_REPLY];
	CHECK_EQ_INT(agent_ctl_request(path, "echo", "one more", reply, sizeof(reply), 10000),
		     -EAGAIN);
	CHECK_STR(reply, "too many connections");
	int extra = silent_client(path);
	read_all(extra, out, sizeof(out));
	CHECK_STR(out, "error EAGAIN: too many connections\n");
	close(extra);

	if (geteuid() == 0) {
		/* Another user is served while ours hold their slots. */
		CHECK(chmod(test_tmpdir(), 0755) == 0);
		pid_t kid = fork();
		if (kid == 0) {
			if (setgid(65534) != 0 || setuid(65534) != 0)
				_exit(2);
			int e = agent_ctl_request(path, "echo", "other", reply, sizeof(reply),
						  10000);
			_exit(e || strcmp(reply, "[other]\n") ? 1 : 0);
		}
		int status;
		CHECK(waitpid(kid, &status, 0) == kid && WIFEXITED(status) &&
		      WEXITSTATUS(status) == 0);
	}
	/* One of ours leaves: room for one again, once the server has seen the hang-up (under
	 * load the next connection can arrive first: refused until then, asked again). */
	close(fds[0]);
	int r = -EAGAIN;
	for (int tries = 0; r == -EAGAIN && tries < 1000; tries++) {
		r = agent_ctl_request(path, "echo", "again", reply, sizeof(reply), 10000);
		if (r == -EAGAIN)
			usleep(10000);
	}
	CHECK_EQ_INT(r, 0);
	CHECK_STR(reply, "[again]\n");
	for (int i = 1; i < AGENT_CTL_PER_UID; i++)
		close(fds[i]);
	kill_server(srv, path);
}

TEST(ctl_full_table_drops_the_longest_waiting)
{
	if (!sockets_work())
		return;
	if (geteuid() != 0) {
		printf("    skipped: needs root to fill the table as several users\n");
		return;
	}
	CHECK(chmod(test_tmpdir(), 0755) == 0);
	const char *path = sock_path("f.sock");
	pid_t srv = start_server_forever(path);
	/* Four other users, four silent connections each: the table is full. Each child says
	 * what its first connection (the oldest) got, through a pipe. */
	int users = AGENT_CTL_CLIENTS / AGENT_CTL_PER_UID, pipes[8][2];
	pid_t kids[8];
	for (int u = 0; u < users; u++) {
		CHECK(pipe(pipes[u]) == 0);
		int ready[2];
		CHECK(pipe(ready) == 0);
		kids[u] = fork();
		if (kids[u] == 0) {
			close(pipes[u][0]);
			close(ready[0]);
			if (setgid(65534) != 0 || setuid((uid_t)(65534 - u)) != 0)
				_exit(2);
			int fds[AGENT_CTL_PER_UID];
			for (int i = 0; i < AGENT_CTL_PER_UID; i++)
				if ((fds[i] = silent_client(path)) < 0)
					_exit(3);
			(void)!write(ready[1], "r", 1);
			char out[256];
			read_all(fds[0], out, sizeof(out));
			(void)!write(pipes[u][1], out, strlen(out));
			_exit(0);
		}
		close(pipes[u][1]);
		close(ready[1]);
		char c;
		CHECK(read(ready[0], &c, 1) == 1); /* its connections are made, in order */
		close(ready[0]);
	}
	/* We still get an answer: the connection that waited longest makes room. */
	char reply[AGENT_CTL_REPLY], got[256];
	CHECK_EQ_INT(agent_ctl_request(path, "echo", "me", reply, sizeof(reply), 10000), 0);
	CHECK_STR(reply, "[me]\n");
	for (int u = 0; u < users; u++) {
		if (u > 0)
			fcntl(pipes[u][0], F_SETFL, O_NONBLOCK); /* nothing to say yet */
		ssize_t n = read(pipes[u][0], got, sizeof(got) - 1);
		got[n > 0 ? n : 0] = 0;
		/* The first user's first connection was dropped for us; the others stay. */
		CHECK_STR(got, u == 0 ? "error EAGAIN: server busy\n" : "");
		close(pipes[u][0]);
	}
	kill_server(srv, path); /* which ends the others' connections */
	for (int u = 0; u < users; u++)
		waitpid(kids[u], NULL, 0);
}
