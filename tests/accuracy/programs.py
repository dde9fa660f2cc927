"""The accuracy programs and the mini database, as Python objects: what the manifest
says about each program, how to build it (CMake target or the plain Makefile, e.g. through
vprof's compiler wrapper) and how to run it and parse its output lines.

Used by tests/accuracy/test_*.py and meant for the `vprof loop` accuracy tests:

    from programs import load_programs, run_minidb
    for p in load_programs():
        exe = p.build_make(out_dir, env={"CC": "vprof-cc", "CXX": "vprof-c++"})
        res = p.run(exe)               # Result(truth={...}, summary={...}, stdout=...)
        res.truth["share"], p.cause, p.analytic_share

Command line (for humans and scripts):
    programs.py list                       # name, cause, analytic share per program
    programs.py build NAME OUT [CC CXX]    # Makefile build into OUT, prints the binary
    programs.py compdb NAME OUT            # OUT/NAME.compdb/compile_commands.json
"""
from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
import subprocess
import sys
import tomllib
from typing import Mapping, Optional, Sequence

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
ACCURACY_DIR = ROOT / "benchmarks" / "accuracy"
MINIDB_DIR = ROOT / "benchmarks" / "minidb"
MANIFEST = ACCURACY_DIR / "manifest.toml"

_KV = re.compile(r"(\w+)=(\S+)")

# Values of a program's `needs` (manifest.toml documents them): what the trace must hold,
# beyond the runtime's streams, for vprof to reach the cause.
KERNEL_WAKEUPS = "kernel_wakeups"  # the scheduler's wake-ups: sched.vpk in the trace directory
NEEDS = (KERNEL_WAKEUPS,)
SCHED_FILE = "sched.vpk"  # runtime/include/vprof/sched_format.h, VPROF_SCHED_FILE_NAME


def parse_kv_line(stdout: str, prefix: str) -> Optional[dict]:
    """Returns the last line of `stdout` starting with `prefix:` as a dict of its
    key=value fields (numbers converted to float, "nan" to None), or None if absent."""
    found = None
    for line in stdout.splitlines():
        if line.startswith(prefix + ":"):
            found = line
    if found is None:
        return None
    out: dict = {}
    for key, value in _KV.findall(found):
        if value == "nan":
            out[key] = None
            continue
        try:
            out[key] = float(value)
        except ValueError:
            out[key] = value
    return out


@dataclasses.dataclass(frozen=True)
class Result:
    """One run of a program: its parsed `truth:` and `accuracy:` lines and raw output."""

    truth: dict
    summary: dict
    stdout: str


@dataclasses.dataclass(frozen=True)
class Program:
    """One [[program]] entry of benchmarks/accuracy/manifest.toml (keys documented there)."""

    name: str
    language: str
    sources: tuple
    roots: tuple
    cause: tuple  # qualified names; two for kind == "cov"
    kind: str
    via: str
    depth: int
    min_share: float
    intervals: int
    build: str
    run_cmd: str
    analytic_share: Optional[float] = None
    wait: Optional[str] = None
    waker_roots: tuple = ()
    # an open defect of vprof on this program, said in the manifest (`known_issue`): the
    # loop test still requires the right top-1, and reports the share check as an expected
    # failure with this text until it is fixed
    known_issue: Optional[str] = None
    # what the trace must hold beyond the runtime's streams (`needs`, values in NEEDS)
    needs: tuple = ()
    # the function that leads the tail view while `cause` leads the variance (`tail_cause`)
    tail_cause: Optional[str] = None
    # the loop test runs it with the settings a new user gets (`defaults = true`): no roots,
    # depth, k or iterations in vprof.toml
    defaults: bool = False

    @property
    def cmake_target(self) -> str:
        return f"acc_{self.name}"

    def source_paths(self) -> list[pathlib.Path]:
        return [ACCURACY_DIR / s for s in self.sources]

    def cmake_binary(self, build_dir: pathlib.Path) -> pathlib.Path:
        """Where the CMake build (target acc_<name>) puts the executable."""
        return pathlib.Path(build_dir) / "benchmarks" / "accuracy" / self.name

    def build_cmake(self, build_dir: pathlib.Path) -> pathlib.Path:
        """Builds target acc_<name> in an existing CMake tree; returns the executable."""
        subprocess.run(["cmake", "--build", str(build_dir), "--target", self.cmake_target],
                       check=True, capture_output=True, text=True)
        return self.cmake_binary(build_dir)

    def build_make(self, out: pathlib.Path, env: Optional[Mapping[str, str]] = None,
                   make_vars: Optional[Mapping[str, str]] = None) -> pathlib.Path:
        """Builds with benchmarks/accuracy/Makefile into `out` (e.g. with CC=vprof-cc in
        `make_vars`); returns the executable. Raises CalledProcessError on failure."""
        args = ["make", "-C", str(ACCURACY_DIR), f"OUT={out}", "--always-make", self.name]
        args += [f"{k}={v}" for k, v in (make_vars or {}).items()]
        subprocess.run(args, check=True, capture_output=True, text=True,
                       env={**os.environ, **(env or {})})
        return pathlib.Path(out) / self.name

    def compdb(self, out: pathlib.Path, make_vars: Optional[Mapping[str, str]] = None
               ) -> pathlib.Path:
        """Writes out/<name>.compdb/compile_commands.json; returns that directory."""
        args = ["make", "-C", str(ACCURACY_DIR), f"OUT={out}", f"compdb-{self.name}"]
        args += [f"{k}={v}" for k, v in (make_vars or {}).items()]
        subprocess.run(args, check=True, capture_output=True, text=True)
        return pathlib.Path(out) / f"{self.name}.compdb"

    def write_project(self, project: pathlib.Path, depth: Optional[int] = 1,
                      k: Optional[int] = 3, iterations: Optional[int] = 6,
                      extra_args: Sequence[str] = (), roots: bool = True) -> pathlib.Path:
        """Makes `project` a vprof project for this program: compile database in
        project/<name>.compdb/, and project/vprof.toml whose build command compiles with
        the Makefile into project/bin (CC/CXX from the environment: the vprof wrappers)
        and whose workload writes the program's output to project/truth.txt (read it
        back with `read_truth`). Settings given as None, and the roots with roots=False, are
        left out (vprof's defaults). Returns the path of vprof.toml."""
        project = pathlib.Path(project).resolve()
        project.mkdir(parents=True, exist_ok=True)
        compdb = self.compdb(project)
        exe = project / "bin" / self.name
        args = " ".join(["--truth", *extra_args])
        toml = "\n".join([
            f"# vprof project for the accuracy program {self.name} (tests/accuracy/programs.py)",
            f"compile_commands = {json.dumps(str(compdb / 'compile_commands.json'))}",
            *(["roots = [" + ", ".join(json.dumps(r) for r in self.roots) + "]"] if roots
              else []),
            *([f"depth = {depth}"] if depth is not None else []),
            *([f"k = {k}"] if k is not None else []),
            *([f"iterations = {iterations}"] if iterations is not None else []),
            "build = " + json.dumps(f"make -C {ACCURACY_DIR} OUT={project / 'bin'} "
                                    f"--always-make {self.name}"),
            "workload = " + json.dumps(f"ACC_IO_DIR={project} {exe} {args} "
                                       f"> {project / 'truth.txt'}"),
            ""])
        (project / "vprof.toml").write_text(toml)
        return project / "vprof.toml"

    @staticmethod
    def read_output(project: pathlib.Path) -> Optional[str]:
        """What the last workload run of a project made by write_project printed (its
        truth.txt: the `truth:` line, and `load:`, `call:`, `tail:` where the program
        prints them; parse_kv_line reads one), or None before any run."""
        path = pathlib.Path(project) / "truth.txt"
        return path.read_text() if path.exists() else None

    @staticmethod
    def read_truth(project: pathlib.Path) -> Optional[dict]:
        """The truth line of the last workload run of a project made by write_project."""
        out = Program.read_output(project)
        return parse_kv_line(out, "truth") if out is not None else None

    def run(self, binary: pathlib.Path, args: Sequence[str] = (),
            env: Optional[Mapping[str, str]] = None, cwd: Optional[pathlib.Path] = None,
            timeout: float = 120) -> Result:
        """Runs the program with --truth (plus `args`); raises RuntimeError with the output
        if it fails or does not print both lines."""
        proc = subprocess.run([str(binary), "--truth", *args], capture_output=True, text=True,
                              env={**os.environ, **(env or {})}, cwd=cwd, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"{binary}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}")
        truth = parse_kv_line(proc.stdout, "truth")
        summary = parse_kv_line(proc.stdout, "accuracy")
        if truth is None or summary is None:
            raise RuntimeError(f"{binary}: no truth/accuracy line\n{proc.stdout}{proc.stderr}")
        return Result(truth=truth, summary=summary, stdout=proc.stdout)


def load_programs(manifest: pathlib.Path = MANIFEST) -> list[Program]:
    """Parses the manifest; raises ValueError naming the file and entry on a bad entry."""
    with open(manifest, "rb") as f:
        data = tomllib.load(f)
    programs = []
    for i, e in enumerate(data.get("program", [])):
        try:
            programs.append(Program(
                name=e["name"], language=e["language"], sources=tuple(e["sources"]),
                roots=tuple(e["roots"]), cause=tuple(e["cause"]), kind=e["kind"],
                via=e["via"], depth=int(e["depth"]), min_share=float(e["min_share"]),
                intervals=int(e["intervals"]), build=e["build"], run_cmd=e["run"],
                analytic_share=e.get("analytic_share"), wait=e.get("wait"),
                waker_roots=tuple(e.get("waker_roots", ())),
                known_issue=e.get("known_issue"), needs=tuple(e.get("needs", ())),
                tail_cause=e.get("tail_cause"),
                defaults=bool(e.get("defaults", False))))
        except KeyError as missing:
            raise ValueError(f"{manifest}: program #{i + 1}: missing key {missing}") from None
        unknown = [n for n in programs[-1].needs if n not in NEEDS]
        if unknown:
            raise ValueError(f"{manifest}: program #{i + 1} ({e['name']}): unknown `needs` "
                             f"value(s) {unknown}; known: {list(NEEDS)}")
    return programs


# ---- the mini database -----------------------------------------------------------------

def minidb_cmake_binary(build_dir: pathlib.Path) -> pathlib.Path:
    return pathlib.Path(build_dir) / "benchmarks" / "minidb" / "minidb"


def build_minidb_make(out: pathlib.Path, make_vars: Optional[Mapping[str, str]] = None
                      ) -> pathlib.Path:
    """Builds minidb with benchmarks/minidb/Makefile into `out` (CXX=vprof-c++ etc. in
    `make_vars`); returns the executable."""
    args = ["make", "-C", str(MINIDB_DIR), f"OUT={out}", "--always-make", "all"]
    args += [f"{k}={v}" for k, v in (make_vars or {}).items()]
    subprocess.run(args, check=True, capture_output=True, text=True)
    return pathlib.Path(out) / "minidb"


def run_minidb(binary: pathlib.Path, args: Sequence[str] = (),
               env: Optional[Mapping[str, str]] = None, timeout: float = 300) -> dict:
    """Runs minidb and returns its final `minidb:` line as a dict; raises RuntimeError
    with the output on a non-zero exit or a missing line."""
    proc = subprocess.run([str(binary), *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)
    summary = parse_kv_line(proc.stdout, "minidb")
    if proc.returncode != 0 or summary is None:
        raise RuntimeError(f"{binary}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}")
    return summary


def _main(argv: list[str]) -> int:
    if len(argv) >= 1 and argv[0] == "list":
        for p in load_programs():
            share = "nan" if p.analytic_share is None else f"{p.analytic_share:.4f}"
            print(f"{p.name:10} {p.language:4} via={p.via:8} cause={','.join(p.cause)} "
                  f"analytic={share}")
        return 0
    if len(argv) in (3, 5) and argv[0] in ("build", "compdb"):
        by_name = {p.name: p for p in load_programs()}
        if argv[1] not in by_name:
            print(f"programs.py: no program '{argv[1]}' in {MANIFEST}", file=sys.stderr)
            return 2
        make_vars = {"CC": argv[3], "CXX": argv[4]} if len(argv) == 5 else None
        p, out = by_name[argv[1]], pathlib.Path(argv[2]).resolve()
        print(p.build_make(out, make_vars=make_vars) if argv[0] == "build"
              else p.compdb(out, make_vars=make_vars))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
