# SPDX-License-Identifier: MIT
"""What the real-program benchmarks share (tests/bench_real_programs.py and
tests/speedtest1_time.py): one run of a program timed by its process's CPU time, and the
trace asked of it.

CPU time (user + sys, from wait4's rusage) and not wall time: on a loaded machine wall time
counts the waits for a core. The process is therefore reaped here with os.wait4, never by
Popen.poll() or Popen.wait(), which would take its rusage with them. A server is timed the
same way over a fixed amount of client work: the client is started with it, does its work
and asks the server to shut down cleanly, and the server's own CPU time is what counts. On a
machine of two CPUs or more the server runs on the last and the client on the first
(`pinned`): left to the scheduler, the two shared the CPUs as it pleased, and memcached's plain
worker took 0.32 to 0.43 s of CPU time for the same requests (the cost of its socket calls
hangs on whether the client was running or asleep when they woke it); pinned, 0.348 to
0.352 s in five runs of six.

A traced run is asked for its trace with `jitt trigger` once it has used a quarter second of
CPU time (and its control socket exists): it proves the run really traced, and each traced
run pays one persist. With `every`, again every so many seconds of its CPU time until it
ends (to collect traces spread over a run). CPU time, not wall time: a server waits for its
client, and memcached's worker, triggered a quarter second after the server started, was
still waiting for its first request under load (a trace of 215 ms blocked). A trigger stops
the thread's tracing while its trace is written (the ring is frozen in place: 150 ms and
more here), so a run timed for the trace points' cost is watched instead (`watch`): `jitt status PID` every WATCH_EVERY seconds, its
"records TID N" lines (slots written since tracing started, read without a freeze), the
last sum kept: a run that recorded nothing did not trace.
"""
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time

TRIGGER_AFTER = 0.25
WATCH_EVERY = 0.1
# Only a hang turns into a failure: no run here takes anywhere near this.
LIMIT = 1800.0


class Run:
    """What one run gave: cpu (s), status (wait4's), triggers (sent and answered), client
    (the client's exit status, None without one), problem (a sentence, or None)."""

    def __init__(self):
        self.cpu, self.status, self.triggers, self.client, self.problem = 0.0, 0, 0, None, None
        self.records = 0  # with watch: the slots its traced threads wrote, last seen


def records(jitt, pid, conf):
    """The slots a traced process's threads have written since tracing started (`jitt
    status PID`'s "records TID N" lines, summed), or None when it did not answer."""
    s = subprocess.run([jitt, "status", str(pid), "-c", conf], capture_output=True, text=True)
    if s.returncode:
        return None
    return sum(int(g) for g in re.findall(r"^records \d+ (\d+)$", s.stdout, re.M))


def pinned():
    """The CPUs a server and its client run on, each a set of one (set before exec, so that
    every thread the server makes inherits it): the last and the first this process may use;
    (None, None) where it may use only one."""
    cpus = sorted(os.sched_getaffinity(0))
    return ({cpus[-1]}, {cpus[0]}) if len(cpus) > 1 else (None, None)


def on_cpus(cpus):
    """A preexec_fn that keeps the child on cpus, or None to leave it where it is."""
    return cpus and (lambda: os.sched_setaffinity(0, cpus))


def run(argv, env, cwd, stdout, jitt=None, conf=None, every=None, client=None,
        client_out=None, watch=False, perf_data=None):
    """Runs argv (stdout and stderr to the file object stdout) to its end. jitt and conf:
    trigger it, or with watch, watch what it records (see above). client: argv of a client
    started with it, its output to the file object client_out; when the client fails the
    process is killed. perf_data: `perf record` the whole machine into this file while the
    process runs, its samples timed on CLOCK_MONOTONIC (a trace's header has its freeze on
    that clock); the reader picks the traced thread's by its id. Not `-p PID`: that follows
    only the threads there when it attaches (at the start, the process's first), and
    memcached's worker, made later, had no sample."""
    r = Run()
    perf = perf_recording(perf_data) if perf_data else None
    t0 = time.monotonic()
    server_cpu, client_cpu = pinned() if client else (None, None)
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                            preexec_fn=on_cpus(server_cpu))
    cl = None
    if client:  # "{pid}" in its arguments: the server's
        cl = subprocess.Popen([a.replace("{pid}", str(proc.pid)) for a in client],
                              stdout=client_out, stderr=subprocess.STDOUT, cwd=cwd,
                              preexec_fn=on_cpus(client_cpu))
    sock = conf and os.path.join(_run_dir(conf), "jitt-%d.sock" % proc.pid)
    next_trigger = TRIGGER_AFTER if jitt and not watch else None
    next_watch = 0.0 if jitt and watch else None
    done = (0, 0, None)
    client_done = None
    while True:
        done = os.wait4(proc.pid, os.WNOHANG)
        if done[0]:
            break
        now = time.monotonic() - t0
        if next_trigger is not None and os.path.exists(sock):
            used = cpu_time(proc.pid)
            if used is not None and used >= next_trigger:
                r.triggers += subprocess.run([jitt, "trigger", str(proc.pid), "timed", "-c",
                                              conf], stdout=subprocess.DEVNULL,
                                             stderr=subprocess.DEVNULL).returncode == 0
                next_trigger = used + every if every else None
        if next_watch is not None and now >= next_watch and os.path.exists(sock):
            n = records(jitt, proc.pid, conf)
            r.records = n if n is not None else r.records
            next_watch = now + WATCH_EVERY
        if cl and r.client is None and cl.poll() is not None:
            r.client = cl.returncode
            if r.client != 0:
                r.problem = "the client failed (exit status %d)" % r.client
                proc.kill()
            client_done = now
        # A server that outlives its client's shutdown request by a minute, or any run
        # past the limit, is a hang.
        if (client_done is not None and now - client_done > 60) or now > LIMIT:
            r.problem = r.problem or "still running after %.0f s: killed" % now
            proc.kill()
        time.sleep(0.01)
    _, r.status, ru = done
    r.cpu = ru.ru_utime + ru.ru_stime
    if perf:  # told to end with the process it was for
        perf.send_signal(signal.SIGINT)
        perf.wait()
    if cl:
        # A server that ends on the client's shutdown request may end before the client
        # does (memcached's -A: it once exited while its client was still closing): the
        # client gets a minute to end, as the server got after it.
        try:
            r.client = cl.wait(timeout=60)
        except subprocess.TimeoutExpired:
            cl.send_signal(signal.SIGTERM)
            r.client = cl.wait()
        if r.client != 0 and not r.problem:
            r.problem = "the client failed (exit status %d)" % r.client
    return r


def cpu_time(pid):
    """The CPU time (user + sys, s) a running process has used so far, all its threads
    (/proc/PID/stat), or None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def perf_recording(data, bound=60.0):
    """`perf record` of the whole machine into data, started and recording: returns once
    perf says its events are enabled, or the bound (a hang) has passed. perf starts with
    its events off and is told to enable them through a FIFO, and its acknowledgement is the
    event waited for. Started with the program, it took 0.29 s to be ready at load, and
    memcached's early traces had no sample of their moment."""
    fifos = tempfile.mkdtemp(prefix="jitt-perf-")
    ctl, ack = os.path.join(fifos, "ctl"), os.path.join(fifos, "ack")
    os.mkfifo(ctl)
    os.mkfifo(ack)
    perf = subprocess.Popen(["perf", "record", "-q", "-F", "20000", "-k", "CLOCK_MONOTONIC",
                             "-a", "-o", data, "-D", "-1", "--control",
                             "fifo:%s,%s" % (ctl, ack)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + bound
    acks = os.open(ack, os.O_RDONLY | os.O_NONBLOCK)
    try:
        while perf.poll() is None and time.monotonic() < deadline:
            try:  # no reader yet (perf still starting): ENXIO
                c = os.open(ctl, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                time.sleep(0.01)
                continue
            os.write(c, b"enable\n")
            os.close(c)
            while perf.poll() is None and time.monotonic() < deadline:
                ready, _, _ = select.select([acks], [], [], 0.1)
                said = os.read(acks, 64) if ready else None
                if said is not None and said.startswith(b"ack"):
                    return perf
                if said == b"":  # perf closed it: no acknowledgement will come
                    break
            break
    finally:
        os.close(acks)
        shutil.rmtree(fifos)
    return perf  # not acknowledged: the trace's moment may then have no sample


def _run_dir(conf):
    """The run_dir of a settings file (where the control sockets are)."""
    for line in open(conf):
        k, _, v = line.partition("=")
        if k.strip() == "run_dir":
            return v.strip()
    raise ValueError("%s: no run_dir" % conf)


def settings(path, data_dir, run_dir, extra=()):
    """Writes a settings file for benchmark runs: cooldown_ms = 0 (the runtime refuses a
    persist within the cool-down of the last one, 10 s by default, which would swallow
    every trigger after the first), warnings only."""
    os.makedirs(os.path.join(data_dir, "spool"), exist_ok=True)
    os.makedirs(run_dir, exist_ok=True)
    with open(path, "w") as f:
        f.write("data_dir = %s\nrun_dir = %s\ncooldown_ms = 0\nlog_level = warn\n" %
                (data_dir, run_dir))
        for line in extra:
            f.write(line + "\n")


def take_traces(data_dir, keep=None):
    """Empties data_dir/spool: its traces (.jtr) are moved into the folder keep (or
    deleted), the rest (their slots, agent/spool.h: no jittd runs here to release them)
    deleted. Returns the paths the traces now have (or their old names)."""
    d = os.path.join(data_dir, "spool")
    taken = []
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        p = os.path.join(d, name)
        if name.endswith(".jtr") and keep:
            os.makedirs(keep, exist_ok=True)
            q = os.path.join(keep, "%d-%s" % (len(os.listdir(keep)), name))
            os.rename(p, q)
            taken.append(q)
        else:
            if name.endswith(".jtr"):
                taken.append(p)
            os.unlink(p)
    return taken
