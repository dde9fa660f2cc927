"""A throw-away vprof project for the mini database: compile database, `vprof init`,
`vprof loop`, the plain and instrumented builds, trace record counts; shared by
overhead.py, repro_lock_policy.py and benchmarks/runtime/sync_levels.py."""
import collections
import json
import os
import pathlib
import struct
import subprocess

HERE = pathlib.Path(__file__).resolve().parent


class StepFailed(RuntimeError):
    """A command of the pipeline failed; the message holds its output's tail."""


def _run(cmd, cwd=None, env=None):
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise StepFailed(f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n"
                         f"{r.stdout[-1500:]}{r.stderr[-1500:]}")
    return r.stdout


def profile(vprof, proj, minidb_flags=(), iterations=4, k=3, depth=1):
    """Creates the project in `proj` (an empty folder), runs init and loop, and returns
    (final analysed iteration, its report as parsed JSON)."""
    proj = pathlib.Path(proj)
    flags = " ".join(minidb_flags)
    (proj / "vprof.toml").write_text(
        'compile_commands = "out/compile_commands.json"\n'
        f'build = \'make -s -B -C {HERE} OUT={proj}/out CXX="$CXX" all\'\n'
        f'workload = "out/minidb --txns 3000 {flags}"\n'
        f"depth = {depth}\nk = {k}\niterations = {iterations}\n")
    _run(["make", "-s", "-C", HERE, f"OUT={proj}/out", "compdb"])
    _run([vprof, "-q", "init"], cwd=proj)
    _run([vprof, "-q", "loop"], cwd=proj)
    reports = sorted((proj / ".vprof" / "reports").glob("iter-*.json"),
                     key=lambda p: int(p.stem.split("-")[1]))
    if not reports:
        raise StepFailed(f"{proj}: vprof loop wrote no report")
    return int(reports[-1].stem.split("-")[1]), json.loads(reports[-1].read_text())


def workspace_db(proj):
    return pathlib.Path(proj) / ".vprof" / "vprof.db"


def build_pair(build_dir, proj, iteration, plain, instr):
    """Builds minidb twice from the same sources and flags: plainly into `plain`, and
    through vprof-c++ with plan `iteration` of the project in `proj` into `instr`.
    Returns the two binaries."""
    _run(["make", "-s", "-B", "-C", HERE, f"OUT={plain}", "all"])
    env = dict(os.environ, VPROF_WORKSPACE=str(workspace_db(proj)),
               VPROF_ITERATION=str(iteration))
    _run(["make", "-s", "-B", "-C", HERE, f"OUT={instr}",
          f"CXX={pathlib.Path(build_dir) / 'instrumenter' / 'vprof-c++'}", "all"], env=env)
    return pathlib.Path(plain) / "minidb", pathlib.Path(instr) / "minidb"


def final_plan_builds(vprof, build_dir, tmp, iterations):
    """vprof init + loop on minidb in `tmp`/project, then minidb built plainly and with the
    final plan (`tmp`/plain, `tmp`/instr). Returns (final iteration, workspace DB, plain
    binary, instrumented binary); raises StepFailed."""
    proj = pathlib.Path(tmp) / "project"
    proj.mkdir()
    it, _ = profile(vprof, proj, iterations=iterations)
    plain_bin, instr_bin = build_pair(build_dir, proj, it, pathlib.Path(tmp) / "plain",
                                      pathlib.Path(tmp) / "instr")
    return it, workspace_db(proj), plain_bin, instr_bin


def count_records(trace_dir, sites=None):
    """Records per kind in a trace directory (docs/trace-format.md: the data region's
    committed records, then the window's up to its first empty slot; 16-byte records, kind
    in the top byte of the first word); ENTER records also per site into `sites` (a
    Counter) if given."""
    header = struct.Struct("<88xQ24xQQQQ")  # window_records, window/data offsets, committed, base
    counts = collections.Counter()
    for f in pathlib.Path(trace_dir).glob("*.vpt"):
        data = f.read_bytes()
        win, win_off, data_off, committed, base = header.unpack_from(data, 0)
        spans = [(data_off, committed, False)]
        if base == committed:
            spans.append((win_off, win, True))
        for start, n, window in spans:
            for off in range(start, start + 16 * n, 16):
                head, arg = struct.unpack_from("<QQ", data, off)
                kind = head >> 56
                if kind == 0 and window:
                    break
                counts[kind] += 1
                if kind == 1 and sites is not None:
                    sites[arg & 0xFFFFFFFF] += 1
    return counts
