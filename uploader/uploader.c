/* SPDX-License-Identifier: MIT */
/* The uploader's thread and policy (uploader/uploader.h, docs/uploader.md). */
#define _GNU_SOURCE /* pthread_setname_np */
#include "uploader/uploader.h"
#include "hal/fs.h"
#include "hal/net.h"
#include "uploader/identity.h"
#include "uploader/json.h"
#include "uploader/queue.h"
#include "uploader/random.h"
#include "uploader/report.h"
#include "uploader/state.h"
#include "uploader/transport.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BUDGET_FILE	 "budget"
#define BACKOFF_MAX_MS	 (3600 * 1000LL)	/* one hour between tries at most */
#define RETRY_AFTER_MAX_S (24 * 3600L)		/* a server's Retry-After, believed up to a day */
#define NET_RECHECK_MS	 500			/* during an upload */
#define LOG_ERR		 0
#define LOG_WARN	 1
#define LOG_INFO	 2
#define LOG_DEBUG	 3

struct up_uploader {
	/* Settings, copied. */
	char url_text[256], ca_file[256], thread_names[128], reasons[128], campaign[256];
	struct up_url url;
	unsigned char pin[32];
	bool have_pin;
	struct up_settings s;
	int dirfd;

	pthread_t thread;
	pthread_mutex_t lock; /* everything below but the atomics */
	pthread_cond_t wake;
	bool kicked;
	unsigned char secret[UP_SECRET_LEN];
	struct up_budget budget;
	struct up_stats st;
	/* The back-off of each report tried, by key: in memory only (after a restart every
	 * report is tried at once, which the attempt count in its name bounds). */
	struct later {
		char key[37]; /* "" for a free slot */
		int64_t due_ms;
	} later[UP_QUEUE_MAX];

	atomic_bool granted;
	atomic_bool stopping;
	atomic_uint revokes; /* a pass started before the last revoke must not send */
	/* The thread's own, for keep_going. */
	unsigned pass_revokes;
	int64_t net_checked_ms;
};

/* ---- small things ---- */

static int64_t mono_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int64_t wall_s(void)
{
	return (int64_t)time(NULL);
}

__attribute__((format(printf, 3, 4))) static void say(struct up_uploader *u, int level,
						       const char *fmt, ...)
{
	if (!u->s.log)
		return;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	u->s.log(level, "upload: %s", line);
}

static bool network_allowed(const struct up_uploader *u, enum hal_net_state st)
{
	return st == HAL_NET_WIFI || (st == HAL_NET_ETHERNET && u->s.allow_ethernet);
}

/* A word of a space-separated list? */
static bool listed(const char *list, const char *word, size_t len)
{
	for (const char *p = list; *p;) {
		while (*p == ' ')
			p++;
		size_t n = strcspn(p, " ");
		if (n && n == len && !memcmp(p, word, n))
			return true;
		p += n;
	}
	return false;
}

/* ---- the budget file (uploader/state.h) ---- */

static void budget_load(struct up_uploader *u)
{
	char text[UP_STATE_FILE_MAX + 1], err[128];
	struct stat st;
	int fd = hal_open_file(u->dirfd, BUDGET_FILE, false, &st);
	if (fd == -ENOENT) {
		u->budget.n = 0;
		return;
	}
	ssize_t n = fd >= 0 ? read(fd, text, sizeof(text)) : -1;
	if (fd >= 0)
		close(fd);
	if (n >= 0 && up_budget_parse(text, (size_t)n, &u->budget, err, sizeof(err)) == 0)
		return;
	/* Unreadable: the budget must still hold, so it counts as spent from now on (one period
	 * without uploads, rather than a device that uploads without limit). */
	say(u, LOG_WARN, "%s is not a budget file (%s): counted as spent until one period passes",
	    BUDGET_FILE, n < 0 ? "unreadable" : err);
	u->budget.n = 0;
	for (unsigned i = 0; i < u->s.budget && i < UP_BUDGET_MAX; i++)
		up_budget_add(&u->budget, wall_s());
}

static int budget_save(struct up_uploader *u)
{
	/* Only what still counts: the file stays as small as the budget. */
	up_budget_prune(&u->budget, wall_s(), (int64_t)u->s.budget_days * 86400);
	char text[UP_BUDGET_MAX * 28 + 32];
	int n = up_budget_format(&u->budget, text, sizeof(text));
	if (n < 0)
		return n;
	return hal_file_write_at(u->dirfd, ".tmp-" BUDGET_FILE, BUDGET_FILE, text, (size_t)n);
}

static int64_t period_s(const struct up_uploader *u)
{
	return (int64_t)u->s.budget_days * 86400;
}

/* ---- the back-off table ---- */

/* The back-off entry of key, made when asked for (a full table reuses a slot: more keys
 * than reports only after many drops, and a lost back-off means one try sooner). */
static struct later *later_find(struct up_uploader *u, const char *key, bool make)
{
	struct later *free_slot = NULL;
	for (int i = 0; i < UP_QUEUE_MAX; i++) {
		if (!strcmp(u->later[i].key, key))
			return &u->later[i];
		if (!u->later[i].key[0] && !free_slot)
			free_slot = &u->later[i];
	}
	if (!make)
		return NULL;
	if (!free_slot)
		free_slot = &u->later[mono_ms() % UP_QUEUE_MAX];
	snprintf(free_slot->key, sizeof(free_slot->key), "%s", key);
	free_slot->due_ms = 0;
	return free_slot;
}

static void later_forget(struct up_uploader *u, const char *key)
{
	struct later *l = later_find(u, key, false);
	if (l)
		memset(l, 0, sizeof(*l));
}

/* The delay before try number `attempts` + 1: backoff_ms * 2^(attempts - 1), capped, times
 * a random factor in [0.5, 1.5) so that devices a collector outage hit together do not
 * come back together; never sooner than the server's Retry-After. */
static int64_t backoff_ms(const struct up_uploader *u, unsigned attempts, long retry_after_s)
{
	int64_t d = u->s.backoff_ms;
	for (unsigned i = 1; i < attempts && d < BACKOFF_MAX_MS; i++)
		d *= 2;
	if (d > BACKOFF_MAX_MS)
		d = BACKOFF_MAX_MS;
	uint16_t r = 0;
	up_random(&r, sizeof(r));
	d = d / 2 + (d * r) / 65536;
	if (retry_after_s > 0) {
		long ra = retry_after_s < RETRY_AFTER_MAX_S ? retry_after_s : RETRY_AFTER_MAX_S;
		if (d < ra * 1000LL)
			d = ra * 1000LL;
	}
	return d;
}

/* ---- consent ---- */

/* Under u->lock. */
static void forget_everything(struct up_uploader *u)
{
	int n = up_queue_clear(u->dirfd);
	if (up_secret_destroy(u->dirfd) != 0)
		say(u, LOG_ERR, "cannot remove the install secret");
	memset(u->secret, 0, sizeof(u->secret));
	memset(u->later, 0, sizeof(u->later));
	u->st.queued = 0;
	if (n > 0)
		say(u, LOG_INFO, "consent revoked: %d queued report(s) deleted, secret destroyed", n);
}

int up_set_consent(struct up_uploader *u, bool granted)
{
	int e = 0;
	pthread_mutex_lock(&u->lock);
	if (!granted) {
		/* First the flag (the thread's transport sees it within 100 ms and sends
		 * nothing more), then the files. */
		atomic_fetch_add(&u->revokes, 1);
		atomic_store(&u->granted, false);
		forget_everything(u);
	} else if (!atomic_load(&u->granted)) {
		e = up_secret_load(u->dirfd, u->secret);
		if (e)
			e = up_secret_create(u->dirfd, u->secret);
		if (e)
			say(u, LOG_ERR, "consent granted, but no install secret could be made (%s): "
			    "nothing will be sent", strerror(-e));
		else
			atomic_store(&u->granted, true);
	}
	u->st.granted = atomic_load(&u->granted);
	u->kicked = true;
	pthread_cond_signal(&u->wake);
	pthread_mutex_unlock(&u->lock);
	return e;
}

/* ---- offering a summary ---- */

/* The slow frame's length, else the window's, in microseconds: "most severe". */
static uint64_t severity_us(const char *summary, size_t len)
{
	struct json_doc doc;
	char err[64];
	int64_t ns = 0;
	if (json_parse(&doc, summary, len, err, sizeof(err)) == 0) {
		uint32_t f = json_get(&doc, 0, "frames"), w = json_get(&doc, 0, "window");
		if (json_int(&doc, json_get(&doc, f, "this_ns"), &ns) != 0 || ns <= 0)
			json_int(&doc, json_get(&doc, w, "ns"), &ns);
	}
	json_free(&doc);
	return ns > 0 ? (uint64_t)ns / 1000 : 0;
}

/* Under u->lock: room for one more in the queue, by the policy. true when there is. */
static bool make_room(struct up_uploader *u, uint64_t severity)
{
	struct up_queued q[UP_QUEUE_MAX];
	size_t n;
	if (u->s.budget == 0 || up_queue_list(u->dirfd, q, UP_QUEUE_MAX, &n) != 0)
		return false;
	/* At most one budget's worth waits: a report beyond it could only be sent in a later
	 * period, after newer ones, and would pile up for as long as the device has no Wi-Fi. */
	if (n < u->s.budget)
		return true;
	if (u->s.pick != UP_PICK_SEVERE)
		return false;
	size_t least = 0;
	for (size_t i = 1; i < n; i++)
		if (q[i].severity_us < q[least].severity_us)
			least = i;
	if (q[least].severity_us >= severity)
		return false;
	up_queue_remove(u->dirfd, &q[least]);
	u->st.dropped_budget++;
	say(u, LOG_INFO, "report %s dropped for a more severe one", q[least].key);
	return true;
}

int up_offer(struct up_uploader *u, const char *summary, size_t len)
{
	char build_id[130], name[64], err[160], id[65], key[37];
	char *report = malloc(UP_REPORT_MAX);
	if (!report)
		return -ENOMEM;
	int e = up_report_app(summary, len, build_id, sizeof(build_id), name, sizeof(name));
	pthread_mutex_lock(&u->lock);
	if (!atomic_load(&u->granted)) {
		e = 0; /* summaries stay on the device; nothing is queued */
		goto out;
	}
	u->st.offered++;
	if (e) {
		u->st.dropped_failed++;
		say(u, LOG_WARN, "summary without an app build-id: not queued");
		goto out;
	}
	if (u->s.pick == UP_PICK_CAMPAIGN &&
	    !listed(u->campaign, build_id, strlen(build_id)) && !listed(u->campaign, name, strlen(name))) {
		u->st.dropped_campaign++;
		e = 0;
		goto out;
	}
	uint64_t sev = severity_us(summary, len);
	if (!make_room(u, sev)) {
		u->st.dropped_budget++;
		say(u, LOG_INFO, "report not queued: %u already wait for the budget", u->s.budget);
		e = 0;
		goto out;
	}
	int64_t now = wall_s();
	int64_t period = up_period(now, u->s.rotation_days);
	struct up_report_params p = { .key = key, .id = id, .period = period, .unix_s = now,
				      .thread_names = u->thread_names, .reasons = u->reasons };
	size_t n = 0;
	struct up_queued q;
	if ((e = up_uuid4(key)) != 0 || (e = up_pseudonym(u->secret, build_id, period, id)) != 0 ||
	    (e = up_report_build(summary, len, &p, report, UP_REPORT_MAX, &n, err, sizeof(err))) != 0 ||
	    (e = up_queue_add(u->dirfd, key, now, sev, report, n, &q)) != 0) {
		u->st.dropped_failed++;
		say(u, LOG_WARN, "report not queued: %s", e == -EINVAL && err[0] ? err : strerror(-e));
		goto out;
	}
	u->st.queued++;
	u->kicked = true;
	pthread_cond_signal(&u->wake);
	say(u, LOG_INFO, "report %s queued (%zu bytes)", key, n);
out:
	pthread_mutex_unlock(&u->lock);
	free(report);
	return e;
}

/* ---- the thread ---- */

static bool keep_going(void *arg)
{
	struct up_uploader *u = arg;
	if (atomic_load(&u->stopping) || !atomic_load(&u->granted) ||
	    atomic_load(&u->revokes) != u->pass_revokes)
		return false;
	int64_t now = mono_ms();
	if (now - u->net_checked_ms >= NET_RECHECK_MS) {
		u->net_checked_ms = now;
		struct hal_net_info ni;
		hal_net_get(&ni);
		if (!network_allowed(u, ni.state))
			return false;
	}
	return true;
}

/* The order the policy sends in: the first anomalies, or the most severe. */
static int by_severity(const void *a, const void *b)
{
	const struct up_queued *x = a, *y = b;
	if (x->severity_us != y->severity_us)
		return x->severity_us > y->severity_us ? -1 : 1;
	return x->queued_s < y->queued_s ? -1 : x->queued_s > y->queued_s;
}

enum outcome { SENT, DROPPED, RETRY, STOP };

/* One report's answer into the queue and the counters. Under u->lock. */
static enum outcome settle(struct up_uploader *u, struct up_queued *q, int e,
			   const struct up_http_result *res, const char *err)
{
	if (e == -ECANCELED || atomic_load(&u->revokes) != u->pass_revokes) {
		u->st.aborted++;
		say(u, LOG_INFO, "upload of %s stopped (consent, network or shutdown)", q->key);
		return STOP;
	}
	if (!e && res->status >= 200 && res->status < 300) {
		up_budget_add(&u->budget, wall_s());
		if (budget_save(u) != 0)
			say(u, LOG_WARN, "cannot write the budget file");
		up_queue_remove(u->dirfd, q);
		later_forget(u, q->key);
		u->st.uploaded++;
		u->st.last_error[0] = 0;
		say(u, LOG_INFO, "report %s sent: %d", q->key, res->status);
		return SENT;
	}
	if (!e && res->status >= 400 && res->status < 500 && res->status != 408 && res->status != 429) {
		/* The collector will never take it: retrying would only spend the budget. */
		up_queue_remove(u->dirfd, q);
		later_forget(u, q->key);
		u->st.refused++;
		snprintf(u->st.last_error, sizeof(u->st.last_error), "HTTP %d", res->status);
		say(u, LOG_WARN, "report %s refused by the collector: %d; dropped", q->key, res->status);
		return DROPPED;
	}
	if (e)
		snprintf(u->st.last_error, sizeof(u->st.last_error), "%s", err[0] ? err : strerror(-e));
	else
		snprintf(u->st.last_error, sizeof(u->st.last_error), "HTTP %d", res->status);
	if (up_queue_count_attempt(u->dirfd, q) != 0 || q->attempts >= u->s.max_attempts) {
		up_queue_remove(u->dirfd, q);
		later_forget(u, q->key);
		u->st.dropped_attempts++;
		say(u, LOG_WARN, "report %s dropped after %u attempts (%s)", q->key, q->attempts,
		    u->st.last_error);
		return DROPPED;
	}
	int64_t d = backoff_ms(u, q->attempts, e ? -1 : res->retry_after_s);
	later_find(u, q->key, true)->due_ms = mono_ms() + d;
	u->st.retries++;
	say(u, LOG_INFO, "report %s: %s; try %u in %lld ms", q->key, u->st.last_error,
	    q->attempts + 1, (long long)d);
	return RETRY;
}

/* One look at the queue: send what the policy allows. Returns when to look again
 * (CLOCK_MONOTONIC ms). */
static int64_t pass(struct up_uploader *u)
{
	int64_t now = mono_ms(), next = now + (int64_t)u->s.poll_s * 1000;
	struct up_queued q[UP_QUEUE_MAX];
	size_t n = 0;
	u->pass_revokes = atomic_load(&u->revokes);
	if (!atomic_load(&u->granted))
		return INT64_MAX;
	if (up_queue_list(u->dirfd, q, UP_QUEUE_MAX, &n) != 0 || n == 0) {
		pthread_mutex_lock(&u->lock);
		u->st.queued = (unsigned)n;
		pthread_mutex_unlock(&u->lock);
		return INT64_MAX; /* up_offer wakes us */
	}
	if (u->s.pick == UP_PICK_SEVERE)
		qsort(q, n, sizeof(q[0]), by_severity);

	struct hal_net_info ni;
	hal_net_get(&ni);
	pthread_mutex_lock(&u->lock);
	u->st.queued = (unsigned)n;
	snprintf(u->st.network, sizeof(u->st.network), "%s", hal_net_state_name(ni.state));
	int64_t reopens;
	unsigned left = up_budget_left(&u->budget, wall_s(), period_s(u), u->s.budget, &reopens);
	u->st.budget_left = left;
	pthread_mutex_unlock(&u->lock);
	if (!network_allowed(u, ni.state)) {
		say(u, LOG_DEBUG, "%zu report(s) wait: network is %s (%s)", n,
		    hal_net_state_name(ni.state), ni.reason);
		return next;
	}
	if (left == 0) {
		int64_t wait_s = reopens - wall_s();
		say(u, LOG_INFO, "%zu report(s) wait for the budget (%u per %u days): %lld s", n,
		    u->s.budget, u->s.budget_days, (long long)wait_s);
		return wait_s > 0 && wait_s < INT64_MAX / 2000 ? now + wait_s * 1000 : next;
	}

	struct up_tls_settings ts = { .ca_file = u->ca_file, .pin = u->have_pin ? u->pin : NULL,
				      .timeout_ms = (int)u->s.timeout_ms, .keep_going = keep_going,
				      .arg = u };
	struct up_conn *c = NULL;
	char *body = malloc(UP_REPORT_MAX);
	if (!body)
		return next;
	u->net_checked_ms = mono_ms();
	for (size_t i = 0; i < n && left > 0; i++) {
		now = mono_ms();
		pthread_mutex_lock(&u->lock);
		struct later *l = later_find(u, q[i].key, false);
		int64_t due_ms = l ? l->due_ms : 0;
		pthread_mutex_unlock(&u->lock);
		if (due_ms > now) {
			next = due_ms < next ? due_ms : next;
			continue;
		}
		size_t len = 0;
		int e = up_queue_read(u->dirfd, &q[i], body, UP_REPORT_MAX, &len);
		if (e == -ENOENT)
			continue; /* a revoke cleared it */
		if (e) {
			say(u, LOG_WARN, "queued report %s unreadable: dropped", q[i].name);
			pthread_mutex_lock(&u->lock);
			up_queue_remove(u->dirfd, &q[i]);
			u->st.dropped_failed++;
			pthread_mutex_unlock(&u->lock);
			continue;
		}
		/* Consent and network again before every request (keep_going asks both). */
		u->net_checked_ms = 0;
		char err[200] = "";
		struct up_http_result res = { 0 };
		if (!keep_going(u)) {
			e = -ECANCELED;
		} else if (!c) {
			e = up_conn_open(&c, &u->url, &ts, err, sizeof(err));
			if (!e) {
				pthread_mutex_lock(&u->lock);
				u->st.connections++;
				pthread_mutex_unlock(&u->lock);
			}
		}
		if (!e)
			e = up_conn_post(c, &u->url, q[i].key, body, len, &res, err, sizeof(err));
		if (e || !res.reusable) {
			up_conn_close(c);
			c = NULL;
		}
		pthread_mutex_lock(&u->lock);
		enum outcome o = settle(u, &q[i], e, &res, err);
		if (o == SENT)
			left--;
		u->st.budget_left = left;
		pthread_mutex_unlock(&u->lock);
		if (o == STOP)
			break;
		if (o == RETRY) {
			/* The collector or the path to it is in trouble: the rest waits too. */
			pthread_mutex_lock(&u->lock);
			struct later *retry = later_find(u, q[i].key, false);
			if (retry && retry->due_ms < next)
				next = retry->due_ms;
			pthread_mutex_unlock(&u->lock);
			break;
		}
	}
	up_conn_close(c);
	free(body);
	/* Anything left for which the budget allows: look again soon (a report tried
	 * and dropped frees a place for the next). */
	return next;
}

static void *run(void *arg)
{
	struct up_uploader *u = arg;
	int64_t due = 0; /* a first pass at once: what an earlier run left */
	pthread_mutex_lock(&u->lock);
	while (!atomic_load(&u->stopping)) {
		while (!u->kicked && !atomic_load(&u->stopping) && mono_ms() < due) {
			if (due == INT64_MAX) {
				pthread_cond_wait(&u->wake, &u->lock);
			} else {
				struct timespec ts = { due / 1000, (long)(due % 1000) * 1000000 };
				pthread_cond_timedwait(&u->wake, &u->lock, &ts);
			}
		}
		if (atomic_load(&u->stopping))
			break;
		u->kicked = false;
		pthread_mutex_unlock(&u->lock);
		due = pass(u);
		pthread_mutex_lock(&u->lock);
	}
	pthread_mutex_unlock(&u->lock);
	return NULL;
}

/* ---- start, stop, kick, stats ---- */

int up_start(struct up_uploader **out, const struct up_settings *s, int dirfd, bool granted,
	     char *err, size_t errsize)
{
	*out = NULL;
	struct up_uploader *u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->s = *s;
	u->dirfd = dirfd;
#define COPY(field, src)                                                                           \
	(snprintf(u->field, sizeof(u->field), "%s", (src) ? (src) : "") >= (int)sizeof(u->field))
	if (COPY(url_text, s->url) || COPY(ca_file, s->ca_file) ||
	    COPY(thread_names, s->thread_names) || COPY(reasons, s->reasons) ||
	    COPY(campaign, s->campaign)) {
		snprintf(err, errsize, "an upload setting is too long");
		free(u);
		return -EINVAL;
	}
#undef COPY
	u->s.url = u->s.ca_file = u->s.thread_names = u->s.reasons = u->s.campaign = NULL;
	if (up_url_parse(u->url_text, &u->url) != 0) {
		snprintf(err, errsize, "upload_url %s is not https://host[:port]/path", u->url_text);
		free(u);
		return -EINVAL;
	}
	if (s->pin_hex && s->pin_hex[0]) {
		if (strlen(s->pin_hex) != 64 || up_hex_decode(s->pin_hex, u->pin, 32) != 0) {
			snprintf(err, errsize, "upload_pin is not 64 hex digits");
			free(u);
			return -EINVAL;
		}
		u->have_pin = true;
	}
	if (!u->s.budget_days)
		u->s.budget_days = 7;
	if (!u->s.max_attempts)
		u->s.max_attempts = 1;
	if (!u->s.poll_s)
		u->s.poll_s = 30;
	if (!u->s.backoff_ms)
		u->s.backoff_ms = 2000;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->wake, &ca);
	pthread_condattr_destroy(&ca);
	budget_load(u);
	if (granted) {
		int e = up_set_consent(u, true);
		if (e)
			snprintf(err, errsize, "no install secret: %s", strerror(-e));
	} else {
		/* Revoked while jittd was not running (an OEM's settings app wrote the file):
		 * the revoke's work is done now. */
		pthread_mutex_lock(&u->lock);
		forget_everything(u);
		pthread_mutex_unlock(&u->lock);
	}
	int e = pthread_create(&u->thread, NULL, run, u);
	if (e) {
		snprintf(err, errsize, "cannot start the upload thread: %s", strerror(e));
		free(u);
		return -e;
	}
	pthread_setname_np(u->thread, "jittd-upload");
	*out = u;
	return 0;
}

void up_stop(struct up_uploader *u)
{
	if (!u)
		return;
	pthread_mutex_lock(&u->lock);
	atomic_store(&u->stopping, true);
	pthread_cond_signal(&u->wake);
	pthread_mutex_unlock(&u->lock);
	pthread_join(u->thread, NULL);
	memset(u->secret, 0, sizeof(u->secret));
	free(u);
}

void up_kick(struct up_uploader *u)
{
	pthread_mutex_lock(&u->lock);
	u->kicked = true;
	memset(u->later, 0, sizeof(u->later)); /* "scan": forget the back-off, as jittd does */
	pthread_cond_signal(&u->wake);
	pthread_mutex_unlock(&u->lock);
}

void up_get_stats(struct up_uploader *u, struct up_stats *st)
{
	pthread_mutex_lock(&u->lock);
	*st = u->st;
	st->granted = atomic_load(&u->granted);
	pthread_mutex_unlock(&u->lock);
}
