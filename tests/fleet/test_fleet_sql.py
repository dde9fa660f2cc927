"""The fleet analysis against the analyzer (docs/fleet.md): for every accuracy program of
benchmarks/accuracy/manifest.toml and the mini database, `vprof init` + a two-iteration
`vprof loop` (the second plan follows the waits into the wakers' work), then
`vprof export --parquet` (made once per session by conftest.py, shared with the Spark test
test_spark.py) and the portable SQL on DuckDB (python/vprof_fleet, in the project
venv made by cmake/install-venv.sh) must give the analyzer's own numbers (`vprof analyze
--json`) within 1e-9 relative: Var(L) and mean per interval type, every node's mean,
variance, body mean and variance, share, contribution and body contribution, and every
place's mean, variance, share and contribution (tests/fleet/fleet_compare.py). The same SQL
text run by SQLite (a second engine, none of DuckDB's extensions) must give DuckDB's rows.
Also: copies of one run under two host names concatenate; the SQL uses standard aggregates
only; a missing venv is an error naming the fix.
"""
import json
import os
import pathlib
import re
import socket
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from fleet_cases import BY_NAME, VENV_PYTHON, vp  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
COMPARE = pathlib.Path(__file__).resolve().parent / "fleet_compare.py"
SQL_DIR = ROOT / "python" / "vprof_fleet" / "sql"


def compare(inp) -> dict:
    """The DuckDB decomposition of the case's Parquet export against `vprof analyze --json`
    of the same trace, and SQLite's against DuckDB's (tests/fleet/conftest.py makes both)."""
    r = subprocess.run([str(VENV_PYTHON), str(COMPARE), "--sqlite", str(inp.report),
                        *inp.dirs], capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 1), r.stderr[-3000:]
    got = json.loads(r.stdout)
    assert got["n_mismatches"] == 0, got["mismatches"]
    assert got["sqlite"], got
    assert got["nodes"] > 3 and got["places"] > 1, got
    return got


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_duckdb_equals_the_analyzer_on_accuracy_program(fleet_inputs, name):
    got = compare(fleet_inputs.get(name))
    assert got["worst_rel"] <= 1e-9, got


def test_duckdb_equals_the_analyzer_on_minidb(fleet_inputs):
    got = compare(fleet_inputs.get("minidb"))
    # minidb labels its transactions (NewOrder, Payment, ...): groups per label besides ''
    assert got["groups"] > 1, got
    assert got["worst_rel"] <= 1e-9, got


def test_hosts_concatenate(vprof, fleet_inputs):
    """Two copies of one run under two host names: every interval counts twice and the
    population moments stay the analyzer's."""
    inp = fleet_inputs.get("convoy-two-hosts")
    project, iteration = inp.project, inp.iteration
    got = compare(inp)
    assert got["worst_rel"] <= 1e-9, got
    # and the rows say where they come from
    r = subprocess.run([str(VENV_PYTHON), "-c",
                        "import sys, duckdb; print(duckdb.sql(\"SELECT DISTINCT host, run FROM "
                        "read_parquet('\" + sys.argv[1] + \"/*/node_times.parquet') "
                        "ORDER BY host\").fetchall())", str(project / "parquet")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (f"[('host-a', 'iter-{iteration}'), "
                                f"('host-b', 'iter-{iteration}')]"), r.stdout
    # without --host: the host name the trace recorded (the machine that ran the program)
    own = project / "parquet-own"
    e = subprocess.run([str(vprof), "-C", str(project), "export", "--parquet", str(own)],
                       capture_output=True, text=True, timeout=300)
    assert e.returncode == 0, e.stderr
    r = subprocess.run([str(VENV_PYTHON), "-c",
                        "import sys, duckdb; print(duckdb.sql(\"SELECT DISTINCT host FROM "
                        "read_parquet('\" + sys.argv[1] + \"/intervals.parquet')\").fetchall())",
                        str(own)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"[('{socket.gethostname()}',)]", r.stdout


def test_missing_venv_names_the_fix(vprof, tmp_path):
    p = BY_NAME["deep"]
    project = tmp_path / "deep"
    p.write_project(project, depth=1, k=3, iterations=1)
    vp(vprof, project, "init", *[a for r in p.roots for a in ("--root", r)])
    env = {**os.environ, "VPROF_PYTHON": str(tmp_path / "no-such-python")}
    r = subprocess.run([str(vprof), "-C", str(project), "export", "--parquet",
                        str(tmp_path / "pq")], capture_output=True, text=True, env=env)
    assert r.returncode == 1, r.stderr
    assert "bash cmake/install-venv.sh" in r.stderr and "no-such-python" in r.stderr
    h = subprocess.run([str(vprof), "export", "--help"], capture_output=True, text=True)
    assert "--parquet" in h.stdout and "install-venv.sh" in h.stdout


# Standard SQL only: the functions Spark SQL and Trino share with DuckDB, no casts by '::',
# no engine-specific table functions (the Parquet files are bound to the two table names
# outside these files).
PORTABLE_CALLS = {"COUNT", "SUM", "MIN", "CAST", "AS", "IN", "AND", "ON"}


def test_sql_is_portable():
    files = sorted(SQL_DIR.glob("*.sql"))
    assert {f.stem for f in files} == {"latency", "nodes", "places"}
    for f in files:
        text = re.sub(r"--[^\n]*", "", f.read_text())
        assert "::" not in text and ";" not in text and '"' not in text, f
        calls = {m.upper() for m in re.findall(r"\b([A-Za-z_]+)\s*\(", text)}
        assert calls <= PORTABLE_CALLS | {"WITH", "FROM", "JOIN", "SELECT"} | _ctes(text), \
            (f.name, calls - PORTABLE_CALLS)
        tables = set(re.findall(r"\b(?:FROM|JOIN)\s+([A-Za-z_]+)", text))
        assert tables <= {"intervals", "node_times"} | _ctes(text), (f.name, tables)


def _ctes(text: str) -> set:
    return {m for m in re.findall(r"\b([A-Za-z_]+)\s+AS\s*\(", text)} | \
        {m.upper() for m in re.findall(r"\b([A-Za-z_]+)\s+AS\s*\(", text)}


def test_vprof_fleet_command_line(vprof, tmp_path):
    """The package's own commands: the SQL text as shipped, clear errors for missing input."""
    py = [str(VENV_PYTHON), "-m", "vprof_fleet"]
    r = subprocess.run([*py, "sql", "places"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.rstrip().endswith(";"), r.stderr
    assert r.stdout.rstrip()[:-1].strip() == \
        re.sub(r"\s+$", "", (SQL_DIR / "places.sql").read_text()).rstrip(";").strip()
    r = subprocess.run([*py, "convert", str(tmp_path / "no-rows"), str(tmp_path / "out"),
                        "--host", "h", "--run", "r"], capture_output=True, text=True)
    assert r.returncode == 3 and "nodes.tsv" in r.stderr, r.stderr
    r = subprocess.run([*py, "analyze", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 3 and "no intervals.parquet under" in r.stderr, r.stderr
