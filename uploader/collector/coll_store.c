/* SPDX-License-Identifier: MIT */
/*
 * uploader/collector/coll_store.c - reports in SQLite.
 */
#include "uploader/collector/coll_store.h"

#include "uploader/json.h"

#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct coll_store {
	sqlite3 *db;
	sqlite3_stmt *put, *conn;
	pthread_mutex_t lock;
};

/* WAL: a reader (`collector stats`) never waits for the server's writes, nor they for it. */
static const char schema[] =
	"PRAGMA journal_mode=WAL;"
	"PRAGMA synchronous=NORMAL;"
	"CREATE TABLE IF NOT EXISTS reports("
	" key TEXT NOT NULL UNIQUE,"	  /* the idempotency key (a UUID) */
	" build_id TEXT NOT NULL,"	  /* app.build_id */
	" name TEXT NOT NULL,"		  /* app.name */
	" body BLOB NOT NULL,"		  /* the body as received */
	" received INTEGER NOT NULL);"	  /* unix seconds */
	"CREATE INDEX IF NOT EXISTS reports_build_id ON reports(build_id);"
	"CREATE TABLE IF NOT EXISTS counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL);"
	"INSERT OR IGNORE INTO counters VALUES('connections', 0);";

int coll_store_open(const char *path, struct coll_store **out, char *msg, size_t msgsize)
{
	struct coll_store *st = calloc(1, sizeof(*st));
	char *err = NULL;
	*out = NULL;
	if (!st)
		return -ENOMEM;
	pthread_mutex_init(&st->lock, NULL);
	if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				   SQLITE_OPEN_FULLMUTEX, NULL) != SQLITE_OK)
		goto fail;
	/* Another process (stats) may hold the file for a moment: wait for it, bounded. */
	sqlite3_busy_timeout(st->db, 5000);
	if (sqlite3_exec(st->db, schema, NULL, NULL, &err) != SQLITE_OK)
		goto fail;
	if (sqlite3_prepare_v2(st->db,
			       "INSERT OR IGNORE INTO reports(key, build_id, name, body, received)"
			       " VALUES(?, ?, ?, ?, ?)", -1, &st->put, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db,
			       "UPDATE counters SET value = value + 1 WHERE name = 'connections'",
			       -1, &st->conn, NULL) != SQLITE_OK)
		goto fail;
	*out = st;
	return 0;
fail:
	snprintf(msg, msgsize, "%s: %s", path, err ? err : sqlite3_errmsg(st->db));
	sqlite3_free(err);
	coll_store_close(st);
	return -EIO;
}

void coll_store_close(struct coll_store *st)
{
	if (!st)
		return;
	sqlite3_finalize(st->put);
	sqlite3_finalize(st->conn);
	sqlite3_close(st->db);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

int coll_store_put(struct coll_store *st, const char *key, const char *build_id,
		   const char *name, const char *body, size_t len)
{
	int rc;
	pthread_mutex_lock(&st->lock);
	sqlite3_reset(st->put);
	sqlite3_bind_text(st->put, 1, key, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st->put, 2, build_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st->put, 3, name, -1, SQLITE_TRANSIENT);
	sqlite3_bind_blob(st->put, 4, body, (int)len, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st->put, 5, (sqlite3_int64)time(NULL));
	if (sqlite3_step(st->put) != SQLITE_DONE)
		rc = -EIO;
	else
		rc = sqlite3_changes(st->db) == 1; /* 0: OR IGNORE kept the first one */
	sqlite3_reset(st->put);
	pthread_mutex_unlock(&st->lock);
	return rc;
}

int coll_store_count_connection(struct coll_store *st)
{
	int rc;
	pthread_mutex_lock(&st->lock);
	sqlite3_reset(st->conn);
	rc = sqlite3_step(st->conn) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_reset(st->conn);
	pthread_mutex_unlock(&st->lock);
	return rc;
}

/* Names come from the network: print them with anything a terminal could take as a
 * control sequence replaced by '?'. */
static void put_clean(FILE *out, const char *s)
{
	for (; s && *s; s++)
		fputc((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f ? '?' : *s, out);
}

static int64_t one_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s;
	int64_t v = -1;
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

/* Self time per function name, summed over reports, and beside it the preempted time that
 * version 2 reports give (scheduling records: time the function waited for a CPU, not its
 * code's): a small open table, grown by doubling. */
struct fn_sum {
	char *name;
	int64_t ns, preempted_ns;
	bool preempted_known; /* a version 2 report listed it */
};
struct fn_table {
	struct fn_sum *e;
	size_t n, cap;
	int64_t sources[4]; /* reports by window.sched.source: perf, schedstat, none; version 1 */
};

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603u; /* FNV-1a */
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211u;
	return h;
}

static int64_t sat_add(int64_t a, int64_t b)
{
	/* Saturate rather than overflow: a hostile report may claim INT64_MAX. */
	return b > INT64_MAX - a ? INT64_MAX : a + b;
}

/* preempted < 0: the report does not say (version 1). */
static int fn_add(struct fn_table *t, const char *name, int64_t ns, int64_t preempted)
{
	if ((t->n + 1) * 2 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct fn_sum *e = calloc(cap, sizeof(*e));
		if (!e)
			return -ENOMEM;
		for (size_t i = 0; i < t->cap; i++) {
			if (!t->e[i].name)
				continue;
			size_t j = hash(t->e[i].name) & (cap - 1);
			while (e[j].name)
				j = (j + 1) & (cap - 1);
			e[j] = t->e[i];
		}
		free(t->e);
		t->e = e;
		t->cap = cap;
	}
	size_t j = hash(name) & (t->cap - 1);
	while (t->e[j].name && strcmp(t->e[j].name, name) != 0)
		j = (j + 1) & (t->cap - 1);
	if (!t->e[j].name) {
		if (!(t->e[j].name = strdup(name)))
			return -ENOMEM;
		t->n++;
	}
	t->e[j].ns = sat_add(t->e[j].ns, ns);
	if (preempted >= 0) {
		t->e[j].preempted_ns = sat_add(t->e[j].preempted_ns, preempted);
		t->e[j].preempted_known = true;
	}
	return 0;
}

static int by_ns(const void *a, const void *b)
{
	const struct fn_sum *x = a, *y = b;
	if (x->ns != y->ns)
		return x->ns < y->ns ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Add one stored report's summary.top_window to t, by function name, and count its
 * scheduling source. The body passed coll_validate when it was stored, but is read as
 * carefully as if it had not. */
static int add_report(struct fn_table *t, const char *body, size_t len)
{
	struct json_doc d;
	char err[128];
	int rc = json_parse(&d, body, len, err, sizeof(err));
	if (rc) {
		json_free(&d);
		return rc == -ENOMEM ? rc : 0;
	}
	static const char *const sources[] = { "perf", "schedstat", "none" };
	int64_t version = 1;
	json_int(&d, json_get(&d, 0, "version"), &version);
	uint32_t sum = json_get(&d, 0, "summary");
	uint32_t fns = json_get(&d, sum, "functions"), top = json_get(&d, sum, "top_window");
	uint32_t nfns = json_len(&d, fns);
	if (version >= 2) {
		const char *src = json_str(&d, json_get(&d, json_get(&d, json_get(&d, sum, "window"),
								     "sched"), "source"), NULL);
		for (int k = 0; src && k < 3; k++)
			if (strcmp(src, sources[k]) == 0)
				t->sources[k]++;
	} else {
		t->sources[3]++;
	}
	for (uint32_t e = json_first(&d, top); e != JSON_NONE && !rc; e = json_next(&d, e)) {
		int64_t f, ns, pre = -1;
		uint32_t fv = json_first(&d, e);
		if (json_int(&d, fv, &f) || json_int(&d, json_next(&d, fv), &ns) || f < 0 ||
		    f >= nfns || ns < 0)
			continue;
		if (version >= 2) { /* [f, self_ns, calls, blocked_ns, cut, preempted_ns] */
			uint32_t pv = fv;
			for (int k = 0; k < 5 && pv != JSON_NONE; k++)
				pv = json_next(&d, pv);
			if (json_int(&d, pv, &pre) || pre < 0)
				pre = -1;
		}
		uint32_t fn = json_first(&d, fns);
		for (int64_t k = 0; k < f; k++)
			fn = json_next(&d, fn);
		size_t n;
		const char *name = json_str(&d, json_next(&d, json_next(&d, json_first(&d, fn))), &n);
		if (name)
			rc = fn_add(t, name, ns, pre);
	}
	json_free(&d);
	return rc;
}

int coll_store_stats(struct coll_store *st, FILE *out, int top)
{
	sqlite3_stmt *s;
	struct fn_table t = { 0 };
	int rc = 0;

	fprintf(out, "reports stored: %lld\n", (long long)one_int(st->db, "SELECT COUNT(*) FROM reports"));
	fprintf(out, "connections accepted: %lld\n", (long long)one_int(st->db,
		"SELECT value FROM counters WHERE name = 'connections'"));
	fprintf(out, "reports per app build-id:\n");
	if (sqlite3_prepare_v2(st->db, "SELECT build_id, MIN(name), COUNT(*) FROM reports"
				       " GROUP BY build_id ORDER BY COUNT(*) DESC, build_id", -1, &s,
			       NULL) != SQLITE_OK)
		return -EIO;
	while (sqlite3_step(s) == SQLITE_ROW) {
		fprintf(out, "  %8lld  ", (long long)sqlite3_column_int64(s, 2));
		put_clean(out, (const char *)sqlite3_column_text(s, 0));
		fputs("  ", out);
		put_clean(out, (const char *)sqlite3_column_text(s, 1));
		fputc('\n', out);
	}
	sqlite3_finalize(s);

	if (sqlite3_prepare_v2(st->db, "SELECT body FROM reports", -1, &s, NULL) != SQLITE_OK)
		return -EIO;
	while (!rc && sqlite3_step(s) == SQLITE_ROW)
		rc = add_report(&t, sqlite3_column_blob(s, 0), (size_t)sqlite3_column_bytes(s, 0));
	sqlite3_finalize(s);
	if (rc)
		goto out;
	/* Compact the table's entries to its front, then sort by time. */
	size_t n = 0;
	for (size_t i = 0; i < t.cap; i++)
		if (t.e[i].name)
			t.e[n++] = t.e[i];
	if (n) /* qsort must not be given NULL, even for 0 entries */
		qsort(t.e, n, sizeof(*t.e), by_ns);
	fprintf(out, "reports by scheduling source: perf %lld, schedstat %lld, none %lld, "
		     "not said (version 1) %lld\n",
		(long long)t.sources[0], (long long)t.sources[1], (long long)t.sources[2],
		(long long)t.sources[3]);
	fprintf(out, "top functions (self ns, and preempted ns from version 2 reports, in the "
		     "anomaly window, over all reports):\n");
	for (size_t i = 0; i < n && (int)i < top; i++) {
		char pre[24] = "-";
		if (t.e[i].preempted_known)
			snprintf(pre, sizeof(pre), "%lld", (long long)t.e[i].preempted_ns);
		fprintf(out, "  %14lld  %14s  ", (long long)t.e[i].ns, pre);
		put_clean(out, t.e[i].name);
		fputc('\n', out);
	}
	for (size_t i = 0; i < n; i++)
		free(t.e[i].name);
	t.cap = 0;
out:
	for (size_t i = 0; i < t.cap; i++)
		free(t.e[i].name);
	free(t.e);
	return rc;
}
