/* SPDX-License-Identifier: MIT */
/*
 * jittd [-f] [-c CONFIG] [--syslog]: summarises the traces instrumented programs persist
 * into <data_dir>/spool (agent/daemon/worker.c), answers on <run_dir>/jittd.sock
 * (agent/daemon/control.c), and otherwise sleeps. Two threads, both on the LITTLE cores at
 * the lowest priority (Hubble section 4.3: the recorder never competes with the app): the
 * main one waits in one ppoll() over the spool's inotify fd, the control socket and the
 * stop signals; the worker summarises, one trace at a time, and waits for work or for the
 * retry time of a failed write. A trace that takes long to summarise (a large or crafted
 * one) so never leaves the socket unanswered: `jitt status` answers meanwhile. A third,
 * the uploader's (uploader/uploader.h), sends reports when consent, the network and the
 * budget allow; the main thread also watches the consent file.
 */
#define _GNU_SOURCE
#include "agent/daemon/jittd.h"
#include "agent/log.h"
#include "agent/spool.h"
#include "hal/cpu.h"
#include "hal/fs.h"
#include "uploader/uploader.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* After a failed write (a full disk), wait 1 s, then twice as long each time, up to a
 * minute: quick to recover when space is freed, quiet in the log when it is not. */
#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS	 60000
/* The control socket's server (agent/ctl.h): never waits, so a flood of silent clients
 * delays neither `jitt status` nor a summary (a silent client). */
static struct agent_ctl_server ctl;
/* How long a jittd started while another is still exiting waits for it (take_lock): a
 * killed jittd took up to 1.4 s to exit beside 4 CPU hogs on 2 cores, 2 to 5 s in a stress
 * run of 50 traced apps; an init that restarts on failure tries again after that. */
#define RESTART_WAIT_MS 30000
#define JITTD_WORKER_STACK (1u << 20) /* the worker thread's stack: see its pthread_create */

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

static int usage(FILE *out)
{
	fprintf(out,
		"usage: jittd [-f] [-c CONFIG] [--syslog] [--wait MS] [--root DIR]\n"
		"  -f          stay in the foreground and log to stderr\n"
		"  -c CONFIG   settings file (default $JITT_CONFIG, else %s)\n"
		"  --syslog    log to syslog even in the foreground\n"
		"  --wait MS   at start, wait up to MS for a jittd that is still exiting\n"
		"              (killed, restarted at once) to be gone (default %d; 0: not)\n"
		"  --root DIR  the HAL's /sys, /proc and /run under DIR (network state, CPUs):\n"
		"              for tests and demos on a fake tree\n",
		CONFIG_AGENT_CONFIG_FILE, RESTART_WAIT_MS);
	return out == stderr ? 2 : 0;
}

/* "0" to "3600000", digits only: *ms. */
static bool parse_ms(const char *s, int *ms)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (s[0] < '0' || s[0] > '9' || *end || errno || v > 3600000)
		return false;
	*ms = (int)v;
	return true;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void jittd_retry_now(struct jittd *d)
{
	pthread_mutex_lock(&d->lock);
	d->scan = true;
	d->retry_at_ms = 0;
	d->backoff_ms = BACKOFF_FIRST_MS;
	pthread_cond_signal(&d->wake);
	pthread_mutex_unlock(&d->lock);
}

const char *jittd_worker_state(struct jittd *d)
{
	pthread_mutex_lock(&d->lock);
	const char *state = d->busy || (d->scan && !d->retry_at_ms) ? "busy"
			    : d->scan				    ? "waiting"
								    : "idle";
	pthread_mutex_unlock(&d->lock);
	return state;
}

int jittd_last_error(struct jittd *d)
{
	pthread_mutex_lock(&d->lock);
	int e = d->last_error;
	pthread_mutex_unlock(&d->lock);
	return e;
}

/* Lowest priority: SCHED_IDLE runs only when nothing else wants the CPU. musl's
 * sched_setscheduler() is a stub (it is per thread on Linux), hence the system call, made
 * before the worker thread is created: a new thread inherits its creator's policy, nice
 * value and CPU affinity, so both threads get them. Where SCHED_IDLE is refused, nice 19. */
static void lower_priority(void)
{
	struct sched_param p = { .sched_priority = 0 };
	if (syscall(SYS_sched_setscheduler, 0, SCHED_IDLE, &p) == 0) {
		log_info("scheduling: SCHED_IDLE");
		return;
	}
	int e = errno;
	if (setpriority(PRIO_PROCESS, 0, 19) == 0)
		log_info("scheduling: SCHED_IDLE refused (%s), nice 19 instead", strerror(e));
	else
		log_warn("scheduling: neither SCHED_IDLE (%s) nor nice 19 (%s): normal priority",
			 strerror(e), strerror(errno));
}

/* Every thread of jittd on the LITTLE CPUs, again whenever they come back after hotplug
 * (hal/cpu.h): a jittd started while none was online used to stay on the big ones. */
static struct hal_pin_keeper pin;

static void keep_pinned(void)
{
	hal_pin_keep(&pin, now_ms());
	if (!pin.changed)
		return;
	if (pin.err)
		log_warn("cannot pin to the %s CPUs: %s%s", hal_cpu_class_name(HAL_CPU_LITTLE),
			 strerror(-pin.err),
			 hal_pin_keeper_deadline(&pin) != INT64_MAX
				 ? " (none online now: trying again as CPUs come online)"
				 : "");
	else
		log_info("pinned to the %s CPUs %s", hal_cpu_class_name(HAL_CPU_LITTLE),
			 pin.cpus);
}

/* The usual double fork: no controlling terminal, not a process group leader. */
static int daemonize(void)
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0)
		_exit(0);
	if (setsid() < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0)
		_exit(0);
	if (chdir("/") != 0)
		return -errno;
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
	return 0;
}

static int make_run_dir(const char *dir)
{
	if (mkdir(dir, 0755) == 0)
		return chmod(dir, 0755) == 0 ? 0 : -errno; /* under our umask 077 */
	struct stat st;
	if (errno == EEXIST && stat(dir, &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	return -errno;
}

/* Our pid into the lock file: only for the next jittd's message. */
static void write_pid(int fd)
{
	char pid[16];
	int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	(void)!ftruncate(fd, 0);
	(void)!pwrite(fd, pid, (size_t)n, 0);
}

/*
 * One jittd per run folder, by an flock on <run_dir>/jittd.lock, held until the process is
 * gone: the kernel releases it only when the last descriptor of the open file closes, that
 * is when a jittd killed with -9 has closed all its files, its listening socket with them.
 * A killed jittd is not gone at once: each of its threads must still run to exit, and at
 * SCHED_IDLE on busy CPUs they wait for them (4 CPU hogs on 2 cores: 0.1 to 1.4 s from
 * kill -9 until its socket refused connections; meanwhile it accepts them into its backlog
 * and never answers, and a jittd started then exited 1, "another jittd is listening
 * there"). So a jittd started while another holds the lock waits for it, polling, up to
 * wait_ms; then, holding the lock, it knows any socket file there is a dead one's and
 * replaces it without asking (agent_ctl_listen_owned).
 *
 * The run folder is writable by every traced app (1733), so a jittd.lock that is not a
 * plain file of ours was planted: it is removed (we own the folder) and made again.
 * Returns the locked descriptor (the pid inside), or -1 with the reason said on stderr.
 */
static int take_lock(const char *run_dir, int wait_ms)
{
	char path[AGENT_PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/jittd.lock", run_dir);
	int fd = -1;
	for (int tries = 0; fd < 0 && tries < 3; tries++) {
		fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_uid == geteuid() && st.st_nlink == 1)
			break;
		/* A symlink (ELOOP), another user's file (EACCES under protected_regular, or
		 * not ours), a FIFO: not ours to use. */
		if (fd >= 0 || errno == ELOOP || errno == EACCES || errno == EPERM ||
		    errno == ENXIO) {
			if (fd >= 0)
				close(fd);
			fd = -1;
			if (unlink(path) == 0 || errno == ENOENT)
				continue;
		}
		fprintf(stderr, "jittd: cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fd < 0) {
		fprintf(stderr, "jittd: %s: not a file of ours, and made again each time\n", path);
		return -1;
	}
	int64_t until = now_ms() + wait_ms;
	bool said = false;
	while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			fprintf(stderr, "jittd: cannot lock %s: %s\n", path, strerror(errno));
			close(fd);
			return -1;
		}
		char pid[16] = "";
		ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? strcspn(pid, "\n") : 0] = 0;
		if (now_ms() >= until) {
			fprintf(stderr, "jittd: another jittd (pid %s) is running: it holds %s%s\n",
				pid[0] ? pid : "?", path, wait_ms ? " still" : "");
			close(fd);
			return -1;
		}
		if (!said)
			fprintf(stderr, "jittd: waiting up to %d ms for jittd %s to exit (it holds %s)\n",
				wait_ms, pid[0] ? pid : "?", path);
		said = true;
		struct timespec nap = { 0, 20 * 1000000 };
		nanosleep(&nap, NULL);
	}
	write_pid(fd);
	if (said)
		fprintf(stderr, "jittd: the earlier jittd is gone: taking over\n");
	return fd;
}

/* One step of the control server after a poll: p and n as agent_ctl_server_pollfds filled
 * them. Never waits. */
static void serve_step(const struct pollfd *p, int n)
{
	int e = agent_ctl_server_step(&ctl, p, n, agent_ctl_now_ms());
	if (e < 0)
		log_warn("control socket: %s", strerror(-e));
}

/* A trace arrived (renamed in, or written in place and closed)? Writers' temporaries
 * (".tmp-...") and other files are not work. An overflowed queue may have lost one.
 * *consent: something happened to the consent file (watch consent_wd, name). */
static bool drain_inotify(int fd, int consent_wd, const char *consent_name, bool *consent)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool work = false;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			return work;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			size_t len = ev->len ? strlen(ev->name) : 0;
			if (ev->mask & IN_Q_OVERFLOW)
				work = *consent = true;
			else if (ev->wd == consent_wd && len && !strcmp(ev->name, consent_name))
				*consent = true;
			else if (len > 4 && ev->name[0] != '.' &&
				 !strcmp(ev->name + len - 4, ".jtr"))
				work = true;
			p += sizeof(*ev) + ev->len;
		}
	}
}

/* Work through the spool, oldest first, until it is empty, a write fails, or jittd stops.
 * The worker's thread. */
static int run_pass(struct jittd *d)
{
	/* Gone writers' temporaries and the caps first: a crash loop of an app must not fill
	 * the disk with what it never finished writing. */
	jittd_worker_trim(&d->w);
	/* And the control sockets of traced apps killed with -9 (every user's, as root). */
	int stale = agent_ctl_remove_stale(d->c.run_dir);
	if (stale > 0)
		log_info("removed %d stale control socket(s) from %s", stale, d->c.run_dir);
	struct agent_spool_file *files;
	size_t n;
	int e = agent_spool_list_at(&d->dirs, "spool", &files, &n);
	if (e) {
		log_err("cannot read %s/spool: %s", d->c.data_dir, strerror(-e));
		return e;
	}
	for (size_t i = 0; i < n && !atomic_load(&d->stopping); i++) {
		e = jittd_worker_process(&d->w, files[i].name);
		if (e)
			break;
	}
	free(files);
	return e;
}

static void wait_until(pthread_cond_t *cv, pthread_mutex_t *m, int64_t at_ms)
{
	struct timespec ts = { at_ms / 1000, (long)(at_ms % 1000) * 1000000 };
	pthread_cond_timedwait(cv, m, &ts);
}

/* The worker's thread: a pass whenever there may be work, the back-off after a failure. */
static void *work(void *arg)
{
	struct jittd *d = arg;
	pthread_mutex_lock(&d->lock);
	for (;;) {
		while (!atomic_load(&d->stopping) &&
		       !(d->scan && (!d->retry_at_ms || now_ms() >= d->retry_at_ms))) {
			if (d->scan && d->retry_at_ms)
				wait_until(&d->wake, &d->lock, d->retry_at_ms);
			else
				pthread_cond_wait(&d->wake, &d->lock);
		}
		if (atomic_load(&d->stopping))
			break;
		d->scan = false;
		d->busy = true;
		pthread_mutex_unlock(&d->lock);
		int e = run_pass(d);
		pthread_mutex_lock(&d->lock);
		d->busy = false;
		if (!e) {
			d->retry_at_ms = 0;
			d->backoff_ms = BACKOFF_FIRST_MS;
			d->last_error = 0;
			continue;
		}
		d->last_error = e;
		d->scan = true;
		d->retry_at_ms = now_ms() + d->backoff_ms;
		log_warn("next try in %u ms", d->backoff_ms);
		d->backoff_ms =
			d->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : d->backoff_ms * 2;
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

void jittd_apply_consent(struct jittd *d, bool granted, const char *why)
{
	bool was = d->granted;
	d->granted = granted;
	if (d->up && up_set_consent(d->up, granted) != 0)
		d->granted = false; /* no secret could be made: logged by the uploader */
	if (granted) {
		log_info("consent granted (%s)", why);
		return;
	}
	/* Raw traces and summaries go too, not only what was queued (Hubble section 9: the
	 * user's word ends the recording of their data, not just its sending). */
	int n = jittd_worker_forget(&d->w);
	log_info("consent revoked (%s): %d trace(s) and summaries deleted%s", why, n,
		 was ? "" : " (it was not granted)");
}

/* The uploader, when this build has one, with the consent read now. can_watch: the consent
 * file's folder is watched (else consent stays revoked: a change would go unseen). */
static void start_uploader(struct jittd *d, bool can_watch)
{
	char why[AGENT_PATH_MAX + 64] = "";
	bool granted = can_watch && jittd_consent_read(&d->consent, why, sizeof(why));
	/* A secret left means consent was granted when the last run ended: a revoke while
	 * jittd was not running is carried out now, raw traces and summaries included. */
	bool had_secret = faccessat(d->dirs.uploads, "secret", F_OK, AT_SYMLINK_NOFOLLOW) == 0;
#ifdef CONFIG_UPLOADER
	const struct agent_upload_config *c = &d->c.up;
	struct up_settings s = {
		.url = c->url, .ca_file = c->ca_file, .pin_hex = c->pin,
		.thread_names = c->thread_names, .reasons = c->reasons, .campaign = c->campaign,
		.pick = !strcmp(c->pick, "severe")     ? UP_PICK_SEVERE
			: !strcmp(c->pick, "campaign") ? UP_PICK_CAMPAIGN
						       : UP_PICK_FIRST,
		.budget = c->budget, .budget_days = c->budget_days,
		.rotation_days = c->rotation_days, .max_attempts = c->max_attempts,
		.timeout_ms = c->timeout_ms, .poll_s = c->poll_s, .backoff_ms = c->backoff_ms,
		.allow_ethernet = c->allow_ethernet, .log = agent_log,
	};
	char err[256] = "";
	int e = up_start(&d->up, &s, d->dirs.uploads, granted, err, sizeof(err));
	if (e) {
		log_err("no uploads: %s", err[0] ? err : strerror(-e));
		d->up = NULL;
	}
	d->w.up = d->up;
#endif
	d->granted = granted && d->up;
	log_info("consent %s%s%s", d->granted ? "granted" : "revoked", d->granted ? "" : ": ",
		 d->granted ? "" : why);
	if (!d->granted && had_secret)
		jittd_apply_consent(d, false, "revoked while jittd was not running");
}

int main(int argc, char **argv)
{
	bool foreground = false, use_syslog = false;
	const char *config = NULL;
	int wait_ms = RESTART_WAIT_MS;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-f"))
			foreground = true;
		else if (!strcmp(argv[i], "--syslog"))
			use_syslog = true;
		else if (!strcmp(argv[i], "-c") && i + 1 < argc)
			config = argv[++i];
		else if (!strcmp(argv[i], "--wait") && i + 1 < argc &&
			 parse_ms(argv[i + 1], &wait_ms))
			i++;
		else if (!strcmp(argv[i], "--root") && i + 1 < argc && argv[i + 1][0] == '/' &&
			 hal_root_set(argv[i + 1]) == 0)
			i++;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return usage(stdout);
		else
			return usage(stderr);
	}
	if (!foreground)
		use_syslog = true;
	umask(077); /* summaries and kept traces are 0600, folders 0700 */

	static struct jittd d;
	char err[512] = "", sock[AGENT_PATH_MAX];
	int e = agent_config_load(&d.c, config, err, sizeof(err));
	if (e) {
		fprintf(stderr, "jittd: %s\n", err);
		return 1;
	}
	/* Until the daemon is detached, trouble goes to the terminal that started it. */
	agent_log_open("jittd", 0, d.c.log_level);
	/* The data folder and every folder above it checked, its sub-folders opened once:
	 * another user's symlink or writable folder there is refused, not followed. */
	if ((e = agent_spool_prepare(&d.c, &d.dirs, err, sizeof(err))) != 0) {
		fprintf(stderr, "jittd: refusing data_dir %s: %s\n", d.c.data_dir,
			err[0] ? err : strerror(-e));
		return 1;
	}
	char spool[AGENT_PATH_MAX + 8];
	if ((e = jittd_worker_init(&d.w, &d.c, &d.dirs)) != 0 ||
	    (e = agent_config_path(&d.c, "spool", spool, sizeof(spool))) != 0 ||
	    (e = agent_config_socket(&d.c, 0, sock, sizeof(sock))) != 0) {
		fprintf(stderr, "jittd: %s: %s\n", d.c.data_dir, strerror(-e));
		return 1;
	}
	if ((e = make_run_dir(d.c.run_dir)) != 0) {
		fprintf(stderr, "jittd: cannot create %s: %s\n", d.c.run_dir, strerror(-e));
		return 1;
	}
	int lock_fd = take_lock(d.c.run_dir, wait_ms);
	if (lock_fd < 0)
		return 1;
	int listen_fd = agent_ctl_listen_owned(sock);
	if (listen_fd < 0) {
		fprintf(stderr, "jittd: %s: %s\n", sock, strerror(-listen_fd));
		return 1;
	}
	if ((e = jittd_consent_init(&d.consent, &d.c)) != 0) {
		fprintf(stderr, "jittd: consent_file: %s\n", strerror(-e));
		return 1;
	}
	int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	/* By name, but the folders on the way were just checked: only root or jittd may
	 * change them. IN_DONT_FOLLOW | IN_ONLYDIR all the same. */
	if (ifd < 0 ||
	    inotify_add_watch(ifd, spool,
			      IN_MOVED_TO | IN_CLOSE_WRITE | IN_DONT_FOLLOW | IN_ONLYDIR) < 0) {
		fprintf(stderr, "jittd: cannot watch %s: %s\n", spool, strerror(errno));
		unlink(sock);
		return 1;
	}
	/* The consent file's folder: an OEM's settings app writes it (rename or in place), or
	 * removes it. Without the folder there is nothing to watch, and consent stays off. */
	int consent_wd = inotify_add_watch(ifd, d.consent.dir,
					   IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE |
						   IN_ATTRIB | IN_DONT_FOLLOW | IN_ONLYDIR);
	if (consent_wd < 0)
		fprintf(stderr, "jittd: cannot watch %s (%s): consent stays revoked\n",
			d.consent.dir, strerror(errno));
	if (!foreground && (e = daemonize()) != 0) {
		fprintf(stderr, "jittd: cannot detach: %s\n", strerror(-e));
		unlink(sock);
		return 1;
	}
	if (!foreground)
		write_pid(lock_fd); /* the detached process's */
	agent_log_open("jittd", use_syslog, d.c.log_level);

	struct sigaction sa = { .sa_handler = on_stop }; /* no SA_RESTART: poll() returns */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* SIGTERM and SIGINT are taken only inside ppoll(): one arriving between the loop's
	 * check and the wait cannot be lost, and a trace being summarised is finished first. */
	sigset_t stops, waiting;
	sigemptyset(&stops);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGINT);
	sigprocmask(SIG_BLOCK, &stops, &waiting);
	sigdelset(&waiting, SIGTERM);
	sigdelset(&waiting, SIGINT);

	log_info("jittd %d starting: data %s, socket %s, keep_traces %d, max_traces %u, "
		 "max_trace_mb %u",
		 (int)getpid(), d.c.data_dir, sock, d.c.keep_traces, d.c.max_traces,
		 d.c.max_trace_mb);
	hal_pin_keeper_init(&pin, HAL_CPU_LITTLE, true);
	keep_pinned();
	lower_priority();
	agent_ctl_server_init(&ctl, listen_fd, jittd_control, &d);
	d.ctl = &ctl;
	jittd_worker_recover(&d.w);
	start_uploader(&d, consent_wd >= 0);

	/* The worker's clock is CLOCK_MONOTONIC, as now_ms(). */
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&d.lock, NULL);
	pthread_cond_init(&d.wake, &ca);
	pthread_condattr_destroy(&ca);
	d.scan = true; /* work left by an earlier run */
	d.backoff_ms = BACKOFF_FIRST_MS;
	pthread_t worker;
	/* Created with SIGTERM and SIGINT blocked (above), so only the main thread takes them.
	 * Its stack is set, not the C library's default: musl gives a thread 128 KiB, and a
	 * summary whose module is looked for in the debug folders (three PATH_MAX buffers
	 * deep in the JSON writer's naming) needed all of it on aarch64; a few hundred bytes
	 * more in the summary overflowed it. 1 MiB is address space, touched only as used. */
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, JITTD_WORKER_STACK);
	e = pthread_create(&worker, &attr, work, &d);
	pthread_attr_destroy(&attr);
	if (e != 0) {
		log_err("cannot start the worker thread: %s", strerror(e));
		unlink(sock);
		return 1;
	}
	pthread_setname_np(worker, "jittd-worker");

	while (!stop_signal) {
		struct timespec ts, *timeout = NULL;
		int64_t due = agent_ctl_server_deadline(&ctl);
		if (hal_pin_keeper_deadline(&pin) < due)
			due = hal_pin_keeper_deadline(&pin);
		if (due != INT64_MAX) {
			int64_t left = due - now_ms();
			left = left < 0 ? 0 : left;
			ts = (struct timespec){ left / 1000, (long)(left % 1000) * 1000000 };
			timeout = &ts;
		}
		struct pollfd p[1 + AGENT_CTL_POLLFDS] = { { .fd = ifd, .events = POLLIN } };
		int n = 1 + agent_ctl_server_pollfds(&ctl, p + 1, AGENT_CTL_POLLFDS);
		int r = ppoll(p, (nfds_t)n, timeout, &waiting);
		if (r < 0 && errno != EINTR) {
			log_err("poll: %s", strerror(errno));
			break;
		}
		bool consent_event = false;
		if (r > 0 && (p[0].revents & POLLIN) &&
		    drain_inotify(ifd, consent_wd, d.consent.name, &consent_event)) {
			/* During a back-off the worker still waits for its retry time. */
			pthread_mutex_lock(&d.lock);
			d.scan = true;
			pthread_cond_signal(&d.wake);
			pthread_mutex_unlock(&d.lock);
		}
		if (consent_event && consent_wd >= 0) {
			char why[AGENT_PATH_MAX + 64] = "";
			bool now = jittd_consent_read(&d.consent, why, sizeof(why));
			if (now != d.granted)
				jittd_apply_consent(&d, now, now ? "the consent file says granted" : why);
		}
		if (r >= 0)
			serve_step(p + 1, n - 1);
		keep_pinned(); /* a small file read, at most every HAL_PIN_RECHECK_MS */
	}
	/* The trace being summarised is finished first (the worker looks at `stopping`
	 * between traces). */
	pthread_mutex_lock(&d.lock);
	atomic_store(&d.stopping, true);
	pthread_cond_signal(&d.wake);
	pthread_mutex_unlock(&d.lock);
	pthread_join(worker, NULL);
	up_stop(d.up); /* an upload in flight is abandoned: its report stays queued */
	struct jittd_stats st;
	jittd_worker_stats(&d.w, &st);
	log_info("jittd stopping (%s): %llu summarised, %llu quarantined",
		 stop_signal ? strsignal(stop_signal) : "error", (unsigned long long)st.summarised,
		 (unsigned long long)st.quarantined);
	unlink(sock);
	agent_ctl_server_close(&ctl);
	close(listen_fd);
	close(ifd);
	agent_spool_close(&d.dirs);
	close(lock_fd); /* last: the next jittd may take over */
	return stop_signal ? 0 : 1;
}
