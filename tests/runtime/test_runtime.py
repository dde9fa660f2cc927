"""End-to-end tests of libvprof_rt: small C programs run against the built runtime, their
trace directories read back with the tiny reader vpt.py."""
import array
import os
import pathlib
import subprocess

import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # any --import-mode
import vpt  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
R = vpt.REC


def kinds(stream):
    return [vpt.NAME.get(k, k) for k, _, _ in stream.records()]


# ------------------------------------------------------------------ basics

def test_plain_run_writes_header_records_labels_and_maps(tc, tmp_path):
    exe = tc.compile("emit")
    p = tc.run(exe, ["plain", 1000], trace=tmp_path)
    _, n, iv = p.stdout.split()
    (s,) = vpt.read_dir(tmp_path)
    assert s.version == 3 and s.header_size == 256 and s.record_size == 16
    assert s.clock_kind == 1 and 1e8 < s.hz < 1e11  # TSC on x86-64
    assert s.pid == s.tid and s.seq == 0 and s.flags & vpt.CLOSED
    assert s.features & 2  # frame depth
    assert s.dropped == 0 and s.count == 1003
    recs = s.records()
    assert [a for _, _, a in recs[:1000]] == list(range(1000))
    assert all(k == R["ENTER"] for k, _, _ in recs[:1000])
    ticks = [t for _, t, _ in recs]
    assert ticks == sorted(ticks) and ticks[0] >= s.base_ticks & vpt.TICKS_MASK
    (kb, tb, ab), (kl, tl, al), (ke, _, ae) = recs[1000:]
    assert (kb, kl, ke) == (R["INTERVAL_BEGIN"], R["LABEL"], R["INTERVAL_END"])
    assert tb == tl and ab == ae == int(iv, 16) and ab >> 40 == s.pid
    # tab and newline in label text are replaced by a space: one line per label
    assert vpt.labels(tmp_path, s.pid) == {al: "Parent label"}
    maps = (tmp_path / f"{s.pid}.maps").read_text()
    assert "libvprof_rt.so" in maps
    # the process's CPU time at exit: user and system ns, the planner's budget basis
    user, system = (int(v) for v in (tmp_path / f"{s.pid}.cpu").read_text().split("\t"))
    assert 0 <= user < 60e9 and 0 <= system < 60e9 and user + system > 0


def test_silent_by_default_and_verbose_on_request(tc, tmp_path):
    exe = tc.compile("emit")
    quiet = tc.run(exe, ["plain", 10], trace=tmp_path / "a")
    assert quiet.stderr == b""
    loud = tc.run(exe, ["plain", 10], trace=tmp_path / "b", env={"VPROF_VERBOSE": "1"})
    assert b"tracing to" in loud.stderr and b"exit:" in loud.stderr
    assert loud.stdout.split()[:2] == quiet.stdout.split()[:2]


def test_unusable_directory_turns_tracing_off_silently(tc, tmp_path):
    exe = tc.compile("emit")
    bad = "/proc/vprof-cannot-exist/trace"
    notes = {"TMPDIR": str(tmp_path)}  # its notes here, not in a /tmp other runs read
    p = tc.run(exe, ["plain", 100], trace=bad, env=notes)
    assert p.stderr == b"" and p.stdout.startswith(b"ok 100 ")
    v = tc.run(exe, ["plain", 100], trace=bad, env={**notes, "VPROF_VERBOSE": "1"})
    assert b"unusable" in v.stderr and b"tracing off" in v.stderr


def test_unusable_directory_leaves_a_note_for_the_driver(tc, tmp_path):
    """Silent in the program, but not unnoticed: one note per process in $TMPDIR naming the
    process, its user, the error and the directory (read by `vprof loop` / `vprof run`)."""
    exe = tc.compile("emit")
    notes = tmp_path / "tmp"
    notes.mkdir()
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    p = tc.run(exe, ["plain", 100], trace=blocker / "trace", env={"TMPDIR": str(notes)})
    assert p.stderr == b"" and p.stdout.startswith(b"ok 100 ")
    (note,) = notes.glob("vprof-unusable-trace-dir.*")
    pid, uid, err, where = note.read_text().split(" ", 3)
    assert note.name.endswith("." + pid) and int(uid) == os.getuid()
    assert int(err) == 20  # ENOTDIR
    assert where.strip() == str(blocker / "trace")


def test_disable_records_nothing(tc, tmp_path):
    exe = tc.compile("emit")
    p = tc.run(exe, ["plain", 100], trace=tmp_path / "t", env={"VPROF_DISABLE": "1"})
    assert p.stdout.startswith(b"ok 100 ") and p.stderr == b""
    assert not (tmp_path / "t").exists()


def test_bad_option_value_keeps_default_and_says_so_only_when_verbose(tc, tmp_path):
    exe = tc.compile("emit")
    p = tc.run(exe, ["plain", 10], trace=tmp_path / "a", env={"VPROF_MAX_THREAD_MB": "lots"})
    assert p.stderr == b"" and vpt.read_dir(tmp_path / "a")[0].count == 13
    v = tc.run(exe, ["plain", 10], trace=tmp_path / "b",
               env={"VPROF_MAX_THREAD_MB": "lots", "VPROF_VERBOSE": "1"})
    assert b'VPROF_MAX_THREAD_MB="lots"' in v.stderr


def test_full_windows_are_appended_without_losing_records(tc, tmp_path):
    exe = tc.compile("emit")
    n = 100000  # 1.6 MB through a 16 KiB window: ~200 appends of its halves
    tc.run(exe, ["plain", n], trace=tmp_path, env={"VPROF_WINDOW_KB": "16"})
    (s,) = vpt.read_dir(tmp_path)
    assert s.count == n + 3 and s.dropped == 0
    assert list(s.args[:n]) == list(range(n))
    assert s.window_records == 1024 and s.committed % 512 == 0 and s.committed > 97 * 1024
    assert s.path.stat().st_size == s.data_offset + 16 * s.committed


def test_making_room_is_charged_to_the_profilers_own_frame(tc, tmp_path):
    # without the drain thread, every append of a full half of the window (and the
    # stream's opening) is followed by a frame of the runtime's own site spanning the stall,
    # after the record that waited for the room, so that the analyzer charges it to
    # "(profiler)" and not to the function it interrupted
    exe = tc.compile("emit")
    n = 20000  # through a 16 KiB window (halves of 512 records): about 40 appends
    own = {"VPROF_WINDOW_KB": "16", "VPROF_DRAIN": "0"}
    tc.run(exe, ["plain", n], trace=tmp_path, env=own)
    (s,) = vpt.read_dir(tmp_path)
    assert s.count == n + 3 and list(s.args[:n]) == list(range(n))
    flushes = s.committed // (s.window_records // 2)
    assert flushes >= 38 and len(s.profiler) == flushes + 1, (flushes, len(s.profiler))
    ticks = [t for _, t, _ in s.records()]  # the program's records, in order
    assert all(0 < to - frm < s.hz for frm, to, _, _ in s.profiler)  # a stall, under a second
    depths = {d for _, _, d, _ in s.profiler}
    assert len(depths) == 1, depths  # one runtime frame, whatever the program's depth
    # each stall lies right after the record that waited for room, before the next one
    for frm, to, _, after in s.profiler:
        assert ticks[after - 1] <= frm and (after == len(ticks) or to <= ticks[after]), after
    assert s.profiler[0][3] == 1  # the stream's opening, after the first record
    # a BEGIN that waits for room keeps its LABEL right behind it: the frame follows both
    m = 510  # the first half holds ENTER 0, the opening's frame and 509 more
    trace = tmp_path / "begin"
    tc.run(exe, ["plain", m], trace=trace, env=own)
    (b,) = vpt.read_dir(trace)
    assert kinds(b)[m:] == ["INTERVAL_BEGIN", "LABEL", "INTERVAL_END"]
    assert [after for _, _, _, after in b.profiler] == [1, m + 2]


@pytest.mark.parametrize("killed", [1, 0])
def test_tsc_frequency_agrees_with_clock_monotonic(tc, tmp_path, killed):
    # killed: the start-up calibration stays in the header; else the exit refinement.
    # Several runs: a calibration skewed by preemption on a loaded machine must not pass.
    exe = tc.compile("emit")
    for i in range(4):
        trace = tmp_path / f"{i}"
        p = tc.run(exe, ["clock", killed], trace=trace, check=not killed)
        elapsed = int(p.stdout) * 1e-9
        (s,) = vpt.read_dir(trace)
        (_, t1, _), (_, t2, _) = s.records()
        dt = ((t2 - t1) & vpt.TICKS_MASK) / s.hz
        assert 0.030 * 0.98 <= dt <= elapsed * 1.02, (dt, elapsed, s.hz)


# ------------------------------------------------------------------ safety

def test_sigkill_leaves_every_record_readable(tc, tmp_path):
    exe = tc.compile("emit")
    n = 300001  # several windows, odd count
    p = tc.run(exe, ["kill", n], trace=tmp_path, env={"VPROF_WINDOW_KB": "64"}, check=False)
    assert p.returncode == -9
    (s,) = vpt.read_dir(tmp_path)
    assert not s.flags & vpt.CLOSED  # killed, not closed
    assert s.count == n and s.dropped == 0
    assert list(s.args[:n]) == list(range(n))


def test_the_drain_takes_part_in_a_change_of_ids(tc, tmp_path):
    # setuid/setgid in a threaded process signal every thread (glibc's SIGSETXID); the
    # drain thread blocks the program's signals but not that one, or the call would hang
    exe = tc.compile("emit")
    n = 20000  # five halves of a 64 KiB window: the drain runs before the ids change
    p = tc.run(exe, ["setxid", n], trace=tmp_path, env={"VPROF_WINDOW_KB": "64"}, timeout=30)
    assert p.stdout.decode().split() == ["drain", "1"]
    (s,) = vpt.read_dir(tmp_path)
    assert s.count == 2 * n and list(s.args) == list(range(2 * n))


def test_fork_child_gets_own_stream_and_parent_is_untouched(tc, tmp_path):
    exe = tc.compile("emit")
    n = 50000
    p = tc.run(exe, ["fork", n], trace=tmp_path, env={"VPROF_WINDOW_KB": "64"})
    parent_pid, child_pid = map(int, p.stdout.split())
    streams = vpt.read_dir(tmp_path)
    assert sorted(s.pid for s in streams) == sorted([parent_pid, child_pid])
    parent = next(s for s in streams if s.pid == parent_pid)
    child = next(s for s in streams if s.pid == child_pid)
    assert child.flags & vpt.FORK_CHILD and not parent.flags & vpt.FORK_CHILD
    assert child.ppid == parent_pid and child.seq == 0 and child.tid == child_pid
    assert parent.flags & vpt.CLOSED and child.flags & vpt.CLOSED
    pk = kinds(parent)
    assert pk[:2] == ["INTERVAL_BEGIN", "LABEL"] and pk[-1] == "INTERVAL_END"
    assert list(parent.args[2:2 + 2 * n]) == list(range(2 * n))  # before and after fork
    assert parent.count == 2 * n + 3
    ck = kinds(child)
    assert ck[:2] == ["INTERVAL_BEGIN", "LABEL"] and ck[-1] == "INTERVAL_END"
    assert list(child.args[2:2 + n // 2]) == list(range(10**9, 10**9 + n // 2))
    assert child.args[0] >> 40 == child_pid  # interval ids unique across processes
    # the label id the child inherited resolves in the child's own labels file
    label = child.args[1]
    assert vpt.labels(tmp_path, child_pid)[label] == "Parent label"
    assert vpt.labels(tmp_path, parent_pid)[label] == "Parent label"
    assert (tmp_path / f"{child_pid}.maps").exists()


@pytest.mark.parametrize("limit_mb", [0, 4])
def test_stress_64_threads_every_record_accounted_for(tc, tmp_path, limit_mb):
    exe = tc.compile("stress")
    threads, n = 64, 1_000_000
    shm = pathlib.Path("/dev/shm")
    trace = (shm if shm.is_dir() else tmp_path) / f"vprof-stress-{os.getpid()}-{limit_mb}"
    try:
        # no CLOCK records (clock samples, at most one a second): only the probes' own
        p = tc.run(exe, [threads, n], trace=trace,
                   env={"VPROF_MAX_THREAD_MB": str(limit_mb), "VPROF_CLOCK_SAMPLE_MS": "0"},
                   timeout=600)
        assert p.stderr == b"" and p.stdout == b"done\n"  # drops are silent too
        streams = vpt.read_dir(trace)
        assert len(streams) == threads
        seen = set()
        dropped_total = 0
        for s in streams:
            idx = s.args[0] >> 32
            seen.add(idx)
            assert s.count + s.dropped == n, (s.path, s.count, s.dropped)
            expect = array.array("Q", range(idx << 32, (idx << 32) + s.count))
            assert s.args[:s.count] == expect, s.path
            assert s.flags & vpt.CLOSED
            dropped_total += s.dropped
        assert seen == set(range(threads))
        if limit_mb:
            assert all(16 * (s.committed + s.window_records) <= limit_mb << 20 for s in streams)
            assert dropped_total > 0
        else:
            assert dropped_total == 0
    finally:
        subprocess.run(["rm", "-rf", str(trace)], check=False)


def test_longjmp_out_of_probed_functions(tc, tmp_path):
    for opt in ("-O0", "-O2"):
        exe = tc.compile("longjmp", extra=(opt,))
        trace = tmp_path / opt
        p = tc.run(exe, trace=trace)
        assert p.stdout == b"42\n"  # other(21 * 1 ... ) = longjmp value 21 doubled
        (s,) = vpt.read_dir(trace)
        recs = [(vpt.NAME[k], a & 0xFFFFFFFF, a >> 32) for k, _, a in s.records()]
        assert [(k, site) for k, site, _ in recs] == [
            ("ENTER", 1), ("ENTER", 2), ("ENTER", 3), ("ENTER", 4), ("EXIT", 4),
            ("EXIT", 1)]
        depth = {(k, site): d for k, site, d in recs}

        def deeper(a, b):  # (int32)(a - b) > 0
            return ((a - b) & 0xFFFFFFFF) not in (0,) and ((a - b) & 0xFFFFFFFF) < 2**31

        assert deeper(depth["ENTER", 2], depth["ENTER", 1])
        assert deeper(depth["ENTER", 3], depth["ENTER", 2])
        assert deeper(depth["ENTER", 4], depth["ENTER", 1])
        assert depth["EXIT", 4] == depth["ENTER", 4] and depth["EXIT", 1] == depth["ENTER", 1]
        # The depth rule of docs/trace-format.md, with the site table of this program
        # (every site is the body of a different function): an ENTER closes open frames
        # deeper than it, and body frames of other functions at the same depth; an EXIT
        # pops down to its own frame.
        stack, closed, parent = [], [], {}
        for k, site, d in recs:
            if k == "ENTER":
                while stack and (deeper(stack[-1][1], d) or stack[-1][1] == d):
                    closed.append(stack.pop()[0])
                parent[site] = stack[-1][0] if stack else None
                stack.append((site, d))
            else:
                while stack[-1] != (site, d):
                    closed.append(stack.pop()[0])
                stack.pop()
        assert sorted(closed) == [2, 3] and parent[4] == 1 and not stack


# ------------------------------------------------------------------ sync events

def check_blocked_acquires_follow_a_wait(streams, objs):
    """At VPROF_SYNC=1 every ACQUIRE record ends a WAIT on the same object and thread."""
    waits = {"LOCK_ACQUIRE": "LOCK_WAIT", "SEM_ACQUIRE": "SEM_WAIT",
             "RWLOCK_ACQUIRE_RD": "RWLOCK_WAIT_RD", "RWLOCK_ACQUIRE_WR": "RWLOCK_WAIT_WR"}
    for s in streams:
        open_wait = {}
        for k, _, a in s.records():
            name = vpt.NAME.get(k, k)
            if a not in objs:
                continue
            if name in waits.values():
                open_wait[a] = name
            elif name in waits:
                assert open_wait.pop(a, None) == waits[name], (s.tid, name, hex(a))


@pytest.mark.parametrize("level", ["1", "2"])
def test_mutex_ping_pong_wakeup_pairs(tc, tmp_path, level):
    exe = tc.compile("pingpong")
    rounds = 20
    p = tc.run(exe, [rounds], trace=tmp_path, env={"VPROF_SYNC": level})
    m = int(p.stdout, 16)
    streams = vpt.read_dir(tmp_path)
    events = []
    for s in streams:
        assert bool(s.features & 4) == (level == "1")  # SYNC_EDGES_ONLY
        events += [(t, s.tid, vpt.NAME[k]) for k, t, a in s.records() if a == m]
    events.sort()
    if level == "2":  # every call: strict acquire/release alternation
        owners = [(tid, k) for _, tid, k in events if k != "LOCK_WAIT"]
        assert len(owners) == 2 * rounds
        assert [k for _, k in owners] == ["LOCK_ACQUIRE", "LOCK_RELEASE"] * rounds
        for r in range(rounds):
            acq, rel = owners[2 * r], owners[2 * r + 1]
            assert acq[0] == rel[0]  # released by the thread that acquired it
            if r:
                assert acq[0] != owners[2 * r - 1][0]  # ownership alternates
    else:  # edge-forming records only: no acquisition without a wait
        check_blocked_acquires_follow_a_wait(streams, {m})
        # round 0 does not wait: its acquisition is absent
        assert sum(k == "LOCK_ACQUIRE" for _, _, k in events) < rounds
    # wake-up pairs: a blocked acquire (WAIT then ACQUIRE on one thread) is woken by the
    # latest release before it, which is on the other thread and after the wait began
    pairs = 0
    last_release, last_wait = None, {}
    for t, tid, k in events:
        if k == "LOCK_RELEASE":
            last_release = (t, tid)
        elif k == "LOCK_WAIT":
            last_wait[tid] = t
        elif k == "LOCK_ACQUIRE" and tid in last_wait:
            waited = last_wait.pop(tid)
            assert last_release and last_release[1] != tid
            assert waited < last_release[0] < t
            pairs += 1
    assert pairs >= rounds // 2  # the next owner is blocked (2 ms pause) nearly always


def syncops_run(tc, tmp_path, level):
    exe = tc.compile("syncops")
    traced = tc.run(exe, trace=tmp_path / "t", env={"VPROF_SYNC": level})
    plain = tc.run(exe, trace=tmp_path / "off", env={"VPROF_DISABLE": "1"})
    out = traced.stdout.decode().splitlines()
    # return codes and errno are the same with and without the interposer
    assert out[1:] == plain.stdout.decode().splitlines()[1:]
    res = dict(line.rsplit(" ", 1) if " errno" not in line else (line, "") for line in out[1:])
    assert "sem_trywait -1 errno 11 (EAGAIN=11)" in out
    assert "sem_timedwait -1 errno 110" in out and "sem_trywait 0 errno 0" in out
    assert res["unlock-unowned"] == "1" and res["relock"] == "35" and res["trylock"] == "16"
    obj = {k: int(v, 16) for k, v in (f.split("=") for f in out[0].split()[1:])}
    streams = vpt.read_dir(tmp_path / "t")
    main = next(s for s in streams if s.tid == s.pid)
    worker = next(s for s in streams if s.tid != s.pid)
    names = {v: k for k, v in obj.items()}

    def seq(s):
        return [(vpt.NAME[k], names.get(a, "?"), t) for k, t, a in s.records() if a in names]

    return streams, main, worker, seq, names


def test_condvar_semaphore_rwlock_events_and_unchanged_results(tc, tmp_path):
    """VPROF_SYNC=2: every call is recorded (the documented full sequences)."""
    streams, main, worker, seq, _ = syncops_run(tc, tmp_path, "2")
    w = [(k, o) for k, o, _ in seq(worker)]
    assert w[:6] == [("LOCK_ACQUIRE", "m"), ("LOCK_RELEASE", "m"),
                     ("COND_WAIT_BEGIN", "c"), ("COND_WAIT_END", "c"),
                     ("LOCK_ACQUIRE", "m"), ("LOCK_RELEASE", "m")]
    assert w[6:] in ([("SEM_WAIT", "s"), ("SEM_ACQUIRE", "s")], [("SEM_ACQUIRE", "s")])
    wt = {k + o: t for k, o, t in seq(worker)}
    mt = {k + o: t for k, o, t in seq(main)}
    assert wt["COND_WAIT_BEGINc"] < mt["COND_SIGNALc"] < wt["COND_WAIT_ENDc"]
    assert mt["SEM_POSTs"] < wt["SEM_ACQUIREs"]
    if "SEM_WAITs" in wt:
        assert wt["SEM_WAITs"] < mt["SEM_POSTs"]
    mk = [(k, o) for k, o, _ in seq(main) if k != "LOCK_WAIT"]
    assert mk[:3] == [("LOCK_ACQUIRE", "m"), ("COND_SIGNAL", "c"), ("LOCK_RELEASE", "m")]
    rest = mk[3:]
    assert rest == [
        ("SEM_POST", "s"),
        ("LOCK_ACQUIRE", "m"), ("LOCK_RELEASE", "m"), ("COND_WAIT_BEGIN", "ct"),
        ("COND_WAIT_TIMEOUT", "ct"), ("LOCK_ACQUIRE", "m"), ("LOCK_RELEASE", "m"),
        ("COND_SIGNAL", "ct"),  # unwaited signal: recorded at level 2
        ("SEM_WAIT", "st"),  # sem_timedwait that timed out: WAIT without ACQUIRE
        ("SEM_POST", "st"), ("SEM_ACQUIRE", "st"),
        ("RWLOCK_ACQUIRE_RD", "rw"), ("RWLOCK_RELEASE", "rw"),  # failed trywrlock: none
        ("RWLOCK_ACQUIRE_WR", "rw"), ("RWLOCK_RELEASE", "rw")]
    assert main.features & 1 and worker.features & 1
    assert not (main.features & 4 or worker.features & 4)


def test_sync_level_1_writes_only_edge_forming_records(tc, tmp_path):
    """VPROF_SYNC=1 (the default): no uncontended acquisitions, no release, post or signal
    that found no waiter; the wake-ups themselves are all there."""
    streams, main, worker, seq, names = syncops_run(tc, tmp_path, "1")
    check_blocked_acquires_follow_a_wait(streams, set(names))
    w = [(k, o) for k, o, _ in seq(worker) if (k, o) != ("LOCK_RELEASE", "m")]
    # the worker's unlock after its cond wait is recorded (glibc re-locks a woken waiter's
    # mutex in "waiters may exist" state); its first unlock (inside cond_wait) only if
    # main was already blocked on m; both filtered here
    assert w[:2] == [("COND_WAIT_BEGIN", "c"), ("COND_WAIT_END", "c")]
    assert w[2:] in ([("SEM_WAIT", "s"), ("SEM_ACQUIRE", "s")], [])
    wt = {k + o: t for k, o, t in seq(worker)}
    mt = {k + o: t for k, o, t in seq(main)}
    assert wt["COND_WAIT_BEGINc"] < mt["COND_SIGNALc"] < wt["COND_WAIT_ENDc"]
    if "SEM_WAITs" in wt:  # the worker blocked in sem_wait: the post that woke it is there
        assert wt["SEM_WAITs"] < mt["SEM_POSTs"] < wt["SEM_ACQUIREs"]
    else:
        assert "SEM_POSTs" not in mt
    mk = [(k, o) for k, o, _ in seq(main) if o != "m"]
    assert mk == [("COND_SIGNAL", "c")] + [("SEM_POST", "s")] * ("SEM_WAITs" in wt) + [
        ("COND_WAIT_BEGIN", "ct"), ("COND_WAIT_TIMEOUT", "ct"),  # no signal: nobody waited
        ("SEM_WAIT", "st"),  # the timed-out wait; the later post found no waiter
        ("RWLOCK_RELEASE", "rw"), ("RWLOCK_RELEASE", "rw")]  # rwlock releases: always
    assert all(k in ("LOCK_WAIT", "LOCK_ACQUIRE", "LOCK_RELEASE")
               for k, o, _ in seq(main) if o == "m")
    assert main.features & 5 == 5 and worker.features & 5 == 5


@pytest.mark.parametrize("level", ["1", "2"])
def test_mutex_kinds_recorded_at_level_1_only_when_the_lock_word_is_not_read(tc, tmp_path,
                                                                            level):
    exe = tc.compile("kinds")
    p = tc.run(exe, trace=tmp_path, env={"VPROF_SYNC": level})
    objs = {int(a, 16): n for n, a in (l.split() for l in p.stdout.decode().splitlines())
            if n not in ("skip", "lockfail")}
    assert "lockfail" not in p.stdout.decode()
    (s,) = vpt.read_dir(tmp_path)
    got = {}
    for k, _, a in s.records():
        if a in objs:
            got.setdefault(objs[a], []).append(vpt.NAME[k])
    if level == "2":
        for n in objs.values():
            if n == "cond":
                assert got[n] == ["COND_SIGNAL", "COND_BROADCAST"]
            elif n == "sem":
                assert got[n] == ["SEM_POST", "SEM_ACQUIRE"]
            elif n == "recursive":
                assert got[n] == ["LOCK_ACQUIRE"] * 2 + ["LOCK_RELEASE"] * 2
            else:
                assert got[n] == ["LOCK_ACQUIRE", "LOCK_RELEASE"], n
    else:
        # normal, recursive, errorcheck, adaptive: lock word read, nobody waits -> nothing;
        # PI and robust mutexes: the release is written whatever the state
        assert {n: k for n, k in got.items()} == {
            n: ["LOCK_RELEASE"] for n in ("pi", "robust") if n in objs.values()}


def test_sync_level_option_values(tc, tmp_path):
    exe = tc.compile("pingpong")
    for value, feat in (("on", 5), ("2", 1), ("yes", 5)):
        d = tmp_path / value
        tc.run(exe, [2], trace=d, env={"VPROF_SYNC": value})
        assert {s.features & 5 for s in vpt.read_dir(d)} == {feat}
    p = tc.run(exe, [2], trace=tmp_path / "bad", env={"VPROF_SYNC": "3", "VPROF_VERBOSE": "1"})
    assert b"VPROF_SYNC" in p.stderr  # invalid: keeps the default, says so when verbose
    assert {s.features & 5 for s in vpt.read_dir(tmp_path / "bad")} == {5}


def test_sync_recording_can_be_turned_off(tc, tmp_path):
    exe = tc.compile("pingpong")
    tc.run(exe, [4], trace=tmp_path, env={"VPROF_SYNC": "0"})
    assert not list(tmp_path.glob("*.vpt"))  # no probes in it, so no stream at all


# ------------------------------------------------------------------ headers

def undefined_symbols(obj):
    out = subprocess.run(["nm", "-u", str(obj)], capture_output=True, text=True, check=True)
    return [line.split()[-1] for line in out.stdout.splitlines() if line.strip()]


@pytest.mark.parametrize("src,cc", [("annotated.c", "cc"), ("annotated_cpp.cpp", "c++")])
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_annotations_compile_to_nothing_unless_enabled(tc, tmp_path, src, cc, opt):
    def build(defs):
        obj = tmp_path / f"{src}{len(defs)}.o"
        subprocess.run([cc, opt, "-c", *tc.includes, *defs, str(HERE / "programs" / src),
                        "-o", str(obj)], check=True)
        return obj

    off = undefined_symbols(build([]))
    assert not [s for s in off if "vprof" in s.lower()], off
    on = undefined_symbols(build(["-DVPROF_ENABLE"]))  # the control: references appear
    assert any(s.startswith("vprof_interval_begin") for s in on), on


@pytest.mark.parametrize("cc,args", [
    ("cc", ["-std=c99", "-pedantic", "-Werror", "-Wall", "-Wextra",
            "-Wdeclaration-after-statement"]),
    ("c++", ["-std=c++17", "-pedantic", "-Werror", "-Wall", "-Wextra"]),
])
def test_public_headers_are_strict_c99_and_cxx17(tc, tmp_path, cc, args):
    src = "headers.c" if cc == "cc" else "headers_cpp.cpp"
    for enable in ([], ["-DVPROF_ENABLE"]):
        subprocess.run([cc, *args, *enable, "-c", *tc.includes, str(HERE / "programs" / src),
                        "-o", str(tmp_path / "h.o")], check=True)


# ------------------------------------------------------------------ processes

def maps_key(trace, pid, addr):
    """(device, inode, file offset) of an address, from <pid>.maps."""
    for line in (trace / f"{pid}.maps").read_text().splitlines():
        f = line.split()
        start, end = (int(x, 16) for x in f[0].split("-"))
        if start <= addr < end:
            return f[3], int(f[4]), int(f[2], 16) + addr - start
    raise AssertionError(f"{addr:x} not mapped in {pid}.maps")


def test_process_shared_mutex_matches_across_processes(tc, tmp_path):
    exe = tc.compile("shared")
    trace = tmp_path / "trace"
    p = tc.run(exe, [tmp_path / "shm.bin"], trace=trace)
    who = {w: (int(pid), int(addr, 16)) for w, pid, addr in
           (line.split() for line in p.stdout.decode().splitlines())}
    (ppid, pa), (cpid, ca) = who["parent"], who["child"]
    assert pa != ca  # two mappings, two addresses ...
    key = maps_key(trace, ppid, pa)
    assert key == maps_key(trace, cpid, ca) and key[1] != 0  # ... one object
    streams = {s.pid: s for s in vpt.read_dir(trace)}
    parent = [(vpt.NAME[k], t) for k, t, a in streams[ppid].records() if a == pa]
    child = [(vpt.NAME[k], t) for k, t, a in streams[cpid].records() if a == ca]
    # level 1 (default): the parent's uncontended lock is not recorded; its unlock is,
    # since the child is blocked on the mutex
    assert [k for k, _ in parent] == ["LOCK_RELEASE"]
    assert [k for k, _ in child] == ["LOCK_WAIT", "LOCK_ACQUIRE", "LOCK_RELEASE"]
    # one machine-wide clock: the parent's release lies between the child's wait and
    # acquire (the wake-up edge across processes)
    assert child[0][1] < parent[-1][1] < child[1][1]


def test_exec_keeps_the_streams_written_before_it(tc, tmp_path):
    exe = tc.compile("emit")
    p = tc.run(exe, ["exec", 500], trace=tmp_path)
    assert p.stdout.startswith(b"ok 500 ")
    streams = vpt.read_dir(tmp_path)
    assert len(streams) == 2 and streams[0].pid == streams[1].pid
    before, after = streams
    assert (before.seq, after.seq) == (0, 1)
    assert before.count == 500 and not before.flags & vpt.CLOSED  # image replaced
    assert after.count == 503 and after.flags & vpt.CLOSED
