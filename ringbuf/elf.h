/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/elf.h - a small ELF32/ELF64 reader of our own: the GNU build-id, the function
 * symbols and the .gnu_debuglink of a module, to turn {module, offset} into a name when the
 * file on this machine is the one that ran (same build-id) and has a symbol table, or names
 * a separate debug file that has one (agent/analysis/debugfile.h).
 */
#ifndef JITT_RINGBUF_ELF_H
#define JITT_RINGBUF_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rb_symbol {
	uint64_t addr, size;
	const char *name;
};

/* The longest .gnu_debuglink file name kept: a longer one is ignored (as if absent). */
#define RB_ELF_DEBUGLINK_MAX 255

/* Executable sections whose bytes the file holds (.init, .plt, .text, .fini...): where to
 * read an instruction of the code that ran (rb_elf_code_read). A debug file's are NOBITS,
 * so it has none. */
#define RB_ELF_CODE_MAX 8
struct rb_elf_code {
	uint16_t machine; /* e_machine: which instructions they are */
	uint8_t n;
	struct {
		uint64_t addr, offset, size;
	} sec[RB_ELF_CODE_MAX];
};

struct rb_elf {
	uint8_t build_id[32];
	uint8_t build_id_len;
	struct rb_symbol *syms; /* function symbols, sorted by address */
	size_t nsyms;
	char *strings;
	size_t bytes;	  /* the memory syms and strings take */
	bool full_symtab; /* syms came from .symtab; false: from .dynsym (stripped) or none */
	/* .gnu_debuglink: the separate debug file's name (one path component, no '/'; empty
	 * when absent or unusable) and the CRC-32 of that file's whole contents. */
	char debuglink[RB_ELF_DEBUGLINK_MAX + 1];
	uint32_t debuglink_crc;
	struct rb_elf_code code;
};

/*
 * Caps on what one file may make the reader read and keep, whatever its headers claim (the
 * file is named by a trace another user wrote): a table over its cap is -EFBIG, and the
 * function is then shown by module and offset. A symbol table of 32 MiB holds about 1.4
 * million ELF64 symbols and a string table of 32 MiB their names, far past any binary a
 * phone runs; notes are a few dozen bytes (the build-id), 64 KiB in all is read at most.
 */
#define RB_ELF_MAX_NOTES  (64u << 10)
#define RB_ELF_MAX_SYMTAB (32u << 20)
#define RB_ELF_MAX_STRTAB (32u << 20)

/*
 * Read the ELF file open on fd, of size bytes (its fstat), with pread: never mapped, so a
 * file truncated meanwhile is a short read (-EINVAL), not SIGBUS. Tables over the caps
 * above, or needing more than budget bytes in memory, are -EFBIG. Returns 0, a negative
 * errno, or -EINVAL for a file that is not a well-formed ELF file of this byte order. A
 * file without symbols loads with nsyms == 0.
 */
int rb_elf_read(int fd, uint64_t size, size_t budget, struct rb_elf *elf);
/* Open path (hal_open_file, symlinks followed) and rb_elf_read it with no budget: for
 * callers that trust the path. */
int rb_elf_load(const char *path, struct rb_elf *elf);
/* Parse an ELF image in memory (for the fuzzer and tests); the same caps, no budget. */
int rb_elf_parse(const uint8_t *data, size_t size, struct rb_elf *elf);
void rb_elf_free(struct rb_elf *elf);
/* Read n bytes of code at virtual address vaddr from fd, the file elf was read from: 0, or
 * -ENOENT when no executable section of the file holds them all, or a read's error (a file
 * that shrank meanwhile is -EINVAL). */
int rb_elf_code_read(const struct rb_elf_code *code, int fd, uint64_t vaddr, void *buf, size_t n);
/* The function containing addr (a virtual address), or NULL. */
const struct rb_symbol *rb_elf_lookup(const struct rb_elf *elf, uint64_t addr);
/* The function named name (the first of that name, by address), or NULL. A scan of every
 * symbol: for a few names at start-up, not per address. */
const struct rb_symbol *rb_elf_find(const struct rb_elf *elf, const char *name);

/* A function that -Wl,--wrap put in front of another one (ringbuf/sleds_libc.c:
 * __wrap_memcpy before the C library's memcpy) is shown under the name of the function it
 * stands for: what the program called, and what perf names. */
#define RB_ELF_WRAP_PREFIX "__wrap_"
const char *rb_elf_shown_name(const char *name);

#endif
