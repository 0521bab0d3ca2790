/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/elf.h - a small ELF32/ELF64 reader of our own: the GNU build-id and the function
 * symbols of a module, to turn {module, offset} into a name when the file on this machine
 * is the one that ran (same build-id) and has a symbol table.
 */
#ifndef JITT_RINGBUF_ELF_H
#define JITT_RINGBUF_ELF_H

#include <stddef.h>
#include <stdint.h>

struct rb_symbol {
	uint64_t addr, size;
	const char *name;
};

struct rb_elf {
	uint8_t build_id[32];
	uint8_t build_id_len;
	struct rb_symbol *syms; /* function symbols, sorted by address */
	size_t nsyms;
	char *strings;
};

/* Read path. Returns 0, a negative errno, or -EINVAL for a file that is not a well-formed
 * ELF file of this byte order. A file without symbols loads with nsyms == 0. */
int rb_elf_load(const char *path, struct rb_elf *elf);
/* Parse an ELF image in memory (for the fuzzer). */
int rb_elf_parse(const uint8_t *data, size_t size, struct rb_elf *elf);
void rb_elf_free(struct rb_elf *elf);
/* The function containing addr (a virtual address), or NULL. */
const struct rb_symbol *rb_elf_lookup(const struct rb_elf *elf, uint64_t addr);

#endif
