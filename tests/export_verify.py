#!/usr/bin/env python3
"""Independent checkers for `jitt export`'s three formats (what the viewers really load).
Python 3 stdlib, and protoc (Debian's protobuf-compiler) for Perfetto; shares no code with
jitt.

usage:
  export_verify.py perfetto FILE DESC [--save SELF.json]
        protoc --decode against the descriptor set DESC, then: no unknown field, interned
        names defined on their sequence before use (since its last
        SEQ_INCREMENTAL_STATE_CLEARED), timestamps through sequence-scoped and incremental
        clocks to absolute ns, monotone per track, begin/end balanced per track, every
        track described, every terminating flow started no later than it ends.
  export_verify.py chrome FILE [--save SELF.json]
        strict JSON; B/E balanced per (pid, tid), E named as its B, ts monotone per thread,
        X with dur >= 0, thread names, displayTimeUnit.
  export_verify.py folded FILE
        "frame;...;frame COUNT" lines, the first frame a thread label NAME-TID.
  export_verify.py agree SUMMARY.json CHROME PERFETTO FOLDED [--desc DESC] [--save OUT.json]
        self time per function of the summary's thread (its top_trace) against each export,
        within 1 us plus 1 ns per rounded event; and every function of every thread between
        the three exports. CHROME and PERFETTO are the exports, or the SELF.json (named
        *.self.json) their checks saved with --save: the same self times, without reading
        the export again. DESC: $JITT_PERFETTO_DESC, else
        /work/shared/testdata/perfetto_trace.desc. --save OUT.json: the summary's and every
        export's self times, for `culprit`.
  export_verify.py culprit OUT.json NAME [MIN_MS]
        NAME's self time, summed over threads, is at least MIN_MS (100) in every export and
        in the summary when its top_trace lists NAME.
  export_verify.py selftest DESC
        the checkers on small hand-written traces (protoc --encode), good and bad.

Each prints one short result line and exits 0, or says what is wrong and exits 1 (2 for
usage). Self time is the summary's (agent/analysis/cct.c lane_close): a call's time minus
its callees' and minus its waits. From a timeline: each slice's duration minus its direct
children's, waits and times off the CPU included ("blocked" and "off-cpu" in Chrome,
"blocked on ...", "preempted (CPU n)" and "off CPU: ..." names in Perfetto), summed per
name; those slices themselves are not functions. From folded stacks: the counts of the lines
whose last frame is the function ("[blocked on ...]", "[preempted]" and "[off CPU: ...]"
frames are not functions).
"""
import decimal
import json
import os
import re
import subprocess
import sys
import tempfile

MAX_SHOWN = 12  # problems listed before "... and N more"
# The descriptor set lives beside the project (../shared/testdata), not in it.
DEFAULT_DESC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                            "testdata", "perfetto_trace.desc")
if not os.path.isfile(DEFAULT_DESC):
    DEFAULT_DESC = "/work/shared/testdata/perfetto_trace.desc"


class Bad(Exception):
    """A file that cannot be read as its format at all."""


def fail(msg):
    print(msg)
    sys.exit(1)


def report(what, problems, line):
    """The result of a check: its line, or its problems and exit 1."""
    if problems:
        print("%s: %d problem(s)" % (what, len(problems)))
        for p in problems[:MAX_SHOWN]:
            print("  " + p)
        if len(problems) > MAX_SHOWN:
            print("  ... and %d more" % (len(problems) - MAX_SHOWN))
        sys.exit(1)
    print(line)


# ---- self time from slices ----

# Slices that are no function (export.c's names): a wait, and a time off the CPU outside one
# (the summary's preempted and unwrapped-sleeping time, not self time). Chrome gives them
# categories ("blocked", "off-cpu"); Perfetto and folded only names.
NOT_CODE = re.compile(r"blocked on .*|preempted \(CPU [0-9]+\)|off CPU: .*")
NOT_CODE_FRAME = re.compile(r"\[(?:blocked on .*|preempted|off CPU: .*)\]")


def not_code(name):
    return NOT_CODE.fullmatch(name) is not None


def self_times(intervals):
    """intervals: per track, a list of (begin, end, order, name, wait). Nests them by time
    (a slice is inside the nearest earlier one that ends no sooner; order breaks ties, so
    a parent and a child of equal extent nest in file order) and returns
    {name: [self_ns, slices, bound]}: bound is how far per-event rounding of ticks to ns
    can move the sum (1 ns per slice and per direct child)."""
    out = {}
    for ivs in intervals.values():
        ivs.sort(key=lambda v: (v[0], -v[1], v[2]))
        stack = []  # [end, name, wait, children_ns, nchildren, dur]

        def close(top):
            if not top[2]:
                o = out.setdefault(top[1], [0, 0, 0])
                o[0] += top[5] - top[3]
                o[1] += 1
                o[2] += 1 + top[4]

        for begin, end, _, name, wait in ivs:
            # Zero-length slices may nest either way: they move no time.
            while stack and stack[-1][0] < end:
                close(stack.pop())
            if stack:
                stack[-1][3] += end - begin
                stack[-1][4] += 1
            stack.append([end, name, wait, 0, 0, end - begin])
        while stack:
            close(stack.pop())
    return out


# ---- protobuf text format (protoc --decode's output) ----

ESCAPE = re.compile(rb"\\(?:([0-7]{1,3})|x([0-9a-fA-F]{1,2})|(.))", re.S)
SIMPLE = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b'"': b'"', b"'": b"'", b"\\": b"\\",
          b"a": b"\a", b"b": b"\b", b"f": b"\f", b"v": b"\v", b"?": b"?"}


def unescape(raw):
    """A quoted text-format string (C escapes; protoc writes non-ASCII bytes in octal) as
    bytes."""
    if len(raw) < 2 or raw[0] != '"' or raw[-1] != '"':
        raise Bad("not a string: %r" % raw)

    def one(m):
        if m.group(1):
            return bytes([int(m.group(1), 8) & 0xff])
        if m.group(2):
            return bytes([int(m.group(2), 16)])
        if m.group(3) in SIMPLE:
            return SIMPLE[m.group(3)]
        raise Bad("unknown escape \\%s" % m.group(3).decode("latin-1"))
    return ESCAPE.sub(one, raw[1:-1].encode("utf-8"))


def text(raw):
    try:
        return unescape(raw).decode("utf-8")  # Perfetto's strings are UTF-8
    except UnicodeDecodeError as e:
        raise Bad("a string that is not UTF-8: %s (%s)" % (raw[:80], e))


def text_messages(lines, unknown):
    """The top-level messages of protoc's text output, one at a time, as
    (field name, {field: [value, ...]}): a value is a dict for a message, else the raw
    token (converted where used). A field printed by number is one the schema does not
    know: appended to `unknown` as "line N: ...". (protoc writes one field or one "}" a
    line; this loop is most of the checker's time, hence its plain shape.)"""
    stack, cur = [], None  # the open messages (name, fields); cur: the innermost's fields
    n = 0
    for s in lines:
        n += 1
        s = s.strip()
        if s == "}":
            if not stack:
                raise Bad("line %d: unbalanced }" % n)
            name, msg = stack.pop()
            if stack:
                cur = stack[-1][1]
            else:
                cur = None
                yield name, msg
            continue
        if not s:
            continue
        if s[-1] == "{":  # a string value ends with its quote, so this opens a message
            name, value = s[:-1].rstrip(), {}
        else:
            i = s.find(": ")
            if i < 0:
                raise Bad("line %d: not text format: %r" % (n, s[:80]))
            name, value = s[:i], s[i + 2:]
        if name[0].isdigit():
            unknown.append("line %d: field %s" % (n, s[:80]))
        if cur is None:
            if type(value) is str:
                yield name, value
        else:
            v = cur.get(name)
            if v is None:
                cur[name] = [value]
            else:
                v.append(value)
        if type(value) is dict:
            stack.append((name, value))
            cur = value
    if stack:
        raise Bad("the text ends inside %s" % stack[-1][0])


def one(msg, field, default=None):
    v = msg.get(field)
    return v[-1] if v else default  # a repeated scalar's last value wins, as in protobuf


def num(msg, field, default=None):
    v = one(msg, field)
    return int(v) if v is not None else default  # protoc writes integers in decimal


# ---- Perfetto ----

BOOTTIME = 6  # the trace's default clock (TracePacket.timestamp_clock_id)
CLEARED, NEEDS_STATE = 1, 2  # TracePacket.SequenceFlags
SLICE_BEGIN, SLICE_END, INSTANT = "TYPE_SLICE_BEGIN", "TYPE_SLICE_END", "TYPE_INSTANT"


class Sequence:
    """What a trusted_packet_sequence_id carries from packet to packet (Perfetto's
    PacketSequenceState): interned data and defaults, both reset by
    SEQ_INCREMENTAL_STATE_CLEARED, and its clocks (ids 64 to 127), defined by
    ClockSnapshots on the sequence, which the flag leaves alone."""

    def __init__(self):
        self.cleared = False
        self.interned = {}   # table -> {iid: name}
        self.defaults = {}   # the last TracePacketDefaults since the clear
        self.clocks = {}     # clock id -> [abs ns at snapshot, units at snapshot, mult,
                             #              incremental, current units]


class Perfetto:
    """Reads and checks one Perfetto trace: problems, counts, and per track the slices and
    thread names that `agree` needs."""

    def __init__(self, path, desc):
        self.problems, self.unknown = [], []
        self.packets = self.events = self.slices = 0
        self.seqs = {}
        self.stacks = {}     # track uuid -> [(name, begin ns, order)]
        self.last_ts = {}    # track uuid -> last event's ns
        self.intervals = {}  # track uuid -> [(begin, end, order, name, wait)]
        self.described = {}  # track uuid -> (name, parent uuid)
        self.used = {}       # track uuid -> packet index of its first use
        self.flow_start = {}  # flow id -> ns of the first event that names it
        self.flow_ends = []  # (flow id, ns, packet index)
        self.bytes = os.path.getsize(path)
        with open(path, "rb") as f:
            p = subprocess.Popen(["protoc", "--decode=perfetto.protos.Trace",
                                  "--descriptor_set_in=" + desc], stdin=f,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 encoding="utf-8", errors="strict")
            try:
                for name, msg in text_messages(p.stdout, self.unknown):
                    if name != "packet":
                        self.problems.append("Trace field %s outside any packet" % name)
                        continue
                    self.packets += 1
                    self.packet(msg, self.packets)
            finally:
                p.stdout.close()
                err = p.stderr.read()
                p.wait()
        if p.returncode != 0:
            raise Bad("protoc --decode failed: %s" % err.strip()[:300])
        self.finish()

    def bad(self, i, msg):
        self.problems.append("packet %d: %s" % (i, msg))

    def timestamp(self, seq, pkt, i):
        """The packet's time in absolute ns, through its clock; None without one."""
        ts = num(pkt, "timestamp")
        if ts is None:
            return None
        clock = num(pkt, "timestamp_clock_id")
        if clock is None:
            clock = num(seq.defaults, "timestamp_clock_id", BOOTTIME)
        if clock < 64:
            # Builtin clocks: this exporter's traces have no global ClockSnapshot to
            # relate them, so they are all read as the trace clock.
            return ts
        c = seq.clocks.get(clock)
        if c is None:
            self.bad(i, "timestamp on clock %d, which no ClockSnapshot on sequence %s "
                     "defines" % (clock, num(pkt, "trusted_packet_sequence_id", 0)))
            return None
        abs_ns, units0, mult, incremental, cur = c
        units = cur + ts if incremental else ts
        c[4] = units  # an incremental clock's next packet is a delta from this one
        return abs_ns + (units - units0) * mult

    def snapshot(self, seq, snap, i):
        clocks = snap.get("clocks", [])
        # The reference: a builtin clock read at the same instant (BOOTTIME preferred),
        # which is what the sequence's own clocks are converted to.
        ref = None
        for c in clocks:
            cid = num(c, "clock_id", 0)
            if cid < 64 and (ref is None or cid == BOOTTIME):
                ref = num(c, "timestamp", 0) * num(c, "unit_multiplier_ns", 1)
        for c in clocks:
            cid = num(c, "clock_id", 0)
            if cid < 64:
                continue
            if cid > 127:
                self.bad(i, "ClockSnapshot clock_id %d is reserved" % cid)
                continue
            ts, mult = num(c, "timestamp", 0), num(c, "unit_multiplier_ns", 1)
            incr = one(c, "is_incremental") == "true"
            seq.clocks[cid] = [ts * mult if ref is None else ref, ts, mult, incr, ts]

    def lookup(self, seq, table, iid, i, what):
        name = seq.interned.get(table, {}).get(iid)
        if name is None:
            self.bad(i, "%s %d used but not defined on its sequence (since its last "
                     "clear)" % (what, iid))
        return name

    def packet(self, pkt, i):
        sid = num(pkt, "trusted_packet_sequence_id", 0)
        seq = self.seqs.setdefault(sid, Sequence())
        flags = num(pkt, "sequence_flags", 0)
        if flags & CLEARED or one(pkt, "incremental_state_cleared") == "true":
            # A fresh generation: interning and defaults start empty (Perfetto's
            # PacketSequenceStateBuilder::OnIncrementalStateCleared).
            seq.cleared, seq.interned, seq.defaults = True, {}, {}
        elif flags & NEEDS_STATE and not seq.cleared:
            self.bad(i, "SEQ_NEEDS_INCREMENTAL_STATE on sequence %d before any "
                     "SEQ_INCREMENTAL_STATE_CLEARED (Perfetto drops it)" % sid)
        for table, entries in one(pkt, "interned_data", {}).items():
            names = seq.interned.setdefault(table, {})
            for e in entries:
                if isinstance(e, dict) and "iid" in e:
                    names[num(e, "iid")] = text(one(e, "name", '""'))
        if "trace_packet_defaults" in pkt:
            seq.defaults = one(pkt, "trace_packet_defaults")
        if "clock_snapshot" in pkt:
            # The snapshot's own packet is not a step of an incremental clock.
            self.snapshot(seq, one(pkt, "clock_snapshot"), i)
            if "track_event" in pkt:
                self.bad(i, "a track_event in a ClockSnapshot packet")
            return
        ts = self.timestamp(seq, pkt, i)
        if "track_descriptor" in pkt:
            td = one(pkt, "track_descriptor")
            uuid = num(td, "uuid")
            label = None
            for kind, field in (("thread", "thread_name"), ("process", "process_name")):
                if kind in td:
                    label = one(one(td, kind), field)
            label = label if label is not None else one(td, "name")
            self.described[uuid] = (text(label) if label else "", num(td, "parent_uuid"))
        if "track_event" in pkt:
            self.track_event(seq, one(pkt, "track_event"), ts, i)

    def track_event(self, seq, te, ts, i):
        self.events += 1
        ted = one(seq.defaults, "track_event_defaults", {})
        track = num(te, "track_uuid", num(ted, "track_uuid"))
        if track is None:
            self.bad(i, "track_event with no track_uuid and no default track")
            return
        self.used.setdefault(track, i)
        if ts is None:
            self.bad(i, "track_event without a timestamp")
            return
        if "timestamp_delta_us" in te or "timestamp_absolute_us" in te:
            self.bad(i, "legacy TrackEvent timestamps are not read by this checker")
        name = None
        if "name" in te:
            name = text(one(te, "name"))
        elif "name_iid" in te:
            name = self.lookup(seq, "event_names", num(te, "name_iid"), i, "name_iid")
        for iid in te.get("category_iids", []):
            self.lookup(seq, "event_categories", int(iid), i, "category_iid")
        for ann in te.get("debug_annotations", []):
            if "name_iid" in ann:
                self.lookup(seq, "debug_annotation_names", num(ann, "name_iid"), i,
                            "debug annotation name_iid")
        if ts < self.last_ts.get(track, ts):
            self.bad(i, "time goes back on track %d: %d ns after %d ns"
                     % (track, ts, self.last_ts[track]))
        self.last_ts[track] = ts
        kind = one(te, "type")
        stack = self.stacks.setdefault(track, [])
        if kind == SLICE_BEGIN:
            if not name:
                self.bad(i, "slice begin without a name")
            stack.append((name or "", ts, i))
        elif kind == SLICE_END:
            if not stack:
                self.bad(i, "slice end without a begin on track %d" % track)
            else:
                bname, begin, order = stack.pop()
                if ts < begin:
                    self.bad(i, "slice %r ends before it begins" % bname)
                self.slices += 1
                self.intervals.setdefault(track, []).append(
                    (begin, ts, order, bname, not_code(bname)))
        elif kind != INSTANT:
            self.bad(i, "track_event of type %s" % kind)
        for fid in te.get("flow_ids", []):
            self.flow_start.setdefault(int(fid), ts)
        for fid in te.get("terminating_flow_ids", []):
            self.flow_ends.append((int(fid), ts, i))

    def finish(self):
        for track, stack in self.stacks.items():
            if stack:
                self.problems.append("track %d: %d slice(s) never end, the first %r"
                                     % (track, len(stack), stack[0][0]))
        for track, i in self.used.items():
            if track not in self.described:
                self.bad(i, "track %d has no track_descriptor" % track)
        for track, (_, parent) in self.described.items():
            if parent is not None and parent not in self.described:
                self.problems.append("track %d: parent %d has no track_descriptor"
                                     % (track, parent))
        for fid, ts, i in self.flow_ends:
            if fid not in self.flow_start:
                self.bad(i, "terminating flow %d was never started" % fid)
            elif ts < self.flow_start[fid]:
                self.bad(i, "flow %d terminates at %d ns, before its start at %d ns"
                         % (fid, ts, self.flow_start[fid]))
        self.problems = ["unknown field, " + u for u in self.unknown] + self.problems

    def thread_of(self, track):
        return self.described.get(track, ("", None))[0]


def check_perfetto(argv):
    (path, desc), save = options(argv, 2, "--save")
    pf = Perfetto(path, desc)
    save_selves(save, "perfetto", pf)
    report("perfetto", pf.problems,
           "perfetto: %d packets, %d slices, %d flows (%d terminated), %.1f bytes/event"
           % (pf.packets, pf.slices, len(pf.flow_start), len(pf.flow_ends),
              pf.bytes / max(pf.events, 1)))


# ---- Chrome trace-event JSON ----

def ts_ns(v):
    """A Chrome timestamp (microseconds, read exactly as a Decimal) in integer ns."""
    if isinstance(v, bool) or not isinstance(v, (int, decimal.Decimal)) or v < 0:
        raise ValueError("bad ts %r" % (v,))
    return int((decimal.Decimal(v) * 1000).to_integral_value())


class Chrome:
    def __init__(self, path):
        def constant(name):
            raise Bad("not strict JSON: %s" % name)
        try:
            with open(path, encoding="utf-8", errors="strict") as f:
                doc = json.load(f, parse_constant=constant, parse_float=decimal.Decimal)
        except (UnicodeDecodeError, ValueError) as e:
            raise Bad("not strict JSON: %s" % e)
        self.problems = []
        if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
            raise Bad("not an object with a traceEvents list")
        if doc.get("displayTimeUnit") not in ("ms", "ns"):
            self.problems.append("displayTimeUnit missing or not ms/ns")
        self.names = {}      # (pid, tid) -> thread name
        self.intervals = {}  # (pid, tid) -> [(begin, end, order, name, wait)]
        stacks, last, self.slices, self.events, flows = {}, {}, 0, 0, {}
        for i, e in enumerate(doc["traceEvents"]):
            try:
                self.event(e, i, stacks, last, flows)
            except (KeyError, TypeError, ValueError) as x:
                self.problems.append("event %d: %s: %s" % (i, x.__class__.__name__, x))
        for key, st in stacks.items():
            if st:
                self.problems.append("thread %r: %d B without E, the first %r"
                                     % (key, len(st), st[0][0]))
        for key in set(last) - set(self.names):
            self.problems.append("thread %r has events but no thread_name" % (key,))

    def event(self, e, i, stacks, last, flows):
        ph = e["ph"]
        key = (e["pid"], e["tid"])
        if not all(isinstance(k, int) for k in key):
            raise ValueError("pid and tid must be integers")
        if ph == "M":
            if e["name"] == "thread_name":
                self.names[key] = e["args"]["name"]
            return
        self.events += 1
        ts = ts_ns(e["ts"])
        if ts < last.get(key, 0):
            self.problems.append("event %d: ts goes back on %r: %d ns after %d ns"
                                 % (i, key, ts, last[key]))
        last[key] = ts
        name = e.get("name")
        named = isinstance(name, str) and name != ""
        wait = e.get("cat") in ("blocked", "off-cpu")
        st = stacks.setdefault(key, [])
        if ph == "B":
            if not named:
                self.problems.append("event %d: B without a name" % i)
            st.append((name if named else "", ts, i, wait))
        elif ph == "E":
            if not st:
                self.problems.append("event %d: E without a B on %r" % (i, key))
                return
            bname, begin, order, bwait = st.pop()
            if not named:
                self.problems.append("event %d: E without a name (its B is %r)"
                                     % (i, bname))
            elif name != bname:
                self.problems.append("event %d: E named %r ends B %r" % (i, name, bname))
            self.slices += 1
            self.intervals.setdefault(key, []).append((begin, ts, order, bname, bwait))
        elif ph == "X":
            dur = ts_ns(e["dur"])
            if not named:
                self.problems.append("event %d: X without a name" % i)
            self.slices += 1
            self.intervals.setdefault(key, []).append((ts, ts + dur, i, name, wait))
        elif ph in ("s", "t", "f"):  # flow events: each step after a start
            fid = (e.get("cat"), e["id"])
            if ph == "s":
                flows.setdefault(fid, ts)
            elif fid not in flows or ts < flows[fid]:
                self.problems.append("event %d: flow %r step before its start" % (i, fid))
        elif ph not in ("i", "I", "C"):
            self.problems.append("event %d: unexpected phase %r" % (i, ph))


    def thread_of(self, key):
        return self.names.get(key)


def check_chrome(argv):
    (path,), save = options(argv, 1, "--save")
    c = Chrome(path)
    save_selves(save, "chrome", c)
    report("chrome", c.problems, "chrome: %d events, %d slices, %d threads"
           % (c.events, c.slices, len(c.names)))


# ---- folded stacks ----

FOLDED_LINE = re.compile(r"([^;\n]+(?:;[^;\n]+)*) ([1-9][0-9]*)")
LABEL = re.compile(r".+-[0-9]+")


def unfold(frame):
    """A folded frame's text back to the name (the export writes \\xNN and \\\\)."""
    if "\\" not in frame:
        return frame
    raw = re.sub(rb"\\(x[0-9a-fA-F]{2}|\\)",
                 lambda m: b"\\" if m.group(1) == b"\\" else bytes([int(m.group(1)[1:], 16)]),
                 frame.encode("utf-8"))
    return raw.decode("utf-8", "replace")


class Folded:
    def __init__(self, path):
        with open(path, "rb") as f:
            try:
                data = f.read().decode("utf-8")
            except UnicodeDecodeError as e:
                raise Bad("not UTF-8: %s" % e)
        self.problems, self.threads, self.total = [], {}, 0
        lines = data.split("\n")
        if lines[-1] != "" or len(lines) < 2:
            self.problems.append("no lines, or no final newline")
        self.lines = lines[:-1]
        for n, line in enumerate(self.lines, 1):
            m = FOLDED_LINE.fullmatch(line)
            if not m:
                self.problems.append("line %d: not \"frame;...;frame COUNT\": %r"
                                     % (n, line[:80]))
                continue
            frames, count = m.group(1).split(";"), int(m.group(2))
            if not LABEL.fullmatch(frames[0]):
                self.problems.append("line %d: first frame %r is not a thread label "
                                     "NAME-TID" % (n, frames[0]))
            self.total += count
            thread = frames[0].rsplit("-", 1)[0]
            leaf = frames[-1]
            if len(frames) < 2 or NOT_CODE_FRAME.fullmatch(leaf):
                continue  # outside any function, a wait, off the CPU: no function's self
            o = self.threads.setdefault(thread, {}).setdefault(unfold(leaf), [0, 0, 0])
            o[0] += count
            o[1] += 1
            o[2] += 1  # each line's count is within 1 ns of its ticks


def check_folded(argv):
    (path,) = options(argv, 1)[0]
    f = Folded(path)
    report("folded", f.problems, "folded: %d lines, %d threads, %d ns in all"
           % (len(f.lines), len(f.threads), f.total))


# ---- agreement with the summary ----

def summary_self(path):
    """The summary's thread and its whole-trace self time per function name, from
    top_trace (summary.c: the window's thread only, over the whole trace). The third
    element says the function may have run inside its waits: with the switch records
    (window.sched.blocked_is "asleep") the summary counts a wrapped wait's time on the CPU
    as the function's self time, where the exports count the wait whole as a wait
    (docs/summary-format.md): the exports' self time is then at most the summary's."""
    with open(path, encoding="utf-8") as f:
        s = json.load(f)
    names = [fn[2] for fn in s["functions"]]
    asleep = s.get("window", {}).get("sched", {}).get("blocked_is") == "asleep"
    out, skipped = {}, []
    for f, self_ns, calls, blocked, cut in (e[:5] for e in s["top_trace"]):
        if names[f] == "":
            skipped.append("function %d (no symbol: the exports name it otherwise)" % f)
            continue
        o = out.setdefault(names[f], [0, 0, False])
        o[0] += self_ns
        o[1] += calls
        o[2] = o[2] or (asleep and blocked > 0)
    if s.get("top_trace_left_out"):  # the 4 KiB cap cut the list (docs/summary-format.md)
        skipped.append("%d left out of top_trace by the summary" % s["top_trace_left_out"])
    return s["thread"], out, skipped


SELF_SCHEMA = "export_verify.self"


def selves(timeline):
    """Per thread name: how many threads have it, and their self times (self_times)."""
    by = {}
    for key, ivs in timeline.intervals.items():
        by.setdefault(timeline.thread_of(key) or "", {})[key] = ivs
    return {name: {"threads": len(ivs), "self": self_times(ivs)} for name, ivs in by.items()}


def save_selves(path, fmt, timeline):
    """`--save`: a check's self times per thread, for `agree` to read instead of the
    export (reading a Perfetto trace again is most of a minute on a loaded machine)."""
    if path:
        with open(path, "w") as f:
            json.dump({"schema": SELF_SCHEMA, "format": fmt, "threads": selves(timeline)}, f)


def load_selves(path, fmt, desc):
    """An export's self times per thread: from the SELF.json its check saved, else read."""
    if path.endswith(".self.json"):
        with open(path, encoding="utf-8") as f:
            saved = json.load(f)
        if saved.get("schema") != SELF_SCHEMA or saved.get("format") != fmt:
            raise Bad("%s: not the self times of a %s check" % (path, fmt))
        return saved["threads"]
    return selves(Chrome(path) if fmt == "chrome" else Perfetto(path, desc))


def options(argv, npos, *names):
    """argv's npos positional arguments, and the values of the --options named (None when
    absent); usage() on anything else."""
    got, pos, i = dict.fromkeys(names), [], 0
    while i < len(argv):
        if argv[i] in got and i + 1 < len(argv):
            got[argv[i]] = argv[i + 1]
            i += 2
        elif argv[i].startswith("--"):
            usage()
        else:
            pos.append(argv[i])
            i += 1
    if len(pos) != npos:
        usage()
    return (pos, *got.values())


def compare(name, sns, calls, got, ran_in_waits=False):
    """One function's row: [name, summary ns, each export's ns], and whether any export is
    further from the summary than rounding explains (1 us, and 1 ns per rounded event on
    either side: the summary rounds once per function, an export per event or line). A
    function that ran inside its waits (summary_self) may have less in the exports."""
    row, bad = [name, sns], False
    for fmt in FORMATS:
        ens, _, bound = got[fmt].get(name, (0, 0, 0))
        row.append(ens)
        low = sns if not ran_in_waits else 0
        bad |= ens - sns > 1000 + bound + calls or low - ens > 1000 + bound + calls
    return row, bad


FORMATS = ("chrome", "perfetto", "folded")


def agree(argv):
    (spath, cpath, ppath, fpath), desc, save = options(argv, 4, "--desc", "--save")
    desc = desc or os.environ.get("JITT_PERFETTO_DESC", DEFAULT_DESC)
    thread, summ, skipped = summary_self(spath)
    every = {}  # format -> thread name -> self times
    for fmt, path in (("chrome", cpath), ("perfetto", ppath)):
        every[fmt] = load_selves(path, fmt, desc)
        t = every[fmt].get(thread)
        if t and t["threads"] != 1:
            fail("agree: %d threads named %r in the %s export" % (t["threads"], thread, fmt))
        every[fmt] = {k: v["self"] for k, v in every[fmt].items()}
    every["folded"] = Folded(fpath).threads
    missing = [fmt for fmt in FORMATS if thread not in every[fmt]]
    if missing:
        fail("agree: no thread %r in %s" % (thread, ", ".join(missing)))
    if save:
        with open(save, "w") as f:
            json.dump({"thread": thread, "summary": summ, "exports": every}, f)
    # The summary's functions, on its thread.
    mine = {fmt: every[fmt][thread] for fmt in FORMATS}
    rows = [compare(name, sns, calls, mine, waits)
            for name, (sns, calls, waits) in sorted(summ.items(), key=lambda kv: -kv[1][0])]
    worst = max(((abs(r[k] - r[1]), r[k] - r[1], FORMATS[k - 2], r[0])
                 for r, _ in rows for k in (2, 3, 4)), default=(0, 0, "-", "-"))
    # Every function of every thread, between the exports (the summary lists one thread's
    # top functions only): the first that has it is the reference.
    others, nothers = [], 0
    for th in sorted(set().union(*(every[fmt] for fmt in FORMATS))):
        got = {fmt: every[fmt].get(th, {}) for fmt in FORMATS}
        for name in sorted(set().union(*got.values())):
            ref = next(got[fmt][name] for fmt in FORMATS if name in got[fmt])
            row, bad = compare(name, ref[0], ref[2], got)
            nothers += 1
            if bad:
                others.append((th, row))
    head = "agree: thread %s, %d functions" % (thread, len(rows))
    note = "; skipped %s" % ", ".join(skipped) if skipped else ""
    if any(bad for _, bad in rows) or others:
        print("%s: self times disagree (ns)%s" % (head, note))
        line = "%s %-44s %14s %14s %14s %14s"
        print(line % (" ", "function", "summary", *FORMATS))
        for row, bad in rows:
            print(line % ("!" if bad else " ", *row))
        if others:
            print("between the exports, %d of %d functions of all threads (the first "
                  "export's as the reference):" % (len(others), nothers))
            for th, row in others[:MAX_SHOWN]:
                print(line % ("!", "%s: %s" % (th, row[0]), "", *row[2:]))
        sys.exit(1)
    print("%s agree; largest difference %d ns (%s, %s); %d functions of %d threads agree "
          "between the exports%s" % (head, worst[1], worst[2], worst[3], nothers,
                                     len(every["folded"]), note))


def culprit(argv):
    """NAME's self time, summed over the threads, in the summary (when it lists it: its
    thread is the anomaly's) and every export."""
    if len(argv) not in (2, 3):
        usage()
    with open(argv[0], encoding="utf-8") as f:
        saved = json.load(f)
    name, min_ns = argv[1], int(float(argv[2] if len(argv) == 3 else 100) * 1e6)
    got = {}
    if name in saved["summary"]:
        got["summary"] = saved["summary"][name][0]
    for fmt in FORMATS:
        got[fmt] = sum(th.get(name, [0])[0] for th in saved["exports"][fmt].values())
    line = ", ".join("%s %.1f ms" % (k, v / 1e6) for k, v in got.items())
    if "summary" not in got:
        line += " (not in the summary's top_trace of thread %s)" % saved["thread"]
    small = [k for k, v in got.items() if v < min_ns]
    if small:
        fail("culprit %s: self time under %g ms in %s: %s"
             % (name, min_ns / 1e6, ", ".join(small), line))
    print("culprit %s: %s" % (name, line))


# ---- self-test: the Perfetto reader on hand-written traces ----

# A trace with an incremental clock in us (so any misreading moves times by 1000x or
# makes them go back), interned names, nested slices and waits, and a flow from one
# sequence to another. Expected: ui's "a" [1000000, 1010000] ns holding "b"
# [1002000, 1005000] and a wait [1006000, 1007000]: a's self 10 - 3 - 1 = 6 us.
GOOD = """
packet { trusted_packet_sequence_id: 9 track_descriptor { uuid: 1 process { pid: 7 } } }
packet { trusted_packet_sequence_id: 9
  track_descriptor { uuid: 2 parent_uuid: 1 thread { pid: 7 tid: 7 thread_name: "ui" } } }
packet { trusted_packet_sequence_id: 9
  track_descriptor { uuid: 3 parent_uuid: 1 thread { pid: 7 tid: 8 thread_name: "w\\303\\251" } } }
packet { trusted_packet_sequence_id: 2 sequence_flags: 1
  clock_snapshot { clocks { clock_id: 6 timestamp: 1000000 }
                   clocks { clock_id: 64 timestamp: 500 is_incremental: true
                            unit_multiplier_ns: 1000 } } }
packet { trusted_packet_sequence_id: 2 sequence_flags: 1
  trace_packet_defaults { timestamp_clock_id: 64 track_event_defaults { track_uuid: 2 } } }
packet { trusted_packet_sequence_id: 2 sequence_flags: 2 timestamp: 0
  interned_data { event_names { iid: 1 name: "a" } }
  track_event { type: TYPE_SLICE_BEGIN name_iid: 1 } }
packet { trusted_packet_sequence_id: 2 sequence_flags: 2 timestamp: 2
  interned_data { event_names { iid: 2 name: "b" } }
  track_event { type: TYPE_SLICE_BEGIN name_iid: 2 flow_ids: 77 } }
packet { trusted_packet_sequence_id: 2 sequence_flags: 2 timestamp: 3
  track_event { type: TYPE_SLICE_END } }
packet { trusted_packet_sequence_id: 2 sequence_flags: 2 timestamp: 1
  interned_data { event_names { iid: 3 name: "blocked on 0x1" } }
  track_event { type: TYPE_SLICE_BEGIN name_iid: 3 } }
packet { trusted_packet_sequence_id: 2 sequence_flags: 2 timestamp: 1
  track_event { type: TYPE_SLICE_END } }
packet { trusted_packet_sequence_id: 2 sequence_flags: 2 timestamp: 3
  track_event { type: TYPE_SLICE_END } }
packet { trusted_packet_sequence_id: 3 sequence_flags: 1 timestamp: 1004000
  interned_data { event_names { iid: 1 name: "c" } }
  track_event { track_uuid: 3 type: TYPE_SLICE_BEGIN name_iid: 1 terminating_flow_ids: 77 } }
packet { trusted_packet_sequence_id: 3 sequence_flags: 2 timestamp: 1009000
  track_event { track_uuid: 3 type: TYPE_SLICE_END } }
"""

# The same on one sequence with absolute timestamps, which a clear and new defaults reach
# after the incremental part: the clear drops the clock as the default.
ABSOLUTE = """
packet { trusted_packet_sequence_id: 9 track_descriptor { uuid: 2 thread { pid: 7 tid: 7 thread_name: "ui" } } }
packet { trusted_packet_sequence_id: 4
  clock_snapshot { clocks { clock_id: 6 timestamp: 0 }
                   clocks { clock_id: 100 timestamp: 0 is_incremental: true } } }
packet { trusted_packet_sequence_id: 4 sequence_flags: 1
  trace_packet_defaults { timestamp_clock_id: 100 track_event_defaults { track_uuid: 2 } } }
packet { trusted_packet_sequence_id: 4 sequence_flags: 2 timestamp: 10
  interned_data { event_names { iid: 5 name: "x" } }
  track_event { type: TYPE_SLICE_BEGIN name_iid: 5 } }
packet { trusted_packet_sequence_id: 4 sequence_flags: 2 timestamp: 0
  track_event { type: TYPE_SLICE_END } }
packet { trusted_packet_sequence_id: 4 sequence_flags: 1 timestamp: 1000000
  trace_packet_defaults { track_event_defaults { track_uuid: 2 } }
  interned_data { event_names { iid: 1 name: "a" } event_names { iid: 2 name: "b" } }
  track_event { type: TYPE_SLICE_BEGIN name_iid: 1 } }
packet { trusted_packet_sequence_id: 4 sequence_flags: 2 timestamp: 1002000
  track_event { type: TYPE_SLICE_BEGIN name_iid: 2 } }
packet { trusted_packet_sequence_id: 4 sequence_flags: 2 timestamp: 1005000
  track_event { type: TYPE_SLICE_END } }
packet { trusted_packet_sequence_id: 4 sequence_flags: 2 timestamp: 1006000
  track_event { type: TYPE_SLICE_BEGIN name: "blocked on 0x1" } }
packet { trusted_packet_sequence_id: 4 sequence_flags: 2 timestamp: 1007000
  track_event { type: TYPE_SLICE_END } }
packet { trusted_packet_sequence_id: 4 sequence_flags: 2 timestamp: 1010000
  track_event { type: TYPE_SLICE_END } }
"""

HEAD = ('packet { trusted_packet_sequence_id: 9 track_descriptor { uuid: 2 thread '
        '{ pid: 7 tid: 7 thread_name: "ui" } } }\n')
SEQ1 = "trusted_packet_sequence_id: 1 "
DEF = SEQ1 + "sequence_flags: 1 trace_packet_defaults { track_event_defaults { track_uuid: 2 } } "
NAMES = 'interned_data { event_names { iid: 1 name: "a" } } '


def pk(body):
    return "packet { %s }\n" % body


BEGIN = "track_event { type: TYPE_SLICE_BEGIN name_iid: 1 }"
END = "track_event { type: TYPE_SLICE_END }"
# Each bad trace, and what the checker must say about it.
BAD = [
    ("a name used before it is interned",
     HEAD + pk(DEF) + pk(SEQ1 + "timestamp: 1 " + BEGIN) + pk(SEQ1 + "timestamp: 2 " + NAMES + END),
     "name_iid 1 used but not defined"),
    ("a name interned before the sequence was cleared",
     HEAD + pk(DEF + "timestamp: 1 " + NAMES) + pk(DEF + "timestamp: 2 " + BEGIN)
     + pk(SEQ1 + "timestamp: 3 " + END), "name_iid 1 used but not defined"),
    ("a name interned on another sequence",
     HEAD + pk("trusted_packet_sequence_id: 5 sequence_flags: 1 " + NAMES)
     + pk(DEF + "timestamp: 2 " + BEGIN) + pk(SEQ1 + "timestamp: 3 " + END),
     "name_iid 1 used but not defined"),
    ("a begin never ended",
     HEAD + pk(DEF + NAMES + "timestamp: 1 " + BEGIN), "slice(s) never end"),
    ("an end without a begin",
     HEAD + pk(DEF + "timestamp: 1 " + END), "slice end without a begin"),
    ("time going back on a track",
     HEAD + pk(DEF + NAMES + "timestamp: 5 " + BEGIN) + pk(SEQ1 + "timestamp: 4 " + END),
     "time goes back"),
    ("an incremental clock read as absolute would be fine, read right it goes back",
     HEAD + pk(SEQ1 + "clock_snapshot { clocks { clock_id: 6 timestamp: 100 } clocks "
                      "{ clock_id: 64 timestamp: 0 is_incremental: true } }")
     + pk(DEF + NAMES + "timestamp: 50 timestamp_clock_id: 64 " + BEGIN)
     + pk(SEQ1 + "timestamp: 60 timestamp_clock_id: 6 " + END), "time goes back"),
    ("a sequence clock with no snapshot",
     HEAD + pk(DEF + NAMES + "timestamp: 1 timestamp_clock_id: 70 " + BEGIN),
     "which no ClockSnapshot on sequence 1 defines"),
    ("a track with no descriptor",
     pk(DEF + NAMES + "timestamp: 1 " + BEGIN) + pk(SEQ1 + "timestamp: 2 " + END),
     "track 2 has no track_descriptor"),
    ("a flow terminated but never started",
     HEAD + pk(DEF + NAMES + "timestamp: 1 track_event { type: TYPE_INSTANT name_iid: 1 "
               "terminating_flow_ids: 5 }"), "terminating flow 5 was never started"),
    ("a flow terminated before its start",
     HEAD + pk('trusted_packet_sequence_id: 9 track_descriptor { uuid: 3 name: "t3" }')
     + pk(DEF + NAMES + "timestamp: 10 track_event { type: TYPE_INSTANT name_iid: 1 "
          "flow_ids: 5 }")
     + pk("trusted_packet_sequence_id: 2 sequence_flags: 1 timestamp: 3 " + NAMES
          + "track_event { track_uuid: 3 type: TYPE_INSTANT name_iid: 1 "
            "terminating_flow_ids: 5 }"), "before its start"),
    ("incremental state needed before any clear",
     HEAD + pk(SEQ1 + "sequence_flags: 2 timestamp: 1 track_event { track_uuid: 2 "
               "type: TYPE_INSTANT name: \"i\" }"), "before any SEQ_INCREMENTAL_STATE_CLEARED"),
]


def selftest(argv):
    if len(argv) != 1:
        usage()
    desc, problems, n = argv[0], [], 0
    tmp = tempfile.mkdtemp(prefix="export-verify-")

    def encode(name, textproto, extra=b""):
        path = os.path.join(tmp, name + ".pftrace")
        r = subprocess.run(["protoc", "--encode=perfetto.protos.Trace",
                            "--descriptor_set_in=" + desc], input=textproto.encode(),
                           capture_output=True)
        if r.returncode != 0:
            raise Bad("protoc --encode %s: %s" % (name, r.stderr.decode()[:300]))
        with open(path, "wb") as f:
            f.write(r.stdout + extra)
        return path

    def expect(what, cond, detail=""):
        nonlocal n
        n += 1
        if not cond:
            problems.append("%s%s" % (what, detail and ": " + detail))

    try:
        for name, src in (("good", GOOD), ("absolute", ABSOLUTE)):
            pf = Perfetto(encode(name, src), desc)
            expect(name + " trace has no problem", not pf.problems, "; ".join(pf.problems))
            ui = [pf.intervals[t] for t in pf.intervals if pf.thread_of(t) == "ui"]
            ui = sorted(ui[0]) if ui else []
            want = [(1000000, 1010000, "a"), (1002000, 1005000, "b"),
                    (1006000, 1007000, "blocked on 0x1")]
            if name == "absolute":
                want.insert(0, (10, 10, "x"))
            got = [(b, e, nm) for b, e, _, nm, _ in ui]
            expect(name + ": slices at their absolute times", got == want,
                   "got %r" % got)
            st = self_times({0: list(ui)})
            expect(name + ": self time of a is 6 us, of b 3 us, no wait as a function",
                   st.get("a", [0])[0] == 6000 and st.get("b", [0])[0] == 3000
                   and "blocked on 0x1" not in st, "got %r" % st)
            if name == "good":
                expect("good: the flow started and terminated",
                       len(pf.flow_start) == 1 and len(pf.flow_ends) == 1 and
                       pf.thread_of(3) == "w\u00e9", "%r %r" % (pf.flow_start, pf.flow_ends))
        for what, src, says in BAD:
            pf = Perfetto(encode("bad", src), desc)
            expect("bad trace (%s) is refused" % what, any(says in p for p in pf.problems),
                   "problems: %r" % pf.problems)
        # A field the schema does not know (packet { 250: 1 }), appended as raw bytes.
        pf = Perfetto(encode("unknown", GOOD, b"\x0a\x03\xd0\x0f\x01"), desc)
        expect("an unknown field is refused",
               any(p.startswith("unknown field") for p in pf.problems), repr(pf.problems))
        expect("text strings unescape", unescape(r'"a\303\251\"\\\n\x41"') ==
               b'a\xc3\xa9"\\\nA')
        # Chrome: E events must carry their B's name.
        for what, events, says in (
                ("E without a name", '{"ph":"E","ts":2}', "E without a name"),
                ("E named otherwise", '{"ph":"E","ts":2,"name":"b"}', "E named 'b'")):
            path = os.path.join(tmp, "c.json")
            with open(path, "w") as f:
                f.write('{"displayTimeUnit":"ns","traceEvents":['
                        '{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"t"}},'
                        '{"ph":"B","pid":1,"tid":1,"ts":1.5,"name":"a"},'
                        + events.replace('{', '{"pid":1,"tid":1,', 1) + ']}')
            c = Chrome(path)
            expect("chrome: %s is refused" % what, any(says in p for p in c.problems),
                   repr(c.problems))
        # Chrome self time: a [1, 10] us holds b [2, 4] us, a wait [5, 6] us, an X
        # c [7, 7.5] us and a preemption [8, 9] us; a's self is 9 - 2 - 1 - 0.5 - 1 us.
        with open(path, "w") as f:
            f.write('{"displayTimeUnit":"ns","traceEvents":[' + ",".join(
                '{"pid":1,"tid":1,%s}' % e for e in (
                    '"ph":"M","name":"thread_name","args":{"name":"t"}',
                    '"ph":"B","ts":1,"name":"a"', '"ph":"B","ts":2.000,"name":"b"',
                    '"ph":"E","ts":4,"name":"b"',
                    '"ph":"B","ts":5,"name":"blocked on 0x1","cat":"blocked"',
                    '"ph":"E","ts":6,"name":"blocked on 0x1","cat":"blocked"',
                    '"ph":"X","ts":7,"dur":0.5,"name":"c"',
                    '"ph":"X","ts":8,"dur":1,"name":"preempted (CPU 2)","cat":"off-cpu"',
                    '"ph":"E","ts":10,"name":"a"'))
                + ']}')
        c = Chrome(path)
        st = selves(c).get("t", {}).get("self", {})
        expect("chrome: self times from B/E, X and a wait",
               not c.problems and {k: v[0] for k, v in st.items()} ==
               {"a": 4500, "b": 2000, "c": 500}, "%r %r" % (c.problems, st))
        # Folded: the last frame's count, not the thread label's.
        with open(path, "w") as f:
            f.write("ui-1;a;b 5\nui-1;a 7\nui-1 3\nui-1;a;[blocked on 0x1] 4\n"
                    "ui-1;x\\x3by\\\\ 2\nui-1;a;[preempted] 6\n"
                    "ui-1;b;[off CPU: sleeping] 1\n")
        fo = Folded(path)
        expect("folded: self time per last frame", not fo.problems and
               {k: v[0] for k, v in fo.threads.get("ui", {}).items()} ==
               {"a": 7, "b": 5, "x;y\\": 2}, "%r %r" % (fo.problems, fo.threads))
        # Agreement: 1 us plus the rounding bounds, no more.
        for got, bad in ((1001000 + 3 + 2, False), (1001000 + 3 + 3, True)):
            _, wrong = compare("f", 1000000, 2, {fmt: {"f": [got, 1, 3]} for fmt in FORMATS})
            expect("agree: %d ns against 1000000 %s" % (got, "fails" if bad else "passes"),
                   wrong == bad)
    finally:
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)
    report("selftest", problems, "selftest: %d checks passed" % n)


def usage():
    print(__doc__[__doc__.index("usage:"):__doc__.index("\n\nEach prints")], file=sys.stderr)
    sys.exit(2)


def main(argv):
    cmds = {"perfetto": check_perfetto, "chrome": check_chrome, "folded": check_folded,
            "agree": agree, "culprit": culprit, "selftest": selftest}
    if len(argv) < 1 or argv[0] not in cmds:
        usage()
    try:
        cmds[argv[0]](argv[1:])
    except (Bad, OSError) as e:
        fail("%s: %s" % (argv[0], e))


if __name__ == "__main__":
    main(sys.argv[1:])
