"""Tiny reader of vprof trace streams (docs/trace-format.md) for the runtime's tests."""
import array
import pathlib
import struct

HEADER = struct.Struct("<8sIIIIQQQQIIIIQQQII16sQQQQ")
KIND_SHIFT = 56
TICKS_MASK = (1 << 56) - 1

REC = {"ENTER": 1, "EXIT": 2, "INTERVAL_BEGIN": 16, "INTERVAL_END": 17, "ATTACH": 18,
       "DETACH": 19, "LABEL": 20, "LOCK_WAIT": 32, "LOCK_ACQUIRE": 33, "LOCK_RELEASE": 34,
       "RWLOCK_WAIT_RD": 40, "RWLOCK_WAIT_WR": 41, "RWLOCK_ACQUIRE_RD": 42,
       "RWLOCK_ACQUIRE_WR": 43, "RWLOCK_RELEASE": 44, "COND_WAIT_BEGIN": 48,
       "COND_WAIT_END": 49, "COND_WAIT_TIMEOUT": 50, "COND_SIGNAL": 51,
       "COND_BROADCAST": 52, "SEM_WAIT": 56, "SEM_ACQUIRE": 57, "SEM_POST": 58,
       "HANDOFF_SEND": 64, "HANDOFF_RECV": 65, "WAIT_BEGIN": 66, "WAIT_END": 67, "WAKE": 68}
NAME = {v: k for k, v in REC.items()}
CLOSED, FORK_CHILD = 1, 2
PROFILER_SITE = 0xFFFFFFFF  # VPROF_SITE_PROFILER: the runtime's own frame


class Stream:
    """One <pid>.<seq>.vpt file: header fields plus the record words (heads, args)."""

    def __init__(self, path):
        self.path = pathlib.Path(path)
        data = self.path.read_bytes()
        f = HEADER.unpack_from(data, 0)
        (self.magic, self.version, self.header_size, self.record_size, self.clock_kind,
         self.hz, self.base_ticks, self.base_mono, self.base_real, self.pid, self.tid,
         self.ppid, self.seq, self.features, self.dropped, self.window_records, self.flags,
         _, name, self.window_offset, self.data_offset, self.committed, self.window_base) = f
        self.thread_name = name.rstrip(b"\0").decode()
        assert self.magic == b"VPROFTRC", f"{path}: bad magic"
        assert len(data) >= self.data_offset + 16 * self.committed, f"{path}: truncated"
        # the data region's records, then the window's (a ring) from the slot after them up
        # to its first empty slot, at most up to window_base + window_records
        words = array.array("Q")
        words.frombytes(data[self.data_offset:self.data_offset + 16 * self.committed])
        ring = array.array("Q")
        ring.frombytes(data[self.window_offset:self.window_offset + 16 * self.window_records])
        slot = self.committed % self.window_records
        room = self.window_base + self.window_records - self.committed
        assert 0 <= room <= self.window_records, f"{path}: window_base out of range"
        order = (ring[2 * slot:] + ring[:2 * slot])[:2 * room]
        heads = order[0::2]
        try:
            used = heads.index(0)
        except ValueError:
            used = len(heads)
        words.extend(order[:2 * used])
        self.heads, self.args = self._without_profiler_frames(words[0::2], words[1::2])
        self.count = len(self.heads)

    def _without_profiler_frames(self, heads, args):
        """The program's records; the runtime's own frames (site PROFILER: the thread making
        room in its stream) go to self.profiler as (from_ticks, to_ticks, depth, after): after
        = how many of the program's records precede the frame."""
        self.profiler = []
        keep_heads, keep_args = array.array("Q"), array.array("Q")
        pending = None
        for h, a in zip(heads, args):
            kind = h >> KIND_SHIFT
            if kind in (REC["ENTER"], REC["EXIT"]) and a & 0xFFFFFFFF == PROFILER_SITE:
                if kind == REC["ENTER"]:
                    pending = h & TICKS_MASK
                else:
                    self.profiler.append((pending, h & TICKS_MASK, a >> 32, len(keep_heads)))
                    pending = None
                continue
            keep_heads.append(h)
            keep_args.append(a)
        return keep_heads, keep_args

    def records(self):
        """[(kind, ticks, arg)] of the finished records."""
        return [(h >> KIND_SHIFT, h & TICKS_MASK, a)
                for h, a in zip(self.heads[:self.count], self.args[:self.count])]


def read_dir(path):
    """All streams of a trace directory, sorted by (pid, seq)."""
    streams = [Stream(p) for p in pathlib.Path(path).glob("*.vpt")]
    return sorted(streams, key=lambda s: (s.pid, s.seq))


def labels(path, pid):
    """{id: text} from <pid>.labels."""
    out = {}
    for line in (pathlib.Path(path) / f"{pid}.labels").read_text().splitlines():
        i, text = line.split("\t", 1)
        out[int(i)] = text
    return out
