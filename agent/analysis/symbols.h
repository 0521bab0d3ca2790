/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/symbols.h - names for {module, virtual address}: from the module's ELF symbol table
 * when the file on this machine has the same build-id, else "<build-id>+0xoffset", which
 * can be symbolised elsewhere from the unstripped binary.
 */
#ifndef JITT_AGENT_SYMBOLS_H
#define JITT_AGENT_SYMBOLS_H

#include "ringbuf/elf.h"
#include "ringbuf/tracefile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct agent_symbols {
	const struct rb_trace *trace;
	struct rb_elf *elf; /* per module, loaded on first use */
	int *state;	    /* 0 not tried, 1 loaded and matching, -1 unusable */
};

/* 0 or -ENOMEM. The trace must outlive the symbols. */
int agent_symbols_open(struct agent_symbols *s, const struct rb_trace *t);
void agent_symbols_close(struct agent_symbols *s);
/* True when module m's file is here, with the same build-id and a symbol table. */
bool agent_symbols_ready(struct agent_symbols *s, int m);
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
