/* SPDX-License-Identifier: MIT */
/* What `jitt status` and `jitt trigger` share: asking a control socket (agent/ctl.h) and
 * saying clearly why that failed. */
#include "agent/cli/cli.h"
#include "agent/config.h"
#include "agent/ctl.h"
#include "agent/escape.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Long enough for a busy jittd on a slow board to get to us between two traces. */
#define CLI_CTL_TIMEOUT_MS 5000

int cli_parse_pid(const char *s, pid_t *pid)
{
	if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 10)
		return -EINVAL;
	long long v = strtoll(s, NULL, 10);
	if (v < 1 || v > INT_MAX)
		return -EINVAL;
	*pid = (pid_t)v;
	return 0;
}

/* A reply comes from whatever listens on the socket, another user's process perhaps: each
 * of its lines is escaped (agent/escape.h) before anything prints it, its newlines kept. */
static void make_printable(char *reply, size_t size)
{
	char *safe = malloc(size), line[AGENT_CTL_REPLY];
	if (!safe) {
		reply[0] = 0;
		return;
	}
	size_t o = 0;
	for (char *p = reply; *p && size - o >= 4;) { /* agent_escape needs room for "..." */
		size_t n = strcspn(p, "\n");
		char cut = p[n];
		p[n] = 0;
		agent_escape(line, sizeof(line) < size - o ? sizeof(line) : size - o, p);
		o += (size_t)snprintf(safe + o, size - o, "%s%s", line, cut ? "\n" : "");
		o = o < size ? o : size - 1;
		p += n + (cut ? 1 : 0);
	}
	safe[o] = 0;
	memcpy(reply, safe, o + 1);
	free(safe);
}

int cli_ctl_ask(const char *prog, const char *config, pid_t pid, const char *cmd, const char *arg,
		char *reply, size_t size)
{
	struct agent_config c;
	char err[512], path[AGENT_PATH_MAX];
	int e = agent_config_load(&c, config, err, sizeof(err));
	if (e) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	if (agent_config_socket(&c, pid, path, sizeof(path)) != 0) {
		fprintf(stderr, "%s: run_dir %s is too long for a socket\n", prog, c.run_dir);
		return 1;
	}
	char who[64];
	if (pid)
		snprintf(who, sizeof(who), "traced process %d", (int)pid);
	else
		snprintf(who, sizeof(who), "jittd");
	e = agent_ctl_request_pid(path, pid, cmd, arg, reply, size, CLI_CTL_TIMEOUT_MS);
	if (size)
		make_printable(reply, size);
	switch (e) {
	case 0:
		return 0;
	case -ENOENT:
	case -ECONNREFUSED:
	case -ENOTSOCK:
		fprintf(stderr, "%s: no %s listening on %s\n", prog, who, path);
		break;
	case -EACCES:
		fprintf(stderr, "%s: permission denied: %s\n", prog, path);
		break;
	case -EPERM:
		fprintf(stderr, "%s: permission denied: %s\n", prog, reply[0] ? reply : who);
		break;
	case -ESRCH:
		fprintf(stderr, "%s: not asked: %s\n", prog, reply);
		break;
	case -ETIMEDOUT:
		fprintf(stderr, "%s: no answer from %s on %s\n", prog, who, path);
		break;
	case -ENAMETOOLONG:
		fprintf(stderr, "%s: %s: path too long for a socket\n", prog, path);
		break;
	default:
		fprintf(stderr, "%s: %s: %s\n", prog, who, reply[0] ? reply : strerror(-e));
		break;
	}
	return 1;
}
