/* SPDX-License-Identifier: MIT */
/*
 * The blocking-call wrappers: wait-begin, wait-end and wake records around the calls a
 * thread blocks in, so a summary can tell blocked from busy and who woke whom (Argus 3.1,
 * AppInsight 5). How a call reaches __wrap_NAME depends on the C library:
 *  - musl, static: the program is linked with JITT_WRAP_LDFLAGS (agent/runtime/Kbuild:
 *    -Wl,--wrap=NAME for each function here), which sends every call of NAME, the C
 *    library's own included, to __wrap_NAME; __real_NAME is the original.
 *  - glibc, dynamically linked: the program's own slots for NAME in its GOT are pointed at
 *    __wrap_NAME when a thread is first traced (agent_wrappers_bind, bind.c), and the
 *    wrapper calls the C library's through a pointer found by dlsym. Until then no call
 *    comes here: a program none of whose threads is traced pays nothing for them (with
 *    --wrap, memcached's worker paid 1-2% on multiget, off).
 *
 * Cost when the calling thread is not traced: one thread-local load, a test and a branch,
 * then a tail jump to the real function (3 instructions before the jump, read in the
 * x86_64 disassembly of jank-sim). When traced: two special records (2 slots each) around a wait; a mutex
 * lock that does not have to wait records nothing (it tries first), and an unlock records
 * a wake only when some traced thread may be waiting for that mutex.
 *
 * Keys name the object (agent/marks.h). A call inside another wrapped call (musl's sleep()
 * calls nanosleep(); pthread_cond_wait() takes its mutex back) records nothing more.
 */
#define _GNU_SOURCE
#include "agent/log.h"
#include "agent/marks.h"
#include "agent/runtime/runtime.h"
#include "ringbuf/trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

/* The functions wrapped here, as JITT_WRAPPED in agent/runtime/Kbuild lists them. */
#define WRAPPED(X)                                                                            \
	X(pthread_mutex_lock) X(pthread_mutex_unlock) X(pthread_cond_wait)                    \
	X(pthread_cond_timedwait) X(pthread_cond_signal) X(pthread_cond_broadcast)            \
	X(nanosleep) X(clock_nanosleep) X(usleep) X(sleep) X(poll) X(ppoll) X(select)         \
	X(pselect) X(epoll_wait) X(epoll_pwait) X(read) X(write)

/* The C library's own function NAME, which a wrapper ends in. */
#ifdef __GLIBC__
/* The C library's, by dlsym (reals_find): not the program's own reference, which in a
 * fixed-address program is its PLT entry, whose slot the binding points back here. */
#define REAL(name) jitt_real_##name
#define REAL_POINTER(name) static __typeof__(name) *jitt_real_##name;
WRAPPED(REAL_POINTER)
#define REAL_FIND(name)                                                                       \
	if (!jitt_real_##name)                                                                \
		jitt_real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name);
/* Before a wrapper can be called: by lock_word_check's constructor, else by the first
 * thread traced (one traced from another constructor, which may run first). */
RT static void reals_find(void)
{
	WRAPPED(REAL_FIND)
}
#else
#define REAL(name) __real_##name
#define REAL_DECLARED(name) __typeof__(name) __real_##name;
WRAPPED(REAL_DECLARED)
#endif

#define WRAP RT
/* The traced part of a wrapper, out of line: the untraced path is then a thread-local load,
 * a test and a tail call of the real function, with no register saved (x86_64, gcc 12:
 * 3 instructions before the jump, against 9 with the body inline: the prologue's register
 * saves came before the test). Named jitt_wait_*: a frame of the runtime's, which the
 * outer frames recovered from a stack leave out by that prefix (agent/analysis/outer.c; as
 * traced_*, a thread frozen in a mutex wrapper had it named as where its root time ran). */
#define WRAP_SLOW RT __attribute__((noinline))

/* Inside a wrapped call already: the outer one records. */
static __thread int in_wait __attribute__((tls_model(RB_TLS_MODEL)));

WRAP static inline bool traced(void)
{
	return atomic_load_explicit(&rb_tls.pos, memory_order_relaxed) != 0;
}

/* Begins a wait record (the thread is traced) unless an outer wrapper did; returns
 * whether it did. */
WRAP static inline bool wait_begin(uint32_t key)
{
	if (in_wait)
		return false;
	in_wait = 1;
	rb_special(RB_WAIT_BEGIN, key);
	atomic_store_explicit(&rb_tls.wait_sp, (uintptr_t)__builtin_frame_address(0),
			      memory_order_release);
	return true;
}

WRAP static inline void wait_end(bool began, uint32_t key)
{
	if (!began)
		return;
	atomic_store_explicit(&rb_tls.wait_sp, 0, memory_order_relaxed);
	/* This thread is the only writer: a load and a store, no locked add. */
	atomic_store_explicit(&rb_tls.waits_ended,
			      atomic_load_explicit(&rb_tls.waits_ended, memory_order_relaxed) + 1,
			      memory_order_release);
	rb_special(RB_WAIT_END, key);
	in_wait = 0;
}

/* ---- mutexes ---- */

/* Traced threads blocked on a mutex, by a hash of its key: an unlock looks here to know
 * whether its wake record can matter. A collision costs only a spurious wake record. */
static _Atomic unsigned mutex_waiters[256];
#define WAITERS(key) (&mutex_waiters[((key) >> 2) & 255])

/*
 * Whether a mutex is free, read without taking it: the word the C library's lock takes
 * (glibc's __data.__lock, musl's second int), 0 when free in either. A traced lock of a
 * free mutex then takes it straight away: glibc's pthread_mutex_trylock costs some 5.5 ns
 * more than its lock (14 and 8.5 ns a lock and unlock, back to back), some 2% of
 * memcached's worker on multiget (docs/trace-points.md, "The C library's hot functions"). A
 * thread that takes the mutex between the look and the lock makes this one wait without
 * a record: the window is a few instructions. The layout is checked once, at start-up
 * (lock_word_check); where it does not read as expected, every traced lock tries first.
 */
static bool lock_word_ok;
WRAP static inline int lock_word(pthread_mutex_t *m)
{
#ifdef __GLIBC__
	int *w = &m->__data.__lock;
#else
	int *w = (int *)&m->__u.__vi[1];
#endif
	return __atomic_load_n(w, __ATOMIC_RELAXED); /* another thread's lock may change it */
}
__attribute__((constructor)) static void lock_word_check(void)
{
#ifdef __GLIBC__
	reals_find();
	if (!REAL(pthread_mutex_lock) || !REAL(pthread_mutex_unlock))
		return; /* none found (a static program): never bound */
#endif
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	bool free_before = lock_word(&m) == 0;
	REAL(pthread_mutex_lock)(&m);
	bool held = lock_word(&m) != 0;
	REAL(pthread_mutex_unlock)(&m);
	lock_word_ok = free_before && held && lock_word(&m) == 0;
}

/* A traced lock of a mutex that looked taken (or of any, where the lock word cannot be
 * read): apart from jitt_wait_pthread_mutex_lock, whose path for a free mutex then saves
 * no register. With this inline, that path set up this one's frame before its first test:
 * 24 instructions where it now runs 9. memcached's worker on multiget had 1,967 to 2,032
 * perf samples in the lock and unlock paths, 1,878 to 1,902 split (3 runs each). */
WRAP_SLOW static int jitt_wait_pthread_mutex_lock_busy(pthread_mutex_t *m)
{
	int r = pthread_mutex_trylock(m);
	if (r != EBUSY)
		return r;
	uint32_t key = agent_key_object(m);
	atomic_fetch_add_explicit(WAITERS(key), 1, memory_order_relaxed);
	bool began = wait_begin(key);
	r = REAL(pthread_mutex_lock)(m);
	wait_end(began, key);
	atomic_fetch_sub_explicit(WAITERS(key), 1, memory_order_relaxed);
	return r;
}

WRAP_SLOW static int jitt_wait_pthread_mutex_lock(pthread_mutex_t *m)
{
	if (in_wait || (lock_word_ok && lock_word(m) == 0))
		return REAL(pthread_mutex_lock)(m);
	return jitt_wait_pthread_mutex_lock_busy(m);
}

WRAP int __wrap_pthread_mutex_lock(pthread_mutex_t *m)
{
	if (__builtin_expect(!traced(), 1))
		return REAL(pthread_mutex_lock)(m);
	return jitt_wait_pthread_mutex_lock(m);
}

/* The waiters are counted, and the wake recorded, before the release, as for a condition
 * (below): after it, the woken waiter may run on another CPU, take the mutex and stop
 * counting itself before this thread looks, and the wake was lost (one run in ten of
 * runtime_wrappers_record_waits_and_who_woke_whom on two cores). */
WRAP_SLOW static int jitt_wait_pthread_mutex_unlock(pthread_mutex_t *m)
{
	if (!in_wait) {
		uint32_t key = agent_key_object(m);
		if (atomic_load_explicit(WAITERS(key), memory_order_relaxed))
			rb_special(RB_WAKE, key);
	}
	return REAL(pthread_mutex_unlock)(m);
}

WRAP int __wrap_pthread_mutex_unlock(pthread_mutex_t *m)
{
	if (__builtin_expect(!traced(), 1))
		return REAL(pthread_mutex_unlock)(m);
	return jitt_wait_pthread_mutex_unlock(m);
}

/* ---- condition variables ---- */

WRAP_SLOW static int jitt_wait_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	uint32_t key = agent_key_object(c);
	bool began = wait_begin(key);
	int r = REAL(pthread_cond_wait)(c, m);
	wait_end(began, key);
	return r;
}

WRAP int __wrap_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	if (__builtin_expect(!traced(), 1))
		return REAL(pthread_cond_wait)(c, m);
	return jitt_wait_pthread_cond_wait(c, m);
}

WRAP_SLOW static int jitt_wait_pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
				       const struct timespec *t)
{
	uint32_t key = agent_key_object(c);
	bool began = wait_begin(key);
	int r = REAL(pthread_cond_timedwait)(c, m, t);
	wait_end(began, key);
	return r;
}

WRAP int __wrap_pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
				       const struct timespec *t)
{
	if (__builtin_expect(!traced(), 1))
		return REAL(pthread_cond_timedwait)(c, m, t);
	return jitt_wait_pthread_cond_timedwait(c, m, t);
}

/* The wake is recorded before the signal, so its time is before the waiter's wait end. */
WRAP_SLOW static int jitt_wait_pthread_cond_signal(pthread_cond_t *c)
{
	rb_special(RB_WAKE, agent_key_object(c));
	return REAL(pthread_cond_signal)(c);
}

WRAP int __wrap_pthread_cond_signal(pthread_cond_t *c)
{
	if (__builtin_expect(!traced(), 1))
		return REAL(pthread_cond_signal)(c);
	return jitt_wait_pthread_cond_signal(c);
}

WRAP_SLOW static int jitt_wait_pthread_cond_broadcast(pthread_cond_t *c)
{
	rb_special(RB_WAKE, agent_key_object(c));
	return REAL(pthread_cond_broadcast)(c);
}

WRAP int __wrap_pthread_cond_broadcast(pthread_cond_t *c)
{
	if (__builtin_expect(!traced(), 1))
		return REAL(pthread_cond_broadcast)(c);
	return jitt_wait_pthread_cond_broadcast(c);
}

/* ---- sleeps ---- */

WRAP_SLOW static int jitt_wait_nanosleep(const struct timespec *req, struct timespec *rem)
{
	bool began = wait_begin(AGENT_KEY_SLEEP);
	int r = REAL(nanosleep)(req, rem);
	wait_end(began, AGENT_KEY_SLEEP);
	return r;
}

WRAP int __wrap_nanosleep(const struct timespec *req, struct timespec *rem)
{
	if (__builtin_expect(!traced(), 1))
		return REAL(nanosleep)(req, rem);
	return jitt_wait_nanosleep(req, rem);
}

WRAP_SLOW static int jitt_wait_clock_nanosleep(clockid_t clk, int flags, const struct timespec *req,
				struct timespec *rem)
{
	bool began = wait_begin(AGENT_KEY_SLEEP);
	int r = REAL(clock_nanosleep)(clk, flags, req, rem);
	wait_end(began, AGENT_KEY_SLEEP);
	return r;
}

WRAP int __wrap_clock_nanosleep(clockid_t clk, int flags, const struct timespec *req,
				struct timespec *rem)
{
	if (__builtin_expect(!traced(), 1))
		return REAL(clock_nanosleep)(clk, flags, req, rem);
	return jitt_wait_clock_nanosleep(clk, flags, req, rem);
}

WRAP_SLOW static int jitt_wait_usleep(useconds_t us)
{
	bool began = wait_begin(AGENT_KEY_SLEEP);
	int r = REAL(usleep)(us);
	wait_end(began, AGENT_KEY_SLEEP);
	return r;
}

WRAP int __wrap_usleep(useconds_t us)
{
	if (__builtin_expect(!traced(), 1))
		return REAL(usleep)(us);
	return jitt_wait_usleep(us);
}

WRAP_SLOW static unsigned jitt_wait_sleep(unsigned s)
{
	bool began = wait_begin(AGENT_KEY_SLEEP);
	unsigned r = REAL(sleep)(s);
	wait_end(began, AGENT_KEY_SLEEP);
	return r;
}

WRAP unsigned __wrap_sleep(unsigned s)
{
	if (__builtin_expect(!traced(), 1))
		return REAL(sleep)(s);
	return jitt_wait_sleep(s);
}

/* ---- waiting for file descriptors (a zero timeout never blocks: nothing recorded) ---- */

WRAP static inline uint32_t first_fd(const struct pollfd *fds, nfds_t n)
{
	return AGENT_KEY_FD(n ? fds[0].fd : -1);
}

WRAP_SLOW static int jitt_wait_poll(struct pollfd *fds, nfds_t n, int timeout)
{
	uint32_t key = first_fd(fds, n);
	bool began = timeout != 0 && wait_begin(key);
	int r = REAL(poll)(fds, n, timeout);
	wait_end(began, key);
	return r;
}

WRAP int __wrap_poll(struct pollfd *fds, nfds_t n, int timeout)
{
	if (__builtin_expect(!traced(), 1))
		return REAL(poll)(fds, n, timeout);
	return jitt_wait_poll(fds, n, timeout);
}

WRAP_SLOW static int jitt_wait_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *t,
		      const sigset_t *mask)
{
	uint32_t key = first_fd(fds, n);
	bool began = !(t && !t->tv_sec && !t->tv_nsec) && wait_begin(key);
	int r = REAL(ppoll)(fds, n, t, mask);
	wait_end(began, key);
	return r;
}

WRAP int __wrap_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *t,
		      const sigset_t *mask)
{
	if (__builtin_expect(!traced(), 1))
		return REAL(ppoll)(fds, n, t, mask);
	return jitt_wait_ppoll(fds, n, t, mask);
}

WRAP_SLOW static int jitt_wait_select(int n, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *t)
{
	uint32_t key = AGENT_KEY_FD(n - 1);
	bool began = !(t && !t->tv_sec && !t->tv_usec) && wait_begin(key);
	int r = REAL(select)(n, rd, wr, ex, t);
	wait_end(began, key);
	return r;
}

WRAP int __wrap_select(int n, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *t)
{
	if (__builtin_expect(!traced(), 1))
		return REAL(select)(n, rd, wr, ex, t);
	return jitt_wait_select(n, rd, wr, ex, t);
}

WRAP_SLOW static int jitt_wait_pselect(int n, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *t,
			const sigset_t *mask)
{
	uint32_t key = AGENT_KEY_FD(n - 1);
	bool began = !(t && !t->tv_sec && !t->tv_nsec) && wait_begin(key);
	int r = REAL(pselect)(n, rd, wr, ex, t, mask);
	wait_end(began, key);
	return r;
}

WRAP int __wrap_pselect(int n, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *t,
			const sigset_t *mask)
{
	if (__builtin_expect(!traced(), 1))
		return REAL(pselect)(n, rd, wr, ex, t, mask);
	return jitt_wait_pselect(n, rd, wr, ex, t, mask);
}

WRAP_SLOW static int jitt_wait_epoll_wait(int ep, struct epoll_event *ev, int max, int timeout)
{
	bool began = timeout != 0 && wait_begin(AGENT_KEY_FD(ep));
	int r = REAL(epoll_wait)(ep, ev, max, timeout);
	wait_end(began, AGENT_KEY_FD(ep));
	return r;
}

WRAP int __wrap_epoll_wait(int ep, struct epoll_event *ev, int max, int timeout)
{
	if (__builtin_expect(!traced(), 1))
		return REAL(epoll_wait)(ep, ev, max, timeout);
	return jitt_wait_epoll_wait(ep, ev, max, timeout);
}

WRAP_SLOW static int jitt_wait_epoll_pwait(int ep, struct epoll_event *ev, int max, int timeout,
			    const sigset_t *mask)
{
	bool began = timeout != 0 && wait_begin(AGENT_KEY_FD(ep));
	int r = REAL(epoll_pwait)(ep, ev, max, timeout, mask);
	wait_end(began, AGENT_KEY_FD(ep));
	return r;
}

WRAP int __wrap_epoll_pwait(int ep, struct epoll_event *ev, int max, int timeout,
			    const sigset_t *mask)
{
	if (__builtin_expect(!traced(), 1))
		return REAL(epoll_pwait)(ep, ev, max, timeout, mask);
	return jitt_wait_epoll_pwait(ep, ev, max, timeout, mask);
}

/* ---- reads and writes: a pipe, socket or slow device blocks here ---- */

WRAP_SLOW static ssize_t jitt_wait_read(int fd, void *buf, size_t n)
{
	bool began = wait_begin(AGENT_KEY_FD(fd));
	ssize_t r = REAL(read)(fd, buf, n);
	wait_end(began, AGENT_KEY_FD(fd));
	return r;
}

WRAP ssize_t __wrap_read(int fd, void *buf, size_t n)
{
	if (__builtin_expect(!traced(), 1))
		return REAL(read)(fd, buf, n);
	return jitt_wait_read(fd, buf, n);
}

WRAP_SLOW static ssize_t jitt_wait_write(int fd, const void *buf, size_t n)
{
	bool began = wait_begin(AGENT_KEY_FD(fd));
	ssize_t r = REAL(write)(fd, buf, n);
	wait_end(began, AGENT_KEY_FD(fd));
	return r;
}

WRAP ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
	if (__builtin_expect(!traced(), 1))
		return REAL(write)(fd, buf, n);
	return jitt_wait_write(fd, buf, n);
}

#ifdef __GLIBC__
#define BOUND(name) { #name, (void *)__wrap_##name, (void **)&jitt_real_##name },
static const struct agent_bound bound[] = { WRAPPED(BOUND) };

/* Once, as the first thread is traced (jitt_trace_thread); later calls return at once. */
RT void agent_wrappers_bind(void)
{
	static atomic_int state; /* 0 not yet, 1 binding, 2 done */
	int expected = 0;
	if (atomic_load_explicit(&state, memory_order_acquire) == 2)
		return;
	if (!atomic_compare_exchange_strong(&state, &expected, 1)) {
		while (atomic_load_explicit(&state, memory_order_acquire) != 2)
			sched_yield(); /* another thread binds: a few microseconds */
		return;
	}
	reals_find();
	size_t n = agent_got_bind(bound, sizeof(bound) / sizeof(bound[0]));
	if (n)
		log_dbg("jitt: wrappers: %zu of the program's slots bound to them", n);
	else
		log_info("jitt: wrappers: none bound (the program calls none of them through a "
			 "GOT: linked statically?): its threads' waits are not recorded");
	atomic_store_explicit(&state, 2, memory_order_release);
}
#endif
