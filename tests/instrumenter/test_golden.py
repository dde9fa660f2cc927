"""Golden tests of the rewriter: one small input per behaviour in cases/, its expected
instrumented output beside it (<case>.expected). Every instrumented case must also
compile with gcc and clang-19 at -Wall -Werror, run, and print what the original prints;
a stub runtime checks that the probes fire and that every ENTER has its EXIT.

Regenerate the expected outputs (then review them with git diff):
    VPROF_REGEN=1 VPROF_BUILD_DIR=build-instrumenter /usr/bin/python3 -m pytest tests/instrumenter -k golden

First line of a case may hold directives:
    // vprof-test: roots=main depth=9 std=c++17 flags=-O2 unchanged unbalanced
roots: comma-separated plan roots, or @annotated (default main); depth (default 9);
std: language standard; flags: extra compile flags (comma-separated); unchanged: the
output must equal the input (negative case); unbalanced: the program legitimately
leaves probes open (longjmp, exit).
"""
import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

HERE = pathlib.Path(__file__).resolve().parent
CASES = HERE / "cases"
ALL = sorted(p for p in CASES.iterdir() if p.suffix in (".c", ".cpp"))


def directives(path: pathlib.Path) -> dict:
    first = path.read_text().splitlines()[0]
    m = re.search(r"vprof-test:(.*?)(\*/|$)", first)
    d = {"roots": "main", "depth": "9", "std": "c11" if path.suffix == ".c" else "c++17",
         "flags": "", "unchanged": False, "unbalanced": False}
    if m:
        for tok in m.group(1).split():
            if "=" in tok:
                k, v = tok.split("=", 1)
                d[k] = v
            else:
                d[tok] = True
    return d


def tool(build_dir: pathlib.Path) -> pathlib.Path:
    exe = build_dir / "instrumenter" / "vprof-instrument"
    if not exe.exists():
        pytest.skip(f"{exe} not built")
    return exe


def runtime_lib(build_dir: pathlib.Path):
    libs = sorted(build_dir.glob("runtime/**/libvprof_rt.so"))
    return libs[0] if libs else None


def instrument(exe, case: pathlib.Path, d: dict, tmp: pathlib.Path) -> str:
    """scan + plan + rewrite one case into a fresh workspace; returns the output text."""
    lang_flags = [f"-std={d['std']}"] + [f for f in d["flags"].split(",") if f]
    db = [{"directory": str(CASES), "file": case.name,
           "arguments": ["cc", *lang_flags, "-c", case.name, "-o", str(tmp / "x.o")]}]
    (tmp / "compile_commands.json").write_text(json.dumps(db))
    ws = ["-w", str(tmp / "vprof.db"), "-q"]
    subprocess.run([exe, *ws, "scan", "-p", tmp], check=True, capture_output=True)
    plan = [exe, *ws, "plan", "-d", d["depth"]]
    for r in d["roots"].split(","):
        if r != "@annotated":
            plan += ["-r", r]
    subprocess.run(plan, check=True, capture_output=True, text=True)
    out = tmp / ("out" + case.suffix)
    subprocess.run([exe, *ws, "rewrite", case.name, "-p", tmp, "-o", out], check=True,
                   capture_output=True, cwd=CASES)
    return out.read_text()


def compile_and_run(compiler: str, src: pathlib.Path, d: dict, tmp: pathlib.Path, name: str,
                    runtime: list, root: pathlib.Path):
    flags = [f"-std={d['std']}"] + [f for f in d["flags"].split(",") if f]
    exe = tmp / name
    cmd = [compiler, "-Wall", "-Wextra", "-Werror", *flags, "-DVPROF_ENABLE",
           "-iquote", str(CASES), "-I", str(root / "runtime/include"),
           "-I", str(root / "annotations/include"), str(src), *runtime, "-o", str(exe)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, f"{' '.join(cmd)}\n{r.stderr}"
    env = dict(os.environ, VPROF_TRACE_DIR=str(tmp / "trace"))
    return subprocess.run([exe], capture_output=True, text=True, timeout=30, cwd=tmp, env=env)


@pytest.mark.parametrize("case", ALL, ids=[p.name for p in ALL])
def test_golden(case, build_dir, root, tmp_path):
    exe = tool(build_dir)
    d = directives(case)
    got = instrument(exe, case, d, tmp_path)
    original = case.read_text()
    expected = case.with_name(case.name + ".expected")
    if os.environ.get("VPROF_REGEN", "0") not in ("", "0"):
        expected.write_text(got if got != original else original)
    assert expected.exists(), f"{expected} missing: regenerate with VPROF_REGEN=1"
    assert got == expected.read_text(), "output differs from the golden file"
    if d["unchanged"]:
        assert got == original, "negative case must come out unchanged"
        return
    assert got != original, "case expected to be instrumented"
    assert got.count("VPROF_PROBE_SCOPE") > 0

    inst = tmp_path / ("inst" + case.suffix)
    inst.write_text(got)
    stub_c = tmp_path / "stub.o"
    cxx = case.suffix == ".cpp"
    for cc, cxxc in (("gcc", "g++"), ("clang-19", "clang++-19")):
        compiler = cxxc if cxx else cc
        subprocess.run([cc, "-c", "-Wall", "-Werror", "-I", root / "runtime/include",
                        "-I", root / "annotations/include", HERE / "stub_runtime.c", "-o", stub_c],
                       check=True)
        base = compile_and_run(compiler, case, d, tmp_path, "orig", [str(stub_c)], root)
        new = compile_and_run(compiler, inst, d, tmp_path, "inst", [str(stub_c)], root)
        assert new.returncode == base.returncode, f"{compiler}: exit {new.returncode} != {base.returncode}"
        assert new.stdout == base.stdout, f"{compiler}: output differs"
        assert "vprof-stub: enter=0 " in base.stderr  # the original has no probes
        m = re.search(r"vprof-stub: enter=(\d+) exit=(\d+)", new.stderr)
        assert m, new.stderr
        enters, exits = int(m.group(1)), int(m.group(2))
        assert enters > 0, "no probe fired"
        if not d["unbalanced"]:
            assert enters == exits, f"{compiler}: {enters} ENTER vs {exits} EXIT"
        lib = runtime_lib(build_dir)
        if lib is not None:  # the real runtime, tracing off: same behaviour
            rt = [f"-L{lib.parent}", f"-Wl,-rpath,{lib.parent}", "-lvprof_rt"]
            real = compile_and_run(compiler, inst, d, tmp_path, "inst_rt", rt, root)
            assert real.returncode == base.returncode and real.stdout == base.stdout
