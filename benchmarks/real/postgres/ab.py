#!/usr/bin/env python3
"""A/B overhead of vprof's final plan on PostgreSQL: the plain build against the vprof tree
as the loop left it (its last build is the final plan's), pgbench runs alternating, tps and
mean latency per run; prints the ratio with a 95 % interval (t over the paired runs).
    ab.py [--pairs 5] [--txns 2000] [--iteration N ...]
Run after run.sh. The vprof build traces into a temporary directory, removed after each run.
--iteration N: the plan of iteration N instead (`vprof build --iteration N` first; the newest
plan is built again at the end), several to compare every exploration plan."""
import argparse
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

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


def vprof_build(iteration=None) -> None:
    """Builds the vprof tree with a plan of the loop's workspace and installs it."""
    vprof = pathlib.Path(os.environ.get("VPROF_BUILD_DIR", REPO / "build")) / "driver" / "vprof"
    args = [str(vprof), "-C", str(CACHE / "project"), "build"]
    if iteration is not None:
        args += ["--iteration", str(iteration)]
    subprocess.run(args, check=True, capture_output=True, text=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--txns", type=int, default=2000, help="transactions per client per run")
    ap.add_argument("--iteration", type=int, action="append",
                    help="compare this iteration's plan (repeatable; default: the final plan)")
    a = ap.parse_args()
    plain, final = CACHE / "plain" / "install", CACHE / "vprof" / "install"
    for p in (plain, final):
        if not (p / "bin" / "postgres").exists():
            sys.exit(f"ab.py: {p}: no build; run run.sh first")
    os.environ.setdefault("VPROF_MAX_THREAD_MB", "1024")  # as run.sh
    if not a.iteration:
        return compare(plain, final, a, "final plan")
    for it in a.iteration:
        vprof_build(it)
        compare(plain, final, a, f"plan {it}")
    vprof_build()
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
        m = statistics.mean(r)
        h = t95(len(r) - 1) * statistics.stdev(r) / len(r) ** 0.5 if len(r) > 1 else float("nan")
        print(f"{what} / plain, {name}: {100 * (m - 1):+.1f} % "
              f"[{100 * (m - h - 1):+.1f}, {100 * (m + h - 1):+.1f}] ({len(r)} pairs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
