/* SPDX-License-Identifier: MIT */
#include "agent/analysis/loops.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ARM's condition codes: "bne", "bge.n" are branches, "bic" and "bfi" are not. */
static bool arm_condition(const char *cc, size_t len)
{
	static const char codes[] = "eq ne cs hs cc lo mi pl vs vc hi ls ge lt gt le al";
	if (len != 2)
		return false;
	for (const char *c = codes; *c; c += 3)
		if (c[0] == cc[0] && c[1] == cc[1])
			return true;
	return false;
}

/* A branch to an address in its operand, as objdump names them: x86's jumps (j*, loop*),
 * aarch64's b, b.cond, cbz, cbnz, tbz, tbnz, and ARM's b, bcc (".n"/".w" for Thumb's
 * widths). Calls are not: recursion is no loop. */
static bool branch(const char *m, size_t len)
{
	if (len > 2 && m[len - 2] == '.' && (m[len - 1] == 'n' || m[len - 1] == 'w'))
		len -= 2;
	if (m[0] == 'j' || (len >= 4 && strncmp(m, "loop", 4) == 0))
		return true;
	if ((len == 3 && strncmp(m, "cbz", 3) == 0) || (len == 4 && strncmp(m, "cbnz", 4) == 0) ||
	    (len == 3 && strncmp(m, "tbz", 3) == 0) || (len == 4 && strncmp(m, "tbnz", 4) == 0))
		return true;
	if (m[0] != 'b')
		return false;
	return len == 1 || (len > 2 && m[1] == '.') || arm_condition(m + 1, len - 1);
}

int agent_loop_line(const char *line, char *func, size_t size)
{
	const char *p = line;
	/* "0000000000401136 <name>:" begins a function. */
	if (isxdigit((unsigned char)*p)) {
		while (isxdigit((unsigned char)*p))
			p++;
		if (p[0] != ' ' || p[1] != '<')
			return 0;
		const char *name = p + 2, *end = strrchr(name, '>');
		if (!end || end[1] != ':')
			return 0;
		snprintf(func, size, "%.*s", (int)(end - name), name);
		return 0;
	}
	/* "  401140:\tjne    401136 <name+0x6>": an instruction at its address. */
	while (*p == ' ')
		p++;
	char *after;
	unsigned long long at = strtoull(p, &after, 16);
	if (after == p || after[0] != ':' || after[1] != '\t' || !func[0])
		return 0;
	p = after + 2;
	/* A prefix objdump shows as a word of its own comes first ("bnd jmp", "notrack jmp"):
	 * the mnemonic is the word before the operands. */
	const char *m = p;
	size_t len = strcspn(m, " \t");
	while (m[len] == ' ' && (strncmp(m, "bnd ", 4) == 0 || strncmp(m, "notrack ", 8) == 0 ||
				 strncmp(m, "rep ", 4) == 0 || strncmp(m, "repz ", 5) == 0)) {
		m += len + 1;
		len = strcspn(m, " \t");
	}
	if (!len || !branch(m, len))
		return 0;
	/* The target: "HEX <name>" or "HEX <name+0xOFF>", the operand's last. */
	const char *lt = strchr(m + len, '<');
	if (!lt || lt - (m + len) < 2 || lt[-1] != ' ')
		return 0;
	const char *h = lt - 1;
	while (h > m + len && isxdigit((unsigned char)h[-1]))
		h--;
	if (h == lt - 1)
		return 0;
	unsigned long long to = strtoull(h, NULL, 16);
	const char *name = lt + 1;
	size_t n = strcspn(name, "+>");
	if (name[n] == '\0' || strlen(func) != n || strncmp(func, name, n) != 0)
		return 0;
	return to < at;
}

int agent_loops(int fd, const char *objdump, agent_loop_fn fn, void *ctx)
{
	int out[2], e;
	if (pipe2(out, O_CLOEXEC) != 0)
		return -errno;
	/* The file as the caller opened it, descriptor 3 in objdump: dup'ed there from a
	 * copy above 3 when it is 3 already (a dup onto itself would keep its close-on-exec)
	 * or one of 0-2 (a closed stdout left to the file would be overwritten by the pipe's
	 * dup first). Its output first, in case the pipe took descriptor 3. Nothing read from
	 * stdin, its warnings not ours to show. */
	int src = fd <= 3 ? fcntl(fd, F_DUPFD_CLOEXEC, 4) : fd;
	if (src < 0) {
		e = -errno;
		close(out[0]);
		close(out[1]);
		return e;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, src, 3);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	char *argv[] = { (char *)objdump, "-d", "--no-show-raw-insn", "/proc/self/fd/3", NULL };
	pid_t pid;
	e = posix_spawnp(&pid, objdump, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(out[1]);
	if (src != fd)
		close(src);
	if (e) {
		close(out[0]);
		return -ENOENT;
	}
	FILE *f = fdopen(out[0], "r");
	if (!f) {
		close(out[0]);
		waitpid(pid, NULL, 0);
		return -ENOMEM;
	}
	char *line = NULL, func[256] = "", reported[256] = "";
	size_t cap = 0;
	int err = 0;
	while (getline(&line, &cap, f) > 0) {
		if (err)
			continue; /* read to the end: objdump must not block on a full pipe */
		line[strcspn(line, "\n")] = '\0';
		if (agent_loop_line(line, func, sizeof(func)) && strcmp(func, reported) != 0) {
			snprintf(reported, sizeof(reported), "%s", func);
			err = fn(ctx, func);
		}
	}
	free(line);
	fclose(f);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!err && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		err = WIFEXITED(status) && WEXITSTATUS(status) == 127 ? -ENOENT : -EIO;
	return err;
}
