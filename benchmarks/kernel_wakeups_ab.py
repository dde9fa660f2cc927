#!/usr/bin/env python3
"""What the kernel wake-up recorder costs the profiled program: the mini database, built with
its annotations and the runtime (every interval traced), run under `vprof run` with
`--kernel-wakeups on` and `off` alternately, pair after pair, in one invocation.

Reports the medians of throughput and p99 latency with recording on and off, the median of
the per-pair ratios (on / off) with a bootstrap 95 % interval, and the recorder's records per
transaction. Needs the privilege the recorder needs (root, or CAP_BPF + CAP_PERFMON).

    benchmarks/kernel_wakeups_ab.py [--build-dir build] [--pairs 8] [--txns 20000]
        [--compare-sched OLD_VPROF_SCHED] [-- MINIDB FLAGS]
                                     (default: --threads 8 --warehouses 1 --fsync off)

--compare-sched adds a third run to each pair, recording with another vprof-sched binary
(VPROF_SCHED, e.g. a copy of an older build), in rotating order: the before/after A/B.

Exit status: 0 ok, 1 a step failed, 2 bad arguments.
"""
import argparse
import os
import pathlib
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
SUMMARY = re.compile(r"^minidb: (.*)$", re.M)
SCHED_HEADER, SCHED_RECORD = 128, 32


def build_minidb(build_dir: pathlib.Path, out: pathlib.Path) -> pathlib.Path:
    """minidb with VPROF_ENABLE and libvprof_rt: the program as a user profiles it."""
    rt = build_dir / "runtime"
    cmd = ["make", "-s", "-B", "-C", str(ROOT / "benchmarks" / "minidb"), f"OUT={out}",
           "CPPFLAGS=-DVPROF_ENABLE", f"LDLIBS=-L{rt} -lvprof_rt -Wl,-rpath,{rt}",
           str(out / "minidb")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"kernel_wakeups_ab: building minidb failed:\n{r.stdout}{r.stderr}")
    return out / "minidb"


def one_run(vprof, minidb, flags, txns, mode, work: pathlib.Path, sched=None):
    """(tps, p99_us, sched records) of one `vprof run` with kernel wake-ups `mode`, recorded
    by the `sched` binary when given."""
    trace = work / f"trace-{mode}"
    shutil.rmtree(trace, ignore_errors=True)
    cmd = [str(vprof), "run", "--kernel-wakeups", mode, "--trace-dir", str(trace), "--",
           str(minidb), "--txns", str(txns), *flags]
    env = dict(os.environ)
    env.pop("VPROF_SCHED", None)
    if sched:
        env["VPROF_SCHED"] = str(sched)
    r = subprocess.run(cmd, cwd=work, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"kernel_wakeups_ab: {' '.join(cmd)} failed ({r.returncode}):\n"
                 f"{r.stdout[-1500:]}{r.stderr[-1500:]}")
    m = SUMMARY.findall(r.stdout)
    if not m:
        sys.exit(f"kernel_wakeups_ab: no summary line from minidb:\n{r.stdout[-1000:]}")
    kv = dict(item.split("=", 1) for item in m[-1].split())
    sched = trace / "sched.vpk"
    records = (sched.stat().st_size - SCHED_HEADER) // SCHED_RECORD if sched.exists() else 0
    if mode == "on" and not sched.exists():
        sys.exit("kernel_wakeups_ab: the recorder wrote no sched.vpk (no privilege?):\n"
                 + r.stderr[-1000:])
    return float(kv["tps"]), float(kv["p99_us"]), records


def ratio_ci(off, on, n=4000, seed=1):
    """Median of the per-pair ratios on[i] / off[i] and its bootstrap 95 % interval."""
    ratios = [b / a for a, b in zip(off, on)]
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(n))
    return statistics.median(ratios), meds[int(0.025 * n)], meds[int(0.975 * n)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=os.environ.get("VPROF_BUILD_DIR", str(ROOT / "build")))
    ap.add_argument("--pairs", type=int, default=8, help="on/off pairs (alternating order)")
    ap.add_argument("--txns", type=int, default=20000, help="transactions per run")
    ap.add_argument("--compare-sched", help="also record with this vprof-sched (mode 'old')")
    ap.add_argument("flags", nargs="*", help="minidb flags after --")
    args = ap.parse_args()
    if args.pairs < 2:
        ap.error("--pairs must be at least 2")
    flags = args.flags or ["--threads", "8", "--warehouses", "1", "--fsync", "off"]
    build = pathlib.Path(args.build_dir).resolve()
    vprof = build / "driver" / "vprof"
    if not vprof.exists():
        sys.exit(f"kernel_wakeups_ab: {vprof} not built (run cmake/build.sh)")
    with tempfile.TemporaryDirectory(prefix="vprof-kw-ab-") as tmp:
        work = pathlib.Path(tmp)
        minidb = build_minidb(build, work / "out")
        modes = ["off", "on"] + (["old"] if args.compare_sched else [])
        res = {m: ([], []) for m in modes}
        records = {m: [] for m in modes}
        for i in range(args.pairs):
            order = modes[i % len(modes):] + modes[:i % len(modes)]
            if i % 2:
                order.reverse()
            for mode in order:
                sched = args.compare_sched if mode == "old" else None
                tps, p99, rec = one_run(vprof, minidb, flags, args.txns,
                                        "off" if mode == "off" else "on", work, sched)
                res[mode][0].append(tps)
                res[mode][1].append(p99)
                records[mode].append(rec / args.txns)
            print(f"pair {i + 1}/{args.pairs}: " + "; ".join(
                f"{m} {res[m][0][-1]:.0f} tps p99 {res[m][1][-1]:.0f} us" for m in modes),
                flush=True)
    for name, k in (("throughput", 0), ("p99 latency", 1)):
        off = res["off"][k]
        for m in modes[1:]:
            med, lo, hi = ratio_ci(off, res[m][k])
            print(f"{name}: off {statistics.median(off):.1f}, {m} {statistics.median(res[m][k]):.1f};"
                  f" {m}/off {100 * (med - 1):+.1f} % [{100 * (lo - 1):+.1f}, {100 * (hi - 1):+.1f}]")
    for m in modes[1:]:
        print(f"recorder ({m}): {statistics.median(records[m]):.1f} sched records per transaction")
    print(f"minidb {' '.join(flags)} --txns {args.txns}, {args.pairs} pairs")


if __name__ == "__main__":
    main()
