"""vprof-dump end to end: prints a trace written by the test builder, and fails cleanly
(exit 1, file and offset on stderr, no crash) on corrupt input."""
import struct
import subprocess

import pytest

MAGIC = b"VPROFTRC"


def header(pid=1, tid=1, capacity=4, hz=1_000_000_000, base=1000, clock=2):
    h = bytearray(256)
    h[0:8] = MAGIC
    struct.pack_into("<IIII", h, 8, 1, 256, 16, clock)
    struct.pack_into("<QQ", h, 24, hz, base)
    struct.pack_into("<IIII", h, 56, pid, tid, 0, 0)
    struct.pack_into("<Q", h, 88, capacity)
    return bytes(h)


def record(kind, ticks, arg):
    return struct.pack("<QQ", (kind << 56) | ticks, arg)


@pytest.fixture
def dump(build_dir):
    exe = build_dir / "analyzer" / "tools" / "vprof-dump"
    if not exe.exists():
        pytest.skip("vprof-dump not built")
    return exe


def run(exe, path):
    return subprocess.run([str(exe), str(path)], capture_output=True, text=True, timeout=30)


def test_prints_records(dump, tmp_path):
    recs = record(16, 1010, 7) + record(1, 1020, 5 | (3 << 32)) + record(2, 1050, 5 | (3 << 32))
    (tmp_path / "9.0.vpt").write_bytes(header(pid=9, tid=9, capacity=5) + recs + bytes(32))
    r = run(dump, tmp_path)
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stdout.splitlines() if not l.startswith("#")]
    assert lines == [
        "9 9 10 INTERVAL_BEGIN interval=7",
        "9 9 20 ENTER site=5 depth=0x00000003",
        "9 9 50 EXIT site=5 depth=0x00000003",
    ]


@pytest.mark.parametrize(
    "data,problem,offset",
    [
        (header()[:100], "truncated header", 100),
        (b"X" * 8 + header()[8:] + bytes(64), "bad magic", 0),
        (header(capacity=1000) + bytes(64), "capacity", 88),
        (header() + record(99, 1, 0) + bytes(48), "unknown kind 99", 256),
    ],
)
def test_corrupt_input(dump, tmp_path, data, problem, offset):
    (tmp_path / "1.0.vpt").write_bytes(data)
    r = run(dump, tmp_path)
    assert r.returncode == 1
    assert "1.0.vpt" in r.stderr and problem in r.stderr
    assert f"offset {offset}:" in r.stderr


def test_usage_and_missing(dump, tmp_path):
    assert subprocess.run([str(dump)], capture_output=True).returncode == 2
    r = run(dump, tmp_path / "nope")
    assert r.returncode == 1 and "nope" in r.stderr
