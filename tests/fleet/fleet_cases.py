"""The fleet tests' cases (tests/fleet/conftest.py makes them once per session for the
engines' tests): per program, `vprof init` + a short `vprof loop`, `vprof export --parquet`
of the newest iteration (once per host name) and the analyzer's own report of it
(`vprof analyze --json`)."""
import dataclasses
import os
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "accuracy"))
import programs  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
VENV_PYTHON = pathlib.Path(os.environ.get("VPROF_VENV", ROOT / ".venv")) / "bin" / "python"
BY_NAME = {p.name: p for p in programs.load_programs()}
ITERATIONS = 2
# every case: the accuracy programs, the mini database, one run under two host names
CASES = [*sorted(BY_NAME), "minidb", "convoy-two-hosts"]


def vp(vprof, project, *args, timeout=600, env=None):
    r = subprocess.run([str(vprof), "-C", str(project), *args], capture_output=True, text=True,
                       timeout=timeout, env=env)
    assert r.returncode == 0, f"vprof {' '.join(args)}: {r.stderr[-3000:]}"
    return r


def profile(vprof, project: pathlib.Path, roots) -> int:
    """init + a short loop; returns the newest analysed iteration."""
    vp(vprof, project, "init", *[a for r in roots for a in ("--root", r)])
    vp(vprof, project, "loop", "--iterations", str(ITERATIONS), "--prune", "0")
    return max(int(p.name.split("-")[1]) for p in (project / ".vprof" / "traces").iterdir())


@dataclasses.dataclass
class Input:
    project: pathlib.Path
    iteration: int
    report: pathlib.Path  # vprof analyze --json of the iteration
    dirs: list            # its Parquet export, once per host name


class FleetInputs:
    """Case name -> Input, profiled on first use (CASES)."""

    def __init__(self, vprof, base: pathlib.Path):
        self.vprof, self.base, self.made = vprof, base, {}

    def get(self, name: str) -> Input:
        if name not in self.made:
            self.made[name] = self._make(name)
        return self.made[name]

    def _make(self, name: str) -> Input:
        project = self.base / name
        hosts = ("host-a",)
        if name == "minidb":
            project.mkdir()
            make = f'make -s -B -C {programs.MINIDB_DIR} OUT={project}/out CXX="$CXX" all'
            (project / "vprof.toml").write_text(
                'compile_commands = "out/compile_commands.json"\n'
                f"build = '{make}'\n"
                'workload = "out/minidb --txns 1500 --threads 8 --warehouses 1 --fsync off"\n'
                f"depth = 1\nk = 3\niterations = {ITERATIONS}\n")
            subprocess.run(["make", "-s", "-C", str(programs.MINIDB_DIR), f"OUT={project}/out",
                            "compdb"], check=True, capture_output=True, text=True)
            iteration = profile(self.vprof, project, ())
        elif name == "convoy-two-hosts":
            # two copies of one run under two host names: every interval counts twice
            p = BY_NAME["convoy"]
            p.write_project(project, depth=1, k=3, iterations=1)
            iteration = profile(self.vprof, project, p.roots)
            hosts = ("host-a", "host-b")
        else:
            p = BY_NAME[name]
            p.write_project(project, depth=1, k=3, iterations=ITERATIONS)
            iteration = profile(self.vprof, project, p.roots)
        dirs = []
        for host in hosts:
            out = project / "parquet" / host
            r = vp(self.vprof, project, "export", "--parquet", str(out), "--iteration",
                   str(iteration), "--host", host)
            assert r.stdout.split() == [str(out / "intervals.parquet"),
                                        str(out / "node_times.parquet")], r.stdout
            dirs.append(str(out))
        report = project / "analyzer.json"
        report.write_text(vp(self.vprof, project, "analyze", "--iteration", str(iteration),
                             "--json").stdout)
        return Input(project, iteration, report, dirs)
