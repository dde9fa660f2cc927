#!/usr/bin/env python3
"""Cross-checks the accuracy programs' realised shares against vprof's analyzer.

For each program: scan its compile database, plan roots (+ waker roots) to --depth with
vprof-instrument, build it through vprof-cc/vprof-c++, run it with tracing on, analyse the
trace (acc_analyze = the analyzer library's JSON) and compare the program's `truth:` line
with the shares of the analyzer's nodes for the cause function. This checks that the
programs' truth follows the analyzer's critical-path definition; it is not the vprof
loop (a full static plan is used instead of iterative expansion).

    benchmarks/accuracy/crosscheck.py [--build-dir build] [--work DIR] [--depth 10] [NAME...]
Needs targets vprof-instrument, vprof-cc, vprof_rt and acc_analyze in the build tree.
Exit status: 0 ran (the table is informational), 1 a step failed, 2 bad arguments.
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests" / "accuracy"))
import programs  # noqa: E402


def run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: exit {proc.returncode}\n"
                           f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return proc.stdout


def node_shares(analysis, function):
    """[(share, via_wait)] of the body nodes named `function` in the all-intervals group."""
    share = {s["node"]: s["share"] for s in analysis["groups"][0]["nodes"]}
    out = []
    for n in analysis["nodes"]:
        if n["kind"] == "site" and n["name"] == function and n["id"] in share:
            out.append((share[n["id"]], "wait:" in n["path"]))
    return out


def crosscheck(p, build, work, depth):
    inst = build / "instrumenter"
    ws_db = work / "ws.db"
    ws_db.unlink(missing_ok=True)
    compdb = p.compdb(work)
    run([inst / "vprof-instrument", "-q", "-w", ws_db, "scan", "-p", compdb])
    roots = [a for r in p.roots + p.waker_roots for a in ("-r", r)]
    run([inst / "vprof-instrument", "-q", "-w", ws_db, "plan", *roots, "-d", str(depth)])
    env = {**os.environ, "VPROF_WORKSPACE": str(ws_db),
           "VPROF_RUNTIME_LIBDIR": str(build / "runtime")}
    exe = p.build_make(work / "bin", env=env, make_vars={"CC": str(inst / "vprof-cc"),
                                                         "CXX": str(inst / "vprof-c++")})
    trace = work / "trace"
    shutil.rmtree(trace, ignore_errors=True)  # a trace directory collects every run's streams
    res = p.run(exe, env={"VPROF_TRACE_DIR": str(trace), "ACC_IO_DIR": str(work)})
    analysis = json.loads(run([build / "benchmarks" / "accuracy" / "acc_analyze", trace, ws_db]))
    top = analysis["groups"][0]["factors"][0]["name"] if analysis["groups"][0]["factors"] else "-"
    if p.kind == "cov":
        got = [f["share"] for f in analysis["groups"][0]["factors"]
               if f["kind"] == "cov" and all(c + "()" in f["name"] for c in p.cause)]
        return res.truth, [(s, False) for s in got[:1]], top, analysis
    return res.truth, node_shares(analysis, p.cause[0]), top, analysis


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", type=pathlib.Path,
                    default=pathlib.Path(os.environ.get("VPROF_BUILD_DIR", ROOT / "build")))
    ap.add_argument("--work", type=pathlib.Path, help="work directory (default: a temp dir)")
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    by_name = {p.name: p for p in programs.load_programs()}
    unknown = [n for n in args.names if n not in by_name]
    if unknown:
        print(f"crosscheck.py: unknown program(s) {unknown}", file=sys.stderr)
        return 2
    build = args.build_dir.resolve()
    for need in ("instrumenter/vprof-instrument", "instrumenter/vprof-cc",
                 "runtime/libvprof_rt.so", "benchmarks/accuracy/acc_analyze"):
        if not (build / need).exists():
            print(f"crosscheck.py: {build / need} missing; build it first", file=sys.stderr)
            return 2
    work_root = args.work or pathlib.Path(tempfile.mkdtemp(prefix="vprof-crosscheck-"))
    print("| program | realised share | analyzer node share(s) | difference (pp) | top factor |")
    print("|---|---|---|---|---|")
    for name in args.names or by_name:
        p = by_name[name]
        try:
            truth, got, top, _ = crosscheck(p, build, (work_root / name).resolve(), args.depth)
        except RuntimeError as e:
            print(f"crosscheck.py: {name}: {e}", file=sys.stderr)
            return 1
        if "share_waker" in truth:  # own-call node and waker node, compared separately
            want = {False: truth["share_self"], True: truth["share_waker"]}
            real = f"self {truth['share_self']:.3f}, waker {truth['share_waker']:.3f}"
            diffs = [abs(s - want[w]) * 100 for s, w in got]
        else:
            real = f"{truth['share']:.3f}"
            diffs = [abs(s - truth["share"]) * 100 for s, _ in got]
        shown = ", ".join(f"{s:.3f}{' (via wait)' if w else ''}" for s, w in got) or "not named"
        if programs.KERNEL_WAKEUPS in p.needs:  # the program runs here without the recorder
            shown += " (needs the kernel's wake-ups: none recorded here)"
        diff = ", ".join(f"{d:.1f}" for d in diffs) or "-"
        print(f"| {name} | {real} | {shown} | {diff} | {top} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
