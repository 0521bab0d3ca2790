/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/sleds.h - trace points patched in at start-up (x86_64, GCC): the program is built
 * with -fpatchable-function-entry=5 instead of -finstrument-functions (jitt-sleds.pc), so
 * each function the compiler kept out of line, after inlining, starts with five bytes of
 * NOPs and nothing else: untraced, it runs at the plain build's speed. At start-up the
 * runtime turns the NOPs of the functions it traces into a jump to a thunk of their own,
 * which writes the entry record, calls the function's body, and writes the exit record
 * when the body returns (docs/trace-points.md, "Sleds").
 *
 * How the exit is caught: the thunk moves the caller's return address onto a per-thread
 * shadow stack, with the stack slot it came from, and calls the body in its place, so the
 * body's arguments on the stack are where they were; at the return it puts the address back
 * and returns through it, which the processor's return predictor still expects (the
 * caller's call pushed it). A longjmp that leaves frames is seen at the next return, by the
 * slots: entries whose slot lies below the returning frame's are frames the jump left
 * (their exits are the decoder's, from the longjmp record: docs/runtime.md).
 */
#ifndef JITT_RINGBUF_SLEDS_H
#define JITT_RINGBUF_SLEDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* How a patched function's records are written: each timed (rb_point), or about one in 32
 * (rb_point_sampled, docs/untimed.md). */
enum rb_sled_time { RB_SLED_TIMED, RB_SLED_SAMPLED };

struct rb_sleds_stats {
	size_t sleds;	 /* sleds the program has (its __patchable_function_entries) */
	size_t patched;	 /* turned into jumps to a thunk */
	size_t excluded; /* left as NOPs: their address was in the skip list */
	size_t foreign;	 /* not five NOPs (patched already, or not a sled): left alone */
};

/*
 * The program's sleds, as run-time addresses (the entry of each function), in the order
 * the linker left them; *n their count. NULL and 0 in a program built without sleds.
 */
const uintptr_t *rb_sleds_list(size_t *n);

/*
 * Patch every sled but those whose address is in skip (sorted ascending, nskip entries),
 * their records written as `time` says. Once per process, before other threads run the
 * program's code (the runtime's constructor): the text is made writable for the moment it
 * takes. Returns 0 (st filled), -EALREADY, -ENOENT when the program has no sleds, or the
 * errno of an mmap or mprotect that failed (nothing is patched then).
 */
int rb_sleds_patch(const uintptr_t *skip, size_t nskip, enum rb_sled_time time,
		   struct rb_sleds_stats *st);

/*
 * Take the functions of sleds idx[0..n) (indexes into rb_sleds_list) out of the trace while
 * the program runs (traced false), or back into it (true), each by one store that another
 * thread fetches whole, old or new (a call already inside the thunk returns through it as
 * it entered): where the sled lies within an aligned 8-byte word a 5-byte NOP, else
 * a 2-byte jump over it, else (crossing a cache line) a jump from its thunk's start
 * straight to its body. Returns how many were set, or the errno of an mprotect that
 * failed.
 */
long rb_sleds_trace(const size_t *idx, size_t n, bool traced);
/*
 * Count the calls of the functions of sleds idx[0..n) instead of tracing them (sampled time
 * only): each call is counted, one in RB_CALLED_EVERY on average writes a record, RB_CALLED
 * with mean[k] (ticks, the function's measured mean call), and it jumps to the body
 * (record.h). For short functions that call no traced
 * one: their callees' records would otherwise land in their caller. Back into the trace with
 * rb_sleds_trace. Returns how many were set, -ENOTSUP where the sleds time every record, or
 * the errno of an mprotect that failed.
 */
long rb_sleds_count(const size_t *idx, const uint32_t *mean, size_t n);
/* By sled (n of them, 0 before the patch): the counted calls' records traced threads wrote
 * so far, each standing for RB_CALLED_EVERY calls, from which the runtime tells how often
 * each counted function runs. */
const _Atomic uint32_t *rb_sleds_counted_records(size_t *n);

/*
 * A learning window: every record of the sampled thunks timed (the times the runtime learns
 * from are then measured, not estimated), until `records` of them were written on the
 * traced threads in all. The thread that writes the last one ends the window there, however
 * late the control thread comes (at nice 19 on busy cores, a second and more): it takes
 * sleds out[0..nout) back out of the trace, sets counted[0..ncounted) back to counting
 * (with the means their thunks hold), and copies its ring's newest keep_slots slots into
 * keep, which its ring would otherwise overwrite before the control thread reads them. The
 * arrays stay the caller's, unchanged until rb_sleds_window_close.
 */
struct rb_sleds_window {
	uint64_t records;
	const size_t *out, *counted;
	size_t nout, ncounted;
	uint64_t *keep;
	size_t keep_slots;
	/* The trace point's cost from then on, 1/1024 ticks (rb_trace_set_point_cost: a trace
	 * written before the control thread comes takes the records' own); 0: left as is. */
	uint64_t point_after1024;
};
void rb_sleds_window_open(const struct rb_sleds_window *w);
/* Every record of the sampled thunks timed (on), as in a window, until the same call with
 * off: for the runtime's probe of what a timed traced call costs, a ms or two on a scratch
 * ring (whose records count down no window). fenced: each timer read waits for the loads
 * before it, as a window's do (x86_64: lfence); else as a timed record outside a window. */
void rb_sleds_time_probe(bool on, bool fenced);
/* Whether a traced thread ended the open window: then *tid is that thread, and *kept the
 * slots it copied into keep (in order, its newest last). */
bool rb_sleds_window_ended(pid_t *tid, size_t *kept);
/* End the window where no thread has (every record sampled again, the sleds left as they
 * are), or wait for the thread that is ending it to finish. */
void rb_sleds_window_close(void);


/*
 * The return address a thunk moved away from stack slot `slot` of the calling thread, or 0
 * when slot holds none (for the stack scan at a freeze, ringbuf/stack.h: the slot itself
 * then holds the thunk's own return address).
 */
uintptr_t rb_sleds_return_of(uintptr_t slot);

/* A function that does nothing, with a sled of the runtime's own: patched with the program's,
 * its calls on a traced thread cost what a traced call's trace points do. */
void rb_sleds_probe(void);

/* Whether addr lies in the thunks (a return address into one is not a frame of the
 * program's). */
int rb_sleds_is_thunk(uintptr_t addr);

#endif
