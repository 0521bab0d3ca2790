/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/symbols.h - names for {module, virtual address}: from the module's ELF symbol table
 * when the file on this machine has the same build-id, or from its separate debug file when
 * it is stripped (agent/analysis/debugfile.h: by build-id, .gnu_debuglink or debuginfod),
 * else "<build-id>+0xoffset", which can be symbolised elsewhere from the debug file.
 */
#ifndef JITT_AGENT_SYMBOLS_H
#define JITT_AGENT_SYMBOLS_H

#include "ringbuf/elf.h"
#include "ringbuf/tracefile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * A module path comes from a trace file, which its writer controls: it may name a device,
 * a FIFO, a folder, /etc/shadow or a file crafted to be huge. So (docs/security.md) a module
 * is opened only when the trace gives its build-id and its path is absolute, only as a
 * regular file (agent_open_regular: looked at first, so a device or FIFO is never opened), read
 * with pread under caps (ringbuf/elf.h) and within one budget for the whole trace, and its
 * symbols used only when its build-id is the trace's. Anything else is shown by module and
 * offset. With an owner set (jittd), the file must also be one the trace's writer could
 * read itself: theirs, or world-readable.
 */
#define AGENT_SYMBOLS_BUDGET (96u << 20) /* bytes of symbol tables held for one trace */

struct agent_symbols {
	const struct rb_trace *trace;
	struct rb_elf *elf; /* per module, loaded on first use */
	int *state;	    /* 0 not tried, 1 loaded and matching, -1 unusable */
	int *code_fd;	    /* the module's own file, kept open when it is the one that ran
			     * (same build-id): its code, for agent_symbols_code; else -1 */
	uid_t owner;	    /* (uid_t)-1: any file; else only files this uid could read */
	size_t budget;	    /* bytes of symbol tables still allowed */
};

/* 0 or -ENOMEM. The trace must outlive the symbols. No owner check (the `jitt` command:
 * its user reads what they can read anyway). */
int agent_symbols_open(struct agent_symbols *s, const struct rb_trace *t);
/* Use only module files that uid (the trace file's owner) could read: owned by uid, or
 * readable by anyone. For a reader with more rights than the trace's writer (jittd as
 * root), so one app cannot learn another's private function names. Before first use. */
void agent_symbols_set_owner(struct agent_symbols *s, uid_t uid);
void agent_symbols_close(struct agent_symbols *s);
/* True when module m has names here: its file with the same build-id and a symbol table,
 * or its debug file (the first call may look for one, and ask a debuginfod server). */
bool agent_symbols_ready(struct agent_symbols *s, int m);
/* n bytes of module m's code at virtual address vaddr, from its own file when that is the one
 * that ran (a debug file has no code): 0, else a negative errno. The instructions'
 * architecture is the file's e_machine, in *machine. */
int agent_symbols_code(struct agent_symbols *s, int m, uint64_t vaddr, void *buf, size_t n,
		       uint16_t *machine);
/* "name", "name+0x12", "<build-id>+0xoffset"; module < 0 gives "?0x<vaddr>". */
void agent_symbol_name(struct agent_symbols *s, int module, uint64_t vaddr, char *out, size_t size);
/*
 * A function's key in the analysis: its module's index (plus one; 0 when no module holds
 * it) in the top 16 bits, its virtual address in that module below. Equal keys are the
 * same function of the same binary: {build-id, offset}.
 */
uint64_t agent_func_key(const struct rb_trace *t, const struct rb_event *entry);
#define AGENT_KEY_MODULE(k) ((int)((k) >> 48) - 1)
#define AGENT_KEY_VADDR(k)  ((k)&0xffffffffffffull)
/* The key's name (agent_symbol_name), and a name in parentheses for the tree's two
 * pseudo-functions, CCT_UNKNOWN and CCT_ROOT (agent/analysis/cct.h). */
void agent_key_name(struct agent_symbols *s, uint64_t key, char *out, size_t size);

/* Lower-case hex of n bytes into out (2n + 1 bytes). */
void agent_hex(const uint8_t *bytes, unsigned n, char *out);

#endif
