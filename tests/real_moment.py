#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One slow moment of a real program, seen three ways at once (tests/real-programs.sh):

  - jitt: the moment is triggered (`jitt trigger PID`, or the program's own detector
    fires) and the trace's summary says what ran, and how the window split into running,
    preempted and blocked;
  - perf: `perf record -e cpu-clock` of the same thread over the same seconds names the
    function where its CPU time went first;
  - the kernel: /proc/PID/task/TID/schedstat, sampled every millisecond or so, gives the
    thread's time on a CPU and waiting on a run queue over exactly the summary's window
    (its end is the freeze, from the trace file's header; its length is the summary's).

Prints what each said and "ok"/"FAIL" lines: perf's first function is in the summary's top
self time (top 10), a chain or the recovered outer frames reach it, and running and
preempted agree with schedstat within 10% of the window.

usage: real_moment.py --jitt JITT --spool DIR --pid PID [--tid TID] --label NAME
                      [--trigger] [--seconds S] [--outer NAME]...
"""
import argparse
import glob
import json
import os
import re
import signal
import struct
import subprocess
import sys
import threading
import time

results = {"passed": 0, "failed": 0}


def check(what, cond, why=""):
    if cond:
        print(f"ok   {what}")
        results["passed"] += 1
    else:
        print(f"FAIL {what}{': ' + why if why else ''}")
        results["failed"] += 1


def schedstat(pid, tid):
    """(monotonic ns, run ns, wait ns) of the thread."""
    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
        run, wait, _ = f.read().split()
    return time.monotonic_ns(), int(run), int(wait)


class Sampler(threading.Thread):
    """schedstat of the program's threads (tid given: that one; else all), every ~0.5 ms."""

    def __init__(self, pid, tid):
        super().__init__(daemon=True)
        self.pid, self.tid, self.samples, self.stop = pid, tid, {}, False

    def run(self):
        while not self.stop:
            try:
                tids = [self.tid] if self.tid else os.listdir(f"/proc/{self.pid}/task")
                for t in tids:
                    self.samples.setdefault(int(t), []).append(schedstat(self.pid, t))
            except OSError:
                return
            time.sleep(0.0005)

    def at(self, tid, t):
        """Interpolated (run, wait) of a thread at monotonic time t."""
        s = self.samples.get(tid, [])
        for a, b in zip(s, s[1:]):
            if a[0] <= t <= b[0]:
                f = (t - a[0]) / max(1, b[0] - a[0])
                return (a[1] + f * (b[1] - a[1]), a[2] + f * (b[2] - a[2]))
        return None


def ref_monotonic_ns(path):
    """The trace's reference CLOCK_MONOTONIC time, from its header (docs/trace-format.md)."""
    with open(path, "rb") as f:
        h = f.read(96)
    return struct.unpack_from("<Q", h, 40)[0]


def perf_top(data, tid, dso):
    """perf's first function of the thread in the program's own code: jitt traces the
    program, and time in an untraced library (libc's memcmp, say) is its caller's self time
    in the summary, so perf's view is taken per DSO, the program's."""
    out = subprocess.run(["perf", "report", "--stdio", "--no-children", "--sort", "symbol",
                          "--tid", str(tid), "--dsos", dso, "-i", data, "-q"],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "[.]":
            return plain_name(parts[2]), parts[0]
    return None, None


def plain_name(name):
    """A function's name without the suffixes of GCC's copies of it (f.lto_priv.0,
    f.constprop.0.isra.0, f.part.0, f.cold): the summary shows the function."""
    return re.sub(r"(\.(lto_priv|constprop|isra|part|cold|localalias)(\.\d+)?)+$", "", name)


def call_graph(binary):
    """Each function's direct calls and jumps (tail calls), and the functions that call
    through a pointer or a PLT, as objdump reads the program's code: an outside view of
    which recovered frame can call which."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], capture_output=True,
                         text=True).stdout
    calls, jumps, loose, cur = {}, {}, set(), None
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            cur = plain_name(m.group(1))
            calls.setdefault(cur, set())
            jumps.setdefault(cur, set())
            continue
        m = re.search(r"\t(call|jmp)\w*\s+(.*)$", line) if cur else None
        if not m:
            continue
        kind, arg = m.groups()
        target = re.search(r"<([^>+]+)>", arg)
        if arg.startswith("*") or (target and target.group(1).endswith("@plt")):
            if kind == "call":
                loose.add(cur)
        elif target:
            (calls if kind == "call" else jumps)[cur].add(plain_name(target.group(1)))
    return calls, jumps, loose


def impossible_links(frames, graph):
    """Adjacent frames A > B where A's code cannot call B: no direct call of B, nor of a
    function that jumps to B, and no call through a pointer or a PLT (which could)."""
    calls, jumps, loose = graph
    bad = []
    for a, b in zip(frames, frames[1:]):
        direct = calls.get(a, set())
        tail = set().union(*[jumps.get(x, set()) for x in direct])
        if b not in direct and b not in tail and a not in loose:
            bad.append(f"{a} > {b}")
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jitt", required=True)
    ap.add_argument("--spool", required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--tid", type=int)
    ap.add_argument("--label", required=True)
    ap.add_argument("--trigger", action="store_true",
                    help="ask for the trace (else wait for the program's detector)")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--patience", type=float, default=60.0)
    ap.add_argument("--outer", action="append", default=[],
                    help="a function the recovered outer frames must name")
    ap.add_argument("--keep", help="folder for the trace, summaries and perf's report")
    ap.add_argument("--dso", help="the program's file name, for perf (default: /proc/PID/exe)")
    a = ap.parse_args()
    label = a.label
    exe = os.readlink(f"/proc/{a.pid}/exe")
    dso = a.dso or os.path.basename(exe)
    before = set(glob.glob(os.path.join(a.spool, "*.jtr")))

    sampler = Sampler(a.pid, a.tid)
    sampler.start()
    perf_data = os.path.join(a.keep or "/tmp", f"{label}.perf.data")
    who = ["-t", str(a.tid)] if a.tid else ["-p", str(a.pid)]
    perf = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "4000"] + who +
                            ["-o", perf_data], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(a.seconds)  # perf's view of the moment (a span to sample, not a wait)
    if a.trigger:
        env = dict(os.environ)
        subprocess.run([a.jitt, "trigger", str(a.pid), f"{label}-slow-moment"], env=env,
                       stdout=subprocess.DEVNULL)
    trace = None
    deadline = time.monotonic() + a.patience
    while time.monotonic() < deadline and trace is None:
        new = [p for p in glob.glob(os.path.join(a.spool, "*.jtr")) if p not in before]
        if new:
            # A second name at once: the spool's caps may trim the file while the
            # program goes on writing traces.
            trace = os.path.join(os.path.dirname(os.path.abspath(a.spool)), f"{label}.jtr")
            try:
                if os.path.exists(trace):
                    os.unlink(trace)
                os.link(new[0], trace)
            except OSError:
                trace = None
        time.sleep(0.02)
    perf.send_signal(signal.SIGINT)
    perf.wait()
    sampler.stop = True
    sampler.join()
    check(f"{label}: a trace of the moment", trace is not None, "none in the spool")
    if trace is None:
        return
    summary = json.loads(subprocess.run([a.jitt, "summarize", "--json", "-k", "10", trace],
                                        capture_output=True, text=True).stdout)
    text = subprocess.run([a.jitt, "summarize", "-k", "10", trace], capture_output=True,
                          text=True).stdout
    decoded = subprocess.run([a.jitt, "decode", trace], capture_output=True,
                             text=True).stdout.splitlines()
    if a.keep:
        with open(os.path.join(a.keep, f"{label}.summary.txt"), "w") as f:
            f.write(text)
    funcs = summary.get("functions", [])

    def fname(i):  # functions: [module, offset, name] (docs/summary-format.md)
        return funcs[i][2] if isinstance(i, int) and 0 <= i < len(funcs) else str(i)

    top = [plain_name(fname(t[0])) for t in summary.get("top_window", [])]
    chains = [[plain_name(fname(link[0])) for link in c] for c in summary.get("chains", [])]
    # The summary's thread, by its name in the trace (jitt decode: thread TID "NAME").
    tid = a.tid
    for line in decoded:
        parts = line.split('"')
        if not tid and line.startswith("thread ") and len(parts) > 1 and \
                parts[1] == summary.get("thread"):
            tid = int(line.split()[1])
    outer, current = [], None
    for line in decoded:
        if line.startswith("thread "):
            current = int(line.split()[1])
        elif "outer frames at the freeze" in line and current == tid:
            outer = [plain_name(f) for f in line.split(":", 1)[1].strip().split(" > ")]
    name, share = perf_top(perf_data, tid, dso)
    print(f"  {label}: perf's first function: {name} ({share} of the thread's samples)")
    print(f"  {label}: summary's top self time: {', '.join(top[:5])}")
    print(f"  {label}: summary's longest chain: {' > '.join(chains[0]) if chains else '-'}")
    print(f"  {label}: outer frames recovered: {' > '.join(outer) if outer else '-'}")
    check(f"{label}: the summary's top self time names perf's first function ({name})",
          name is not None and name in top, f"top: {top}")
    # The calling contexts' paths (docs/summary-format.md: "from":[j,n] shares context j's
    # first n frames).
    paths = []
    for ctx in summary.get("contexts", []):
        j, n = ctx.get("from", [0, 0])
        head = paths[j][:n] if ctx.get("from") and j < len(paths) else []
        paths.append(head + [plain_name(fname(f)) for f in ctx.get("path", [])])
    # Where the first functions ran most: [function, self ns, path...].
    heaviest = [[plain_name(fname(f)) for f in p[2:]] for p in summary.get("paths", [])]
    reach = [c for c in heaviest + chains + paths if name in c]
    check(f"{label}: a path from the outer frames reaches {name}", bool(reach),
          f"chains: {chains[:3]}, paths: {heaviest}")
    if reach:
        print(f"  {label}: a path to it: {' > '.join(reach[0][:reach[0].index(name) + 1])}")
    # The report carries them too, as functions of its table (docs/summary-format.md).
    reported = [plain_name(fname(f)) for f in summary.get("outer", [])]
    if outer:
        check(f"{label}: the report's outer frames are the trace's", reported == outer,
              f"report: {reported}, trace: {outer}")
    for want in a.outer:
        check(f"{label}: the recovered outer frames name {want}", want in outer,
              f"outer: {outer}")
    # A word a returned call left on the stack looks like a return address; the frames
    # kept must each be a call the program's code makes.
    if outer:
        bad = impossible_links(outer, call_graph(exe))
        check(f"{label}: each recovered outer frame can call the next (objdump)", not bad,
              f"{bad} in {' > '.join(outer)}")
    w = summary.get("window", {})
    end = ref_monotonic_ns(trace) - w.get("to_ref_ns", 0)
    start = end - w.get("ns", 0)
    s0, s1 = sampler.at(tid, start), sampler.at(tid, end)
    if s0 is None or s1 is None or not w.get("ns"):
        check(f"{label}: schedstat covers the window", False,
              f"{len(sampler.samples.get(tid, []))} samples of thread {tid}, window {w}")
        return
    run, wait = s1[0] - s0[0], s1[1] - s0[1]
    ns = w["ns"]
    print(f"  {label}: window {ns / 1e6:.3f} ms: summary running {w['running_ns'] / 1e6:.3f} ms,"
          f" preempted {w['preempted_ns'] / 1e6:.3f} ms, blocked {w['blocked_ns'] / 1e6:.3f} ms;"
          f" schedstat running {run / 1e6:.3f} ms, waiting {wait / 1e6:.3f} ms")
    check(f"{label}: running agrees with schedstat within 10% of the window",
          abs(w["running_ns"] - run) <= 0.1 * ns)
    check(f"{label}: preempted agrees with schedstat within 10% of the window",
          abs(w["preempted_ns"] - wait) <= 0.1 * ns)


if __name__ == "__main__":
    main()
    print(f"{results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)
