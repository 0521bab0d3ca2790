/* SPDX-License-Identifier: MIT */
/*
 * The trace point and its control protocol, end to end: a traced thread runs instrumented
 * code (tests/traced.c) while this thread, as the control thread, starts, stops, freezes,
 * persists and decodes its ring.
 */
#include "harness.h"
#include "hal/timer.h"
#include "ringbuf/decode.h"
#include "ringbuf/ring.h"
#include "ringbuf/trace.h"
#include "ringbuf/tracefile.h"
#include "tests/traced.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long a running traced thread gets to answer a stop. It answers at its next trace
 * point, as soon as it runs; on a loaded machine that may be seconds later, and 1 s was
 * not always enough (a copy was taken instead). Generous: it only catches a hang. */
#define RUNNING_ANSWER_MS 30000

struct worker {
	_Atomic int registered, go, quit, calls;
	int block_fd; /* >= 0: block in read() on it once, after a few calls */
	_Atomic int blocked;
	int iterations_per_round;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	CHECK_EQ_INT(rb_thread_register("worker"), 0);
	atomic_store(&w->registered, 1);
	while (!atomic_load(&w->go))
		sched_yield();
	while (!atomic_load(&w->quit)) {
		for (int i = 0; i < w->iterations_per_round; i++)
			traced_top(i);
		atomic_fetch_add(&w->calls, 1);
		if (w->block_fd >= 0 && atomic_load(&w->calls) == 3) {
			char c;
			atomic_store(&w->blocked, 1);
			if (read(w->block_fd, &c, 1) != 1)
				break;
			atomic_store(&w->blocked, 0);
		}
		sched_yield();
	}
	return NULL;
}

static struct rb_ring *the_ring(void)
{
	struct rb_ring *r = NULL;
	rb_rings(&r, 1);
	return r;
}

static void start_worker(struct worker *w, pthread_t *t)
{
	hal_timer_init();
	CHECK_EQ_INT(pthread_create(t, NULL, work, w), 0);
	while (!atomic_load(&w->registered))
		sched_yield();
}

/* Checks that decoded events nest properly and name only traced functions. Returns the
 * number of whole traced_top calls seen. */
static int check_events(const struct rb_event *ev, size_t n, int expect_sync_first)
{
	/* An entry's id is the low half of its address (ringbuf/trace.h). */
	uint64_t top = (uint32_t)(uintptr_t)traced_top, mid = (uint32_t)(uintptr_t)traced_mid,
		 leaf = (uint32_t)(uintptr_t)traced_leaf;
	uint64_t stack[64];
	int depth = 0, tops = 0, unmatched_exits = 0;
	if (expect_sync_first)
		if (!(n > 0 && ev[0].kind == RB_EV_SYNC))
			test_fail(__FILE__, __LINE__, "first of %zu events is %s", n,
				  n ? rb_ev_kind_name(ev[0].kind) : "none");
	for (size_t i = 0; i < n; i++) {
		if (i && ev[i].ts < ev[i - 1].ts)
			test_fail(__FILE__, __LINE__, "time goes back at event %zu", i);
		if (ev[i].kind == RB_EV_ENTRY) {
			if (ev[i].id != top && ev[i].id != mid && ev[i].id != leaf)
				test_fail(__FILE__, __LINE__, "unknown id %llx at %zu",
					  (unsigned long long)ev[i].id, i);
			if (depth < 64)
				stack[depth] = ev[i].id;
			depth++;
		} else if (ev[i].kind == RB_EV_EXIT) {
			if (depth == 0) {
				unmatched_exits++; /* its entry was before the start or overwritten */
				continue;
			}
			depth--;
			if (depth < 64 && stack[depth] == top)
				tops++;
		}
	}
	CHECK(unmatched_exits <= 3 && depth <= 3); /* at most one partial call at each end */
	return tops;
}

static void clean_stop(void)
{
	struct worker w = { .block_fd = -1, .go = 1, .iterations_per_round = 10 };
	pthread_t t;
	start_worker(&w, &t);
	for (int round = 0; round < 20; round++) {
		rb_lock();
		struct rb_ring *r = the_ring();
		CHECK_EQ_INT(rb_start(r), 0);
		rb_unlock();
		int before = atomic_load(&w.calls);
		while (atomic_load(&w.calls) < before + 2)
			sched_yield();
		struct rb_frozen f;
		rb_lock();
		CHECK_EQ_INT(rb_stop(r, RUNNING_ANSWER_MS, &f), 0);
		rb_unlock();
		CHECK(!f.copied);
		struct rb_ring_view v = rb_frozen_view(&f);
		struct rb_event *ev;
		size_t n;
		struct rb_decode_stats st;
		CHECK_EQ_INT(rb_decode(&v, hal_timer_now(), &ev, &n, &st), 0);
		CHECK(check_events(ev, n, 1) >= 10);
		CHECK_EQ_U64(st.cut, 0);
		free(ev);
		rb_frozen_release(&f);
	}
	atomic_store(&w.quit, 1);
	pthread_join(t, NULL);
}

TEST(ring_clean_stop_freezes_a_consistent_call_tree)
{
	clean_stop();
}

static void blocked_copy(void)
{
	int pipefd[2];
	CHECK_EQ_INT(pipe(pipefd), 0);
	struct worker w = { .block_fd = pipefd[0], .iterations_per_round = 5 };
	pthread_t t;
	start_worker(&w, &t);
	rb_lock();
	struct rb_ring *r = the_ring();
	CHECK_EQ_INT(rb_start(r), 0);
	rb_unlock();
	atomic_store(&w.go, 1);
	while (!atomic_load(&w.blocked))
		sched_yield();

	struct rb_frozen f;
	rb_lock();
	CHECK_EQ_INT(rb_stop(r, 20, &f), 0);
	CHECK(f.copied);
	CHECK_EQ_INT(rb_start(r), -EBUSY); /* the thread has not answered yet */
	rb_unlock();
	struct rb_ring_view v = rb_frozen_view(&f);
	struct rb_event *ev;
	size_t n;
	CHECK_EQ_INT(rb_decode(&v, hal_timer_now(), &ev, &n, NULL), 0);
	CHECK_EQ_INT(check_events(ev, n, 1), 15); /* 3 rounds of 5 calls, all whole */
	free(ev);

	/* A copy to look at by hand: JITT_TRACE_OUT=dir unit-tests ring_blocked; jitt decode */
	const char *keep = getenv("JITT_TRACE_OUT");
	if (keep)
		CHECK_EQ_INT(rb_trace_write(keep, "blocked thread", &f, 1, NULL, 0), 0);
	rb_frozen_release(&f);

	/* Stopped again while it still blocks (the next anomaly): copied again, the same calls
	 * (it used to be -EINVAL, and a process whose threads all blocked had no trace). */
	rb_lock();
	CHECK_EQ_INT(rb_stop(r, 20, &f), 0);
	CHECK(f.copied);
	rb_unlock();
	v = rb_frozen_view(&f);
	CHECK_EQ_INT(rb_decode(&v, hal_timer_now(), &ev, &n, NULL), 0);
	CHECK_EQ_INT(check_events(ev, n, 1), 15);
	free(ev);
	rb_frozen_release(&f);

	/* Woken, the thread answers at its next trace point; then tracing restarts. */
	CHECK_EQ_INT(write(pipefd[1], "x", 1), 1);
	int err;
	for (int i = 0; i < 100000; i++) {
		rb_lock();
		err = rb_start(r);
		rb_unlock();
		if (err != -EBUSY)
			break;
		sched_yield();
	}
	CHECK_EQ_INT(err, 0);
	atomic_store(&w.quit, 1);
	pthread_join(t, NULL);
	close(pipefd[0]);
	close(pipefd[1]);
}

TEST(ring_blocked_thread_gets_a_validated_copy)
{
	blocked_copy();
}

/* A stop that finds the thread halfway through its answer (tracing off, the end position
 * not yet in limit: a thread paused between its two stores) stays pending: the next stop
 * waits for that answer instead of asking again over it, and the ring restarts. This thread
 * plays its own ring's owner, by hand, between the control's calls. (Left running, the next
 * stop asked again, setting limit to 0 over the answer: the thread, off, never answered
 * again, and every later stop said -EAGAIN; once in a thousand-cycle stress run.) */
TEST(ring_a_stop_caught_halfway_through_the_answer_stays_pending)
{
	hal_timer_init();
	CHECK_EQ_INT(rb_thread_register("halfway"), 0);
	rb_lock();
	struct rb_ring *r = the_ring();
	CHECK_EQ_INT(rb_start(r), 0);
	rb_unlock();
	uintptr_t pos = atomic_load(&rb_tls.pos), end = pos & ~(uintptr_t)RB_POS_CLOCK;
	atomic_store(&rb_tls.pos, 0); /* the owner turned off: the first of its two stores */
	struct rb_frozen f;
	rb_lock();
	CHECK_EQ_INT(rb_stop(r, 0, &f), -EAGAIN);
	CHECK_EQ_INT(rb_start(r), -EBUSY);
	CHECK_EQ_U64(atomic_load(&rb_tls.limit), 0); /* still asked */
	rb_unlock();
	atomic_store(&rb_tls.limit, end); /* ... and the second: its answer */
	rb_lock();
	CHECK_EQ_INT(rb_stop(r, 0, &f), 0);
	CHECK(!f.copied);
	CHECK_EQ_U64(f.end, (end - (uintptr_t)f.slots) / 8);
	CHECK_EQ_U64(f.valid, 2); /* the start's sync record */
	rb_frozen_release(&f);
	CHECK_EQ_INT(rb_start(r), 0);
	rb_unlock();
	CHECK(atomic_load(&rb_tls.pos) != 0);
	traced_empty();
	rb_lock();
	CHECK_EQ_INT(rb_stop(r, 0, &f), 0); /* this thread does not answer in rb_stop: copied */
	CHECK(f.copied);
	CHECK_EQ_U64(f.valid, 4); /* the restart's sync, traced_empty's entry and exit */
	rb_frozen_release(&f);
	rb_unlock();
	CHECK_EQ_INT(rb_thread_unregister(), 0);
}

/* A peek (the sleds' learning) copies the ring as its thread goes on: nothing stops, and the
 * records stay for the next trace; an off ring is refused. */
TEST(ring_peek_copies_without_stopping_the_thread)
{
	hal_timer_init();
	CHECK_EQ_INT(rb_thread_register("peeked"), 0);
	rb_lock();
	struct rb_ring *r = the_ring();
	struct rb_frozen f;
	CHECK_EQ_INT(rb_peek_newest(r, UINT64_MAX, &f), -EINVAL);
	CHECK_EQ_INT(rb_start(r), 0);
	rb_unlock();
	traced_empty();
	traced_empty();
	rb_lock();
	CHECK_EQ_INT(rb_peek_newest(r, UINT64_MAX, &f), 0);
	CHECK(f.copied);
	CHECK_EQ_U64(f.valid, 6); /* the start's sync record, two entries and two exits */
	CHECK(f.slots != NULL && f.copy != NULL);
	uint64_t whole[6];
	memcpy(whole, f.slots + f.end - 6, sizeof(whole));
	rb_frozen_release(&f);
	/* The newest 3 slots: the last call's exit and the entry and exit before it, in order,
	 * ending at the copy's end (index 0, circularly); more than were written: those */
	CHECK_EQ_INT(rb_peek_newest(r, 3, &f), 0);
	CHECK(f.copied);
	CHECK_EQ_U64(f.nslots, 3);
	CHECK_EQ_U64(f.end, 0);
	CHECK_EQ_U64(f.valid, 3);
	CHECK(!memcmp(f.slots, whole + 3, 3 * sizeof(*whole)));
	rb_frozen_release(&f);
	CHECK_EQ_INT(rb_peek_newest(r, 100, &f), 0);
	CHECK_EQ_U64(f.nslots, 100);
	CHECK_EQ_U64(f.valid, 6);
	CHECK(!memcmp(f.slots + 94, whole, sizeof(whole)));
	rb_frozen_release(&f);
	CHECK(rb_ring_on(r));
	rb_unlock();
	CHECK(atomic_load(&rb_tls.pos) != 0); /* still tracing */
	traced_empty();
	rb_lock();
	CHECK_EQ_U64(rb_ring_records(r), 6); /* kept, not restarted: 4 before the peek, 2 after */
	CHECK_EQ_INT(rb_stop(r, 0, &f), 0);
	rb_frozen_release(&f);
	rb_unlock();
	CHECK_EQ_INT(rb_thread_unregister(), 0);
}

/* Returns the decoded ring's last timestamp. */
static uint64_t wrap_round_trip(void)
{
	struct worker w = { .block_fd = -1, .go = 1, .iterations_per_round = 20000 };
	pthread_t t;
	start_worker(&w, &t);
	rb_lock();
	struct rb_ring *r = the_ring();
	CHECK_EQ_INT(rb_start(r), 0);
	int before = atomic_load(&w.calls);
	rb_unlock();
	/* 20000 tops are 120000 slots; a few rounds wrap any ring up to 2^19 slots. Counted
	 * from the start: the worker's rounds before it recorded nothing (a loaded machine
	 * once ran 7 of them before rb_start, and the ring had not wrapped). */
	while (atomic_load(&w.calls) < before + (int)(RB_RING_SLOTS / 100000) + 2)
		sched_yield();
	struct rb_frozen f;
	rb_lock();
	CHECK_EQ_INT(rb_stop(r, RUNNING_ANSWER_MS, &f), 0);
	rb_unlock();
	CHECK(f.laps >= 1);
	CHECK_EQ_U64(f.valid, f.nslots);

	char path[4096], err[256] = "";
	CHECK_EQ_INT(rb_trace_write(test_tmpdir(), "test wrap", &f, 1, path, sizeof(path)), 0);
	struct rb_trace tr;
	int e = rb_trace_open(path, &tr, err, sizeof(err));
	if (e)
		test_fail(__FILE__, __LINE__, "open: %d %s", e, err);
	CHECK_STR(tr.reason, "test wrap");
	CHECK_EQ_INT(tr.nthreads, 1);
	CHECK(tr.nmodules >= 1);
	CHECK_STR(tr.threads[0].name, "worker");
	struct rb_event *ev;
	size_t n;
	struct rb_decode_stats st;
	CHECK_EQ_INT(rb_decode(&tr.threads[0].view, tr.ref_ticks, &ev, &n, &st), 0);
	CHECK(check_events(ev, n, 0) > 1000);
	CHECK(st.anchors >= 1); /* the sync of the last wrap is always in the window */
	CHECK(ev[n - 1].ts <= tr.ref_ticks);
	uint64_t last = ev[n - 1].ts;
	free(ev);
	rb_trace_close(&tr);
	rb_frozen_release(&f);
	atomic_store(&w.quit, 1);
	pthread_join(t, NULL);
	return last;
}

TEST(ring_wraps_and_the_file_round_trips)
{
	wrap_round_trip();
}

/*
 * The fallback clock (ringbuf/trace.h, "the clock"), used where the HAL cannot use the
 * counter: armv7 under qemu-user runs every ring test on it; here the HAL's published
 * choice, which rb_start and hal_timer_now() follow, is flipped to it as its fallback
 * would (each test runs in its own process). On x86_64 every trace point then takes the
 * rare path through limit; on ARM through the bit of pos. The wrap, the clean stop and the
 * validated copy must work as on the counter, with timestamps from CLOCK_MONOTONIC.
 */
TEST(ring_clock_fallback_wraps_stops_and_copies)
{
#if defined(RB_COUNTER_ONLY) || defined(RB_CLOCK_ONLY)
	printf("    skipped: this configuration has one timer source\n");
#else
	hal_timer_init();
	atomic_store(&hal_timer_use_clock, true);
	atomic_store(&hal_timer_freq_hz, 1000000000u);
	clean_stop();
	blocked_copy();
	uint64_t last = wrap_round_trip(), now = hal_clock_now();
	/* Nanoseconds of CLOCK_MONOTONIC, not counter ticks: within a minute of now. */
	CHECK(last <= now && now - last < 60000000000ull);
#endif
}

TEST(ring_self_tracing_an_empty_function_writes_two_records)
{
	hal_timer_init();
	CHECK_EQ_INT(rb_trace_self(true), 0);
	uintptr_t before = atomic_load(&rb_tls.pos) & ~RB_POS_CLOCK;
	traced_empty();
	untraced_empty();
	uintptr_t after = atomic_load(&rb_tls.pos) & ~RB_POS_CLOCK;
	CHECK_EQ_INT(rb_trace_self(false), 0);
	CHECK_EQ_U64(after - before, 16); /* one entry, one exit; the twin adds nothing */
	CHECK_EQ_INT(rb_thread_unregister(), 0);
}

/* Sixteen traced threads; the control thread stops all of them, checks and persists what
 * it froze, and restarts them, a thousand times. Every frozen ring must decode into
 * properly nested calls of the traced functions: no torn record, no lost end position. */
TEST(ring_sixteen_threads_stopped_and_restarted_a_thousand_times)
{
	enum { THREADS = 16 };
	/* Emulated boards (qemu-system on two host cores) run it shorter: JITT_STRESS_CYCLES. */
	const char *env = getenv("JITT_STRESS_CYCLES");
	const int CYCLES = env && atoi(env) > 0 ? atoi(env) : 1000;
	CHECK_EQ_INT(rb_set_max_threads(THREADS), 0);
	static struct worker w[THREADS];
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .block_fd = -1, .go = 1, .iterations_per_round = 3 };
		start_worker(&w[i], &t[i]);
	}
	struct rb_ring *rings[THREADS];
	rb_lock();
	CHECK_EQ_INT(rb_rings(rings, THREADS), THREADS);
	for (int i = 0; i < THREADS; i++)
		CHECK_EQ_INT(rb_start(rings[i]), 0);
	rb_unlock();

	/* A thread the scheduler leaves unanswered for the 200 ms (ThreadSanitizer on a slow
	 * or paused machine) but running meanwhile changes its ring too fast to copy: -EAGAIN,
	 * rb_stop's documented answer then, not a fault; the stop stays pending and a later
	 * cycle sees it answered. (It used to leave the ring running but off for good: -EAGAIN
	 * in every cycle after.) No ring is ever off here: -EINVAL is a fault, and so is a ring
	 * too fast to copy in 10 cycles in a row. */
	int copies = 0, files = 0, wrapped = 0, too_fast = 0, in_a_row[THREADS] = { 0 };
	for (int cycle = 0; cycle < CYCLES; cycle++) {
		struct rb_frozen all[THREADS], f[THREADS];
		int errs[THREADS], n = 0;
		rb_lock();
		rb_stop_many(rings, THREADS, 200, all, errs);
		rb_unlock();
		for (int i = 0; i < THREADS; i++) {
			in_a_row[i] = errs[i] == -EAGAIN ? in_a_row[i] + 1 : 0;
			if (errs[i] == 0)
				f[n++] = all[i];
			else if (errs[i] == -EAGAIN) /* ran on unanswered: too fast to copy */
				too_fast++;
			if ((errs[i] && errs[i] != -EAGAIN) || in_a_row[i] >= 10)
				test_fail(__FILE__, __LINE__, "cycle %d: stop: %d (%d in a row)", cycle,
					  errs[i], in_a_row[i]);
		}
		for (int i = 0; i < n; i++) {
			copies += f[i].copied;
			struct rb_ring_view v = rb_frozen_view(&f[i]);
			struct rb_event *ev;
			size_t ne;
			if (rb_decode(&v, hal_timer_now(), &ev, &ne, NULL) == 0) {
				/* A thread the scheduler left running for long may have wrapped:
				 * then its oldest record is not the start's sync. */
				check_events(ev, ne, f[i].laps == 0);
				wrapped += f[i].laps > 0;
				free(ev);
			}
		}
		if (cycle % 100 == 0) {
			CHECK_EQ_INT(rb_trace_write(test_tmpdir(), "stress", f, n, NULL, 0), 0);
			files++;
		}
		for (int i = 0; i < n; i++)
			rb_frozen_release(&f[i]);
		rb_lock();
		for (int i = 0; i < THREADS; i++) {
			int err = rb_start(rings[i]);
			if (err && err != -EBUSY)
				test_fail(__FILE__, __LINE__, "cycle %d: start: %d", cycle, err);
		}
		rb_unlock();
	}
	printf("    %d cycles, %d validated copies, %d too fast to copy, %d wrapped rings, "
	       "%d files\n",
	       CYCLES, copies, too_fast, wrapped, files);
	for (int i = 0; i < THREADS; i++)
		atomic_store(&w[i].quit, 1);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ_INT(rb_set_max_threads(CONFIG_RB_MAX_TRACED_THREADS), 0);
}

/*
 * A two-slot record where the ring's last record ended exactly at its end (the counted
 * thunk's fast path leaves pos there: ringbuf/sleds_x86_64.c): the ring wraps first, and
 * the record lies whole after the sync at slot 0. Written in place, its payload went to
 * slot 0 and its tag past the spare slot, and the decoder read every older record one slot
 * off (a counted trace of memcached's worker had times 2^32 ticks out).
 */
TEST(ring_a_two_slot_record_at_the_very_end_wraps_first)
{
	hal_timer_init();
	CHECK_EQ_INT(rb_trace_self(true), 0);
	const uint64_t *slots = NULL;
	uint64_t nslots = 0;
	uint32_t laps;
	if (!CHECK(rb_ring_own(&slots, &nslots, &laps)))
		return;
	uintptr_t end = (uintptr_t)(slots + nslots), mode;
	for (int kind = 0; kind < 2; kind++) {
		mode = atomic_load(&rb_tls.pos) & RB_POS_CLOCK;
		atomic_store(&rb_tls.pos, end | mode); /* a two-slot record ended at the end */
		if (kind == 0)
			rb_special(RB_MARK, 77);
		else
			rb_put_called(0x1234, 99);
		CHECK_EQ_INT(rb_tag_low(slots[1]), RB_SYNC);
		CHECK_EQ_INT(rb_tag_low(slots[3]), kind == 0 ? RB_MARK : RB_CALLED);
		CHECK_EQ_U64((uint32_t)slots[2], kind == 0 ? 77 : 0x1234);
		if (kind == 1)
			CHECK_EQ_U64(slots[2] >> 32, 99);
		CHECK_EQ_U64(atomic_load(&rb_tls.pos) & ~RB_POS_CLOCK, (uintptr_t)(slots + 4));
	}
	CHECK_EQ_INT(rb_trace_self(false), 0);
	CHECK_EQ_INT(rb_thread_unregister(), 0);
}
