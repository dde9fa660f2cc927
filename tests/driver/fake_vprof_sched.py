#!/usr/bin/env python3
"""A stand-in for the kernel wake-up recorder (vprof-sched) that honours its command-line
contract without recording anything, so that the driver's side is tested on any machine:

    fake_vprof_sched.py --check
    fake_vprof_sched.py --root-pid PID --out FILE [--ready-fd FD] [--ring-mb N] [--quiet]

$FAKE_SCHED_MODE picks the behaviour: "ok" (default: attach, write an empty but valid
sched.vpk, wait for SIGTERM), "check3" (--check says it cannot record: exit 3 with one
line), "start3" (--check passes, recording exits 3), "noready" (--check passes, recording
never writes its ready byte), "nostop" (records, but ignores SIGTERM). Every call appends
one JSON line to $FAKE_SCHED_LOG: what it was asked, and in what state it found the root
process when it attached.
"""
import json
import os
import signal
import struct
import sys
import time

CANNOT = "vprof-sched: cannot record here: no CAP_BPF (fake); run as root"


def note(**what):
    with open(os.environ["FAKE_SCHED_LOG"], "a") as f:
        f.write(json.dumps(what) + "\n")


def parse(args):
    opts, i = {}, 0
    while i < len(args):
        if args[i] in ("--quiet", "--check"):
            opts[args[i]] = True
            i += 1
        else:
            opts[args[i]] = args[i + 1]
            i += 2
    return opts


def empty_sched_file(path, root_pid, closed):
    # sched_format.h: the 128-byte header of a file with no records
    header = struct.pack("<8sIIIIII QQQQ 64s", b"VPROFSCH", 1, 128, 32, 1 if closed else 0,
                         root_pid, 0, time.monotonic_ns(), 0, 0, 0, b"")
    with open(path, "wb") as f:
        f.write(header)


def main():
    mode = os.environ.get("FAKE_SCHED_MODE", "ok")
    opts = parse(sys.argv[1:])
    if "--check" in opts:
        note(call="check", pid=os.getpid())
        if mode == "check3":
            print(CANNOT, file=sys.stderr)
            return 3
        return 0
    root = int(opts["--root-pid"])
    try:
        with open(f"/proc/{root}/cmdline", "rb") as f:
            cmdline = [a.decode() for a in f.read().split(b"\0") if a]
    except OSError:
        cmdline = None  # the root process does not exist
    note(call="record", pid=os.getpid(), args=sys.argv[1:], root=root, root_cmdline=cmdline)
    if mode == "start3":
        print(CANNOT, file=sys.stderr)
        return 3
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append("SIGTERM"))
    signal.signal(signal.SIGINT, lambda *_: stop.append("SIGINT"))
    if mode == "nostop":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if mode != "noready":
        empty_sched_file(opts["--out"], root, closed=False)
        fd = int(opts["--ready-fd"])
        os.write(fd, b"r")
        os.close(fd)
    while not stop:
        time.sleep(0.01)
    empty_sched_file(opts["--out"], root, closed=True)
    note(call="stopped", pid=os.getpid(), by=stop[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
