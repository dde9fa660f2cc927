"""End-to-end tests of the instrumenter commands and the compiler wrapper on a small
make project: scan, plan, export (tree and diff), `make CC=vprof-cc`, pass-through of
preprocess-only runs, dependency files, the fall-back when instrumentation fails, and
that no command changes a byte of the user's sources."""
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

MAIN_C = r'''#include <stdio.h>
#include "util.h"
int main(void) {
  int s = 0;
  int (*fp)(int) = twice; /* indirect call: an edge to twice; other.c stays outside the plan */
  for (int i = 0; i < 5; i++)
    s += twice(i);
  printf("s=%d nested=%d fp=%d\n", s, nested(3), fp(2));
  return 0;
}
'''
UTIL_H = '''int twice(int x);
int nested(int x);
int other(int x);
'''
UTIL_C = r'''#include "util.h"
static int add(int a, int b) { return a + b; }
int twice(int x) { return add(x, x); }
'''
NESTED_C = r'''#include "util.h"
int nested(int x) { return twice(x) + x; }
'''
# The same file after an edit that uses GNU C nested functions: gcc compiles them, Clang
# cannot parse them, so vprof-cc must fall back to compiling the original.
NESTED_GNU_C = r'''#include "util.h"
int nested(int x) {
  int inner(int y) { return y + x; }
  return inner(twice(x));
}
'''
OTHER_C = r'''#include "util.h"
int other(int x) { return x * 100; }
'''
MAKEFILE = '''OBJS = main.o util.o nested.o other.o
prog: $(OBJS)
\t$(CC) $(OBJS) -o prog
%.o: %.c
\t$(CC) -std=gnu11 -O1 -MMD -MP -c $< -o $@
-include $(OBJS:.o=.d)
'''


def tree_hash(d: pathlib.Path) -> dict:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.fixture
def project(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    for name, text in {"main.c": MAIN_C, "util.h": UTIL_H, "util.c": UTIL_C,
                       "nested.c": NESTED_C, "other.c": OTHER_C, "Makefile": MAKEFILE}.items():
        (src / name).write_text(text)
    db = [{"directory": str(src), "file": f,
           "arguments": ["gcc", "-std=gnu11", "-O1", "-c", f, "-o", f[:-2] + ".o"]}
          for f in ("main.c", "util.c", "nested.c", "other.c")]
    (tmp_path / "compile_commands.json").write_text(json.dumps(db))
    return src


def tools(build_dir):
    inst = build_dir / "instrumenter" / "vprof-instrument"
    cc = build_dir / "instrumenter" / "vprof-cc"
    if not inst.exists() or not cc.exists():
        pytest.skip("instrumenter tools not built")
    return inst, cc


def run(cmd, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{cmd}\nstdout:{r.stdout}\nstderr:{r.stderr}"
    return r


def test_commands_and_wrapper_leave_sources_byte_identical(project, build_dir, tmp_path):
    inst, cc = tools(build_dir)
    before = tree_hash(project)
    ws = project / ".vprof" / "vprof.db"
    w = ["-w", ws]

    scan = run([inst, *w, "scan", "-p", tmp_path])
    assert "[4/4]" in scan.stderr and "0 failed" in scan.stderr
    run([inst, *w, "plan", "-r", "main", "-d", "2"])
    rewritten = run([inst, *w, "-q", "rewrite", "main.c", "-p", tmp_path], cwd=project)
    assert "VPROF_PROBE_SCOPE" in rewritten.stdout

    out = tmp_path / "exported"
    run([inst, *w, "export", "-p", tmp_path, "-o", out])
    assert sorted(p.name for p in out.rglob("*.c")) == ["main.c", "nested.c", "util.c"]
    assert (out / "main.c").read_text() == rewritten.stdout
    diff = run([inst, *w, "export", "-p", tmp_path, "--diff"]).stdout
    assert "--- a/main.c" in diff and "+#include <vprof/probe.h>" in diff
    assert "-  return add(x, x);" not in diff and "+int twice(int x) { VPROF_PROBE_SCOPE(" in diff

    no_ws = lambda h: {k: v for k, v in h.items() if not k.startswith(".vprof")}
    assert no_ws(tree_hash(project)) == before
    (project / "nested.c").write_text(NESTED_GNU_C)
    before = tree_hash(project)

    # The wrapper, as CC= for make, against the real runtime.
    lib = sorted(build_dir.glob("runtime/**/libvprof_rt.so"))
    if not lib:
        pytest.skip("libvprof_rt.so not built")
    plain = tmp_path / "plain"
    shutil.copytree(project, plain, ignore=shutil.ignore_patterns(".vprof"))
    run(["make", "-s", "CC=gcc"], cwd=plain)
    expected = run([plain / "prog"]).stdout

    env = dict(os.environ, VPROF_REAL_CC="gcc", VPROF_TRACE_DIR=str(tmp_path / "trace"))
    env.pop("VPROF_WORKSPACE", None)
    mk = run(["make", "-s", "-j4", f"CC={cc}"], cwd=project, env=env)  # parallel wrappers
    # nested.c is planned but Clang cannot parse GNU nested functions: one warning, and
    # the original still compiles.
    assert "vprof-cc: warning: nested.c: not instrumented" in mk.stderr
    got = run([project / "prog"], env=env, cwd=tmp_path)
    assert got.stdout == expected
    traces = list((tmp_path / "trace").glob("*.vpt"))
    assert traces, "the instrumented program wrote no trace"
    # The instrumented units registered the plan they were built for (nested.c fell back).
    units, = (tmp_path / "trace").glob("*.units")
    lines = [line.split("\t") for line in units.read_text().splitlines()]
    assert sorted(pathlib.Path(u[3]).name for u in lines) == ["main.c", "util.c"]
    assert all(len(u) == 4 and re.fullmatch(r"[0-9a-f]{16}", u[1]) for u in lines), lines
    # Dependency files name the original source, not the temporary copy.
    dep = (project / "main.d").read_text()
    assert "main.c" in dep and "vprof-" not in dep
    # Sites were recorded for the TUs the wrapper instrumented.
    import sqlite3
    con = sqlite3.connect(ws)
    files = {pathlib.Path(f).name for (f,) in con.execute("SELECT DISTINCT file FROM sites")}
    assert files == {"main.c", "util.c", "nested.c"}  # nested.c: from `export` above
    (count, top), = con.execute("SELECT count(*), max(id) FROM sites")
    assert count == top, "site ids must stay dense under parallel builds"
    con.close()

    # Preprocess-only runs pass through untouched.
    pre = run([cc, "-E", "main.c"], cwd=project, env=env).stdout
    assert pre == run(["gcc", "-E", "main.c"], cwd=project).stdout

    # Build artefacts aside, not one byte of the sources changed.
    after = {k: v for k, v in tree_hash(project).items()
             if not k.startswith(".vprof") and not k.endswith((".o", ".d")) and k != "prog"}
    assert after == no_ws(before)


def test_wrapper_without_workspace_is_transparent(tmp_path, build_dir):
    _, cc = tools(build_dir)
    (tmp_path / "a.c").write_text('#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n')
    env = dict(os.environ, VPROF_REAL_CC="gcc")
    env.pop("VPROF_WORKSPACE", None)
    r = run([cc, "a.c", "-o", "a"], cwd=tmp_path, env=env)
    assert r.stderr == ""
    assert run([tmp_path / "a"]).stdout == "hi\n"
    # A workspace named but missing: one warning, still builds.
    env["VPROF_WORKSPACE"] = str(tmp_path / "nowhere")
    r = run([cc, "a.c", "-o", "a"], cwd=tmp_path, env=env)
    assert "holds no workspace" in r.stderr


def test_bad_inputs_give_clear_errors(tmp_path, build_dir):
    inst, _ = tools(build_dir)
    r = subprocess.run([inst, "-w", tmp_path / "v.db", "scan", "-p", tmp_path / "missing"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "no such compile database" in r.stderr
    (tmp_path / "compile_commands.json").write_text("{not json")
    r = subprocess.run([inst, "-w", tmp_path / "v.db", "scan", "-p", tmp_path],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "compile_commands.json" in r.stderr
    r = subprocess.run([inst, "-w", tmp_path / "v.db", "plan", "-r", "nosuch"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "nosuch" in r.stderr


def test_parallel_rewrites_agree_on_site_ids(project, build_dir, tmp_path):
    inst, _ = tools(build_dir)
    w = ["-w", str(tmp_path / "v.db")]
    run([inst, *w, "-q", "scan", "-p", tmp_path])
    run([inst, *w, "plan", "-r", "main", "-d", "2"])
    procs = [subprocess.Popen([str(inst), *w, "-q", "rewrite", f, "-p", str(tmp_path)], cwd=project,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for f in ["main.c", "util.c", "nested.c"] * 3]
    outs = [p.communicate() for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    for k in range(3):  # each file came out the same three times
        assert outs[k][0] == outs[k + 3][0] == outs[k + 6][0]
        assert "VPROF_PROBE_SCOPE" in outs[k][0]
    import sqlite3
    con = sqlite3.connect(tmp_path / "v.db")
    (count, top, distinct), = con.execute("SELECT count(*), max(id), count(DISTINCT id) FROM sites")
    assert count == top == distinct


STRICT_C = r'''#include <stdio.h>
static int add(int a, int b) { return a + b; }
int twice(int x);
int twice(int x) { return add(x, x); }
int main(void) {
  int i, s = 0;
  for (i = 0; i < 3; i++)
    s += twice(i);
  printf("%d\n", s);
  return 0;
}
'''
STRICT_CXX = r'''#include <cstdio>
namespace n {
int twice(int x);
int twice(int x) { return x + x; }
} // namespace n
int main() {
  int s = 0;
  for (int i = 0; i < 3; i++)
    s += n::twice(i);
  std::printf("%d\n", s);
  return 0;
}
'''


@pytest.mark.parametrize("name,flags", [
    ("s.c", ["-std=c89", "-pedantic", "-Wall", "-Wextra", "-Wmissing-prototypes",
             "-Wstrict-prototypes", "-Werror"]),
    ("s.cpp", ["-std=c++11", "-pedantic", "-Wall", "-Wextra", "-Werror"]),
])
def test_instrumented_units_compile_cleanly_under_the_targets_standard(
        tmp_path, build_dir, name, flags):
    """The probes and the unit's registration add no warning at the target's own standard
    (C89, C++11), and the registration lands in the trace."""
    inst, cc = tools(build_dir)
    cxx = cc.parent / "vprof-c++"
    compiler, real = (cxx, "g++") if name.endswith(".cpp") else (cc, "gcc")
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / name).write_text(STRICT_CXX if name.endswith(".cpp") else STRICT_C)
    (tmp_path / "compile_commands.json").write_text(json.dumps(
        [{"directory": str(proj), "file": name, "arguments": [real, *flags, "-c", name]}]))
    ws = proj / ".vprof" / "vprof.db"
    run([inst, "-w", ws, "-q", "scan", "-p", tmp_path])
    run([inst, "-w", ws, "plan", "-r", "main", "-d", "2"])
    env = dict(os.environ, VPROF_REAL_CC="gcc", VPROF_REAL_CXX="g++",
               VPROF_TRACE_DIR=str(tmp_path / "trace"), VPROF_VERBOSE="1")
    env.pop("VPROF_WORKSPACE", None)
    r = run([compiler, *flags, name, "-o", "prog"], cwd=proj, env=env)
    assert "warning" not in r.stderr and "probes ->" in r.stderr, r.stderr
    assert run([proj / "prog"], env=dict(env, VPROF_VERBOSE="0")).stdout == "6\n"
    units, = (tmp_path / "trace").glob("*.units")
    assert units.read_text().rstrip("\n").split("\t")[3] == str(proj / name)
