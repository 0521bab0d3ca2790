/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/tracefile.h - trace files: one or more threads' rings frozen at the same moment,
 * with what it takes to decode and symbolise them elsewhere. The format is in
 * docs/trace-format.md. Files are written atomically (temporary name, fsync, rename, fsync
 * of the folder when the writer may open it; mode 0600, or 0640 in a set-group-id folder,
 * whose group is the reader's: docs/oem.md), so a crash leaves the old state or a whole
 * file.
 */
#ifndef JITT_RINGBUF_TRACEFILE_H
#define JITT_RINGBUF_TRACEFILE_H

#include "ringbuf/decode.h"
#include "ringbuf/ring.h"

#include <stddef.h>
#include <stdint.h>

#define RB_FILE_MAGIC "JITTRACE"
/* 2 added the scheduling section; 3 made a narrow entry's id the low half of the address
 * (record.h), where 2 and 1 hold the address minus the main program's load bias, and added
 * each thread's return addresses at the freeze; 4 added the measured section (functions'
 * calls as sleds' learning windows measured them). All four are read. */
#define RB_FILE_VERSION 4
#define RB_BUILD_ID_MAX 32
#define RB_FILE_MAX_THREADS 256
#define RB_FILE_MAX_MODULES 1024
#define RB_FILE_MAX_CPUS 1024
#define RB_FILE_MAX_STACK 1024 /* return addresses of a thread (ringbuf/stack.h) */
#define RB_FILE_MAX_MEASURED 65536 /* functions in the measured section */

/* Where the threads' scheduling came from (the file's scheduling section). */
enum rb_sched_source {
	RB_SCHED_NONE = 0,
	RB_SCHED_PERF = 1,	/* the kernel's context switches, per thread */
	RB_SCHED_SCHEDSTAT = 2, /* schedstat samples at frame boundaries, in the rings */
};
#define RB_CPU_CLASS_UNKNOWN 255

/* One context switch of a thread, in timer ticks. */
struct rb_switch {
	uint64_t ts;
	uint32_t cpu;
	uint32_t kind; /* enum hal_sched_kind: 1 in, 2 out preempted, 3 out sleeping */
};

struct rb_module {
	uint64_t bias;        /* load bias: runtime address = bias + ELF virtual address */
	uint64_t start, end;  /* its executable segments, as ELF virtual addresses */
	uint8_t build_id_len; /* GNU build-id from the ELF note; 0 when it has none */
	uint8_t build_id[RB_BUILD_ID_MAX];
	const char *path;     /* NUL-terminated */
};

struct rb_file_thread {
	uint32_t tid;
	char name[RB_NAME_MAX + 1];
	uint32_t laps;
	int copied; /* a validated copy (the thread was blocked), not a clean stop */
	bool anomaly; /* the writer said the anomaly is this thread's (a hang's, a jank's) */
	struct rb_ring_view view; /* view.off: the times off its CPU, from `sw` */
	/* Its context switches, oldest first (source perf), and how many the kernel dropped
	 * or the writer skipped; sched_on: a perf ring was recording it. */
	const struct rb_switch *sw;
	uint32_t nsw;
	bool sched_on;
	uint64_t sched_lost;
	/* The return addresses on its stack when it answered the stop, innermost first
	 * (absolute addresses: ringbuf/stack.h); none in older files and copies. */
	const uint64_t *stack;
	uint32_t nstack;
};

/* From when its switch records hold every switch (ticks): 0 where none was lost, else the
 * first record's time (a lapped ring counts one lost: agent/runtime/sched.c). */
static inline uint64_t rb_thread_switches_from(const struct rb_file_thread *th)
{
	return th->nsw && th->sched_lost ? th->sw[0].ts : 0;
}

/* What the writer says about scheduling: the source and each CPU's class (hal/cpu.h's
 * enum hal_cpu_class, RB_CPU_CLASS_UNKNOWN when not ranked), CPU id order. */
struct rb_trace_sched {
	uint32_t source; /* enum rb_sched_source */
	uint32_t ncpus;
	const uint8_t *cpu_class;
};

struct rb_trace {
	uint16_t version;
	uint8_t word_size;
	uint64_t timer_hz;
	uint64_t ref_ticks;           /* the timer when the file was written... */
	uint64_t ref_realtime_ns;     /* ...with CLOCK_REALTIME... */
	uint64_t ref_monotonic_ns;    /* ...and CLOCK_MONOTONIC, read together */
	uint64_t frozen_ticks;        /* the timer when the rings were frozen; 0: not known */
	uint32_t pid;
	uint32_t point_ps;            /* a trace point's cost, ps, measured by the writer's
				       * runtime at its start (rb_trace_set_point_cost); 0:
				       * not known */
	/* Sampled time's traces (sleds): point_ps is a record's in sampled time, where one
	 * in 32 is timed; timed_ps one's in a learning window, where every record is (they
	 * cost 4 times as much). 0: every record costs point_ps (older files: 0 reserved). */
	uint32_t timed_ps;
	const char *reason;           /* NUL-terminated */
	uint32_t nmodules, nthreads;
	struct rb_module *modules;    /* [0] is the main program */
	struct rb_file_thread *threads;
	struct rb_trace_sched sched; /* source RB_SCHED_NONE in a version 1 file */
	/* Version 4: the functions' calls as sleds' learning windows measured them (in each
	 * thread's view once rb_trace_use_measured says so); none in older files */
	const struct rb_measured *measured;
	uint32_t nmeasured;
	/* private */
	void *map;   /* rb_trace_open's mapping, or NULL */
	void *copy;  /* rb_trace_load_fd's copy (free), or NULL */
	size_t size;
	char *strings;
	void *sched_mem;
};

/* A trace point's cost on this device in timer ticks (hal_counter_read's), as the runtime
 * measured it (agent/runtime/control.c), for every file written from now on: the header's
 * point_ps, at the file's timer frequency (so a frequency calibrated later applies to it
 * as to every time in the file). What `jitt exclude` subtracts for the time without trace
 * points. 0 or less: not known. */
void rb_trace_set_point_cost(double ticks);
/* The same in 1/1024 ticks, no floating point: for a learning window's end, which runs in
 * a thunk (ringbuf/sleds.h). */
void rb_trace_set_point_cost1024(uint64_t ticks1024);
/* A record's cost when every record is timed, where rb_trace_set_point_cost's is sampled
 * time's (sleds: a learning window's records): the header's timed_ps. 0 or less: not
 * known, or the same. */
void rb_trace_set_timed_cost(double ticks);
/* The functions' measured calls (decode.h, struct rb_measured) for every file written
 * from now on: what sleds' learning windows measured, for the fit of untimed records'
 * times (docs/untimed.md, "Measured calls"). Copied; at most RB_FILE_MAX_MEASURED are
 * kept; n 0 clears it. 0 or -ENOMEM. */
int rb_trace_set_measured(const struct rb_measured *m, size_t n);
/* A record's mean cost in ps, of a ring (or rings) of `records` of which `untimed` were
 * written without a time: point_ps, weighed with timed_ps for the share of records a
 * learning window wrote (all timed, where sampled time leaves one in 32.5 untimed). 0:
 * not known. */
double rb_trace_point_ps(const struct rb_trace *t, uint64_t records, uint64_t untimed);

/*
 * Write the frozen rings into a new file in dir, named trace-<pid>-<time>-<n>.jtr; its
 * path goes to path_out. Returns 0 or a negative errno (the temporary file is removed).
 */
int rb_trace_write(const char *dir, const char *reason, const struct rb_frozen *threads,
		   int nthreads, char *path_out, size_t path_size);
/* The same with a scheduling section: sched's source and CPU classes, and each thread's
 * switches (rb_frozen.sched). sched NULL or its source RB_SCHED_NONE: no section. */
int rb_trace_write_sched(const char *dir, const char *reason, const struct rb_frozen *threads,
			 int nthreads, const struct rb_trace_sched *sched, char *path_out,
			 size_t path_size);
/*
 * The same, with a say before anything is made: once the file's exact size is known,
 * reserve(arg, size, tag, tagsize) is called; 0 writes the file with tag (a short string,
 * "" for none) at the end of its names, before ".jtr" (trace-<pid>-<time>-<n><tag>.jtr, the
 * temporary likewise); a negative errno is returned as it is, and nothing is written. The
 * spool's slots use it (agent/spool.h): the size is claimed before the bytes exist.
 */
struct rb_trace_reserve {
	int (*reserve)(void *arg, uint64_t size, char *tag, size_t tagsize);
	void *arg;
};
int rb_trace_write_reserved(const char *dir, const char *reason, const struct rb_frozen *threads,
			    int nthreads, const struct rb_trace_sched *sched,
			    const struct rb_trace_reserve *r, char *path_out, size_t path_size);

/*
 * Parse and check a whole file in memory (it must stay valid while t is used). Returns 0,
 * or -EINVAL with a message naming what is wrong and at which offset in err.
 */
int rb_trace_parse(const void *data, size_t size, struct rb_trace *t, char *err, size_t errsize);
/*
 * Map a file and parse it: for a user's own file (the `jitt` command). It is opened once
 * with hal_open_file (following a symlink, as a user expects): a FIFO, a device or a
 * folder is refused at once with -EINVAL or -EISDIR instead of hanging or being mapped
 * (hal_file_kind names it: st_mode goes to *kind when kind is not NULL). A mapped file
 * that another process truncates meanwhile raises SIGBUS on access: a reader of files
 * other users control (jittd) uses rb_trace_load_fd instead. 0, a negative errno, or
 * -EINVAL (see err; err is "" when the file is not a regular file).
 */
int rb_trace_open(const char *path, struct rb_trace *t, char *err, size_t errsize);
int rb_trace_open_kind(const char *path, struct rb_trace *t, unsigned *kind, char *err,
		       size_t errsize);

/*
 * Read `size` bytes (the size fstat gave) of an open file into new memory of its own
 * (*data, released with rb_trace_free_copy(*data, size)), with read(): the file is not
 * mapped, so one truncated under the reader gives an error, never SIGBUS. A file that ends
 * before `size` bytes (it shrank) is -EINVAL with the bytes read in *got and the message in
 * err; *data then holds them (for a quarantine copy). 0, -EINVAL, -ENOMEM or the -errno of
 * read (*data NULL).
 */
int rb_trace_read_fd(int fd, size_t size, void **data, size_t *got, char *err, size_t errsize);
void rb_trace_free_copy(void *data, size_t size);
/*
 * rb_trace_read_fd, then rb_trace_parse on the copy, which t owns (rb_trace_close frees
 * it). 0, a negative errno, or -EINVAL (see err).
 */
int rb_trace_load_fd(int fd, size_t size, struct rb_trace *t, char *err, size_t errsize);
void rb_trace_close(struct rb_trace *t);

/* The measured section in every thread's view, for the fit of sampled time to take
 * (docs/untimed.md, "Measured calls"): not by default, since the windows' measures are of
 * the run's first windows and over the moment's (`jitt summarize --measured`). */
void rb_trace_use_measured(struct rb_trace *t);

/* The module holding an entry's id, and the id as a virtual address in that module; -1
 * when no module has it. */
int rb_trace_resolve(const struct rb_trace *t, const struct rb_event *e, uint64_t *vaddr);

#endif
