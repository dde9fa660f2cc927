"""Test-only trace writer in Python (same bytes as runtime/include/vprof/trace_format.h),
used by the analyzer's pytest golden and CLI tests to build exact timelines."""
import pathlib
import struct

K = dict(ENTER=1, EXIT=2, BEGIN=16, END=17, ATTACH=18, DETACH=19, LABEL=20,
         LOCK_WAIT=32, LOCK_ACQUIRE=33, LOCK_RELEASE=34,
         COND_WAIT_BEGIN=48, COND_WAIT_END=49, COND_WAIT_TIMEOUT=50, COND_SIGNAL=51,
         COND_BROADCAST=52, SEM_WAIT=56, SEM_ACQUIRE=57, SEM_POST=58,
         HANDOFF_SEND=64, HANDOFF_RECV=65, WAIT_BEGIN=66, WAIT_END=67, WAKE=68)


VERSION = 2


def stream_bytes(pid, tid, seq, recs, window=None, hz=1_000_000_000, base=1000, clock=2,
                 features=3, window_offset=256):
    """One stream file (trace_format.h) holding `recs` [(head, arg)]: the header, then a
    window of `window` slots at `window_offset` (default: right after the header; all
    records plus 4 empty slots) holding the newest records, then the data region with the
    earlier ones, as libvprof_rt leaves a stream whose window has been flushed
    len(recs) // window times (libvprof_rt: window_offset 4096, window 4096)."""
    n = len(recs)
    window = window or n + 4
    committed = (n - 1) // window * window if n else 0
    h = bytearray(256)
    h[0:8] = b"VPROFTRC"
    struct.pack_into("<IIII", h, 8, VERSION, 256, 16, clock)
    struct.pack_into("<QQ", h, 24, hz, base)
    struct.pack_into("<IIII", h, 56, pid, tid, 0, seq)
    struct.pack_into("<QQQ", h, 72, features, 0, window)  # features, dropped, window_records
    struct.pack_into("<QQQQ", h, 120, window_offset, window_offset + 16 * window, committed,
                     committed)
    pack = lambda rs: b"".join(struct.pack("<QQ", hd, a) for hd, a in rs)
    win = pack(recs[committed:])
    return (bytes(h) + bytes(window_offset - 256) + win + bytes(16 * window - len(win)) +
            pack(recs[:committed]))


class Thread:
    def __init__(self, tid, base):
        self.tid, self.base, self.recs = tid, base, []

    def emit(self, kind, arg, t):
        self.recs.append(((K[kind] << 56) | ((self.base + t) & ((1 << 56) - 1)), arg))
        return self

    def enter(self, site, t, depth):
        return self.emit("ENTER", site | (depth << 32), t)

    def exit(self, site, t, depth):
        return self.emit("EXIT", site | (depth << 32), t)


class Process:
    def __init__(self, pid, base=1_000_000, hz=1_000_000_000, clock=2):
        self.pid, self.base, self.hz, self.clock = pid, base, hz, clock
        self.threads, self.labels, self.maps = [], {}, ""

    def thread(self, tid):
        for t in self.threads:
            if t.tid == tid:
                return t
        t = Thread(tid, self.base)
        self.threads.append(t)
        return t

    def write(self, d: pathlib.Path, window=None):
        d.mkdir(parents=True, exist_ok=True)
        for seq, t in enumerate(self.threads):
            (d / f"{self.pid}.{seq}.vpt").write_bytes(
                stream_bytes(self.pid, t.tid, seq, t.recs, window, self.hz, self.base, self.clock))
        if self.labels:
            (d / f"{self.pid}.labels").write_text(
                "".join(f"{i}\t{s}\n" for i, s in sorted(self.labels.items())))
        if self.maps:
            (d / f"{self.pid}.maps").write_text(self.maps)


def lcg(seed):
    """A tiny deterministic generator (same numbers on every Python)."""
    x = seed
    while True:
        x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        yield x >> 33


def scenario_nested(d):
    """Two interval types on one thread; parse (site 1) -> plan (2) -> exec (3, 4)."""
    p = Process(1)
    p.labels = {1: "Select", 2: "Update"}
    t = p.thread(1)
    r = lcg(1)
    now = 0
    for i in range(1, 41):
        label = 1 + i % 2
        t.emit("BEGIN", i, now).emit("LABEL", label, now)
        parse, plan = 10 + next(r) % 5, 20 + next(r) % 30
        ex1, ex2 = 50 + next(r) % 200 * label, 5 + next(r) % 10
        t.enter(1, now + 1, 1).exit(1, now + 1 + parse, 1)
        s = now + 1 + parse
        t.enter(2, s, 1).enter(3, s + 2, 2).exit(3, s + 2 + plan, 2)
        s += 2 + plan
        t.enter(4, s, 2).exit(4, s + ex1, 2).exit(2, s + ex1 + ex2, 1)
        now = s + ex1 + ex2 + 3
        t.emit("END", i, now)
        now += 7
    p.write(d)


def scenario_mutex(d):
    """Worker 1 runs the intervals and waits for a lock that thread 2 holds while it
    flushes a log (site 7 under site 6) for a varying time."""
    p = Process(2)
    w, h = p.thread(10), p.thread(11)
    r = lcg(2)
    now = 0
    for i in range(1, 31):
        flush = 20 + next(r) % 100
        w.emit("BEGIN", i, now).enter(1, now + 2, 1)
        h.enter(6, now, 1).emit("LOCK_ACQUIRE", 0xA0, now + 1).enter(7, now + 3, 2)
        h.exit(7, now + 3 + flush, 2).emit("LOCK_RELEASE", 0xA0, now + 5 + flush)
        h.exit(6, now + 6 + flush, 1)
        w.enter(2, now + 4, 2).emit("LOCK_WAIT", 0xA0, now + 4)
        w.emit("LOCK_ACQUIRE", 0xA0, now + 7 + flush).exit(2, now + 8 + flush, 2)
        w.emit("LOCK_RELEASE", 0xA0, now + 9 + flush)
        w.exit(1, now + 20 + flush, 1).emit("END", i, now + 25 + flush)
        now += 40 + flush
    p.write(d)


def scenario_handoff_cond(d):
    """A front thread begins each interval and hands it to a worker through a queue;
    the worker waits on a condvar that a third thread signals after some I/O."""
    p = Process(3)
    f, wk, io = p.thread(20), p.thread(21), p.thread(22)
    r = lcg(3)
    now = 0
    for i in range(1, 26):
        parse, q, iot, tail = 5 + next(r) % 10, 3 + next(r) % 20, 10 + next(r) % 80, 5 + next(r) % 5
        f.emit("BEGIN", i, now).enter(1, now, 1).exit(1, now + parse, 1)
        f.emit("HANDOFF_SEND", 0x51, now + parse)
        s = now + parse + q
        wk.emit("HANDOFF_RECV", 0x51, s).enter(2, s, 1)
        wk.emit("LOCK_RELEASE", 0xB0, s + 1).emit("COND_WAIT_BEGIN", 0xC0, s + 1)
        io.enter(9, s, 1).exit(9, s + iot, 1).emit("COND_SIGNAL", 0xC0, s + iot)
        wk.emit("COND_WAIT_END", 0xC0, s + iot + 2).emit("LOCK_ACQUIRE", 0xB0, s + iot + 2)
        wk.exit(2, s + iot + 3, 1).enter(3, s + iot + 3, 1).exit(3, s + iot + 3 + tail, 1)
        wk.emit("END", i, s + iot + 4 + tail)
        now = s + iot + 10 + tail
    p.write(d)


SCENARIOS = {"nested": scenario_nested, "mutex": scenario_mutex,
             "handoff_cond": scenario_handoff_cond}
