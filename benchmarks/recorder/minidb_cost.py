#!/usr/bin/env python3
"""Where the kernel wake-up recorder's cost on the mini database goes: one or more runs of
minidb (annotations + runtime, as benchmarks/kernel_wakeups_ab.py builds it) under
`vprof run --kernel-wakeups on`, with `kernel.bpf_stats_enabled=1`, reporting per run

- the BPF programs' in-kernel time (bpftool: run_time_ns / run_cnt, per program, sampled
  just before the recorder detaches them) and its share of the run's CPU time (2 CPUs x wall);
- the machine's context switches (/proc/stat ctxt) per transaction;
- the records per transaction by kind, and how many SLEEPs carry the switched-in traced
  thread's RUN (NEXT_RUNS, sched format v2);
- the recorder's own CPU time (utime + stime of vprof-sched, sampled) per transaction;
- the wall time of `vprof run` outside minidb's own elapsed time (start-up, the fork/exec
  hold until the recorder is attached, the drain), on against off.

Needs root (bpf_stats, the recorder). Other recorders running at the same time (other users'
runs) add their own untraced-path cost to every context switch: the script says how many
vprof_sched programs were loaded besides its own. Restores kernel.bpf_stats_enabled afterwards.

    sudo python3 benchmarks/recorder/minidb_cost.py [--runs 3] [--txns 20000] [--build-dir build]
        [--sched VPROF_SCHED]
"""
import argparse
import collections
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "recorder"))
sys.path.insert(0, str(ROOT / "benchmarks"))
import sched_file  # noqa: E402
from kernel_wakeups_ab import build_minidb  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
FLAGS = ["--threads", "8", "--warehouses", "1", "--fsync", "off"]


def context_switches():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("ctxt "):
                return int(line.split()[1])
    return 0


def prog_ids(pid):
    """The ids of the BPF programs process `pid` holds (fdinfo's prog_id): other recorders
    (other users' runs) may have vprof_sched programs loaded at the same time."""
    ids = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return ids
    for fd in fds:
        try:
            for line in open(f"/proc/{pid}/fdinfo/{fd}"):
                if line.startswith("prog_id:"):
                    ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def bpf_prog_stats(ids):
    """({program name: (run_cnt, run_time_ns)} of the vprof_sched_* programs among `ids`, how
    many other recorders' vprof_sched_switch programs are loaded)."""
    r = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
    if r.returncode != 0:
        return {}, 0
    out, switches = {}, 0
    for p in json.loads(r.stdout or "[]"):
        name = p.get("name", "")
        switches += name == "vprof_sched_switch"
        if name.startswith("vprof_sched") and p.get("id") in ids:
            out[name] = (p.get("run_cnt", 0), p.get("run_time_ns", 0))
    return out, switches - len(out and [1])


def recorder_cpu(vprof_pid):
    """(pid, seconds of CPU) of the vprof-sched child of vprof_pid, or (None, 0)."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = open(f"/proc/{d}/stat").read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        rest = stat[stat.rindex(")") + 2:].split()
        if comm == "vprof-sched" and int(rest[1]) == vprof_pid:
            try:  # ns on the CPU (schedstat), finer than utime + stime's ticks
                return int(d), int(open(f"/proc/{d}/schedstat").read().split()[0]) / 1e9
            except (OSError, ValueError, IndexError):
                return int(d), (int(rest[11]) + int(rest[12])) / CLK_TCK
    return None, 0.0


class Sampler(threading.Thread):
    """Samples the programs' statistics and the recorder's CPU every 100 ms while vprof runs;
    keeps the last sample taken while the programs were loaded."""

    def __init__(self, vprof_pid):
        super().__init__(daemon=True)
        self.vprof_pid, self.stop, self.progs, self.cpu = vprof_pid, False, {}, 0.0
        self.cpu_attached = None  # the recorder's CPU when first seen attached (the load)
        self.others = 0  # other recorders seen loaded at the same time

    def run(self):
        while not self.stop:
            pid, cpu = recorder_cpu(self.vprof_pid)
            progs, others = bpf_prog_stats(prog_ids(pid) if pid else set())
            self.others = max(self.others, others)
            if progs:
                self.progs = progs
                if pid and self.cpu_attached is None:
                    self.cpu_attached = cpu
            if pid:
                self.cpu = max(self.cpu, cpu)
            time.sleep(0.1)


def one_run(vprof, minidb, txns, mode, work, sched=None):
    trace = work / f"trace-{mode}"
    subprocess.run(["rm", "-rf", str(trace)])
    cmd = [str(vprof), "run", "--kernel-wakeups", mode, "--trace-dir", str(trace), "--",
           str(minidb), "--txns", str(txns), *FLAGS]
    ctx0, t0 = context_switches(), time.monotonic()
    with open(work / "out.txt", "w+") as fo, open(work / "err.txt", "w+") as fe:
        env = dict(os.environ)
        env.pop("VPROF_SCHED", None)
        if sched:
            env["VPROF_SCHED"] = str(sched)
        p = subprocess.Popen(cmd, cwd=work, stdout=fo, stderr=fe, env=env)
        s = Sampler(p.pid)
        s.start()
        _, status, usage = os.wait4(p.pid, 0)  # vprof's and its waited children's CPU
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - t0
        s.stop = True
        s.join()
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read(), fe.read()
    ctx = context_switches() - ctx0
    if p.returncode != 0:
        sys.exit(f"minidb_cost: {' '.join(cmd)} failed:\n{out[-1000:]}{err[-1000:]}")
    line = [x for x in out.splitlines() if x.startswith("minidb: ")][-1]
    kv = dict(item.split("=", 1) for item in line[len("minidb: "):].split())
    res = {"tps": float(kv["tps"]), "wall": wall, "tree_cpu": usage.ru_utime + usage.ru_stime, "ctx": ctx, "progs": s.progs,
           "others": s.others, "cpu": s.cpu - (s.cpu_attached or 0.0), "load_cpu": s.cpu_attached or 0.0,
           "elapsed": txns / float(kv["tps"])}
    sched = trace / "sched.vpk"
    if mode == "on":
        f = sched_file.read(sched)
        kinds = collections.Counter(sched_file.KIND_NAMES[r.kind] for r in f.stored)
        kinds["SLEEP with RUN"] = sum(1 for r in f.stored if r.kind == sched_file.SLEEP
                                      and r.flags & sched_file.NEXT_RUNS)
        kinds["RUN after idle"] = sum(1 for r in f.stored
                                      if r.kind == sched_file.RUN and r.other == 0)
        res.update(kinds=kinds, lost=f.lost, records=len(f.stored), expanded=len(f.records))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=os.environ.get("VPROF_BUILD_DIR", str(ROOT / "build")))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--txns", type=int, default=20000)
    ap.add_argument("--sched", help="the vprof-sched binary to measure (VPROF_SCHED; default: "
                    "the build's)")
    args = ap.parse_args()
    build = pathlib.Path(args.build_dir).resolve()
    vprof = build / "driver" / "vprof"
    stats_path = pathlib.Path("/proc/sys/kernel/bpf_stats_enabled")
    old_stats = stats_path.read_text().strip()
    stats_path.write_text("1")
    try:
        with tempfile.TemporaryDirectory(prefix="vprof-kw-cost-") as tmp:
            work = pathlib.Path(tmp)
            minidb = build_minidb(build, work / "out")
            for i in range(args.runs):
                off = one_run(vprof, minidb, args.txns, "off", work)
                on = one_run(vprof, minidb, args.txns, "on", work, args.sched)
                n = args.txns
                print(f"run {i + 1}: tps off {off['tps']:.0f} on {on['tps']:.0f}; "
                      f"context switches/txn off {off['ctx'] / n:.1f} on {on['ctx'] / n:.1f}; "
                      f"other recorders loaded: {max(off['others'], on['others'])}")
                busy = 0
                for name, (cnt, ns) in sorted(on["progs"].items()):
                    busy += ns
                    print(f"  {name}: {cnt / n:.1f} runs/txn, {ns / max(cnt, 1):.0f} ns/run, "
                          f"{ns / 1e3 / n:.2f} us/txn")
                cpu_s = 2 * on["elapsed"]
                print(f"  BPF total {busy / 1e9:.3f} s = {100 * busy / 1e9 / cpu_s:.2f} % of "
                      f"2 CPUs x minidb's {on['elapsed']:.2f} s")
                print(f"  records/txn {on['records'] / n:.2f} (as RUN-expanded: "
                      f"{on['expanded'] / n:.2f}), lost {on['lost']}: " +
                      ", ".join(f"{k} {v / n:.2f}" for k, v in sorted(on["kinds"].items())))
                print(f"  recorder CPU while recording {on['cpu']:.3f} s = "
                      f"{1e6 * on['cpu'] / n:.2f} us/txn = {100 * on['cpu'] / cpu_s:.2f} % of "
                      f"2 CPUs x minidb's time (loading the programs before: "
                      f"{on['load_cpu']:.3f} s)")
                print(f"  CPU of vprof run and all it started, per txn: off "
                      f"{1e6 * off['tree_cpu'] / n:.1f} us, on {1e6 * on['tree_cpu'] / n:.1f} us "
                      f"({100 * (on['tree_cpu'] / off['tree_cpu'] - 1):+.1f} %)")
                print(f"  vprof run wall outside minidb: off {off['wall'] - off['elapsed']:.3f} s,"
                      f" on {on['wall'] - on['elapsed']:.3f} s", flush=True)
    finally:
        stats_path.write_text(old_stats)
    print(f"minidb {' '.join(FLAGS)} --txns {args.txns}, {args.runs} runs, "
          f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
