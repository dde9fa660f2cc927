#!/usr/bin/env python3
"""A/B overhead of vprof's final plan on LevelDB: the plain db_bench against the vprof tree's
as the loop left it (its last build is the final plan's), runs alternating; prints the
ratio of micros/op and of the CPU time each run used (user + system: far steadier than
micros/op with four writers on two vCPUs) with 95 % intervals (t over the paired runs).
    ab.py [fillrandom|fillsync|stall] [--pairs 5]
Run after run.sh with the same workload. The traced runs write into a temporary directory,
removed after each run."""
import argparse
import os
import pathlib
import re
import resource
import statistics
import sys

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
CACHE = pathlib.Path(os.environ.get("VPROF_REAL_CACHE", REPO / "build" / "real")) / "leveldb"
sys.path.insert(0, str(HERE.parent / "postgres"))
from ab import run_workload, t95  # noqa: E402  (the same runner and t table)


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run(bench: pathlib.Path, what: str, traced: bool) -> tuple[float, float]:
    """(micros/op, CPU seconds) of one db_bench run."""
    cpu0 = children_cpu()
    out = run_workload([HERE / "workload.sh", bench, what], traced, os.environ)
    return float(re.search(r"([\d.]+) micros/op", out).group(1)), children_cpu() - cpu0


def ratio_line(what: str, ratios: list) -> str:
    m = statistics.mean(ratios)
    h = t95(len(ratios) - 1) * statistics.stdev(ratios) / len(ratios) ** 0.5
    return (f"final plan / plain, {what}: {100 * (m - 1):+.1f} % [{100 * (m - h - 1):+.1f}, "
            f"{100 * (m + h - 1):+.1f}] ({len(ratios)} pairs)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", nargs="?", default="fillrandom",
                    choices=["fillrandom", "fillsync", "stall"])
    ap.add_argument("--pairs", type=int, default=5)
    a = ap.parse_args()
    plain, final = CACHE / "plain" / "db_bench", CACHE / "vprof" / "db_bench"
    for p in (plain, final):
        if not p.exists():
            sys.exit(f"ab.py: {p}: no build; run run.sh {a.workload} first")
    ratios, cpu_ratios = [], []
    for i in range(a.pairs):
        order = [(plain, False), (final, True)] if i % 2 == 0 else [(final, True), (plain, False)]
        got = {traced: run(bench, a.workload, traced) for bench, traced in order}
        ratios.append(got[True][0] / got[False][0])
        cpu_ratios.append(got[True][1] / got[False][1])
        print(f"pair {i + 1}: plain {got[False][0]:.3f} micros/op {got[False][1]:.2f} s CPU, "
              f"final plan {got[True][0]:.3f} {got[True][1]:.2f} s ({100 * (ratios[-1] - 1):+.1f} %, "
              f"CPU {100 * (cpu_ratios[-1] - 1):+.1f} %)", flush=True)
    print(ratio_line("micros/op", ratios))
    print(ratio_line("CPU time", cpu_ratios))
    return 0


if __name__ == "__main__":
    sys.exit(main())
