#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The overhead part of tests/speedtest1.sh: speedtest1 plain (uninstrumented), off
(instrumented, its thread not traced: SPEEDTEST1_TRACE=0, tests/speedtest1_shim.c), on, and
on with the list of `jitt exclude`, run in rounds, each round all four in a rotated order, so
that the machine's load falls on all of them alike. Each run is timed by the CPU time of its
process (user + sys, from wait4's rusage): wall time on a loaded machine counts the time the
process waited for a core. The fastest run is the least disturbed; the median says how
steady that is. Every run must print plain's results (speedtest1 --verify: a hash of every
result), and every traced run must save the trace it is asked for once, a quarter second
of CPU time into it (`jitt trigger`: the traced variants really traced, and pay one persist each).
The run, its timing and its trigger are tests/bench_cpu.py's.

Prints the table, then a line "scale X": the median of on with the list over on's, which the
shell uses to trigger that build at the same points of its work.
"""
import argparse
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cpu  # noqa: E402 (beside this file)

p = argparse.ArgumentParser()
for a in ("--run", "--jitt", "--args", "--plain", "--traced", "--list", "--exclude"):
    p.add_argument(a, required=True)
p.add_argument("--reps", type=int, default=5)
o = p.parse_args()

run = o.run
variants = [
    ("plain", "plain (uninstrumented)", o.plain, {}),
    ("off", "off (instrumented, not traced)", o.traced, {"SPEEDTEST1_TRACE": "0"}),
    ("on", "on (traced)", o.traced, {}),
    ("list", "on with the list", o.list, {}),
]
traced = {"on", "list"}
for v, _, _, _ in variants:
    # With its spool, as the image's init makes it: without one the runtime persists
    # nothing and warns on stderr (every traced run then failed both checks).
    bench_cpu.settings("%s/time-%s.conf" % (run, v), "%s/time-%s" % (run, v), "%s/sock" % run)


def spool(v):
    d = "%s/time-%s/spool" % (run, v)
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def results(path):
    """speedtest1's output without its timings: what must be the same in every run."""
    out = []
    for line in open(path, errors="replace"):
        out.append(re.sub(r"\s+[0-9.]+s$", "", line.rstrip()))
    return out


def one(v, binary, extra):
    db = "%s/db/time-%s.db" % (run, v)
    for suffix in ("", "-journal", "-wal"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    env = dict(os.environ)
    env.pop("JITT_CONFIG", None)
    if v != "plain":
        env["JITT_CONFIG"] = "%s/time-%s.conf" % (run, v)
    env.update(extra)
    out = "%s/time-%s.out" % (run, v)
    before = len(spool(v))
    with open(out, "w") as f:
        r = bench_cpu.run(["nice", binary] + o.args.split() + [db], env, "%s/db" % run, f,
                          jitt=o.jitt if v in traced else None,
                          conf=env.get("JITT_CONFIG") if v in traced else None)
    saved = len(spool(v)) - before
    for name in spool(v):  # counted; 4 MiB each
        os.unlink("%s/time-%s/spool/%s" % (run, v, name))
    for suffix in ("", "-journal", "-wal"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    return r.cpu, r.status, results(out), r.triggers > 0, saved


times = {v: [] for v, _, _, _ in variants}
reference, problems, saved_n = None, [], 0
for r in range(o.reps):
    order = variants[r % len(variants):] + variants[:r % len(variants)]
    for v, _, binary, extra in order:
        cpu, status, res, asked, saved = one(v, binary, extra)
        times[v].append(cpu)
        if status != 0:
            problems.append("%s round %d: wait status %d" % (v, r + 1, status))
        if reference is None and v == "plain":
            reference = res
        if reference is not None and res != reference:
            problems.append("%s round %d: its results differ from plain's" % (v, r + 1))
        if v in traced:
            saved_n += saved > 0
            if not asked or saved < 1:
                problems.append("%s round %d: %s, %d traces saved" %
                                (v, r + 1, "trigger sent" if asked else
                                 "no trigger (the run ended first, or jitt trigger failed)",
                                 saved))
    print("  round %d: %s" % (r + 1, ", ".join("%s %.2f s" % (v, times[v][-1])
                                               for v, _, _, _ in variants)), flush=True)

if reference is None or not any(l.startswith("Verification Hash") for l in reference):
    problems.append("plain printed no verification hash")
fast = {v: min(t) for v, t in times.items()}
med = {v: statistics.median(t) for v, t in times.items()}
print("\n  %-32s %9s %9s %14s %13s" % ("variant (CPU time, user+sys)", "fastest", "median",
                                        "fastest/plain", "median/plain"))
nlist = sum(l.count(",") + 1 for l in open("%s/exclude.opt" % run) if l.strip())
for v, label, _, _ in variants:
    if v == "list":
        label = "on with the list (%d entries)" % nlist
    print("  %-32s %7.3f s %7.3f s %13.2fx %12.2fx" % (label, fast[v], med[v],
                                                      fast[v] / fast["plain"],
                                                      med[v] / med["plain"]))
pred = re.search(r"now [0-9.]+% \(([0-9.]+)x\); with the list [0-9.]+% \(([0-9.]+)x\)",
                 open(o.exclude).read())
cost = re.search(r"C = ([0-9.]+) ns", open(o.exclude).read())
if pred:
    print("  predicted by jitt exclude (C = %s ns): on %sx, on with the list %sx" %
          (cost.group(1) if cost else "?", pred.group(1), pred.group(2)))
hashes = [l for l in (reference or []) if l.startswith("Verification Hash")]
print("  every run's results are plain's (%s); traced runs: %d of %d saved their trace" %
      (hashes[0] if hashes else "no hash", saved_n, 2 * o.reps))
for pr in problems:
    print("  PROBLEM: " + pr)
print("scale %.3f" % (med["list"] / med["on"]))
sys.exit(1 if problems else 0)
