/* SPDX-License-Identifier: MIT */
#include "elf.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Every field is read through these, with bounds checked: the file may be anything. */
struct image {
	const uint8_t *d;
	size_t size;
	bool is64;
};

static bool in_bounds(const struct image *im, uint64_t off, uint64_t len)
{
	return off <= im->size && len <= im->size - off;
}

static uint64_t rd(const struct image *im, uint64_t off, int width)
{
	uint64_t v = 0;
	memcpy(&v, im->d + off, (size_t)width); /* same byte order: checked in parse */
	return width == 4 ? (uint32_t)v : width == 2 ? (uint16_t)v : v;
}

struct section {
	uint32_t type, link;
	uint64_t offset, size, entsize;
};

static bool section_at(const struct image *im, uint64_t shoff, uint64_t shentsize, uint64_t i,
		       struct section *s)
{
	uint64_t off = shoff + i * shentsize;
	if (!in_bounds(im, off, shentsize))
		return false;
	if (im->is64) {
		s->type = (uint32_t)rd(im, off + 4, 4);
		s->offset = rd(im, off + 24, 8);
		s->size = rd(im, off + 32, 8);
		s->link = (uint32_t)rd(im, off + 40, 4);
		s->entsize = rd(im, off + 56, 8);
	} else {
		s->type = (uint32_t)rd(im, off + 4, 4);
		s->offset = rd(im, off + 16, 4);
		s->size = rd(im, off + 20, 4);
		s->link = (uint32_t)rd(im, off + 24, 4);
		s->entsize = rd(im, off + 36, 4);
	}
	return in_bounds(im, s->offset, s->type == SHT_NOBITS ? 0 : s->size);
}

static void read_build_id(const struct image *im, const struct section *s, struct rb_elf *elf)
{
	uint64_t p = s->offset, end = s->offset + s->size;
	while (p + 12 <= end) {
		uint32_t namesz = (uint32_t)rd(im, p, 4), descsz = (uint32_t)rd(im, p + 4, 4),
			 type = (uint32_t)rd(im, p + 8, 4);
		uint64_t name = p + 12, desc = name + (((uint64_t)namesz + 3) & ~3ull);
		if (desc > end || descsz > end - desc)
			return;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(im->d + name, "GNU", 4) == 0) {
			elf->build_id_len = descsz > 32 ? 32 : (uint8_t)descsz;
			memcpy(elf->build_id, im->d + desc, elf->build_id_len);
			return;
		}
		p = desc + (((uint64_t)descsz + 3) & ~3ull);
	}
}

static int by_addr(const void *a, const void *b)
{
	const struct rb_symbol *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int read_symbols(const struct image *im, const struct section *symtab,
			const struct section *strtab, struct rb_elf *elf)
{
	uint64_t entsize = im->is64 ? 24 : 16;
	if (symtab->entsize != entsize || strtab->type != SHT_STRTAB)
		return -EINVAL;
	uint64_t n = symtab->size / entsize;
	elf->syms = calloc(n ? n : 1, sizeof(*elf->syms));
	elf->strings = malloc(strtab->size + 1);
	if (!elf->syms || !elf->strings)
		return -ENOMEM;
	memcpy(elf->strings, im->d + strtab->offset, strtab->size);
	elf->strings[strtab->size] = '\0'; /* every name ends inside the copy */
	for (uint64_t i = 0; i < n; i++) {
		uint64_t off = symtab->offset + i * entsize, name, value, size;
		uint8_t info;
		uint16_t shndx;
		if (im->is64) {
			name = rd(im, off, 4);
			info = im->d[off + 4];
			shndx = (uint16_t)rd(im, off + 6, 2);
			value = rd(im, off + 8, 8);
			size = rd(im, off + 16, 8);
		} else {
			name = rd(im, off, 4);
			value = rd(im, off + 4, 4);
			size = rd(im, off + 8, 4);
			info = im->d[off + 12];
			shndx = (uint16_t)rd(im, off + 14, 2);
		}
		if ((info & 0xf) != STT_FUNC || shndx == SHN_UNDEF || name >= strtab->size)
			continue;
		elf->syms[elf->nsyms++] = (struct rb_symbol){ value, size, elf->strings + name };
	}
	qsort(elf->syms, elf->nsyms, sizeof(*elf->syms), by_addr);
	return 0;
}

int rb_elf_parse(const uint8_t *data, size_t size, struct rb_elf *elf)
{
	memset(elf, 0, sizeof(*elf));
	struct image im = { data, size, false };
	if (size < 52 || memcmp(data, ELFMAG, SELFMAG) != 0)
		return -EINVAL;
	if (data[EI_CLASS] != ELFCLASS32 && data[EI_CLASS] != ELFCLASS64)
		return -EINVAL;
	im.is64 = data[EI_CLASS] == ELFCLASS64;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (data[EI_DATA] != ELFDATA2LSB)
#else
	if (data[EI_DATA] != ELFDATA2MSB)
#endif
		return -EINVAL;
	if (im.is64 && size < 64)
		return -EINVAL;
	uint64_t shoff = rd(&im, im.is64 ? 40 : 32, im.is64 ? 8 : 4);
	uint64_t shentsize = rd(&im, im.is64 ? 58 : 46, 2);
	uint64_t shnum = rd(&im, im.is64 ? 60 : 48, 2);
	if (shnum == 0)
		return 0; /* no sections: nothing to name */
	if (shentsize < (im.is64 ? 64u : 40u) || !in_bounds(&im, shoff, shnum * shentsize))
		return -EINVAL;

	struct section sym = { 0 }, dynsym = { 0 };
	bool have_sym = false, have_dynsym = false;
	for (uint64_t i = 0; i < shnum; i++) {
		struct section s;
		if (!section_at(&im, shoff, shentsize, i, &s))
			return -EINVAL;
		if (s.type == SHT_NOTE && !elf->build_id_len)
			read_build_id(&im, &s, elf);
		if (s.type == SHT_SYMTAB && !have_sym) {
			sym = s;
			have_sym = true;
		}
		if (s.type == SHT_DYNSYM && !have_dynsym) {
			dynsym = s;
			have_dynsym = true;
		}
	}
	/* .symtab names every function; a stripped file may still have .dynsym. */
	const struct section *table = have_sym ? &sym : have_dynsym ? &dynsym : NULL;
	if (!table)
		return 0;
	struct section strtab;
	if (table->link >= shnum || !section_at(&im, shoff, shentsize, table->link, &strtab)) {
		rb_elf_free(elf);
		return -EINVAL;
	}
	int err = read_symbols(&im, table, &strtab, elf);
	if (err)
		rb_elf_free(elf);
	return err;
}

int rb_elf_load(const char *path, struct rb_elf *elf)
{
	memset(elf, 0, sizeof(*elf));
	/* The path comes from a trace file, which jittd reads as another user: O_NONBLOCK so
	 * a FIFO put there cannot hang the reader, and only regular files are mapped. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
		close(fd);
		return -EINVAL;
	}
	void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	int err = rb_elf_parse(map, (size_t)st.st_size, elf); /* copies what it keeps */
	munmap(map, (size_t)st.st_size);
	return err;
}

void rb_elf_free(struct rb_elf *elf)
{
	free(elf->syms);
	free(elf->strings);
	memset(elf, 0, sizeof(*elf));
}

const struct rb_symbol *rb_elf_lookup(const struct rb_elf *elf, uint64_t addr)
{
	size_t lo = 0, hi = elf->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (elf->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct rb_symbol *s = &elf->syms[lo - 1];
	return addr < s->addr + (s->size ? s->size : 1) ? s : NULL;
}
