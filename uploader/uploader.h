/* SPDX-License-Identifier: MIT */
/*
 * uploader/uploader.h - what jittd runs to send reports: consent, the queue, the policy
 * (consent, Wi-Fi, budget, back-off) and the HTTPS client, on a thread of its own.
 *
 * Why a thread and not jittd's poll loop: mbedtls' handshake and a slow collector block for
 * seconds, and summarising (jittd's worker) and the control socket (jittd's main thread)
 * must never wait for the network. The thread inherits jittd's LITTLE-core affinity and
 * lowest priority. It sleeps until a report is offered, consent changes, `up_kick`, or the
 * next due time (a back-off, the budget reopening, the next look at the network).
 *
 * Consent is the gate (Hubble section 9, informed consent): while it is revoked nothing is
 * queued and no socket is opened. A revoke aborts an upload in flight (the transport asks
 * up's keep-going check before every byte and every 100 ms), deletes every queued report,
 * and destroys the install secret; what was queued before a revoke is never sent, even
 * after a later grant.
 */
#ifndef JITT_UPLOADER_UPLOADER_H
#define JITT_UPLOADER_UPLOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum up_pick {
	UP_PICK_FIRST,	  /* the first anomalies use the budget (Hubble section 9's default) */
	UP_PICK_SEVERE,	  /* the longest slow frames among those queued */
	UP_PICK_CAMPAIGN, /* only the apps on the campaign list */
};

/* jittd's settings (agent/config.h's upload_* keys), copied at up_start. */
struct up_settings {
	const char *url;	  /* https://host[:port]/path */
	const char *ca_file;	  /* PEM bundle */
	const char *pin_hex;	  /* "" or 64 hex: SHA-256 of the collector's SPKI */
	const char *thread_names; /* allow-list, space-separated */
	const char *reasons;	  /* allow-list, space-separated */
	const char *campaign;	  /* build-ids (hex) or app names, space-separated */
	enum up_pick pick;
	unsigned budget;	/* reports per budget period */
	unsigned budget_days;	/* the period */
	unsigned rotation_days; /* the pseudonym's period */
	unsigned max_attempts;	/* per report */
	unsigned timeout_ms;	/* connect, handshake, each read or write */
	unsigned poll_s;	/* how often the network is looked at while reports wait */
	unsigned backoff_ms;	/* the first retry's delay; doubled each time, with jitter */
	bool allow_ethernet;	/* cellular and unknown never are */
	/* jittd's logger (agent_log's levels: 0 error, 1 warn, 2 info, 3 debug). */
	void (*log)(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
};

/* What `jitt status` shows. */
struct up_stats {
	bool granted;
	unsigned queued;
	uint64_t offered;	   /* summaries offered while consent was granted */
	uint64_t uploaded;	   /* answered 2xx */
	uint64_t refused;	   /* answered 4xx (but 408 and 429): dropped */
	uint64_t retries;	   /* attempts that failed and will be tried again */
	uint64_t dropped_budget;   /* queued beyond what the budget can ever send */
	uint64_t dropped_attempts; /* out of attempts */
	uint64_t dropped_campaign; /* not on the campaign list */
	uint64_t dropped_failed;   /* could not be built or written (a full disk) */
	uint64_t aborted;	   /* uploads stopped by a revoke, a network change or a stop */
	uint64_t connections;	   /* TLS connections opened */
	unsigned budget_left;	   /* uploads the budget still allows now */
	char network[16];	   /* at the last look */
	char last_error[128];	   /* of the last failed attempt, "" after a success */
};

struct up_uploader;

/*
 * Starts the thread. dirfd: the uploads folder (jittd's, checked: agent/spool.h), kept
 * open by the caller. granted: the consent state jittd read at start; revoked also clears
 * what an earlier run left (a revoke while jittd was down). 0, or -EINVAL (bad settings,
 * *err says which), -ENOMEM, or a thread's error.
 */
int up_start(struct up_uploader **u, const struct up_settings *s, int dirfd, bool granted,
	     char *err, size_t errsize);
/* Aborts an upload in flight, joins the thread, frees. NULL is fine. */
void up_stop(struct up_uploader *u);

/* Consent changed (or was read again): grant makes the secret if there is none; revoke
 * does everything in the header's comment before it returns. 0 or -errno (a grant whose
 * secret could not be made stays revoked). */
int up_set_consent(struct up_uploader *u, bool granted);

/* A new summary in the outbox: its report built and queued, when consent is granted and
 * the policy keeps it (counted otherwise). 0, or -errno when it could not be queued. */
int up_offer(struct up_uploader *u, const char *summary, size_t len);

/* Look at the queue and the network now (jittd's "scan"). */
void up_kick(struct up_uploader *u);

void up_get_stats(struct up_uploader *u, struct up_stats *st);

#endif
