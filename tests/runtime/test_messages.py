"""libvprof_rt's multi-host pieces (docs/multihost.md): value-keyed message marks, the clock
samples (the headers' end pairs, CLOCK records) and VPROF_CLOCK_OFFSET_NS, and the
traceparent helpers of <vprof/vprof.h>."""
import pathlib
import struct
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # any --import-mode
import vpt  # noqa: E402

CLOCK, MSG_SEND, MSG_RECV = 8, 72, 73


def end_pair(stream):
    """(end_ticks, end_realtime_ns) of a stream header (offsets 152 and 160)."""
    return struct.unpack_from("<QQ", stream.path.read_bytes(), 152)


def test_messages_carry_their_keys_and_streams_their_clock_samples(tc, tmp_path):
    exe = tc.compile("messages")
    before = time.time_ns()
    tc.run(exe, ["messages", 2000], trace=tmp_path,
           env={"VPROF_WINDOW_KB": "4", "VPROF_CLOCK_SAMPLE_MS": "1"})
    after = time.time_ns()
    (s,) = vpt.read_dir(tmp_path)
    recs = s.records()
    sends = [a for k, _, a in recs if k == MSG_SEND]
    recvs = [a for k, _, a in recs if k == MSG_RECV]
    assert sends == recvs == [0x1000 + i for i in range(2000)]
    assert before <= s.base_real <= after
    end_ticks, end_real = end_pair(s)
    assert end_ticks > s.base_ticks and s.base_real < end_real <= after
    # the end pair agrees with the start pair through the clock's frequency (1 ms)
    span_ns = (end_ticks - s.base_ticks) * 1e9 / s.hz
    assert abs((end_real - s.base_real) - span_ns) < 1e6
    # CLOCK records after flushes, each a (ticks, realtime) pair on the same line
    clocks = [(t, a) for k, t, a in recs if k == CLOCK]
    assert len(clocks) >= 3, len(clocks)
    for t, real in clocks:
        rel = ((t - s.base_ticks) & vpt.TICKS_MASK) * 1e9 / s.hz
        assert abs((real - s.base_real) - rel) < 1e6
    ticks = [t for _, t, _ in recs]
    assert ticks == sorted(ticks)  # a sample never goes back in time


def test_no_clock_records_when_sampling_is_off(tc, tmp_path):
    exe = tc.compile("messages")
    tc.run(exe, ["messages", 2000], trace=tmp_path,
           env={"VPROF_WINDOW_KB": "4", "VPROF_CLOCK_SAMPLE_MS": "0"})
    (s,) = vpt.read_dir(tmp_path)
    assert not [k for k, _, _ in s.records() if k == CLOCK]
    assert end_pair(s)[0] != 0  # the end pair is always there


def test_clock_offset_shifts_every_realtime_sample(tc, tmp_path):
    exe = tc.compile("messages")
    before = time.time_ns()
    tc.run(exe, ["messages", 2000], trace=tmp_path,
           env={"VPROF_WINDOW_KB": "4", "VPROF_CLOCK_SAMPLE_MS": "1",
                "VPROF_CLOCK_OFFSET_NS": "-7000000000"})
    after = time.time_ns()
    (s,) = vpt.read_dir(tmp_path)
    shift = -7_000_000_000
    assert before + shift <= s.base_real <= after + shift
    assert before + shift <= end_pair(s)[1] <= after + shift
    clocks = [a for k, _, a in s.records() if k == CLOCK]
    assert clocks and all(before + shift <= a <= after + shift for a in clocks)


def test_traceparent_round_trip_and_rejects(tc):
    exe = tc.compile("messages")
    good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    cases = [good, f"  {good}\t", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
             "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-future",
             "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
             "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
             "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
             "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
             "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"]
    out = tc.run(exe, ["traceparent", *cases]).stdout.decode().splitlines()
    assert out[0] == out[1] == f"{good} 00f067aa0ba902b7"
    assert out[2] == "invalid"  # version 00 with trailing data
    # a later version is read by its first four fields (and formatted as version 00)
    assert out[3] == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00 00f067aa0ba902b7"
    assert out[4:] == ["invalid"] * 5
