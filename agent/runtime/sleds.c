/* SPDX-License-Identifier: MIT */
/*
 * The runtime's side of sleds (ringbuf/sleds.h): at start-up, in a program built with them
 * (jitt-sleds.pc), which functions to patch, from the settings' `sleds` and
 * `sleds_exclude`. The patcher itself is in libjitt-sleds.a, linked only by such programs:
 * here it is a weak reference, NULL everywhere else.
 */
#define _GNU_SOURCE
#include "agent/runtime/runtime.h"
#include "agent/log.h"
#include "hal/fs.h"
#include "ringbuf/elf.h"
#include "ringbuf/sleds.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern const uintptr_t *rb_sleds_list(size_t *n) __attribute__((weak));
extern int rb_sleds_patch(const uintptr_t *skip, size_t nskip, enum rb_sled_time time,
			  struct rb_sleds_stats *st) __attribute__((weak));
extern int rb_sleds_thread_init(void) __attribute__((weak));

/* A list names a few thousand functions at most; what is past this is not a list. */
#define EXCLUDE_MAX_BYTES (1u << 20)
#define EXCLUDE_OPTION "-finstrument-functions-exclude-function-list="

static bool sleds_on;

/* The whole of a regular file of at most max bytes, NUL-terminated, in *text (malloc). */
RT static int read_small_file(const char *path, size_t max, char **text)
{
	struct stat st;
	int fd = hal_open_file(AT_FDCWD, path, true, &st);
	if (fd < 0)
		return fd;
	int err = 0;
	char *buf = NULL;
	if ((uint64_t)st.st_size > max)
		err = -EFBIG;
	else if (!(buf = malloc((size_t)st.st_size + 1)))
		err = -ENOMEM;
	size_t got = 0;
	while (!err && got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			err = r ? -errno : -EINVAL; /* shrank meanwhile */
		else
			got += (size_t)r;
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	buf[got] = 0;
	*text = buf;
	return 0;
}

RT static int main_bias(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uintptr_t *)data = (uintptr_t)info->dlpi_addr;
	return 1; /* the first object is the program */
}

RT static int cmp_addr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * The names of a `jitt exclude` list (lines of EXCLUDE_OPTION followed by names separated
 * by commas, as GCC takes them) cut in place in text: each name NUL-terminated, *n of them
 * put in names (at most max). Lines without the option are refused, so a file that is not
 * a list is not half read. Returns 0 or -EINVAL.
 */
RT static int exclude_names(char *text, const char **names, size_t max, size_t *n)
{
	*n = 0;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (!*line)
			continue;
		if (strncmp(line, EXCLUDE_OPTION, strlen(EXCLUDE_OPTION)))
			return -EINVAL;
		for (char *name = line + strlen(EXCLUDE_OPTION), *end; name; name = end) {
			end = strchr(name, ',');
			if (end)
				*end++ = 0;
			if (*name && *n < max)
				names[(*n)++] = name;
		}
	}
	return 0;
}

/*
 * The sleds whose function's name contains a name of the list (GCC's rule for the same
 * list, so that it leaves out the same functions in both builds), sorted, into skip; their
 * count, or a negative errno: -EINVAL for a file that is not a list, -ENODATA for a program
 * without a symbol table (stripped).
 */
RT static long exclude_sleds(const char *path, const uintptr_t *sleds, size_t nsleds,
			     uintptr_t *skip)
{
	char *text = NULL;
	int err = read_small_file(path, EXCLUDE_MAX_BYTES, &text);
	if (err)
		return err;
	size_t max = strlen(text) / 2 + 1, nnames;
	const char **names = malloc(max * sizeof(*names));
	struct rb_elf elf;
	memset(&elf, 0, sizeof(elf));
	err = names ? exclude_names(text, names, max, &nnames) : -ENOMEM;
	if (!err)
		err = rb_elf_load("/proc/self/exe", &elf);
	if (!err && !elf.full_symtab)
		err = -ENODATA; /* stripped */
	uintptr_t bias = 0;
	if (!err)
		dl_iterate_phdr(main_bias, &bias);
	long n = 0;
	for (size_t i = 0; !err && i < nsleds; i++) {
		const struct rb_symbol *s = rb_elf_lookup(&elf, sleds[i] - bias);
		if (!s || s->addr != sleds[i] - bias)
			continue;
		for (size_t k = 0; k < nnames; k++)
			if (strstr(s->name, names[k])) {
				skip[n++] = sleds[i];
				break;
			}
	}
	rb_elf_free(&elf);
	free(names);
	free(text);
	if (err)
		return err;
	qsort(skip, (size_t)n, sizeof(*skip), cmp_addr);
	return n;
}

RT void agent_sleds_start(const struct agent_config *cfg)
{
	size_t nsleds = 0;
	const uintptr_t *sleds = rb_sleds_list ? rb_sleds_list(&nsleds) : NULL;
	if (!nsleds)
		return;
	if (!strcmp(cfg->sleds, "off")) {
		log_info("jitt: sleds: off (sleds = off): %zu functions untraced", nsleds);
		return;
	}
	uintptr_t *skip = NULL;
	long nskip = 0;
	if (cfg->sleds_exclude[0]) {
		skip = malloc(nsleds * sizeof(*skip));
		nskip = skip ? exclude_sleds(cfg->sleds_exclude, sleds, nsleds, skip) : -ENOMEM;
		if (nskip < 0) {
			/* Every function traced would cost what the list is there to save. */
			log_err("jitt: sleds: %s: %s: no function traced", cfg->sleds_exclude,
				nskip == -EINVAL ? "not a `jitt exclude` list"
				: nskip == -ENODATA ? "the program has no symbol table to match it"
						   : strerror((int)-nskip));
			free(skip);
			return;
		}
	}
	struct rb_sleds_stats st;
	enum rb_sled_time time = strcmp(cfg->sleds, "timed") ? RB_SLED_SAMPLED : RB_SLED_TIMED;
	int err = rb_sleds_patch(skip, (size_t)nskip, time, &st);
	free(skip);
	if (err) {
		log_err("jitt: sleds: cannot patch: %s: no function traced", strerror(-err));
		return;
	}
	sleds_on = true;
	log_info("jitt: sleds: %zu of %zu functions traced, %s time (%zu left out by %s)",
		 st.patched, st.sleds, time == RB_SLED_TIMED ? "every record's" : "sampled",
		 st.excluded, cfg->sleds_exclude[0] ? cfg->sleds_exclude : "no list");
}

RT int agent_sleds_thread_start(void)
{
	return sleds_on && rb_sleds_thread_init ? rb_sleds_thread_init() : 0;
}
