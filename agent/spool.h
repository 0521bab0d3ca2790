/* SPDX-License-Identifier: MIT */
/*
 * agent/spool.h - the data folder's raw traces and their caps, shared by the runtime
 * (which writes traces into spool/) and jittd (which copies them to traces/ or deletes them
 * once summarised). Raw traces are `*.jtr` files; they never leave the device.
 *
 *   <data_dir>/             0711 when jittd creates it: others may reach spool/, list nothing
 *   <data_dir>/spool/       new traces, written atomically by the runtime; 3733 when jittd
 *                           creates it (apps under many uids write there, the sticky bit
 *                           keeps each from removing another's files, none may list it;
 *                           set-group-id: each trace takes jittd's group and is 0640, so
 *                           jittd reads it and no other app does: docs/oem.md)
 *   <data_dir>/traces/      raw traces kept after summarising (keep_traces = 1), 0700
 *   <data_dir>/outbox/      summaries (JSON), for the uploader, 0700
 *   <data_dir>/quarantine/  files that could not be summarised, each with a .why file, 0700
 *
 * The image's init makes the data folder, the spool and the run folder with these modes and
 * their owner (board/common/init/, docs/oem.md); the runtime never makes any of them, and
 * jittd makes only what is missing.
 *
 * The spool is a folder other users write: everything in it is opened once, relative to the
 * folder's descriptor, without following symlinks (docs/security.md). Writers' temporaries
 * are ".tmp-trace-<pid>-..." (ringbuf/tracefile.c); they count against the caps while they
 * exist, and those of writers that are gone are removed.
 */
#ifndef JITT_AGENT_SPOOL_H
#define JITT_AGENT_SPOOL_H

#include "agent/config.h"

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* A writer's temporary: this prefix, its pid, '-' (rb_trace_write makes them). */
#define AGENT_SPOOL_TMP_PREFIX ".tmp-trace-"
/* A temporary is a gone writer's when that pid does not exist and it was last written more
 * than AGENT_SPOOL_TMP_GRACE_S ago (the pid may be of another pid namespace, so the pid
 * alone does not decide), or, whatever its pid, more than AGENT_SPOOL_TMP_MAX_AGE_S ago:
 * pids are reused, and a writer takes well under a second for a trace. */
#define AGENT_SPOOL_TMP_GRACE_S	  60
#define AGENT_SPOOL_TMP_MAX_AGE_S 600

/* The data folder and its sub-folders, each opened once with O_DIRECTORY | O_NOFOLLOW;
 * every later operation is relative to these (openat, renameat, unlinkat, fstatat). */
struct agent_spool_dirs {
	int data, spool, traces, outbox, quarantine, uploads; /* -1 when not open */
};

/*
 * jittd's start: refuse a data_dir that is not absolute or is "/"; check every folder from
 * "/" down to it as sshd's StrictModes does (each owned by root or by us, and not writable
 * by group or others unless it has the sticky bit; the data folder itself not writable by
 * group or others at all); create what is missing (the data folder 0711, spool/ 3733, the
 * others 0700); open each sub-folder once without following a symlink and check it is a
 * folder owned by us, not writable by group or others (spool/: unless sticky; a
 * set-group-id spool/ must have our group, the traces' readers). Returns 0
 * with *d open, or a negative errno with err naming the folder and why (-EPERM for a folder
 * others may write, -ELOOP for a symlink, -ENOTDIR, -EINVAL for a relative path or "/").
 */
int agent_spool_prepare(const struct agent_config *c, struct agent_spool_dirs *d, char *err,
			size_t errsize);
/* Open the folders that exist (a missing one stays -1), without following a symlink for
 * the sub-folders and without the checks above: the runtime's trim. 0 or -errno. */
int agent_spool_open(const struct agent_config *c, struct agent_spool_dirs *d);
void agent_spool_close(struct agent_spool_dirs *d);

/*
 * Make room for `incoming` more bytes of raw traces: remove the oldest *.jtr of spool/ and
 * traces/ together (by modification time, then name) until one more file fits within
 * max_traces and the bytes within max_trace_mb. With incoming 0 (no file coming: jittd after
 * a trace, and on each pass), only bring the two folders within the caps. Regular `*.jtr`
 * files with one link count, and so do writers' temporaries while they exist; those of gone
 * writers are removed first (see above). quarantine/ is then brought within the same caps
 * on its own (each trace with its .why). Returns how many files were removed (their bytes
 * added to *removed_bytes when not NULL), or a negative errno.
 */
int agent_spool_trim(const struct agent_config *c, uint64_t incoming, uint64_t *removed_bytes);
int agent_spool_trim_at(const struct agent_spool_dirs *d, const struct agent_config *c,
			uint64_t incoming, uint64_t *removed_bytes);

/* An entry named like a raw trace in one of the data folder's sub-folders. */
struct agent_spool_file {
	struct timespec mtime;
	uint64_t bytes;	 /* 0 unless a regular file */
	unsigned mode;	 /* st_mode, from fstatat without following a symlink */
	unsigned nlink;	 /* a trace has one; more is a hard link to someone's file */
	const char *sub; /* "spool" or "traces" */
	char name[128];	 /* longer names are no writer's of ours and are not listed */
};

/* A regular file with one link: what a writer of ours makes. Anything else named *.jtr in
 * the spool is planted (a symlink, FIFO, folder, device, hard link). */
int agent_spool_is_plain(const struct agent_spool_file *f);

/*
 * The entries named *.jtr of one sub-folder ("spool", "traces"), oldest first as the trim
 * removes them, into a malloc'd array (*files, free it; NULL when *n is 0). A missing folder
 * holds none. 0, -ENOMEM or the -errno of reading the folder.
 */
int agent_spool_list(const struct agent_config *c, const char *sub,
		     struct agent_spool_file **files, size_t *n);
int agent_spool_list_at(const struct agent_spool_dirs *d, const char *sub,
			struct agent_spool_file **files, size_t *n);

#endif
