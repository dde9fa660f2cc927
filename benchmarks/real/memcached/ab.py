#!/usr/bin/env python3
"""A/B overhead of vprof's final plan on memcached: the plain build against the vprof tree
as the loop left it (`vprof build` first: the final plan of the scenario's project), runs
of workload.sh alternating; prints the ratio of memcaslap's throughput (TPS), of the
latency probe's p99 and of the server's CPU time per command (its own `stats`: steadier than
the throughput of a client sharing the same cores) with 95 % intervals (t over the pairs).
    ab.py [hol|stats|dump] [--pairs 5] [--seconds 6] [--cause on|off] [--iteration N]
Run after run.sh with the same scenario. --iteration N measures plan N instead of the
newest (an exploration plan, for issue 24's bar of at least 85 % of plain throughput). The traced runs write into a temporary
directory, removed after each run."""
import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
CACHE = pathlib.Path(os.environ.get("VPROF_REAL_CACHE", REPO / "build" / "real")) / "memcached"
sys.path.insert(0, str(HERE.parent / "postgres"))
from ab import run_workload, t95  # noqa: E402  (the same runner and t table)


def run(server: pathlib.Path, a, traced: bool) -> tuple[float, float, float]:
    """(TPS, probe p99 in us, the server's CPU us per command) of one workload run."""
    out = run_workload([HERE / "workload.sh", server, a.scenario, a.cause, a.seconds], traced,
                       os.environ)
    tps = float(re.search(r"TPS: (\d+)", out).group(1))
    p99 = float(re.search(r"p99 ([\d.]+) us", out).group(1))
    cpu = float(re.search(r"([\d.]+) us per command", out).group(1))
    return tps, p99, cpu


def ratio_line(name: str, what: str, ratios: list) -> str:
    m = statistics.mean(ratios)
    h = t95(len(ratios) - 1) * statistics.stdev(ratios) / len(ratios) ** 0.5
    return (f"{name} / plain, {what}: {100 * (m - 1):+.1f} % [{100 * (m - h - 1):+.1f}, "
            f"{100 * (m + h - 1):+.1f}] ({len(ratios)} pairs)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", nargs="?", default="hol", choices=["hol", "stats", "dump"])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=6)
    ap.add_argument("--cause", default="on", choices=["on", "off"])
    ap.add_argument("--iteration", type=int,
                    help="the plan to measure (default: the newest, the final plan)")
    ap.add_argument("--project", help="the loop's project folder (default: "
                    "$VPROF_REAL_CACHE/memcached/project-<scenario>, run.sh's)")
    a = ap.parse_args()
    plain, final = CACHE / "plain" / "memcached", CACHE / "vprof" / "memcached"
    project = pathlib.Path(a.project) if a.project else CACHE / f"project-{a.scenario}"
    if not plain.exists() or not (project / ".vprof").exists():
        sys.exit(f"ab.py: no build or no loop for {a.scenario}; run run.sh {a.scenario} first")
    vprof = pathlib.Path(os.environ.get("VPROF_BUILD_DIR", REPO / "build")) / "driver" / "vprof"
    plan = [] if a.iteration is None else ["--iteration", str(a.iteration)]
    subprocess.run([str(vprof), "-C", str(project), "build", *plan], check=True,
                   capture_output=True)
    name = "final plan" if a.iteration is None else f"plan {a.iteration}"
    tps_r, p99_r, cpu_r = [], [], []
    for i in range(a.pairs):
        order = [(plain, False), (final, True)] if i % 2 == 0 else [(final, True), (plain, False)]
        got = {traced: run(server, a, traced) for server, traced in order}
        tps_r.append(got[True][0] / got[False][0])
        p99_r.append(got[True][1] / got[False][1])
        cpu_r.append(got[True][2] / got[False][2])
        print(f"pair {i + 1}: plain {got[False][0]:.0f} TPS p99 {got[False][1]:.0f} us "
              f"{got[False][2]:.2f} us CPU/command, {name} {got[True][0]:.0f} TPS p99 "
              f"{got[True][1]:.0f} us {got[True][2]:.2f} us CPU/command "
              f"({100 * (tps_r[-1] - 1):+.1f} %, p99 {100 * (p99_r[-1] - 1):+.1f} %, "
              f"CPU {100 * (cpu_r[-1] - 1):+.1f} %)", flush=True)
    print(ratio_line(name, "throughput (TPS)", tps_r))
    print(ratio_line(name, "probe p99", p99_r))
    print(ratio_line(name, "server CPU per command", cpu_r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
