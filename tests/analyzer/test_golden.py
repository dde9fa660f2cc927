"""Golden reports of vprof-analyze on generated scenario traces (tracegen.py), and
structural checks of the JSON. Regenerate the golden files after a reviewed change with:
    VPROF_REGEN=1 ./test.sh -k golden   (instrumenter and analyzer goldens alike)
and review the diff. Normalizer: the trace directory path becomes <TRACE>."""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import tracegen  # noqa: E402

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"


@pytest.fixture
def analyze(build_dir):
    exe = build_dir / "analyzer" / "tools" / "vprof-analyze"
    if not exe.exists():
        pytest.skip("vprof-analyze not built")
    return exe


def normalize(text, trace_dir):
    return re.sub(re.escape(str(trace_dir)), "<TRACE>", text)


@pytest.mark.parametrize("name", sorted(tracegen.SCENARIOS))
def test_golden_report(analyze, tmp_path, name):
    d = tmp_path / name
    tracegen.SCENARIOS[name](d)
    r = subprocess.run([str(analyze), str(d), "--seed", "1", "--bootstrap", "100"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    got = normalize(r.stdout, d)
    golden = GOLDEN / f"{name}.txt"
    if os.environ.get("VPROF_REGEN", "0") not in ("", "0"):
        golden.write_text(got)
    assert golden.exists(), f"missing {golden}; regenerate (see module docstring)"
    assert got == golden.read_text()


@pytest.mark.parametrize("name", sorted(tracegen.SCENARIOS))
def test_json_is_exact(analyze, tmp_path, name):
    d = tmp_path / name
    tracegen.SCENARIOS[name](d)
    r = subprocess.run([str(analyze), str(d), "--json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["intervals"] > 0 and j["warnings"] == []
    for g in j["groups"]:
        var_l = g["latency"]["var_ns2"]
        assert g["max_residual"] <= 1e-9
        root_terms = sum(f["term_ns2"] for f in g["factors"] if f["parent"] == 0)
        assert abs(root_terms - var_l) <= 1e-9 * max(1.0, var_l)
        # ranked by score, every term above the noise floor before those below it
        noise = [f["noise"] for f in g["factors"]]
        assert noise == sorted(noise)
        for tier in (False, True):
            scores = [f["score"] for f in g["factors"] if f["noise"] == tier]
            assert scores == sorted(scores, reverse=True)
        assert all(f["noise"] == (abs(f["share"]) < g["noise_floor"]) for f in g["factors"])


def test_mutex_scenario_names_the_holder(analyze, tmp_path):
    d = tmp_path / "m"
    tracegen.scenario_mutex(d)
    j = json.loads(subprocess.run([str(analyze), str(d), "--json"], capture_output=True,
                                  text=True, timeout=60).stdout)
    top = j["groups"][0]["factors"][0]
    # the lock holder's flush (site 7), reached through the wait node, explains Var(L)
    assert top["key"] == "var:/s1/s2/wait:mutex/s6/s7"
    assert top["share"] > 0.95


def test_bad_trace_exit_code(analyze, tmp_path):
    (tmp_path / "1.0.vpt").write_bytes(b"garbage")
    r = subprocess.run([str(analyze), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "1.0.vpt" in r.stderr and "offset" in r.stderr
