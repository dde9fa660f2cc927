"""Shared pytest fixtures: where the CMake build is and how to run its programs."""
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def root() -> pathlib.Path:
    """The source tree."""
    return ROOT


@pytest.fixture(scope="session")
def build_dir() -> pathlib.Path:
    """The CMake build tree the tests run against ($VPROF_BUILD_DIR, default build/)."""
    path = pathlib.Path(os.environ.get("VPROF_BUILD_DIR", ROOT / "build")).resolve()
    if not (path / "CMakeCache.txt").exists():
        pytest.exit(f"{path}: no CMake build here; run ./test.sh or set VPROF_BUILD_DIR", 2)
    return path
