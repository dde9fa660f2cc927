#!/usr/bin/env python3
"""Reproduces VProfiler's MySQL result on the mini database: lock granting FCFS against
oldest-transaction-first (VATS), same seed, interleaved repetitions; writes a markdown
table (tps, p50, mean, variance, p99 with 95 % intervals and Welch's t) and a plot (PNG
with matplotlib if importable, else a self-written SVG), then profiles each policy with
`vprof loop` and says how much of the lock wait's share of Var(L) VATS removed.

The workload is minidb's lock-scheduling mix (`--mix hot --warehouses 1 --threads 24`,
docs/minidb.md): transactions lock hot rows in the middle of their life, so the waiters of
one lock differ in age. Huang et al., EuroSys'17 (VProfiler) and SIGMOD'17 (VATS).

    benchmarks/minidb/repro_lock_policy.py [--minidb PATH] [--reps 7] [--out-dir DIR]
                                           [--no-profile] [-- extra minidb flags]
Flags after `--` go to minidb after the workload's own, so they override them
(`-- --mix tpcc` runs the plain TPC-C mix).
Exit status: 0 ok, 1 a run failed or was inconsistent, 2 bad arguments / no binary.
"""
import argparse
import datetime
import math
import os
import pathlib
import re
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
POLICIES = ("fcfs", "vats")
# The lock-scheduling workload (docs/minidb.md, "The hot mix"); later flags override these.
WORKLOAD = ("--mix", "hot", "--warehouses", "1", "--threads", "24", "--txns", "4000")
LOCK_WAIT = "[wait:cond] in minidb::LockManager::acquire"
METRICS = (("p50_us", "median latency (us)"), ("mean_us", "mean latency (us)"),
           ("var_us2", "variance (us^2)"), ("p99_us", "p99 latency (us)"))
# Two-sided 95 % Student t quantiles by degrees of freedom (df > 30: normal).
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


def t95(df: int) -> float:
    if df <= 0:
        return float("nan")
    keys = [k for k in sorted(T95) if k <= df]
    return T95[keys[-1]] if df <= 30 else 1.96


def find_minidb(given):
    """The binary to run: `given` if set (None when it is not an executable), else the
    first of $VPROF_BUILD_DIR's, build/'s and build-programs/'s minidb that exists."""
    if given:
        return pathlib.Path(given) if os.path.isfile(given) and os.access(given, os.X_OK) else None
    candidates = []
    if os.environ.get("VPROF_BUILD_DIR"):
        candidates.append(pathlib.Path(os.environ["VPROF_BUILD_DIR"]) / "benchmarks/minidb/minidb")
    candidates += [ROOT / "build/benchmarks/minidb/minidb",
                   ROOT / "build-programs/benchmarks/minidb/minidb"]
    for c in candidates:
        if c and pathlib.Path(c).is_file() and os.access(c, os.X_OK):
            return pathlib.Path(c)
    return None


def run_once(exe, policy, seed, flags):
    cmd = [str(exe), "--lock-policy", policy, "--seed", str(seed), *flags]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    line = next((l for l in proc.stdout.splitlines() if l.startswith("minidb:")), None)
    if proc.returncode != 0 or line is None or "consistent=yes" not in line:
        raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}")
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)(?=\s|$)", line)}


def summarize(values):
    m = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    half = t95(len(values) - 1) * sd / math.sqrt(len(values)) if len(values) > 1 else float("nan")
    return m, sd, half


def welch_t(a, b):
    """Welch's t statistic of mean(b) - mean(a)."""
    if len(a) < 2 or len(b) < 2:
        return float("nan")
    se = math.sqrt(statistics.variance(a) / len(a) + statistics.variance(b) / len(b))
    return (statistics.fmean(b) - statistics.fmean(a)) / se if se > 0 else float("nan")


def markdown(results, args, cmdline, flags):
    lines = [f"Command: `{cmdline}`  ",
             f"Date: {datetime.date.today().isoformat()}; minidb flags: `{' '.join(flags)}`; "
             f"repetitions per policy: {args.reps} (interleaved), seed {args.seed}; cells: mean "
             "over repetitions ± 95 % CI.",
             "",
             "| policy | tps | p50 (us) | mean (us) | variance (us^2) | p99 (us) |",
             "|---|---|---|---|---|---|"]
    for pol in POLICIES:
        cells = []
        for key in ("tps", "p50_us", "mean_us", "var_us2", "p99_us"):
            m, _, half = summarize([r[key] for r in results[pol]])
            cells.append(f"{m:,.0f} ± {half:,.0f}")
        lines.append(f"| {pol} | " + " | ".join(cells) + " |")
    ratio = []
    for key in ("tps", "p50_us", "mean_us", "var_us2", "p99_us"):
        a = [r[key] for r in results["fcfs"]]
        b = [r[key] for r in results["vats"]]
        ratio.append(f"{statistics.fmean(b) / statistics.fmean(a):.2f} (t={welch_t(a, b):+.1f})")
    lines.append("| vats / fcfs | " + " | ".join(ratio) + " |")
    lines.append("")
    lines.append("t = Welch's t of (vats − fcfs); |t| > ~2.3 is significant at 5 % for these "
                 "sample sizes.")
    lines.append("")
    lines.append(verdict(results))
    return "\n".join(lines) + "\n"


def cut(results, key):
    """(percent by which VATS lowers the mean of `key`, Welch's t)."""
    a = [r[key] for r in results["fcfs"]]
    b = [r[key] for r in results["vats"]]
    return 100 * (1 - statistics.fmean(b) / statistics.fmean(a)), welch_t(a, b)


def verdict(results) -> str:
    """One sentence: what VATS did to Var(L), p99 and throughput."""
    var, t_var = cut(results, "var_us2")
    p99, t_p99 = cut(results, "p99_us")
    tps, t_tps = cut(results, "tps")
    wait = {p: [r["lockwait_share"] * r["var_us2"] / 1e6 for r in results[p]] for p in POLICIES}
    w_f, w_v = statistics.fmean(wait["fcfs"]), statistics.fmean(wait["vats"])
    return (f"VATS against FCFS: Var(L) {-var:+.0f} % (t={t_var:+.1f}), p99 {-p99:+.0f} % "
            f"(t={t_p99:+.1f}), throughput {-tps:+.1f} % (t={t_tps:+.1f}). The part of Var(L) "
            f"the row-lock waits account for (minidb's own Cov(lock wait, L)): {w_f:,.1f} ms² "
            f"under FCFS, {w_v:,.1f} ms² under VATS "
            f"({100 * (w_v / w_f - 1) if w_f else float('nan'):+.0f} %, "
            f"t={welch_t(wait['fcfs'], wait['vats']):+.1f}).")


def write_svg(results, path):
    w, h, pad = 300, 260, 50
    width = w * len(METRICS)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" '
             'font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{h}" fill="white"/>']
    colors = {"fcfs": "#4477aa", "vats": "#ee6677"}
    for i, (key, title) in enumerate(METRICS):
        x0 = i * w
        stats = {p: summarize([r[key] for r in results[p]]) for p in POLICIES}
        top = max(m + (0 if math.isnan(c) else c) for m, _, c in stats.values()) * 1.15 or 1
        base = h - 40
        scale = (base - pad) / top
        parts.append(f'<text x="{x0 + w / 2}" y="25" text-anchor="middle" '
                     f'font-weight="bold">{title}</text>')
        parts.append(f'<line x1="{x0 + 30}" y1="{base}" x2="{x0 + w - 20}" y2="{base}" '
                     'stroke="black"/>')
        for j, pol in enumerate(POLICIES):
            m, _, half = stats[pol]
            bx = x0 + 60 + j * 110
            bh = m * scale
            parts.append(f'<rect x="{bx}" y="{base - bh:.1f}" width="70" height="{bh:.1f}" '
                         f'fill="{colors[pol]}"/>')
            if not math.isnan(half):
                y1, y2 = base - (m - half) * scale, base - (m + half) * scale
                parts.append(f'<line x1="{bx + 35}" y1="{y1:.1f}" x2="{bx + 35}" y2="{y2:.1f}" '
                             'stroke="black" stroke-width="1.5"/>')
            parts.append(f'<text x="{bx + 35}" y="{base - bh - 8:.1f}" text-anchor="middle">'
                         f'{m:,.0f}</text>')
            parts.append(f'<text x="{bx + 35}" y="{base + 16}" text-anchor="middle">{pol}</text>')
    parts.append("</svg>")
    path.write_text("\n".join(parts) + "\n")


def write_png(results, path):
    import matplotlib  # noqa: PLC0415 (optional dependency)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    fig, axes = plt.subplots(1, len(METRICS), figsize=(13, 3.2))
    for ax, (key, title) in zip(axes, METRICS):
        stats = [summarize([r[key] for r in results[p]]) for p in POLICIES]
        ax.bar(POLICIES, [s[0] for s in stats], yerr=[0 if math.isnan(s[2]) else s[2]
                                                      for s in stats],
               color=["#4477aa", "#ee6677"], capsize=4)
        ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def profile_policies(args, exe, flags) -> str:
    """Runs `vprof loop` on minidb once per policy and returns a markdown table of each
    policy's final answer, its top waits (with the waker's work they stand for) and top
    places, as contributions to Var(L) (docs/statistics.md, "Places"), and a sentence on
    how much of Var(L) the row-lock wait stands for under each policy."""
    import tempfile

    import vprof_project

    vprof = args.vprof or pathlib.Path(exe).resolve().parents[2] / "driver" / "vprof"
    if not pathlib.Path(vprof).exists():
        raise RuntimeError(f"{vprof}: no vprof driver; pass --vprof")
    rows = ["", "### Where the variance comes from, per policy (`vprof loop`, final plan)", "",
            "| policy | runs | what | rank | name | contrib to Var(L) | largest part |",
            "|---|---:|---|---:|---|---:|---|"]
    lock_wait = {}
    for pol in POLICIES:
        print(f"profiling {pol} with vprof loop (a few minutes)", file=sys.stderr)
        with tempfile.TemporaryDirectory(prefix=f"vprof-repro-{pol}-") as tmp:
            it, report = vprof_project.profile(
                vprof, tmp, ["--lock-policy", pol, "--seed", str(args.seed), *flags])
        group = report["groups"][0]
        rows += answer_rows(pol, it, group)
        lock_wait[pol] = lock_wait_variance(group)
    return "\n".join(rows) + "\n\n" + lock_wait_sentence(lock_wait) + "\n"


def answer_rows(pol, it, group):
    """The table rows of one policy's final report: two waits, three places."""
    rows = []
    for rank, w in enumerate(group.get("waits", [])[:2], 1):
        rows.append(f"| {pol} | {it + 1} | wait | {rank} | `{w['name']}` | "
                    f"{100 * w['contribution']:.1f} % | |")
    for rank, p in enumerate(group.get("places", [])[:3], 1):
        via = max(p.get("via", []), key=lambda v: v["contribution"], default=None)
        part = ""
        if via is not None:
            part = (f"waker of `{via['wait']}`" if via["wait"] else "own path") + \
                f" {100 * via['contribution']:.1f} %"
        rows.append(f"| {pol} | {it + 1} | place | {rank} | `{p['name']}` | "
                    f"{100 * p['contribution']:.1f} % | {part} |")
    return rows


def lock_wait_variance(group):
    """(rank among the waits, contribution share, absolute part of Var(L) in ms^2) of the
    row-lock wait in one report group; rank None when the wait is absent."""
    var_ms2 = group["latency"]["var_ns2"] / 1e12
    for rank, w in enumerate(group.get("waits", []), 1):
        if w["name"] == LOCK_WAIT:
            return rank, w["contribution"], w["contribution"] * var_ms2
    return None, 0.0, 0.0


def lock_wait_sentence(lock_wait) -> str:
    (r_f, c_f, a_f), (_, c_v, a_v) = lock_wait["fcfs"], lock_wait["vats"]
    where = "the top wait" if r_f == 1 else f"wait number {r_f}" if r_f else "absent"
    gone = 100 * (1 - a_v / a_f) if a_f > 0 else float("nan")
    return (f"vprof: the row-lock wait (`{LOCK_WAIT}`) is {where} under FCFS: {100 * c_f:.1f} % "
            f"of Var(L), {a_f:,.1f} ms²; under VATS {100 * c_v:.1f} %, {a_v:,.1f} ms²: VATS "
            f"removed {gone:.0f} % of the latency variance it stands for (one profiled run "
            "each: the table's repetitions give the spread of such figures).")


def main() -> int:
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minidb", type=pathlib.Path, help="minidb binary (default: build trees)")
    ap.add_argument("--reps", type=int, default=7, help="repetitions per policy (default 7)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out-dir", type=pathlib.Path, default=pathlib.Path("."),
                    help="where lock_policy.md and the plot go (default: .)")
    ap.add_argument("--svg", action="store_true", help="write SVG even if matplotlib exists")
    ap.add_argument("--no-profile", dest="profile", action="store_false",
                    help="skip profiling both policies with `vprof loop` (a few minutes)")
    ap.add_argument("--vprof", type=pathlib.Path,
                    help="vprof driver for --profile (default: <build dir>/driver/vprof)")
    args = ap.parse_args(argv)
    if args.reps < 1:
        print("repro_lock_policy.py: --reps must be >= 1", file=sys.stderr)
        return 2
    exe = find_minidb(args.minidb)
    if exe is None:
        print("repro_lock_policy.py: no minidb binary; build target minidb or pass --minidb",
              file=sys.stderr)
        return 2
    flags = [*WORKLOAD, *extra]
    results = {p: [] for p in POLICIES}
    try:
        for rep in range(args.reps):
            for pol in POLICIES:
                r = run_once(exe, pol, args.seed, flags)
                results[pol].append(r)
                print(f"rep {rep + 1}/{args.reps} {pol}: tps={r['tps']:.0f} "
                      f"mean={r['mean_us']:.0f}us var={r['var_us2']:.3g}us2 "
                      f"p99={r['p99_us']:.0f}us", file=sys.stderr)
    except RuntimeError as e:
        print(f"repro_lock_policy.py: {e}", file=sys.stderr)
        return 1
    cmdline = "benchmarks/minidb/repro_lock_policy.py " + " ".join(sys.argv[1:])
    table = markdown(results, args, cmdline.strip(), flags)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    md = args.out_dir / "lock_policy.md"
    md.write_text(table)
    plot = write_plot(results, args)
    print(table)
    print(f"wrote {md} and {plot}", file=sys.stderr)
    if args.profile:
        try:
            answers = profile_policies(args, exe, flags)
        except (RuntimeError, OSError) as e:
            print(f"repro_lock_policy.py: profiling failed: {e}", file=sys.stderr)
            return 1
        md.write_text(table + answers)
        print(answers)
        print(f"added the profiles to {md}", file=sys.stderr)
    return 0


def write_plot(results, args):
    """lock_policy.png with matplotlib (unless --svg), else lock_policy.svg; returns it."""
    if not args.svg:
        try:
            plot = args.out_dir / "lock_policy.png"
            write_png(results, plot)
            return plot
        except ImportError:
            pass
    plot = args.out_dir / "lock_policy.svg"
    write_svg(results, plot)
    return plot


if __name__ == "__main__":
    sys.exit(main())
