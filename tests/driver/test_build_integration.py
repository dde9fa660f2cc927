"""The loop on the user's own build, as a new user would run it (the pitfalls seen on
PostgreSQL and LevelDB): a make project built plainly first, then `vprof init` + `vprof
loop` with `build = "make"` unchanged (no -B, no touch script):
- iteration 0 recompiles exactly the planned files (their objects were built without vprof),
  later iterations exactly the files whose plan changed (build stamps);
- a planned file that could not be instrumented stops the loop naming the file and the
  reason (allow_fallback = true turns that into a warning);
- a build command that does not compile through $CC is refused, not profiled;
- re-running `vprof init` starts a new history instead of resuming the old one.
"""
import json
import os
import pathlib
import re
import sqlite3
import subprocess

import pytest

MAIN_C = r'''#include <stdio.h>
#include <vprof/vprof.h>
#include "work.h"
static void serve(int i) {
  uint64_t iv;
  VPROF_INTERVAL_BEGIN(iv, "req");
  stage_a(i);
  stage_b(i);
  VPROF_INTERVAL_END(iv);
}
int main(void) {
  for (int i = 0; i < 200; i++)
    serve(i);
  printf("done\n");
  return 0;
}
'''
WORK_H = '''void stage_a(int i);
void stage_b(int i);
void leaf_a(int i);
void leaf_b(int i);
'''
# spin for a drawn number of microseconds: stage_a varies, stage_b is constant
SPIN = r'''#include <time.h>
static void spin_us(long us) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do
    clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}
'''
A_C = '#include "work.h"\n' + SPIN + r'''void leaf_a(int i) { spin_us(20 + (i * 37) % 200); }
void stage_a(int i) { leaf_a(i); }
'''
B_C = '#include "work.h"\n' + SPIN + r'''void leaf_b(int i) { spin_us(30 + i % 2); }
void stage_b(int i) { leaf_b(i); }
'''
# a planned function whose whole definition comes from a macro: no probe can be inserted
B_MACRO_C = '#include "work.h"\n' + SPIN + r'''#define DEFINE_STAGE(name, leaf) void name(int i) { leaf(i); }
void leaf_b(int i) { spin_us(30 + i % 2); }
DEFINE_STAGE(stage_b, leaf_b)
'''
# stage_b's four calls of leaf_b come from one macro that adds code around them: refused
# (docs/instrumenter.md), and named in the loop's own output; stage_a's call written
# through a function-like macro is timed at the invocation
B_REFUSED_C = '#include "work.h"\n' + SPIN + r'''#define LEAF_4(i) (leaf_b(i), leaf_b(i), leaf_b(i), leaf_b(i))
void leaf_b(int i) { spin_us(8 + i % 2); }
void stage_b(int i) { LEAF_4(i); }
'''
A_MACRO_C = '#include "work.h"\n' + SPIN + r'''#define LEAF_A(i) leaf_a(i)
void leaf_a(int i) { spin_us(20 + (i * 37) % 200); }
void stage_a(int i) { LEAF_A(i); }
'''
MAKEFILE = '''CC ?= cc
CFLAGS = -O1 -g -I$(VPROF_INCLUDE)
OBJS = main.o a.o b.o
app: $(OBJS)
\t$(CC) $(CFLAGS) $(OBJS) -o app
%.o: %.c work.h
\t$(CC) $(CFLAGS) -c $< -o $@
'''


@pytest.fixture(scope="module")
def vprof(build_dir):
    subprocess.run(["cmake", "--build", str(build_dir), "--target", "vprof", "vprof-cc",
                    "vprof_rt"], check=True, capture_output=True, text=True)
    return build_dir / "driver" / "vprof"


def make_project(root: pathlib.Path, tmp: pathlib.Path, b_source: str = B_C,
                 build: str = 'make CC="$CC"', extra: str = "", a_source: str = A_C
                 ) -> pathlib.Path:
    p = tmp / "proj"
    p.mkdir()
    for name, text in (("main.c", MAIN_C), ("work.h", WORK_H), ("a.c", a_source), ("b.c", b_source),
                       ("Makefile", MAKEFILE)):
        (p / name).write_text(text)
    include = root / "annotations" / "include"
    entries = [{"directory": str(p), "file": str(p / f),
                "arguments": ["cc", "-O1", "-g", f"-I{include}", "-c", f, "-o", f[:-2] + ".o"]}
               for f in ("main.c", "a.c", "b.c")]
    (p / "compile_commands.json").write_text(json.dumps(entries))
    (p / "vprof.toml").write_text(
        f'compile_commands = "compile_commands.json"\nbuild = \'{build}\'\n'
        'workload = "./app"\ndepth = 0\nk = 2\niterations = 3\nbootstrap = 0\n' + extra)
    # the user's own plain build first: objects exist, compiled without vprof
    subprocess.run(["make", f"VPROF_INCLUDE={include}"], cwd=p, check=True,
                   capture_output=True)
    return p


def vp(vprof, project, *args, check=True, env=None):
    r = subprocess.run([str(vprof), "-C", str(project), *args], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "VPROF_INCLUDE": "", **(env or {})})
    if check:
        assert r.returncode == 0, r.stderr[-3000:]
    return r


def compiled(project: pathlib.Path, iteration: int) -> set:
    """The sources make compiled in an iteration's build (its log echoes the commands)."""
    log = (project / ".vprof" / "logs" / f"iter-{iteration}-build.log").read_text()
    return set(re.findall(r"-c (\w+\.c) -o", log))


def planned_files(project: pathlib.Path, iteration: int) -> dict:
    db = sqlite3.connect(project / ".vprof" / "vprof.db")
    out = {}
    for file, fn in db.execute("SELECT f.file, f.id FROM plans p JOIN functions f ON "
                               "f.id = p.function WHERE p.iteration = ?", (iteration,)):
        out.setdefault(pathlib.Path(file).name, set()).add(fn)
    return out


def test_make_rebuilds_exactly_what_the_plan_changed(vprof, root, tmp_path):
    include = root / "annotations" / "include"
    p = make_project(root, tmp_path, build=f'make CC="$CC" VPROF_INCLUDE={include}')
    vp(vprof, p, "init")
    r = vp(vprof, p, "loop", "--prune", "0")
    runs = sqlite3.connect(p / ".vprof" / "vprof.db").execute(
        "SELECT COUNT(DISTINCT iteration) FROM analysis_runs").fetchone()[0]
    assert runs >= 2, r.stderr
    # iteration 0: the plain objects of the planned files (main.c: the annotated root) are
    # rebuilt through the wrapper, the others stay
    assert compiled(p, 0) == {"main.c"}, compiled(p, 0)
    for it in range(1, runs):
        before, now = planned_files(p, it - 1), planned_files(p, it)
        changed = {f for f in set(before) | set(now) if before.get(f) != now.get(f)}
        assert compiled(p, it) == changed, (it, compiled(p, it), changed)
    # every object has a record of the plan it was compiled for
    stamps = list((p / ".vprof" / "stamps").glob("*.stamp"))
    assert {s.name.split(".")[0] for s in stamps} >= {"main"}


def test_a_planned_file_that_cannot_be_instrumented_stops_the_loop(vprof, root, tmp_path):
    include = root / "annotations" / "include"
    p = make_project(root, tmp_path, b_source=B_MACRO_C,
                     build=f'make CC="$CC" VPROF_INCLUDE={include}')
    vp(vprof, p, "init", "--depth", "1")  # plans stage_a and stage_b (b.c: a macro)
    r = vp(vprof, p, "loop", check=False)
    assert r.returncode == 1, r.stderr
    assert re.search(r"/b\.c: built from its original source, without probes: no probe could "
                     r"be inserted", r.stderr), r.stderr
    assert "allow_fallback" in r.stderr
    assert not (p / ".vprof" / "traces" / "iter-0").exists(), "nothing was profiled"
    # allowed: a warning naming the file, and the loop goes on
    r = vp(vprof, p, "loop", "--allow-fallback", "--iterations", "1", "--prune", "0")
    assert re.search(r"warning: .*not instrumented as planned", r.stderr), r.stderr
    assert "/b.c" in r.stderr


# b.c built twice, as PostgreSQL builds src/common (a frontend and a backend object): the
# second compile's flags leave the planned stage_b out
B_TWICE_C = '#include "work.h"\n' + SPIN + r'''void leaf_b(int i) { spin_us(30 + i % 2); }
#ifndef SECOND
void stage_b(int i) { leaf_b(i); }
#else
void stage_b_second(int i) { leaf_b(i); }
#endif
'''


def test_a_file_built_twice_is_probed_where_its_planned_functions_are(vprof, root, tmp_path):
    """A compile of a planned file whose flags leave every planned function out is no
    fallback: the file's other object holds them (the loop once stopped on PostgreSQL's
    src/common/file_utils.c). A planned file no compile defines a planned function of
    stays an error."""
    include = root / "annotations" / "include"
    p = make_project(root, tmp_path, b_source=B_TWICE_C,
                     build=f'make CC="$CC" VPROF_INCLUDE={include}')
    make = (p / "Makefile").read_text().replace("app: $(OBJS)\n", "app: $(OBJS) b_second.o\n")
    make += "b_second.o: b.c work.h\n\t$(CC) $(CFLAGS) -DSECOND -c b.c -o b_second.o\n"
    (p / "Makefile").write_text(make)
    entries = json.loads((p / "compile_commands.json").read_text())
    entries.append({"directory": str(p), "file": str(p / "b.c"),
                    "arguments": ["cc", "-O1", "-g", f"-I{include}", "-DSECOND", "-c", "b.c",
                                  "-o", "b_second.o"]})
    (p / "compile_commands.json").write_text(json.dumps(entries))
    subprocess.run(["make", f"VPROF_INCLUDE={include}"], cwd=p, check=True, capture_output=True)
    vp(vprof, p, "init", "--depth", "1")  # plans serve, stage_a, stage_b
    r = vp(vprof, p, "loop", "--iterations", "1", "--prune", "0")
    assert "not instrumented as planned" not in r.stderr, r.stderr
    records = {re.search(r"^object\t.*/(\w+)\.o$", t, re.M).group(1): t
               for t in (s.read_text() for s in (p / ".vprof" / "stamps").glob("b.c.*.stamp"))}
    assert "plan_absent\t1" in records["b_second"], records
    assert "plan_absent" not in records["b"] and "fallback" not in records["b"], records
    assert {"b.c"} <= compiled(p, 0), compiled(p, 0)
    # the build leaves stage_b out of every compile of b.c (c.c defines it instead): no
    # probe of it anywhere — an error
    (p / "c.c").write_text('#include "work.h"\nvoid stage_b(int i) { leaf_b(i); }\n')
    (p / "Makefile").write_text(
        make.replace("OBJS = main.o a.o b.o", "OBJS = main.o a.o b.o c.o")
        .replace("$(CFLAGS) -c $< -o $@", "$(CFLAGS) $(if $(filter b.c,$<),-DSECOND) -c $< -o $@"))
    vp(vprof, p, "init", "--depth", "1")
    r = vp(vprof, p, "loop", "--iterations", "1", "--prune", "0", check=False)
    assert r.returncode == 1, r.stderr
    assert re.search(r"/b\.c: .*none of its planned functions is defined under the flags",
                     r.stderr), r.stderr


def test_the_loop_counts_and_names_the_refused_call_sites(vprof, root, tmp_path):
    include = root / "annotations" / "include"
    p = make_project(root, tmp_path, b_source=B_REFUSED_C, a_source=A_MACRO_C,
                     build=f'make CC="$CC" VPROF_INCLUDE={include}')
    vp(vprof, p, "init", "--depth", "1")  # plans stage_a and stage_b
    r = vp(vprof, p, "loop", "--iterations", "1", "--prune", "0")
    line = next((l for l in r.stderr.splitlines() if "could not be probed" in l), None)
    assert line is not None, r.stderr
    # one line: the count, the first three by name with file:line and the reason, the rest
    # counted; stage_a's macro call is timed, so a.c is not in it
    assert re.match(r"vprof: iteration 0: 4 call site\(s\) of planned functions could not be "
                    r"probed: leaf_b at b\.c:(\d+), leaf_b at b\.c:\1, leaf_b at b\.c:\1 \(call: "
                    r"macro expansion: the call is only part of what the macro invocation "
                    r"expands to\)", line), line
    assert "a.c" not in line
    # the rest named (with their count), so that the line names every refusal
    assert line.endswith("; and 1 more: leaf_b; `vprof instrument b.c` lists all"), line
    # `vprof instrument` lists all four on stderr
    ins = vp(vprof, p, "instrument", str(p / "b.c"))
    assert ins.stderr.count("vprof: not instrumented: call: macro expansion") == 4, ins.stderr
    ins = vp(vprof, p, "instrument", str(p / "a.c"))
    assert "vprof: not instrumented" not in ins.stderr
    assert re.search(r"__extension__\(\{ VPROF_PROBE_SCOPE\(\d+\); LEAF_A\(i\); \}\)",
                     ins.stdout), ins.stdout


def test_a_build_that_bypasses_the_wrappers_is_refused(vprof, root, tmp_path):
    include = root / "annotations" / "include"
    # `make` with the user's cc: up to date, nothing compiled through vprof
    p = make_project(root, tmp_path, build=f"make CC=cc VPROF_INCLUDE={include}")
    vp(vprof, p, "init")
    r = vp(vprof, p, "loop", check=False)
    assert r.returncode == 1
    assert re.search(r"main\.c: planned, but the build did not compile it for plan 0", r.stderr), \
        r.stderr


def test_init_again_starts_a_new_history(vprof, root, tmp_path):
    include = root / "annotations" / "include"
    p = make_project(root, tmp_path, build=f'make CC="$CC" VPROF_INCLUDE={include}')
    vp(vprof, p, "init")
    vp(vprof, p, "loop", "--iterations", "1", "--prune", "0")
    assert (p / ".vprof" / "reports" / "iter-0.txt").exists()
    r = vp(vprof, p, "init")
    assert "a new history" in r.stderr, r.stderr
    assert not (p / ".vprof" / "reports").exists()
    db = sqlite3.connect(p / ".vprof" / "vprof.db")
    assert db.execute("SELECT COUNT(*) FROM analysis_runs").fetchone()[0] == 0
    r = vp(vprof, p, "loop", "--iterations", "1", "--prune", "0")
    assert "resuming" not in r.stderr
    assert "iteration 0: running the workload" in r.stderr
    # the new identity made the objects of the old history stale: main.c compiled again
    assert compiled(p, 0) == {"main.c"}


def test_a_workload_that_cannot_write_its_trace_is_named(vprof, root, tmp_path):
    include = root / "annotations" / "include"
    # the trace directory is replaced by a file: the program runs untraced (as a server
    # running as another user would on a directory it cannot write)
    p = make_project(root, tmp_path, build=f'make CC="$CC" VPROF_INCLUDE={include}')
    toml = (p / "vprof.toml").read_text().replace(
        'workload = "./app"',
        'workload = "rm -rf $VPROF_TRACE_DIR && touch $VPROF_TRACE_DIR && ./app"')
    (p / "vprof.toml").write_text(toml)
    vp(vprof, p, "init")
    r = vp(vprof, p, "loop", check=False)
    assert r.returncode == 1
    assert re.search(r"process \d+ of user \d+ \(\w+\) could not write its trace to "
                     r".*iter-0 \([^)]+\) and ran untraced", r.stderr), r.stderr
    assert "chmod 1777" in r.stderr and "VPROF_TRACE_DIR" in r.stderr


def test_a_note_about_another_trace_directory_is_not_this_runs(vprof, root, tmp_path):
    # Another program (a concurrent loop, a test) that could not write *its* trace directory
    # leaves a note in the same $TMPDIR during this run: not this run's, and left in place.
    include = root / "annotations" / "include"
    notes = tmp_path / "notes"
    notes.mkdir()
    p = make_project(root, tmp_path, build=f'make CC="$CC" VPROF_INCLUDE={include}')
    toml = (p / "vprof.toml").read_text().replace(
        'workload = "./app"', 'workload = "VPROF_TRACE_DIR=/proc/vprof-elsewhere ./app; ./app"')
    (p / "vprof.toml").write_text(toml)
    vp(vprof, p, "init")
    r = vp(vprof, p, "loop", "--iterations", "1", env={"TMPDIR": str(notes)})
    assert "could not write its trace" not in r.stderr
    left = [n.read_text().split(" ", 3)[3].strip()
            for n in notes.glob("vprof-unusable-trace-dir.*")]
    assert left and set(left) == {"/proc/vprof-elsewhere"}  # one per workload run


def test_drops_name_the_stream_cap_and_never_decide_the_stop(vprof, root, tmp_path):
    include = root / "annotations" / "include"
    p = make_project(root, tmp_path, build=f'make CC="$CC" VPROF_INCLUDE={include}')
    # a 1 MiB stream cap and a window of one page: the app's records overflow it
    toml = (p / "vprof.toml").read_text().replace(
        'workload = "./app"', 'workload = "VPROF_WINDOW_KB=4 ./app"\nstream_cap_mb = 1').replace(
        "iterations = 3", "iterations = 4")
    (p / "vprof.toml").write_text(toml)
    (p / "main.c").write_text(MAIN_C.replace("i < 200", "i < 12000"))
    subprocess.run(["make", f"VPROF_INCLUDE={include}"], cwd=p, check=True, capture_output=True)
    vp(vprof, p, "init", "--depth", "1")
    r = vp(vprof, p, "loop", "--prune", "0", "-k", "1")
    # the driver's line: which limit, how much, the key to raise
    cap = (r"stream cap: \d+ records dropped in 1 stream \(stream_cap_mb = 1\); raise "
           r"stream_cap_mb in vprof.toml or shorten the workload")
    assert re.search(r"iteration 0: warning: " + cap + "\n", r.stderr), r.stderr[-3000:]
    assert re.search(r"records were dropped by the runtime: thread streams reached the stream "
                     r"cap \(stream_cap_mb in vprof.toml", r.stderr), r.stderr[-3000:]
    # the app's one thread works for its intervals: those after the limit are missing
    assert re.search(r"1 of them worked for intervals, so the intervals after that point are "
                     r"missing", r.stderr), r.stderr[-3000:]
    assert "background threads" not in r.stderr
    assert "never decides" in r.stderr
    assert "top-k unchanged" not in r.stderr, r.stderr[-3000:]
    # the stop names the real limit: the stream cap, never the probe budget
    stop = re.search(r"stopped after iteration \d+: (.*)", r.stderr).group(1)
    assert "stream cap" in stop and "stream_cap_mb = 1" in stop, stop
    assert "probe budget" not in r.stderr, r.stderr[-3000:]
    # vprof run says the same of its run; a workload that sets its own cap is told apart
    env = {"VPROF_WINDOW_KB": "4"}
    r = vp(vprof, p, "run", "--", str(p / "app"), env=env)
    assert re.search(r"vprof: warning: " + cap + "\n", r.stderr), r.stderr
    r = vp(vprof, p, "run", "--stream-cap-mb", "256", "--", "sh", "-c",
           f"VPROF_MAX_THREAD_MB=1 {p / 'app'}", env=env)
    assert re.search(r"stream cap: \d+ records dropped in 1 stream \(stream_cap_mb = 256, from "
                     r"--stream-cap-mb\); .*but the streams stopped at \d+ KiB, below that cap: "
                     r"does the workload set VPROF_MAX_THREAD_MB itself", r.stderr), r.stderr


def test_objects_instrumented_by_another_workspace_are_rebuilt(vprof, root, tmp_path):
    include = root / "annotations" / "include"
    p = make_project(root, tmp_path, build=f'make CC="$CC" VPROF_INCLUDE={include}')
    vp(vprof, p, "init", "--depth", "1")  # a.c and b.c planned: their objects get probes
    vp(vprof, p, "loop", "--iterations", "1", "--prune", "0")
    assert compiled(p, 0) == {"main.c", "a.c", "b.c"}
    # a new workspace (the old one deleted) that plans only main.c: a.o and b.o still hold
    # the old workspace's probes and site ids, so they are rebuilt too
    import shutil
    shutil.rmtree(p / ".vprof")
    vp(vprof, p, "init", "--depth", "0")
    r = vp(vprof, p, "loop", "--iterations", "1", "--prune", "0")
    assert compiled(p, 0) == {"main.c", "a.c", "b.c"}, r.stderr
    report = (p / ".vprof" / "reports" / "iter-0.txt").read_text()
    assert not re.search(r"\bsite \d+\b", report), "a site id unknown to this workspace"
    # the next loop, with nothing new planned, reads the clean objects once and rebuilds none
    r = vp(vprof, p, "init", "--depth", "0")
    r = vp(vprof, p, "loop", "--iterations", "1", "--prune", "0")
    assert compiled(p, 0) == {"main.c"}, r.stderr


# b.c marks a custom wake-up (PostgreSQL's SetLatch does): none of its functions is planned
B_MARKED_C = '#include "work.h"\n#include <vprof/vprof.h>\n' + SPIN + r'''static int event;
void leaf_b(int i) { spin_us(30 + i % 2); }
void stage_b(int i) { leaf_b(i); VPROF_WAKE(&event); }
'''


def test_a_file_with_marks_is_rebuilt_through_the_wrapper(vprof, root, tmp_path):
    """A file holding annotations but no planned function, compiled plainly by the user
    (marks compiled to nothing), is rebuilt with the marks on; an unmarked unplanned file
    (a.c) is not."""
    include = root / "annotations" / "include"
    p = make_project(root, tmp_path, b_source=B_MARKED_C,
                     build=f'make CC="$CC" VPROF_INCLUDE={include}')
    vp(vprof, p, "init")  # depth 0: only serve (main.c) is planned
    db = sqlite3.connect(p / ".vprof" / "vprof.db")
    marked = {pathlib.Path(f).name for (f,) in db.execute("SELECT file FROM marked_files")}
    assert marked == {"main.c", "b.c"}, marked
    vp(vprof, p, "loop", "--prune", "0", "--iterations", "1")
    assert compiled(p, 0) == {"main.c", "b.c"}, compiled(p, 0)
    dump = subprocess.run([str(vprof), "-C", str(p), "dump", str(p / ".vprof" / "traces" /
                                                               "iter-0")],
                          capture_output=True, text=True)
    assert dump.returncode == 0, dump.stderr[-2000:]
    assert "WAKE" in dump.stdout, dump.stdout[-2000:]


def test_a_stale_installed_binary_is_refused(vprof, root, tmp_path):
    """The workload runs an installed copy that `build` refreshes only once (an install
    step missing from `build`): the trace of iteration 1 proves it was written by plan 0's
    binary, and the loop stops naming the file; another workspace's binary likewise."""
    include = root / "annotations" / "include"
    p = make_project(root, tmp_path, build=f'make CC="$CC" VPROF_INCLUDE={include} && '
                                           '(test -e inst || cp app inst)')
    toml = (p / "vprof.toml").read_text().replace('workload = "./app"', 'workload = "./inst"')
    (p / "vprof.toml").write_text(toml)
    vp(vprof, p, "init", "--depth", "1")  # plan 0: serve, stage_a, stage_b
    r = vp(vprof, p, "loop", "--prune", "0", "-k", "1", check=False)
    assert "iteration 0: " in r.stderr and "resuming" not in r.stderr
    assert r.returncode == 1, r.stderr[-3000:]
    m = re.search(r"the trace in \S+iter-(\d+) was written by a binary built for another plan "
                  r"than iteration \1's:\n  process \d+: \S+/([ab])\.c was compiled for "
                  r"iteration 0's plan \(stamp [0-9a-f]{16}\), this one's is [0-9a-f]{16}",
                  r.stderr)
    assert m and m.group(1) != "0", r.stderr[-3000:]
    assert "make `build` install it too" in r.stderr
    # a new workspace: the installed copy still holds the old one's probes
    vp(vprof, p, "init", "--depth", "1")
    r = vp(vprof, p, "loop", "--iterations", "1", "--prune", "0", check=False)
    assert r.returncode == 1
    assert re.search(r"built for another vprof workspace than iteration 0's:\n  process \d+: "
                     r"\S+\.c was compiled by another workspace \([0-9a-f]{16}\)", r.stderr), \
        r.stderr[-3000:]
    # refreshed by the build: analysed
    (p / "inst").unlink()
    vp(vprof, p, "loop", "--iterations", "1", "--prune", "0")
    assert (p / ".vprof" / "reports" / "iter-0.txt").exists()


def test_the_stop_line_names_the_real_reason(vprof, root, tmp_path):
    """Each way a loop stops is named as what it is: the iteration budget, the probe budget,
    and, after a final plan, the reason exploration stopped beside "final plan measured"
    (the stream cap: test_drops_name_the_stream_cap_and_never_decide_the_stop)."""
    include = root / "annotations" / "include"
    p = make_project(root, tmp_path, build=f'make CC="$CC" VPROF_INCLUDE={include}')

    def stop_of(r):
        return re.search(r"stopped after iteration \d+: (.*)", r.stderr).group(1)

    vp(vprof, p, "init")
    r = vp(vprof, p, "loop", "--iterations", "1", "--prune", "0")
    assert stop_of(r) == "iteration budget reached", r.stderr[-3000:]
    vp(vprof, p, "init")  # a new history
    r = vp(vprof, p, "loop", "--budget", "0.0001", "--prune", "0")
    # plan 0 alone costs more than so small a budget: the stop says what it costs and the key
    assert re.match(r"probe budget spent: plan 0 costs \d+ records per interval .* more than "
                    r"the budget of \d+ \(budget = 0\.0001 of the mean latency .*raise `budget`",
                    stop_of(r)), r.stderr[-3000:]
    assert "stream cap" not in stop_of(r)
    vp(vprof, p, "init")
    r = vp(vprof, p, "loop")
    m = re.fullmatch(r"final plan measured \(exploration stopped: ([^)]*)\)(; .*)?", stop_of(r))
    assert m, r.stderr[-3000:]
    assert m.group(1) in ("top-k unchanged", "all top factors are leaves",
                          "iteration budget reached"), m.group(1)
    # the line that wrote the final plan gave the same reason
    assert f": {m.group(1)}; final plan" in r.stderr, r.stderr[-3000:]


def test_the_first_plan_is_the_annotated_functions_alone_by_default(vprof, root, tmp_path):
    """Plan 0 is the one plan no run has priced: without a `depth` key it holds the roots
    alone, and their callees join only after a run has counted their calls
    (docs/planner.md, "The first plan")."""
    include = root / "annotations" / "include"
    p = make_project(root, tmp_path, build=f'make CC="$CC" VPROF_INCLUDE={include}')
    toml = p / "vprof.toml"
    toml.write_text(toml.read_text().replace("depth = 0\n", ""))
    assert "depth" not in toml.read_text()
    r = vp(vprof, p, "init")
    assert "depth 0" in r.stderr, r.stderr
    db = sqlite3.connect(p / ".vprof" / "vprof.db")
    plan0 = db.execute("SELECT f.name, p.reason FROM plans p JOIN functions f "
                       "ON f.id = p.function WHERE p.iteration = 0").fetchall()
    assert plan0 == [("serve", "root")], plan0
    vp(vprof, p, "init", "--depth", "1")  # the key still reaches deeper when asked
    plan0 = {n for (n,) in db.execute("SELECT f.name FROM plans p JOIN functions f "
                                      "ON f.id = p.function WHERE p.iteration = 0")}
    assert plan0 == {"serve", "stage_a", "stage_b"}, plan0


def test_a_unit_that_crashes_the_scan_is_skipped_and_named(vprof, root, tmp_path):
    """One unit never takes `vprof init` down (docs/instrumenter.md, "A unit that crashes"):
    a crash planted in a.c's scan is caught; init names the file and the signal, counts it
    in its last line, lists it in .vprof/skipped-units.txt and exits 0 with a workspace. The
    loop's top place is then the call of stage_a, which no scanned unit defines: expansion
    stops naming a.c, and the final plan is measured as usual."""
    include = root / "annotations" / "include"
    p = make_project(root, tmp_path, build=f'make CC="$CC" VPROF_INCLUDE={include}')
    r = vp(vprof, p, "init", env={"VPROF_TESTING_CRASH_UNIT": "/a.c"})
    a = str(p / "a.c")
    assert f"vprof: scan: {a}: crashed (signal 11, SIGSEGV) in the scan, skipped" in r.stderr
    last = r.stdout.strip().splitlines()[-1]
    listing = p / ".vprof" / "skipped-units.txt"
    assert last.endswith(f"; 1 of 3 translation unit(s) skipped (1 crashed the scan), listed "
                         f"in {listing}: their functions are not in the call graph"), last
    assert listing.read_text() == f"{a}: crashed (signal 11, SIGSEGV) in the scan\n"
    db = sqlite3.connect(p / ".vprof" / "vprof.db")
    assert db.execute("SELECT defined FROM functions WHERE name = 'stage_a'").fetchall() == [(0,)]
    assert db.execute("SELECT defined FROM functions WHERE name = 'stage_b'").fetchall() == [(1,)]
    r = vp(vprof, p, "loop", "--iterations", "3")
    stop = re.search(r"stopped after iteration 0: the top place (.*)", r.stderr)
    assert stop, r.stderr[-3000:]
    assert ("is a call of stage_a, declared in " + str(p / "work.h") + " but defined in no "
            "scanned translation unit; the scan skipped 1 unit(s) that may define it: "
            f"{a} (crashed (signal 11, SIGSEGV) in the scan)") in stop.group(1), stop.group(1)
    # a scan without the crash forgets it
    r = vp(vprof, p, "init")
    assert "skipped" not in r.stdout and not listing.exists()
