#!/usr/bin/env python3
"""Where the kernel wake-up recorder's cost on PostgreSQL goes: runs of the final plan's build
(benchmarks/real/postgres, after run.sh) under `vprof run --kernel-wakeups on`, with
`kernel.bpf_stats_enabled=1`, reporting per run

- the records per transaction by kind and by process (backends, walwriter, checkpointer, the
  pgbench client, the shell of workload.sh, ...: names sampled from /proc during the run);
- the BPF programs' runs and in-kernel ns (run_cnt / run_time_ns, sampled before the recorder
  detaches them), per transaction, and the share of their runs that were for traced tasks;
- the recorder's own CPU (schedstat) and its voluntary / involuntary context switches.

Needs root. Restores kernel.bpf_stats_enabled afterwards.

    python3 benchmarks/recorder/pg_cost.py [--runs 1] [--txns 2000] [--sched VPROF_SCHED]
"""
import argparse
import collections
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "recorder"))
sys.path.insert(0, str(HERE))
import sched_file  # noqa: E402
from minidb_cost import bpf_prog_stats, prog_ids, recorder_cpu  # noqa: E402

SYSCALLS = {-1: "none (fault)", 0: "read", 1: "write", 7: "poll", 23: "select", 45: "recvfrom",
            61: "wait4", 74: "fsync", 75: "fdatasync", 202: "futex", 232: "epoll_wait",
            270: "pselect6", 271: "ppoll", 281: "epoll_pwait", 230: "clock_nanosleep",
            17: "pread64", 18: "pwrite64", 44: "sendto", 35: "nanosleep", 441: "epoll_pwait2"}
PG = ROOT / "benchmarks" / "real" / "postgres"
CACHE = pathlib.Path(os.environ.get("VPROF_REAL_CACHE", ROOT / "build" / "real")) / "postgres"


def process_names():
    """{pid: a short name}: postgres processes by their title (backend, walwriter, ...)."""
    names = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            comm = open(f"/proc/{d}/comm").read().strip()
            cmd = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")[0].decode(errors="replace")
        except OSError:
            continue
        if comm == "postgres" and cmd.startswith("postgres: "):
            title = cmd[len("postgres: "):]
            comm = "backend" if "[local]" in title else title.split()[0]
        names[int(d)] = comm
    return names


def context_switches_of(pid):
    try:
        st = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status") if ":" in line)
        return int(st["voluntary_ctxt_switches"]), int(st["nonvoluntary_ctxt_switches"])
    except (OSError, KeyError, ValueError):
        return 0, 0


class Sampler(threading.Thread):
    def __init__(self, vprof_pid):
        super().__init__(daemon=True)
        self.vprof_pid, self.stop, self.progs, self.cpu, self.names = vprof_pid, False, {}, 0.0, {}
        self.cpu_attached, self.switches = None, (0, 0)

    def run(self):
        while not self.stop:
            pid, cpu = recorder_cpu(self.vprof_pid)
            progs, _ = bpf_prog_stats(prog_ids(pid) if pid else set())
            if progs:
                self.progs = progs
                if self.cpu_attached is None:
                    self.cpu_attached = cpu
            if pid:
                self.cpu = max(self.cpu, cpu)
                self.switches = max(self.switches, context_switches_of(pid))
            self.names.update(process_names())
            time.sleep(0.1)


def one_run(vprof, txns, clients, work, sched):
    trace = work / "trace"
    shutil.rmtree(trace, ignore_errors=True)
    install = CACHE / "vprof" / "install"
    env = dict(os.environ)
    env["PG_CLIENT_BIN"] = str(CACHE / "plain" / "install" / "bin")
    env.setdefault("VPROF_MAX_THREAD_MB", "1024")
    env.pop("VPROF_SCHED", None)
    if sched:
        env["VPROF_SCHED"] = str(sched)
    cmd = [str(vprof), "-C", str(CACHE / "project"), "run", "--kernel-wakeups", "on",
           "--trace-dir", str(trace), "--", str(PG / "workload.sh"), str(install), str(txns)]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    s = Sampler(p.pid)
    s.start()
    out, err = p.communicate()
    wall = time.monotonic() - t0
    s.stop = True
    s.join()
    if p.returncode != 0:
        sys.exit(f"pg_cost: {' '.join(cmd)} failed:\n{out[-1500:]}{err[-1500:]}")
    tps = float(next(x for x in out.split("\n") if x.startswith("tps = ")).split()[2])
    n = txns * clients
    f = sched_file.read(trace / "sched.vpk")
    by = collections.Counter()
    kinds = collections.Counter()
    for r in f.records:
        name = s.names.get(r.pid, f"?{r.pid}")
        k = sched_file.KIND_NAMES[r.kind]
        by[(name, k)] += 1
        kinds[k] += 1
    print(f"tps {tps:.0f}, wall {wall:.1f} s, {len(f.stored) / n:.2f} records/txn stored "
          f"({len(f.records) / n:.2f} expanded), lost {f.lost}: " +
          ", ".join(f"{k} {v / n:.2f}" for k, v in sorted(kinds.items())))
    calls = collections.defaultdict(collections.Counter)
    for r in f.records:
        if r.kind == sched_file.SLEEP:
            calls[s.names.get(r.pid, f"?{r.pid}")][r.syscall] += 1
    procs = collections.Counter()
    for (name, _), v in by.items():
        procs[name] += v
    for name, v in procs.most_common():
        per = ", ".join(f"{k} {by[(name, k)] / n:.2f}" for k in ("SLEEP", "WAKE", "RUN", "EXIT")
                        if by[(name, k)])
        print(f"  {name}: {v / n:.2f}/txn ({per})")
        if v / n >= 0.1:
            print("    sleeps in system call: " + ", ".join(
                f"{SYSCALLS.get(c, c)} {k / n:.2f}" for c, k in calls[name].most_common(6)))
    total = 0
    for name, (cnt, ns) in sorted(s.progs.items()):
        total += ns
        print(f"  {name}: {cnt / n:.1f} runs/txn, {ns / max(cnt, 1):.0f} ns/run, "
              f"{ns / 1e3 / n:.2f} us/txn")
    cpu = s.cpu - (s.cpu_attached or 0.0)
    print(f"  BPF {total / 1e3 / n:.2f} us/txn; recorder CPU {1e6 * cpu / n:.2f} us/txn "
          f"({cpu:.3f} s), context switches voluntary {s.switches[0]} involuntary "
          f"{s.switches[1]}; load {os.getloadavg()[0]:.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=os.environ.get("VPROF_BUILD_DIR", str(ROOT / "build")))
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--txns", type=int, default=2000, help="transactions per client")
    ap.add_argument("--sched", help="the vprof-sched binary (VPROF_SCHED; default the build's)")
    a = ap.parse_args()
    vprof = pathlib.Path(a.build_dir).resolve() / "driver" / "vprof"
    clients = int(os.environ.get("PG_CLIENTS", "4"))
    stats = pathlib.Path("/proc/sys/kernel/bpf_stats_enabled")
    old = stats.read_text().strip()
    stats.write_text("1")
    try:
        with tempfile.TemporaryDirectory(prefix="vprof-pg-cost-") as tmp:
            for _ in range(a.runs):
                one_run(vprof, a.txns, clients, pathlib.Path(tmp), a.sched)
    finally:
        stats.write_text(old)


if __name__ == "__main__":
    main()
