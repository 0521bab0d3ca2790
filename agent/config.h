/* SPDX-License-Identifier: MIT */
/*
 * agent/config.h - the runtime's and jittd's settings: Kconfig defaults, overridden by a
 * small config file of `key = value` lines ('#' starts a comment). Unknown keys, bad
 * numbers and values out of range are errors naming the line, never guesses.
 *
 *   data_dir      = /var/lib/jitt   spool/ (new traces), outbox/ (summaries), traces/
 *                                   (raw traces kept), quarantine/ (bad files)
 *   run_dir       = /run/jitt       control sockets: jittd.sock, jitt-<pid>.sock
 *   hang_ms       = 400             a frame still running this long is a hang
 *   jank_frames   = 3               this many consecutive slow frames are jank
 *   frame_budget_us = 16667         a slow frame is over the budget and over
 *   jank_normal_pct = 200           this % of the normal frame (a running median); 0 or
 *                                   over 100; 0: the budget alone
 *   jank_warmup_frames = 30         the first frames teach the normal, none is slow
 *   cooldown_ms   = 10000           at most one persisted trace per process per cool-down,
 *   cooldown_preempt_pct = 200      but for one jank or hang whose frame is this % as long
 *                                   as the one that started it; 0 or over 100; 0: never
 *   max_traces    = 8               raw traces kept on disk (spool and traces/), oldest
 *   max_trace_mb  = 128             removed first, by count and by bytes
 *   max_threads   = 2               threads traced at once (CONFIG_RB_MAX_TRACED_THREADS)
 *   ring_kb       = 4096            each traced thread's ring, KiB, a power of two in
 *                                   4..1048576 (2^CONFIG_RB_RING_SHIFT bytes)
 *   keep_traces   = 1               jittd keeps a raw trace after summarising it (0: delete)
 *   system_uid    = 1000            besides root, the user allowed to change anything
 *   log_level     = info            error, warn, info, debug
 *   enabled       = 1               0: the runtime stays off in every app (no ring, no
 *                                   thread, no socket); so does JITT_DISABLE=1
 *   trace_main    = 0               1: jitt_init() (the constructor) traces the main thread,
 *                                   so an app is traced with no code of its own
 *   sleds         = sampled         a program built with sleds (jitt-sleds.pc): its functions
 *                                   records timed about one in 32 (sampled), each (timed),
 *                                   or its sleds left as NOPs, untraced (off)
 *   sleds_exclude =                 a `jitt exclude` list (absolute path): the functions it
 *                                   names stay NOPs (docs/trace-points.md, "Sleds")
 *   sleds_learn_ns = 250            without a list: from windows of the run traced in
 *                                   full, the functions whose calls last under this many
 *                                   ns on average are taken out, but for a profile's top
 *                                   (the 4 functions perf's samples find most, any with
 *                                   5%); 0: never (docs/oem.md, "Sleds")
 *   sleds_memory  =                 the folder of the app's own where learning keeps what
 *                                   it learnt, per build of the program, for its next run
 *                                   to start from (absolute); unset: $CACHE_DIRECTORY,
 *                                   $XDG_CACHE_HOME/jitt or ~/.cache/jitt; off: none
 *   sched_pages   = 8               pages of each traced thread's context-switch ring (a
 *                                   power of two); 0: none, schedstat samples instead
 *   debuginfod_urls =               http:// debuginfod servers (space-separated) the `jitt`
 *                                   command asks for a stripped module's debug file by
 *                                   build-id; DEBUGINFOD_URLS, when set, wins; jittd never
 *                                   asks (docs/symbols.md)
 *   debuginfod_cache =              where fetched debug files are kept (absolute); empty:
 *                                   $XDG_CACHE_HOME/jitt/debuginfod or ~/.cache/jitt/...
 */
#ifndef JITT_AGENT_CONFIG_H
#define JITT_AGENT_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define AGENT_PATH_MAX 256

/* The uploader's keys (docs/uploader.md). Empty strings mean "not set". */
struct agent_upload_config {
	char url[256];			   /* upload_url */
	char ca_file[AGENT_PATH_MAX];	   /* upload_ca_file */
	char pin[65];			   /* upload_pin: 64 hex, or empty */
	char consent_file[AGENT_PATH_MAX]; /* consent_file: empty = DATA_DIR/consent */
	char thread_names[128];		   /* upload_thread_names */
	char reasons[128];		   /* upload_reasons */
	char campaign[256];		   /* upload_campaign */
	char pick[16];			   /* upload_pick: first | severe | campaign */
	uint32_t budget;		   /* upload_budget: reports per period */
	uint32_t budget_days;		   /* upload_budget_days */
	uint32_t rotation_days;		   /* upload_rotation_days */
	uint32_t max_attempts;		   /* upload_max_attempts */
	uint32_t timeout_ms;		   /* upload_timeout_ms */
	uint32_t poll_s;		   /* upload_poll_s: network looked at while reports wait */
	uint32_t backoff_ms;		   /* upload_backoff_ms: the first retry's delay */
	uint32_t allow_ethernet;	   /* upload_allow_ethernet: 0 or 1 */
};

struct agent_config {
	char data_dir[AGENT_PATH_MAX];
	char run_dir[AGENT_PATH_MAX];
	uint32_t hang_ms;
	uint32_t jank_frames;
	uint32_t frame_budget_us;
	uint32_t cooldown_ms;
	uint32_t jank_normal_pct; /* 0: the budget alone */
	uint32_t jank_warmup_frames;
	uint32_t cooldown_preempt_pct; /* 0: never */
	uint32_t max_traces;
	uint32_t max_trace_mb;
	uint32_t max_threads;
	uint32_t ring_kb; /* a power of two */
	int keep_traces;
	int64_t system_uid; /* -1: none */
	int log_level;      /* enum agent_log_level */
	int enabled;	    /* the runtime starts at all */
	int trace_main;	    /* jitt_init() on the main thread traces it */
	uint32_t sched_pages; /* per traced thread's perf switch ring; 0: schedstat */
	char sleds[8];	      /* sampled | timed | off */
	char sleds_exclude[AGENT_PATH_MAX]; /* empty: none */
	uint32_t sleds_learn_ns;	    /* 0: no learning */
	char sleds_memory[AGENT_PATH_MAX];  /* unset: the app's cache folder; "off": none */
	struct agent_upload_config up; /* jittd's uploader (uploader/Kconfig's defaults) */
	char debuginfod_urls[512];		 /* empty: none */
	char debuginfod_cache[AGENT_PATH_MAX]; /* empty: the user's cache folder */
	/* Which settings file agent_config_load looked at, and whether it read it (0: it
	 * was missing, and the defaults hold): for `jitt status PID` and the start-up line. */
	char file[AGENT_PATH_MAX];
	int file_found;
};

/* The Kconfig defaults. */
void agent_config_defaults(struct agent_config *c);

/*
 * Apply a config file's text (size bytes, not NUL-terminated) over c. Returns 0, or
 * -EINVAL with "line N: what is wrong" in err; c is then left unchanged.
 */
int agent_config_parse(struct agent_config *c, const char *text, size_t size, char *err,
		       size_t errsize);

/* The largest settings file read: a few dozen lines are all there is to say, and it sits
 * on the stack of a traced app's constructor. */
#define AGENT_CONFIG_MAX_SIZE 16383

/*
 * Load the defaults, then the file: `path`, else $JITT_CONFIG (ignored in a set-uid or
 * set-gid program), else CONFIG_AGENT_CONFIG_FILE. A missing default file is fine; a
 * missing named one is -ENOENT. Only a regular file is read (symlinks followed): a folder
 * is -EISDIR, a FIFO or a device -EINVAL, never waited on; a file over
 * AGENT_CONFIG_MAX_SIZE is -EFBIG. Errors name the file (and what it is) in err.
 * c->file and c->file_found say which file it was, and whether it was read.
 */
int agent_config_load(struct agent_config *c, const char *path, char *err, size_t errsize);

/* "<data_dir>/<sub>" into buf. 0 or -ENAMETOOLONG. */
int agent_config_path(const struct agent_config *c, const char *sub, char *buf, size_t size);
/* The control socket of a traced process, "<run_dir>/jitt-<pid>.sock", or jittd's
 * ("<run_dir>/jittd.sock") for pid 0. 0 or -ENAMETOOLONG. */
int agent_config_socket(const struct agent_config *c, pid_t pid, char *buf, size_t size);

#endif
