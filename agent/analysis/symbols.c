/* SPDX-License-Identifier: MIT */
#include "agent/analysis/symbols.h"
#include "agent/analysis/cct.h"
#include "agent/analysis/debugfile.h"
#include "hal/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void agent_hex(const uint8_t *b, unsigned n, char *out)
{
	for (unsigned i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	out[2 * n] = '\0';
}

int agent_symbols_open(struct agent_symbols *s, const struct rb_trace *t)
{
	s->trace = t;
	s->owner = (uid_t)-1;
	s->budget = AGENT_SYMBOLS_BUDGET;
	s->elf = calloc(t->nmodules + 1, sizeof(*s->elf));
	s->state = calloc(t->nmodules + 1, sizeof(*s->state));
	s->code_fd = malloc((t->nmodules + 1) * sizeof(*s->code_fd));
	if (!s->elf || !s->state || !s->code_fd) {
		agent_symbols_close(s);
		return -ENOMEM;
	}
	for (uint32_t m = 0; m <= t->nmodules; m++)
		s->code_fd[m] = -1;
	return 0;
}

void agent_symbols_close(struct agent_symbols *s)
{
	if (s->elf && s->trace)
		for (uint32_t m = 0; m < s->trace->nmodules; m++)
			rb_elf_free(&s->elf[m]);
	if (s->code_fd && s->trace)
		for (uint32_t m = 0; m < s->trace->nmodules; m++)
			if (s->code_fd[m] >= 0)
				close(s->code_fd[m]);
	free(s->elf);
	free(s->state);
	free(s->code_fd);
	s->elf = NULL;
	s->state = NULL;
	s->code_fd = NULL;
}

void agent_symbols_set_owner(struct agent_symbols *s, uid_t uid)
{
	s->owner = uid;
}

static bool same_id(const struct rb_elf *elf, const struct rb_module *mod)
{
	return elf->build_id_len == mod->build_id_len &&
	       memcmp(elf->build_id, mod->build_id, mod->build_id_len) == 0;
}

/* Load module m's symbols if its file may be used (symbols.h): its own .symtab, else its
 * separate debug file's (agent/analysis/debugfile.h), else its .dynsym. 1 when found,
 * else -1. */
static int load(struct agent_symbols *s, const struct rb_module *mod, struct rb_elf *elf,
		int *code_fd)
{
	/* Without a build-id in the trace nothing could prove the file is the one that ran:
	 * it is not even opened. A relative path means nothing on the reader's side. */
	if (!mod->build_id_len || mod->path[0] != '/')
		return -1;
	/* Symlinks are followed: system libraries are reached through them (libc.so.6 ->
	 * libc-2.36.so), and the file is trusted by its build-id, not by where it is. A path
	 * is looked at before it is opened (agent_open_regular): a device or a FIFO is never
	 * opened, and what is opened is read only through that one descriptor. */
	struct stat st;
	struct rb_elf file;
	memset(&file, 0, sizeof(file));
	int fd = agent_open_regular(mod->path, s->owner, &st);
	if (fd >= 0) {
		if (rb_elf_read(fd, (uint64_t)st.st_size, s->budget, &file) != 0 ||
		    !same_id(&file, mod))
			rb_elf_free(&file);
		if (file.build_id_len && file.code.n)
			*code_fd = fd; /* the code that ran, read through this descriptor only */
		else
			close(fd);
	}
	bool here = file.build_id_len != 0; /* the file that ran is on this machine */
	struct rb_elf_code code = file.code;
	if (!here || !file.full_symtab || !file.nsyms) {
		/* Stripped, or not here at all: its debug file has the full table. */
		struct rb_elf dbg;
		if (agent_debug_find(mod, here ? &file : NULL, s->owner, s->budget - file.bytes,
				     &dbg) == 0) {
			rb_elf_free(&file);
			file = dbg;
			file.code = code; /* a debug file's code is NOBITS */
		}
	}
	if (!file.nsyms) {
		rb_elf_free(&file);
		if (*code_fd >= 0)
			close(*code_fd);
		*code_fd = -1;
		return -1;
	}
	*elf = file;
	s->budget -= elf->bytes;
	return 1;
}

bool agent_symbols_ready(struct agent_symbols *s, int m)
{
	if (m < 0 || (uint32_t)m >= s->trace->nmodules)
		return false;
	if (s->state[m] == 0)
		s->state[m] = load(s, &s->trace->modules[m], &s->elf[m], &s->code_fd[m]);
	return s->state[m] == 1;
}

int agent_symbols_code(struct agent_symbols *s, int m, uint64_t vaddr, void *buf, size_t n,
		       uint16_t *machine)
{
	if (!agent_symbols_ready(s, m) || s->code_fd[m] < 0)
		return -ENOENT;
	*machine = s->elf[m].code.machine;
	return rb_elf_code_read(&s->elf[m].code, s->code_fd[m], vaddr, buf, n);
}

void agent_symbol_name(struct agent_symbols *s, int m, uint64_t vaddr, char *out, size_t size)
{
	if (m < 0 || (uint32_t)m >= s->trace->nmodules) {
		snprintf(out, size, "?0x%llx", (unsigned long long)vaddr);
		return;
	}
	if (agent_symbols_ready(s, m)) {
		const struct rb_symbol *sym = rb_elf_lookup(&s->elf[m], vaddr);
		if (sym) {
			const char *name = rb_elf_shown_name(sym->name);
			/* The compiler's copies of a function are named "name.SUFFIX": GCC's
			 * clones (".constprop.0", ".isra.0", ".part.0", ".cold"), LTO's statics
			 * (".lto_priv.0"). A C identifier or a C++ mangled name has no '.', so a
			 * function is named up to its first one: its source's name, the one every
			 * view (summary, exports, decode, diff) gives, so that copies merge by
			 * name; the build-id and offset still say which copy. An address inside
			 * a copy keeps the copy's name, since its offset is from the copy. */
			const char *lto = strstr(name, ".lto_priv.");
			const char *dot = name[0] ? strchr(name + 1, '.') : NULL;
			int len = lto ? (int)(lto - name) : (int)strlen(name);
			if (vaddr == sym->addr)
				snprintf(out, size, "%.*s", dot ? (int)(dot - name) : len, name);
			else
				snprintf(out, size, "%.*s+0x%llx", len, name,
					 (unsigned long long)(vaddr - sym->addr));
			return;
		}
	}
	const struct rb_module *mod = &s->trace->modules[m];
	char id[65] = "no-build-id";
	if (mod->build_id_len)
		agent_hex(mod->build_id, mod->build_id_len > 8 ? 8 : mod->build_id_len, id);
	snprintf(out, size, "%s+0x%llx", id, (unsigned long long)vaddr);
}

uint64_t agent_func_key(const struct rb_trace *t, const struct rb_event *e)
{
	uint64_t vaddr = e->id;
	int m = rb_trace_resolve(t, e, &vaddr);
	return (uint64_t)(m + 1) << 48 | AGENT_KEY_VADDR(vaddr);
}

void agent_key_name(struct agent_symbols *s, uint64_t key, char *out, size_t size)
{
	if (key == CCT_UNKNOWN)
		snprintf(out, size, "(entered before the ring's oldest record)");
	else if (key == CCT_ROOT)
		snprintf(out, size, "(outside any traced function)");
	else
		agent_symbol_name(s, AGENT_KEY_MODULE(key), AGENT_KEY_VADDR(key), out, size);
}
