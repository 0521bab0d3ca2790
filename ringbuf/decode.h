/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/decode.h - from a frozen ring's slots to events with full timestamps.
 *
 * Records are parsed in reverse from the end position (Hubble 5.1.1): the tag slot of each
 * record says whether it is one slot or two. A two-slot record whose payload was
 * overwritten by the wrap is dropped cleanly. Timestamps are then made whole: every special
 * record is an exact 64-bit anchor (record.h); records between two anchors are walked
 * forward from the older one, each step assumed shorter than 2^32 ticks, and when the
 * newer anchor shows that whole 2^32 periods went missing (a gap with no trace point), the
 * missing time goes to the step that looks longest. That is exact when the silence's
 * remainder modulo 2^32 outlasts every ordinary step of the segment, as it does around a
 * blocked thread, whose wait-begin and wait-end are both anchors; a silence before the
 * oldest anchor left in the ring cannot be seen at all. Records before the first anchor are walked
 * backwards from it (Hubble Fig. 3); with no anchor at all, from the reference timestamp.
 *
 * Sampled time: records written without a time (untimed.h) are given estimated ones first,
 * in a copy of the slots the decoder owns, and the copy is decoded (stats.untimed counts
 * them).
 */
#ifndef JITT_RINGBUF_DECODE_H
#define JITT_RINGBUF_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rb_ev_kind {
	RB_EV_ENTRY,
	RB_EV_EXIT,
	RB_EV_SYNC,
	RB_EV_MARK,
	RB_EV_WAIT_BEGIN,
	RB_EV_WAIT_END,
	RB_EV_WAKE,
	RB_EV_RESERVED, /* kinds 0x9..0xF: kept, not understood */
	RB_EV_SCHEDSTAT, /* RB_SCHED_RUN or RB_SCHED_WAIT (raw says which): arg in us */
	RB_EV_OFF_CPU,	/* not a record: the thread was off its CPU from id to ts, raw says
			 * why (enum rb_off_why), arg is the CPU it left (rb_ring_view.off) */
	RB_EV_SETJMP,	/* arg: the jump buffer's key */
	RB_EV_LONGJMP,	/* arg: the jump buffer's key; id: how many frames it left, each
			 * given as an exit right after it (raw RB_LONGJMP on those exits) */
	RB_EV_CTX_MADE, /* arg: a ucontext's key (record.h); the three: see "Coroutines" */
	RB_EV_CTX_SWAP,
	RB_EV_CTX_SET,
};

struct rb_event {
	uint64_t ts;  /* timer ticks, whole */
	uint64_t id;  /* entry: the function id (wide: its absolute address) */
	uint32_t arg; /* special records: the argument; a counted call's entry and exit (raw
		       * RB_CALLED): its word, the mean and the calls it stands for (record.h,
		       * rb_called_word) */
	uint8_t kind; /* enum rb_ev_kind */
	uint8_t wide; /* entry: id is an absolute address (a wide entry, or any 32-bit one) */
	uint8_t raw;  /* the record's low-half kind (0..0xF) for specials */
	uint8_t pad;
};

enum rb_off_why { RB_OFF_PREEMPTED = 1, RB_OFF_SLEEPING = 2 };

/* A time the thread was off its CPU, from the kernel's context switches (the trace file's
 * scheduling section), in timer ticks: end is UINT64_MAX when it had not come back. */
struct rb_offcpu {
	uint64_t start, end;
	uint32_t cpu; /* the CPU it left */
	uint8_t why;  /* enum rb_off_why */
};

/* A traced function's call as sleds' learning windows measured it (every record timed,
 * fenced: agent/runtime/sleds.c), for sampled time's fit (untimed.h): `ticks` is what one
 * of its calls adds to its own gaps in a sampled ring, that is its self time with the
 * functions taken out of the trace at the writing (theirs lies in its gaps) and a sampled
 * trace point's cost a gap. id: as its entries give it (the address's low half). */
struct rb_measured {
	uint32_t id, ticks;
};

/* What the decoder reads: `valid` slots ending (circularly) at index `end`, of a ring of
 * `nslots`, of which the first `stored` are present in `slots`. */
struct rb_ring_view {
	const uint64_t *slots;
	uint64_t nslots, stored, end, valid;
	uint8_t word_size; /* 4: every entry id is an absolute address (Hubble 5.1.2) */
	/* A copied ring (its thread did not answer the stop: blocked, or busy without a trace
	 * point): the timer when it was frozen, since its open calls ran until then; else 0. */
	uint64_t frozen_ticks;
	/* Optional: the thread's times off its CPU, sorted and disjoint. The decoder puts each
	 * between the two records it fell between as an RB_EV_OFF_CPU event (its ts the end),
	 * cut at the next record: no trace point runs while the thread is off its CPU, so a
	 * record inside means the two clocks disagree by that much. Those before the first
	 * record are left out; those after the last reach end_ts. */
	const struct rb_offcpu *off;
	size_t noff;
	/* Optional: the functions' measured calls (the trace file's measured section), which
	 * the fit of untimed records' times takes as evidence (docs/untimed.md, "Measured
	 * calls"); any order. */
	const struct rb_measured *measured;
	size_t nmeasured;
};

/* The view's numbers agree: its valid slots are all among the stored ones. */
bool rb_ring_view_ok(const struct rb_ring_view *v);

/* The functions a decode names as the fit's guesses (untimed.h), at most */
#define RB_UNTIMED_FEW_MAX 8

struct rb_decode_stats {
	uint64_t records;
	uint64_t cut;	    /* two-slot records whose payload the wrap overwrote: dropped */
	uint64_t anchors;   /* special records (exact timestamps) */
	uint64_t gaps;	    /* steps found longer than 2^32 ticks, and repaired */
	uint64_t conflicts; /* anchors that disagreed by a non-multiple of 2^32 (torn data) */
	uint64_t unwound;   /* exits given for the frames longjmps left (after init) */
	uint64_t suspended; /* exits given for the frames of a coroutine switched away from */
	uint64_t resumed;   /* entries given for a resumed coroutine's frames */
	uint64_t unmatched; /* exits left out: a resumed coroutine's calls entered before
			     * the ring (after init, as unwound) */
	/* Sampled time (untimed.h): records written without a time, whose times are
	 * estimates, and the windows between two timed records they were estimated in. */
	uint64_t untimed;
	uint64_t windows;
	/* The functions whose time is a guess of the fit's (untimed.h, few): ids as entries
	 * give them, few_wide as an entry's wide flag */
	uint64_t few[RB_UNTIMED_FEW_MAX];
	uint8_t few_wide[RB_UNTIMED_FEW_MAX];
	unsigned nfew;
	/* Functions whose calls as sleds' windows measured them were the fit's evidence
	 * (rb_ring_view.measured, docs/untimed.md "Measured calls") */
	unsigned measured;
	/* Counted calls (record.h, RB_CALLED): each record given as an entry and an exit
	 * whose time is the entry's plus the function's measured mean, an estimate (raw
	 * RB_CALLED on both events); each stands for rb_called_calls(arg) calls, which
	 * called_calls adds up. */
	uint64_t called, called_calls;
};

/* Jump buffers whose setjmp depth the decoder remembers, the most recent ones. */
#define RB_DECODE_JMPBUFS 64

/*
 * The streaming decoder: events come out oldest first, in batches, with memory of one bit
 * per slot (which slots are payloads), so a 32 MiB ring is summarised without holding
 * its events. rb_decoder_init parses the ring newest to oldest once (handing each special
 * record to `special`, when given, newest first, with its exact time); rb_decoder_read
 * then walks forward. Returns 0, -EINVAL when the view is inconsistent, or -ENOMEM.
 *
 * A longjmp leaves frames whose exit hooks never run: where the ring holds one, the
 * decoder follows the call depth and gives, right after the longjmp, an exit for every
 * frame it left, down to the depth of the latest setjmp of the same jump buffer, or, when
 * that setjmp is older than the ring, down to the shallowest depth seen (the target called
 * setjmp before the ring's oldest record, so every frame entered since is deeper). Every
 * consumer then sees a tree whose frames close.
 *
 * Coroutines: where the ring holds context switches (swapcontext), each context's frames
 * are kept apart; a switch gives exits for the frames of the context it leaves and
 * entries for those of the one it resumes, which is shown inside its resumer's call
 * (ringbuf/coroutines.h says how, and what is left out when the ring lost a context's
 * start).
 */
typedef void (*rb_special_fn)(void *ctx, const struct rb_event *e);

struct rb_decoder {
	struct rb_decode_stats stats; /* records, cut and anchors after init; gaps and
				       * conflicts as the first forward pass finds them */
	uint64_t open_at_start;	      /* calls the ring starts inside: exits with no entry */
	uint64_t start_ts, end_ts;    /* the oldest and the newest record's times; a copied
				       * ring ends at its freeze (rb_ring_view.frozen_ticks) */
	/* private */
	struct rb_ring_view view; /* its slots the filled copy, when the ring has untimed
				   * records (untimed.h) */
	uint64_t *filled;
	uint64_t *payload; /* bit per forward slot index: a payload, not a tag */
	uint64_t *plan;	  /* anchors (forward index) whose segment needs planning, descending */
	size_t nplan, capplan, plan_left;
	uint64_t base, first, pos, cur, fix_at, fix_add;
	bool started, first_pass;
	/* Merging the off-CPU times (view.off): ring events read ahead, the next interval,
	 * the last event given out. */
	struct rb_event *held;
	size_t held_n, held_i, off_i;
	uint64_t last_ts, off_end;
	bool any, tail_done;
	/* Non-local exits (record.h, RB_LONGJMP, RB_CTX_*), when the ring has any: events
	 * staged while the call depth is followed, the depth of the latest setjmp of each
	 * jump buffer (from where the running coroutine started), the exits a longjmp still
	 * owes, and the coroutines' frames (coroutines.h). */
	uint64_t nonlocal;
	bool coroutines, failed;
	struct rb_coroutines *co;
	struct rb_event *stage;
	size_t stage_n, stage_i;
	int64_t depth, min_depth;
	struct rb_jmpbuf {
		uint32_t key;
		int64_t depth;
	} jb[RB_DECODE_JMPBUFS];
	unsigned njb, jb_next;
	uint64_t unwind_left, unwind_ts;
};

int rb_decoder_init(struct rb_decoder *d, const struct rb_ring_view *v, uint64_t ref_ticks,
		    rb_special_fn special, void *ctx);
/* Up to max events into buf; 0 at the end. max is 2 at least: a counted call's entry and
 * exit come in one batch. */
size_t rb_decoder_read(struct rb_decoder *d, struct rb_event *buf, size_t max);
/* Back to the oldest event, for another pass. */
void rb_decoder_rewind(struct rb_decoder *d);
void rb_decoder_free(struct rb_decoder *d);

/* All events at once, into a malloc'd array, oldest first (0, -EINVAL or -ENOMEM). */
int rb_decode(const struct rb_ring_view *v, uint64_t ref_ticks, struct rb_event **events,
	      size_t *count, struct rb_decode_stats *stats);

const char *rb_ev_kind_name(enum rb_ev_kind kind);

#endif
