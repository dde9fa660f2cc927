"""vprof-dump end to end: prints a trace written by the test builder, and fails cleanly
(exit 1, file and offset on stderr, no crash) on corrupt input."""
import pathlib
import struct
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from tracegen import stream_bytes  # noqa: E402


def record(kind, ticks, arg):
    return ((kind << 56) | ticks, arg)


def stream(recs=(), window=None, **patch):
    """A valid one-stream file, then header fields overwritten: patch = {offset: (fmt, v)}."""
    data = bytearray(stream_bytes(1, 1, 0, list(recs), window))
    for off, (fmt, v) in patch.items():
        struct.pack_into(fmt, data, int(off.lstrip("o")), v)
    return bytes(data)


@pytest.fixture
def dump(build_dir):
    exe = build_dir / "analyzer" / "tools" / "vprof-dump"
    if not exe.exists():
        pytest.skip("vprof-dump not built")
    return exe


def run(exe, path):
    return subprocess.run([str(exe), str(path)], capture_output=True, text=True, timeout=30)


def test_prints_records(dump, tmp_path):
    recs = [record(16, 1010, 7), record(1, 1020, 5 | (3 << 32)), record(2, 1050, 5 | (3 << 32))]
    (tmp_path / "9.0.vpt").write_bytes(stream_bytes(9, 9, 0, recs, window=2))  # 2 + 1
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
        (stream()[:100], "truncated header", 100),
        (b"X" * 8 + stream()[8:], "bad magic", 0),
        (stream(o8=("<I", 1)), "unsupported version 1", 8),
        (stream(o88=("<Q", 1000)), "window_records 1000", 88),
        (stream(o136=("<Q", 3), o144=("<Q", 3)), "truncated", 136),
        (stream([record(99, 1, 0)]), "unknown kind 99", 256),
        (stream([record(1, 1, 0)] * 3 + [(0, 0)] + [record(1, 1, 0)] * 2, window=2),
         "empty record inside the data region", 256 + 32 + 48),
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
