#!/usr/bin/env python3
"""The kernel wake-up recorder's cost on a futex ping-pong (two threads, N hand-offs):
alternating runs plain, traced by vprof-sched, and with vprof-sched on for another process
(the cost to tasks outside the tree). Prints each run and the medians. Needs root.

    sudo python3 benchmarks/recorder/pingpong.py [--rounds 200000] [--runs 5] [--build build]
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "recorder"))
import sched_file  # noqa: E402


def pingpong_result(stdout):
    """(seconds, voluntary switches of both threads) from the program's "pingpong" line."""
    words = next(line for line in stdout.splitlines() if line.startswith("pingpong")).split()
    return float(words[2]), int(words[4]) + int(words[5])


def run_plain(exe, rounds):
    out = subprocess.run([exe, "pingpong", rounds], input="go\n", text=True,
                         capture_output=True, check=True).stdout
    return pingpong_result(out)


def run_recorded(exe, recorder, rounds, out, trace_it):
    """Runs the ping-pong with the recorder attached to it (trace_it) or to an idle process."""
    other = None if trace_it else subprocess.Popen(["sleep", "600"])
    prog = subprocess.Popen([exe, "pingpong", rounds], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    root = prog.pid if trace_it else other.pid
    ready_r, ready_w = os.pipe()
    rec = subprocess.Popen([recorder, "--root-pid", str(root), "--out", out, "--ready-fd",
                            str(ready_w), "--quiet"], pass_fds=(ready_w,))
    os.close(ready_w)
    if os.read(ready_r, 1) != b"\x01":
        sys.exit(f"vprof-sched did not start (exit {rec.wait()})")
    os.close(ready_r)
    seconds, sleeps = pingpong_result(prog.communicate("go\n")[0])
    if other:
        rec.send_signal(2)
    _, _, usage = os.wait4(rec.pid, 0)
    if other:
        other.kill()
        other.wait()
    f = sched_file.read(out)
    wakes = sum(1 for r in f.stored if r.kind == sched_file.WAKE)
    return seconds, sleeps, len(f.stored), f.lost, usage.ru_utime + usage.ru_stime, wakes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", default="200000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--build", default=str(ROOT / "build"))
    args = ap.parse_args()
    recorder = str(pathlib.Path(args.build) / "recorder" / "vprof-sched")
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "handoff")
        subprocess.run(["cc", "-std=gnu11", "-O2", "-pthread", "-o", exe,
                        str(ROOT / "tests" / "recorder" / "programs" / "handoff.c")], check=True)
        out = os.path.join(tmp, "sched.vpk")
        rows = {"plain": [], "traced": [], "untraced": []}
        for _ in range(args.runs):
            rows["plain"].append(run_plain(exe, args.rounds))
            rows["traced"].append(run_recorded(exe, recorder, args.rounds, out, True))
            rows["untraced"].append(run_recorded(exe, recorder, args.rounds, out, False))
            for name, values in rows.items():
                print(name, values[-1], flush=True)
    for name, values in rows.items():
        print(f"{name}: median {statistics.median(v[0] for v in values):.3f} s, "
              f"median sleeps {statistics.median(v[1] for v in values):.0f}")
    for seconds, _, records, lost, cpu, wakes in rows["traced"]:
        print(f"traced: {records} records stored ({records / seconds:.0f}/s), "
              f"{wakes / seconds:.0f} wake-ups/s, {lost} lost, recorder CPU {cpu:.3f} s")


if __name__ == "__main__":
    main()
