/* SPDX-License-Identifier: MIT */
/*
 * agent/runtime/learn_memory.h - sleds learning's memory across runs (learn_memory.c):
 * encoded, decoded and checked here, kept in a folder of the app's own; sleds.c fills it
 * from its state and starts from it.
 */
#ifndef JITT_AGENT_RUNTIME_LEARN_MEMORY_H
#define JITT_AGENT_RUNTIME_LEARN_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a memory must have been made for: this very program, timer and threshold. */
struct agent_memory_key {
	uint64_t layout; /* a hash of the sleds' places in the program (sleds.c) */
	uint64_t freq;	 /* the timer's ticks a second: the times' unit */
	uint32_t nsleds, min_ns;
	uint8_t build_id_len;
	uint8_t build_id[32];
};

/* A function's counts over the windows (sleds.c's learn_fn; ticks), and its samples. */
struct agent_memory_fn {
	uint32_t idx, windows;
	uint64_t calls, incl, self, parent, hits;
};

struct agent_memory_counted {
	uint32_t idx, mean; /* a counted function, and its mean call in ticks */
};

/* Counts past this are refused: sums of a few thousand of them cannot overflow. */
#define AGENT_MEMORY_COUNT_MAX (1ull << 48)
#define AGENT_MEMORY_EDGES_MAX (1u << 15) /* sleds.c's LEARN_EDGES */

struct agent_memory {
	struct agent_memory_key key;
	uint64_t samples; /* all the samples in the program's functions */
	uint64_t span;	  /* ticks: the windows' records, all rings */
	bool edges_full;
	struct agent_memory_fn *fn; /* functions with counts, by ascending idx */
	size_t nfn;
	uint64_t *edges; /* (caller + 1) << 32 | (callee + 1), sled indexes */
	size_t nedges;
	struct agent_memory_counted *counted;
	size_t ncounted;
	uint32_t *out; /* the sleds out of the trace */
	size_t nout;
};

/* m as the file's bytes (*buf malloc'd, *len of them). 0 or -ENOMEM. */
int agent_memory_encode(const struct agent_memory *m, void **buf, size_t *len);
/* The memory in buf[0..len) into m (its arrays malloc'd: agent_memory_free), if it was
 * made for want and every part checks; else -EINVAL (damaged, or not a memory), -ESTALE
 * (made for another program or setting) or -ENOMEM, and why it was refused in *why. */
int agent_memory_decode(const void *buf, size_t len, const struct agent_memory_key *want,
			struct agent_memory *m, const char **why);
void agent_memory_free(struct agent_memory *m);

/* The folder the memory lives in, from the setting sleds_memory (off: -ENOENT; a path;
 * empty: the app's cache folder, from the environment unless secure), made if missing
 * (0700). 0, or -ENOENT where there is none, or mkdir's error. */
int agent_memory_folder(const char *setting, bool secure, char *path, size_t size);
/* The file name in folder dir, read whole into *buf (malloc'd) if the folder and the file
 * are the app's own; else a negative errno, and why in *why ("none yet": -ENOENT). */
int agent_memory_read(const char *dir, const char *name, void **buf, size_t *len,
		      const char **why);
/* buf[0..len) as the file name in dir (the app's own), through a temporary and a rename:
 * a reader sees the old file or the new one. 0, or a negative errno and why. */
int agent_memory_write(const char *dir, const char *name, const void *buf, size_t len,
		       const char **why);

#endif
