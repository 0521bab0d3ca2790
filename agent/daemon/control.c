/* SPDX-License-Identifier: MIT */
/*
 * jittd's control socket commands (agent/daemon/jittd.h). Who asks comes from the kernel
 * (SO_PEERCRED, agent/ctl.c): reading is for anyone, changing for root, the configured
 * system user and jittd's own user.
 */
#include "agent/daemon/jittd.h"
#include "agent/log.h"
#include "agent/spool.h"
#include "uploader/uploader.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Appends to a reply buffer; a full buffer truncates (the reply still ends cleanly). */
struct out {
	char *buf;
	size_t size, len;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
	if (o->len + 1 >= o->size)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len = o->len + (size_t)n < o->size ? o->len + (size_t)n : o->size - 1;
}

static int status(struct jittd *d, char *reply, size_t size)
{
	struct jittd_stats copy, *s = &copy; /* the worker's thread updates them meanwhile */
	jittd_worker_stats(&d->w, &copy);
	int last_error = jittd_last_error(d);
	struct out o = { reply, size, 0 };
	put(&o, "pid %d\n", (int)getpid());
	put(&o, "traces_seen %llu\n", (unsigned long long)s->seen);
	put(&o, "summarised %llu\n", (unsigned long long)s->summarised);
	put(&o, "quarantined %llu\n", (unsigned long long)s->quarantined);
	put(&o, "retries %llu\n", (unsigned long long)s->retries);
	put(&o, "kept %llu\n", (unsigned long long)s->kept);
	put(&o, "deleted %llu\n", (unsigned long long)s->deleted);
	put(&o, "trimmed %llu\n", (unsigned long long)s->trimmed);
	put(&o, "rotated %llu\n", (unsigned long long)s->rotated);
	put(&o, "dropped %llu\n", (unsigned long long)s->dropped);
	put(&o, "copies_skipped %llu\n", (unsigned long long)s->copies_skipped);
	put(&o, "summary_bytes %llu\n", (unsigned long long)s->summary_bytes);
	struct agent_spool_file *files;
	size_t n;
	if (agent_spool_list_at(&d->dirs, "spool", &files, &n) == 0) {
		free(files);
		put(&o, "pending %zu\n", n);
	}
	put(&o, "last_summary %s\n", s->last_summary[0] ? s->last_summary : "-");
	put(&o, "last_error %s\n", last_error ? strerror(-last_error) : "-");
	put(&o, "worker %s\n", jittd_worker_state(d));
	if (d->ctl) { /* what the socket refused: a flood shows here (docs/security.md) */
		const struct agent_ctl_stats *c = &d->ctl->st;
		put(&o, "requests_served %llu\n", (unsigned long long)c->served);
		put(&o, "requests_malformed %llu\n", (unsigned long long)c->refused);
		put(&o, "clients_timed_out %llu\n", (unsigned long long)c->timed_out);
		put(&o, "clients_over_uid_cap %llu\n", (unsigned long long)c->over_uid);
		put(&o, "clients_dropped %llu\n", (unsigned long long)c->dropped);
	}
	put(&o, "consent %s\n", d->granted ? "granted" : "revoked");
	if (d->up) {
		struct up_stats u;
		up_get_stats(d->up, &u);
		put(&o, "upload_queued %u\n", u.queued);
		put(&o, "uploaded %llu\n", (unsigned long long)u.uploaded);
		put(&o, "upload_refused %llu\n", (unsigned long long)u.refused);
		put(&o, "upload_retries %llu\n", (unsigned long long)u.retries);
		put(&o, "upload_aborted %llu\n", (unsigned long long)u.aborted);
		put(&o, "upload_dropped_budget %llu\n", (unsigned long long)u.dropped_budget);
		put(&o, "upload_dropped_attempts %llu\n", (unsigned long long)u.dropped_attempts);
		put(&o, "upload_dropped_campaign %llu\n", (unsigned long long)u.dropped_campaign);
		put(&o, "upload_dropped_failed %llu\n", (unsigned long long)u.dropped_failed);
		put(&o, "upload_connections %llu\n", (unsigned long long)u.connections);
		put(&o, "upload_budget_left %u\n", u.budget_left);
		put(&o, "upload_network %s\n", u.network[0] ? u.network : "-");
		put(&o, "upload_last_error %s\n", u.last_error[0] ? u.last_error : "-");
	}
	return 0;
}

/* "consent status" for anyone; "consent grant|revoke" (checked by the caller). */
static int consent(struct jittd *d, const struct agent_ctl_peer *peer, const char *arg,
		   char *reply, size_t size)
{
	bool grant = !strcmp(arg, "grant");
	if (!grant && strcmp(arg, "revoke")) {
		snprintf(reply, size, "consent takes grant, revoke or status");
		return -EINVAL;
	}
	if (grant && !d->up) {
		snprintf(reply, size, "this jittd has no uploader (CONFIG_UPLOADER, or see its log)");
		return -ENOTSUP;
	}
	/* The file first: a crash after it still leaves the user's word on disk, and the next
	 * start acts on it. */
	int e = jittd_consent_write(&d->consent, grant);
	if (e) {
		snprintf(reply, size, "cannot write %s: %s", d->consent.path, strerror(-e));
		return e;
	}
	char why[64];
	snprintf(why, sizeof(why), "asked by uid %u", (unsigned)peer->uid);
	jittd_apply_consent(d, grant, why);
	if (grant && !d->granted) {
		snprintf(reply, size, "consent could not be granted (no install secret; see the log)");
		return -EIO;
	}
	snprintf(reply, size, "consent %s\n", d->granted ? "granted" : "revoked");
	return 0;
}

int jittd_control(void *ctx, const struct agent_ctl_peer *peer, const char *cmd, const char *arg,
		  char *reply, size_t size)
{
	struct jittd *d = ctx;
	if (!strcmp(cmd, "status"))
		return *arg ? (snprintf(reply, size, "status takes no argument"), -EINVAL)
			    : status(d, reply, size);
	if (!strcmp(cmd, "consent") && !strcmp(arg, "status")) {
		snprintf(reply, size, "consent %s\n", d->granted ? "granted" : "revoked");
		return 0;
	}

	/* Everything else changes something: refused to other users before it is even looked
	 * at, so they learn nothing about what jittd would do. */
	if (!agent_ctl_may_change(peer, d->c.system_uid)) {
		log_warn("refused '%.32s' to uid %u (pid %d)", cmd, (unsigned)peer->uid,
			 (int)peer->pid);
		snprintf(reply, size, "uid %u may not change jittd", (unsigned)peer->uid);
		return -EPERM;
	}
	if (!strcmp(cmd, "scan")) {
		log_info("scan asked by uid %u (pid %d)", (unsigned)peer->uid, (int)peer->pid);
		jittd_retry_now(d);
		if (d->up)
			up_kick(d->up);
		return 0;
	}
	if (!strcmp(cmd, "consent"))
		return consent(d, peer, arg, reply, size);
	snprintf(reply, size, "unknown command");
	return -EINVAL;
}
