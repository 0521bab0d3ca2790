#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A fixed amount of client work for memcached (tests/bench-real-programs.sh): pipelined
requests over one loopback TCP connection, in batches of 100, each batch's answers read
before the next is sent; then the text protocol's `shutdown` (memcached -A), so that the
server ends cleanly and its CPU time can be taken with wait4 (tests/bench_cpu.py).

  bench_mc_client.py PORT mixed N      N requests: per batch 10 sets and 90 gets of keys
                                       among 10,000 (those not set yet miss)
  bench_mc_client.py PORT multiget N   10,000 keys set, then N keys looked up by `get`s of
                                       100 keys, 10 such requests a batch
  ... [PID]                            and, once every answer is in and before the shutdown,
                                       each thread of server PID's CPU time: "thread-cpu
                                       NAME NS" lines (/proc's schedstat, ns)

Prints what it asked and a hash of every answer (the same from every build of the server).
A server's process CPU time holds all its threads: memcached's LRU maintainer spins on its
lock for a third of it, in every build alike, which thins the ratios of the worker's cost.
"""
import hashlib
import os
import socket
import sys
import time

port, kind, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
server = int(sys.argv[4]) if len(sys.argv) > 4 else None
KEYS = 10000


def sets(keys):
    return [b"set key:%d 0 0 10\r\nvalue%05d\r\n" % (k, k % 99991) for k in keys]


def batches():
    """(bytes to send, answers to expect), made as they go: the client connects at once, so
    the server's work starts when it does (a traced run's trigger comes once the server has
    used a quarter second of CPU time)."""
    if kind == "mixed":
        for b in range(0, n, 100):
            reqs = []
            for i in range(b, min(n, b + 100)):
                k = (i * 7919) % KEYS
                reqs += sets([k]) if i % 10 == 0 else [b"get key:%d\r\n" % k]
            yield b"".join(reqs), len(reqs)
    else:
        for b in range(0, KEYS, 100):
            yield b"".join(sets(range(b, b + 100))), 100
        for b in range(0, n, 1000):
            reqs = [b"get " + b" ".join(b"key:%d" % ((k * 7919) % KEYS)
                                        for k in range(g, min(n, g + 100))) + b"\r\n"
                    for g in range(b, min(n, b + 1000), 100)]
            yield b"".join(reqs), len(reqs)


if kind not in ("mixed", "multiget"):
    sys.exit("bench_mc_client: workload %r is not mixed or multiget" % kind)
deadline = time.monotonic() + 60  # a server that never listens is a failure, not a hang
while True:
    try:
        s = socket.create_connection(("127.0.0.1", port))
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit("bench_mc_client: nothing listens on port %d" % port)
        time.sleep(0.01)

h = hashlib.sha256()
answers = sent = 0
for data, expect in batches():
    sent += 1
    s.sendall(data)
    buf, got = b"", 0
    while got < expect:
        d = s.recv(1 << 20)
        if not d:
            sys.exit("bench_mc_client: the server closed the connection")
        buf += d
        # Every answer ends with one of these lines (a value's bytes never contain them).
        got = buf.count(b"END\r\n") + buf.count(b"STORED\r\n")
    if got != expect:
        sys.exit("bench_mc_client: %d answers to %d requests" % (got, expect))
    h.update(buf)
    answers += got
if server:
    task = "/proc/%d/task" % server
    for tid in sorted(os.listdir(task)):
        try:
            name = open("%s/%s/comm" % (task, tid)).read().strip()
            ns = int(open("%s/%s/schedstat" % (task, tid)).read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
        print("thread-cpu %s %d" % (name, ns))
s.sendall(b"shutdown\r\n")
while s.recv(1 << 16):
    pass
print("%s: %d requests in %d batches, answers %s" % (kind, answers, sent,
                                                      h.hexdigest()[:16]))
