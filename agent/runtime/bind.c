/* SPDX-License-Identifier: MIT */
/*
 * Binding the blocking-call wrappers (wrap.c) through the main program's GOT, on glibc: the
 * program is linked without -Wl,--wrap for them, so its calls go straight to the C library
 * until a thread is first traced; then each of the program's slots for a wrapped function
 * is pointed at the wrapper. A program that never traces a thread pays nothing for the
 * wrappers (with --wrap, every pthread_mutex_lock of memcached's worker paid a call to the
 * wrapper, a thread-local load, a test and a jump: 1-2% of the worker on multiget, off).
 *
 * The slots: those of the program's PLT (DT_JMPREL, JUMP_SLOT relocations) and the GOT
 * entries that -fno-plt calls and address loads read (GLOB_DAT). With -z relro (Debian's
 * default) and -z now, they lie in the RELRO segment, read-only once the dynamic linker is
 * done: made writable for the writes and read-only again. A slot is one aligned word, so
 * another thread's call through it sees the C library's function or the wrapper, both
 * right. Shared libraries' own calls stay unwrapped, as -Wl,--wrap left them.
 *
 * The dynamic section's addresses: glibc's dynamic linker rewrites them in place to
 * run-time addresses where the section is writable (every target here); one below the
 * load address is an offset still, and is added to it.
 */
#define _GNU_SOURCE
#include "agent/log.h"
#include "agent/runtime/runtime.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
#define R_SLOT R_X86_64_JUMP_SLOT
#define R_DATA R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define R_SLOT R_AARCH64_JUMP_SLOT
#define R_DATA R_AARCH64_GLOB_DAT
#elif defined(__arm__)
#define R_SLOT R_ARM_JUMP_SLOT
#define R_DATA R_ARM_GLOB_DAT
#elif defined(__i386__)
#define R_SLOT R_386_JMP_SLOT
#define R_DATA R_386_GLOB_DAT
#endif
#if UINTPTR_MAX > 0xffffffffu
#define REL_TYPE   ELF64_R_TYPE
#define REL_SYMBOL ELF64_R_SYM
#else
#define REL_TYPE   ELF32_R_TYPE
#define REL_SYMBOL ELF32_R_SYM
#endif

/* The main program as loaded: the first object dl_iterate_phdr reports. */
struct program {
	uintptr_t base;
	const ElfW(Dyn) * dynamic;
	uintptr_t relro, relro_end; /* 0, 0 without PT_GNU_RELRO */
};

RT static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct program *p = data;
	p->base = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_DYNAMIC)
			p->dynamic = (const ElfW(Dyn) *)(p->base + ph->p_vaddr);
		else if (ph->p_type == PT_GNU_RELRO) {
			p->relro = p->base + ph->p_vaddr;
			p->relro_end = p->relro + ph->p_memsz;
		}
	}
	return 1; /* only the program */
}

RT static uintptr_t at(const struct program *p, uintptr_t v)
{
	return v && v < p->base ? p->base + v : v;
}

/* Writes the wrapper into the slot at addr, through a writable mapping if it lies in RELRO.
 * The dynamic linker makes read-only the RELRO pages that end inside the segment, its last
 * partial page staying writable (other data shares it): only those are made writable here,
 * and read-only again. */
RT static bool slot_write(const struct program *p, uintptr_t addr, void *wrapper)
{
	uintptr_t mask = (uintptr_t)sysconf(_SC_PAGESIZE) - 1, page = addr & ~mask;
	bool relro = addr >= p->relro && page + mask < (p->relro_end & ~mask);
	size_t len = addr + sizeof(void *) - page;
	if (relro && mprotect((void *)page, len, PROT_READ | PROT_WRITE))
		return false;
	__atomic_store_n((void **)addr, wrapper, __ATOMIC_RELEASE);
	if (relro)
		(void)mprotect((void *)page, len, PROT_READ);
	return true;
}

/* A relocation table (Rel or Rela: both begin with r_offset, r_info), its slots bound. */
RT static size_t bind_table(const struct program *p, uintptr_t table, size_t bytes, size_t entry,
			    const ElfW(Sym) * symtab, const char *strtab,
			    const struct agent_bound *b, size_t n)
{
	size_t bound = 0;
	for (size_t off = 0; table && entry && off + entry <= bytes; off += entry) {
		const ElfW(Rel) *r = (const ElfW(Rel) *)(table + off);
		unsigned long type = REL_TYPE(r->r_info);
		if (type != R_SLOT && type != R_DATA)
			continue;
		const char *name = strtab + symtab[REL_SYMBOL(r->r_info)].st_name;
		for (size_t i = 0; i < n; i++) {
			if (!*b[i].real || strcmp(name, b[i].name))
				continue;
			if (slot_write(p, p->base + r->r_offset, b[i].wrapper))
				bound++;
			else
				log_warn("jitt: wrappers: %s not bound: mprotect: %s", name,
					 strerror(errno));
			break;
		}
	}
	return bound;
}

RT size_t agent_got_bind(const struct agent_bound *b, size_t n)
{
#ifdef R_SLOT
	struct program p = { 0 };
	dl_iterate_phdr(first_object, &p);
	if (!p.dynamic)
		return 0;
	uintptr_t symtab = 0, strtab = 0, jmprel = 0, rela = 0, rel = 0;
	size_t pltrelsz = 0, pltrel = 0, relasz = 0, relaent = 0, relsz = 0, relent = 0;
	for (const ElfW(Dyn) *d = p.dynamic; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB:
			symtab = at(&p, d->d_un.d_ptr);
			break;
		case DT_STRTAB:
			strtab = at(&p, d->d_un.d_ptr);
			break;
		case DT_JMPREL:
			jmprel = at(&p, d->d_un.d_ptr);
			break;
		case DT_PLTRELSZ:
			pltrelsz = d->d_un.d_val;
			break;
		case DT_PLTREL:
			pltrel = d->d_un.d_val;
			break;
		case DT_RELA:
			rela = at(&p, d->d_un.d_ptr);
			break;
		case DT_RELASZ:
			relasz = d->d_un.d_val;
			break;
		case DT_RELAENT:
			relaent = d->d_un.d_val;
			break;
		case DT_REL:
			rel = at(&p, d->d_un.d_ptr);
			break;
		case DT_RELSZ:
			relsz = d->d_un.d_val;
			break;
		case DT_RELENT:
			relent = d->d_un.d_val;
			break;
		}
	}
	if (!symtab || !strtab)
		return 0;
	const ElfW(Sym) *syms = (const ElfW(Sym) *)symtab;
	const char *strs = (const char *)strtab;
	size_t plt_entry = pltrel == DT_RELA ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel));
	return bind_table(&p, jmprel, pltrelsz, plt_entry, syms, strs, b, n) +
	       bind_table(&p, rela, relasz, relaent, syms, strs, b, n) +
	       bind_table(&p, rel, relsz, relent, syms, strs, b, n);
#else
	(void)b, (void)n;
	return 0;
#endif
}
