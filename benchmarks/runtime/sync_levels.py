#!/usr/bin/env python3
"""Cost of each VPROF_SYNC level on the mini database, in one session: the final plan's
instrumented build run at level 2 (every sync call recorded) and level 1 (edge-forming
records only), interleaved with the uninstrumented build (plain, level 2, level 1, plain,
…), reporting medians of throughput and p99 and each level's change against plain with
a bootstrap 95 % interval. Also counts the records per transaction of one traced run at
each level, by kind.

    benchmarks/runtime/sync_levels.py [--build-dir build] [--reps 9] [--out FILE.md]

Reuses benchmarks/minidb/overhead.py's steps (vprof init + loop for the plan, the two
builds). Exit status: 0 ok, 1 a step failed, 2 bad arguments.
"""
import argparse
import collections
import datetime
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "benchmarks" / "minidb"))
import overhead  # noqa: E402
import vprof_project  # noqa: E402

LEVELS = ("2", "1")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=os.environ.get("VPROF_BUILD_DIR", str(ROOT / "build")))
    ap.add_argument("--reps", type=int, default=9, help="runs of each arm per configuration")
    ap.add_argument("--iterations", type=int, default=4, help="vprof loop iteration budget")
    ap.add_argument("--out", help="also write the markdown table to this file")
    ap.add_argument("--counts-only", action="store_true",
                    help="only the per-transaction record and wake-up edge counts")
    args = ap.parse_args()
    build = pathlib.Path(args.build_dir).resolve()
    vprof = build / "driver" / "vprof"
    if not vprof.exists():
        ap.error(f"{vprof} not found: build vprof first")
    sys.path.insert(0, str(ROOT / "tests" / "runtime"))
    import vpt  # noqa: E402  (kind names)

    with tempfile.TemporaryDirectory(prefix="vprof-sync-levels-") as tmp:
        tmp = pathlib.Path(tmp)
        print("sync_levels: vprof init + loop to get the final plan", file=sys.stderr)
        try:
            it, db, plain_bin, instr_bin = vprof_project.final_plan_builds(
                vprof, build, tmp, args.iterations)
        except vprof_project.StepFailed as e:
            sys.exit(f"sync_levels: {e}")
        sites = overhead.sh(["sqlite3", str(db), "SELECT COUNT(*) FROM sites"]).stdout.strip()

        saved = os.environ.get("VPROF_SYNC")
        per_txn, by_site, edges = {}, collections.Counter(), {}
        analyze = build / "analyzer" / "tools" / "vprof-analyze"
        for lv in LEVELS:  # one traced run per level: records by kind, wake-up edges
            os.environ["VPROF_SYNC"] = lv
            overhead.run_minidb(instr_bin, [], tmp / "trace-count")
            per_txn[lv] = vprof_project.count_records(tmp / "trace-count", by_site if lv == "1" else None)
            out = subprocess.run([str(analyze), str(tmp / "trace-count"), "--json"],
                                 capture_output=True, text=True)
            edges[lv] = json.loads(out.stdout)["wake_edges"] if out.returncode == 0 else None
        site_names = {}
        q = ("SELECT s.id, s.kind, f.name, COALESCE(s.callee_name, '') FROM sites s "
             "JOIN functions f ON f.id = s.function")
        for line in overhead.sh(["sqlite3", "-separator", "\t", str(db), q]).stdout.splitlines():
            sid, kind, fn, callee = line.split("\t")
            site_names[int(sid)] = f"{kind} {fn}" + (f" -> {callee}" if callee else "")
        rows = []
        for name, flags in ([] if args.counts_only else overhead.CONFIGS):
            print(f"sync_levels: {name}: {args.reps} x 3 interleaved runs", file=sys.stderr)
            tps = {k: [] for k in ("plain",) + LEVELS}
            p99 = {k: [] for k in ("plain",) + LEVELS}
            for _ in range(args.reps):
                for arm in ("plain",) + LEVELS:
                    os.environ["VPROF_SYNC"] = "1" if arm == "plain" else arm
                    exe = plain_bin if arm == "plain" else instr_bin
                    t, p = overhead.run_minidb(exe, flags, tmp / f"trace-{arm}")
                    tps[arm].append(t)
                    p99[arm].append(p)
            rows.append((name, tps, p99))
        if saved is None:
            os.environ.pop("VPROF_SYNC", None)
        else:
            os.environ["VPROF_SYNC"] = saved

    def change(a, b):
        lo, hi = overhead.ratio_ci(a, b)
        r = statistics.median(b) / statistics.median(a)
        return f"{100 * (r - 1):+.1f}% [{100 * (lo - 1):+.1f}, {100 * (hi - 1):+.1f}]"

    med = statistics.median
    lines = [f"Final plan: iteration {it}, {sites} sites; {args.reps} interleaved runs of each "
             f"arm (plain, VPROF_SYNC=2, VPROF_SYNC=1) per configuration, 3000 transactions "
             f"each; medians; change = instrumented / plain - 1 with a bootstrap 95 % "
             f"interval. {datetime.date.today().isoformat()}, "
             f"`benchmarks/runtime/sync_levels.py --reps {args.reps}`.", "",
             "| configuration | tps plain | tps sync=2 | change | tps sync=1 | change | "
             "p99 plain (us) | p99 sync=2 | change | p99 sync=1 | change | "
             "tps sync=1 / sync=2 |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, tps, p99 in rows:
        lines.append(
            f"| {name} | {med(tps['plain']):.0f} | {med(tps['2']):.0f} | "
            f"{change(tps['plain'], tps['2'])} | {med(tps['1']):.0f} | "
            f"{change(tps['plain'], tps['1'])} | {med(p99['plain']):.0f} | "
            f"{med(p99['2']):.0f} | {change(p99['plain'], p99['2'])} | "
            f"{med(p99['1']):.0f} | {change(p99['plain'], p99['1'])} | "
            f"{change(tps['2'], tps['1'])} |")
    waits = {lv: sum(per_txn[lv][vpt.REC[k]] for k in (
        "LOCK_WAIT", "RWLOCK_WAIT_RD", "RWLOCK_WAIT_WR", "COND_WAIT_BEGIN", "SEM_WAIT",
        "WAIT_BEGIN", "HANDOFF_RECV")) for lv in LEVELS}
    lines += ["", "Waits (and hand-off receives) and the wake-up edges vprof-analyze drew, per "
              "transaction, one traced run per level:", "",
              "| | sync=2 | sync=1 |", "|---|---:|---:|",
              f"| waits | {waits['2'] / 3000:.2f} | {waits['1'] / 3000:.2f} |",
              "| wake-up edges | " + " | ".join(
                  "?" if edges[lv] is None else f"{edges[lv] / 3000:.2f}" for lv in LEVELS)
              + " |"]
    lines += ["", "Records per transaction of one traced run (default configuration), by kind:",
              "", "| kind | sync=2 | sync=1 |", "|---|---:|---:|"]
    kinds = sorted(set(per_txn["2"]) | set(per_txn["1"]),
                   key=lambda k: -(per_txn["2"][k] + per_txn["1"][k]))
    for k in kinds:
        lines.append(f"| {vpt.NAME.get(k, k)} | {per_txn['2'][k] / 3000:.1f} | "
                     f"{per_txn['1'][k] / 3000:.1f} |")
    lines.append(f"| total | {sum(per_txn['2'].values()) / 3000:.1f} | "
                 f"{sum(per_txn['1'].values()) / 3000:.1f} |")
    lines += ["", "Most frequent probe sites (ENTER records per transaction, sync=1 run):", "",
              "| site | per txn |", "|---|---:|"]
    for sid, n in by_site.most_common(10):
        lines.append(f"| {sid}: {site_names.get(sid, '?')} | {n / 3000:.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
