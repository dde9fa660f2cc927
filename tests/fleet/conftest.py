"""Fixtures of the fleet tests: the vprof binary and the cases (fleet_cases.py), made once per
session and shared by the engines' tests (DuckDB and SQLite in test_fleet_sql.py, Spark in
test_spark.py)."""
import pathlib
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from fleet_cases import VENV_PYTHON, FleetInputs  # noqa: E402


@pytest.fixture(scope="session")
def vprof(build_dir):
    if not VENV_PYTHON.exists():
        pytest.skip(f"{VENV_PYTHON}: no project venv (pyarrow, duckdb); run "
                    "bash cmake/install-venv.sh")
    subprocess.run(["cmake", "--build", str(build_dir), "--target", "vprof", "vprof-cc",
                    "vprof_rt"], check=True, capture_output=True, text=True)
    return build_dir / "driver" / "vprof"


@pytest.fixture(scope="session")
def fleet_inputs(vprof, tmp_path_factory) -> FleetInputs:
    return FleetInputs(vprof, tmp_path_factory.mktemp("fleet"))
