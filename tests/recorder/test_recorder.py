"""The kernel wake-up recorder (build/recorder/vprof-sched) end to end: it records a program
whose threads hand a token back and forth (pipe, futex, eventfd) and the file must show each of
B's sleeps in the right system call, woken by A, then run again; forked children are traced,
other processes never; the exit codes of its CLI; a killed recorder's file. Needs root (or
CAP_BPF + CAP_PERFMON) and a kernel with BTF: skipped with the reason otherwise."""
import collections
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import sched_file  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
SYS_READ, SYS_FUTEX, SYS_CLOCK_NANOSLEEP, SYS_WAIT4 = 0, 202, 230, 61  # x86-64
SYS_WRITE, SYS_SENDTO, SYS_RECVFROM = 1, 44, 45
PHASE_SYSCALL = {"pipe": SYS_READ, "futex": SYS_FUTEX, "eventfd": SYS_READ}


@pytest.fixture(scope="module")
def recorder(build_dir):
    exe = build_dir / "recorder" / "vprof-sched"
    if not exe.exists():
        pytest.skip(f"{exe} not built (the recorder room is skipped without libbpf, bpftool, "
                    "clang-19 or kernel BTF; see the CMake status line)")
    if os.geteuid() != 0:
        pytest.skip("the recorder needs root (or CAP_BPF + CAP_PERFMON)")
    check = subprocess.run([exe, "--check"], capture_output=True, text=True, timeout=60)
    if check.returncode != 0:
        pytest.skip(f"vprof-sched --check: {check.stderr.strip()}")
    return exe


@pytest.fixture(scope="module")
def handoff(tmp_path_factory):
    if os.uname().machine != "x86_64":
        pytest.skip("the expected system call numbers are x86-64's")
    exe = tmp_path_factory.mktemp("recbin") / "handoff"
    subprocess.run(["cc", "-std=gnu11", "-O2", "-g", "-Wall", "-Wextra", "-Werror",
                    str(HERE / "programs" / "handoff.c"), "-o", str(exe), "-pthread"],
                   check=True)
    return exe


class Recording:
    """A program started waiting for "go" on stdin and a recorder attached to it."""

    def __init__(self, recorder, program, args, out, extra=()):
        self.out = out
        self.program = subprocess.Popen([str(program), *map(str, args)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        ready_r, ready_w = os.pipe()
        self.recorder = subprocess.Popen(
            [str(recorder), "--root-pid", str(self.program.pid), "--out", str(out),
             "--ready-fd", str(ready_w), *extra],
            pass_fds=(ready_w,), stderr=subprocess.PIPE, text=True)
        os.close(ready_w)
        with os.fdopen(ready_r, "rb") as ready:
            assert ready.read(1) == b"\x01", self.recorder.stderr.read()

    def go(self, timeout=120):
        """Starts the program, waits for it, returns its stdout."""
        out, _ = self.program.communicate("go\n", timeout=timeout)
        assert self.program.returncode == 0, out
        return out

    def wait_recorder(self, timeout=30):
        """The recorder ends by itself once the tree has exited: (status, stderr, rusage)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status, usage = os.wait4(self.recorder.pid, os.WNOHANG)
            if pid:
                self.recorder.returncode = os.waitstatus_to_exitcode(status)
                return self.recorder.returncode, self.recorder.stderr.read(), usage
            time.sleep(0.01)
        self.recorder.kill()
        pytest.fail("the recorder did not end after the traced tree exited")


def parse_output(text):
    lines = [line.split() for line in text.splitlines()]
    info = {"phases": {}}
    for words in lines:
        if words[0] == "tids":
            info["main"], info["a"], info["b"] = map(int, words[1:4])
        elif words[0] == "child":
            info["child"] = int(words[1])
        elif words[0] == "phase":
            info["phases"][words[1]] = tuple(map(int, words[2:5]))
        elif words[0] == "pingpong":
            info["seconds"] = float(words[2])
            info["sleeps"] = (int(words[4]), int(words[5]))
    return info


def by_tid(records):
    out = collections.defaultdict(list)
    for r in sorted(records, key=lambda r: r.time_ns):
        out[r.tid].append(r)
    return out


def run_seen(task, sleep):
    """Whether the RUN that ends `sleep` is in `task` (one thread's records in time order):
    the next SLEEP or RUN after it is a RUN. The kernel leaves about one switch-in in 10^4
    unrecorded (docs/recorder.md, "Limits"): then the next is a SLEEP."""
    i = task.index(sleep)
    after = next((r for r in task[i + 1:] if r.kind in (sched_file.RUN, sched_file.SLEEP)), None)
    return after is not None and after.kind == sched_file.RUN


def wake_of(task, sleep):
    """The WAKE that ended `sleep` in `task` (one thread's records in time order), by the
    pairing rule of docs/trace-format.md: its last WAKE after its previous RUN and not after
    the RUN that ends the sleep (it may be stamped just before the SLEEP). Also checks that
    the RUN comes, after the SLEEP and before any other SLEEP."""
    i = task.index(sleep)
    run = next((r for r in task[i + 1:] if r.kind == sched_file.RUN), None)
    assert run is not None, f"no RUN after {sleep}"
    assert run_seen(task, sleep), f"another SLEEP before the RUN that ends {sleep}"
    previous_run = max((r.time_ns for r in task[:i] if r.kind == sched_file.RUN), default=0)
    wakes = [r for r in task if r.kind == sched_file.WAKE
             and previous_run < r.time_ns <= run.time_ns]
    return wakes[-1] if wakes else None


def around(task, record, before=2, after=3):
    """`record` and its neighbours in `task` (one thread's records in time order): what a
    failure shows about a sleep whose switch-in or wake-up is missing."""
    i = task.index(record)
    return task[max(0, i - before):i + after + 1]


def assert_file_whole(f):
    assert f.closed, "header not CLOSED"
    assert f.version == 3
    assert f.records_in_header == len(f.stored), (f.records_in_header, len(f.stored))
    assert f.trailing_bytes == 0
    assert f.start_ns <= f.end_ns
    last = {}
    traced = {r.pid for r in f.stored}
    for r in f.stored:  # per CPU, the file is in time order
        assert r.kind in sched_file.KIND_NAMES, r
        assert f.start_ns <= r.time_ns <= f.end_ns, r
        assert r.time_ns >= last.get(r.cpu, 0), (r, last[r.cpu])
        last[r.cpu] = r.time_ns
        if r.flags & sched_file.NEXT_RUNS:  # only a SLEEP, naming a traced thread that ran
            assert r.kind == sched_file.SLEEP and r.other != 0 and r.other_pid in traced, r


@pytest.fixture(scope="module")
def handoff_run(recorder, handoff, tmp_path_factory):
    """One recorded handoff run (200 rounds per phase) beside an untraced idle process."""
    tmp = tmp_path_factory.mktemp("rec")
    idle = subprocess.Popen([str(handoff), "idle", "300"], stdin=subprocess.PIPE, text=True)
    rec = Recording(recorder, handoff, ["handoff", 200], tmp / "sched.vpk")
    idle.stdin.write("go\n")
    idle.stdin.flush()
    info = parse_output(rec.go())
    status, err, _ = rec.wait_recorder()
    idle.communicate(timeout=30)
    assert status == 0, err
    return info, sched_file.read(tmp / "sched.vpk"), err, idle.pid


def test_file_is_closed_and_ordered(handoff_run):
    info, f, err, _ = handoff_run
    assert_file_whole(f)
    assert f.root_pid == info["main"]
    assert f.lost == 0
    counts = collections.Counter(r.kind for r in f.stored)
    assert err.strip() == (f"vprof-sched: {len(f.stored)} records ({counts[sched_file.SLEEP]} "
                           f"sleeps, {counts[sched_file.WAKE]} wake-ups), 0 lost")


def test_b_sleeps_in_the_phase_syscall_woken_by_a(handoff_run):
    info, f, _, _ = handoff_run
    tasks = by_tid(f.records)
    b = tasks[info["b"]]
    for phase, (begin, end, switches) in info["phases"].items():
        sleeps = [r for r in b if r.kind == sched_file.SLEEP and begin <= r.time_ns <= end]
        # every voluntary switch B counted itself is a SLEEP record, and the other way round
        assert len(sleeps) == switches, (phase, len(sleeps), switches)
        assert switches >= 50, f"{phase}: B slept only {switches} times in 200 hand-offs"
        for s in sleeps:
            assert s.syscall == PHASE_SYSCALL[phase], (phase, str(s))
            assert s.pid == info["main"] and s.state & 0xFF in (1, 2), str(s)
        # a switch-in or a wake-up the kernel left unrecorded (3 in 52,009 and 1 in 30,937 sleeps
        # measured here; once 3 in a phase of one CI run, whose host's kernel we cannot see;
        # docs/recorder.md "Limits"): at most 2 % of a phase's sleeps (one at least), and the
        # analyzer's rules cover both (test_kernel_waits.cpp)
        wakes = {s: wake_of(b, s) for s in sleeps if run_seen(b, s)}
        unseen = [s for s in sleeps if wakes.get(s) is None]
        assert len(unseen) <= max(1, len(sleeps) // 50), (
            phase, len(sleeps), [(str(s), [str(r) for r in around(b, s)]) for s in unseen])
        for s, wake in wakes.items():
            if wake is None:
                continue
            assert (wake.other, wake.other_pid) == (info["a"], info["main"]), str(wake)
            assert wake.flags & sched_file.WAKER_IRQ == 0, str(wake)
            # A wakes B by writing (a pipe, a futex word, an eventfd): never a room wake-up
            assert wake.flags & (sched_file.WAKE_ROOM | sched_file.WAKE_DATA) == 0, str(wake)
            assert wake.syscall == (SYS_FUTEX if phase == "futex" else SYS_WRITE), str(wake)


def test_room_wakeups_are_followed_by_their_data(recorder, handoff, tmp_path):
    """B sleeps in recv on an AF_UNIX stream socket; A's recv of B's request wakes it for the room
    it freed (the kernel wakes every sleeper of the socket), A's send 200 us later brings the
    data: the first WAKE is flagged WAKE_ROOM with A in recvfrom, and the recorder adds a
    WAKE_DATA of B by A in sendto after it (docs/recorder.md, "Room wake-ups")."""
    rec = Recording(recorder, handoff, ["room", 100], tmp_path / "sched.vpk")
    info = parse_output(rec.go())
    status, err, _ = rec.wait_recorder()
    assert status == 0, err
    f = sched_file.read(tmp_path / "sched.vpk")
    assert_file_whole(f)
    b = by_tid(f.records)[info["b"]]
    by_a = [r for r in b
            if r.kind == sched_file.WAKE and (r.other, r.other_pid) == (info["a"], info["main"])]
    room = [r for r in by_a if r.flags & sched_file.WAKE_ROOM]
    data = [r for r in by_a if r.flags & sched_file.WAKE_DATA]
    assert len(room) >= 30, f"{len(room)} room wake-ups in 100 requests"
    assert all(r.syscall == SYS_RECVFROM for r in room), [str(r) for r in room if r.syscall != SYS_RECVFROM]
    assert all(r.syscall == SYS_SENDTO for r in data), [str(r) for r in data if r.syscall != SYS_SENDTO]
    # each room wake-up's data wake-up comes after it, before the next room wake-up (one
    # record the kernel leaves unrecorded allowed, docs/recorder.md "Limits")
    bounds = [r.time_ns for r in room] + [float("inf")]
    without = [str(r) for r, end in zip(room, bounds[1:])
               if not any(r.time_ns < d.time_ns < end for d in data)]
    assert len(without) <= 1, without
    # the scheduler's own wake-ups of a sleeping B by A are A's sends (A's receive can also
    # catch B between its going to sleep and its switch: B was not asleep, no SLEEP before it)
    asleep, plain = False, []
    for r in b:
        if r.kind in (sched_file.SLEEP, sched_file.RUN):
            asleep = r.kind == sched_file.SLEEP
        elif r in by_a and asleep and not r.flags & (sched_file.WAKE_ROOM | sched_file.WAKE_DATA):
            plain.append(r)
    assert len(plain) >= 30, f"{len(plain)} wake-ups of B by A's sends in 100 requests"
    assert all(r.syscall == SYS_SENDTO for r in plain), [str(r) for r in plain
                                                        if r.syscall != SYS_SENDTO]


def test_child_process_is_traced(handoff_run):
    info, f, _, _ = handoff_run
    tasks = by_tid(f.records)
    child = tasks[info["child"]]
    assert all(r.pid == info["child"] for r in child)
    naps = [r for r in child if r.kind == sched_file.SLEEP
            and r.syscall == SYS_CLOCK_NANOSLEEP]
    assert len(naps) == 5, [str(r) for r in child]
    # nanosleep ends in the timer interrupt: the waker is whatever ran there, flagged (a
    # switch-in or a wake-up the kernel left unrecorded, about 1 in 10^4: one nap at most)
    wakes = {nap: wake_of(child, nap) for nap in naps if run_seen(child, nap)}
    seen = {nap: wake for nap, wake in wakes.items() if wake is not None}
    assert len(seen) >= len(naps) - 1, [str(r) for r in child]
    for nap, wake in seen.items():
        # a timer interrupt: flagged, or taken on an idle CPU, where the waker is the idle
        # task (tid 0; sched_format.h: "0: the idle task, that is an interrupt")
        assert wake and (wake.flags & sched_file.WAKER_IRQ or wake.other == 0), \
            (str(nap), str(wake))
    assert child[-1].kind == sched_file.EXIT
    # the parent waits in wait4 and the child's exit wakes it, from the child
    main = tasks[info["main"]]
    assert any(r.kind == sched_file.SLEEP and r.syscall == SYS_WAIT4 for r in main)
    assert any(r.kind == sched_file.WAKE and r.other == info["child"] for r in main)


def test_every_thread_exits_once(handoff_run):
    info, f, _, _ = handoff_run
    exits = collections.Counter(r.tid for r in f.records if r.kind == sched_file.EXIT)
    for name in ("main", "a", "b", "child"):
        assert exits[info[name]] == 1, (name, exits)


def test_untraced_process_never_appears(handoff_run):
    info, f, _, idle_pid = handoff_run
    assert idle_pid not in {r.pid for r in f.records} | {r.tid for r in f.records}
    traced = {info["main"], info["child"]}
    assert {r.pid for r in f.records} == traced


def test_program_started_with_vprof_disable_leaves_the_tree(recorder, handoff, tmp_path):
    """A process of the tree that executes a program with VPROF_DISABLE=1 in its environment
    (a load generator such as pgbench) is not traced from its first instruction; a false
    setting or none keeps it traced."""
    script = (f'read go; for v in 1 0 yes; do echo go | env VPROF_DISABLE=$v {handoff} idle 20 & '
              f'echo "$v $!"; done; echo go | {handoff} idle 20 & echo "none $!"; wait')
    rec = Recording(recorder, "/bin/sh", ["-c", script], tmp_path / "sched.vpk")
    pids = dict(line.split() for line in rec.go().splitlines())
    status, err, _ = rec.wait_recorder()
    assert status == 0, err
    f = sched_file.read(tmp_path / "sched.vpk")
    naps = collections.Counter(r.pid for r in f.records if r.kind == sched_file.SLEEP
                               and r.syscall == SYS_CLOCK_NANOSLEEP)
    assert naps[int(pids["0"])] == 20 and naps[int(pids["none"])] == 20, (pids, naps)
    for disabled in ("1", "yes"):
        pid = int(pids[disabled])
        assert naps[pid] == 0, (disabled, pids, naps)
        # nothing after the exec: no sleep in the program's own system calls, no exit
        assert not [r for r in f.records if r.pid == pid and r.kind == sched_file.EXIT]


def test_killed_recorder_leaves_readable_records(recorder, handoff, tmp_path):
    out = tmp_path / "sched.vpk"
    rec = Recording(recorder, handoff, ["idle", 3000], out)
    rec.program.stdin.write("go\n")
    rec.program.stdin.flush()
    time.sleep(1.0)  # several of the recorder's 200 ms flushes
    rec.recorder.send_signal(signal.SIGKILL)
    rec.recorder.wait(timeout=10)
    rec.program.kill()
    rec.program.wait(timeout=10)
    f = sched_file.read(out)
    assert not f.closed and f.records_in_header == 0 and f.end_ns == 0
    assert f.trailing_bytes == 0
    assert len(f.records) >= 100, len(f.records)  # ~1000 naps of 1 ms were under way
    assert {r.pid for r in f.records} == {rec.program.pid}
    assert all(r.kind in sched_file.KIND_NAMES and r.time_ns >= f.start_ns for r in f.records)


def test_sigint_ends_recording_with_a_closed_file(recorder, handoff, tmp_path):
    out = tmp_path / "sched.vpk"
    rec = Recording(recorder, handoff, ["idle", 3000], out, extra=["--quiet"])
    rec.program.stdin.write("go\n")
    rec.program.stdin.flush()
    time.sleep(0.3)
    rec.recorder.send_signal(signal.SIGINT)
    status, err, _ = rec.wait_recorder()
    rec.program.kill()
    rec.program.wait(timeout=10)
    assert status == 0 and err == ""  # --quiet: no summary
    f = sched_file.read(out)
    assert_file_whole(f)
    assert len(f.records) > 0


def test_full_ring_counts_lost_records(recorder, handoff, tmp_path):
    """A stopped recorder drains nothing: a 1 MiB ring holds what it can, the rest is lost and
    counted, and the file stays whole."""
    out = tmp_path / "sched.vpk"
    rec = Recording(recorder, handoff, ["pingpong", 50000], out, extra=["--ring-mb", "1"])
    rec.recorder.send_signal(signal.SIGSTOP)
    try:
        info = parse_output(rec.go())
    finally:
        rec.recorder.send_signal(signal.SIGCONT)
    status, err, _ = rec.wait_recorder()
    assert status == 0, err
    f = sched_file.read(out)
    assert_file_whole(f)
    ring_capacity = (1 << 20) // (sched_file.RECORD.size + 8)  # 8-byte ring record header
    assert 0 < len(f.stored) <= ring_capacity
    # each of A's and B's sleeps gave a SLEEP, a WAKE and a RUN (expanded), kept or lost
    # (`lost` counts a SLEEP with NEXT_RUNS as two) — nearly: a
    # futex wait the program counts can be woken before its task left the CPU (a WAKE, no
    # SLEEP or RUN), so a few per mille may be missing (4 of 203,232 in one CI run)
    assert len(f.records) + f.lost >= 0.99 * 3 * sum(info["sleeps"]), (len(f.records), f.lost)
    assert f"{f.lost} lost" in err and f.lost > 0


def test_check_succeeds_here(recorder):
    r = subprocess.run([recorder, "--check"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_check_without_privilege_says_why(recorder):
    setpriv = shutil.which("setpriv")
    if not setpriv:
        pytest.skip("setpriv (util-linux) not found")
    r = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                        "--inh-caps=-all", "--bounding-set=-all", str(recorder), "--check"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 3, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "privilege" in lines[0] and "CAP_BPF" in lines[0], r.stderr


@pytest.mark.parametrize("args,flag", [
    (["--bogus"], "--bogus"),
    (["--root-pid"], "--root-pid"),
    (["--root-pid", "abc", "--out", "x"], "--root-pid abc"),
    (["--out", "x"], "--root-pid"),
    (["--root-pid", "1"], "--out"),
    (["--root-pid", "1", "--out", "x", "--ring-mb", "0"], "--ring-mb 0"),
    (["--root-pid", "1", "--out", "x", "--ready-fd", "987"], "--ready-fd 987"),
    (["--root-pid", "1", "--out", "x", "extra"], "extra"),
    (["--root-pid", "1", "--out", "x", "--alternate", "5", "--alternate-log", "y"],
     "--alternate 5"),
    (["--root-pid", "1", "--out", "x", "--alternate", "200"], "--alternate and --alternate-log"),
])
def test_bad_flags_are_usage_errors(recorder, args, flag):
    r = subprocess.run([recorder, *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, (args, r.stderr)
    assert r.stderr.startswith(f"vprof-sched: {flag}"), r.stderr


def test_missing_process_is_a_usage_error(recorder):
    p = subprocess.Popen(["true"])
    p.wait()  # reaped: its pid names no process now
    r = subprocess.run([recorder, "--root-pid", str(p.pid), "--out", "x"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "no such process" in r.stderr, r.stderr


def test_thread_id_is_not_a_root(recorder, handoff):
    """A thread's id names no process tree: the recorder says whose thread it is."""
    prog = subprocess.Popen([str(handoff), "pingpong", "100000"], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    try:
        prog.stdin.write("go\n")
        prog.stdin.flush()
        deadline = time.monotonic() + 10
        while len(os.listdir(f"/proc/{prog.pid}/task")) < 3 and time.monotonic() < deadline:
            time.sleep(0.001)
        thread = max(int(t) for t in os.listdir(f"/proc/{prog.pid}/task"))
        r = subprocess.run([recorder, "--root-pid", str(thread), "--out", "x"],
                           capture_output=True, text=True, timeout=30)
    finally:
        prog.kill()
        prog.wait()
    assert r.returncode == 2, r.stderr
    assert f"--root-pid {thread}: a thread of process {prog.pid}" in r.stderr, r.stderr


def test_unwritable_output_names_the_file(recorder, tmp_path):
    bad = tmp_path / "missing-dir" / "sched.vpk"
    r = subprocess.run([recorder, "--root-pid", str(os.getpid()), "--out", str(bad)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and str(bad) in r.stderr, r.stderr


def test_help_teaches(recorder):
    r = subprocess.run([recorder, "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0
    for words in ("--root-pid", "--out", "CAP_BPF", "sched.vpk", "SIGINT", "--check"):
        assert words in r.stdout


def test_pingpong_rate(recorder, handoff, tmp_path):
    """Measures (prints, asserts no timing) the wake-ups per second the recorder keeps up with:
    two threads doing 200k futex hand-offs, with and without the recorder."""
    plain = subprocess.run([str(handoff), "pingpong", "200000"], input="go\n", text=True,
                           capture_output=True, check=True, timeout=300)
    plain = parse_output(plain.stdout)
    rec = Recording(recorder, handoff, ["pingpong", 200000], tmp_path / "sched.vpk")
    t0 = time.monotonic()
    info = parse_output(rec.go(timeout=300))
    status, err, usage = rec.wait_recorder(timeout=120)
    wall = time.monotonic() - t0
    assert status == 0, err
    f = sched_file.read(tmp_path / "sched.vpk")
    assert_file_whole(f)
    wakes = sum(1 for r in f.records if r.kind == sched_file.WAKE)
    sleeps = sum(1 for r in f.records if r.kind == sched_file.SLEEP
                 and r.tid in (info["a"], info["b"]))
    if f.lost == 0:  # with nothing lost, every voluntary switch A and B counted is a SLEEP
        # (they count from their first hand-off to their last; a thread's exit may sleep too)
        assert sleeps >= sum(info["sleeps"]), (sleeps, info["sleeps"])
    span = (f.end_ns - f.start_ns) / 1e9
    print(f"\npingpong 200000 hand-offs: plain {plain['seconds']:.3f} s "
          f"({sum(plain['sleeps'])} sleeps), recorded {info['seconds']:.3f} s "
          f"({sum(info['sleeps'])} sleeps); {len(f.records)} records, {wakes} wake-ups in "
          f"{info['seconds']:.3f} s = {wakes / info['seconds']:.0f} wake-ups/s, "
          f"{len(f.records) / info['seconds']:.0f} records/s, {f.lost} lost; recorder CPU "
          f"{usage.ru_utime + usage.ru_stime:.3f} s (user {usage.ru_utime:.3f}, sys "
          f"{usage.ru_stime:.3f}) over {span:.3f} s recorded, {wall:.3f} s wall")


def test_alternate_records_only_in_its_recording_phases(recorder, handoff, tmp_path):
    """--alternate (an overhead benchmark's within-run A/B) pauses and resumes recording every
    phase and logs each phase's start with the machine's CPU ticks: the ping-pong's sleeps,
    wake-ups and runs fall in recording phases only, and in several of them."""
    out, log = tmp_path / "sched.vpk", tmp_path / "phases.log"
    rec = Recording(recorder, handoff, ["pingpong", 200000], out,
                    extra=("--alternate", "100", "--alternate-log", log))
    rec.go(timeout=300)
    status, err, _ = rec.wait_recorder(timeout=120)
    assert status == 0, err
    rows = [line.split() for line in log.read_text().splitlines()]
    phases = [r[2] for r in rows]
    assert phases[0] == "recording" and phases[-1] == "end", phases
    assert all(p == ("recording" if i % 2 == 0 else "paused")
               for i, p in enumerate(phases[:-1])), phases
    assert len(phases) >= 4, phases
    starts = [int(r[1]) for r in rows]
    assert starts == sorted(starts)
    assert all(int(r[3]) <= int(r[4]) for r in rows), rows  # busy ticks within all ticks
    paused = [(starts[i], starts[i + 1]) for i, p in enumerate(phases[:-1]) if p == "paused"]
    recording = [(starts[i], starts[i + 1]) for i, p in enumerate(phases[:-1])
                 if p == "recording"]
    f = sched_file.read(out)
    events = [r for r in f.records
              if r.kind in (sched_file.SLEEP, sched_file.WAKE, sched_file.RUN)]
    assert events
    slack = 1_000_000  # a program already running when the pause was stored
    inside_pause = [r for r in events
                    if any(a + slack < r.time_ns < b for a, b in paused)]
    assert not inside_pause, inside_pause[:5]
    busy_phases = {i for i, (a, b) in enumerate(recording)
                   for r in events if a <= r.time_ns < b}
    assert len(busy_phases) >= 2 or len(recording) < 2, (busy_phases, len(recording))


def test_switch_between_traced_threads_is_one_record(recorder, handoff, tmp_path):
    """On one CPU a futex ping-pong often switches from the thread going to sleep straight to
    the one it woke (unless the wake-up preempted the waker): such a switch is one SLEEP with
    NEXT_RUNS exactly when the thread switched in had slept, and the reader's expansion gives
    it its RUN, so every sleep still pairs with its WAKE and RUN."""
    out = tmp_path / "sched.vpk"
    rec = Recording(recorder, handoff, ["pingpong", 2000], out)
    os.sched_setaffinity(rec.program.pid, {sorted(os.sched_getaffinity(0))[0]})  # threads follow
    info = parse_output(rec.go())
    status, err, _ = rec.wait_recorder()
    assert status == 0, err
    f = sched_file.read(out)
    assert_file_whole(f)
    assert f.lost == 0
    pair = (info["a"], info["b"])
    sleeps = [r for r in f.stored if r.kind == sched_file.SLEEP and r.tid in pair]
    merged = [r for r in sleeps if r.flags & sched_file.NEXT_RUNS]
    # how many switches go straight to the woken thread depends on the load (a wake-up that
    # preempts the waker is no such switch): 8-30 % seen here; the mechanism must show
    assert len(merged) >= max(10, 0.02 * len(sleeps)), (len(merged), len(sleeps))
    asleep = set()  # in the stored order: NEXT_RUNS exactly when `other` is asleep
    for r in f.stored:
        if r.kind == sched_file.RUN:
            asleep.discard(r.tid)
        elif r.kind == sched_file.SLEEP:
            if r.tid in pair and r.other in pair:
                assert bool(r.flags & sched_file.NEXT_RUNS) == (r.other in asleep), r
            if r.flags & sched_file.NEXT_RUNS:
                asleep.discard(r.other)
            asleep.add(r.tid)
    runs_stored = [r for r in f.stored if r.kind == sched_file.RUN and r.tid in pair]
    runs = [r for r in f.records if r.kind == sched_file.RUN and r.tid in pair]
    # any traced thread's switch may carry a pair thread's RUN (the main thread going to sleep
    # in pthread_join switches to one of them), and a pair thread's to the main thread's
    into_pair = [r for r in f.stored if r.kind == sched_file.SLEEP
                 and r.flags & sched_file.NEXT_RUNS and r.other in pair]
    assert len(runs) == len(runs_stored) + len(into_pair)
    for s in merged:  # the expanded RUN: another thread's of the program, after `tid`
        assert s.other != s.tid and s.other_pid == s.pid
    tasks = by_tid(f.records)
    woken_by_peer = 0
    for me, peer in (pair, pair[::-1]):
        for s in [r for r in tasks[me] if r.kind == sched_file.SLEEP and r.syscall == SYS_FUTEX]:
            if s is tasks[me][-1] or all(r.kind != sched_file.RUN for r in tasks[me][tasks[me].index(s):]):
                continue  # its exit
            if not run_seen(tasks[me], s):
                continue  # a switch-in the kernel left unrecorded (docs/recorder.md); a lost
                # wake-up counts against the 1 % below
            wake = wake_of(tasks[me], s)
            woken_by_peer += wake is not None and wake.other == peer
    assert woken_by_peer >= 0.99 * len(sleeps) - 4, (woken_by_peer, len(sleeps))


def test_reader_expands_next_runs(tmp_path):
    """sched_file.read: a SLEEP with NEXT_RUNS becomes the named thread's RUN, then the SLEEP;
    version 1 files still read; an unknown version is refused."""
    def header(version, records):
        return sched_file.HEADER.pack(sched_file.MAGIC, version, 128, 32, sched_file.CLOSED, 7,
                                      0, 100, 900, records, 0, bytes(64))
    recs = [sched_file.RECORD.pack(200, 8, 7, 9, 7, sched_file.WAKE, 0, 1, 0),
            sched_file.RECORD.pack(300, 8, 7, 9, 7, sched_file.SLEEP, sched_file.NEXT_RUNS, 1,
                                   202 | 1 << 16),
            sched_file.RECORD.pack(400, 9, 7, 0, 0, sched_file.SLEEP, 0, 0, 202 | 1 << 16)]
    path = tmp_path / "sched.vpk"
    path.write_bytes(header(2, 3) + b"".join(recs))
    f = sched_file.read(path)
    assert len(f.stored) == 3
    assert [(r.time_ns, r.kind, r.tid, r.pid, r.other, r.other_pid, r.cpu) for r in f.records] == [
        (200, sched_file.WAKE, 8, 7, 9, 7, 1), (300, sched_file.RUN, 9, 7, 8, 7, 1),
        (300, sched_file.SLEEP, 8, 7, 9, 7, 1), (400, sched_file.SLEEP, 9, 7, 0, 0, 0)]
    path.write_bytes(header(1, 1) + recs[0])
    assert sched_file.read(path).version == 1
    path.write_bytes(header(4, 0))
    with pytest.raises(ValueError, match="unsupported version 4"):
        sched_file.read(path)


FLUSHER = r"""
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
/* an unprobed function that blocks in libc's fdatasync (no frame pointers there), not as a
   tail call: its frame is on the stack while the thread sleeps */
__attribute__((noinline)) int flush_log(int fd) {
  int r = (int)write(fd, "x", 1);
  r += fdatasync(fd);
  return r;
}
__attribute__((noinline)) long spin(long n) {
  volatile long x = 0;
  for (long i = 0; i < n; i++) x += i;
  return x;
}
int main(int argc, char **argv) {
  char go[8];
  if (argc < 2 || !fgets(go, sizeof go, stdin)) /* the recorder is attached: "go" */
    return 2;
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  long s = 0;
  for (int k = 0; k < 200; k++) { s += spin(1000000); s += flush_log(fd); }
  printf("%ld\n", s > 0);
  return 0;
}
"""


def test_stacks_name_the_function_that_called_a_libc_wait(recorder, tmp_path, build_dir):
    """--stacks (docs/recorder.md, "Stacks"): the sleeper's stack at each sleep and on-CPU
    samples, symbolized by `vprof stacks`. A sleep in libc's fdatasync, whose wrapper has no
    frame pointer, names flush_log (the program's function that called it), then main: the
    word at the stack pointer gives back the frame the walk skips. The spin loop is on CPU."""
    src = tmp_path / "flusher.c"
    src.write_text(FLUSHER)
    exe = tmp_path / "flusher"
    subprocess.run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer",
                    str(src), "-o", str(exe)], check=True)
    trace = tmp_path / "trace"
    trace.mkdir()
    run = Recording(recorder, exe, [tmp_path / "log"], trace / "sched.vpk",
                    extra=("--stacks", str(trace / "stacks.vpk"), "--sample-hz", "997"))
    run.go()
    status, stderr, _ = run.wait_recorder()
    assert status == 0, stderr
    assert (trace / "stacks.vpk").read_bytes()[:8] == b"VPROFSTK"
    assert list(trace.glob("*.stackmaps")), "the recorder copied the process's memory map"
    vprof = build_dir / "driver" / "vprof"
    r = subprocess.run([str(vprof), "stacks", str(trace), "--folded", "sleep"],
                       capture_output=True, text=True, check=True)
    top = r.stdout.splitlines()[0]
    assert ";main;flush_log;fdatasync " in top, r.stdout
    r = subprocess.run([str(vprof), "stacks", str(trace), "--folded", "cpu"],
                       capture_output=True, text=True, check=True)
    assert any(";main;spin " in line for line in r.stdout.splitlines()), r.stdout
    r = subprocess.run([str(vprof), "stacks", str(trace)], capture_output=True, text=True,
                       check=True)
    assert "at sleeps: where the threads blocked" in r.stdout, r.stdout
