#!/usr/bin/env python3
"""Runs minidb with FCFS and with oldest-transaction-first (VATS) lock granting, same seed,
several interleaved repetitions, and writes a markdown table and a plot (PNG with
matplotlib if importable, else a self-written SVG) of mean, variance and p99 latency.

The experiment behind VProfiler's MySQL result (Huang et al., EuroSys'17; VATS: SIGMOD'17).

    benchmarks/minidb/repro_lock_policy.py [--minidb PATH] [--reps 5] [--out-dir DIR]
                                           [-- extra minidb flags]
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
METRICS = (("mean_us", "mean latency (us)"), ("var_us2", "variance (us^2)"),
           ("p99_us", "p99 latency (us)"))
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


def run_once(exe, policy, seed, extra):
    cmd = [str(exe), "--lock-policy", policy, "--seed", str(seed), *extra]
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


def markdown(results, args, cmdline):
    lines = [f"Command: `{cmdline}`  ",
             f"Date: {datetime.date.today().isoformat()}; repetitions per policy: {args.reps} "
             f"(interleaved), seed {args.seed}; cells: mean over repetitions ± 95 % CI.",
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
    return "\n".join(lines) + "\n"


def write_svg(results, path):
    w, h, pad = 300, 260, 50
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w * 3}" height="{h}" '
             'font-family="sans-serif" font-size="12">',
             f'<rect width="{w * 3}" height="{h}" fill="white"/>']
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
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.2))
    for ax, (key, title) in zip(axes, METRICS):
        stats = [summarize([r[key] for r in results[p]]) for p in POLICIES]
        ax.bar(POLICIES, [s[0] for s in stats], yerr=[0 if math.isnan(s[2]) else s[2]
                                                      for s in stats],
               color=["#4477aa", "#ee6677"], capsize=4)
        ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def profile_policies(args, exe, extra) -> str:
    """Runs `vprof loop` on minidb once per policy and returns a markdown table of each
    policy's final answer: its top waits (with the waker's work they stand for) and its top
    places, as contributions to Var(L) (docs/statistics.md, "Places")."""
    import tempfile

    import vprof_project

    vprof = args.vprof or pathlib.Path(exe).resolve().parents[2] / "driver" / "vprof"
    if not pathlib.Path(vprof).exists():
        raise RuntimeError(f"{vprof}: no vprof driver; pass --vprof")
    rows = ["", "### Where the variance comes from, per policy (`vprof loop`, final plan)", "",
            "| policy | runs | what | rank | name | contrib to Var(L) | largest part |",
            "|---|---:|---|---:|---|---:|---|"]
    for pol in POLICIES:
        print(f"profiling {pol} with vprof loop", file=sys.stderr)
        with tempfile.TemporaryDirectory(prefix=f"vprof-repro-{pol}-") as tmp:
            it, report = vprof_project.profile(
                vprof, tmp, ["--lock-policy", pol, "--seed", str(args.seed), *extra])
        group = report["groups"][0]
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
    return "\n".join(rows) + "\n"


def main() -> int:
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minidb", type=pathlib.Path, help="minidb binary (default: build trees)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions per policy (default 5)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out-dir", type=pathlib.Path, default=pathlib.Path("."),
                    help="where lock_policy.md and the plot go (default: .)")
    ap.add_argument("--svg", action="store_true", help="write SVG even if matplotlib exists")
    ap.add_argument("--profile", action="store_true",
                    help="also profile both policies with `vprof loop` and add their top waits and places")
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
    results = {p: [] for p in POLICIES}
    try:
        for rep in range(args.reps):
            for pol in POLICIES:
                r = run_once(exe, pol, args.seed, extra)
                results[pol].append(r)
                print(f"rep {rep + 1}/{args.reps} {pol}: tps={r['tps']:.0f} "
                      f"mean={r['mean_us']:.0f}us var={r['var_us2']:.3g}us2 "
                      f"p99={r['p99_us']:.0f}us", file=sys.stderr)
    except RuntimeError as e:
        print(f"repro_lock_policy.py: {e}", file=sys.stderr)
        return 1
    cmdline = "benchmarks/minidb/repro_lock_policy.py " + " ".join(sys.argv[1:])
    table = markdown(results, args, cmdline.strip())
    if args.profile:
        try:
            table += profile_policies(args, exe, extra)
        except (RuntimeError, OSError) as e:
            print(f"repro_lock_policy.py: profiling failed: {e}", file=sys.stderr)
            return 1
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "lock_policy.md").write_text(table)
    plot = None
    if not args.svg:
        try:
            plot = args.out_dir / "lock_policy.png"
            write_png(results, plot)
        except ImportError:
            plot = None
    if plot is None:
        plot = args.out_dir / "lock_policy.svg"
        write_svg(results, plot)
    print(table)
    print(f"wrote {args.out_dir / 'lock_policy.md'} and {plot}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
