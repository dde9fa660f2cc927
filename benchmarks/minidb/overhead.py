#!/usr/bin/env python3
"""Overhead of vprof's final plan on the mini database, side by side with an
uninstrumented build in one run.

Steps: a fresh vprof project for minidb in a temporary folder, `vprof init` + `vprof loop`
to get the final plan; minidb built twice from the same sources and flags, plainly and
through vprof-c++ with that plan (annotations and runtime on, tracing to a temp dir); then
interleaved runs of both builds (plain, instrumented, plain, …) for each configuration,
reporting the medians of throughput and p99 latency, the median of the per-pair ratios
with a bootstrap 95 % interval, and the trace records per transaction.

    benchmarks/minidb/overhead.py [--build-dir build] [--reps 9] [--txns 10000] [--out FILE.md]

Exit status: 0 ok, 1 a step failed, 2 bad arguments.
"""
import argparse
import datetime
import os
import pathlib
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import vprof_project

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CONFIGS = (
    ("default (fsync on, 100 us page misses)", []),
    ("demo's workload (1 warehouse, fsync off)", ["--warehouses", "1", "--fsync", "off"]),
    ("CPU-bound (fsync off, no I/O delay)", ["--fsync", "off", "--io-us", "0"]),
)
SUMMARY = re.compile(r"^minidb: (.*)$", re.M)


def sh(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"overhead: {' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r


def run_minidb(binary, flags, trace_dir, txns):
    env = dict(os.environ)
    env["VPROF_TRACE_DIR"] = str(trace_dir)
    shutil.rmtree(trace_dir, ignore_errors=True)
    out = sh([str(binary), "--txns", str(txns), *flags], env=env).stdout
    m = SUMMARY.findall(out)
    if not m:
        sys.exit(f"overhead: no summary line from {binary}:\n{out[-1000:]}")
    kv = dict(item.split("=", 1) for item in m[-1].split())
    if kv.get("consistent") != "yes":
        sys.exit(f"overhead: {binary} reported an inconsistent database")
    return float(kv["tps"]), float(kv["p99_us"])


def paired_ratio(a, b, n=2000, seed=1):
    """Median of the per-pair ratios b[i] / a[i] (run i of each build, back to back, so
    both saw the same machine state) and its bootstrap 95 % interval over the pairs."""
    ratios = [y / x for x, y in zip(a, b)]
    rng = random.Random(seed)
    rs = sorted(statistics.median([rng.choice(ratios) for _ in ratios]) for _ in range(n))
    return statistics.median(ratios), rs[int(0.025 * n)], rs[int(0.975 * n) - 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=os.environ.get("VPROF_BUILD_DIR", str(ROOT / "build")))
    ap.add_argument("--reps", type=int, default=9, help="runs of each build per configuration")
    ap.add_argument("--txns", type=int, default=10000,
                    help="transactions per run (the default configuration's p99 varies from "
                         "run to run by 3.5 %% (CV) with 3,000, by 1.3 %% with 10,000)")
    ap.add_argument("--iterations", type=int, default=4, help="vprof loop iteration budget")
    ap.add_argument("--out", help="also write the markdown table to this file")
    args = ap.parse_args()
    build = pathlib.Path(args.build_dir).resolve()
    vprof = build / "driver" / "vprof"
    if not vprof.exists():
        ap.error(f"{vprof} not found: build vprof first (./test.sh or cmake --build)")

    with tempfile.TemporaryDirectory(prefix="vprof-overhead-") as tmp:
        tmp = pathlib.Path(tmp)
        print("overhead: vprof init + loop to get the final plan", file=sys.stderr)
        try:
            it, db, plain_bin, instr_bin = vprof_project.final_plan_builds(
                vprof, build, tmp, args.iterations)
        except vprof_project.StepFailed as e:
            sys.exit(f"overhead: {e}")
        planned = sh(["sqlite3", str(db), f"SELECT COUNT(*) FROM plans WHERE iteration = {it}"]).stdout.strip()
        names = sh(["sqlite3", str(db), "SELECT f.name FROM plans p JOIN functions f ON "
                    f"f.id = p.function WHERE p.iteration = {it} ORDER BY f.name"]).stdout.splitlines()
        sites = sh(["sqlite3", str(db), "SELECT COUNT(*) FROM sites"]).stdout.strip()

        rows = []
        for name, flags in CONFIGS:
            print(f"overhead: {name}: {args.reps} x 2 interleaved runs", file=sys.stderr)
            p_tps, p_p99, i_tps, i_p99 = [], [], [], []
            for rep in range(args.reps):
                t, p = run_minidb(plain_bin, flags, tmp / "trace-plain", args.txns)
                p_tps.append(t)
                p_p99.append(p)
                t, p = run_minidb(instr_bin, flags, tmp / "trace-instr", args.txns)
                i_tps.append(t)
                i_p99.append(p)
            # records per transaction of the last instrumented run
            records = sum(vprof_project.count_records(tmp / "trace-instr").values())
            rows.append((name, p_tps, i_tps, p_p99, i_p99, records / args.txns))

    date = datetime.date.today().isoformat()
    lines = [f"Final plan: iteration {it}, {planned} functions planned, {sites} sites; "
             f"{args.reps} interleaved runs of each build per configuration, {args.txns} "
             f"transactions each; medians; change = the median of the per-pair ratios "
             f"instrumented / plain - 1 (each pair run back to back) with a bootstrap 95 % "
             f"interval over the pairs. {date}, "
             f"`benchmarks/minidb/overhead.py --reps {args.reps} --txns {args.txns}`.", "",
             f"Planned: {', '.join(f'`{n}`' for n in names)}.", "",
             "| configuration | tps plain | tps vprof | tps change | p99 plain (us) | p99 vprof (us) | p99 change | records / txn |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, p_tps, i_tps, p_p99, i_p99, per_txn in rows:
        def change(a, b):
            r, lo, hi = paired_ratio(a, b)
            return f"{100 * (r - 1):+.1f}% [{100 * (lo - 1):+.1f}, {100 * (hi - 1):+.1f}]"
        lines.append(f"| {name} | {statistics.median(p_tps):.0f} | {statistics.median(i_tps):.0f} | "
                     f"{change(p_tps, i_tps)} | {statistics.median(p_p99):.0f} | "
                     f"{statistics.median(i_p99):.0f} | {change(p_p99, i_p99)} | {per_txn:.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
