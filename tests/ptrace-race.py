#!/usr/bin/env python3
# Deterministic races against a running jittd, for tests/jittd-check.sh (hostile input:
# files other users control): the moment another user's process would have to hit by luck is
# made exact by stopping jittd's threads at their system calls (ptrace, x86_64 Linux, root
# or CAP_SYS_PTRACE).
#
#   ptrace-race.py PID DIR NAME fifo FIFO     when a thread opens DIR/NAME, FIFO is renamed
#                                             over it first: the listing saw a file, the open
#                                             meets a FIFO
#   ptrace-race.py PID DIR NAME truncate N    after a thread opened DIR/NAME and took its
#                                             size, the file is cut to N bytes before the
#                                             next call (a map, a read): the writer truncating
#                                             it under jittd
#   ptrace-race.py PID DIR NAME hold MARKS    the thread that opened DIR/NAME is held at its
#                                             next call (not one that may be malloc's, which
#                                             holds a lock) until MARKS/release exists; MARKS/held
#                                             says it is held (a summary that takes long:
#                                             the socket must answer meanwhile)
#
# Prints "attached" on stdout once every thread is traced, then "done MODE" and exits 0 once
# the race was run, or exits 1 after 60 s without it. Every thread is detached at the end.
import ctypes
import os
import signal
import struct
import sys
import time

PTRACE_SYSCALL, PTRACE_DETACH = 24, 17
PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_GET_SYSCALL_INFO = 0x4206, 0x4207, 0x420E
PTRACE_O_TRACESYSGOOD, PTRACE_EVENT_STOP = 1, 128
WALL = 0x40000000
OPEN, OPENAT = 2, 257
# stat, fstat, lstat, newfstatat, statx: the size being taken; fcntl: musl's open() sets
# FD_CLOEXEC again after it
STATS = {4, 5, 6, 262, 332, 72}
# mmap, munmap, mremap, brk: maybe inside malloc, whose lock a held thread must not keep
MEMORY = {9, 11, 25, 12}

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long


def ptrace(req, tid, addr=0, data=0):
    r = libc.ptrace(req, tid, ctypes.c_void_p(addr), ctypes.c_void_p(data))
    if r < 0:
        raise OSError(ctypes.get_errno(), "ptrace %#x %d" % (req, tid))
    return r


def syscall_info(tid):
    buf = ctypes.create_string_buffer(88)
    ptrace(PTRACE_GET_SYSCALL_INFO, tid, 88, ctypes.addressof(buf))
    op = buf.raw[0]
    if op == 1:  # entry: nr, args[6]
        return op, struct.unpack_from("<Q6Q", buf.raw, 24)
    if op == 2:  # exit: rval, is_error
        return op, struct.unpack_from("<q", buf.raw, 24)
    return op, None


def read_string(mem, addr):
    try:
        data = os.pread(mem, 4096, addr)
    except OSError:
        return b""
    return data.split(b"\0", 1)[0]


def main():
    pid, folder, name, mode, arg = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
    if os.uname().machine != "x86_64":
        print("skip: x86_64 only")
        return 2
    path = os.path.join(folder, name)
    mem = os.open("/proc/%d/mem" % pid, os.O_RDONLY)
    tids = set(int(t) for t in os.listdir("/proc/%d/task" % pid))
    for t in tids:
        ptrace(PTRACE_SEIZE, t, 0, PTRACE_O_TRACESYSGOOD)
        ptrace(PTRACE_INTERRUPT, t)
    print("attached", flush=True)
    armed = {}  # tid -> "opening" (in the open of NAME) / "opened" (open returned)
    done = triggered = False
    held = None
    detaching = set()
    deadline = time.monotonic() + 60
    signal.signal(signal.SIGALRM, lambda *a: None)
    while tids - {held}:
        if not done and time.monotonic() > deadline:
            done = True  # give up: detach everything
            detaching = set(tids)
            for t in tids:
                try:
                    ptrace(PTRACE_INTERRUPT, t)
                except OSError:
                    pass
        signal.alarm(2)
        try:
            tid, status = os.waitpid(-1, WALL)
        except InterruptedError:
            continue
        finally:
            signal.alarm(0)
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            tids.discard(tid)
            continue
        if not os.WIFSTOPPED(status):
            continue
        sig = os.WSTOPSIG(status)
        event = status >> 16
        deliver = 0
        if sig == (signal.SIGTRAP | 0x80):
            if not done:
                op, info = syscall_info(tid)
                state = armed.get(tid)
                if op == 1 and info[0] in (OPEN, OPENAT) and state is None:
                    p = read_string(mem, info[1] if info[0] == OPEN else info[2])
                    if os.path.basename(p.decode(errors="replace")) == name:
                        if mode == "fifo":
                            os.rename(arg, path)
                            done = triggered = True
                        else:
                            armed[tid] = "opening"
                elif op == 2 and state == "opening":
                    armed[tid] = "opened" if info[0] >= 0 else None
                elif op == 1 and state == "opened" and info[0] not in STATS and \
                        (mode == "truncate" or info[0] not in MEMORY):
                    if mode == "truncate":
                        os.truncate(path, int(arg))
                    else:
                        held = tid  # left stopped here, the others detached
                    done = triggered = True
                if done:
                    detaching = set(tids) - {held}
                    for t in tids - {tid}:
                        ptrace(PTRACE_INTERRUPT, t)
                    if tid == held:
                        continue
        elif event != PTRACE_EVENT_STOP:
            deliver = sig  # a signal for the tracee: passed on (SIGBUS too)
        if tid in detaching:
            ptrace(PTRACE_DETACH, tid, 0, deliver)
            tids.discard(tid)
            detaching.discard(tid)
            continue
        ptrace(PTRACE_SYSCALL, tid, 0, deliver)
    if held is not None:
        with open(os.path.join(arg, "held"), "w"):
            pass
        until = time.monotonic() + 60
        while not os.path.exists(os.path.join(arg, "release")) and time.monotonic() < until:
            time.sleep(0.01)
        ptrace(PTRACE_DETACH, held, 0, 0)
    print("done %s" % mode if triggered else "not triggered", flush=True)
    return 0 if triggered else 1


if __name__ == "__main__":
    sys.exit(main())
