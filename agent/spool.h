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
 *
 * The caps without listing: an app may not list the spool (nor remove what is not its own),
 * so it cannot trim it. Instead the spool has max_traces slot names, <spool>/.slot-<K> for
 * K in 0..max_traces-1. A writer claims one with O_CREAT | O_EXCL before it writes (a name
 * lookup: the folder's x bit is enough), writes its pid in it and sets its length to the
 * trace's exact size (ftruncate: a sparse file, no blocks beyond the pid's), then adds up
 * the lengths of the max_traces slots (fstatat each); over max_trace_mb, or no slot free,
 * and it writes nothing and counts the trace as dropped. Of two writers claiming at once
 * the later to set its length sees the other's, so the bytes are never overrun. The trace
 * is named ...-s<K>.jtr. The slot stays claimed while the trace is in the spool, and while
 * jittd's kept copy of it is in traces/; jittd releases it (removes the slot: the spool is
 * its folder, sticky or not) when the trace and its copy are gone, and reclaims the slot of
 * a claimant that died before its trace was renamed in (the same rule as temporaries). So
 * with jittd stopped, starved or killed, spool/ and traces/ together hold at most
 * max_traces traces and max_trace_mb bytes (docs/oem.md, "The spool's caps").
 */
#ifndef JITT_AGENT_SPOOL_H
#define JITT_AGENT_SPOOL_H

#include "agent/config.h"

#include <stdbool.h>
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

/* A slot's name: this prefix and its number. */
#define AGENT_SPOOL_SLOT_PREFIX ".slot-"

struct rb_frozen;
struct rb_trace_sched;
struct agent_spool_dirs;

/*
 * The runtime's persist: claim a slot for the trace (see above), write it into spool (its
 * path) as rb_trace_write_sched does, named ...-s<K>.jtr, and release the slot if the write
 * fails. 0 with the path in path; -EDQUOT when the caps are full (no slot free, or the
 * bytes claimed would pass max_trace_mb): nothing written, the trace dropped; or another
 * negative errno.
 */
int agent_spool_write(const struct agent_config *c, const char *spool, const char *reason,
		      const struct rb_frozen *threads, int nthreads,
		      const struct rb_trace_sched *sched, char *path, size_t path_size);
/* The slot K in a trace's name ("...-s<K>.jtr") or a writer's temporary ("...-s<K>"), or -1. */
int agent_spool_slot_of(const char *name);
/* A slot claimed by jittd for a kept copy while it is made (the trace and its copy are two
 * files for a moment: each holds a slot, so a writer claiming meanwhile cannot pass the
 * caps), as a writer claims one; released with agent_spool_unclaim_at once the trace has
 * left the spool. 0 with *slot, -EDQUOT when the caps are full, or -errno. */
int agent_spool_claim_at(const struct agent_spool_dirs *d, const struct agent_config *c,
			 uint64_t size, int *slot);
void agent_spool_unclaim_at(const struct agent_spool_dirs *d, int slot);
/* The slot of the trace `name` released (its slot file removed): once jittd is done with a
 * trace that leaves no kept copy. 0 when released or there was none, or -errno. */
int agent_spool_release_at(const struct agent_spool_dirs *d, const char *name);

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

/* What a trim removed, by kind. */
struct agent_spool_trimmed {
	unsigned rotated;      /* kept copies in traces/: their summary exists */
	unsigned unsummarised; /* traces of the spool: never summarised, dropped */
	unsigned other;	       /* gone writers' temporaries, dead claimants' slots, quarantine */
	uint64_t bytes;	       /* of all of them */
	bool no_room;	       /* `incoming` does not fit, even with every kept copy gone */
	/* When not NULL, told the name of each spool trace removed unsummarised. */
	void (*dropped)(void *arg, const char *name);
	void *arg;
};

/*
 * jittd's caps over spool/ and traces/ together. What counts: each claimed slot as one
 * trace of its length (or of its files, if more: a trace and its kept copy while the copy
 * is made), and each regular `*.jtr` with one link or writer's temporary that holds no slot
 * (an older writer's, a copied-in file); those of gone writers, and dead claimants' slots,
 * are removed first (see above). Then:
 *   - kept copies (traces/, summarised) go first, oldest first (modification time, then
 *     name), until one more trace fits: one more file, and `incoming` bytes (the copy about
 *     to be kept), or with incoming 0 a slot's share, max_trace_mb / max_traces: room for
 *     the next trace is kept free, so a jittd that then stops or starves holds no new
 *     trace out for want of a slot its old copies hold;
 *   - with incoming 0, traces of the spool (unsummarised) only if the caps are still
 *     passed (files no writer of ours claimed, or smaller caps since), oldest first.
 * A kept copy never makes room by removing an unsummarised trace: with no room, no_room is
 * set. quarantine/ is then brought within the same caps on its own (each trace with its
 * .why). Returns how many files were removed (t filled when not NULL), or a negative errno.
 */
int agent_spool_trim_at(const struct agent_spool_dirs *d, const struct agent_config *c,
			uint64_t incoming, struct agent_spool_trimmed *t);
/* The same by path (the bytes removed added to *removed_bytes when not NULL). */
int agent_spool_trim(const struct agent_config *c, uint64_t incoming, uint64_t *removed_bytes);

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
