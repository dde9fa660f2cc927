#!/usr/bin/env python3
"""The truth A/B of a memcached scenario: does removing the cause vprof named remove the
variance it said the cause stands for? The vprof tree built with the loop's final plan
(`vprof build`) runs the scenario with its provoking client (on) and without it (off),
alternating; each trace is analysed in a scratch copy of the workspace (the loop's own
stays untouched) for Var(L) of all commands — the intervals' latencies alone, no
attribution. Prints per pair Var(L) on/off, the removed fraction 1 - Var_off/Var_on with a
95 % interval over the pairs, the latency probe's p99 on/off (the client's latencies), and
beside them vprof's claim in the loop's last report: the answer's contribution to Var(L),
and the slow group's (the few intervals far slower than the rest) when it found one.
    truth.py [hol|stats|dump] [--pairs 5] [--seconds 4]
Run after run.sh with the same scenario."""
import argparse
import json
import os
import pathlib
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
CACHE = pathlib.Path(os.environ.get("VPROF_REAL_CACHE", REPO / "build" / "real")) / "memcached"
VPROF = pathlib.Path(os.environ.get("VPROF_BUILD_DIR", REPO / "build")) / "driver" / "vprof"
sys.path.insert(0, str(HERE.parent / "postgres"))
from ab import t95  # noqa: E402


def claim(project: pathlib.Path) -> str:
    """vprof's claim in the loop's last report (all intervals): the answer's contribution
    to Var(L), and the slow group's share when the report found one (the few intervals far
    slower than the rest, what removing them would remove: docs/statistics.md)."""
    reports = project / ".vprof" / "reports"
    newest = max(reports.glob("iter-*.json"), key=lambda p: int(p.stem.split("-")[1]))
    group = json.loads(newest.read_text())["groups"][0]
    a = group["answer"]
    text = f"vprof's answer: {a['name']}, {100 * a['contribution']:.1f} % of Var(L)"
    slow = group.get("slow_group")
    if slow:
        text += (f"; its slow group: {slow['intervals']} intervals at >= "
                 f"{slow['threshold_ns'] / 1e3:.0f} us, {100 * slow['removed']:.1f} % of Var(L)")
    return text + f" ({newest.name})"


def measure(scratch: pathlib.Path, a, cause: str) -> tuple[float, float, int]:
    """(Var(L) in us^2, probe p99 in us, intervals) of one traced run."""
    trace = pathlib.Path(tempfile.mkdtemp(prefix="vprof-truth-"))
    try:
        r = subprocess.run([str(VPROF), "-C", str(scratch), "-q", "run", "--trace-dir", str(trace),
                            "--", str(HERE / "workload.sh"), str(CACHE / "vprof" / "memcached"),
                            a.scenario, cause, str(a.seconds)],
                           capture_output=True, text=True, check=True)
        p99 = float(re.search(r"p99 ([\d.]+) us", r.stdout + r.stderr).group(1))
        subprocess.run([str(VPROF), "-C", str(scratch), "-q", "analyze", str(trace)],
                       capture_output=True, text=True, check=True)
        con = sqlite3.connect(scratch / ".vprof" / "vprof.db")
        var, n = con.execute("SELECT var_ns2, count FROM interval_stats WHERE label = '' AND "
                             "run = (SELECT MAX(id) FROM analysis_runs)").fetchone()
        con.close()
        return var / 1e6, p99, n
    finally:
        shutil.rmtree(trace, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", nargs="?", default="hol", choices=["hol", "stats", "dump"])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--project", help="the loop's project folder (default: "
                    "$VPROF_REAL_CACHE/memcached/project-<scenario>, run.sh's)")
    a = ap.parse_args()
    project = pathlib.Path(a.project) if a.project else CACHE / f"project-{a.scenario}"
    db = project / ".vprof" / "vprof.db"
    if not db.exists():
        sys.exit(f"truth.py: {db}: no workspace; run run.sh {a.scenario} first")
    subprocess.run([str(VPROF), "-C", str(project), "build"], check=True, capture_output=True)
    scratch = CACHE / f"truth-{a.scenario}"
    shutil.rmtree(scratch, ignore_errors=True)
    (scratch / ".vprof").mkdir(parents=True)
    shutil.copy(project / "vprof.toml", scratch / "vprof.toml")
    shutil.copy(db, scratch / ".vprof" / "vprof.db")
    removed = []
    for i in range(a.pairs):
        order = ["on", "off"] if i % 2 == 0 else ["off", "on"]
        got = {c: measure(scratch, a, c) for c in order}
        removed.append(1 - got["off"][0] / got["on"][0])
        print(f"pair {i + 1}: Var(L) on {got['on'][0]:.0f} us^2 ({got['on'][2]} commands), "
              f"off {got['off'][0]:.0f} us^2 ({got['off'][2]}): removed {100 * removed[-1]:.1f} %; "
              f"probe p99 on {got['on'][1]:.0f} us, off {got['off'][1]:.0f} us", flush=True)
    m = statistics.mean(removed)
    h = t95(len(removed) - 1) * statistics.stdev(removed) / len(removed) ** 0.5
    print(f"removing the cause removed {100 * m:.1f} % of Var(L) [{100 * (m - h):.1f}, "
          f"{100 * (m + h):.1f}] ({len(removed)} pairs); {claim(project)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
