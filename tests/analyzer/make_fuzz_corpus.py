#!/usr/bin/env python3
"""Writes the seed corpus of the trace fuzzer (tests/analyzer/fuzz_corpus/): small valid
traces in the fuzzer's input layout (analyzer/fuzz/fuzz_trace.cpp). Regenerate with
    /usr/bin/python3 tests/analyzer/make_fuzz_corpus.py"""
import pathlib
import struct

from tracegen import stream_bytes

OUT = pathlib.Path(__file__).resolve().parent / "fuzz_corpus"


def stream(tid, seq, recs, spare=2):
    return stream_bytes(1, tid, seq, [((k << 56) | (1000 + t), a) for k, t, a in recs],
                        window=len(recs) + spare)


def probe(site, depth):
    return site | (depth << 32)


def main():
    OUT.mkdir(exist_ok=True)
    one = [(16, 0, 1), (20, 0, 1), (1, 1, probe(1, 1)), (1, 2, probe(2, 2)), (2, 5, probe(2, 2)),
           (32, 6, 0xA0), (33, 9, 0xA0), (34, 10, 0xA0), (2, 12, probe(1, 1)), (17, 13, 1)]
    other = [(33, 1, 0xA0), (1, 2, probe(3, 1)), (2, 7, probe(3, 1)), (34, 8, 0xA0),
             (51, 8, 0xB0), (64, 9, 0xC0)]
    a, b = stream(1, 0, one), stream(2, 1, other)
    # two streams of equal length so the fuzzer's even split keeps them apart
    pad = max(len(a), len(b))
    a2 = stream(1, 0, one, 2 + (pad - len(a)) // 16)
    b2 = stream(2, 1, other, 2 + (pad - len(b)) // 16)
    (OUT / "single").write_bytes(bytes([0]) + a + b"\n#labels\n1\tNewOrder\n")
    (OUT / "two_threads").write_bytes(bytes([1]) + a2 + b2 +
                                      b"\n#maps\n7f00-8f00 rw-s 00000000 00:05 77 /dev/shm/x\n")
    # the same with a kernel wake-up file (bytes after "\n#sched\n": a flag byte, closed, then
    # sched_format.h records): T2 blocks in read() woken by an interrupt, T1's lock wait
    # sleeps in the kernel and T2 wakes it (one edge with the interposed pairing)
    def sched(ns, tid, kind, other=0, flags=0, arg=0):
        return struct.pack("<QIIIIBBHI", ns, tid, 1, other, 1 if other else 0, kind, flags, 0,
                           arg)
    kernel = (sched(3, 2, 1, arg=0) + sched(5, 2, 2, 0, 1) + sched(6, 2, 3) +
              sched(7, 1, 1, arg=202) + sched(8, 1, 2, 2) + sched(9, 1, 3))
    (OUT / "kernel_waits").write_bytes(bytes([1]) + a2 + b2 + b"\n#sched\n\x01" + kernel)
    longjmp = [(16, 0, 5), (1, 1, probe(1, 1)), (1, 2, probe(2, 5)), (1, 3, probe(3, 9)),
               (1, 4, probe(4, 3)), (2, 6, probe(4, 3)), (2, 8, probe(1, 1)), (17, 9, 5)]
    (OUT / "longjmp").write_bytes(bytes([0]) + stream(1, 0, longjmp))
    # a stream whose window was flushed: page-aligned data region + window, mapped back to back
    many = [(1 if i % 2 == 0 else 2, i, probe(1, 1)) for i in range(300)]
    flushed = stream_bytes(1, 1, 0, [((k << 56) | (1000 + t), a) for k, t, a in many],
                           window=256, window_offset=4096)
    (OUT / "flushed").write_bytes(bytes([0]) + flushed)
    # two hosts (byte 0: two streams, bit 0x40): a client that begins an interval, sends a
    # request message and ends on the reply; a server that receives it, attaches, works,
    # replies; clock samples on both (docs/multihost.md)
    client = [(16, 0, 7), (8, 0, 5_000), (72, 1, 0x99), (73, 20, 0x9A), (17, 21, 7),
              (8, 21, 5_021)]
    server = [(8, 2, 5_002), (73, 3, 0x99), (18, 3, 7), (1, 4, probe(3, 1)),
              (2, 15, probe(3, 1)), (72, 16, 0x9A), (19, 16, 7), (8, 17, 5_017)]
    pad = max(len(stream(1, 0, client)), len(stream(2, 0, server)))
    c = stream(1, 0, client, 2 + (pad - len(stream(1, 0, client))) // 16)
    v = stream(2, 0, server, 2 + (pad - len(stream(2, 0, server))) // 16)
    (OUT / "two_hosts").write_bytes(bytes([0x41]) + c + v)


if __name__ == "__main__":
    main()
