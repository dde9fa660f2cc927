"""The fleet analysis on a real distributed engine (docs/fleet.md, "Spark"): a Spark
standalone cluster of local processes — a master and two workers from pyspark's jars
(`python -m vprof_fleet spark-cluster`), Debian's OpenJDK 17 — runs the portable SQL over the
same Parquet exports as test_fleet_sql.py (every accuracy program, the mini database, one run
under two host names; fleet_cases.py), in one SparkSession for the whole module, and must
give the analyzer's own numbers (`vprof analyze --json`) within 1e-9 relative, and DuckDB's
rows (same columns, same order). The cluster is stopped by the fixture's finalizer, which
fails the run if any of its processes outlived the stop.

Needs java and pyspark in the project venv (`bash cmake/install-deps.sh` and
`bash cmake/install-venv.sh --spark`, both run by ./test.sh); without them the module is
skipped with a warning saying which is missing. Alone: `python3 -m pytest -q
tests/fleet/test_spark.py` (it then profiles the cases itself)."""
import json
import os
import pathlib
import select
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
import warnings

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from fleet_cases import CASES, VENV_PYTHON  # noqa: E402

COMPARE = pathlib.Path(__file__).resolve().parent / "fleet_compare.py"
WORKERS = 2


def _missing() -> str | None:
    """What of java and pyspark is missing, or None."""
    if not VENV_PYTHON.exists():
        return f"{VENV_PYTHON}: no project venv; run bash cmake/install-venv.sh --spark"
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        return "no java on PATH (Spark needs Java 17): run bash cmake/install-deps.sh"
    r = subprocess.run([str(VENV_PYTHON), "-c", "import pyspark"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        return (f"no pyspark in {VENV_PYTHON} ({r.stderr.strip().splitlines()[-1]}): run "
                "bash cmake/install-venv.sh --spark")
    return None


def _pids_in(groups) -> list[int]:
    """The live (not zombie) processes of the process groups `groups`."""
    found = []
    for d in pathlib.Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z" and int(fields[2]) in groups:
                found.append(int(d.name))
    return found


@pytest.fixture(scope="module")
def cluster(request, tmp_path_factory):
    """{url, ui, pgids, scratch} of a running cluster: a master and WORKERS workers with one
    core and 1 GiB for executors each. The finalizer closes the helper's standard input (it
    then stops the cluster), SIGKILLs every process group it reported, and fails if any of
    those processes had outlived the helper's own stop."""
    missing = _missing()
    if missing:
        # loud: the warnings summary of every run says it, not only `-rs`
        warnings.warn(f"the Spark fleet test is SKIPPED: {missing}")
        pytest.skip(missing)
    log = tmp_path_factory.mktemp("spark") / "cluster.log"
    with open(log, "wb") as err:
        helper = subprocess.Popen(
            [str(VENV_PYTHON), "-m", "vprof_fleet", "spark-cluster", "--workers", str(WORKERS),
             "--memory", "1g"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
            start_new_session=True)
    groups = {helper.pid}

    def stop():
        helper.stdin.close()  # the helper stops its cluster and exits
        try:
            helper.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
        left = _pids_in(groups)  # the helper waited for its cluster's processes to go
        for g in groups:
            try:
                os.killpg(g, signal.SIGKILL)
            except ProcessLookupError:
                pass
        assert not left, f"processes of the Spark cluster outlived its stop: {left}"
    request.addfinalizer(stop)

    ready, _, _ = select.select([helper.stdout], [], [], 300)
    line = helper.stdout.readline() if ready else b""
    if not line:
        helper.poll()
        pytest.fail(f"the Spark cluster did not start (helper exit {helper.returncode}):\n"
                    + log.read_text(errors="replace")[-4000:])
    info = json.loads(line)
    groups.update(info["pgids"])
    return info


@pytest.fixture(scope="module")
def spark_results(cluster, fleet_inputs, tmp_path_factory):
    """fleet_compare.py --spark over every case, in one SparkSession (its JSON)."""
    cases = {}
    for name in CASES:
        inp = fleet_inputs.get(name)
        cases[name] = {"report": str(inp.report), "dirs": inp.dirs}
    spec = tmp_path_factory.mktemp("spark-cases") / "cases.json"
    spec.write_text(json.dumps(cases))
    p = subprocess.Popen([str(VENV_PYTHON), str(COMPARE), "--spark", cluster["url"], str(spec)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)  # its group holds the driver's JVM
    try:
        out, err = p.communicate(timeout=1800)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        pytest.fail(f"Spark compare: no answer in 1800 s:\n{err[-3000:]}")
    assert p.returncode in (0, 1) and out.strip(), f"Spark compare failed:\n{err[-4000:]}"
    spec.with_name("spark.json").write_text(out)  # kept with pytest's temporary folders
    return json.loads(out)


@pytest.mark.parametrize("name", CASES)
def test_spark_equals_the_analyzer(spark_results, name):
    got = spark_results["cases"][name]
    assert got["n_mismatches"] == 0, got["mismatches"]
    assert got["nodes"] > 3 and got["places"] > 1, got
    assert got["worst_rel"] <= 1e-9, got
    if name == "minidb":  # labelled transactions: groups besides ''
        assert got["groups"] > 1, got


def test_the_queries_ran_on_the_standalone_cluster(cluster, spark_results):
    spark = spark_results["spark"]
    assert spark["master"] == cluster["url"] and cluster["url"].startswith("spark://"), spark
    # one executor per worker, and both did some of the work
    assert len(spark["executor_tasks"]) == WORKERS, spark
    # the driver JVM's warnings (a GC warning once broke the JSON on stdout) go to stderr
    assert "-Xlog:all=warning:stderr" in spark["driver_java_options"], spark
    assert all(n > 0 for n in spark["executor_tasks"].values()), spark
    local = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no http_proxy
    with local.open(cluster["ui"] + "/json/", timeout=10) as r:
        master = json.load(r)
    assert master["status"] == "ALIVE", master
    assert sum(w["state"] == "ALIVE" for w in master["workers"]) == WORKERS, master["workers"]
    assert [a["name"] for a in master["completedapps"]] == ["vprof-fleet"], master


def test_cluster_without_java_names_the_problem(tmp_path):
    if _missing():
        pytest.skip(_missing())
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-jdk")}
    t = time.monotonic()
    r = subprocess.run([str(VENV_PYTHON), "-m", "vprof_fleet", "spark-cluster"], env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"JAVA_HOME={tmp_path / 'no-jdk'}: no bin/java there" in r.stderr, r.stderr
    assert time.monotonic() - t < 30
