/* SPDX-License-Identifier: MIT */
/*
 * The preempted scenario's hogs: other processes that keep the UI thread's CPU busy, so its
 * frames run their normal code and still take several times the budget (the thread is
 * runnable, not running: preemption, not a culprit function).
 *
 * The UI thread pins itself to one CPU and spawns SIM_HOGS copies of this program in hog mode
 * (`jank-sim --hog CPU PARENT_PID READY_FD`, with JITT_DISABLE=1 so no runtime starts in
 * them); each pins itself to the same CPU, says it is ready, and spins. They are processes,
 * not threads, so nothing of theirs is in the app's trace. A hog never outlives the app: the
 * app kills and reaps them after the jank frames, at exit and after SIGINT or SIGTERM; the
 * kernel kills a hog whose parent died (PR_SET_PDEATHSIG), and a hog that finds its parent
 * gone (the race before the prctl) exits by itself.
 *
 * Hogs at the UI thread's own priority do not make every frame slow. Measured on a busy
 * two-core host (Linux 6.18, EEVDF, HZ 250), 8 to 12 spinning hogs at nice 0: a frame that
 * woke from its vsync sleep often ran its 3 ms to the end before the next tick took the CPU
 * away (frames of 3, 44, 3 ms), and only 1 run in 8 had three slow frames in a row for the
 * jank detector; shorter hog slices (sched_setattr), hogs that sleep now and then, nice -10
 * hogs: still 1 run in 5 with a fast frame among the three. So the hogs run SCHED_FIFO at
 * priority 1, where the kernel allows it (root, CAP_SYS_NICE): they hold the CPU but for a
 * gap of HOG_GAP_NS in every HOG_PERIOD_NS, in which the UI thread runs (a tenth of the CPU:
 * the 3 ms frame takes 30 ms and more; measured 36 to 92 ms on that host busy with other
 * builds, load 4 to 10, now and then 240; some 30 runs, every one a jank). With FIFO one hog
 * would do; the others wait behind it and sleep in the same gap. Where FIFO is refused they
 * spin at nice 0, and the scenario says so (sched=normal in its line): the frames are slow,
 * but maybe not three in a row.
 *
 * None of this is the app's code: it is not instrumented (sim/Kbuild).
 */
#define _GNU_SOURCE
#include "sim/sim.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Enough to take about 8/9 of the CPU at nice 0 when FIFO is refused. */
#define SIM_HOGS 8
/* The FIFO hogs' duty cycle: the UI thread gets 0.4 ms of every 4 (one tick at HZ 250). */
#define HOG_PERIOD_NS 4000000u
#define HOG_GAP_NS 400000u
/* How long the app waits for the hogs to say they spin; only turns a hang into a message. */
#define READY_MS 5000

static pid_t hogs[SIM_HOGS];
static unsigned n_hogs;
static cpu_set_t ui_affinity; /* the UI thread's, before the pinning */
static bool ui_pinned;
static volatile uint32_t hog_sink;

/* ---- the hog process ---- */

static SIM_UNTRACED uint64_t hog_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* SCHED_FIFO: spin to the next gap, sleep through it; every hog sleeps in the same gap. */
static SIM_UNTRACED uint32_t hog_duty(pid_t parent, uint32_t x)
{
	while (getppid() == parent) {
		uint64_t now = hog_now(), gap_end = (now / HOG_PERIOD_NS + 1) * HOG_PERIOD_NS;
		while (now < gap_end - HOG_GAP_NS) {
			x = sim_mix(x, 1000);
			now = hog_now();
		}
		struct timespec t = { (time_t)(gap_end / 1000000000u),
				      (long)(gap_end % 1000000000u) };
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
	}
	return x;
}

SIM_UNTRACED int sim_hog_main(int argc, char **argv)
{
	if (argc != 5)
		return 2;
	int cpu = atoi(argv[2]), ready = atoi(argv[4]);
	pid_t parent = (pid_t)atoi(argv[3]);
	/* The kernel kills us when the app dies; if it died before this line, we see it here. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		return 0;
	/* Nothing of the app's stays open here (its pipes' ends would keep its readers from
	 * seeing the end), but the line back to it. */
	for (int fd = 3; fd < 1024; fd++)
		if (fd != ready)
			close(fd);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return 1;
	/* musl leaves sched_setscheduler unimplemented (ENOSYS): the system call itself. */
	struct sched_param sp = { .sched_priority = 1 };
	bool fifo = syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &sp) == 0;
	char c = fifo ? 'f' : 'n';
	if (write(ready, &c, 1) != 1)
		return 1;
	close(ready);
	uint32_t x = (uint32_t)getpid();
	if (fifo)
		x = hog_duty(parent, x);
	/* At nice 0: about a millisecond of work between checks that the app still lives. */
	while (getppid() == parent)
		x = sim_mix(x, 1u << 20);
	hog_sink = x;
	return 0;
}

/* ---- the app's side ---- */

SIM_UNTRACED unsigned sim_hog_count(void)
{
	return SIM_HOGS;
}

/* Whether every hog runs SCHED_FIFO (each said so when ready: 'f', or 'n' at nice 0). */
static bool hogs_fifo;

SIM_UNTRACED bool sim_hogs_fifo(void)
{
	return hogs_fifo;
}

/* The UI thread's CPU: the one it runs on if it may run there, else its first allowed one. */
static SIM_UNTRACED int ui_cpu(const cpu_set_t *allowed)
{
	int cpu = sched_getcpu();
	if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, allowed))
		return cpu;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, allowed))
			return cpu;
	return -1;
}

/* This program's environment with JITT_DISABLE=1 instead of any JITT_DISABLE it had. */
static SIM_UNTRACED char **hog_environment(void)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 2, sizeof(*env));
	if (!env)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "JITT_DISABLE=", 13) != 0)
			env[k++] = environ[i];
	env[k++] = "JITT_DISABLE=1";
	env[k] = NULL;
	return env;
}

SIM_UNTRACED int sim_hogs_start(int *cpu_out)
{
	if (n_hogs)
		return -EALREADY;
	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return -errno;
	int cpu = ui_cpu(&allowed);
	if (cpu < 0)
		return -ENODEV;
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		return -errno;
	ui_affinity = allowed, ui_pinned = true;
	*cpu_out = cpu;

	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int ready[2], err = len < 0 ? -errno : len == 0 ? -ENOENT : 0;
	char **env = err ? NULL : hog_environment();
	if (!err && !env)
		err = -ENOMEM;
	if (!err && pipe(ready))
		err = -errno;
	if (err) {
		free(env);
		sim_hogs_stop();
		return err;
	}
	exe[len] = 0;
	/* The read end stays here; the write end goes to every hog, by number. */
	fcntl(ready[0], F_SETFD, FD_CLOEXEC);
	char cpu_s[16], parent_s[16], fd_s[16];
	snprintf(cpu_s, sizeof(cpu_s), "%d", cpu);
	snprintf(parent_s, sizeof(parent_s), "%d", (int)getpid());
	snprintf(fd_s, sizeof(fd_s), "%d", ready[1]);
	char *argv[] = { "jank-sim", "--hog", cpu_s, parent_s, fd_s, NULL };
	for (unsigned i = 0; i < SIM_HOGS && !err; i++) {
		pid_t pid;
		err = -posix_spawn(&pid, exe, NULL, NULL, argv, env);
		if (!err)
			hogs[n_hogs++] = pid;
	}
	close(ready[1]);
	free(env);
	/* Every hog pinned and spinning before the frame starts. */
	unsigned fifo = 0;
	for (unsigned got = 0; !err && got < n_hogs;) {
		struct pollfd p = { ready[0], POLLIN, 0 };
		char buf[SIM_HOGS];
		int r = poll(&p, 1, READY_MS);
		ssize_t n = r > 0 ? read(ready[0], buf, sizeof(buf)) : 0;
		if (r < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			err = r == 0 ? -ETIMEDOUT : -EPIPE;
		for (ssize_t i = 0; i < n; i++)
			fifo += buf[i] == 'f';
		got += n > 0 ? (unsigned)n : 0;
	}
	hogs_fifo = fifo == n_hogs;
	close(ready[0]);
	if (err)
		sim_hogs_stop();
	return err;
}

/* Idempotent: after the jank frames, at exit, after a signal ended the loop. */
SIM_UNTRACED void sim_hogs_stop(void)
{
	for (unsigned i = 0; i < n_hogs; i++)
		kill(hogs[i], SIGKILL);
	for (unsigned i = 0; i < n_hogs; i++)
		while (waitpid(hogs[i], NULL, 0) < 0 && errno == EINTR)
			;
	n_hogs = 0;
	if (ui_pinned)
		sched_setaffinity(0, sizeof(ui_affinity), &ui_affinity);
	ui_pinned = false;
}
