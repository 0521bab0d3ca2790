#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The call-heavy cost on a real program (tests/bench-real-programs.sh builds it): each
workload run plain (uninstrumented), off (instrumented, no thread traced) and on (its main
thread traced), in rounds, each round the three in a rotated order so that the machine's
load falls on all alike. Each run is timed by its process's CPU time (user + sys, from
wait4's rusage: wall time on a loaded machine counts the waits for a core); the fastest run
is the least disturbed, the median says how steady. Every run must print plain's output,
and every traced run must save the trace it is asked for a quarter second into it (`jitt
trigger`: it really traced, and pays one persist).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

p = argparse.ArgumentParser()
for a in ("--run", "--jitt", "--plain", "--traced", "--label"):
    p.add_argument(a, required=True)
p.add_argument("--reps", type=int, default=5)
p.add_argument("workloads", nargs="+", help="NAME=ARGS (split on spaces)")
o = p.parse_args()

run = o.run
variants = [("plain", "plain (uninstrumented)", o.plain, False),
            ("off", "off (instrumented, not traced)", o.traced, False),
            ("on", "on (main thread traced)", o.traced, True)]
for v, _, _, on in variants:
    d = "%s/%s" % (run, v)
    os.makedirs("%s/spool" % d, exist_ok=True)
    os.makedirs("%s/sock" % run, exist_ok=True)
    with open("%s/%s.conf" % (run, v), "w") as f:
        f.write("data_dir = %s\nrun_dir = %s/sock\ncooldown_ms = 0\nlog_level = warn\n"
                "trace_main = %d\n" % (d, run, on))


def spool(v):
    return sorted(os.listdir("%s/%s/spool" % (run, v)))


def one(v, binary, on, args):
    env = dict(os.environ)
    env["JITT_CONFIG"] = "%s/%s.conf" % (run, v)
    out = "%s/%s.out" % (run, v)
    with open(out, "w") as f:
        t0 = time.monotonic()
        proc = subprocess.Popen(["nice", binary] + args, stdout=f, stderr=subprocess.DEVNULL,
                                env=env, cwd=run)
        asked, done = False, (0, 0, None)
        if on:
            # Reaped here with its rusage (wait4), never by Popen.poll().
            sock = "%s/sock/jitt-%d.sock" % (run, proc.pid)
            while not done[0] and (not os.path.exists(sock) or time.monotonic() - t0 < 0.25):
                time.sleep(0.01)
                done = os.wait4(proc.pid, os.WNOHANG)
            if not done[0]:
                asked = subprocess.run([o.jitt, "trigger", str(proc.pid), "timed", "-c",
                                        env["JITT_CONFIG"]], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL).returncode == 0
        if not done[0]:
            done = os.wait4(proc.pid, 0)
        _, status, ru = done
    # The traces, and their slots (agent/spool.h): no jittd runs here to release them.
    names = spool(v)
    for name in names:
        os.unlink("%s/%s/spool/%s" % (run, v, name))
    saved = sum(n.endswith(".jtr") for n in names)
    return ru.ru_utime + ru.ru_stime, status, open(out).read(), asked, saved


problems = []
print("%s (CPU time, user+sys; %d rounds)" % (o.label, o.reps))
print("  %-12s %-32s %9s %9s %14s %13s" % ("workload", "variant", "fastest", "median",
                                             "fastest/plain", "median/plain"))
for w in o.workloads:
    name, _, argstr = w.partition("=")
    args = argstr.split()
    times = {v: [] for v, _, _, _ in variants}
    reference = None
    for r in range(o.reps):
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        for v, _, binary, on in order:
            cpu, status, out, asked, saved = one(v, binary, on, args)
            times[v].append(cpu)
            if status != 0:
                problems.append("%s %s round %d: wait status %d" % (name, v, r + 1, status))
            if v == "plain" and reference is None:
                reference = out
            if reference is not None and out != reference:
                problems.append("%s %s round %d: output differs from plain's" %
                                (name, v, r + 1))
            if on and (not asked or saved != 1):
                problems.append("%s %s round %d: %s, %d traces saved" %
                                (name, v, r + 1, "trigger sent" if asked else
                                 "no trigger (the run ended first?)", saved))
    fast = {v: min(t) for v, t in times.items()}
    med = {v: statistics.median(t) for v, t in times.items()}
    for v, label, _, _ in variants:
        print("  %-12s %-32s %7.3f s %7.3f s %13.2fx %12.2fx" %
              (name, label, fast[v], med[v], fast[v] / fast["plain"], med[v] / med["plain"]))
for pr in problems:
    print("  PROBLEM: " + pr)
sys.exit(1 if problems else 0)
