/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/coroutines.h - the decoder's bookkeeping of coroutines (ucontext), private to
 * ringbuf/decode.c.
 *
 * A thread that switches stacks with swapcontext leaves one context's frames open and
 * resumes another's: the ring then holds the exits and entries of several call stacks
 * interleaved, and popping one frame per exit would close the wrong calls (a generator
 * that yields 20 calls deep closes 20 of its resumer's frames). The runtime writes a
 * record at each makecontext, swapcontext and setcontext (record.h, RB_CTX_*), and the
 * decoder keeps the frames of each context apart, giving every consumer one tree:
 *
 *   - a context switched to is shown inside the call of whoever resumed it (the caller of
 *     swapcontext: a scheduler's `resume` is where the coroutine's time went), and its
 *     frames saved at its last switch are given again as entries, at the switch;
 *   - a context switched away from gives an exit for each of its frames, at the switch,
 *     and they are saved under its key; so a suspended coroutine's calls hold no time;
 *   - a context made by makecontext ends when its function returns to uc_link: an exit
 *     below the frames it started on is its resumer's, given as such;
 *   - a context resumed whose frames are older than the ring (its last switch, or its
 *     makecontext, was overwritten) has calls whose entries the ring lost: their exits
 *     are left out, counted as `unmatched`, rather than closing the resumer's frames.
 *
 * The active contexts form a chain (nest): the thread's own stack first, then each context
 * resumed from the one before. A switch to a context of the chain suspends those above it;
 * a switch to any other context nests it on top. Symmetric coroutines (one switching
 * straight to another) therefore nest until one of them switches back down the chain.
 */
#ifndef JITT_RINGBUF_COROUTINES_H
#define JITT_RINGBUF_COROUTINES_H

#include "decode.h"

#include <stdbool.h>
#include <stdint.h>

struct rb_coroutines;

struct rb_coroutines *rb_co_new(void);
void rb_co_free(struct rb_coroutines *c);
/* Back to the ring's start (rb_decoder_rewind). */
void rb_co_reset(struct rb_coroutines *c);

/* An entry given out: its frame is remembered (0 or -ENOMEM). */
int rb_co_entry(struct rb_coroutines *c, const struct rb_event *e);
/* An exit about to be given out at call depth `depth` (before it): false when it is to be
 * left out (counted in st->unmatched when st is not NULL). When it is given, its frame is
 * forgotten. */
bool rb_co_exit(struct rb_coroutines *c, int64_t depth, struct rb_decode_stats *st);
/* A frame closed by other means (a longjmp's unwound exit). */
void rb_co_pop(struct rb_coroutines *c);
/* A context record (RB_EV_CTX_*): the exits and entries a switch gives are queued
 * (rb_co_owed), *depth is moved past them, and st (when not NULL) counts them.
 * 0 or -ENOMEM. */
int rb_co_record(struct rb_coroutines *c, const struct rb_event *e, int64_t *depth,
		 struct rb_decode_stats *st);
/* The next queued event, if any. */
bool rb_co_owed(struct rb_coroutines *c, struct rb_event *out);
/* The call depth the running context started at (0 on the thread's own stack): a jump
 * buffer's depth is kept relative to it, since a resumed context may run at another
 * depth than where it called setjmp. */
int64_t rb_co_base(const struct rb_coroutines *c);

#endif
