/* SPDX-License-Identifier: MIT */
#include "elf.h"
#include "hal/fs.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Every byte is read through img_read, bounds checked against the size the caller saw: the
 * file may be anything. A file is read with pread, never mapped: one that shrinks while it
 * is read gives a short read (-EINVAL), where a mapping would give SIGBUS.
 */
struct image {
	const uint8_t *d; /* the image in memory, or NULL: read through fd */
	int fd;
	uint64_t size;
	bool is64;
	uint64_t note_bytes; /* note bytes read so far, against RB_ELF_MAX_NOTES */
	size_t budget;	     /* bytes the symbols may still take */
};

static bool in_bounds(const struct image *im, uint64_t off, uint64_t len)
{
	return off <= im->size && len <= im->size - off;
}

static int img_read(const struct image *im, uint64_t off, void *buf, size_t len)
{
	if (!in_bounds(im, off, len))
		return -EINVAL;
	if (im->d) {
		memcpy(buf, im->d + off, len);
		return 0;
	}
	size_t n = 0;
	while (n < len) {
		ssize_t r = pread(im->fd, (uint8_t *)buf + n, len - n, (off_t)(off + n));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EINVAL; /* shorter than fstat said: it shrank under us */
		n += (size_t)r;
	}
	return 0;
}

static uint64_t rd(const uint8_t *p, int width)
{
	uint64_t v = 0;
	memcpy(&v, p, (size_t)width); /* same byte order: checked in parse */
	return width == 4 ? (uint32_t)v : width == 2 ? (uint16_t)v : v;
}

struct section {
	uint32_t name, type, link;
	uint64_t flags, addr, offset, size, entsize;
};

static int section_at(const struct image *im, uint64_t shoff, uint64_t shentsize, uint64_t i,
		      struct section *s)
{
	uint8_t b[64];
	uint64_t off = shoff + i * shentsize;
	if (!in_bounds(im, off, shentsize))
		return -EINVAL;
	int err = img_read(im, off, b, im->is64 ? 64 : 40);
	if (err)
		return err;
	s->name = (uint32_t)rd(b, 4);
	if (im->is64) {
		s->type = (uint32_t)rd(b + 4, 4);
		s->flags = rd(b + 8, 8);
		s->addr = rd(b + 16, 8);
		s->offset = rd(b + 24, 8);
		s->size = rd(b + 32, 8);
		s->link = (uint32_t)rd(b + 40, 4);
		s->entsize = rd(b + 56, 8);
	} else {
		s->type = (uint32_t)rd(b + 4, 4);
		s->flags = rd(b + 8, 4);
		s->addr = rd(b + 12, 4);
		s->offset = rd(b + 16, 4);
		s->size = rd(b + 20, 4);
		s->link = (uint32_t)rd(b + 24, 4);
		s->entsize = rd(b + 36, 4);
	}
	return in_bounds(im, s->offset, s->type == SHT_NOBITS ? 0 : s->size) ? 0 : -EINVAL;
}

/* The GNU build-id, from the notes of one SHT_NOTE section. Note sections past what is
 * left of RB_ELF_MAX_NOTES are skipped: a file of many large overlapping note sections
 * cannot make the reader go through gigabytes. */
static int read_build_id(struct image *im, const struct section *s, struct rb_elf *elf)
{
	if (s->size > RB_ELF_MAX_NOTES - im->note_bytes)
		return 0;
	im->note_bytes += s->size;
	uint8_t *d = malloc(s->size ? s->size : 1);
	if (!d)
		return -ENOMEM;
	int err = img_read(im, s->offset, d, s->size);
	uint64_t p = 0, end = s->size;
	while (!err && p + 12 <= end) {
		uint32_t namesz = (uint32_t)rd(d + p, 4), descsz = (uint32_t)rd(d + p + 4, 4),
			 type = (uint32_t)rd(d + p + 8, 4);
		uint64_t name = p + 12, desc = name + (((uint64_t)namesz + 3) & ~3ull);
		if (desc > end || descsz > end - desc)
			break;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(d + name, "GNU", 4) == 0) {
			elf->build_id_len = descsz > 32 ? 32 : (uint8_t)descsz;
			memcpy(elf->build_id, d + desc, elf->build_id_len);
			break;
		}
		p = desc + (((uint64_t)descsz + 3) & ~3ull);
	}
	free(d);
	return err;
}

/* Section s is named name (its name read from the section-name table shstr). */
static bool named(const struct image *im, const struct section *shstr, const struct section *s,
		  const char *name)
{
	char buf[32];
	size_t len = strlen(name) + 1;
	if (!shstr || len > sizeof(buf) || s->name > shstr->size || len > shstr->size - s->name)
		return false;
	return img_read(im, shstr->offset + s->name, buf, len) == 0 && memcmp(buf, name, len) == 0;
}

/*
 * .gnu_debuglink: a file name, NUL-terminated, padded to 4 bytes, then the CRC-32 of the
 * debug file. The name is joined to folders by the debug-file lookup, so only one plain
 * path component is kept: no '/', not "." or "..", no control bytes; anything else (or a
 * section too short for its CRC) leaves debuglink empty, as if there were none.
 */
static int read_debuglink(const struct image *im, const struct section *s, struct rb_elf *elf)
{
	uint8_t d[RB_ELF_DEBUGLINK_MAX + 1 + 3 + 4];
	uint64_t n = s->size < sizeof(d) ? s->size : sizeof(d);
	int err = img_read(im, s->offset, d, (size_t)n);
	if (err)
		return err;
	size_t len = 0;
	while (len < n && d[len])
		len++;
	uint64_t crc_at = (len + 1 + 3) & ~(uint64_t)3;
	if (len == 0 || len > RB_ELF_DEBUGLINK_MAX || crc_at + 4 > n)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (d[i] == '/' || d[i] < 0x20 || d[i] == 0x7f)
			return 0;
	if ((len == 1 && d[0] == '.') || (len == 2 && d[0] == '.' && d[1] == '.'))
		return 0;
	memcpy(elf->debuglink, d, len);
	elf->debuglink[len] = '\0';
	elf->debuglink_crc = (uint32_t)rd(d + crc_at, 4);
	return 0;
}

static int by_addr(const void *a, const void *b)
{
	const struct rb_symbol *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The function symbols of a symbol table. Both tables are checked against their caps and
 * the budget before anything is allocated; the table itself is read a chunk at a time, and
 * only its function symbols are kept. */
static int read_symbols(const struct image *im, const struct section *symtab,
			const struct section *strtab, struct rb_elf *elf)
{
	enum { CHUNK = 2048 };
	uint64_t entsize = im->is64 ? 24 : 16;
	if (symtab->entsize != entsize || strtab->type != SHT_STRTAB)
		return -EINVAL;
	uint64_t n = symtab->size / entsize;
	/* At worst every entry is a function: what is kept is the strings and n symbols. */
	if (symtab->size > RB_ELF_MAX_SYMTAB || strtab->size > RB_ELF_MAX_STRTAB ||
	    strtab->size + 1 + n * sizeof(struct rb_symbol) > im->budget)
		return -EFBIG;
	elf->strings = malloc(strtab->size + 1);
	uint8_t *chunk = malloc(CHUNK * entsize);
	size_t cap = 0;
	int err = !elf->strings || !chunk ? -ENOMEM : 0;
	if (!err)
		err = img_read(im, strtab->offset, elf->strings, strtab->size);
	if (!err)
		elf->strings[strtab->size] = '\0'; /* every name ends inside the copy */
	for (uint64_t i = 0; i < n && !err; i += CHUNK) {
		uint64_t m = n - i < CHUNK ? n - i : CHUNK;
		if ((err = img_read(im, symtab->offset + i * entsize, chunk, m * entsize)) != 0)
			break;
		for (uint64_t j = 0; j < m; j++) {
			const uint8_t *e = chunk + j * entsize;
			uint64_t name, value, size;
			uint8_t info;
			uint16_t shndx;
			if (im->is64) {
				name = rd(e, 4);
				info = e[4];
				shndx = (uint16_t)rd(e + 6, 2);
				value = rd(e + 8, 8);
				size = rd(e + 16, 8);
			} else {
				name = rd(e, 4);
				value = rd(e + 4, 4);
				size = rd(e + 8, 4);
				info = e[12];
				shndx = (uint16_t)rd(e + 14, 2);
			}
			if ((info & 0xf) != STT_FUNC || shndx == SHN_UNDEF || name >= strtab->size)
				continue;
			if (elf->nsyms == cap) {
				size_t grow = cap ? 2 * cap : 256;
				if (grow > n)
					grow = (size_t)n;
				struct rb_symbol *more = realloc(elf->syms, grow * sizeof(*more));
				if (!more) {
					err = -ENOMEM;
					break;
				}
				elf->syms = more;
				cap = grow;
			}
			elf->syms[elf->nsyms++] =
				(struct rb_symbol){ value, size, elf->strings + name };
		}
	}
	free(chunk);
	if (err)
		return err;
	qsort(elf->syms, elf->nsyms, sizeof(*elf->syms), by_addr);
	elf->bytes = strtab->size + 1 + cap * sizeof(struct rb_symbol);
	return 0;
}

static int parse(struct image *im, struct rb_elf *elf)
{
	memset(elf, 0, sizeof(*elf));
	uint8_t h[64];
	if (im->size < 52 || img_read(im, 0, h, 52) != 0 || memcmp(h, ELFMAG, SELFMAG) != 0)
		return -EINVAL;
	if (h[EI_CLASS] != ELFCLASS32 && h[EI_CLASS] != ELFCLASS64)
		return -EINVAL;
	im->is64 = h[EI_CLASS] == ELFCLASS64;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (h[EI_DATA] != ELFDATA2LSB)
#else
	if (h[EI_DATA] != ELFDATA2MSB)
#endif
		return -EINVAL;
	if (im->is64 && (im->size < 64 || img_read(im, 52, h + 52, 12) != 0))
		return -EINVAL;
	elf->code.machine = (uint16_t)rd(h + 18, 2);
	uint64_t shoff = rd(h + (im->is64 ? 40 : 32), im->is64 ? 8 : 4);
	uint64_t shentsize = rd(h + (im->is64 ? 58 : 46), 2);
	uint64_t shnum = rd(h + (im->is64 ? 60 : 48), 2);
	uint64_t shstrndx = rd(h + (im->is64 ? 62 : 50), 2);
	if (shnum == 0)
		return 0; /* no sections: nothing to name */
	if (shentsize < (im->is64 ? 64u : 40u) || !in_bounds(im, shoff, shnum * shentsize))
		return -EINVAL;

	struct section sym = { 0 }, dynsym = { 0 }, shstr;
	bool have_sym = false, have_dynsym = false;
	/* Section names are looked at only to find .gnu_debuglink; a file without a usable
	 * name table simply has none. */
	bool have_shstr = shstrndx < shnum &&
			  section_at(im, shoff, shentsize, shstrndx, &shstr) == 0 &&
			  shstr.type == SHT_STRTAB;
	int err = 0;
	for (uint64_t i = 0; i < shnum && !err; i++) {
		struct section s;
		if ((err = section_at(im, shoff, shentsize, i, &s)) != 0)
			break;
		if (s.type == SHT_NOTE && !elf->build_id_len)
			err = read_build_id(im, &s, elf);
		if (s.type == SHT_PROGBITS && !elf->debuglink[0] &&
		    named(im, have_shstr ? &shstr : NULL, &s, ".gnu_debuglink"))
			err = read_debuglink(im, &s, elf);
		if (s.type == SHT_PROGBITS && (s.flags & SHF_EXECINSTR) && s.size &&
		    elf->code.n < RB_ELF_CODE_MAX && s.addr + s.size > s.addr) {
			elf->code.sec[elf->code.n].addr = s.addr;
			elf->code.sec[elf->code.n].offset = s.offset;
			elf->code.sec[elf->code.n++].size = s.size;
		}
		if (s.type == SHT_SYMTAB && !have_sym) {
			sym = s;
			have_sym = true;
		}
		if (s.type == SHT_DYNSYM && !have_dynsym) {
			dynsym = s;
			have_dynsym = true;
		}
	}
	if (err)
		return err;
	/* .symtab names every function; a stripped file may still have .dynsym. */
	const struct section *table = have_sym ? &sym : have_dynsym ? &dynsym : NULL;
	if (!table)
		return 0;
	struct section strtab;
	err = table->link < shnum ? section_at(im, shoff, shentsize, table->link, &strtab)
				  : -EINVAL;
	if (!err)
		err = read_symbols(im, table, &strtab, elf);
	if (err) {
		rb_elf_free(elf);
		return err;
	}
	elf->full_symtab = have_sym;
	return 0;
}

int rb_elf_code_read(const struct rb_elf_code *code, int fd, uint64_t vaddr, void *buf, size_t n)
{
	for (unsigned i = 0; i < code->n; i++) {
		uint64_t lo = code->sec[i].addr, size = code->sec[i].size;
		if (vaddr < lo || vaddr - lo > size || n > size - (vaddr - lo))
			continue;
		/* The section was within the file when it was read (section_at). */
		struct image im = { .fd = fd, .size = UINT64_MAX, .budget = SIZE_MAX };
		return img_read(&im, code->sec[i].offset + (vaddr - lo), buf, n);
	}
	return -ENOENT;
}

int rb_elf_parse(const uint8_t *data, size_t size, struct rb_elf *elf)
{
	struct image im = { .d = data, .fd = -1, .size = size, .budget = SIZE_MAX };
	return parse(&im, elf);
}

int rb_elf_read(int fd, uint64_t size, size_t budget, struct rb_elf *elf)
{
	struct image im = { .d = NULL, .fd = fd, .size = size, .budget = budget };
	return parse(&im, elf);
}

int rb_elf_load(const char *path, struct rb_elf *elf)
{
	memset(elf, 0, sizeof(*elf));
	struct stat st;
	int fd = hal_open_file(AT_FDCWD, path, true, &st);
	if (fd < 0)
		return fd;
	int err = rb_elf_read(fd, (uint64_t)st.st_size, SIZE_MAX, elf);
	close(fd);
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

const struct rb_symbol *rb_elf_find(const struct rb_elf *elf, const char *name)
{
	for (size_t i = 0; i < elf->nsyms; i++)
		if (strcmp(elf->syms[i].name, name) == 0)
			return &elf->syms[i];
	return NULL;
}

const char *rb_elf_shown_name(const char *name)
{
	size_t n = sizeof(RB_ELF_WRAP_PREFIX) - 1;
	return strncmp(name, RB_ELF_WRAP_PREFIX, n) == 0 && name[n] ? name + n : name;
}
