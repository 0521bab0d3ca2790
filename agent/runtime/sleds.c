/* SPDX-License-Identifier: MIT */
/*
 * The runtime's side of sleds (ringbuf/sleds.h): at start-up, in a program built with them
 * (jitt-sleds.pc), which functions to patch, from the settings' `sleds` and
 * `sleds_exclude`. The patcher itself is in libjitt-sleds.a, linked only by such programs:
 * here it is a weak reference, NULL everywhere else.
 */
#define _GNU_SOURCE
#include "agent/runtime/runtime.h"
#include "agent/escape.h"
#include "agent/log.h"
#include "agent/runtime/learn_memory.h"
#include "hal/fs.h"
#include "hal/timer.h"
#include "ringbuf/decode.h"
#include "ringbuf/elf.h"
#include "ringbuf/record.h"
#include "ringbuf/ring.h"
#include "ringbuf/sleds.h"
#include "ringbuf/tracefile.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

extern const uintptr_t *rb_sleds_list(size_t *n) __attribute__((weak));
extern int rb_sleds_patch(const uintptr_t *skip, size_t nskip, enum rb_sled_time time,
			  struct rb_sleds_stats *st) __attribute__((weak));
extern int rb_sleds_thread_init(void) __attribute__((weak));
extern long rb_sleds_trace(const size_t *idx, size_t n, bool traced) __attribute__((weak));
extern long rb_sleds_count(const size_t *idx, const uint32_t *mean, size_t n)
	__attribute__((weak));
extern void rb_sleds_window_open(const struct rb_sleds_window *w) __attribute__((weak));
extern bool rb_sleds_window_ended(pid_t *tid, size_t *kept) __attribute__((weak));
extern void rb_sleds_window_close(void) __attribute__((weak));
extern void rb_sleds_time_probe(bool on, bool fenced) __attribute__((weak));
extern void rb_sleds_probe(void) __attribute__((weak));
extern const _Atomic uint32_t *rb_sleds_counted_records(size_t *n) __attribute__((weak));

/* A list names a few thousand functions at most; what is past this is not a list. */
#define EXCLUDE_MAX_BYTES (1u << 20)
#define EXCLUDE_OPTION "-finstrument-functions-exclude-function-list="

static bool sleds_on;
static bool sleds_sampled;	 /* sampled thunks (sleds = sampled, the default) */
static uint64_t sampled_point; /* ticks: a traced call through them, 0 until timed */
static uint64_t timed_point;   /* ticks: the same with both records timed, unfenced */

/*
 * Learning which functions to leave out, when no list is given (sleds_learn_ns), from
 * windows of the run in which every function is traced and every record timed: the first
 * from the start, each later one opened by putting back the functions taken out. A window
 * is a part of a traced thread's ring (AGENT_LEARN_WINDOW_PART), copied as the thread goes
 * on writing (control.c); it costs what full tracing costs for that long, a few ms. From
 * all the windows so far, each function whose calls last under sleds_learn_ns on average
 * is taken out of the trace, unless it is a profile's top, which is never left out: among
 * the LEARN_HOT_TOP functions perf's samples of the traced threads find most often (with
 * LEARN_PROTECT_MIN_PCT of them at least), or with LEARN_HOT_PCT of them
 * (learn_samples.c, hot_floors). Where perf is refused, the top is estimated from the
 * windows' times, with the trace points' own cost taken out: any short function holding
 * LEARN_PROTECT_PCT of the time, and the LEARN_PROTECT_TOP short ones that hold the most
 * (learn_decide). The others stay in.
 *
 * Windows open LEARN_PROBE_FIRST_MS after the first decision, then twice as late each time,
 * up to LEARN_PROBE_MAX_MS: a program's phases call different functions (SQLite's inserts,
 * then its queries), and one that was short at the start may hold the time later.
 *
 * A new phase brings functions no window judged, traced in full until one does: SQLite's
 * speedtest1 runs 30 tests of tens of ms each, and a quarter second in, half of its traced
 * calls were to short functions the first window had not seen (vdbeRecordCompareInt, 9 ns
 * a call, 3 million calls a second). So between windows, every LEARN_LOOK_MS while the
 * records come at LEARN_RATE_MIN a second or more (else less and less often), the newest
 * AGENT_LEARN_LOOK_SLOTS records (8 KiB: some 500 calls) of each traced thread are looked at
 * (agent_sleds_look): where LEARN_FRESH_PCT of their calls are to functions no window
 * judged, a window for them opens at once, a partial one: what is out stays out, only the
 * functions traced now are timed, for LEARN_FRESH_RECORDS records looked at every
 * LEARN_POLL_FRESH_MS; at most one every LEARN_FRESH_GAP_MS. A full window puts every
 * function back for a quarter of a ring, and cost speedtest1 some 6 ms each; a partial one
 * for a ring's 16th lasted up to 100 ms where what was left traced wrote few records. Looks
 * every 5 ms and a partial window every 10 ms at most, where it was 10 and 30: a first run
 * of speedtest1 wrote 12% fewer records (44 M slots against 50 M), its control thread took
 * 0.078 s against 0.067, and it ran 1-2% faster in three interleaved comparisons (`--memdb`
 * 1.150x against 1.167x, 1.171x against 1.180x pair; on a file 1.145x against 1.165x). (A
 * rise in the records' rate opened a full window before: it came late, and a server's
 * bursts opened one each.) While a full window is open the rings are looked at
 * every LEARN_POLL_MS for LEARN_POLL_FAST_MS (a busy thread fills its window in a few ms,
 * and until the first one closes every function is traced), then less and less often (an
 * idle app does not wake the control thread for nothing).
 */
#define LEARN_POLL_MS 10
#define LEARN_POLL_FAST_MS 2000 /* for this long after a window opens; then less and less */
#define LEARN_POLL_MAX_MS 1000
#define LEARN_PROBE_FIRST_MS 500
#define LEARN_PROBE_MAX_MS 60000
#define LEARN_LOOK_MS 5 /* between windows, the newest records looked at this often, */
#define LEARN_RATE_MIN 1000000 /* while they come this fast (a second); else less and less */
#define LEARN_FRESH_PCT 10     /* this share of their calls to functions no window judged, */
#define LEARN_FRESH_MIN 32     /* and this many at least, */
#define LEARN_FRESH_FN_MIN 8   /* each function's this many at least: */
#define LEARN_FRESH_RECORDS 8192 /* a partial window for them, of this many records */
#define LEARN_POLL_FRESH_MS 1	/* looked at this often, */
#define LEARN_FRESH_GAP_MS 10 /* at most one in this long */
#define LEARN_LOG_WINDOWS 3 /* logged at info; later ones only when what is out changed */
#define LEARN_MIN_CALLS 64 /* fewer calls than this say nothing of a function's length */
#define MEASURED_MIN_CALLS 8 /* a mean call for the trace files' measured section, at least */
#define LEARN_PROTECT_PCT 5 /* a short function holding this much by itself stays traced, */
#define LEARN_PROTECT_TOP 3 /* as do the 3 short ones that hold the most, */
#define LEARN_PROTECT_MIN_PCT 1 /* if they hold this much */
#define LEARN_HOT_TOP 4 /* with samples: a short function among the 4 that hold the most */
#define LEARN_HOT_PCT 10 /* or holding this much by itself (at 5%, duktape's 5th, 4 to 6% */
			 /* run to run, was kept in half the runs, at 1.3x the cost) */
#define LEARN_PUTBACK_TOP 3 /* between windows, one taken out comes back among the 3 that */
			    /* hold the most: at the windows' 4, duktape's throw put its 4th to */
			    /* 6th back and the next window took them out again (8 put-backs in */
			    /* 3 s, each traced in full till then): 1.57x of plain, 1.50x now */
#define LEARN_SAMPLES_MIN 100 /* fewer rank nothing: a decision waits for them, */
#define LEARN_SAMPLES_FEW 32  /* or for this many once the fast samples' time is spent */
#define LEARN_SAMPLE_FAST_NS 50000 /* a sample every 50 us of CPU time until there are */
				   /* LEARN_SAMPLES_MIN, */
#define LEARN_SAMPLE_NS 2000000	   /* else every 2 ms (a sample costs 25-36 us here) */
#define LEARN_FAST_MAX_MS 20 /* fast samples for this much of the threads' CPU time at most */
#define LEARN_PENDING_MAX_MS 2000 /* a decision waits this long for them at most */
#define LEARN_SAMPLES_KEEP (1u << 14) /* past this many, every count is halved */
#define LEARN_RECENT_SAMPLES 256 /* the recent ones, which a put-back ranks by: half a */
				 /* second's (LEARN_SAMPLES_MIN after a halving, at least) */
#define LEARN_DEPTH 1024 /* deeper calls are followed for depth only */
#define LEARN_SAVE_GAP_MS 500 /* the memory (learn_memory.c) is saved at most this often */
#define LEARN_MEMORY_CALLS 1048576 /* remembered counts are halved down to this many calls, */
#define LEARN_MEMORY_SAMPLES 200    /* and samples to this many: this run's soon outweigh */
				    /* an earlier one's, whose top may not be this run's */
#define LEARN_CAP_TIMES 64 /* a call counts for at most 64 times the threshold */

struct learn_id {
	uint32_t id; /* the entry record's low half: the function's address's (trace.h) */
	uint32_t idx;
};
struct learn_fn {
	uint64_t calls, incl, self; /* ticks, the trace points' own cost taken out */
	uint64_t parent;	    /* its calls that made traced calls: 0 for a leaf */
	uint32_t windows, mark;	    /* the windows that saw it entered; the last one's number */
	uint32_t look, look_mark;   /* its entries in the last look (agent_sleds_look) */
	/* While counted, between windows: perf's samples in its code, the CPU time they
	 * stand for, and its records (rb_sleds_counted_records) over the same time: its
	 * mean call as a profiler sees it (counted_mean); all taken at one period, this one's
	 * (ns): a sample at the slow period stands for 40 fast ones, and after the 16 of a
	 * first fast step each slow one moved the mean by half, while the steps that had none
	 * still added their records (the count loop's hot: 37, 14, 7, 5, 3, 5, 7, 13 ns a
	 * call by perf's samples, where it runs some 10-20; 1% and 3% of the loop in the
	 * traces of a CI run, 0.3-2.4% in one of 8 here, where it holds 10-25%). */
	uint64_t counted_hits, counted_ns, counted_records, counted_period;
	/* This run's windows under the decision in force alone (a memory has none of them;
	 * measures_under), for the trace files' measured section (measured_publish): its
	 * calls, the time of each in its own gaps as a sampled ring holds it (learn_ring),
	 * and its gaps there, in 1/RB_CALLED_EVERY */
	uint64_t run_calls, run_vis, run_gaps16;
};

/* Which function called which in the windows, as (caller + 1) << 32 | (callee + 1), sled
 * indexes, in an open-addressed set: a function whose callees are all out of the trace or
 * counted writes no entry or exit inside its calls, and can be counted too (countable).
 * Full, only true leaves are. */
#define LEARN_EDGES (1u << 15)
enum learn_status { LEARN_TRACED, LEARN_OUT, LEARN_COUNTED };
RT static void edge_add(uint64_t *edges, bool *full, size_t caller, size_t callee)
{
	uint64_t key = (uint64_t)(caller + 1) << 32 | (callee + 1);
	size_t h = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 49); /* 15 bits */
	for (size_t n = 0; n < LEARN_EDGES; n++, h = (h + 1) % LEARN_EDGES) {
		if (edges[h] == key)
			return;
		if (!edges[h]) {
			edges[h] = key;
			return;
		}
	}
	*full = true;
}

static struct {
	bool on;
	bool window;	/* open: every function traced, every record timed */
	bool partial;	/* the open window is for new functions: what is out stays out */
	bool fresh;	/* the last look found new functions: a partial window next */
	uint64_t fresh_ns; /* the last partial window's opening */
	uint32_t min_ns;
	unsigned poll_ms, probe_ms, windows;
	uint64_t next_ns, opened_ns;
	uint64_t probe_ns;   /* the next window's, at the latest */
	uint64_t rate_ns, rate_records; /* the last look */
	uint64_t span;	/* ticks: the windows' records, all rings */
	uint64_t point; /* ticks: what a traced call's trace points cost (probe_ticks) */
	uint64_t inner; /* ticks: what of it lies between its own entry and exit records */
	/* Each sled by its id (open addressing, idcap of them, twice the sleds at least; ids
	 * are 0x10 at least, an empty one is 0): a look or a window finds one a record */
	struct learn_id *ids;
	size_t idcap;
	struct learn_fn *fn;  /* by sled, over every window so far */
	size_t *out, nout;    /* the sleds taken out of the trace now */
	size_t *counted, ncounted; /* and those whose calls are counted (rb_sleds_count) */
	uint32_t *mean;	      /* their mean calls, ticks: mean[k] is counted[k]'s */
	uint64_t *edges;      /* who called whom (edge_add), LEARN_EDGES of them */
	uint64_t *edges_used; /* measures_stale's scratch: those in use, packed */
	bool edges_full;
	uint8_t *status;      /* by sled: enum learn_status (countable's scratch) */
	uint8_t *run_status;  /* by sled: the decision learn_fn's run_ measures are under */
	uint64_t *selfs, *ranked; /* by sled: learn_decide's scratch */
	struct rb_elf elf;    /* the program's symbols: the samples' functions, the log's names */
	uintptr_t bias;	      /* its load address */
	bool sampled;	      /* perf's samples of the traced threads come (learn_samples.c) */
	uint64_t *hits;	      /* by sled: its samples, halved now and then (LEARN_SAMPLES_KEEP) */
	uint64_t samples;     /* all of them (samples in the program's functions) */
	uint64_t run_samples; /* this run's own (samples starts from a memory's) */
	uint64_t fast_cpu_ns; /* the sampled threads' CPU time while sampled fast */
	uint64_t cpu_seen_ns; /* all of it, at the last step (agent_samples_cpu_ns) */
	uint64_t *recent;     /* by sled: its samples, halved past LEARN_RECENT_SAMPLES, each */
			      /* weighing the LEARN_SAMPLE_FAST_NS it stands for */
	uint64_t recent_weight, recent_samples; /* all of them: weighed, and counted */
	uint64_t *step_hits;  /* samples_take's: counted[k]'s hits before a read */
	uint32_t *records_seen; /* by sled: rb_sleds_counted_records at the last read */
	uint64_t period_ns;   /* CPU time a sample stands for, as perf was last told */
	bool window_since;    /* a window was open since the last read */
	uint64_t pending_ns;  /* a window closed then, its decision waiting for samples */
	uint64_t last_span;   /* ticks: the last window's records, all rings */
	unsigned partials;    /* windows for new functions (learn.partial) */
	unsigned ended_by_thread; /* windows their last record's thread ended */
	uint64_t *keep;	      /* where that thread copies its window (rb_sleds_window_open) */
	size_t keep_slots;
	uint64_t window_records; /* the windows' records, all of them */
	int last_threads;     /* and their threads */
	/* The memory across runs (learn_memory.c): its folder ("" none), file and key */
	char mem_dir[AGENT_PATH_MAX], mem_name[96];
	struct agent_memory_key mem_key;
	bool ready;	      /* learn_init done */
	bool remembered;      /* this run started from an earlier one's decision */
	bool dirty;	      /* decided since the last save */
	uint64_t saved_ns;
} learn;
/* learn.dirty with a folder to save to, for other threads (agent_sleds_memory_unsaved) */
static atomic_bool memory_unsaved;

/* What is out of the trace or counted changed: the memory is to be saved */
RT static void learn_changed(void)
{
	learn.dirty = true;
	atomic_store(&memory_unsaved, learn.mem_dir[0] != 0);
}

/* The whole of a regular file of at most max bytes, NUL-terminated, in *text (malloc). */
RT static int read_small_file(const char *path, size_t max, char **text)
{
	struct stat st;
	int fd = hal_open_file(AT_FDCWD, path, true, &st);
	if (fd < 0)
		return fd;
	int err = hal_read_whole(fd, (uint64_t)st.st_size, max, text);
	close(fd);
	return err;
}

RT static int main_bias(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uintptr_t *)data = (uintptr_t)info->dlpi_addr;
	return 1; /* the first object is the program */
}

RT static int cmp_addr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * The names of a `jitt exclude` list (lines of EXCLUDE_OPTION followed by names separated
 * by commas, as GCC takes them) cut in place in text: each name NUL-terminated, *n of them
 * put in names (at most max). Lines without the option are refused, so a file that is not
 * a list is not half read. Returns 0 or -EINVAL.
 */
RT static int exclude_names(char *text, const char **names, size_t max, size_t *n)
{
	*n = 0;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (!*line)
			continue;
		if (strncmp(line, EXCLUDE_OPTION, strlen(EXCLUDE_OPTION)))
			return -EINVAL;
		for (char *name = line + strlen(EXCLUDE_OPTION), *end; name; name = end) {
			end = strchr(name, ',');
			if (end)
				*end++ = 0;
			if (*name && *n < max)
				names[(*n)++] = name;
		}
	}
	return 0;
}

/*
 * The sleds whose function's name contains a name of the list (GCC's rule for the same
 * list, so that it leaves out the same functions in both builds), sorted, into skip; their
 * count, or a negative errno: -EINVAL for a file that is not a list, -ENODATA for a program
 * without a symbol table (stripped).
 */
RT static long exclude_sleds(const char *path, const uintptr_t *sleds, size_t nsleds,
			     uintptr_t *skip)
{
	char *text = NULL;
	int err = read_small_file(path, EXCLUDE_MAX_BYTES, &text);
	if (err)
		return err;
	size_t max = strlen(text) / 2 + 1, nnames;
	const char **names = malloc(max * sizeof(*names));
	struct rb_elf elf;
	memset(&elf, 0, sizeof(elf));
	err = names ? exclude_names(text, names, max, &nnames) : -ENOMEM;
	if (!err)
		err = rb_elf_load("/proc/self/exe", &elf);
	if (!err && !elf.full_symtab)
		err = -ENODATA; /* stripped */
	uintptr_t bias = 0;
	if (!err)
		dl_iterate_phdr(main_bias, &bias);
	long n = 0;
	for (size_t i = 0; !err && i < nsleds; i++) {
		const struct rb_symbol *s = rb_elf_lookup(&elf, sleds[i] - bias);
		if (!s || s->addr != sleds[i] - bias)
			continue;
		for (size_t k = 0; k < nnames; k++)
			if (strstr(s->name, names[k])) {
				skip[n++] = sleds[i];
				break;
			}
	}
	rb_elf_free(&elf);
	free(names);
	free(text);
	if (err)
		return err;
	qsort(skip, (size_t)n, sizeof(*skip), cmp_addr);
	return n;
}

/*
 * perf's samples of the traced threads since the last read, added to learn.hits; how many.
 * And for each counted function, between windows (a window traces them in full), its
 * samples, the CPU time they stand for and its records (ringbuf/sleds.h,
 * rb_sleds_counted_records) over the same time, for counted_mean.
 */
RT static uint64_t samples_take(void)
{
	if (!learn.sampled || !learn.hits)
		return 0;
	/* The counted ones' counts before: a few, where every sled's would cost the control
	 * thread a pass over all of them (thousands) at each step */
	for (size_t k = 0; k < learn.ncounted; k++)
		learn.step_hits[k] = learn.hits[learn.counted[k]];
	/* Weighed by CPU time: 200 fast samples of a remembered run's first 10 ms weighed as
	 * much as the next 200 ms, and kept strcspn out for a quarter second more */
	uint64_t weight = learn.period_ns > LEARN_SAMPLE_FAST_NS
				  ? learn.period_ns / LEARN_SAMPLE_FAST_NS
				  : 1;
	uint64_t got = agent_samples_read(learn.hits, learn.recent, weight);
	learn.samples += got;
	learn.run_samples += got;
	learn.recent_samples += got;
	learn.recent_weight += got * weight;
	size_t nrec = 0;
	const _Atomic uint32_t *rec = rb_sleds_counted_records ? rb_sleds_counted_records(&nrec)
							       : NULL;
	bool alike = !learn.window && !learn.window_since;
	learn.window_since = learn.window;
	for (size_t k = 0; rec && k < learn.ncounted; k++) {
		size_t i = learn.counted[k];
		if (i >= nrec)
			continue;
		uint32_t now = atomic_load_explicit(&rec[i], memory_order_relaxed);
		struct learn_fn *f = &learn.fn[i];
		uint64_t hits = learn.hits[i] - learn.step_hits[k];
		if (alike && learn.period_ns) {
			if (f->counted_period != learn.period_ns) /* a new period: from scratch */
				f->counted_hits = f->counted_ns = f->counted_records = 0;
			f->counted_period = learn.period_ns;
			f->counted_hits += hits;
			f->counted_ns += hits * learn.period_ns;
			f->counted_records += (uint32_t)(now - learn.records_seen[i]);
		}
		learn.records_seen[i] = now;
	}
	return got;
}

/*
 * A window opens: every record timed until a window's worth of them are written, when the
 * thread that wrote the last one ends it (ringbuf/sleds.h), unless this thread read it
 * first. A full window traces every function (the caller put those out back in), and its
 * end takes them out again; a partial one (learn.partial) leaves them out; both trace the
 * counted ones meanwhile. The ending thread's copy of its window goes to learn.keep,
 * touched here (touch) so that the copy takes no page fault on the app's thread; not for
 * the first window, opened in the constructor, where nothing may wait before main() (its
 * copy then faults in a quarter of a ring's pages, once, on the thread that ends it).
 */
RT static void learn_window_open(bool touch)
{
	uint64_t full = rb_ring_bytes() / 8 / AGENT_LEARN_WINDOW_PART;
	uint64_t records = learn.partial && LEARN_FRESH_RECORDS < full ? LEARN_FRESH_RECORDS : full;
	if (learn.keep_slots < records) {
		free(learn.keep);
		learn.keep = malloc(records * sizeof(*learn.keep));
		learn.keep_slots = learn.keep ? records : 0;
		if (learn.keep && touch)
			memset(learn.keep, 0, records * sizeof(*learn.keep));
	}
	struct rb_sleds_window w = {
		.records = records,
		.out = learn.out,
		.nout = learn.partial ? 0 : learn.nout,
		.counted = learn.counted,
		.ncounted = learn.ncounted,
		.keep = learn.keep,
		.keep_slots = learn.keep ? records : 0,
		.point_after1024 = sampled_point * 512, /* a call's two records: half each */
	};
	samples_take(); /* those before it: the counted ones' own */
	learn.window_since = true;
	rb_sleds_window_open(&w);
	learn.window = true;
}

RT static bool learn_remember(const struct agent_config *cfg, const uintptr_t *sleds,
			      size_t nsleds);

RT void agent_sleds_start(const struct agent_config *cfg)
{
	size_t nsleds = 0;
	const uintptr_t *sleds = rb_sleds_list ? rb_sleds_list(&nsleds) : NULL;
	if (!nsleds)
		return;
	if (!strcmp(cfg->sleds, "off")) {
		log_info("jitt: sleds: off (sleds = off): %zu functions untraced", nsleds);
		return;
	}
	uintptr_t *skip = NULL;
	long nskip = 0;
	if (cfg->sleds_exclude[0]) {
		skip = malloc(nsleds * sizeof(*skip));
		nskip = skip ? exclude_sleds(cfg->sleds_exclude, sleds, nsleds, skip) : -ENOMEM;
		if (nskip < 0) {
			/* Every function traced would cost what the list is there to save. */
			log_err("jitt: sleds: %s: %s: no function traced", cfg->sleds_exclude,
				nskip == -EINVAL ? "not a `jitt exclude` list"
				: nskip == -ENODATA ? "the program has no symbol table to match it"
						   : strerror((int)-nskip));
			free(skip);
			return;
		}
	}
	struct rb_sleds_stats st;
	enum rb_sled_time time = strcmp(cfg->sleds, "timed") ? RB_SLED_SAMPLED : RB_SLED_TIMED;
	int err = rb_sleds_patch(skip, (size_t)nskip, time, &st);
	free(skip);
	if (err == -EALREADY)
		return; /* a jitt_init after a jitt_shutdown: patched by the first, as it chose */
	if (err) {
		log_err("jitt: sleds: cannot patch: %s: no function traced", strerror(-err));
		return;
	}
	sleds_on = true;
	sleds_sampled = time == RB_SLED_SAMPLED;
	if (agent_sleds_may_learn(cfg)) {
		learn.min_ns = cfg->sleds_learn_ns;
		learn.poll_ms = LEARN_POLL_MS;
		learn.probe_ms = LEARN_PROBE_FIRST_MS;
		learn.opened_ns = agent_now_ns();
		learn.next_ns = learn.opened_ns + LEARN_POLL_MS * 1000000ull;
		if (learn_remember(cfg, sleds, nsleds)) { /* the first window: as scheduled */
			learn.probe_ns = learn.opened_ns + LEARN_PROBE_FIRST_MS * 1000000ull;
			learn.probe_ms *= 2;
		} else { /* the first window: from the start */
			learn_window_open(false);
		}
		/* The control thread runs already: it takes a step once this is seen, after the
		 * rest (it read no memory file meanwhile) */
		__atomic_store_n(&learn.on, true, __ATOMIC_RELEASE);
		agent_wake_control(); /* its poll has no deadline yet */
	}
	log_info("jitt: sleds: %zu of %zu functions traced, %s time (%zu left out by %s)",
		 st.patched, st.sleds, time == RB_SLED_TIMED ? "every record's" : "sampled",
		 st.excluded, cfg->sleds_exclude[0] ? cfg->sleds_exclude : "no list");
}

RT int agent_sleds_thread_start(void)
{
	return sleds_on && rb_sleds_thread_init ? rb_sleds_thread_init() : 0;
}

RT int agent_sleds_learn_timeout(uint64_t now_ns)
{
	if (!learn.on)
		return -1;
	return learn.next_ns <= now_ns ? 0 : (int)((learn.next_ns - now_ns + 999999) / 1000000);
}

/* learn_alloc's arrays */
RT static void learn_free(void)
{
	free(learn.ids), free(learn.fn), free(learn.out), free(learn.hits), free(learn.recent);
	free(learn.step_hits), free(learn.records_seen);
	free(learn.counted), free(learn.mean), free(learn.edges), free(learn.status);
	free(learn.run_status), learn.run_status = NULL;
	free(learn.edges_used), learn.edges_used = NULL;
	free(learn.selfs), free(learn.ranked);
	learn.ids = NULL, learn.fn = NULL, learn.out = NULL, learn.hits = NULL;
	learn.recent = NULL, learn.step_hits = NULL, learn.records_seen = NULL;
	learn.counted = NULL, learn.mean = NULL, learn.edges = NULL, learn.status = NULL;
	learn.selfs = NULL, learn.ranked = NULL;
}

RT static void learn_stop(void)
{
	if (!learn.on)
		return;
	learn.on = false;
	rb_sleds_window_close();
	learn.window = false;
	free(learn.keep);
	learn.keep = NULL, learn.keep_slots = 0;
	rb_elf_free(&learn.elf);
	agent_samples_stop();
	learn_free();
	learn.sampled = false;
	learn.ready = false;
	atomic_store(&memory_unsaved, false);
}

/* Between windows: the next look, at LEARN_LOOK_MS while the records come fast; less and
 * less often while they do not (an idle app's control thread sleeps). Whether to look now. */
RT static bool look_due(uint64_t now_ns, uint64_t records)
{
	uint64_t rate = 0;
	if (learn.rate_ns && now_ns > learn.rate_ns && records >= learn.rate_records)
		rate = hal_muldiv_u64(records - learn.rate_records, 1000000000u, now_ns - learn.rate_ns);
	learn.rate_ns = now_ns, learn.rate_records = records;
	bool fast = rate >= LEARN_RATE_MIN;
	learn.poll_ms = fast ? LEARN_LOOK_MS
		      : learn.poll_ms * 2 > LEARN_POLL_MAX_MS ? LEARN_POLL_MAX_MS
							  : learn.poll_ms * 2;
	learn.next_ns = now_ns + (uint64_t)learn.poll_ms * 1000000u;
	if (learn.next_ns > learn.probe_ns)
		learn.next_ns = learn.probe_ns;
	return fast && now_ns >= learn.fresh_ns + LEARN_FRESH_GAP_MS * 1000000ull;
}

/* Where id's search in learn.ids starts (a power-of-2 table: its upper bits of a product) */
RT static size_t id_hash(uint32_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 40) & (learn.idcap - 1);
}

/* The sled whose function has entry id id, or -1. */
RT static long find_id(uint32_t id)
{
	for (size_t h = id_hash(id);; h = (h + 1) & (learn.idcap - 1)) {
		if (learn.ids[h].id == id)
			return learn.ids[h].idx;
		if (!learn.ids[h].id)
			return -1;
	}
}

RT static uint64_t minus(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* The record before `at` in view v (its slots end there, circularly): its tag, and at moved
 * back over it; false where fewer than its slots are left (*left of them). By the tags
 * alone (record.h), newest first, as the decoder's first pass reads them. */
RT static bool record_back(const struct rb_ring_view *v, uint64_t *at, uint64_t *left,
			   uint64_t *tag)
{
	if (!*left)
		return false;
	/* No division: it was a third of a look's time (a look every LEARN_LOOK_MS) */
	*tag = v->slots[*at ? *at - 1 : v->nslots - 1];
	uint64_t len = rb_two_slots(rb_tag_low(*tag)) ? 2 : 1;
	if (*left < len)
		return false;
	*at = *at >= len ? *at - len : *at + v->nslots - len, *left -= len;
	return true;
}

/* A record whose time is exact: timed, or a special record. */
RT static bool exact(uint64_t tag)
{
	return rb_tag_ts32(tag) || (rb_tag_low(tag) - RB_SYNC) < RB_CALLED - RB_SYNC;
}

/* A window's records are its newest run of exact ones at least this long: outside a window,
 * one record in 1 to 64 slots is timed, and 8 in a row come by chance once in 64^7. */
#define WINDOW_RUN 8

/*
 * The window's records in v: the newest run of WINDOW_RUN exact records or more. Every
 * record of a window is timed but for the few its threads wrote before they saw it open
 * (up to the next record due to be timed, RB_SAMPLED_GAP_MAX at most), and where its
 * thread ended it, or this thread closed it before the copy, sampled records follow. With
 * any untimed record in a ring, its decoder fits their times to the whole of it
 * (untimed.h), which took most of the control thread's time on SQLite's speedtest1. An
 * empty view (valid 0) where v holds no such run.
 */
RT static struct rb_ring_view window_part(const struct rb_ring_view *v)
{
	struct rb_ring_view w = *v;
	uint64_t at = v->end, left = v->valid, tag, run = 0, run_end = v->end, run_left = 0;
	for (;;) {
		uint64_t at_before = at, left_before = left;
		bool more = record_back(v, &at, &left, &tag);
		if (!more || !exact(tag)) {
			if (run >= WINDOW_RUN) {
				w.end = run_end;
				w.valid = run_left - (more ? left_before : left);
				return w;
			}
			run = 0;
			if (!more)
				break;
			continue;
		}
		if (!run++)
			run_end = at_before, run_left = left_before;
	}
	w.valid = 0;
	return w;
}

/*
 * One ring's calls into fn[], by sled, each call's times without its trace points' own
 * cost (point a call; learn_decide says how it is shared); returns the ticks its records
 * span. A call counts for at most cap ticks: one that was preempted would otherwise make a
 * short function look like a profile's top, and a function whose calls are long is not
 * short at any cap far above the threshold.
 */
RT static uint64_t learn_ring(const struct rb_ring_view *v, struct learn_fn *fn, uint64_t point,
			      uint64_t cap)
{
	struct rb_decoder d;
	struct rb_ring_view timed = window_part(v);
	if (!timed.valid || rb_decoder_init(&d, &timed, hal_timer_now(), NULL, NULL))
		return 0;
	/* shown: the time of its descendants a sampled ring shows apart from it (the traced
	 * and counted ones, through out ones), shown_n their calls (half their points lie in
	 * its time in a window), gaps16 the gaps they split its time into in a sampled ring,
	 * in 1/RB_CALLED_EVERY (two a traced call; a counted one has a record for one call in
	 * RB_CALLED_EVERY); hidden: its out descendants' calls, whose points lie in its time */
	static struct {
		long idx;
		uint64_t ts, child, kids, inner, shown, shown_n, gaps16, hidden;
	} stack[LEARN_DEPTH];
	size_t depth = 0;
	struct rb_event ev[256];
	size_t got;
	while ((got = rb_decoder_read(&d, ev, 256)) > 0) {
		for (size_t i = 0; i < got; i++) {
			if (ev[i].kind == RB_EV_ENTRY) {
				if (depth < LEARN_DEPTH) {
					long k = stack[depth].idx = find_id((uint32_t)ev[i].id);
					if (k >= 0 && fn[k].mark != learn.windows + 1)
						fn[k].mark = learn.windows + 1, fn[k].windows++;
					stack[depth].ts = ev[i].ts;
					stack[depth].child = 0;
					stack[depth].kids = stack[depth].inner = 0;
					stack[depth].shown = stack[depth].shown_n = 0;
					stack[depth].gaps16 = stack[depth].hidden = 0;
				}
				depth++;
			} else if (ev[i].kind == RB_EV_EXIT && depth) {
				depth--;
				if (depth >= LEARN_DEPTH)
					continue;
				uint64_t dur = ev[i].ts - stack[depth].ts;
				long k = stack[depth].idx;
				/* not a sled: its records are the ring's whatever is decided */
				uint8_t st = k >= 0 ? learn.status[k] : LEARN_TRACED;
				if (depth) {
					stack[depth - 1].child += dur;
					stack[depth - 1].kids++;
					stack[depth - 1].inner += 1 + stack[depth].inner;
					if (st == LEARN_OUT) {
						stack[depth - 1].shown += stack[depth].shown;
						stack[depth - 1].shown_n += stack[depth].shown_n;
						stack[depth - 1].gaps16 += stack[depth].gaps16;
						stack[depth - 1].hidden += 1 + stack[depth].hidden;
					} else {
						stack[depth - 1].shown += dur;
						stack[depth - 1].shown_n++;
						stack[depth - 1].gaps16 +=
							st == LEARN_COUNTED ? 1 : 2 * RB_CALLED_EVERY;
					}
				}
				if (k >= 0 && depth && stack[depth - 1].idx >= 0)
					edge_add(learn.edges, &learn.edges_full,
						 (size_t)stack[depth - 1].idx, (size_t)k);
				if (k >= 0) {
					/* Without the trace points' own cost (learn_decide) */
					uint64_t self = minus(minus(dur, stack[depth].child),
							      (1 + stack[depth].kids) * point / 2);
					uint64_t incl = minus(dur, point / 2 + stack[depth].inner * point);
					incl = incl < cap ? incl : cap;
					self = self < cap ? self : cap;
					fn[k].calls++;
					fn[k].parent += stack[depth].kids != 0;
					fn[k].incl += incl;
					fn[k].self += self;
					/* As a sampled ring holds it: the out descendants' time
					 * too, without their points; its shown ones' points as
					 * its self time's */
					uint64_t vis = minus(minus(dur, stack[depth].shown),
							     (1 + stack[depth].shown_n) * point / 2 +
								     stack[depth].hidden * point);
					fn[k].run_calls++;
					fn[k].run_vis += vis < cap ? vis : cap;
					fn[k].run_gaps16 += RB_CALLED_EVERY + stack[depth].gaps16;
				}
			}
		}
	}
	uint64_t span = d.end_ts - d.start_ts;
	rb_decoder_free(&d);
	return span;
}

#define PROBE_CALLS 2048 /* a batch: 4,096 records, 32 KiB of scratch */
#define PROBE_BATCHES 8

/*
 * What a traced call's trace points cost, in ticks: the entry and exit records and the
 * thunk's path around them, timed on calls of rb_sleds_probe (a sled of the runtime's own,
 * patched as the program's are) on a scratch ring, the fastest of PROBE_BATCHES batches, as
 * control.c's measure_point_cost times the hooks'; every record timed (timed: fenced as a
 * window's are, whether one is open now or not, or as a timed record outside a window), or
 * sampled. On the control thread, which
 * gets a shadow stack for it; 0 where it cannot be measured (then nothing is taken out of
 * the times). Timed, *inner gets the part of it between a call's own entry and exit
 * records, the mean over the fastest batch: a call of an empty function's measured length.
 */
RT static uint64_t probe_ticks(bool timed, bool fenced, uint64_t *inner)
{
	if (!rb_sleds_probe || !rb_sleds_thread_init || rb_sleds_thread_init() ||
	    (timed && !rb_sleds_time_probe))
		return 0;
	if (timed)
		rb_sleds_time_probe(true, fenced);
	size_t nslots = 2 * PROBE_CALLS + 8;
	uint64_t *slots = calloc(nslots, sizeof(*slots)), best = UINT64_MAX;
	for (int b = 0; slots && b < PROBE_BATCHES; b++) {
		/* No record's value (an untimed exit is 0): what was written can be told */
		memset(slots, 0xff, nslots * sizeof(*slots));
		if (rb_scratch_begin(slots, nslots))
			break;
		uint64_t t0 = hal_counter_read();
		for (int i = 0; i < PROBE_CALLS; i++)
			rb_sleds_probe();
		uint64_t t1 = hal_counter_read();
		rb_scratch_end();
		size_t written = 0;
		for (size_t k = 0; k < nslots; k++)
			written += slots[k] != UINT64_MAX;
		if (written < 2 * PROBE_CALLS) /* the probe's sled was not patched */
			break;
		if (t1 - t0 >= best)
			continue;
		best = t1 - t0;
		/* Each call's entry and exit, both timed: the length between them */
		uint64_t within = 0, calls = 0;
		for (size_t k = 0; timed && inner && k + 1 < nslots; k++)
			if (slots[k] != UINT64_MAX && rb_tag_low(slots[k]) >= RB_FIRST_ID &&
			    rb_tag_low(slots[k + 1]) == RB_EXIT && slots[k + 1] != UINT64_MAX) {
				within += (uint32_t)(rb_tag_ts32(slots[k + 1]) - rb_tag_ts32(slots[k]));
				calls++, k++;
			}
		if (inner)
			*inner = calls ? within / calls : 0;
	}
	free(slots);
	if (timed)
		rb_sleds_time_probe(false, fenced);
	return best == UINT64_MAX ? 0 : best / PROBE_CALLS;
}

RT void agent_sleds_point_cost(void)
{
	if (!sleds_on || !sleds_sampled)
		return;
	/* A ring frozen in a learning window holds the window's records, every one timed,
	 * after older ones in sampled time: the file has both costs, and the reader weighs
	 * them by the share of records written untimed (rb_trace_point_ps). Before,
	 * the window's cost stood for all: 11 ns a record where most cost 2.7, too much to
	 * take out of a remembered run's summary. */
	/* A timed record outside a window, unfenced: a ring holds its window's records (fenced,
	 * 28-49 ns a record in this VM where an unfenced one is 15-17) only where a window ran
	 * within its span, and then only some 260,000 of them, where every ring has a timed
	 * record in 32: charged the fenced cost, duktape's took 0.4-1 ns too much out of every
	 * record, on a sampled point of 3-4 ns */
	if (timed_point) /* a call's two records */
		rb_trace_set_timed_cost((double)timed_point / 2);
	if (!sampled_point && !learn.window) /* in a window, the probe's records are timed */
		sampled_point = probe_ticks(false, false, NULL);
	if (sampled_point)
		rb_trace_set_point_cost((double)sampled_point / 2);
	else if (learn.window && learn.point) /* nothing else known yet */
		rb_trace_set_point_cost((double)learn.point / 2);
}

/* Function idx's name, for the log: its symbol's, or its address. */
RT static const char *learn_name(const uintptr_t *sleds, size_t idx, char *buf, size_t size)
{
	const struct rb_symbol *sym = rb_elf_lookup(&learn.elf, sleds[idx] - learn.bias);
	if (sym && sym->addr == sleds[idx] - learn.bias)
		return rb_elf_shown_name(sym->name);
	snprintf(buf, size, "%#llx", (unsigned long long)sleds[idx]);
	return buf;
}

RT static int cmp_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x > y ? -1 : x < y;
}

/* Each sled's counts, found by id: learning's state, from its first step on or from a memory
 * (learn_remember). false: no memory. */
RT static bool learn_alloc(const uintptr_t *sleds, size_t nsleds)
{
	for (learn.idcap = 16; learn.idcap < 2 * nsleds; learn.idcap *= 2)
		;
	learn.ids = calloc(learn.idcap, sizeof(*learn.ids));
	learn.fn = calloc(nsleds, sizeof(*learn.fn));
	learn.out = calloc(nsleds, sizeof(*learn.out));
	learn.hits = calloc(nsleds, sizeof(*learn.hits));
	learn.recent = calloc(nsleds, sizeof(*learn.recent));
	learn.step_hits = calloc(nsleds, sizeof(*learn.step_hits));
	learn.records_seen = calloc(nsleds, sizeof(*learn.records_seen));
	learn.counted = calloc(nsleds, sizeof(*learn.counted));
	learn.mean = calloc(nsleds, sizeof(*learn.mean));
	learn.edges = calloc(LEARN_EDGES, sizeof(*learn.edges));
	learn.edges_used = malloc(LEARN_EDGES * sizeof(*learn.edges_used));
	learn.status = calloc(nsleds, sizeof(*learn.status));
	learn.run_status = calloc(nsleds, sizeof(*learn.run_status));
	learn.selfs = calloc(nsleds, sizeof(*learn.selfs));
	learn.ranked = calloc(nsleds, sizeof(*learn.ranked));
	if (!learn.ids || !learn.fn || !learn.out || !learn.hits || !learn.recent ||
	    !learn.step_hits ||
	    !learn.records_seen || !learn.counted ||
	    !learn.mean || !learn.edges || !learn.edges_used || !learn.status ||
	    !learn.run_status || !learn.selfs || !learn.ranked) {
		learn_free(); /* all or none: learn_init tells by learn.fn */
		return false;
	}
	for (size_t i = 0; i < nsleds; i++) {
		uint32_t id = (uint32_t)sleds[i];
		size_t h = id_hash(id);
		while (learn.ids[h].id && learn.ids[h].id != id)
			h = (h + 1) & (learn.idcap - 1);
		if (!learn.ids[h].id && id >= RB_FIRST_ID)
			learn.ids[h] = (struct learn_id){ id, (uint32_t)i };
	}
	return true;
}

/* The rest of what learning needs from its first step on, on the control thread: the trace
 * points' cost, the program's symbols and perf's samples of the traced threads. */
RT static bool learn_init(const uintptr_t *sleds, size_t nsleds)
{
	if (!learn.fn && !learn_alloc(sleds, nsleds))
		return false;
	learn.ready = true;
	learn.point = probe_ticks(true, true, &learn.inner);
	timed_point = probe_ticks(true, false, NULL);
	/* And sampled time's, before a first window opens: a remembered run opens one at
	 * once, and a trace frozen in it had only the window's cost, 4 times sampled time's,
	 * for every record (agent_sleds_point_cost) */
	if (!sampled_point && !learn.window)
		sampled_point = probe_ticks(false, false, NULL);
	/* The functions' extents for the samples, their names for the log (a few ms of the
	 * control thread, once); a stripped program's samples go by its sleds alone. */
	if (rb_elf_load("/proc/self/exe", &learn.elf))
		memset(&learn.elf, 0, sizeof(learn.elf));
	dl_iterate_phdr(main_bias, &learn.bias);
	learn.sampled = !agent_samples_start(sleds, nsleds, learn.bias, &learn.elf);
	/* What the memory left out and counted, by name now that the names are here */
	if (learn.remembered && agent_log_enabled(AGENT_LOG_DEBUG)) {
		char buf[32];
		for (size_t k = 0; k < learn.nout; k++)
			log_dbg("jitt: sleds: remembered: left out %s",
				learn_name(sleds, learn.out[k], buf, sizeof(buf)));
		for (size_t k = 0; k < learn.ncounted; k++)
			log_dbg("jitt: sleds: remembered: counted %s",
				learn_name(sleds, learn.counted[k], buf, sizeof(buf)));
	}
	return true;
}

/*
 * The memory across runs (learn_memory.c). Its key: the program's GNU build-id (its note,
 * as loaded) and a hash of its sleds' places from its load address, which a rebuild moves.
 */
RT static int key_of_program(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct agent_memory_key *k = data;
	for (int i = 0; i < info->dlpi_phnum && !k->build_id_len; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + 12 <= end) {
			uint32_t w[3];
			memcpy(w, p, sizeof(w)); /* namesz, descsz, type */
			const uint8_t *name = p + 12, *desc = name + ((w[0] + 3) & ~3u);
			if (desc > end || w[1] > (size_t)(end - desc))
				break;
			if (w[2] == NT_GNU_BUILD_ID && w[0] == 4 && !memcmp(name, "GNU", 4) &&
			    w[1] <= sizeof(k->build_id)) {
				k->build_id_len = (uint8_t)w[1];
				memcpy(k->build_id, desc, w[1]);
				break;
			}
			p = desc + ((w[1] + 3) & ~3u);
		}
	}
	return 1; /* the first object is the program */
}

RT static void memory_key(const struct agent_config *cfg, const uintptr_t *sleds,
			  size_t nsleds, uintptr_t bias, struct agent_memory_key *k)
{
	memset(k, 0, sizeof(*k));
	dl_iterate_phdr(key_of_program, k);
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a over each place's 8 bytes */
	for (size_t i = 0; i < nsleds; i++) {
		uint64_t off = sleds[i] - bias;
		for (int b = 0; b < 8; b++)
			h = (h ^ (uint8_t)(off >> (8 * b))) * 0x100000001b3ull;
	}
	k->layout = h;
	k->freq = hal_timer_freq();
	k->nsleds = (uint32_t)nsleds;
	k->min_ns = cfg->sleds_learn_ns;
}

/* The memory's file, for the log: its folder may come from the environment, and is
 * printed escaped, as every name from outside is (agent/escape.h). */
RT static const char *memory_shown(char *buf, size_t size)
{
	char path[sizeof(learn.mem_dir) + sizeof(learn.mem_name)];
	snprintf(path, sizeof(path), "%s/%s", learn.mem_dir, learn.mem_name);
	return agent_escape(buf, size, path);
}

/*
 * Learning starts from an earlier run's memory, if the app has one for this program: its
 * counts are the windows' so far, its decision is applied now, before any thread runs the
 * program's code, and the first window is the scheduled one (LEARN_PROBE_FIRST_MS). The
 * counts are halved, all alike, until their calls are LEARN_MEMORY_CALLS at most, so that
 * the runs to come still move them; perf's samples down to LEARN_MEMORY_SAMPLES: enough
 * to rank a profile's top at once, few enough that this run's own samples (a few ms of a
 * busy thread) soon decide it, and put back a function that the earlier run's workload
 * let out but that is this one's top (learn_sample). true: remembered.
 */
RT static bool learn_remember(const struct agent_config *cfg, const uintptr_t *sleds,
			      size_t nsleds)
{
	uintptr_t bias = 0;
	dl_iterate_phdr(main_bias, &bias);
	memory_key(cfg, sleds, nsleds, bias, &learn.mem_key);
	learn.mem_dir[0] = 0;
	if (agent_memory_folder(cfg->sleds_memory, getauxval(AT_SECURE) != 0, learn.mem_dir,
				sizeof(learn.mem_dir))) {
		learn.mem_dir[0] = 0;
		return false;
	}
	char *p = learn.mem_name;
	p += sprintf(p, "sleds-");
	for (int i = 0; i < learn.mem_key.build_id_len; i++)
		p += sprintf(p, "%02x", learn.mem_key.build_id[i]);
	if (!learn.mem_key.build_id_len)
		p += sprintf(p, "layout-%016llx", (unsigned long long)learn.mem_key.layout);
	void *buf = NULL;
	size_t len;
	const char *why;
	char shown[AGENT_PATH_MAX + 128];
	struct agent_memory m;
	int err = agent_memory_read(learn.mem_dir, learn.mem_name, &buf, &len, &why);
	if (!err)
		err = agent_memory_decode(buf, len, &learn.mem_key, &m, &why);
	free(buf);
	if (err) {
		/* None yet, or one made for another build (an update): the usual. One damaged, or
		 * that this runtime would not have written: a warning (make bench-real's
		 * remembered rows find it in the program's output) */
		agent_log(err == -ENOENT	 ? AGENT_LOG_DEBUG
			  : err == -EINVAL ? AGENT_LOG_WARN
					   : AGENT_LOG_INFO,
			  "jitt: sleds: %s: %s: learning afresh", memory_shown(shown, sizeof(shown)),
			  why);
		if (err == -EPERM || err == -ELOOP)
			learn.mem_dir[0] = 0; /* nor written */
		return false;
	}
	if (!learn_alloc(sleds, nsleds)) {
		agent_memory_free(&m);
		return false;
	}
	uint64_t calls = 0;
	for (size_t k = 0; k < m.nfn; k++)
		calls += m.fn[k].calls;
	int halve = 0, hits_halve = 0;
	for (; calls >> halve > LEARN_MEMORY_CALLS; halve++)
		;
	for (; m.samples >> hits_halve > LEARN_MEMORY_SAMPLES; hits_halve++)
		;
	for (size_t k = 0; k < m.nfn; k++) {
		const struct agent_memory_fn *f = &m.fn[k];
		struct learn_fn *t = &learn.fn[f->idx];
		t->calls = f->calls >> halve, t->incl = f->incl >> halve;
		t->self = f->self >> halve, t->parent = f->parent >> halve;
		t->windows = f->windows;
		learn.hits[f->idx] = f->hits >> hits_halve;
	}
	learn.span = m.span >> halve;
	learn.samples = m.samples >> hits_halve;
	for (size_t k = 0; k < m.nedges; k++)
		edge_add(learn.edges, &learn.edges_full, (size_t)(m.edges[k] >> 32) - 1,
			 (size_t)(uint32_t)m.edges[k] - 1);
	learn.edges_full |= m.edges_full;
	for (size_t k = 0; k < m.nout; k++)
		learn.out[learn.nout++] = m.out[k];
	for (size_t k = 0; sleds_sampled && k < m.ncounted; k++) { /* timed sleds count none */
		learn.counted[learn.ncounted] = m.counted[k].idx;
		learn.mean[learn.ncounted++] = m.counted[k].mean;
	}
	agent_memory_free(&m);
	long out = learn.nout ? rb_sleds_trace(learn.out, learn.nout, false) : 0;
	long counted = out >= 0 && learn.ncounted
			       ? rb_sleds_count(learn.counted, learn.mean, learn.ncounted)
			       : 0;
	if (out < 0 || counted < 0) {
		/* Traced in full then, as a first window leaves them: learning from scratch */
		log_err("jitt: sleds: cannot apply what earlier runs learnt: %s",
			strerror((int)-(out < 0 ? out : counted)));
		learn.nout = learn.ncounted = 0;
		return false;
	}
	log_info("jitt: sleds: starting from what earlier runs learnt (%s): %zu functions left "
		 "out, %zu counted", memory_shown(shown, sizeof(shown)), learn.nout,
		 learn.ncounted);
	learn.remembered = true;
	return true;
}

/* The memory, saved if a decision came since the last save, LEARN_SAVE_GAP_MS ago at
 * least and between windows; at once at shutdown (now), even while a window is open: what
 * it saves is the last decision, which a window leaves as it was until it closes (a run
 * that ended as a new phase's second window opened lost its first one's decision, 2 runs
 * of 30 of sleds-check's phases). */
RT static void learn_save(uint64_t now_ns, bool now)
{
	if (!learn.dirty || !learn.mem_dir[0] || !learn.fn ||
	    (!now && (learn.window || now_ns - learn.saved_ns < LEARN_SAVE_GAP_MS * 1000000ull)))
		return;
	size_t nsleds = learn.mem_key.nsleds, nfn = 0, nedges = 0;
	struct agent_memory m = { .key = learn.mem_key, .samples = learn.samples,
				  .span = learn.span, .edges_full = learn.edges_full };
	m.fn = malloc(nsleds * sizeof(*m.fn) + 1);
	m.edges = malloc(LEARN_EDGES * sizeof(*m.edges));
	m.counted = malloc(learn.ncounted * sizeof(*m.counted) + 1);
	m.out = malloc(learn.nout * sizeof(*m.out) + 1);
	const char *why = "no memory";
	int err = -ENOMEM;
	void *buf = NULL;
	size_t len;
	if (m.fn && m.edges && m.counted && m.out) {
		for (size_t i = 0; i < nsleds; i++) {
			const struct learn_fn *f = &learn.fn[i];
			if (f->calls || f->windows || learn.hits[i])
				m.fn[nfn++] = (struct agent_memory_fn){
					.idx = (uint32_t)i, .windows = f->windows, .calls = f->calls,
					.incl = f->incl, .self = f->self, .parent = f->parent,
					.hits = learn.hits[i] };
		}
		for (size_t h = 0; h < LEARN_EDGES; h++)
			if (learn.edges[h])
				m.edges[nedges++] = learn.edges[h];
		for (size_t k = 0; k < learn.ncounted; k++)
			m.counted[k] = (struct agent_memory_counted){ (uint32_t)learn.counted[k],
								      learn.mean[k] };
		for (size_t k = 0; k < learn.nout; k++)
			m.out[k] = (uint32_t)learn.out[k];
		m.nfn = nfn, m.nedges = nedges, m.ncounted = learn.ncounted, m.nout = learn.nout;
		err = agent_memory_encode(&m, &buf, &len);
	}
	if (!err)
		err = agent_memory_write(learn.mem_dir, learn.mem_name, buf, len, &why);
	free(buf);
	agent_memory_free(&m);
	learn.dirty = false;
	atomic_store(&memory_unsaved, false);
	learn.saved_ns = now_ns;
	char shown[AGENT_PATH_MAX + 128];
	if (err) {
		log_info("jitt: sleds: %s: not saved: %s", memory_shown(shown, sizeof(shown)), why);
		learn.mem_dir[0] = 0; /* not tried again */
	} else {
		log_dbg("jitt: sleds: saved what was learnt to %s (%zu bytes)",
			memory_shown(shown, sizeof(shown)), len);
	}
}

/* The fast samples' time is spent: a thread in the program's code all along had its 100
 * samples in 5 ms of CPU time, a remembered run's 200 in 10; memcached's worker, whose
 * time is 90% the kernel's (where a tick costs as much and gives no sample), took 110 ms
 * of it for 100, at +50%: some 7% of its run. */
RT static bool fast_spent(void)
{
	return learn.fast_cpu_ns >= LEARN_FAST_MAX_MS * 1000000ull;
}

/* The samples a profile ranks with: fewer once the fast ones are spent (a thread mostly in
 * the kernel has no more soon; the steady ones would take seconds, every function traced
 * meanwhile). A function of 40% has a dozen of 32 even so. */
RT static uint64_t samples_min(void)
{
	return fast_spent() ? LEARN_SAMPLES_FEW : LEARN_SAMPLES_MIN;
}

/*
 * With samples: the fewest a function needs to count as a profile's top, which stays
 * traced however short its calls: as many as the ntop'th most sampled function has
 * (LEARN_HOT_TOP at a window, at most), LEARN_PROTECT_MIN_PCT of all at least; or
 * LEARN_HOT_PCT of all, whatever its rank. hits sum to total (learn.recent's are
 * weighed); samples is how many they are: UINT64_MAX with fewer than min_samples.
 */
RT static void hot_floors(const uint64_t *hits, uint64_t total, uint64_t samples,
			 uint64_t min_samples, size_t nsleds, int ntop, uint64_t *rank_floor,
			 uint64_t *share_floor)
{
	uint64_t top[LEARN_HOT_TOP] = { 0 }; /* the most sampled, in decreasing order */
	for (size_t i = 0; i < nsleds; i++) {
		uint64_t h = hits[i];
		if (h <= top[ntop - 1])
			continue; /* most: one compare (12% of the control thread's time on SQLite) */
		for (int k = 0; k < ntop; k++)
			if (h > top[k]) {
				uint64_t t = top[k];
				top[k] = h;
				h = t;
			}
	}
	*rank_floor = *share_floor = UINT64_MAX;
	if (samples < min_samples)
		return;
	uint64_t min = total * LEARN_PROTECT_MIN_PCT / 100;
	*rank_floor = top[ntop - 1] > min ? top[ntop - 1] : min;
	if (!*rank_floor)
		*rank_floor = 1;
	*share_floor = total * LEARN_HOT_PCT / 100;
}

RT static bool hot(const uint64_t *hits, size_t i, uint64_t rank_floor, uint64_t share_floor)
{
	return hits[i] >= rank_floor || hits[i] >= share_floor;
}

/* learn.status: the sleds of out[0..n) out, those of learn.counted counted, the others
 * traced */
RT static void status_set(const size_t *out, size_t n, size_t nsleds)
{
	memset(learn.status, LEARN_TRACED, nsleds * sizeof(*learn.status));
	for (size_t k = 0; k < n; k++)
		learn.status[out[k]] = LEARN_OUT;
	for (size_t k = 0; k < learn.ncounted; k++)
		learn.status[learn.counted[k]] = LEARN_COUNTED;
}

#define LEARN_MEAN_HITS 16 /* samples a counted function's mean goes by, at least */

/*
 * Whose windows' measures (learn_fn's run_ counts, taken under learn.run_status) the
 * decision now in learn.status makes stale, into stale[] (by sled, 1): the callers of a
 * function whose status changed (a callee out then and traced now, or the other way, had
 * its time in the caller's measure, or not), and theirs through out callers, to
 * MEASURED_DEPTH. b90's first-run fib trace had duk__executor_handle_call at 705 ticks a
 * call, from windows where the duk__handle_call_raw it calls was out, where a run's last
 * windows gave 139.
 * Only where a status changed, and over the edges in use, packed once: a pass over the
 * whole table a level (32,768 slots, twice a window) was a ninth of the control thread's
 * CPU time on speedtest1 --memdb (perf, 21 of its 187 samples).
 */
#define MEASURED_DEPTH 4
RT static void measures_stale(size_t nsleds, uint8_t *stale)
{
	bool changed = false;
	for (size_t i = 0; i < nsleds; i++) {
		stale[i] = learn.status[i] != learn.run_status[i] ? 2 : 0; /* 2: changed */
		changed |= stale[i];
	}
	if (!changed)
		return;
	size_t n = 0;
	for (size_t h = 0; h < LEARN_EDGES; h++) {
		uint64_t e = learn.edges[h];
		size_t caller = (size_t)(e >> 32) - 1, callee = (size_t)(uint32_t)e - 1;
		if (e && caller < nsleds && callee < nsleds)
			learn.edges_used[n++] = e;
	}
	for (int level = 0; level < MEASURED_DEPTH; level++) {
		bool more = false;
		for (size_t k = 0; k < n; k++) {
			uint64_t e = learn.edges_used[k];
			size_t caller = (size_t)(e >> 32) - 1, callee = (size_t)(uint32_t)e - 1;
			if (stale[caller] || !stale[callee])
				continue;
			/* a changed callee, or an out one whose measure moved (its time is its
			 * caller's) */
			if (stale[callee] == 2 || learn.status[callee] == LEARN_OUT)
				stale[caller] = 1, more = true;
		}
		if (!more)
			break;
	}
}

/* The windows' measures under the decision in force: those it made stale dropped, and
 * the others halved, so that a window weighs as much as all those before it (a phase's
 * calls, not the run's first and coldest). Before each window's decode. */
RT static void measures_under(size_t nsleds)
{
	status_set(learn.out, learn.nout, nsleds);
	uint8_t *stale = (uint8_t *)learn.ranked; /* learn_decide's scratch */
	measures_stale(nsleds, stale);
	for (size_t i = 0; i < nsleds; i++) {
		struct learn_fn *f = &learn.fn[i];
		if (stale[i] == 1)
			f->run_calls = f->run_vis = f->run_gaps16 = 0;
		f->run_calls /= 2, f->run_vis /= 2, f->run_gaps16 /= 2;
	}
	memcpy(learn.run_status, learn.status, nsleds);
}

/*
 * The traced functions' calls as this run's windows measured them, as a sampled ring holds
 * them (learn_ring: its own time, with the time of the callees out of the trace then, and
 * a sampled record's cost for each of its gaps), for the trace files written from now on
 * (rb_trace_set_measured; docs/untimed.md, "Measured calls"). The fit of sampled time
 * takes them as evidence where its windows cannot tell a function from its neighbours (an
 * interpreter's loop). Functions of fewer than MEASURED_MIN_CALLS calls in the measures
 * are left out (a long one's mean is told by fewer than a short one's length: the
 * count loop's slow has some five calls a window), and those not traced now or
 * whose measure the decision made stale.
 */
RT static void measured_publish(const uintptr_t *sleds, size_t nsleds)
{
	status_set(learn.out, learn.nout, nsleds);
	uint8_t *stale = (uint8_t *)learn.ranked; /* learn_decide's scratch */
	measures_stale(nsleds, stale);
	struct rb_measured *m = malloc((nsleds ? nsleds : 1) * sizeof(*m));
	size_t n = 0;
	for (size_t i = 0; m && i < nsleds; i++) {
		const struct learn_fn *f = &learn.fn[i];
		if (learn.status[i] != LEARN_TRACED || stale[i] == 1 ||
		    f->run_calls < MEASURED_MIN_CALLS)
			continue;
		double calls = (double)f->run_calls;
		double gaps = (double)f->run_gaps16 / RB_CALLED_EVERY / calls;
		double t = (double)f->run_vis / calls + gaps * (double)sampled_point / 2;
		if (t >= 1 && t < UINT32_MAX)
			m[n++] = (struct rb_measured){ (uint32_t)sleds[i], (uint32_t)(t + 0.5) };
	}
	if (m && rb_trace_set_measured(m, n) == 0)
		log_dbg("jitt: sleds: the traces carry %zu functions' calls as measured", n);
	free(m);
}

/*
 * Counted function i's mean call, ticks: its records stand for RB_CALLED_EVERY calls each,
 * so its share of a summary is as right as this mean. Where perf's samples, while it was
 * counted, hold it LEARN_MEAN_HITS times, the CPU time they stand for over its calls then
 * (its records, each RB_CALLED_EVERY calls: samples_take): what a profiler measures.
 * Else the time between its timed records in the windows, less that of an empty call's
 * (learn.inner), which errs high on a short function whose stores the timed exit waits
 * for: hot (tests/sleds_abi.c, 30 stores, 7 to 11 ns a call by perf) came out at 19 to
 * 21 ns.
 */
RT static uint64_t counted_mean(size_t i)
{
	const struct learn_fn *f = &learn.fn[i];
	if (f->counted_hits >= LEARN_MEAN_HITS && f->counted_records && !agent_samples_blind(i))
		return hal_muldiv_u64(f->counted_ns / (f->counted_records * RB_CALLED_EVERY),
				      hal_timer_freq(), 1000000000u);
	return minus(f->incl / f->calls + learn.point / 2, learn.inner);
}

/* The counted functions' means, where perf's samples now tell one a quarter away from the
 * thunk's (counted_mean): set in their thunks at once, not at the next window's decision,
 * which may be a minute away (a remembered run opens few). */
RT static void counted_means(const uintptr_t *sleds)
{
	for (size_t k = 0; k < learn.ncounted; k++) {
		size_t i = learn.counted[k];
		if (learn.fn[i].counted_hits < LEARN_MEAN_HITS)
			continue;
		uint64_t m = counted_mean(i), was = learn.mean[k];
		uint32_t m32 = m > UINT32_MAX ? UINT32_MAX : (uint32_t)m;
		if (4 * m >= 3 * was && 4 * m <= 5 * was)
			continue;
		if (rb_sleds_count(&i, &m32, 1) != 1)
			continue;
		learn.mean[k] = m32;
		learn_changed();
		char buf[32];
		log_dbg("jitt: sleds: counted %s: %llu ns a call, by perf's samples",
			learn_name(sleds, i, buf, sizeof(buf)),
			(unsigned long long)hal_ticks_to_ns(m32, hal_timer_freq()));
	}
}

/*
 * Whether short function i, kept for its time, can be counted instead of traced (record.h,
 * RB_CALLED: a countdown, one record in RB_CALLED_EVERY calls, no exit, no shadow stack;
 * docs/trace-points.md, "Counted calls"):
 * sampled time, and no entry or exit inside its calls: a leaf in every window so far, or
 * every function it called there out of the trace now, or counted (learn.status; a traced
 * callee's records would land in its caller, and a recursive one calls itself); its mean
 * call into *mean (counted_mean), without a record's cost. A counted callee's records then
 * lie in i's caller, as a call of a function left out does: a chain shows the callee under
 * i's caller, each with its own time.
 */
RT static bool countable(size_t i, uint32_t *mean, long *traced_callee)
{
	const struct learn_fn *f = &learn.fn[i];
	*traced_callee = -1;
	if (!rb_sleds_count || !sleds_sampled || f->calls < LEARN_MIN_CALLS ||
	    (f->parent && learn.edges_full))
		return false;
	for (size_t h = 0; f->parent && h < LEARN_EDGES; h++) {
		uint64_t e = learn.edges[h];
		size_t callee = (uint32_t)e - 1;
		if (e >> 32 == i + 1 && (learn.status[callee] == LEARN_TRACED || callee == i)) {
			*traced_callee = (long)callee;
			return false;
		}
	}
	/* Without a record's cost: one call in RB_CALLED_EVERY writes one (record.h), which
	 * lies before the call's entry, in its caller's time, where a summary takes one trace
	 * point out for each record of a call it made (agent/analysis/summary.c, points_out).
	 * The other calls cost their countdown, in their caller's time too. */
	uint64_t m = counted_mean(i);
	*mean = m > UINT32_MAX ? UINT32_MAX : (uint32_t)m;
	return true;
}

/*
 * The callees of short function i, kept for its time, that would keep it traced in full
 * (countable) though the windows saw them too rarely to judge (LEARN_MIN_CALLS): leaves
 * that no profile ranks (hot: by all the samples, or the recent ones) go out with it:
 * into out, their calls into *calls_out; their number. A rare callee's time is bounded by
 * its caller's, short; it then lies in the counted caller's caller, as any left-out
 * callee's does.
 * memcached's assoc_find calls memcmp only where a key's hash matches: 40 times in the
 * first window (the client's sets), 519 in the next (its gets); in between, 0.5 s of the
 * mixed workload, assoc_find was traced in full for memcmp's sake.
 */
RT static size_t rare_callees_out(const uintptr_t *sleds, size_t i, uint64_t rank_floor,
				  uint64_t share_floor, uint64_t recent_rank, uint64_t recent_share,
				  size_t *out, uint64_t *calls_out)
{
	size_t n = 0;
	for (size_t h = 0; learn.fn[i].parent && !learn.edges_full && h < LEARN_EDGES; h++) {
		uint64_t e = learn.edges[h];
		size_t c = (uint32_t)e - 1;
		const struct learn_fn *f = &learn.fn[c];
		if (e >> 32 != i + 1 || c == i || learn.status[c] != LEARN_TRACED ||
		    f->calls >= LEARN_MIN_CALLS || f->parent ||
		    hot(learn.hits, c, rank_floor, share_floor) ||
		    hot(learn.recent, c, recent_rank, recent_share))
			continue;
		learn.status[c] = LEARN_OUT;
		out[n++] = c;
		*calls_out += f->calls;
		char buf[32], buf2[32];
		log_dbg("jitt: sleds: left out %s: %llu calls, too few to judge, so that %s can "
			"be counted",
			learn_name(sleds, c, buf, sizeof(buf)), (unsigned long long)f->calls,
			learn_name(sleds, i, buf2, sizeof(buf2)));
	}
	return n;
}

/*
 * Which functions to take out, from the windows so far, into out (sled indexes); their
 * count (each window decides afresh: what was out was traced again in it). The trace
 * points' own cost inflates every traced time: a helper of 1% of the program's time can
 * hold a quarter of the traced time (issue 25), and a profile's top then looks small. It
 * is taken out of each call (learn_ring, before the cap) as the times hold it: a traced
 * call's points (learn.point) lie half inside the call's time and half in its caller's
 * (the records are written midway through the thunk), so a call holds half of its own and
 * all of those of the traced calls inside it; its self time, half of its own and half of
 * its direct callees'. Where a call's work is shorter than its points, that estimate errs
 * by as much as the work (the probe is timed back to back, the program's calls overlap
 * with its code): a profile's top of 10% came out at 2% on duktape, so the
 * LEARN_PROTECT_TOP short ones that hold the most stay too, an order the error moves less
 * (duktape's were perf's, both workloads).
 */
RT static size_t learn_decide(const uintptr_t *sleds, size_t nsleds, size_t *out,
			      uint64_t *calls_out, size_t *kept)
{
	uint64_t freq = hal_timer_freq(), point = learn.point, calls = 0;
	*kept = 0;
	*calls_out = 0;
	learn.ncounted = 0;
	uint64_t *selfs = learn.selfs, *ranked = learn.ranked;
	/* The short ones (the candidates), their self times ranked. */
	size_t nshort = 0;
	for (size_t i = 0; i < nsleds; i++) {
		const struct learn_fn *f = &learn.fn[i];
		calls += f->calls;
		selfs[i] = f->self;
		if (f->calls >= LEARN_MIN_CALLS &&
		    hal_ticks_to_ns(f->incl / f->calls, freq) < learn.min_ns)
			ranked[nshort++] = selfs[i];
		else
			selfs[i] = UINT64_MAX; /* not short: stays */
	}
	qsort(ranked, nshort, sizeof(*ranked), cmp_desc);
	uint64_t top_rank = nshort > LEARN_PROTECT_TOP ? ranked[LEARN_PROTECT_TOP - 1] : 0;
	uint64_t total = minus(learn.span, calls * point);
	uint64_t rank_floor = UINT64_MAX, share_floor = UINT64_MAX;
	uint64_t recent_rank = UINT64_MAX, recent_share = UINT64_MAX;
	if (learn.sampled) {
		hot_floors(learn.hits, learn.samples, learn.samples, samples_min(), nsleds,
			   LEARN_HOT_TOP, &rank_floor, &share_floor);
		hot_floors(learn.recent, learn.recent_weight, learn.recent_samples,
			   LEARN_SAMPLES_MIN, nsleds, LEARN_HOT_TOP, &recent_rank, &recent_share);
	}
	bool by_samples = rank_floor != UINT64_MAX;
	size_t nout = 0;
	for (size_t i = 0; i < nsleds && total; i++) {
		const struct learn_fn *f = &learn.fn[i];
		if (selfs[i] == UINT64_MAX)
			continue;
		char buf[32];
		/* A profile's top: by perf's samples, or failing them (or where they cannot see
		 * the function's code: a shared library's memcpy) by the times' estimate */
		bool top = by_samples && !agent_samples_blind(i)
				   ? hot(learn.hits, i, rank_floor, share_floor) ||
					     hot(learn.recent, i, recent_rank, recent_share)
				   : selfs[i] * 100 >= total * LEARN_PROTECT_PCT ||
					     (selfs[i] >= top_rank &&
					      selfs[i] * 100 >= total * LEARN_PROTECT_MIN_PCT);
		log_dbg("jitt: sleds: %s %s: %llu calls, self %llu us of %llu, %llu of %llu "
			"samples", top ? "short, kept for its time" : "left out",
			learn_name(sleds, i, buf, sizeof(buf)), (unsigned long long)f->calls,
			(unsigned long long)hal_ticks_to_ns(selfs[i], freq) / 1000u,
			(unsigned long long)hal_ticks_to_ns(total, freq) / 1000u,
			(unsigned long long)learn.hits[i], (unsigned long long)learn.samples);
		if (top) {
			++*kept;
			learn.counted[learn.ncounted++] = i; /* a candidate, below */
			continue;
		}
		out[nout++] = i;
		*calls_out += f->calls;
	}
	/* Those kept whose calls can be counted, now that what is out is known: callees
	 * before their callers, in as many passes as counted calls nest (one is counted only
	 * once its callees are, so no cycle is). In one pass, in the sleds' order, duktape's
	 * duk__get_own_propdesc_raw came before the duk_hobject_find_entry it calls, and was
	 * traced in full for its sake. */
	size_t n = learn.ncounted, left = n;
	learn.ncounted = 0;
	status_set(out, nout, nsleds);
	for (size_t k = 0; k < n; k++)
		nout += rare_callees_out(sleds, learn.counted[k], rank_floor, share_floor,
					 recent_rank, recent_share, out + nout, calls_out);
	for (bool more = true; more;) {
		more = false;
		for (size_t k = 0; k < left; k++) {
			/* counted[] holds the counted ones, then the candidates left */
			size_t i = learn.counted[learn.ncounted + k];
			long callee;
			uint32_t mean;
			if (!countable(i, &mean, &callee))
				continue;
			learn.counted[learn.ncounted + k] = learn.counted[learn.ncounted];
			learn.counted[learn.ncounted] = i;
			learn.mean[learn.ncounted++] = mean;
			learn.status[i] = LEARN_COUNTED;
			left--, k--;
			more = true;
		}
	}
	for (size_t k = 0; k < n; k++) {
		size_t i = learn.counted[k];
		long callee;
		uint32_t mean;
		char buf[32], buf2[32];
		if (k < learn.ncounted)
			log_dbg("jitt: sleds: counted %s: %llu ns a call",
				learn_name(sleds, i, buf, sizeof(buf)),
				(unsigned long long)hal_ticks_to_ns(learn.mean[k], freq));
		else if (!countable(i, &mean, &callee) && callee >= 0)
			log_dbg("jitt: sleds: traced in full %s: it calls %s, traced",
				learn_name(sleds, i, buf, sizeof(buf)),
				learn_name(sleds, (size_t)callee, buf2, sizeof(buf2)));
	}
	return nout;
}

/*
 * The samples since the last step: perf follows the traced threads (a sample every
 * LEARN_SAMPLE_FAST_NS of CPU time until the profile can rank, every LEARN_SAMPLE_NS
 * after: in a VM where a sample costs the thread 25-36 us, half its time for the first 5 ms,
 * 1.2-1.8% after; docs/runtime.md), the new ones are counted, and between windows a
 * function taken out that is now among a profile's top is put back at once (a new phase's
 * hot helper: the next window may be a minute away).
 * A window samples no faster: its samples, weighed by the CPU time each stands for, were
 * 7 ms of a recent profile of 512 ms, yet at a sample every 50 us they were 3,700-4,000 of
 * the 5,800 a SQLite --memdb run took (some 0.1 s of its 2.3 s).
 * A remembered run samples fast too until its own samples weigh as much as the memory's
 * (LEARN_MEMORY_SAMPLES): what it left out may be this run's top from the start. At a
 * sample a ms, SQLite's strcspn, 20-25% of the file workload's CPU time and left out by a
 * memory of --memdb, was put back 185 to 460 ms into the run, and a trace taken before
 * had no strcspn at all (b64). Either is fast for LEARN_FAST_MAX_MS of the threads' CPU
 * time at most (fast_spent).
 */
RT static void learn_sample(const uintptr_t *sleds, size_t nsleds, const pid_t *tids, int ntids)
{
	if (!learn.sampled)
		return;
	if (!fast_spent()) { /* the threads' CPU time since the last step, if sampled fast */
		uint64_t cpu = agent_samples_cpu_ns();
		if (learn.period_ns == LEARN_SAMPLE_FAST_NS && cpu > learn.cpu_seen_ns)
			learn.fast_cpu_ns += cpu - learn.cpu_seen_ns;
		learn.cpu_seen_ns = cpu; /* less when a thread ended: counted from there */
	}
	/* Fast only while the next step is near (a busy thread's): the threads of an app that
	 * went idle meanwhile, which this thread then looks at every second at most, would
	 * run fast till then once they woke (memcached's worker, idle until its client came,
	 * ran 60-110 ms of its CPU time sampled fast) */
	bool fast = learn.poll_ms <= LEARN_POLL_MS && !fast_spent() &&
		    (learn.samples < LEARN_SAMPLES_MIN ||
		     (learn.remembered && learn.run_samples < LEARN_MEMORY_SAMPLES));
	uint64_t period = fast ? LEARN_SAMPLE_FAST_NS : LEARN_SAMPLE_NS;
	int e = agent_samples_follow(tids, ntids, period);
	if (e) {
		log_info("jitt: sleds: no samples of the traced threads (%s): a profile's top is "
			 "estimated from the windows' times", strerror(-e));
		agent_samples_stop();
		learn.sampled = false;
		return;
	}
	uint64_t got = samples_take(); /* taken at the period perf was told before */
	if (period != learn.period_ns && agent_log_enabled(AGENT_LOG_DEBUG)) /* a read each */
		log_dbg("jitt: sleds: perf's samples every %llu us (%llu in the program; %llu ms "
			"of the threads' CPU time so far)", (unsigned long long)period / 1000,
			(unsigned long long)learn.run_samples,
			(unsigned long long)agent_samples_cpu_ns() / 1000000);
	learn.period_ns = period;
	if (learn.samples > LEARN_SAMPLES_KEEP) { /* the recent past weighs more */
		for (size_t i = 0; i < nsleds; i++)
			learn.hits[i] /= 2;
		learn.samples /= 2;
	}
	if (learn.recent_weight > LEARN_RECENT_SAMPLES * (LEARN_SAMPLE_NS / LEARN_SAMPLE_FAST_NS)) {
		for (size_t i = 0; i < nsleds; i++)
			learn.recent[i] /= 2;
		learn.recent_weight /= 2;
		learn.recent_samples /= 2;
	}
	if (!learn.window)
		counted_means(sleds);
	if (learn.window || !learn.nout || !got)
		return;
	/* By the whole profile, or by its last few hundred samples: a new phase's top had to
	 * outweigh the phases before it (SQLite's strcspn, 20-25% of the file workload's
	 * CPU time from one phase on, was put back a second later, at 558 of 3,839 samples).
	 * Among fewer than a window keeps (LEARN_PUTBACK_TOP): one just under the window's
	 * floor crosses it back and forth as the samples come. */
	uint64_t rank_floor, share_floor, recent_rank, recent_share;
	hot_floors(learn.hits, learn.samples, learn.samples, samples_min(), nsleds,
		   LEARN_PUTBACK_TOP, &rank_floor, &share_floor);
	hot_floors(learn.recent, learn.recent_weight, learn.recent_samples, LEARN_SAMPLES_MIN,
		   nsleds, LEARN_PUTBACK_TOP, &recent_rank, &recent_share);
	status_set(learn.out, learn.nout, nsleds);
	bool put_back = false;
	for (size_t k = 0; k < learn.nout; k++) {
		size_t i = learn.out[k];
		if (!hot(learn.hits, i, rank_floor, share_floor) &&
		    !hot(learn.recent, i, recent_rank, recent_share))
			continue;
		char buf[32];
		uint32_t *mean = &learn.mean[learn.ncounted];
		learn.status[i] = LEARN_TRACED; /* it may call itself */
		long callee;
		bool count = countable(i, mean, &callee);
		if ((count ? rb_sleds_count(&i, mean, 1) : rb_sleds_trace(&i, 1, true)) < 0) {
			learn.status[i] = LEARN_OUT;
			continue; /* stays out: the next window tries them all again */
		}
		if (count) {
			learn.counted[learn.ncounted++] = i;
			learn.status[i] = LEARN_COUNTED;
		}
		learn_changed();
		log_dbg("jitt: sleds: put back %s%s: %llu of %llu samples, %llu%% of the last %llu",
			learn_name(sleds, i, buf, sizeof(buf)), count ? ", counted" : "",
			(unsigned long long)learn.hits[i], (unsigned long long)learn.samples,
			(unsigned long long)(learn.recent[i] * 100 /
					     (learn.recent_weight ? learn.recent_weight : 1)),
			(unsigned long long)learn.recent_samples);
		learn.out[k--] = learn.out[--learn.nout];
		put_back = true;
	}
	if (put_back)
		measured_publish(sleds, nsleds);
}

/* The decision from the windows so far (learn_decide), applied: the short functions out of
 * the trace until the next window, which is scheduled. */
RT static void learn_apply(const uintptr_t *sleds, size_t nsleds, uint64_t now)
{
	uint64_t freq = hal_timer_freq(), calls;
	size_t kept, before = learn.nout;
	learn.pending_ns = 0;
	learn_changed();
	learn.nout = learn_decide(sleds, nsleds, learn.out, &calls, &kept);
	long done = learn.nout ? rb_sleds_trace(learn.out, learn.nout, false) : 0;
	if (done < 0) {
		log_err("jitt: sleds: cannot take functions out: %s", strerror((int)-done));
		learn_stop(); /* every function stays traced */
		return;
	}
	long counted = learn.ncounted ? rb_sleds_count(learn.counted, learn.mean, learn.ncounted)
				      : 0;
	if (counted < 0) {
		log_err("jitt: sleds: cannot count calls: %s", strerror((int)-counted));
		learn.ncounted = 0; /* they stay traced */
		counted = 0;
	}
	measured_publish(sleds, nsleds);
	if (!learn.partial) { /* a partial window leaves the schedule as it was */
		learn.probe_ns = now + (uint64_t)learn.probe_ms * 1000000u;
		learn.probe_ms = learn.probe_ms * 2 > LEARN_PROBE_MAX_MS ? LEARN_PROBE_MAX_MS
									 : learn.probe_ms * 2;
	}
	learn.rate_ns = 0; /* measured anew from the next look */
	learn.poll_ms = LEARN_LOOK_MS;
	learn.next_ns = now + (uint64_t)learn.poll_ms * 1000000u;
	/* The first ones, then the full windows that changed what is out (a phase's own
	 * windows come one a phase: SQLite's speedtest1 opens a dozen) */
	bool info = learn.windows <= LEARN_LOG_WINDOWS || (!learn.partial && learn.nout != before);
	agent_log(info ? AGENT_LOG_INFO : AGENT_LOG_DEBUG,
		  "jitt: sleds: learned from %llu ms of %d thread(s) (window %u%s, %llu ms in all, "
		  "a call's points %llu ns, %llu of them within it): %ld functions left out (%llu "
		  "calls under %u ns each), %zu as short kept for their time, %ld of them counted "
		  "(%s%llu samples)",
		  (unsigned long long)hal_ticks_to_ns(learn.last_span, freq) / 1000000u,
		  learn.last_threads, learn.windows, learn.partial ? ", for new functions" : "",
		  (unsigned long long)hal_ticks_to_ns(learn.span, freq) / 1000000u,
		  (unsigned long long)hal_ticks_to_ns(learn.point, freq),
		  (unsigned long long)hal_ticks_to_ns(learn.inner, freq), done,
		  (unsigned long long)calls, learn.min_ns, kept, counted,
		  learn.samples >= samples_min() ? "a profile of " : "too few to rank: ",
		  (unsigned long long)learn.samples);
}

/* What a window traces, traced: for a full one the functions out, for both the counted ones
 * (the window times their calls, and their thunks' means are rewritten only while unused).
 * False when the sleds could not be set: learning stopped. */
RT static bool window_traced(void)
{
	long err = learn.partial ? 0 : rb_sleds_trace(learn.out, learn.nout, true);
	if (err >= 0)
		err = rb_sleds_trace(learn.counted, learn.ncounted, true);
	if (err < 0) {
		log_err("jitt: sleds: cannot put functions back: %s", strerror((int)-err));
		learn_stop();
	}
	return err >= 0;
}

RT enum agent_learn_step agent_sleds_learn_step(uint64_t now_ns, uint64_t records,
					     const pid_t *tids, int ntids)
{
	size_t nsleds = 0;
	const uintptr_t *sleds = rb_sleds_list ? rb_sleds_list(&nsleds) : NULL;
	if (!learn.on || now_ns < learn.next_ns)
		return AGENT_LEARN_NONE;
	if (!learn.ready && !learn_init(sleds, nsleds)) {
		learn_stop();
		return AGENT_LEARN_NONE;
	}
	learn_sample(sleds, nsleds, tids, ntids);
	learn_save(now_ns, false);
	if (learn.pending_ns) { /* a window's decision, waiting for samples */
		if (!learn.sampled || learn.samples >= samples_min() ||
		    now_ns - learn.pending_ns >= LEARN_PENDING_MAX_MS * 1000000ull)
			learn_apply(sleds, nsleds, now_ns);
		else
			learn.next_ns = now_ns + (uint64_t)learn.poll_ms * 1000000u;
		return AGENT_LEARN_NONE;
	}
	if (!learn.window) {
		bool scheduled = now_ns >= learn.probe_ns, fresh = learn.fresh;
		learn.fresh = false;
		if (!scheduled && !fresh)
			return look_due(now_ns, records) ? AGENT_LEARN_LOOK : AGENT_LEARN_NONE;
		learn.partial = !scheduled;
		if (learn.partial)
			learn.fresh_ns = now_ns;
		if (!window_traced())
			return AGENT_LEARN_NONE;
		learn_window_open(true);
		/* When it opens: it closes only when this thread reads it, which a busy machine
		 * can delay well past the few ms it takes to fill */
		log_dbg("jitt: sleds: window %u opens%s", learn.windows + 1,
			learn.partial ? ", for new functions" : "");
		agent_sleds_point_cost();
		learn.poll_ms = learn.partial ? LEARN_POLL_FRESH_MS : LEARN_POLL_MS;
		learn.opened_ns = now_ns;
		learn.next_ns = now_ns + (uint64_t)learn.poll_ms * 1000000u;
		return AGENT_LEARN_BEGIN;
	}
	if (now_ns - learn.opened_ns >= LEARN_POLL_FAST_MS * 1000000ull)
		learn.poll_ms = learn.poll_ms * 2 > LEARN_POLL_MAX_MS ? LEARN_POLL_MAX_MS
								      : learn.poll_ms * 2;
	learn.next_ns = now_ns + (uint64_t)learn.poll_ms * 1000000u;
	return AGENT_LEARN_READ;
}

RT bool agent_sleds_window_kept(pid_t tid, struct rb_ring_view *v)
{
	pid_t by;
	size_t kept;
	if (!learn.window || !rb_sleds_window_ended(&by, &kept) || by != tid || !kept)
		return false;
	*v = (struct rb_ring_view){ .slots = learn.keep, .nslots = kept, .stored = kept,
				    .end = 0, .valid = kept, .word_size = sizeof(void *) };
	return true;
}

RT uint64_t agent_sleds_window_copy(uint64_t slots, uint64_t since)
{
	uint64_t full = slots / AGENT_LEARN_WINDOW_PART;
	pid_t by;
	size_t kept;
	if (rb_sleds_window_ended(&by, &kept)) /* its records in all: the window's are there */
		return since < slots ? since : slots;
	if (!learn.partial) /* all since it opened: a quarter of a ring alone missed a test
			     * program's leaf, which comes in bursts */
		return since >= full ? since : 0;
	/* The newest: its new functions are dense (LEARN_FRESH_PCT of what a look saw), and
	 * all since it opened were 40,000 records on speedtest1, in the ms or two the control
	 * thread took to come back */
	uint64_t want = LEARN_FRESH_RECORDS < full ? LEARN_FRESH_RECORDS : full;
	return since >= want ? want : 0;
}

/* Whether function f is new to learning and worth a window: no window judged it (fewer
 * than LEARN_MIN_CALLS calls ended in them all), fewer than 2 saw it entered (a bytecode
 * loop entered once and never left in a window has no ended call to be judged by: it is
 * not new), and its entries in the look are LEARN_FRESH_FN_MIN at
 * least (its trace points cost, where a rare one's do not). */
RT static bool fresh_fn(const struct learn_fn *f)
{
	return f->look >= LEARN_FRESH_FN_MIN && f->calls < LEARN_MIN_CALLS && f->windows < 2;
}

/*
 * Between windows: the newest records of the traced threads (views, n of them, each a
 * copy of a ring's newest slots: rb_peek_newest). Where LEARN_FRESH_PCT of their calls are
 * to functions new to learning (fresh_fn), a partial window opens at the next step. The
 * records are read by their tags alone (record_back): the decoder would want a time anchor,
 * which 1,024 slots seldom hold, and only the entries' ids are needed; once to count each
 * function's entries, once to sum the new ones'. A counted call is judged already: its
 * record is not an entry.
 */
RT void agent_sleds_look(const struct rb_ring_view *views, int n)
{
	static uint32_t looks;
	if (!learn.on || learn.window || !learn.ready)
		return;
	uint64_t entries = 0, fresh = 0;
	looks++;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < n; i++) {
			const struct rb_ring_view *v = &views[i];
			if (!rb_ring_view_ok(v))
				continue;
			uint64_t at = v->end, left = v->valid, tag;
			while (record_back(v, &at, &left, &tag)) {
				long idx = rb_tag_low(tag) < RB_FIRST_ID ? -1 : find_id(rb_tag_low(tag));
				if (idx < 0)
					continue;
				struct learn_fn *f = &learn.fn[idx];
				if (pass == 1) {
					entries++;
					fresh += fresh_fn(f);
				} else if (f->look_mark != looks) {
					f->look_mark = looks, f->look = 1;
				} else {
					f->look++;
				}
			}
		}
	if (fresh < LEARN_FRESH_MIN || fresh * 100 < entries * LEARN_FRESH_PCT)
		return;
	log_dbg("jitt: sleds: %llu of the newest %llu calls are of functions no window judged: a "
		"window for them", (unsigned long long)fresh, (unsigned long long)entries);
	learn.fresh = true;
	learn.next_ns = agent_now_ns();
}

RT bool agent_sleds_may_learn(const struct agent_config *cfg)
{
	size_t nsleds = 0;
	if (rb_sleds_list)
		(void)rb_sleds_list(&nsleds);
	return nsleds && strcmp(cfg->sleds, "off") && !cfg->sleds_exclude[0] &&
	       cfg->sleds_learn_ns && rb_sleds_trace && rb_sleds_window_open;
}

RT bool agent_sleds_first_decided(void)
{
	return !learn.on || learn.remembered || (learn.windows && !learn.pending_ns);
}

RT void agent_sleds_learn_report(void)
{
	if (learn.on && agent_log_enabled(AGENT_LOG_DEBUG)) {
		struct rb_ring *rings[64];
		uint64_t records = 0;
		rb_lock();
		int n = rb_rings(rings, 64);
		for (int i = 0; i < n; i++)
			records += rb_ring_records(rings[i]);
		rb_unlock();
		log_dbg("jitt: sleds: learning ends: %u windows, %u of them for new functions, %u "
			"ended by their threads; the traced threads wrote %llu slots, %llu of them in "
			"the windows; perf's samples: %llu in the program, fast for %llu ms of the "
			"threads' %llu ms of CPU time",
			learn.windows, learn.partials, learn.ended_by_thread,
			(unsigned long long)records, (unsigned long long)learn.window_records,
			(unsigned long long)learn.run_samples,
			(unsigned long long)learn.fast_cpu_ns / 1000000,
			(unsigned long long)(learn.sampled ? agent_samples_cpu_ns() : 0) / 1000000);
	}
}

RT bool agent_sleds_memory_unsaved(void)
{
	return atomic_load(&memory_unsaved);
}

RT void agent_sleds_exit_save(void)
{
	if (learn.on && learn.ready && learn.dirty) {
		learn_save(agent_now_ns(), true);
		if (!learn.dirty)
			log_dbg("jitt: sleds: the memory saved as the runtime stops");
	}
}

RT void agent_sleds_learn_stop(void)
{
	agent_sleds_learn_report();
	learn_save(agent_now_ns(), true);
	learn_stop();
}

RT void agent_sleds_learn(const struct rb_ring_view *views, int n)
{
	size_t nsleds = 0;
	const uintptr_t *sleds = rb_sleds_list ? rb_sleds_list(&nsleds) : NULL;
	if (!learn.on || !learn.window || !learn.ready)
		return;
	/* The window's records are copied: the rest go back to sampled time now, not after
	 * the decode (a ms and more, every record timed meanwhile) */
	pid_t by;
	size_t kept;
	bool ended = rb_sleds_window_ended(&by, &kept);
	rb_sleds_window_close();
	learn.window = false;
	agent_sleds_point_cost();
	uint64_t freq = hal_timer_freq(), span = 0;
	uint64_t cap = hal_muldiv_u64((uint64_t)learn.min_ns * LEARN_CAP_TIMES, freq, 1000000000u);
	measures_under(nsleds); /* the decision the sampled rings hold */
	for (int i = 0; i < n; i++)
		span += learn_ring(&views[i], learn.fn, learn.point, cap ? cap : 1);
	uint64_t now = agent_now_ns();
	if (ended && !span) {
		/* Nothing of it was left to read (no copy aside, and the rings overwrote it):
		 * its thread put the last decision back, which stays; a full window next */
		log_dbg("jitt: sleds: window %u: its records were gone when read", learn.windows + 1);
		learn.probe_ns = now;
		learn.next_ns = now + LEARN_POLL_MS * 1000000ull;
		return;
	}
	if (ended) {
		/* Its thread put back out what the window traced: traced again, as a window
		 * this thread closes leaves them, for the decision to start from */
		learn.ended_by_thread++;
		if (!window_traced())
			return;
	}
	learn.span += span;
	learn.last_span = span;
	learn.last_threads = n;
	learn.windows++;
	learn.partials += learn.partial;
	for (int i = 0; i < n; i++)
		learn.window_records += views[i].valid;
	/* Too few samples to rank a profile's top yet (a thread that spends most of its time in
	 * the kernel, as a server's does, gives few of its own code): every function stays
	 * traced, as the window left them, until they come (agent_sleds_learn_step). */
	if (learn.sampled && learn.samples < samples_min()) {
		learn.pending_ns = now;
		learn.poll_ms = LEARN_POLL_MS;
		learn.next_ns = now + (uint64_t)learn.poll_ms * 1000000u;
		return;
	}
	learn_apply(sleds, nsleds, now);
}
