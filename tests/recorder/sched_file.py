"""A small reader of sched.vpk (runtime/include/vprof/sched_format.h) for the recorder's tests:
the header, then every whole record; a file left by a killed recorder reads too."""
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
        """The system call a SLEEP blocked in, or -1."""
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
    records: list
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
    body = len(data) - header_size
    whole = body // record_size
    recs = [Record(*RECORD.unpack_from(data, header_size + i * record_size))
            for i in range(whole)]
    return SchedFile(version, flags, root_pid, start_ns, end_ns, records, lost, recs,
                     body - whole * record_size)
