"""A small reader of sched.vpk (runtime/include/vprof/sched_format.h) for the recorder's tests:
the header, then every whole record; a file left by a killed recorder reads too. A SLEEP with
NEXT_RUNS (version 2) stands for two events; `records` has them expanded (the RUN of the
thread switched in, then the SLEEP), `stored` the records as the file holds them."""
import dataclasses
import struct

MAGIC = b"VPROFSCH"
HEADER = struct.Struct("<8sIIIIII QQQQ 64s")
RECORD = struct.Struct("<QIIIIBBHI")
assert HEADER.size == 128 and RECORD.size == 32

CLOSED = 1
SLEEP, WAKE, RUN, EXIT = 1, 2, 3, 4
KIND_NAMES = {SLEEP: "SLEEP", WAKE: "WAKE", RUN: "RUN", EXIT: "EXIT"}
WAKER_IRQ = 1
NEXT_RUNS = 2  # SLEEP: `other` is a traced thread that slept; the record is also its RUN
WAKE_ROOM = 4  # WAKE (version 3): a receiving waker freed room; no data for the receiving sleeper
WAKE_DATA = 8  # WAKE (version 3): the recorder's: a room wake-up's waker sent its data
VERSIONS = (1, 2, 3)
NO_SYSCALL = 0xFFFF


@dataclasses.dataclass(frozen=True)
class Record:
    time_ns: int
    tid: int
    pid: int
    other: int
    other_pid: int
    kind: int
    flags: int
    cpu: int
    arg: int

    @property
    def syscall(self) -> int:
        """The system call a SLEEP blocked in (a version-3 WAKE: its waker was in), or -1."""
        nr = self.arg & 0xFFFF
        return -1 if nr == NO_SYSCALL else nr

    @property
    def state(self) -> int:
        return self.arg >> 16

    def __str__(self) -> str:
        return (f"{self.time_ns} cpu{self.cpu} {KIND_NAMES.get(self.kind, self.kind)} "
                f"{self.tid}/{self.pid} other={self.other}/{self.other_pid} "
                f"flags={self.flags} syscall={self.syscall} state={self.state:#x}")


@dataclasses.dataclass
class SchedFile:
    version: int
    flags: int
    root_pid: int
    start_ns: int
    end_ns: int
    records_in_header: int
    lost: int
    records: list  # NEXT_RUNS expanded
    stored: list  # as in the file
    trailing_bytes: int  # bytes after the last whole record (a killed recorder's torn write)

    @property
    def closed(self) -> bool:
        return bool(self.flags & CLOSED)


def read(path) -> SchedFile:
    """Reads a sched.vpk; raises ValueError naming the file when it is not one."""
    data = open(path, "rb").read()
    if len(data) < HEADER.size:
        raise ValueError(f"{path}: {len(data)} bytes, shorter than the 128-byte header")
    (magic, version, header_size, record_size, flags, root_pid, _reserved0, start_ns, end_ns,
     records, lost, _reserved) = HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise ValueError(f"{path}: not a sched.vpk file (magic {magic!r})")
    if header_size != HEADER.size or record_size != RECORD.size:
        raise ValueError(f"{path}: header {header_size} / record {record_size} bytes, "
                         f"this reader knows 128 / 32")
    if version not in VERSIONS:
        raise ValueError(f"{path}: unsupported version {version} (this reader knows "
                         f"{', '.join(map(str, VERSIONS))})")
    body = len(data) - header_size
    whole = body // record_size
    recs = [Record(*RECORD.unpack_from(data, header_size + i * record_size))
            for i in range(whole)]
    return SchedFile(version, flags, root_pid, start_ns, end_ns, records, lost, expand(recs),
                     recs, body - whole * record_size)


def expand(stored) -> list:
    """The records with each SLEEP that carries NEXT_RUNS split into the RUN of the thread it
    names as `other` (ran after `tid`, at the same time and CPU) followed by the SLEEP."""
    out = []
    for r in stored:
        if r.kind == SLEEP and r.flags & NEXT_RUNS:
            out.append(Record(r.time_ns, r.other, r.other_pid, r.tid, r.pid, RUN, 0, r.cpu, 0))
        out.append(r)
    return out
