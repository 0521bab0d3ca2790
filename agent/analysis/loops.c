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

/* What a mnemonic does, before its target is known to be in the function or not: x86's
 * jumps (jmp; j* and loop* conditional), aarch64's b, b.cond, cbz, cbnz, tbz, tbnz, br,
 * ret, ARM's b, bCC, bx, pop and ldr into pc, tbb, tbh (".n"/".w" for Thumb's widths).
 * A call goes on to the next instruction: recursion is no loop. Whatever is not known
 * goes on too: that can only add a cycle, never hide one. */
static enum agent_flow flow_of(const char *m, size_t len, const char *ops)
{
	if (len > 2 && m[len - 2] == '.' && (m[len - 1] == 'n' || m[len - 1] == 'w'))
		len -= 2;
#define IS(word) (len == sizeof(word) - 1 && strncmp(m, word, len) == 0)
	if (IS("ret") || IS("retq") || IS("ud2") || IS("hlt"))
		return AGENT_FLOW_END;
	if (IS("jmp") || IS("jmpq"))
		return strchr(ops, '*') ? AGENT_FLOW_ANY : AGENT_FLOW_JUMP;
	if (m[0] == 'j' || (len >= 4 && strncmp(m, "loop", 4) == 0))
		return AGENT_FLOW_BRANCH;
	if (IS("cbz") || IS("cbnz") || IS("tbz") || IS("tbnz"))
		return AGENT_FLOW_BRANCH;
	if (IS("br") || IS("tbb") || IS("tbh"))
		return AGENT_FLOW_ANY;
	/* ARM's returns: bx lr, pop {..., pc}, ldr pc, [sp], #4; any other write of pc is
	 * an indirect jump. */
	size_t olen = strcspn(ops, " \t;/@");
	if (IS("bx"))
		return olen == 2 && strncmp(ops, "lr", 2) == 0 ? AGENT_FLOW_END : AGENT_FLOW_ANY;
	if (IS("pop") || IS("ldmia") || IS("ldmfd") || IS("ldr") || IS("mov")) {
		if (IS("pop") || IS("ldmia") || IS("ldmfd"))
			return strstr(ops, "pc}") ? AGENT_FLOW_END : AGENT_FLOW_NEXT;
		if (strncmp(ops, "pc,", 3) != 0)
			return AGENT_FLOW_NEXT;
		return strstr(ops, "[sp]") || strstr(ops, ", lr") ? AGENT_FLOW_END : AGENT_FLOW_ANY;
	}
#undef IS
	if (m[0] != 'b')
		return AGENT_FLOW_NEXT;
	if (len == 1)
		return AGENT_FLOW_JUMP;
	if ((len > 2 && m[1] == '.') || arm_condition(m + 1, len - 1))
		return AGENT_FLOW_BRANCH;
	return AGENT_FLOW_NEXT;
}

size_t agent_code_base(const char *name)
{
	const char *cold = strstr(name, ".cold");
	while (cold && cold[5] != '\0' && cold[5] != '.')
		cold = strstr(cold + 1, ".cold");
	return cold ? (size_t)(cold - name) : strlen(name);
}

enum agent_line_kind agent_code_line(const char *line, const char *func, char *name, size_t size,
				     struct agent_insn *insn)
{
	const char *p = line;
	/* "0000000000401136 <name>:" begins a function. */
	if (isxdigit((unsigned char)*p)) {
		while (isxdigit((unsigned char)*p))
			p++;
		if (p[0] != ' ' || p[1] != '<')
			return AGENT_LINE_OTHER;
		const char *sym = p + 2, *end = strrchr(sym, '>');
		if (!end || end[1] != ':')
			return AGENT_LINE_OTHER;
		snprintf(name, size, "%.*s", (int)(end - sym), sym);
		return AGENT_LINE_FUNC;
	}
	/* "  401140:\tjne    401136 <name+0x6>": an instruction at its address. */
	while (*p == ' ')
		p++;
	char *after;
	unsigned long long at = strtoull(p, &after, 16);
	if (after == p || after[0] != ':' || after[1] != '\t' || !func[0])
		return AGENT_LINE_OTHER;
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
	if (!len)
		return AGENT_LINE_OTHER; /* objdump's "..." for skipped zeros, or a cut line */
	const char *ops = m + len + strspn(m + len, " \t");
	*insn = (struct agent_insn){ .at = at, .flow = flow_of(m, len, ops) };
	if (insn->flow != AGENT_FLOW_BRANCH && insn->flow != AGENT_FLOW_JUMP)
		return AGENT_LINE_INSN;
	/* The target: "HEX <name>" or "HEX <name+0xOFF>", the operand's last. One out of
	 * the function (a tail call, a branch to another) does not come back into it. */
	enum agent_flow out = insn->flow == AGENT_FLOW_JUMP ? AGENT_FLOW_END : AGENT_FLOW_NEXT;
	const char *lt = strchr(m + len, '<');
	const char *h = lt ? lt - 1 : NULL;
	while (h && h > m + len && isxdigit((unsigned char)h[-1]))
		h--;
	if (!lt || lt - (m + len) < 2 || lt[-1] != ' ' || h == lt - 1) {
		insn->flow = out;
		return AGENT_LINE_INSN;
	}
	insn->to = strtoull(h, NULL, 16);
	const char *target = lt + 1;
	size_t n = strcspn(target, "+>");
	char sym[256];
	size_t base = agent_code_base(func);
	if (target[n] == '\0' || n >= sizeof(sym)) {
		insn->flow = out;
		return AGENT_LINE_INSN;
	}
	memcpy(sym, target, n);
	sym[n] = '\0';
	if (agent_code_base(sym) != base || strncmp(sym, func, base) != 0)
		insn->flow = out;
	return AGENT_LINE_INSN;
}

/* The index of the instruction at address at, or n. */
static size_t insn_at(const struct agent_insn *insn, size_t n, unsigned long long at)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (insn[mid].at < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && insn[lo].at == at ? lo : n;
}

/* The k-th successor of instruction i (k = 0, 1), n when it has none; *loop set when the
 * code cannot say (above). */
static size_t successor(const struct agent_insn *insn, size_t n, size_t i, unsigned k, bool *loop)
{
	enum agent_flow f = insn[i].flow;
	bool next = (f == AGENT_FLOW_NEXT || f == AGENT_FLOW_BRANCH) && i + 1 < n &&
		    insn[i + 1].part == insn[i].part;
	if (f == AGENT_FLOW_ANY)
		*loop = true;
	if ((f == AGENT_FLOW_BRANCH || f == AGENT_FLOW_JUMP) && k == 0) {
		size_t t = insn_at(insn, n, insn[i].to);
		if (t == n)
			*loop = true;
		return t;
	}
	if (next && k == (f == AGENT_FLOW_BRANCH ? 1u : 0u))
		return i + 1;
	return n;
}

bool agent_code_loops(const struct agent_insn *insn, size_t n, unsigned char *seen, size_t *stack)
{
	/* Depth first from every instruction not yet seen (a function's code can be reached
	 * only through a jump table, or be dead): a successor still on the path closes a
	 * cycle. seen: 0 not yet, 1 on the path, 2 done; the successor to try next in bits
	 * 2 and up. */
	memset(seen, 0, n);
	bool loop = false;
	for (size_t s = 0; s < n && !loop; s++) {
		if (seen[s])
			continue;
		size_t depth = 0;
		stack[depth++] = s;
		seen[s] = 1;
		while (depth && !loop) {
			size_t v = stack[depth - 1];
			unsigned k = seen[v] >> 2;
			if (k == 2) {
				seen[v] = 2;
				depth--;
				continue;
			}
			seen[v] = (unsigned char)(1 | (k + 1) << 2);
			size_t w = successor(insn, n, v, k, &loop);
			if (w == n)
				continue;
			if ((seen[w] & 3) == 1)
				loop = true;
			else if (!seen[w]) {
				seen[w] = 1;
				stack[depth++] = w;
			}
		}
	}
	return loop;
}

/* The whole disassembly, kept until its end: a function's cold part may come before it
 * or after it. */
struct code_part {
	char *name;
	size_t first, n; /* its instructions in code.insn */
};
struct code {
	struct code_part *part;
	size_t nparts, capparts;
	struct agent_insn *insn;
	size_t ninsns, capinsns;
};

static int code_add_part(struct code *c, const char *name)
{
	if (c->nparts == c->capparts) {
		size_t cap = c->capparts ? 2 * c->capparts : 256;
		void *p = realloc(c->part, cap * sizeof(*c->part));
		if (!p)
			return -ENOMEM;
		c->part = p;
		c->capparts = cap;
	}
	char *copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	c->part[c->nparts++] = (struct code_part){ .name = copy, .first = c->ninsns };
	return 0;
}

static int code_add_insn(struct code *c, const struct agent_insn *insn)
{
	if (!c->nparts)
		return 0;
	if (c->ninsns == c->capinsns) {
		size_t cap = c->capinsns ? 2 * c->capinsns : 4096;
		void *p = realloc(c->insn, cap * sizeof(*c->insn));
		if (!p)
			return -ENOMEM;
		c->insn = p;
		c->capinsns = cap;
	}
	c->insn[c->ninsns++] = *insn;
	c->part[c->nparts - 1].n++;
	return 0;
}

static int by_base_name(const void *a, const void *b)
{
	const struct code_part *x = a, *y = b;
	size_t nx = agent_code_base(x->name), ny = agent_code_base(y->name);
	int d = strncmp(x->name, y->name, nx < ny ? nx : ny);
	return d ? d : (nx > ny) - (nx < ny);
}

static int by_address(const void *a, const void *b)
{
	const struct agent_insn *x = a, *y = b;
	return (x->at > y->at) - (x->at < y->at);
}

static void code_free(struct code *c)
{
	for (size_t i = 0; i < c->nparts; i++)
		free(c->part[i].name);
	free(c->part);
	free(c->insn);
}

/* Each function, its parts together (sorted by name without the cold suffix), through
 * agent_code_loops; fn for each with a loop. */
static int code_report(struct code *c, agent_loop_fn fn, void *ctx)
{
	qsort(c->part, c->nparts, sizeof(*c->part), by_base_name);
	struct agent_insn *one = malloc((c->ninsns + 1) * sizeof(*one));
	unsigned char *seen = malloc(c->ninsns + 1);
	size_t *stack = malloc((c->ninsns + 1) * sizeof(*stack));
	int err = one && seen && stack ? 0 : -ENOMEM;
	for (size_t i = 0, j; i < c->nparts && !err; i = j) {
		size_t n = 0;
		for (j = i; j < c->nparts && by_base_name(&c->part[i], &c->part[j]) == 0; j++) {
			for (size_t k = 0; k < c->part[j].n; k++) {
				one[n] = c->insn[c->part[j].first + k];
				one[n++].part = (unsigned)(j - i);
			}
		}
		if (j - i > 1)
			qsort(one, n, sizeof(*one), by_address);
		if (n && agent_code_loops(one, n, seen, stack)) {
			char *name = c->part[i].name;
			size_t base = agent_code_base(name);
			char saved = name[base];
			name[base] = '\0';
			err = fn(ctx, name);
			name[base] = saved;
		}
	}
	free(one);
	free(seen);
	free(stack);
	return err;
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
	struct code c = { 0 };
	char *line = NULL, func[256] = "";
	size_t cap = 0;
	int err = 0;
	while (getline(&line, &cap, f) > 0) {
		if (err)
			continue; /* read to the end: objdump must not block on a full pipe */
		line[strcspn(line, "\n")] = '\0';
		struct agent_insn insn;
		switch (agent_code_line(line, func, func, sizeof(func), &insn)) {
		case AGENT_LINE_FUNC:
			err = code_add_part(&c, func);
			break;
		case AGENT_LINE_INSN:
			err = code_add_insn(&c, &insn);
			break;
		case AGENT_LINE_OTHER:
			break;
		}
	}
	free(line);
	fclose(f);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!err && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		err = WIFEXITED(status) && WEXITSTATUS(status) == 127 ? -ENOENT : -EIO;
	if (!err)
		err = code_report(&c, fn, ctx);
	code_free(&c);
	return err;
}
