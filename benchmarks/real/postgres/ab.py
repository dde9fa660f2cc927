#!/usr/bin/env python3
"""A/B overhead of vprof's final plan on PostgreSQL: the plain build against the vprof tree
as the loop left it (its last build is the final plan's), pgbench runs alternating, tps and
mean latency per run; prints the ratio with a 95 % interval (t over the paired runs).
    ab.py [--pairs 5] [--txns 2000] [--iteration N ...]
          [--kernel-wakeups-ab [--compare-sched VPROF_SCHED] [--settle S]]
          [--kernel-wakeups-alternate SECONDS [--phase S] [--runs N]] [--async-commit]
Run after run.sh. The vprof build traces into a temporary directory, removed after each run.
--iteration N: the plan of iteration N instead (`vprof build --iteration N` first; the newest
plan is built again at the end), several to compare every exploration plan.
--kernel-wakeups-ab: what the kernel wake-up recorder costs instead: the final plan's build,
traced, under `vprof run --kernel-wakeups on` against `off`, alternating (needs root or
CAP_BPF + CAP_PERFMON; prints the recorder's records per transaction and its lost records, and
the CPU the run's whole tree used per transaction: a cpuacct cgroup holds it, the server
included, and it includes the recorder's start — its --check and loading, some 50 ms a run).
--compare-sched VPROF_SCHED: a third mode, `on` with another vprof-sched binary, in rotation.
--settle S: before each run, sync and wait S seconds (the previous run's write-back).
--kernel-wakeups-alternate SECONDS: the same cost measured within one run instead: one pgbench
run of SECONDS under `vprof run --kernel-wakeups on`, its recorder pausing and resuming every
--phase seconds (vprof-sched --alternate: paused, its programs return at once), so that
consecutive phases share the server's state (its tables' bloat, checkpoints, the disk's
write-back) that makes separate runs differ by a third; each (recording, paused) pair of phases
gives a ratio of tps and of the machine's CPU per transaction, over the whole seconds of
pgbench's progress inside each phase. It slightly understates the cost: a paused program
still runs (tens of ns a switch).
--async-commit: the server's commits do not wait for the disk (PGOPTIONS
-c synchronous_commit=off): the runs are bound by the CPUs, not by the shared disk's fdatasync,
which measures a CPU cost (the recorder's) with less of the disk's noise."""
import argparse
import math
import os
import struct
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
CACHE = pathlib.Path(os.environ.get("VPROF_REAL_CACHE", REPO / "build" / "real")) / "postgres"
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
       10: 2.23, 15: 2.13, 20: 2.09, 30: 2.04}


def t95(df: int) -> float:
    return T95.get(df) or T95[max(k for k in T95 if k <= df)]


def run_workload(args: list, traced: bool, env: dict) -> str:
    """Runs a workload command; traced: into a temporary trace directory, removed after.
    Returns its standard output. (Shared with benchmarks/real/leveldb/ab.py.)"""
    env = dict(env)
    tmp = None
    if traced:
        tmp = tempfile.mkdtemp(prefix="vprof-ab-")
        env["VPROF_TRACE_DIR"] = tmp
    else:
        env.pop("VPROF_TRACE_DIR", None)
    try:
        return subprocess.run([str(a) for a in args], env=env, capture_output=True, text=True,
                              check=True).stdout
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def run(install: pathlib.Path, txns: int, traced: bool) -> tuple[float, float]:
    env = dict(os.environ)
    env["PG_CLIENT_BIN"] = str(CACHE / "plain" / "install" / "bin")
    out = run_workload([HERE / "workload.sh", install, txns], traced, env)
    tps = float(re.search(r"tps = ([\d.]+)", out).group(1))
    lat = float(re.search(r"latency average = ([\d.]+) ms", out).group(1))
    return tps, lat


def vprof_exe() -> pathlib.Path:
    return pathlib.Path(os.environ.get("VPROF_BUILD_DIR", REPO / "build")) / "driver" / "vprof"


def sched_counts(path: pathlib.Path) -> tuple[int, int]:
    """(records, lost) from a closed sched.vpk's header (runtime/include/vprof/sched_format.h:
    records at byte 48, lost at 56)."""
    with open(path, "rb") as f:
        head = f.read(64)
    if len(head) < 64 or head[:8] != b"VPROFSCH":
        sys.exit(f"ab.py: {path}: not a sched.vpk file")
    return struct.unpack_from("<QQ", head, 48)


CPUACCT = pathlib.Path("/sys/fs/cgroup/cpuacct")


class CpuAccount:
    """A cgroup (v1 cpuacct, or v2) that a run's whole process tree joins, the daemonized server
    included: the CPU it used in all (the recorder and the BPF programs' time in the tree's
    context switches and wake-ups included), a figure the other users of the machine disturb
    far less than the run's throughput. None when no cgroup can be made here."""

    def __init__(self):
        self.path = None
        for base, usage in ((CPUACCT, "cpuacct.usage"),
                            (pathlib.Path("/sys/fs/cgroup"), "cpu.stat")):
            try:
                path = pathlib.Path(tempfile.mkdtemp(prefix="vprof-ab-", dir=base))
            except OSError:
                continue
            if (path / usage).exists():
                self.path, self.usage = path, usage
                break
            path.rmdir()

    def join(self):  # in the child, before exec
        if self.path:
            (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def seconds(self) -> float:
        text = (self.path / self.usage).read_text()
        if self.usage == "cpuacct.usage":
            return int(text) / 1e9
        return int(dict(line.split() for line in text.splitlines())["usage_usec"]) / 1e6

    def remove(self):
        if self.path:
            for _ in range(50):  # the last processes of the tree may still be leaving
                try:
                    self.path.rmdir()
                    return
                except OSError:
                    time.sleep(0.1)


def run_kernel(install: pathlib.Path, txns: int, mode: str,
               sched=None) -> tuple[float, float, int, int, float]:
    """One pgbench run of the vprof build under `vprof run --kernel-wakeups MODE` (traced, into
    a temporary directory), with the recorder binary `sched` when given: (tps, mean latency
    ms, sched records, lost, CPU seconds of the whole tree or 0)."""
    env = dict(os.environ)
    env["PG_CLIENT_BIN"] = str(CACHE / "plain" / "install" / "bin")
    env.pop("VPROF_SCHED", None)
    if sched:
        env["VPROF_SCHED"] = str(sched)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="vprof-ab-kw-"))
    try:
        trace = tmp / "trace"
        cmd = [str(vprof_exe()), "-C", str(CACHE / "project"), "run", "--kernel-wakeups", mode,
               "--trace-dir", str(trace), "--", str(HERE / "workload.sh"), str(install),
               str(txns)]
        acct = CpuAccount()
        try:
            r = subprocess.run(cmd, env=env, capture_output=True, text=True,
                               preexec_fn=acct.join)
            cpu = acct.seconds() if acct.path else 0.0
        finally:
            acct.remove()
        if r.returncode != 0:
            sys.exit(f"ab.py: {' '.join(cmd)} failed ({r.returncode}):\n"
                     f"{r.stdout[-1500:]}{r.stderr[-1500:]}")
        tps = float(re.search(r"tps = ([\d.]+)", r.stdout).group(1))
        lat = float(re.search(r"latency average = ([\d.]+) ms", r.stdout).group(1))
        records, lost = 0, 0
        if mode == "on":
            sched = trace / "sched.vpk"
            if not sched.exists():
                sys.exit(f"ab.py: kernel_wakeups = on wrote no {sched}:\n{r.stderr[-1500:]}")
            records, lost = sched_counts(sched)
        return tps, lat, records, lost, cpu
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def alternation_wrapper(tmp: pathlib.Path, phase_ms: int, log: pathlib.Path) -> pathlib.Path:
    """An executable that runs the recorder `vprof run` would with --alternate added."""
    exe = vprof_exe().parent.parent / "recorder" / "vprof-sched"
    if not exe.exists():
        sys.exit(f"ab.py: {exe}: no recorder built")
    wrapper = tmp / "vprof-sched"
    wrapper.write_text(f"#!/bin/sh\nexec '{exe}' \"$@\" --alternate {phase_ms} "
                       f"--alternate-log '{log}'\n")
    wrapper.chmod(0o755)
    return wrapper


def phases_of(log: pathlib.Path) -> list:
    """[(start, end, phase, busy ticks, all ticks)] from vprof-sched's --alternate-log."""
    rows = [line.split() for line in log.read_text().splitlines() if line.strip()]
    out = []
    for a, b in zip(rows, rows[1:]):
        out.append((float(a[0]), float(b[0]), a[2], int(b[3]) - int(a[3]), int(b[4]) - int(a[4])))
    return out


def progress_of(output: str) -> list:
    """[(end time, tps)] of pgbench's per-second progress lines (--progress-timestamp)."""
    return [(float(m.group(1)), float(m.group(2)))
            for m in re.finditer(r"progress: ([\d.]+) s, ([\d.]+) tps", output)]


def phase_figures(phases: list, progress: list, ncpu: int) -> list:
    """[(phase, tps, CPU seconds per transaction)] of each complete phase: the mean tps of the
    progress seconds wholly inside it; its machine CPU over its transactions."""
    out = []
    for start, end, phase, busy, total in phases:
        if phase not in ("recording", "paused") or total <= 0:
            continue
        inside = [tps for t, tps in progress if t - 1.0 >= start and t <= end]
        if not inside:
            continue
        tps = statistics.mean(inside)
        cpu_seconds = (end - start) * ncpu * busy / total
        out.append((phase, tps, cpu_seconds / (tps * (end - start))))
    return out


def geometric_interval(r: list, what: str, name: str) -> None:
    """Prints the geometric mean of the ratios r with its 95 % interval (t over the logs): the
    arithmetic mean of ratios that vary by a sixth either way is biased up by their variance
    (a ratio and its inverse would both come out above 1)."""
    logs = [math.log(x) for x in r]
    m = statistics.mean(logs)
    h = t95(len(logs) - 1) * statistics.stdev(logs) / len(logs) ** 0.5
    print(f"{what}, {name}: {100 * (math.exp(m) - 1):+.1f} % [{100 * (math.exp(m - h) - 1):+.1f}, "
          f"{100 * (math.exp(m + h) - 1):+.1f}] (geometric mean of {len(r)} pairs)")


def alternating_run(final, a) -> list:
    """One pgbench run of --kernel-wakeups-alternate seconds, recording paused and resumed every
    --phase seconds: its (recording, paused) pairs of phase figures."""
    env = dict(os.environ)
    env["PG_CLIENT_BIN"] = str(CACHE / "plain" / "install" / "bin")
    env["PG_DURATION"] = str(a.kernel_wakeups_alternate)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="vprof-ab-alt-"))
    try:
        log = tmp / "phases.log"
        env["VPROF_SCHED"] = str(alternation_wrapper(tmp, int(1000 * a.phase), log))
        trace = tmp / "trace"
        cmd = [str(vprof_exe()), "-C", str(CACHE / "project"), "run", "--kernel-wakeups", "on",
               "--trace-dir", str(trace), "--", str(HERE / "workload.sh"), str(final), "0"]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0 or not log.exists():
            sys.exit(f"ab.py: {' '.join(cmd)} failed ({r.returncode}):\n"
                     f"{r.stdout[-1500:]}{r.stderr[-1500:]}")
        progress = progress_of(r.stdout)
        if not progress:
            sys.exit(f"ab.py: no pgbench progress lines in the workload's output:\n"
                     f"{r.stdout[-1500:]}{r.stderr[-1500:]}")
        figures = phase_figures(phases_of(log), progress, os.cpu_count() or 1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [(x, y) for x, y in zip(figures[0::2], figures[1::2])
            if x[0] == "recording" and y[0] == "paused"]


def compare_alternating(final, a) -> int:
    """The recorder's cost within long runs (--kernel-wakeups-alternate), --runs of them
    pooled."""
    pairs, after = [], []
    for run_no in range(a.runs):
        got = alternating_run(final, a)
        for i, (on, off) in enumerate(got):
            print(f"run {run_no + 1}, phases {2 * i + 1}-{2 * i + 2}: recording {on[1]:.0f} tps "
                  f"{1e6 * on[2]:.0f} us CPU/txn, paused {off[1]:.0f} tps {1e6 * off[2]:.0f} us "
                  f"CPU/txn ({100 * (on[1] / off[1] - 1):+.1f} % tps)", flush=True)
        pairs += got
        # each paused phase against the recording phase after it: a drift during the run
        # biases these and the pairs by as much in opposite directions
        after += [(got[k + 1][0], got[k][1]) for k in range(len(got) - 1)]
    if len(pairs) < 2:
        sys.exit(f"ab.py: {len(pairs)} (recording, paused) pairs of phases: run longer")
    geometric_interval([on[1] / off[1] for on, off in pairs],
                       "kernel wake-ups recording / paused", "tps")
    geometric_interval([on[2] / off[2] for on, off in pairs],
                       "kernel wake-ups recording / paused", "machine CPU per transaction")
    if len(after) >= 2:
        geometric_interval([on[1] / off[1] for on, off in after],
                           "the same, each paused phase against the recording phase after it",
                           "tps")
    return 0


def vprof_build(iteration=None) -> None:
    """Builds the vprof tree with a plan of the loop's workspace and installs it."""
    args = [str(vprof_exe()), "-C", str(CACHE / "project"), "build"]
    if iteration is not None:
        args += ["--iteration", str(iteration)]
    subprocess.run(args, check=True, capture_output=True, text=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--txns", type=int, default=2000, help="transactions per client per run")
    ap.add_argument("--iteration", type=int, action="append",
                    help="compare this iteration's plan (repeatable; default: the final plan)")
    ap.add_argument("--kernel-wakeups-ab", action="store_true",
                    help="the final plan with the kernel wake-up recorder on against off")
    ap.add_argument("--compare-sched", metavar="VPROF_SCHED",
                    help="with --kernel-wakeups-ab: a third mode, `on` with this recorder binary "
                    "(another build of vprof-sched, e.g. before a change), in the rotation")
    ap.add_argument("--settle", type=float, default=0.0, metavar="SECONDS",
                    help="with --kernel-wakeups-ab: before each run, sync the disks and wait "
                    "this long, so the previous run's write-back does not land in it")
    ap.add_argument("--kernel-wakeups-alternate", type=int, metavar="SECONDS",
                    help="the recorder's cost within one pgbench run of SECONDS, recording "
                    "paused and resumed every --phase seconds")
    ap.add_argument("--runs", type=int, default=1,
                    help="with --kernel-wakeups-alternate: how many such runs, their pairs pooled")
    ap.add_argument("--phase", type=float, default=4.0, metavar="SECONDS",
                    help="with --kernel-wakeups-alternate: the length of each phase (4)")
    ap.add_argument("--async-commit", action="store_true",
                    help="synchronous_commit = off: CPU-bound runs, not disk-bound")
    a = ap.parse_args()
    if a.async_commit:
        os.environ["PGOPTIONS"] = (os.environ.get("PGOPTIONS", "") +
                                   " -c synchronous_commit=off").strip()
    if a.pairs < 2:
        ap.error("--pairs must be at least 2 (a 95 % interval needs two ratios)")
    plain, final = CACHE / "plain" / "install", CACHE / "vprof" / "install"
    for p in (plain, final):
        if not (p / "bin" / "postgres").exists():
            sys.exit(f"ab.py: {p}: no build; run run.sh first")
    os.environ.setdefault("VPROF_MAX_THREAD_MB", "1024")  # as run.sh
    if a.kernel_wakeups_alternate:
        return compare_alternating(final, a)
    if a.kernel_wakeups_ab:
        if a.iteration:
            ap.error("--kernel-wakeups-ab compares the final plan only (no --iteration)")
        return compare_kernel(final, a)
    if not a.iteration:
        return compare(plain, final, a, "final plan")
    for it in a.iteration:
        vprof_build(it)
        compare(plain, final, a, f"plan {it}")
    vprof_build()
    return 0


def interval(r: list, what: str, name: str) -> None:
    """Prints the mean of the ratios r with its 95 % interval (t over the pairs)."""
    m = statistics.mean(r)
    h = t95(len(r) - 1) * statistics.stdev(r) / len(r) ** 0.5
    print(f"{what}, {name}: {100 * (m - 1):+.1f} % "
          f"[{100 * (m - h - 1):+.1f}, {100 * (m + h - 1):+.1f}] ({len(r)} pairs)")


def compare_kernel(final, a) -> int:
    """The final plan's build, kernel wake-ups on against off (and against `on` with another
    recorder binary, --compare-sched), the order rotating from one round to the next."""
    modes = ["off", "on"] + (["old"] if a.compare_sched else [])
    ratios = {m: ([], [], []) for m in modes[1:]}
    per_txn, lost = {m: [] for m in modes[1:]}, {m: 0 for m in modes[1:]}
    clients = int(os.environ.get("PG_CLIENTS", "4"))
    for i in range(a.pairs):
        order = modes[i % len(modes):] + modes[:i % len(modes)]
        got = {}
        for mode in order:
            if a.settle > 0:
                subprocess.run(["sync"], check=False)
                time.sleep(a.settle)
            sched = a.compare_sched if mode == "old" else None
            got[mode] = run_kernel(final, a.txns, "off" if mode == "off" else "on", sched)
        n = a.txns * clients
        line = [f"round {i + 1} ({' '.join(order)}): off {got['off'][0]:.0f} tps "
                f"{1e6 * got['off'][4] / n:.0f} us CPU/txn"]
        for m in modes[1:]:
            ratios[m][0].append(got[m][0] / got["off"][0])
            ratios[m][1].append(got[m][1] / got["off"][1])
            if got["off"][4] > 0:
                ratios[m][2].append(got[m][4] / got["off"][4])
            per_txn[m].append(got[m][2] / (a.txns * clients))
            lost[m] += got[m][3]
            line.append(f"{m} {got[m][0]:.0f} tps ({100 * (ratios[m][0][-1] - 1):+.1f} %), "
                        f"{1e6 * got[m][4] / n:.0f} us CPU/txn "
                        f"({100 * (got[m][4] / max(got['off'][4], 1e-9) - 1):+.1f} %, "
                        f"{got[m][2]} sched records, {got[m][3]} lost)")
        print("; ".join(line), flush=True)
    for m in modes[1:]:
        label = "on (--compare-sched)" if m == "old" else "on"
        for name, r in zip(("tps", "mean latency", "CPU of the tree per transaction"),
                           ratios[m]):
            if len(r) >= 2:
                interval(r, f"kernel wake-ups {label} / off", name)
        print(f"recorder{' ' + a.compare_sched if m == 'old' else ''}: "
              f"{statistics.median(per_txn[m]):.1f} sched records per transaction (median), "
              f"{lost[m]} lost in all")
    return 0


def compare(plain, final, a, what: str) -> int:
    ratios_tps, ratios_lat = [], []
    for i in range(a.pairs):
        order = [(plain, False), (final, True)] if i % 2 == 0 else [(final, True), (plain, False)]
        got = {}
        for inst, traced in order:
            got[traced] = run(inst, a.txns, traced)
        ratios_tps.append(got[True][0] / got[False][0])
        ratios_lat.append(got[True][1] / got[False][1])
        print(f"pair {i + 1}: plain {got[False][0]:.0f} tps, {what} {got[True][0]:.0f} tps "
              f"({100 * (ratios_tps[-1] - 1):+.1f} %)", flush=True)
    for name, r in (("tps", ratios_tps), ("mean latency", ratios_lat)):
        interval(r, f"{what} / plain", name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
