"""The driver starts the kernel wake-up recorder beside the workload (docs/cli.md, "Kernel
wake-ups"), tested with a fake recorder (fake_vprof_sched.py, pointed to by VPROF_SCHED)
that honours vprof-sched's command-line contract: it attaches to the workload's process
before the workload runs, its file lands in the trace directory, SIGTERM stops it; when it
cannot record, "auto" says so once per invocation and "on" is an error; "off" never starts
it; a recorder that never reports ready times out. In every case the workload's exit code
and output are the same as without a recorder."""
import json
import os
import pathlib
import re
import struct
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from test_build_integration import make_project  # noqa: E402

FAKE = pathlib.Path(__file__).resolve().parent / "fake_vprof_sched.py"
LOUD = "vprof: warning: kernel wake-ups are off: "
# the workload: its output, its pid (the recorder's root), and an exit code of its own
WORKLOAD = ["sh", "-c", 'echo "hello from $$"; echo $$ > pid.txt; exit 7']


@pytest.fixture(scope="module")
def vprof(build_dir):
    exe = build_dir / "driver" / "vprof"
    assert exe.exists(), f"{exe} not built"
    return exe


def run(vprof, cwd, *args, mode="ok", env=None, timeout=60):
    log = cwd / "fake.log"
    e = {**os.environ, "VPROF_SCHED": str(FAKE), "FAKE_SCHED_MODE": mode,
         "FAKE_SCHED_LOG": str(log), **(env or {})}
    return subprocess.run([str(vprof), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=e)


def calls(cwd):
    log = cwd / "fake.log"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def baseline(vprof, tmp_path):
    """The workload's exit code and output without any recorder."""
    d = tmp_path / "baseline"
    d.mkdir()
    r = run(vprof, d, "run", "--kernel-wakeups", "off", "--", *WORKLOAD)
    return r.returncode, r.stdout.replace((d / "pid.txt").read_text().strip(), "PID")


def same_as_baseline(r, cwd, base):
    pid = (cwd / "pid.txt").read_text().strip()
    assert (r.returncode, r.stdout.replace(pid, "PID")) == base, r.stderr


def test_the_recorder_attaches_before_the_workload_runs(vprof, tmp_path):
    base = baseline(vprof, tmp_path)
    r = run(vprof, tmp_path, "run", "--sched-ring-mb", "4", "--", *WORKLOAD)
    same_as_baseline(r, tmp_path, base)
    trace = tmp_path / ".vprof" / "traces" / "manual"
    check, record, stopped = calls(tmp_path)
    assert check["call"] == "check"
    # started with the workload's pid, which existed and had not run its command yet: the
    # recorder saw the held fork of vprof, not the shell of the workload
    assert record["root"] == int((tmp_path / "pid.txt").read_text())
    assert record["root_cmdline"] and record["root_cmdline"][0].endswith("vprof"), record
    args = record["args"]
    assert args[:4] == ["--root-pid", str(record["root"]), "--out", str(trace / "sched.vpk")]
    assert args[4] == "--ready-fd" and args[6:] == [
        "--quiet", "--ring-mb", "4", "--stacks", str(trace / "stacks.vpk"), "--sample-hz", "997"
    ], args
    # SIGTERM stopped it, and its file is in the trace directory
    assert stopped == {"call": "stopped", "pid": record["pid"], "by": "SIGTERM"}
    header = (trace / "sched.vpk").read_bytes()
    assert header[:8] == b"VPROFSCH" and struct.unpack_from("<I", header, 20)[0] == 1
    assert not alive(record["pid"])
    assert not (trace / "sched.log").exists(), "the fake said nothing: no empty log is left"
    assert re.search(r"kernel wake-ups recorded \(sched\.vpk, 128 bytes\)", r.stderr), r.stderr
    assert LOUD not in r.stderr


@pytest.mark.parametrize("mode", ["check3", "start3"])
def test_auto_says_once_why_it_cannot_record(vprof, tmp_path, mode):
    base = baseline(vprof, tmp_path)
    r = run(vprof, tmp_path, "-q", "run", "--", *WORKLOAD, mode=mode)
    same_as_baseline(r, tmp_path, base)
    lines = [line for line in r.stderr.splitlines() if LOUD in line]
    assert len(lines) == 1, r.stderr  # -q does not hide it
    line = lines[0]
    assert "cannot record here: no CAP_BPF (fake); run as root" in line  # the recorder's own
    assert "waits that are not pthread calls" in line and "get no waker" in line
    assert "CAP_BPF and CAP_PERFMON" in line and 'kernel_wakeups = "off"' in line
    assert not (tmp_path / ".vprof" / "traces" / "manual" / "sched.vpk").exists()


def test_on_is_an_error_and_the_workload_never_runs(vprof, tmp_path):
    for mode in ("check3", "start3"):
        r = run(vprof, tmp_path, "run", "--kernel-wakeups", "on", "--", *WORKLOAD, mode=mode)
        assert r.returncode == 5, (mode, r.stderr)
        assert 'kernel_wakeups = "on", but kernel wake-ups cannot be recorded here' in r.stderr
        assert "no CAP_BPF (fake)" in r.stderr
        assert not (tmp_path / "pid.txt").exists(), mode
        assert "hello" not in r.stdout


def test_off_never_starts_it(vprof, tmp_path):
    (tmp_path / "vprof.toml").write_text('kernel_wakeups = "off"\n')
    r = run(vprof, tmp_path, "run", "--", *WORKLOAD, mode="check3")
    assert r.returncode == 7 and "hello from" in r.stdout
    assert calls(tmp_path) == []
    assert "kernel wake-ups off" in r.stderr and LOUD not in r.stderr


def test_a_recorder_that_never_gets_ready_times_out(vprof, tmp_path):
    base = baseline(vprof, tmp_path)
    r = run(vprof, tmp_path, "run", "--", *WORKLOAD, mode="noready",
            env={"VPROF_SCHED_TIMEOUT": "2"})
    same_as_baseline(r, tmp_path, base)
    assert re.search(LOUD + r"vprof-sched did not report that it was recording within 2 s",
                     r.stderr), r.stderr
    record = calls(tmp_path)[1]
    assert not alive(record["pid"]), "the recorder was killed"


def test_a_recorder_that_ignores_sigterm_is_killed_and_said(vprof, tmp_path):
    base = baseline(vprof, tmp_path)
    r = run(vprof, tmp_path, "run", "--", *WORKLOAD, mode="nostop",
            env={"VPROF_SCHED_TIMEOUT": "2"})
    same_as_baseline(r, tmp_path, base)
    assert "vprof-sched did not stop within 2 s of SIGTERM and was killed" in r.stderr
    assert not alive(calls(tmp_path)[1]["pid"])


def test_a_missing_recorder_is_said_with_auto(vprof, tmp_path):
    base = baseline(vprof, tmp_path)
    r = run(vprof, tmp_path, "run", "--", *WORKLOAD, env={"VPROF_SCHED": "/nonexistent"})
    same_as_baseline(r, tmp_path, base)
    assert LOUD + "VPROF_SCHED=/nonexistent is not an executable file" in r.stderr


def test_the_loop_says_it_once_over_two_iterations(vprof, root, tmp_path):
    include = root / "annotations" / "include"
    p = make_project(root, tmp_path, build=f'make CC="$CC" VPROF_INCLUDE={include}')
    env = {"VPROF_INCLUDE": ""}
    assert run(vprof, p, "init", env=env).returncode == 0
    r = run(vprof, p, "loop", "--iterations", "2", "--prune", "0", mode="start3", env=env,
            timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stderr.count(LOUD) == 1, r.stderr[-3000:]
    assert "iteration 1: running the workload" in r.stderr
    # checked once, tried once: the second iteration does not try again
    assert [c["call"] for c in calls(p)] == ["check", "record"]
    for it in (0, 1):
        log = (p / ".vprof" / "logs" / f"iter-{it}-workload.log").read_text()
        assert log == "done\n"
    # "on" where it cannot record: the loop stops before the workload runs, exit 5
    assert run(vprof, p, "init", env=env).returncode == 0
    (p / "fake.log").unlink()
    for log in (p / ".vprof" / "logs").iterdir():
        log.unlink()
    r = run(vprof, p, "loop", "--kernel-wakeups", "on", mode="check3", env=env, timeout=300)
    assert r.returncode == 5, r.stderr[-3000:]
    assert 'kernel_wakeups = "on", but kernel wake-ups cannot be recorded here' in r.stderr
    assert not (p / ".vprof" / "logs" / "iter-0-workload.log").exists()
    assert [c["call"] for c in calls(p)] == ["check"]
