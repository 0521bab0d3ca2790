#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The call-heavy cost on a real program (tests/bench-real-programs.sh builds it; issue 25):
for each workload, a set of variants (its rows) run in rounds, each round all of them in a
rotated order so that the machine's load falls on all alike. A row is a binary (built by
its method: the program's own build, with or without the SDK, with extra compile options)
and how it runs: plain (uninstrumented), off (instrumented, no thread traced) or on (its
thread traced). Each run is timed by its process's CPU time (tests/bench_cpu.py; a server's
over a fixed amount of client work); the fastest run is the least disturbed, the median says
how steady. Every run must print plain's output, and every traced run must have recorded
(`jitt status`'s records, watched: a trigger would stop its tracing while the trace is
written). After the rounds, each traced row runs once more, untimed, with a `jitt trigger`
a quarter second of its CPU time in, which must save its trace.

For each traced row, from that trace (`jitt summarize --json`): trace points per
second of the traced thread's running time (records over the trace's span less the time the
thread was preempted or blocked), and the ms of the run one MiB of records holds (the span
less the preempted time: the machine's load is not the program's). And the summary's truth:
`perf record` of the plain build, its top 5 self time in the program's own code (its busiest
thread's), next to the top 5 self time of the traced row's traces (its sample run's trace,
added up by `jitt exclude`), and whether perf's top 3 are in the traces' top 10.

With --collect DIR it measures nothing: it runs the row "traced" of each workload with a
trigger every quarter second of its CPU time and keeps the traces in DIR/WORKLOAD/ (what
`jitt exclude` learns from).

Variants come in a file, one a line, tab-separated: WORKLOAD ROW MODE BINARY METHOD
[SETTINGS], SETTINGS being settings lines for that row only, separated by ";" (a sleds
build's list: sleds_exclude = FILE; a learning memory: sleds_memory = DIR, which each run
finds as DIR.trained holds it, where there is one).
"""
import collections
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cpu  # noqa: E402 (beside this file)

p = argparse.ArgumentParser()
for a in ("--run", "--jitt", "--label"):
    p.add_argument(a, required=True)
p.add_argument("--variants", help="the variants' file (above)")
p.add_argument("--plain", help="without --variants: the rows plain, off and traced of an "
               "interpreter traced by trace_main (the first form of this script)")
p.add_argument("--traced")
p.add_argument("workloads", nargs="*", help="NAME=ARGS, as --workload")
p.add_argument("--reps", type=int, default=5)
p.add_argument("--workload", action="append", default=[],
               help="NAME=ARGS: the program's arguments, split on spaces; {port} is a free "
               "port, {db} a file that is removed before and after each run")
p.add_argument("--client", action="append", default=[],
               help="NAME=ARGS: a client run beside each run of workload NAME (a server's)")
p.add_argument("--on-conf", action="append", default=[], help="a settings line when traced")
p.add_argument("--off-conf", action="append", default=[], help="a settings line when off")
p.add_argument("--off-env", action="append", default=[], help="NAME=VALUE when off")
p.add_argument("--ignore", help="a regular expression taken out of every output line "
               "before the outputs are compared (timings)")
p.add_argument("--thread", help="time each run by this thread's CPU time, as its client "
               "prints it (\"thread-cpu NAME NS\" lines: tests/bench_mc_client.py), not its "
               "process's")
p.add_argument("--perf", action="store_true", help="the summary's truth, against perf")
p.add_argument("--collect", metavar="DIR")
p.add_argument("--collect-runs", type=int, default=2)
p.add_argument("--ratios", metavar="FILE", help="also write WORKLOAD ROW RATIO lines: each "
               "row's median CPU time over plain's (what `jitt exclude --ratio` takes)")
o = p.parse_args()

run = o.run
workloads = [w.partition("=")[::2] for w in o.workload + o.workloads]
clients = dict(c.partition("=")[::2] for c in o.client)
variants = {}  # workload: [(row, mode, binary, method)]
row_settings = {}  # (workload, row): settings lines of that row only
if not o.variants:
    if not (o.plain and o.traced and workloads):
        p.error("--variants, or --plain, --traced and workloads")
    for w, _ in workloads:
        variants[w] = [("plain", "plain", o.plain, "plain"), ("off", "off", o.traced, "SDK"),
                       ("traced", "on", o.traced, "SDK")]
    o.on_conf = o.on_conf or ["trace_main = 1"]
    o.off_conf = o.off_conf or ["trace_main = 0"]
for i, line in enumerate(open(o.variants, errors="replace") if o.variants else [], 1):
    if line.strip():
        fields = line.rstrip("\n").split("\t")
        if len(fields) not in (5, 6):
            sys.exit("%s:%d: %d fields, not WORKLOAD ROW MODE BINARY METHOD [SETTINGS] "
                     "(tab-separated)" % (o.variants, i, len(fields)))
        w, row, mode, binary, method = fields[:5]
        if len(fields) == 6 and fields[5].strip():
            row_settings[(w, row)] = [x.strip() for x in fields[5].split(";") if x.strip()]
        if mode not in ("plain", "off", "on"):
            sys.exit("%s:%d: %s: mode %r is not plain, off or on" % (o.variants, i, row, mode))
        if w not in dict(workloads):
            sys.exit("%s:%d: no workload %r (--workload)" % (o.variants, i, w))
        variants.setdefault(w, []).append((row, mode, binary, method))
for mode, extra in (("off", o.off_conf), ("on", o.on_conf)):
    bench_cpu.settings("%s/%s.conf" % (run, mode), "%s/data-%s" % (run, mode),
                       "%s/sock" % run, extra)
os.makedirs("%s/db" % run, exist_ok=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_db(db):
    for suffix in ("", "-journal", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)


def one(w, row, mode, binary, every=None, prefix=(), keep=None, watch=False, perf_data=None,
        niced=True):
    """Runs a variant once: (bench_cpu.Run, its output, the traces it saved); perf_data:
    with `perf record` following it into that file. niced: the binary is started by `nice`
    (else the prefix, which then must start it niced)."""
    port, db = str(free_port()), "%s/db/%s.db" % (run, row)
    clean_db(db)
    args = [a.replace("{port}", port).replace("{db}", db) for a in dict(workloads)[w].split()]
    client = [a.replace("{port}", port) for a in clients[w].split()] if w in clients else None
    env = dict(os.environ)
    env.pop("JITT_CONFIG", None)
    conf = None
    if mode != "plain":
        conf = env["JITT_CONFIG"] = "%s/%s.conf" % (run, mode)
        if (w, row) in row_settings:
            conf = env["JITT_CONFIG"] = "%s/%s-%s-%s.conf" % (run, mode, w, row)
            bench_cpu.settings(conf, "%s/data-%s" % (run, mode), "%s/sock" % run,
                               (o.off_conf if mode == "off" else o.on_conf) +
                               row_settings[(w, row)])
    if mode == "off":
        env.update(e.partition("=")[::2] for e in o.off_env)
    for line in row_settings.get((w, row), []):
        # A learning memory trained beforehand (DIR.trained): each run starts from it as
        # it was, not from what the runs before it added
        key, _, value = (x.strip() for x in line.partition("="))
        if key == "sleds_memory" and os.path.isdir(value + ".trained"):
            shutil.rmtree(value, ignore_errors=True)
            shutil.copytree(value + ".trained", value)
    out, cout = "%s/%s.out" % (run, row), "%s/%s.client" % (run, row)
    with open(out, "w") as f, open(cout, "w") as c:
        r = bench_cpu.run(list(prefix) + ["nice"] * niced + [binary] + args, env,
                          "%s/db" % run, f,
                          jitt=o.jitt if mode == "on" else None,
                          conf=conf if mode == "on" else None, every=every,
                          client=client, client_out=c, watch=watch, perf_data=perf_data)
    clean_db(db)
    traces = bench_cpu.take_traces("%s/data-%s" % (run, mode), keep) if mode != "plain" else []
    client_text = open(cout, errors="replace").read()
    if o.thread:  # the thread's time, not the process's; the lines are no result to compare
        ns = [int(g) for g in re.findall(r"^thread-cpu %s (\d+)$" % re.escape(o.thread),
                                         client_text, re.M)]
        if len(ns) == 1:
            r.cpu = ns[0] / 1e9
        else:
            r.problem = r.problem or "%d threads named %s in the client's report" % (
                len(ns), o.thread)
        client_text = re.sub(r"(?m)^thread-cpu .*\n", "", client_text)
    text = open(out, errors="replace").read() + client_text
    if o.ignore:
        text = "\n".join(re.sub(o.ignore, "", ln) for ln in text.split("\n"))
    return r, text, traces


def base(name):
    """A function's name in the source: GCC's clones and LTO's statics (foo.isra.0,
    foo.constprop.0, foo.part.0, foo.cold, foo.lto_priv.0) are all foo."""
    return name.split(".", 1)[0]


if o.collect:
    for w, _ in workloads:
        tr = [v for v in variants[w] if v[0] == "traced"]
        if not tr:
            sys.exit("%s: no row \"traced\" to collect traces of" % w)
        n, bad = 0, []
        for i in range(o.collect_runs):
            r, _, traces = one(w, "traced", "on", tr[0][2], every=bench_cpu.TRIGGER_AFTER,
                               keep="%s/%s" % (o.collect, w))
            n += len(traces)
            if r.status or r.problem:
                bad.append("run %d: wait status %d%s" % (i + 1, r.status,
                                                         ", " + r.problem if r.problem else ""))
        print("  %s: %d traces of the traced build in %d runs (a trigger every %.2f s)%s" %
              (w, n, o.collect_runs, bench_cpu.TRIGGER_AFTER, "; " + "; ".join(bad) if bad else ""))
        if bad or not n:
            sys.exit(1)
    sys.exit(0)


def detector(trace):
    """The detector that persisted a trace ("external" for `jitt trigger`), or "?"."""
    s = subprocess.run([o.jitt, "summarize", trace, "--json"], capture_output=True, text=True)
    try:
        return json.loads(s.stdout).get("detector") or "?"
    except ValueError:
        return "?"


def summaries(traces):
    """Each trace's `jitt summarize --json`, and whether its ring had wrapped (`jitt
    decode`'s header: laps): if not, the trace holds the run since tracing began."""
    got = []
    for t in traces:
        s = subprocess.run([o.jitt, "summarize", t, "--json"], capture_output=True, text=True)
        if s.returncode:
            continue
        wrapped = None
        d = subprocess.Popen([o.jitt, "decode", t], stdout=subprocess.PIPE, text=True)
        for line in d.stdout:
            g = re.search(r": ring of \d+ slots, (\d+) laps", line)
            if g:
                wrapped = int(g.group(1)) > 0
                break
        d.kill()
        d.wait()
        got.append((t, (json.loads(s.stdout), wrapped)))
    return got


# perf's sampling rate: a quick run is 0.1 s of CPU, and its top 3 needs more than the 200
# samples 2000 Hz gives it (multiget's first function went from 2% to 24% between two runs at
# 2000 Hz). Below the kernel's perf_event_max_sample_rate (100000 by default).
PERF_HZ = 20000


def perf_top(w, binary):
    """perf's self time in the plain build's own code, [(share of all samples, name)],
    and a note; or None and why not."""
    data = "%s/perf-%s.data" % (run, w)
    if not shutil.which("perf"):
        return None, "perf is not installed (make deps)"
    r, _, _ = one(w, "perf", "plain", binary,
                  prefix=("perf", "record", "-F", str(PERF_HZ), "-q", "-o", data, "--"))
    if r.status or not os.path.exists(data):
        par = open("/proc/sys/kernel/perf_event_paranoid").read().strip()
        return None, ("perf record failed (wait status %d; perf_event_paranoid %s): %s" %
                      (r.status, par, open("%s/perf.out" % run, errors="replace").read()
                       .strip().replace("\n", " ")[:200]))
    comm = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "comm",
                           "--stdio", "-q"], capture_output=True, text=True).stdout.split()
    busiest = comm[1] if len(comm) > 1 else None
    # The busiest thread's samples only: a server's other threads are not the work a
    # summary of its traced worker is about.
    rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "dso,sym",
                          "--stdio", "-q", "-n", "--percentage", "relative"] +
                         (["--comms", busiest] if busiest else []), capture_output=True, text=True)
    os.unlink(data)
    shares, own, samples = {}, 0.0, 0
    for line in rep.stdout.splitlines():
        g = re.match(r"\s*([0-9.]+)%\s+(\d+)\s+(\S+)\s+\[(.)\]\s+(\S+)", line)
        if g and g.group(3) == os.path.basename(binary):
            pct, name = float(g.group(1)), base(g.group(5))
            shares[name] = shares.get(name, 0.0) + pct
            own += pct
            samples += int(g.group(2))
    top = sorted(((v, k) for k, v in shares.items()), reverse=True)
    return top, "thread %s, %s of all samples; %.0f%% of its samples, %d, in the program's " \
        "own code" % (busiest or "?", comm[0] if comm else "?", own, samples)


# The charged profile's rate: each sample copies 8 KiB of stack for perf to unwind.
CHARGED_HZ = 4000


def perf_charged(w, row, mode, binary):
    """perf's self time charged as a summary's is: each sample of the busiest thread to the
    innermost function of the program's own on its stack (unwound by DWARF, the C library's
    and the kernel's frames included), so that a system call's time, and a C library call's
    where the program has no copy of its own, is its caller's. Of a run of the row given
    (the instrumented build with tracing off, where there is one: its functions are the
    traced build's, where the plain build inlines some that the traces name, as memcached's
    tcp_sendmsg into transmit). A tail call leaves no frame to unwind: its time is charged
    to the caller's caller (memcached's tcp_sendmsg ends in a jump to sendmsg, and perf
    names transmit where the trace, whose exit of tcp_sendmsg comes when sendmsg returns,
    names tcp_sendmsg). A frame counts only if its function holds trace points
    (instrumented): a static C library's functions have none, and a summary gives their
    time to their caller (speedtest1's musl: its system call wrapper sccp had 7.8%).
    [(share of the thread's samples, name)] and their number, or None and why not."""
    data = "%s/perf-charged-%s.data" % (run, w)
    # perf itself niced, the program its child: with the program started by `nice` (an exec
    # after perf's), perf unwound no sample out of the C library in two runs of three
    # (__libc_sendmsg, pthread_mutex_lock: 31-34% of memcached's worker's samples reached
    # its code), and all of them in four runs without `nice`.
    r, _, _ = one(w, row, mode, binary, niced=False,
                  prefix=("nice", "perf", "record", "-F", str(CHARGED_HZ), "--call-graph",
                          "dwarf,8192", "-q", "-o", data, "--"))
    if r.status or not os.path.exists(data):
        return None, "perf record --call-graph dwarf failed (wait status %d)" % r.status
    script = subprocess.Popen(["perf", "script", "-i", data, "-F", "comm,tid,ip,sym,dso"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              errors="replace")
    exe = os.path.basename(binary)
    points = instrumented(binary, row_settings.get((w, row), ()))
    by_comm = {}  # comm: {name: samples}
    comm, charged, found = None, None, False
    for line in script.stdout:
        if not line.strip():
            continue
        if not line[0].isspace():  # a sample's first line: its thread
            if comm is not None:
                d = by_comm.setdefault(comm, {})
                d[charged] = d.get(charged, 0) + 1
            # unwound to no function with trace points: the kernel's or the C library's
            # alone, or a stack perf could not unwind (a static musl's system calls)
            comm, charged = line.split()[0], "(no traced function on the unwound stack)"
            found = False
            continue
        g = re.match(r"\s*[0-9a-f]+ (\S+?)(?:\+0x[0-9a-f]+)? \((.*)\)$", line.rstrip())
        if g and not found and os.path.basename(g.group(2)) == exe and \
                g.group(1) != "[unknown]" and (not points or base(g.group(1)) in points):
            charged, found = base(g.group(1)), True
    if comm is not None:
        d = by_comm.setdefault(comm, {})
        d[charged] = d.get(charged, 0) + 1
    script.wait()
    os.unlink(data)
    if not by_comm:
        return None, "perf script gave no samples"
    busiest = max(by_comm, key=lambda c: sum(by_comm[c].values()))
    d = by_comm[busiest]
    n = sum(d.values())
    return sorted(((100.0 * v / n, k) for k, v in d.items()), reverse=True), n


def trace_head(trace):
    """The trace's freeze on CLOCK_MONOTONIC, in ns (its header's reference time,
    docs/trace-format.md), and its first thread's id (`jitt decode`), or None."""
    with open(trace, "rb") as f:
        ref = struct.unpack_from("<Q", f.read(48), 40)[0]
    d = subprocess.Popen([o.jitt, "decode", trace], stdout=subprocess.PIPE, text=True)
    tid = None
    for line in d.stdout:
        g = re.match(r"thread (\d+) ", line)
        if g:
            tid = g.group(1)
            break
    d.kill()
    d.wait()
    return ref, tid


def own_names(binary):
    """The functions a build defines (nm), GCC's clones by their source name: the plain
    build's are the program's own, without jitt's runtime."""
    nm = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True)
    return {base(ln.split()[-1]) for ln in nm.stdout.splitlines()
            if len(ln.split()) == 3 and ln.split()[1] in "tTwW"}


def perf_moment(data, trace, summary, binary, names):
    """perf's view of a trace's moment: the samples `perf record` took of the traced thread
    over the trace's span (its span's end is the freeze), in the program's own functions
    (names), [(share of the thread's samples then, name)], and the number of samples; or
    None and why not."""
    if not os.path.exists(data):
        return None, "perf recorded nothing"
    ref, tid = trace_head(trace)
    start = ref - summary["trace"]["ns"]
    rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "dso,sym",
                          "--stdio", "-q", "-n", "--percentage", "relative",
                          "--time", "%.6f,%.6f" % (start / 1e9, ref / 1e9)] +
                         (["--tid", tid] if tid else []), capture_output=True, text=True)
    shares, samples = {}, 0
    for line in rep.stdout.splitlines():
        g = re.match(r"\s*([0-9.]+)%\s+(\d+)\s+(\S+)\s+\[(.)\]\s+(\S+)", line)
        if not g:
            continue
        samples += int(g.group(2))
        name = base(g.group(5))
        if g.group(3) == os.path.basename(binary) and name in names:
            shares[name] = shares.get(name, 0.0) + float(g.group(1))
    return sorted(((v, k) for k, v in shares.items()), reverse=True), samples


def off_cpu(s, *which):
    """A summary's time off the CPU over its whole trace: the blocked (3) and preempted (5)
    time of the functions of its top list (top_trace: [f, self, calls, blocked, cut,
    preempted], docs/summary-format.md); what the rest had is not in the summary."""
    return sum(e[i] for e in s.get("top_trace", []) for i in which)


def running(s):
    return s["trace"]["ns"] - off_cpu(s, 3, 5)


UNITS = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def exclude_top(traces, ratio):
    """The top self time over all the traces, [(ns, name)] (the functions of the program;
    not the trace's own entries such as "(entered before the ring's oldest record)"), and
    their running time in ns, as `jitt exclude` adds them up (the summaries list only each
    trace's top 10), with a trace point's cost fitted to the row's measured ratio (its
    estimate from the traces is one step of this VM's timer, too much for a leaf's few ns,
    and is taken from estimated times on sampled traces). ([], 0) if it says nothing."""
    fit = ["--ratio", "%.4f" % ratio] if ratio and ratio > 1 else []
    r = subprocess.run([o.jitt, "exclude"] + traces + ["--keep", "12"] + fit,
                       capture_output=True, text=True)
    top, total, on = [], 0, False
    for line in r.stdout.splitlines():
        # The top list's times are without the trace points: so is the running time
        # they are shares of (the model's "without them").
        g = re.match(r"model:.*without them ([0-9.]+) (\S+)", line)
        if g and g.group(2) in UNITS:
            total = float(g.group(1)) * UNITS[g.group(2)]
        if line.startswith("top "):
            on = True
            continue
        g = re.match(r"\s*\d+\.\s+([0-9.]+) (\S+) ->\s+(?:excluded|[0-9.]+ \S+)\s+(?:#\d+)?\s*(.+)$",
                     line) if on else None
        if on and not g:
            break
        # The time outside every traced call counts as the function the stack names
        # ("NAME [outside every traced call: ...]"), as `jitt summarize` shows it.
        if g and not g.group(3).startswith("(") and g.group(2) in UNITS:
            top.append((float(g.group(1)) * UNITS[g.group(2)],
                        base(g.group(3).strip().split(" [", 1)[0])))
    return top, total


def summary_top(trace, measured=False):
    """The names of `jitt summarize`'s top self time over the whole trace (its top 10, as a
    developer reads it; without the trace points when the trace has their cost), the time
    outside every traced call under the name the stack gives it. measured: with the
    learning windows' measured calls in sampled time's fit (docs/untimed.md)."""
    r = subprocess.run([o.jitt, "summarize", trace] + ["--measured"] * measured,
                       capture_output=True, text=True)
    names, on = [], False
    for line in r.stdout.splitlines():
        if line.startswith("top self time over the whole trace"):
            on = True
            continue
        if not on or line.strip().startswith("self "):
            continue
        g = re.match(r"\s*[0-9.]+ \S+\s+[0-9.]+%\s+\d+\s+(?:-|[0-9.]+ \S+)\s+"
                     r"(?:-|[0-9.]+ \S+)\s+(.+)$", line)
        if not g:
            break
        if not g.group(1).startswith("("):
            names.append(base(g.group(1).strip().split(" [", 1)[0]))
    return names


def instrumented(binary, settings=()):
    """The functions of a binary that hold trace points. The SDK's hooks are inlined, and
    each begins with a load of the thread's ring position, the binary's most frequent
    %fs:-relative load (its rdtsc may be elsewhere: the sampled-time hooks keep their on
    path in a section of its own). The others (a static libc's memcpy, say) can never be in
    a summary. A build with sleds (jitt-sleds.pc) has them where a function starts with its
    five NOPs, but those its row's sleds_exclude list names (as GCC matches: a substring),
    and the C library's memcpy and the like through their wrappers (ringbuf/sleds_libc.c)."""
    loads, cur, sleds, nops = [], None, set(), 0
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], capture_output=True,
                         text=True).stdout
    for line in dis.splitlines():
        g = re.match(r"[0-9a-f]+ <(.+)>:$", line)
        if g:
            cur, nops = base(g.group(1)), 0
            continue
        if cur and nops >= 0:
            nops = nops + 1 if re.search(r":\s+nop\s*$", line) else -1
            if nops == 5:  # a C library function's wrapper (sleds_libc.c) is its sled
                sleds.add(cur[len("__wrap_"):] if cur.startswith("__wrap_") else cur)
        m = re.search(r"\bmov\s+%fs:(0x[0-9a-f]+),%r", line)
        if cur and m:
            loads.append((m.group(1), cur))
    if len(sleds) > 10:
        lists = [x.split("=", 1)[1].strip() for x in settings if x.startswith("sleds_exclude")]
        names = set()
        for path in lists:
            for opt in open(path).read().split():
                names.update(n for n in opt.split("=", 1)[-1].split(",") if n)
        return {f for f in sleds if not any(n in f for n in names)}
    if not loads:
        return set()
    pos = collections.Counter(a for a, _ in loads).most_common(1)[0][0]
    return {f for a, f in loads if a == pos}


def fmt_rate(x):
    return "%.1f M" % (x / 1e6) if x >= 1e6 else "%.0f k" % (x / 1e3)


problems = []
server_cpu, client_cpu = bench_cpu.pinned() if clients else (None, None)
print("%s (%s%s; %d rounds interleaved)" % (
    o.label, "CPU time of thread %s, when its client's work is done" % o.thread if o.thread
    else "CPU time, user+sys",
    ", the server on CPU %d and its client on CPU %d" % (min(server_cpu), min(client_cpu))
    if server_cpu else "", o.reps))
hdr = "  %-9s %-12s %-46s %9s %9s %8s %8s %8s %9s %8s" % (
    "workload", "row", "method", "fastest", "median", "fast/pl", "med/pl", "pair/pl", "points/s",
    "ms/MiB")
print(hdr)
notes = []
for w, _ in workloads:
    vs = variants[w]
    times = {v[0]: [] for v in vs}
    kept = {v[0]: [] for v in vs}
    reference = None
    for r_ in range(o.reps):
        order = vs[r_ % len(vs):] + vs[:r_ % len(vs)]
        for row, mode, binary, _ in order:
            # Timed runs are watched, not triggered (tests/bench_cpu.py: a trigger stops
            # the tracing while the trace is written, and hid up to 80% of a traced run).
            r, out, traces = one(w, row, mode, binary, watch=True)
            times[row].append(r.cpu)
            where = "%s %s round %d" % (w, row, r_ + 1)
            if r.status != 0 or r.problem:
                problems.append("%s: wait status %d%s" % (where, r.status,
                                                           ", " + r.problem if r.problem else ""))
            if mode == "plain" and reference is None:
                reference = out
            if reference is not None and out != reference:
                problems.append("%s: output differs from plain's (%s)" % (where, out[:80]))
            if mode == "on" and not r.records:
                problems.append("%s: recorded nothing (jitt status: no records)" % where)
    # A trace of each traced row, from one more run triggered a quarter second of CPU time
    # in (not timed): its rate, what a MiB holds, and its summary's top.
    moment = {}
    for row, mode, binary, _ in vs:
        if mode != "on":
            continue
        # perf follows this run too: its samples over the trace's span are the moment's
        # truth, where perf_top's are the whole plain run's.
        moment[row] = "%s/perf-moment-%s-%s.data" % (run, w, row) \
            if o.perf and shutil.which("perf") else None
        r, out, traces = one(w, row, mode, binary, keep="%s/traces-%s-%s" % (run, w, row),
                             perf_data=moment[row])
        # The program's own detectors may persist a trace too (a jank frame at load):
        # noted, and not the moment, which is the trigger's.
        by = [(detector(t), t) for t in traces]
        asked = [t for d, t in by if d == "external"]
        kept[row] += asked
        own = sorted(d for d, _ in by if d != "external")
        if own:
            notes.append("%s %s, its sample run: also %d trace%s of the program's own "
                         "detectors (%s)" % (w, row, len(own), "s"[:len(own) > 1],
                                             ", ".join(own)))
        if not r.triggers or len(asked) != 1:
            problems.append("%s %s, its sample run: %s, %d traces of the trigger saved" % (
                w, row, "trigger sent" if r.triggers else "no trigger (the run ended first?)",
                len(asked)))
    plain = [v[0] for v in vs if v[1] == "plain"]
    fast = {k: min(t) for k, t in times.items()}
    med = {k: statistics.median(t) for k, t in times.items()}
    # Each round's run against that round's plain run, the median of those ratios: a load
    # that comes and goes between rounds moves both runs of a pair alike.
    pair = {k: statistics.median(a / b for a, b in zip(t, times[plain[0]]))
            for k, t in times.items()} if plain else {}
    top_traced, others = None, []
    for row, mode, binary, method in vs:
        rate = held = ""
        if mode == "on":
            traced_files = summaries(kept[row])
            got = [x for _, x in traced_files]
            rates = [s["trace"]["records"] / (running(s) / 1e9) for s, _ in got if running(s) > 0]
            helds = [(s["trace"]["ns"] - off_cpu(s, 5)) / 1e6 / (s["trace"]["records"] * 8 / 2**20)
                     for s, _ in got if s["trace"]["records"]]
            rate = fmt_rate(statistics.median(rates)) if rates else "?"
            held = "%.2f" % statistics.median(helds) if helds else "?"
            if not all(wrapped for _, wrapped in got):
                held += "*"
                notes.append("%s %s: * a trace's ring had not wrapped (it holds the whole "
                             "traced run)" % (w, row))
            # perf against the last traced row (the rows end with what an OEM would
            # ship), and a line for each of the others.
            top_traced = (row, traced_files)
            others.append(top_traced)
        ratio = (lambda d: "%7.2fx" % (d[row] / d[plain[0]])) if plain else (lambda d: "")
        print("  %-9s %-12s %-46s %7.3f s %7.3f s %8s %8s %8s %9s %8s" % (
            w, row, method[:46], fast[row], med[row], ratio(fast), ratio(med),
            "%7.2fx" % pair[row] if pair else "", rate, held))
        if o.ratios and plain:
            with open(o.ratios, "a") as f:
                f.write("%s %s %.4f\n" % (w, row, med[row] / med[plain[0]]))
    if not o.perf:
        continue
    # ---- the summary's truth ----
    if not plain or top_traced is None:
        print("  %s: no plain and traced rows: no comparison with perf" % w)
        continue
    ptop, why = perf_top(w, [v[2] for v in vs if v[0] == plain[0]][0])
    fitted = {row: med[row] / med[plain[0]] for row, mode, _, _ in vs if mode == "on"}
    stop, ran = exclude_top([t for t, _ in top_traced[1]], fitted[top_traced[0]])
    threads = sorted({s.get("thread", "?") for _, (s, _) in top_traced[1]})
    print("  %s: perf record -F %d, %s build (self, %s)" % (
        w, PERF_HZ, plain[0], why if ptop is not None else "no perf"))
    print("  %-48s |  top self time of the traces (%s, %d traces of thread %s)" % (
        "", top_traced[0], len(top_traced[1]), ", ".join(threads)))
    for i in range(5):
        left = "%5.1f%%  %-34s" % ptop[i] if ptop and i < len(ptop) else " " * 41
        right = "%5.1f%%  %s" % (100.0 * stop[i][0] / ran, stop[i][1]) \
            if i < len(stop) and ran else ""
        print("    %d. %s |  %s" % (i + 1, left, right))
    if ptop is None:
        print("    perf: %s" % why)
        continue
    three = [k for _, k in ptop[:3]]
    names = own_names([v[2] for v in vs if v[0] == plain[0]][0])
    # perf again, charged as a summary counts: where the thread's time is mostly the
    # kernel's (memcached's worker, 88% in its system calls), perf's top 3 in the
    # program's own code are a few % each, and a summary's top is its system calls'
    # callers. Both are printed; the targets' check stays the one above.
    crow = ([v for v in vs if v[1] == "off"] or [v for v in vs if v[0] == plain[0]])[0]
    ctop, cn = perf_charged(w, crow[0], crow[1], crow[2])
    if ctop is None:
        print("    perf, charged to the program's callers: %s" % cn)
    else:
        print("    perf of %s, each sample charged to the innermost function with trace points "
              "on its stack (a system\n      call's time its caller's, as in a summary; DWARF, "
              "%d Hz, %d samples of the thread): %s" % (
                  crow[0], CHARGED_HZ, cn,
                  ", ".join("%s %.1f%%" % (k, v) for v, k in ctop[:5])))
    cthree = [k for _, k in (ctop or []) if not k.startswith("(")][:3]
    for row, files in others:
        ten = {k for _, k in (stop if row == top_traced[0] else
                              exclude_top([t for t, _ in files], fitted[row])[0])[:10]}
        points = instrumented([v[2] for v in vs if v[0] == row][0],
                              row_settings.get((w, row), ()))
        missing = [k + ("" if k in points or not points else " (no trace points)")
                   for k in three if k not in ten]
        print("    perf's top 3 in the top 10 of %s: %d of %d%s" % (
            row, len(three) - len(missing), len(three),
            " (not: %s)" % ", ".join(missing) if missing else ""))
        if cthree:
            cmissing = [k for k in cthree if k not in ten]
            print("      charged perf's top 3 in it: %d of %d%s" % (
                len(cthree) - len(cmissing), len(cthree),
                " (not: %s)" % ", ".join(cmissing) if cmissing else ""))
        # The same against what a developer reads: each trace's summary, its top 10.
        for t, _ in files[:1]:
            told = set(summary_top(t))
            gone = [k for k in three if k not in told]
            print("      in jitt summarize's top 10 of its trace: %d of %d%s" % (
                len(three) - len(gone), len(three),
                " (not: %s)" % ", ".join(gone) if gone else ""))
        # And perf at that trace's very moment, the same run, the same span.
        for t, (s, _) in files[:1]:
            if not moment.get(row):
                continue
            mtop, n = perf_moment(moment[row], t, s, [v[2] for v in vs if v[0] == row][0],
                                  names)
            if mtop is None:
                print("      perf at its moment: %s" % n)
                continue
            mthree = [k for _, k in mtop[:3]]
            gone = [k + ("" if k in points or not points else " (no trace points)")
                    for k in mthree if k not in told]
            print("      perf at its moment (%d samples of the thread in its %.1f ms): %s; "
                  "in its top 10: %d of %d%s" % (
                      n, s["trace"]["ns"] / 1e6,
                      ", ".join("%s %.0f%%" % (k, v) for v, k in mtop[:3]) or "none",
                      len(mthree) - len(gone), len(mthree),
                      " (not: %s)" % ", ".join(gone) if gone else ""))
            # The same summary with the windows' measured calls, which the fit takes only
            # when asked (docs/untimed.md, "Measured calls"): their effect, trace by trace.
            if s["trace"].get("untimed"):
                mtold = set(summary_top(t, measured=True))
                mgone = [k for k in mthree if k not in mtold]
                print("      with the windows' measured calls (--measured): %d of %d%s" % (
                    len(mthree) - len(mgone), len(mthree),
                    " (not: %s)" % ", ".join(mgone) if mgone else ""))
            os.unlink(moment[row])
for n in notes:
    print("  " + n)
print("  points/s: a trace's records per second of the traced thread's running time (its span "
      "less the\n  blocked and preempted time of the summary's top functions); ms/MiB: the ms of "
      "the run\n  (preempted time left out) a MiB of records holds; medians over the traced rounds. "
      "Shares:\n  perf's of the busiest thread's samples; the traces' of their running time "
      "without the trace points,\n  as `jitt exclude` estimates them (self time includes the "
      "system calls a function makes)")
for pr in problems:
    print("  PROBLEM: " + pr)
sys.exit(1 if problems else 0)
