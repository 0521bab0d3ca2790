/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/debugfile.h - the separate debug file of a stripped module (docs/symbols.md).
 *
 * OEM images ship stripped binaries; their symbol tables live in debug files, found the way
 * GDB and elfutils find them:
 *   1. by build-id: <debug root>/.build-id/xx/rest.debug (xx the id's first byte in hex);
 *   2. by the module's .gnu_debuglink name, when the module's own file is the one that
 *      ran: beside it, in its .debug/ folder, and under <debug root>/<its folder>/; the
 *      link's CRC-32 must be the candidate's;
 *   3. from a debuginfod server by build-id (agent/analysis/debuginfod.h), kept in a cache.
 * Whatever the place, a file is used only when it is a regular file (looked at before it
 * is opened: agent_open_regular), readable by the trace's owner when one is set, and its
 * build-id is the trace's module's: a debug file of another build would name the wrong
 * functions.
 *
 * The debug root is "<hal root>/usr/lib/debug" (hal/fs.h), so tests point it at a fake tree
 * with hal_root_set or give their own root. Process-wide settings, like hal's root: set
 * them at start-up, before the symbols are first used.
 */
#ifndef JITT_AGENT_DEBUGFILE_H
#define JITT_AGENT_DEBUGFILE_H

#include "ringbuf/elf.h"
#include "ringbuf/tracefile.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* A debug file's CRC is computed over all of it: one past this size is not read. */
#define AGENT_DEBUG_MAX_CRC_BYTES (2ull << 30)

struct agent_debug_settings {
	const char *root;  /* NULL or "": "<hal root>/usr/lib/debug" */
	const char *urls;  /* debuginfod servers, space-separated; NULL or "": none asked */
	const char *cache; /* the folder fetched files are kept in; NULL or "": none fetched */
	int timeout_ms;	   /* each wait on a server; <= 0: the default */
};

/* Copies s (NULL: the defaults, local files only). 0, or -ENAMETOOLONG (nothing changed). */
int agent_debug_set(const struct agent_debug_settings *s);
/* The last debuginfod failure, for a program to tell its user ("" when none). */
const char *agent_debug_error(void);

/*
 * Look first, open after (docs/security.md): a path a trace names may be a device, a FIFO
 * or a folder, and is not even opened then. stat (symlinks followed) must show a regular
 * file, and the file then opened (hal_open_file, O_NONBLOCK) must be that same one, or it
 * was swapped meanwhile (-EAGAIN). With owner != (uid_t)-1 the file must be owned by
 * owner or readable by anyone (-EACCES). The fd, with its stat in *st, or a negative
 * errno: -EISDIR, -EINVAL (not a regular file), an errno of stat or open.
 */
int agent_open_regular(const char *path, uid_t owner, struct stat *st);

/*
 * The debug file of module mod (its build-id and path), loaded into *out (only a file with
 * a .symtab of functions counts). file: what the module's own file gave (its debuglink) when
 * its build-id is mod's, else NULL. budget: what the symbols may take (ringbuf/elf.h). 0,
 * or -ENOENT when no place has a usable one.
 */
int agent_debug_find(const struct rb_module *mod, const struct rb_elf *file, uid_t owner,
		     size_t budget, struct rb_elf *out);

/* The places tried, for tests: the build-id path under root, "" for an id under 2 bytes.
 * 0 or -ENAMETOOLONG. */
int agent_debug_build_id_path(const char *root, const uint8_t *id, unsigned len, char *buf,
			      size_t size);

#endif
