/* SPDX-License-Identifier: MIT */
/*
 * The app's background threads, both traced:
 *   worker-1  takes tasks from a mutex-protected queue with a condition variable: image
 *             decodes the UI posts each frame, the decodes of what io-1 fetched, and the
 *             blocked scenario's slow task, which the UI thread waits for (Hubble section 3,
 *             second case: the UI thread blocked on another thread's work).
 *   io-1      fetches over a pipe pair from a peer (an untraced thread standing in for
 *             another process: it sleeps a latency, then answers), blocking in read(), with
 *             a sleep now and then (a rate limit), and hands the data to worker-1.
 * Every task is posted by the UI thread's frames, so the work per frame is the same from
 * run to run: the benchmark's CPU times compare.
 */
#include "agent/jitt.h"
#include "sim/sim.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define QUEUE_CAP 64
#define DECODE_US 250      /* a decode the UI posts each frame */
#define FETCH_DECODE_US 80 /* decoding what io-1 fetched */
#define FETCH_MAX 32768    /* bytes, under a pipe's 64 KiB */

enum task_kind { TASK_QUIT, TASK_DECODE, TASK_FETCH, TASK_SLOW };

/* Completion of a task someone waits for. */
struct sim_done {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	uint32_t result;
};

struct sim_task {
	enum task_kind kind;
	uint32_t arg, arg2;
	struct sim_done *done;
};

struct sim_queue {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct sim_task t[QUEUE_CAP];
	unsigned head, tail;
};

static struct sim_queue work_q = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
static struct sim_queue io_q = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
static pthread_t worker_tid, io_tid, peer_tid;
static sem_t ready;
static int req_pipe[2] = { -1, -1 }, resp_pipe[2] = { -1, -1 };
static volatile uint32_t worker_sink, io_sink;

/* -ENOSPC when full: the UI thread drops background work rather than wait for it. */
SIM_FN int sim_queue_post(struct sim_queue *q, struct sim_task t)
{
	int err = 0;
	pthread_mutex_lock(&q->mu);
	if (q->tail - q->head == QUEUE_CAP) {
		err = -ENOSPC;
	} else {
		q->t[q->tail++ % QUEUE_CAP] = t;
		pthread_cond_signal(&q->cv);
	}
	pthread_mutex_unlock(&q->mu);
	return err;
}

/* For the tasks that must not be dropped (quit, the slow task): retry every millisecond. */
SIM_FN void sim_post_must(struct sim_queue *q, struct sim_task t)
{
	struct timespec ms = { 0, 1000000 };
	while (sim_queue_post(q, t) == -ENOSPC)
		nanosleep(&ms, NULL);
}

SIM_FN struct sim_task sim_queue_take(struct sim_queue *q)
{
	pthread_mutex_lock(&q->mu);
	while (q->head == q->tail)
		pthread_cond_wait(&q->cv, &q->mu);
	struct sim_task t = q->t[q->head++ % QUEUE_CAP];
	pthread_mutex_unlock(&q->mu);
	return t;
}

SIM_INLINE uint32_t hash2(uint32_t a, uint32_t b)
{
	uint32_t h = a * 2654435761u ^ b * 2246822519u;
	h ^= h >> 15, h *= 3266489917u, h ^= h >> 16;
	return h;
}

SIM_FN void sim_post_frame_work(unsigned frame)
{
	sim_queue_post(&work_q, (struct sim_task){ TASK_DECODE, DECODE_US, 0, NULL });
	if (frame % 2 == 0) {
		/* 4 to 28 KiB, after 0.5 to 2 ms of the peer's latency, from the seed. */
		uint32_t h = hash2(sim_opt.seed, frame);
		sim_queue_post(&io_q, (struct sim_task){ TASK_FETCH, 4096 + h % 7 * 4096,
							 500 + (h >> 8) % 1500, NULL });
	}
}

/* ---- worker-1 ---- */

SIM_FN uint32_t sim_decode_row(uint64_t us, uint32_t x)
{
	return sim_spin_us(x, us);
}

SIM_FN uint32_t sim_decode_image(unsigned us, uint32_t x)
{
	/* Sixteen rows: the decode is many calls, as a codec's is. */
	for (unsigned row = 0; row < 16; row++)
		x = sim_decode_row(us / 16, x + row);
	return x;
}

SIM_FN uint32_t sim_worker_loop(uint32_t x)
{
	for (;;) {
		struct sim_task t = sim_queue_take(&work_q);
		switch (t.kind) {
		case TASK_DECODE:
			x = sim_decode_image(t.arg, x);
			break;
		case TASK_SLOW:
			x = sim_culprit_slow_task(t.arg, x);
			pthread_mutex_lock(&t.done->mu);
			t.done->done = true;
			t.done->result = x;
			pthread_cond_signal(&t.done->cv);
			pthread_mutex_unlock(&t.done->mu);
			break;
		case TASK_FETCH:
			break;
		case TASK_QUIT:
			return x;
		}
	}
}

/* The blocked scenario, on the UI thread: post the slow task, wait until it is done. */
SIM_FN uint32_t sim_wait_for_worker(unsigned ms, uint32_t x)
{
	struct sim_done d = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0 };
	sim_post_must(&work_q, (struct sim_task){ TASK_SLOW, ms, 0, &d });
	pthread_mutex_lock(&d.mu);
	while (!d.done)
		pthread_cond_wait(&d.cv, &d.mu);
	pthread_mutex_unlock(&d.mu);
	pthread_cond_destroy(&d.cv);
	pthread_mutex_destroy(&d.mu);
	return x ^ d.result;
}

/* ---- io-1 ---- */

static unsigned char io_buf[FETCH_MAX];

SIM_FN int sim_write_all(int fd, const void *buf, size_t n)
{
	for (size_t done = 0; done < n;) {
		ssize_t w = write(fd, (const char *)buf + done, n - done);
		if (w < 0 && errno != EINTR)
			return -errno;
		done += w > 0 ? (size_t)w : 0;
	}
	return 0;
}

/* Blocks until n bytes came; -EPIPE when the other side closed first. */
SIM_FN int sim_read_all(int fd, void *buf, size_t n)
{
	for (size_t done = 0; done < n;) {
		ssize_t r = read(fd, (char *)buf + done, n - done);
		if (r == 0)
			return -EPIPE;
		if (r < 0 && errno != EINTR)
			return -errno;
		done += r > 0 ? (size_t)r : 0;
	}
	return 0;
}

SIM_FN uint32_t sim_checksum(const unsigned char *p, size_t n, uint32_t x)
{
	for (size_t i = 0; i < n; i++)
		x = (x ^ p[i]) * 16777619u;
	return x;
}

/* Every fourth fetch waits 2 ms first, as a client under a server's rate limit does. */
SIM_FN void sim_io_backoff(void)
{
	struct timespec ts = { 0, 2000000 };
	nanosleep(&ts, NULL);
}

SIM_FN uint32_t sim_fetch(uint32_t size, uint32_t latency_us, uint32_t x)
{
	static unsigned fetches;
	if (++fetches % 4 == 0)
		sim_io_backoff();
	uint32_t req[2] = { size, latency_us };
	if (sim_write_all(req_pipe[1], req, sizeof(req)) || sim_read_all(resp_pipe[0], io_buf, size))
		return x;
	x = sim_checksum(io_buf, size, x);
	sim_queue_post(&work_q, (struct sim_task){ TASK_DECODE, FETCH_DECODE_US, 0, NULL });
	return x;
}

SIM_FN uint32_t sim_io_loop(uint32_t x)
{
	for (;;) {
		struct sim_task t = sim_queue_take(&io_q);
		if (t.kind == TASK_QUIT)
			return x;
		if (t.kind == TASK_FETCH)
			x = sim_fetch(t.arg, t.arg2, x);
	}
}

/* ---- the peer: another process as far as the app can tell; never traced ---- */

static SIM_UNTRACED void *peer_main(void *arg)
{
	static unsigned char buf[FETCH_MAX];
	(void)arg;
	memset(buf, 0xa5, sizeof(buf));
	uint32_t req[2];
	while (!sim_read_all(req_pipe[0], req, sizeof(req))) {
		struct timespec ts = { 0, (long)req[1] * 1000 };
		nanosleep(&ts, NULL);
		if (sim_write_all(resp_pipe[1], buf, req[0] < FETCH_MAX ? req[0] : FETCH_MAX))
			break;
	}
	close(resp_pipe[1]);
	return NULL;
}

/* ---- starting and stopping ---- */

/*
 * Tracing starts and stops outside the loops, so each thread's trace holds whole calls.
 * At most max_threads threads have a ring (2 by default, Hubble 4.3: the UI thread and one
 * more): the threads register one after the other, ui, worker-1 then io-1, so the one left
 * out by default is always io-1 and a blocked frame's waker is always traced.
 */
static SIM_UNTRACED void thread_setup(const char *name)
{
	/* Background priority, as Android gives its background threads (nice 10): a task
	 * the UI thread posts must not preempt the frame that posted it. Linux's nice is
	 * per thread. */
	setpriority(PRIO_PROCESS, 0, 10);
	int err = jitt_thread_name(name);
	if (!err && sim_opt.trace)
		err = jitt_trace_thread(true);
	if (err == -EBUSY)
		fprintf(stderr, "jank-sim: %s: not traced: max_threads rings already in use "
				"(the jitt config can raise it)\n",
			name);
	else if (err)
		fprintf(stderr, "jank-sim: %s: not traced: %s\n", name, strerror(-err));
	sem_post(&ready);
}

static SIM_UNTRACED void *worker_main(void *arg)
{
	(void)arg;
	thread_setup(sim_opt.worker_name);
	worker_sink = sim_worker_loop(sim_opt.seed);
	jitt_trace_thread(false);
	return NULL;
}

static SIM_UNTRACED void *io_main(void *arg)
{
	(void)arg;
	thread_setup(sim_opt.io_name);
	io_sink = sim_io_loop(sim_opt.seed);
	jitt_trace_thread(false);
	/* The peer sees the end of its requests and stops. */
	close(req_pipe[1]);
	return NULL;
}

/* Starts the threads one by one, each once the previous has its ring. 0 or a negative
 * errno. */
SIM_UNTRACED int sim_workers_start(void)
{
	int err;
	if (pipe(req_pipe) || pipe(resp_pipe) || sem_init(&ready, 0, 0))
		return -errno;
	if ((err = pthread_create(&peer_tid, NULL, peer_main, NULL)) ||
	    (err = pthread_create(&worker_tid, NULL, worker_main, NULL)))
		return -err;
	sem_wait(&ready);
	if ((err = pthread_create(&io_tid, NULL, io_main, NULL)))
		return -err;
	sem_wait(&ready);
	return 0;
}

SIM_UNTRACED void sim_workers_stop(void)
{
	sim_post_must(&io_q, (struct sim_task){ TASK_QUIT, 0, 0, NULL });
	pthread_join(io_tid, NULL);
	sim_post_must(&work_q, (struct sim_task){ TASK_QUIT, 0, 0, NULL });
	pthread_join(worker_tid, NULL);
	pthread_join(peer_tid, NULL);
	close(req_pipe[0]);
	close(resp_pipe[0]);
	sem_destroy(&ready);
}
