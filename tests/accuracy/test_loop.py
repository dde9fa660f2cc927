"""The accuracy suite through the whole product: for every program of
benchmarks/accuracy/manifest.toml, `vprof init` + `vprof loop` in a fresh project (the
program built through vprof's compiler wrappers, the workload printing the realised truth),
then the final iteration's top-1 factor must name the planted cause and its share must be
within ±5 percentage points of the share the same run realised (truth.txt of that run).

A run in which the program itself did not realise its planted cause (its measured share
off the analytic one, or below the manifest's min_share: an overloaded machine) is
repeated, up to four times, and the test is skipped (with the realised shares) if none
did: the precondition failed, not the profiler; see realised_the_plant. A program whose
cause lies behind a wait only the kernel's scheduler wake-ups explain (`needs =
["kernel_wakeups"]`) is skipped, saying why and what the loop named, when the analysed
trace has no sched.vpk.

Iterations per program are printed and appended (one JSON line per program) to
$VPROF_ACCURACY_LOG when that variable is set (the RESULTS.md table is made from it).
$VPROF_ACCURACY_RANKING (e.g. "vprofiler") runs every loop with that `--ranking`, to compare
the rankings (the bar is the default's; VProfiler's static score is expected to fail the
traps deepdecoy and callbackscc, which test_vprofiler_ranking_falls_for_the_static_traps
holds).
"""
import json
import os
import pathlib
import re
import sqlite3
import subprocess
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import programs  # noqa: E402

PROGRAMS = programs.load_programs()
TOLERANCE = 0.05  # share of Var(L), absolute
DEPTH, K, ITERATIONS = 1, 3, 6
DOMINANT = 0.5  # a variance term above half of Var(L) is the largest one
ATTEMPTS = 4  # loops per program until one realises its planted cause (realised_the_plant)
MAX_CPU_WAIT = 0.10  # of the workers' time runnable but not running (realised_the_plant)


def factor_names_cause(db: sqlite3.Connection, run: int, factor: dict, program) -> bool:
    """Whether a stored factor *names* the program's planted cause.

    Each side of the factor is a node of the variance tree. A side names function F when
    - its node is F's body site (the term is Var(T) or Var(B), the body's self time), or
    - its node is a call site whose callee is F (the call of F), or
    - its node is a call site of a function outside the program (libc: no body in the
      call graph) made inside F: such a call is a statement of F, the deepest code the
      user can change (the share check below keeps this honest: the call must carry
      F's whole variance, within 5 pp, or, where the program timed that call on its own
      (a `call:` line), the call's realised share).
    A node counts in any calling context: under the interval's own frames or under a wait
    node (the waker's work reached through a wake-up edge).
    kind "var": a variance factor with one side naming the cause. kind "cov": a
    covariance factor whose two sides name the two causes (in either order).
    """
    def names(node: int, body: bool) -> set:
        row = db.execute(
            "SELECT t.kind, t.site, t.function FROM tree_nodes t WHERE t.run = ? AND "
            "t.label = '' AND t.node = ?", (run, node)).fetchone()
        if row is None or row[0] != "site":
            return set()
        kind, site, function = row
        site_row = db.execute(
            "SELECT s.kind, f.name, ce.name, ce.defined FROM sites s JOIN functions f ON "
            "f.id = s.function LEFT JOIN functions ce ON ce.id = s.callee WHERE s.id = ?",
            (site,)).fetchone()
        if site_row is None:
            return set()
        site_kind, caller, callee, callee_defined = site_row
        if site_kind == "body":
            return {caller}
        out = set()
        if callee is not None and not body:
            out.add(callee)
        if callee is None or not callee_defined:
            out.add(caller)  # an external call: a statement of its caller
        return out

    a = names(factor["a"], factor["a_body"])
    if program.kind in ("var", "group"):  # group: the function carrying most of it
        return factor["kind"] == "var" and program.cause[0] in a
    if factor["kind"] != "cov":
        return False
    b = names(factor["b"], factor["b_body"])
    x, y = program.cause
    return (x in a and y in b) or (y in a and x in b)


def outside_callee(db: sqlite3.Connection, run: int, node: int):
    """The callee's name when tree node `node` is a call of a function outside the program
    (no body in the call graph), else None."""
    row = db.execute(
        "SELECT ce.name, ce.defined FROM tree_nodes t JOIN sites s ON s.id = t.site "
        "JOIN functions ce ON ce.id = s.callee WHERE t.run = ? AND t.label = '' AND t.node = ? "
        "AND t.kind = 'site' AND s.kind != 'body'", (run, node)).fetchone()
    return row[0] if row and not row[1] else None


def reference_share(db: sqlite3.Connection, run: int, factor: dict, truth: dict) -> float:
    """The realised share the factor must match: the program's `share`; for a factor on a
    call the program timed on its own (a `call:` line, alloc's memset), that call's share;
    for programs that report the cause in its two calling contexts (convoy, customlock,
    rwlock), the share of the context the factor's node lies in: under a wait node ->
    share_waker, else share_self."""
    calls = truth.get("call_shares", {})
    callee = outside_callee(db, run, factor["a"]) if calls and not factor["a_body"] else None
    if callee in calls:
        return calls[callee]
    if "share_waker" not in truth:
        return truth["share"]
    path = db.execute("SELECT path FROM tree_nodes WHERE run = ? AND label = '' AND node = ?",
                      (run, factor["a"])).fetchone()[0]
    return truth["share_waker"] if "/wait:" in path else truth["share_self"]


def answer_place(db: sqlite3.Connection, run: int) -> dict:
    """The run's answer for all intervals: the places table's first row (the analyzer's
    Answer, docs/analyzer.md "The answer")."""
    name, share = db.execute("SELECT name, share FROM places WHERE run = ? AND label = '' "
                             "ORDER BY rank LIMIT 1", (run,)).fetchone()
    return {"name": name, "share": share}


def run_loop(program, project: pathlib.Path, vprof: pathlib.Path, seed: int = 1,
             loop_args=()) -> dict:
    """init + loop in `project` (the workload run with --seed `seed`); returns the final
    run's facts."""
    if program.defaults:  # what the README's recipe gives a new user: vprof's own defaults
        program.write_project(project, depth=None, k=None, iterations=None, roots=False,
                              extra_args=["--seed", str(seed)])
        roots = []
    else:
        program.write_project(project, depth=DEPTH, k=K, iterations=ITERATIONS,
                              extra_args=["--seed", str(seed)])
        roots = [a for r in program.roots for a in ("--root", r)]
    t0 = time.monotonic()
    init = subprocess.run([str(vprof), "-C", str(project), "init", *roots],
                          capture_output=True, text=True, timeout=300)
    assert init.returncode == 0, init.stderr
    loop = subprocess.run([str(vprof), "-C", str(project), "loop", *loop_args],
                          capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - t0
    assert loop.returncode == 0, loop.stderr[-3000:]
    # the loop ends with the answer for all intervals and the path of the whole report
    assert "where the variance comes from, by place" in loop.stdout, loop.stdout[-2000:]
    assert "the whole report" in loop.stdout and "variance tree (" not in loop.stdout
    assert list((project / ".vprof" / "reports").glob("iter-*.summary.txt"))
    db = sqlite3.connect(project / ".vprof" / "vprof.db")
    run, iteration = db.execute(
        "SELECT id, iteration FROM analysis_runs ORDER BY id DESC LIMIT 1").fetchone()
    cols = ["rank", "key", "kind", "a", "a_body", "b", "b_body", "name", "share"]
    rows = db.execute(f"SELECT {', '.join(cols)} FROM factors WHERE run = ? AND label = '' "
                      "ORDER BY rank LIMIT 20", (run,)).fetchall()
    factors = [dict(zip(cols, r)) for r in rows]
    out = programs.Program.read_output(project) or ""
    truth = programs.parse_kv_line(out, "truth")
    load = programs.parse_kv_line(out, "load")
    if truth is not None and load and load.get("cpu_wait") is not None:
        truth = {**truth, "cpu_wait": load["cpu_wait"]}
    call = programs.parse_kv_line(out, "call")
    if truth is not None and call:
        truth = {**truth, "call_shares": {call["callee"]: call["share"]}}
    tail = programs.parse_kv_line(out, "tail") if program.tail_cause else None
    if truth is not None and tail:  # the stall's and the steady cause's realised excesses
        truth = {**truth, "tail_excess_us": tail["excess_us"],
                 "steady_excess_us": tail["steady_excess_us"]}
    stop = [l for l in loop.stderr.splitlines() if "stopped after" in l]
    warnings = [l for l in loop.stderr.splitlines() if "warning" in l]
    # the final iteration's report: its informational notes (not repeated by the loop)
    report = json.loads((project / ".vprof" / "reports" / f"iter-{iteration}.json").read_text())
    # reports name the trace relative to the project, never by this machine's absolute path
    assert not report["trace_dir"].startswith("/"), report["trace_dir"]
    assert (project / report["trace_dir"]).is_dir(), report["trace_dir"]
    return {"db": db, "run": run, "iterations": iteration + 1, "factors": factors,
            "truth": truth, "seconds": seconds, "stop": stop[-1] if stop else "",
            "warnings": warnings, "notes": report["notes"], "report": report,
            "trace_dir": project / report["trace_dir"], "stderr": loop.stderr}


def skip_without_kernel_wakeups(program, res: dict) -> None:
    """Skips a program whose cause lies behind a wait only the kernel's scheduler wake-ups
    explain (manifest `needs = ["kernel_wakeups"]`) when the analysed trace has no sched.vpk
    (the recorder did not run: not built, not privileged, not started): such a run cannot
    say anything about vprof. The reason names the trace directory, what the loop said
    about the recorder and what the loop named without the kernel's edges (also appended
    to $VPROF_ACCURACY_LOG)."""
    if programs.KERNEL_WAKEUPS not in program.needs:
        return
    trace = pathlib.Path(res["trace_dir"])
    if (trace / programs.SCHED_FILE).exists():
        return
    said = [l.strip() for l in res["stderr"].splitlines()
            if re.search(r"sched|recorder|kernel|wake-up", l, re.IGNORECASE)]
    top = res["factors"][0] if res["factors"] else None
    record = {"program": program.name, "skipped": f"no {programs.SCHED_FILE}",
              "top_factor": top["name"] if top else None,
              "share": round(top["share"], 4) if top else None,
              "truth": round(res["truth"]["share"], 4), "iterations": res["iterations"]}
    print(f"\naccuracy-loop: {json.dumps(record)}")
    if os.environ.get("VPROF_ACCURACY_LOG"):
        with open(os.environ["VPROF_ACCURACY_LOG"], "a") as log:
            log.write(json.dumps(record) + "\n")
    named = f"{top['name']} at {top['share']:.3f}" if top else "no factor"
    pytest.skip(f"{program.name} needs the kernel's wake-ups ({program.wait} is a wait no "
                f"interposer sees), but the analysed trace {trace} has no "
                f"{programs.SCHED_FILE}: " + ("; ".join(said[-3:]) or
                                               "the loop said nothing about a recorder")
                + f". Without them the loop named {named} (realised share of "
                f"{program.cause[0]}: {res['truth']['share']:.3f})")


@pytest.fixture(scope="session")
def vprof_tools(build_dir):
    """The driver and the compiler wrappers, built in the test's tree."""
    subprocess.run(["cmake", "--build", str(build_dir), "--target", "vprof", "vprof-cc",
                    "vprof_rt"], check=True, capture_output=True, text=True)
    vprof = build_dir / "driver" / "vprof"
    assert vprof.exists(), vprof
    return vprof


def chain_functions(db: sqlite3.Connection, run: int, node: int) -> set:
    """The functions of the run's tree nodes from the root down to `node` (all intervals)."""
    out = set()
    while node is not None:
        row = db.execute("SELECT parent, function FROM tree_nodes WHERE run = ? AND label = '' "
                         "AND node = ?", (run, node)).fetchone()
        if row is None:
            break
        node, function = row
        if function is not None:
            out.add(function)
    return out


def deepest_answer(db: sqlite3.Connection):
    """The planner's answer rule, read back from the workspace: each analysed iteration's
    best-ranked place (not a wait, not the time outside probed functions) carrying >= 10 % of
    Var(L); of two, the one whose observed chain runs through the other's function, else the
    larger contribution (docs/planner.md, "The final plan"). Returns (iteration, key,
    contribution)."""
    best, best_function, best_chain = None, None, set()
    for run, iteration in db.execute(
            "SELECT MAX(id), iteration FROM analysis_runs GROUP BY iteration ORDER BY iteration"
            ).fetchall():
        row = db.execute(
            "SELECT key, contribution, CASE place_kind WHEN 'function' THEN function ELSE "
            "holder END, node FROM places WHERE run = ? AND label = '' "
            "AND place_kind NOT IN ('wait', 'outside') AND contribution >= 0.1 ORDER BY rank "
            "LIMIT 1",
            (run,)).fetchone()
        if not row:
            continue
        key, contribution, function, node = row  # a call's or site's function: its holder
        chain = chain_functions(db, run, node) | ({function} if function else set())
        below = best_function is not None and best_function in chain and function != best_function
        above = function is not None and function in best_chain and function != best_function
        if best is None or below or (not above and contribution > best[2]):
            best, best_function, best_chain = (iteration, key, contribution), function, chain
    return best


def assert_final_keeps_the_answer(db: sqlite3.Connection, final_run: int, name: str):
    """The final plan's run still shows the deepest answer any iteration found, with at
    least half the contribution it had there (the final plan keeps its chain)."""
    best = deepest_answer(db)
    assert best is not None, f"{name}: no iteration found a place with >= 10 % of Var(L)"
    iteration, key, contribution = best
    row = db.execute("SELECT contribution FROM places WHERE run = ? AND label = '' AND key = ?",
                     (final_run, key)).fetchone()
    assert row is not None and row[0] >= 0.5 * contribution, (
        f"{name}: the final run lost the answer of iteration {iteration} ({key}, "
        f"{contribution:.3f}): {row}")


def assert_tail_leader(report: dict, program, truth: dict) -> None:
    """A rare long stall (manifest `tail_cause`) leads the final report's tail view, the place
    whose time grows most in the slowest intervals, while the variance's top place is
    another (the steady `cause`, checked top-1 by the caller); its excess is the one the
    program measured in the same run, within 5 % of the latency's excess."""
    group = report["groups"][0]
    tail = group["tail"]["places"]
    assert tail, group["tail"]
    table = "\n".join(f"  {p['excess_ns'] / 1e3:.1f} us {p['name']}" for p in tail[:5])
    assert tail[0]["name"].split("(")[0].strip() == program.tail_cause, (
        f"{program.name}: the tail view does not lead with {program.tail_cause}:\n{table}")
    assert group["answer"]["name"].split("(")[0].strip() != program.tail_cause, group["answer"]
    realised_ns = 1e3 * truth["tail_excess_us"]
    assert abs(tail[0]["excess_ns"] - realised_ns) <= 0.05 * group["tail"]["excess_ns"], (
        f"{program.name}: tail excess {tail[0]['excess_ns']:.0f} ns vs realised "
        f"{realised_ns:.0f} ns")


def assert_slow_group(report: dict, program, truth: dict) -> None:
    """A rare kind of interval whose time no one function carries (manifest kind "group"):
    the final report finds its slow group (docs/statistics.md, "The slow group") with the
    intervals the program made of that kind, says what removing them would remove within
    TOLERANCE of what the program measured (its truth `share`: 1 - Var(L of the others) /
    Var(L)), and the answer says the group beside its place."""
    group = report["groups"][0]
    slow = group.get("slow_group")
    places = "\n".join(f"  {p['contribution']:.3f} {p['name']}" for p in group["places"][:5])
    assert slow, f"{program.name}: no slow group; places:\n{places}"
    assert slow["intervals"] == truth["group_intervals"], (slow, truth)
    assert abs(slow["removed"] - truth["share"]) <= TOLERANCE, (
        f"{program.name}: the slow group removes {slow['removed']:.3f} vs realised "
        f"{truth['share']:.3f}")
    answer = group["answer"]
    assert answer["slow_group"] and "slow group" in answer["sentence"], answer
    assert answer["contribution"] <= slow["removed"] / 1.5, answer


def realised_the_plant(program, truth: dict) -> bool:
    """Whether the run realised its planted cause, by the program's own measurement (the
    bounds of test_programs.py, one-sided: more than planted is fine): the realised share
    at least the analytic one - 0.10 (- 0.15 across threads and processes, where wake-up
    latency adds unplanted variance), or, without a closed form, at least the manifest's
    `min_share`, and for a single-function variance plant without a closed form
    (fsync_io, alloc: disk and kernel decide the plant's size) more than DOMINANT of
    Var(L): only then is the plant the run's largest term, which the top-1 check
    presupposes (a loaded machine can make a sibling dominate, and vprof then rightly
    names the sibling). Otherwise scheduler stalls
    of an overloaded machine made something else (a noisy sibling, wake-up latency) the
    run's real top cause, the run says nothing about the profiler, and the loop is run
    again (fresh project, another seed). A program with a `tail_cause` must also have
    realised its stall's lead in the tail (its `tail:` line: more than twice the steady
    cause's excess), which a loaded machine's long preemptions take away. A program that
    reports its threads' time waiting for a CPU (`load: cpu_wait=`, the lock convoys:
    two spinning threads on a 2-core machine) must have waited at most MAX_CPU_WAIT of it:
    beyond that, other work preempted the workers for milliseconds wherever they were
    (quiet: 0.4-2.3 %; beside one busy loop: 26-39 %), which the share alone does not show."""
    if truth.get("cpu_wait", -1) > MAX_CPU_WAIT:
        return False  # the machine, not the plant, decided where the time went
    if program.tail_cause and not (
            truth.get("tail_excess_us", 0) > 2 * max(truth.get("steady_excess_us", 0), 0)):
        return False  # preemptions of a loaded machine, not the stall, made the slowest runs
    if program.analytic_share is not None:
        tolerance = 0.10 if program.via == "call" else 0.15
        return truth["share"] >= program.analytic_share - tolerance
    if program.kind == "var" and program.via == "call":
        return truth["share"] >= max(program.min_share, DOMINANT)
    return truth["share"] >= program.min_share


def test_a_run_whose_workers_waited_for_a_cpu_did_not_realise_its_plant():
    """The load precondition alone (no loop): a lock convoy's share says nothing when its
    workers waited for a CPU beyond MAX_CPU_WAIT of their time; a program that does not
    report its load (or whose kernel keeps no schedstats: -1) is judged by its share."""
    convoy = next(p for p in PROGRAMS if p.name == "convoy")
    share = {"share": convoy.min_share + 0.2}
    assert realised_the_plant(convoy, share)
    assert realised_the_plant(convoy, {**share, "cpu_wait": 0.02})
    assert realised_the_plant(convoy, {**share, "cpu_wait": -1.0})
    assert not realised_the_plant(convoy, {**share, "cpu_wait": 0.28})
    assert not realised_the_plant(convoy, {"share": convoy.min_share - 0.1, "cpu_wait": 0.02})


def test_kernel_wakeup_program_is_skipped_without_sched_file(tmp_path, monkeypatch):
    """The skip rule alone (no loop): a program that needs the kernel's wake-ups is skipped,
    with the trace, the loop's words about the recorder and its answer, when the trace has
    no sched.vpk, and judged when it has one; other programs are always judged."""
    monkeypatch.delenv("VPROF_ACCURACY_LOG", raising=False)  # no record of this fake run
    needing = next(p for p in PROGRAMS if programs.KERNEL_WAKEUPS in p.needs)
    plain = next(p for p in PROGRAMS if not p.needs)
    res = {"trace_dir": tmp_path, "iterations": 1, "truth": {"share": 0.7},
           "stderr": "vprof: warning: kernel wake-ups not recorded: bpf() not permitted\n",
           "factors": [{"name": "Var waiter()", "share": 0.9}]}
    skip_without_kernel_wakeups(plain, res)  # returns: nothing to skip
    with pytest.raises(pytest.skip.Exception) as skipped:
        skip_without_kernel_wakeups(needing, res)
    reason = str(skipped.value)
    assert f"{tmp_path} has no sched.vpk" in reason and "bpf() not permitted" in reason
    assert "the loop named Var waiter() at 0.900" in reason and "0.700" in reason
    (tmp_path / programs.SCHED_FILE).write_bytes(b"")
    skip_without_kernel_wakeups(needing, res)  # judged: the trace has the kernel's edges


@pytest.mark.parametrize("name", [p.name for p in PROGRAMS])
def test_loop_names_the_planted_cause(vprof_tools, tmp_path, name):
    program = next(p for p in PROGRAMS if p.name == name)
    ranking = os.environ.get("VPROF_ACCURACY_RANKING", "")
    shares = []
    for attempt in range(ATTEMPTS):
        res = run_loop(program, tmp_path / f"{name}-{attempt}", vprof_tools,
                       seed=1 + attempt,
                       loop_args=["--ranking", ranking] if ranking else ())
        truth = res["truth"]
        assert truth is not None and truth["program"] == name
        skip_without_kernel_wakeups(program, res)
        shares.append(round(truth["share"], 3) if "cpu_wait" not in truth else
                      f"{truth['share']:.3f} (cpu_wait {truth['cpu_wait']:.3f})")
        if realised_the_plant(program, truth):
            break
    else:
        # For the record: where the cause ranks in the last run and how its share compares.
        db, run = res["db"], res["run"]
        hit = next((f for f in res["factors"] if factor_names_cause(db, run, f, program)), None)
        record = {"program": name, "realised": False, "attempts": ATTEMPTS,
                  "realised_shares": shares, "iterations": res["iterations"],
                  "cause_rank": hit["rank"] if hit else None,
                  "cause_share": round(hit["share"], 4) if hit else None,
                  "truth": round(reference_share(db, run, hit, truth), 4) if hit else None,
                  "top_factor": res["factors"][0]["name"]}
        print(f"\naccuracy-loop: {json.dumps(record)}")
        if os.environ.get("VPROF_ACCURACY_LOG"):
            with open(os.environ["VPROF_ACCURACY_LOG"], "a") as log:
                log.write(json.dumps(record) + "\n")
        planted = (program.analytic_share if program.analytic_share is not None
                   else f">= {program.min_share}")
        # The precondition (the program's own measurement of its plant) failed, not the
        # profiler: nothing can be concluded about vprof from these runs.
        pytest.skip(f"{name}: the program did not realise its planted cause in {ATTEMPTS} "
                    f"runs (realised shares {shares}, planted {planted}): the machine is "
                    "too loaded for this measurement")
    db, run = res["db"], res["run"]
    if program.kind == "group":
        record = {"program": name, "iterations": res["iterations"], "attempts": attempt + 1,
                  "slow_group": res["report"]["groups"][0].get("slow_group", {}).get("removed"),
                  "truth": round(truth["share"], 4), "seconds": round(res["seconds"], 1),
                  "stop": res["stop"]}
        print(f"\naccuracy-loop: {json.dumps(record)}")
        if os.environ.get("VPROF_ACCURACY_LOG"):
            with open(os.environ["VPROF_ACCURACY_LOG"], "a") as log:
                log.write(json.dumps(record) + "\n")
        assert_slow_group(res["report"], program, truth)
        return
    top = res["factors"][0]
    named = factor_names_cause(db, run, top, program)
    ref = reference_share(db, run, top, truth) if named else truth["share"]
    record = {"program": name, "iterations": res["iterations"], "attempts": attempt + 1,
              "ranking": ranking or "default", "top1": named,
              "top_factor": top["name"], "share": round(top["share"], 4),
              "truth": round(ref, 4), "seconds": round(res["seconds"], 1),
              "stop": res["stop"]}
    print(f"\naccuracy-loop: {json.dumps(record)}")
    if os.environ.get("VPROF_ACCURACY_LOG"):
        with open(os.environ["VPROF_ACCURACY_LOG"], "a") as log:
            log.write(json.dumps(record) + "\n")
    table = "\n".join(f"  {f['rank']}. {f['share']:.3f} {f['name']}"
                      for f in res["factors"][:5])
    assert not [w for w in res["warnings"] + res["notes"] if "without an open frame" in w], \
        res["warnings"] + res["notes"]
    assert named, (f"{name}: top factor does not name {program.cause} "
                   f"(truth share {truth['share']:.3f}):\n{table}")
    if "final plan measured" in res["stop"]:
        assert_final_keeps_the_answer(db, run, name)
    if program.tail_cause:
        assert_tail_leader(res["report"], program, truth)
    if "share_waker" in truth:
        # the cause in two calling contexts (its own call and under a wait, as the waker's):
        # one term holds one context, the answer (its place, the contexts merged) the whole,
        # which is what the program measured (`share`: Var of all its time / Var(L))
        answer = answer_place(db, run)
        assert any(c in answer["name"] for c in program.cause), (answer, table)
        assert abs(answer["share"] - truth["share"]) <= TOLERANCE, (
            f"{name}: the answer's share {answer['share']:.3f} vs realised "
            f"{truth['share']:.3f}:\n{table}")
        return
    if program.known_issue and abs(top["share"] - ref) > TOLERANCE:
        pytest.xfail(f"{name}: share {top['share']:.3f} vs realised {ref:.3f}: known issue: "
                     f"{program.known_issue}")
    assert abs(top["share"] - ref) <= TOLERANCE, (
        f"{name}: share {top['share']:.3f} vs realised {ref:.3f}:\n{table}")


def test_loop_final_plan_and_without_it(vprof_tools, tmp_path):
    """By default the loop ends with a pruned final plan, measured once more; with
    --prune 0 it stops where expansion stops and no plan is final."""
    program = next(p for p in PROGRAMS if p.name == "handoff")
    pruned = run_loop(program, tmp_path / "pruned", vprof_tools)
    assert "final plan measured" in pruned["stop"], pruned["stop"]
    last = pruned["iterations"] - 1
    finals = [f for (f,) in pruned["db"].execute(
        "SELECT final FROM plans WHERE iteration = ?", (last,))]
    assert finals and all(f == 1 for f in finals), finals
    plain = run_loop(program, tmp_path / "plain", vprof_tools, loop_args=["--prune", "0"])
    assert "final plan" not in plain["stop"], plain["stop"]
    assert plain["db"].execute(
        "SELECT COUNT(*) FROM plans WHERE final = 1").fetchone()[0] == 0


def test_loop_continues_below_a_final_answer(vprof_tools, tmp_path):
    """A loop whose iteration budget ends far above the cause (`deep9`, cause nine levels
    down, iterations = 2) measures its final plan and says that a place's callees were never
    planned; `vprof loop --continue --iterations 8` resumes exploration there (8 more
    iterations after the final plan) and its new final plan names the planted cause; once
    nothing is left below the places, --continue says so."""
    program = next(p for p in PROGRAMS if p.name == "deep9")
    project = tmp_path / "deep9"
    program.write_project(project, depth=DEPTH, k=K, iterations=2)
    roots = [a for r in program.roots for a in ("--root", r)]
    init = subprocess.run([str(vprof_tools), "-C", str(project), "init", *roots],
                          capture_output=True, text=True, timeout=300)
    assert init.returncode == 0, init.stderr

    def loop(*args):
        r = subprocess.run([str(vprof_tools), "-C", str(project), "loop", *args],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        stop = [l for l in r.stderr.splitlines() if "stopped after" in l]
        assert stop, r.stderr[-3000:]
        return r, stop[-1]

    def final_top():
        db = sqlite3.connect(project / ".vprof" / "vprof.db")
        run = db.execute("SELECT MAX(id) FROM analysis_runs").fetchone()[0]
        cols = ["rank", "key", "kind", "a", "a_body", "b", "b_body", "name", "share"]
        row = db.execute(f"SELECT {', '.join(cols)} FROM factors WHERE run = ? AND label = '' "
                         "ORDER BY rank LIMIT 1", (run,)).fetchone()
        return db, run, dict(zip(cols, row))

    first, stop = loop()
    assert "final plan measured" in stop and "no plan held" in stop, stop
    assert "vprof loop --continue" in stop, stop
    db, run, top = final_top()
    # the stop line calls a place "the answer" only when the final report answers with it
    said = re.search(r"the answer (.+?) \(\d", stop)
    if said:
        assert answer_place(db, run)["name"] == said.group(1), (stop, answer_place(db, run))
    before = db.execute("SELECT MAX(iteration) FROM analysis_runs").fetchone()[0]
    assert not factor_names_cause(db, run, top, program), (
        f"iterations = 2 already reached {program.cause}: the test needs a deeper cause")

    resumed, stop = loop("--continue", "--iterations", "8")
    assert "continuing: the " in resumed.stderr, resumed.stderr[-3000:]
    assert "final plan measured" in stop, stop
    truth = programs.Program.read_truth(project)
    if not realised_the_plant(program, truth):
        pytest.skip(f"deep9 did not realise its planted cause (share {truth['share']:.3f})")
    db, run, top = final_top()
    assert db.execute("SELECT MAX(iteration) FROM analysis_runs").fetchone()[0] > before
    assert factor_names_cause(db, run, top, program), top
    assert abs(top["share"] - truth["share"]) <= TOLERANCE, (top, truth)

    again, stop = loop("--continue", "--iterations", "8")
    assert "nothing to continue" in stop, stop


def test_exploration_plans_on_an_event_loop_stay_within_their_budget(vprof_tools, tmp_path):
    """outerloop: one thread serves batches of 1-8 commands, each command's interval attached
    from its processing to its reply, so an interval's critical path holds the probes of its
    whole batch. Every exploration plan the planner wrote (iterations >= 1, not final) is
    priced by those records: measured on its run, its records on an interval's critical path
    at record_ns (40 ns) each stay within 15 % of the run's mean latency (the exploration
    budget is 10 %; the bar: every exploration plan at least 85 % of plain throughput), and
    the runs saw the batch (more records on a path than written per interval)."""
    program = next(p for p in PROGRAMS if p.name == "outerloop")
    res = run_loop(program, tmp_path / "outerloop", vprof_tools)
    db = res["db"]
    final = {i for (i,) in db.execute("SELECT DISTINCT iteration FROM plans WHERE final = 1")}
    rows = db.execute(
        "SELECT r.id, r.iteration, r.intervals, r.critical_records, s.mean_ns FROM "
        "analysis_runs r JOIN interval_stats s ON s.run = r.id AND s.label = '' WHERE r.id IN "
        "(SELECT MAX(id) FROM analysis_runs GROUP BY iteration) ORDER BY r.iteration").fetchall()
    seen_batch, checked = False, []
    for run, iteration, intervals, critical, mean_ns in rows:
        written = 2 * db.execute("SELECT COALESCE(SUM(calls), 0) FROM site_calls WHERE run = ?",
                                 (run,)).fetchone()[0] / intervals
        on_path = critical / intervals
        seen_batch = seen_batch or on_path > 1.5 * written
        overhead = on_path * 40.0 / mean_ns
        print(f"outerloop iteration {iteration}: {written:.1f} records written per interval, "
              f"{on_path:.1f} on its critical path, {100 * overhead:.1f} % of {mean_ns:.0f} ns")
        if iteration >= 1 and iteration not in final:
            checked.append(iteration)
            assert overhead <= 0.15, (iteration, on_path, mean_ns)
    assert checked, f"no exploration plan was written: {res['stop']}"
    assert seen_batch, "no run saw more records on an interval's path than written per interval"


def test_vprofiler_ranking_is_fooled_by_compensating_siblings(vprof_tools, tmp_path):
    """The `compensate` program under `--ranking vprofiler`: VProfiler's score (specificity
    x share) puts one of the two stages that split a fixed row budget first — each varies
    more than the interval — where the default net ranking (test above) names the cause.
    Both scores are in the stored factors either way."""
    program = next(p for p in PROGRAMS if p.name == "compensate")
    shares = []
    for attempt in range(ATTEMPTS):
        res = run_loop(program, tmp_path / f"vprofiler-{attempt}", vprof_tools,
                       loop_args=["--ranking", "vprofiler"], seed=1 + attempt)
        shares.append(round(res["truth"]["share"], 3))
        if realised_the_plant(program, res["truth"]):
            break
    else:  # preempted spins swamped the planted variances (see realised_the_plant)
        pytest.skip(f"compensate: the program did not realise its planted cause in {ATTEMPTS} "
                    f"runs (realised shares {shares}, planted {program.analytic_share}): the "
                    "machine is too loaded for this measurement")
    db, run = res["db"], res["run"]
    assert db.execute("SELECT ranking FROM analysis_runs WHERE id = ?", (run,)).fetchone() == (
        "vprofiler",)
    top = res["factors"][0]
    assert top["name"].startswith(("Var apply_inserts", "Var apply_updates")), top
    assert top["share"] > 1.0
    score, vp, net = db.execute(
        "SELECT score, vprofiler_score, net_share FROM factors WHERE run = ? AND label = '' "
        "AND rank = 1", (run,)).fetchone()
    assert score == vp and abs(net) < 0.25 * top["share"]


@pytest.mark.parametrize("name", ["deepdecoy", "callbackscc"])
def test_vprofiler_ranking_falls_for_the_static_traps(vprof_tools, tmp_path, name):
    """The traps of issue 23 under `--ranking vprofiler`: VProfiler's static specificity
    (H - h)^2 gives the cause 1 — a deep static height (deepdecoy: an audit chain it never
    calls), or one strongly connected component of callbacks and an error path (callbackscc)
    — and a small leaf of height 0 beside it 36 or 81, so the leaf (or an outer member of the
    component) ranks first; the default observed ranking names the cause
    (test_loop_names_the_planted_cause)."""
    program = next(p for p in PROGRAMS if p.name == name)
    shares = []
    for attempt in range(ATTEMPTS):
        res = run_loop(program, tmp_path / f"vprofiler-{attempt}", vprof_tools,
                       loop_args=["--ranking", "vprofiler"], seed=1 + attempt)
        shares.append(round(res["truth"]["share"], 3))
        if realised_the_plant(program, res["truth"]):
            break
    else:
        pytest.skip(f"{name}: the program did not realise its planted cause in {ATTEMPTS} "
                    f"runs (realised shares {shares}): the machine is too loaded")
    db, run = res["db"], res["run"]
    top = res["factors"][0]
    table = "\n".join(f"  {f['rank']}. {f['share']:.3f} {f['name']}"
                      for f in res["factors"][:5])
    assert not factor_names_cause(db, run, top, program), (
        f"{name}: VProfiler's static score named the cause; the trap does not hold:\n{table}")
    # a misranking, not a miss: the cause is measured, below the top
    assert any(factor_names_cause(db, run, f, program) for f in res["factors"][1:]), table
    print(f"\naccuracy-loop: {json.dumps({'program': name, 'ranking': 'vprofiler', 'top_factor': top['name'], 'share': round(top['share'], 4), 'truth': round(res['truth']['share'], 4)})}")
