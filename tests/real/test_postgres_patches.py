"""The PostgreSQL harness's patch sets (benchmarks/real/postgres/fetch.sh): annotate.patch (the
interval of a query) always, latch-marks.patch (the latch as a hand-marked primitive) unless
VPROF_PG_LATCH_MARKS=0. The variant without the latch marks must hold no wait or wake-up mark
(its latch edges are the kernel's wake-ups), and both sets must apply to the pinned source.
Cheap but the apply test (marked real: one pass over the tarball, and only where fetch.sh
downloaded it already)."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
PG = ROOT / "benchmarks" / "real" / "postgres"
MARK = re.compile(r"^\+.*\b(VPROF_[A-Z_]+)\(", re.M)


def marks(patch: pathlib.Path) -> set:
    return set(MARK.findall(patch.read_text()))


def touched(patch: pathlib.Path) -> list:
    return re.findall(r"^\+\+\+ b/(\S+)", patch.read_text(), re.M)


def test_the_variant_without_latch_marks_has_only_the_interval():
    assert marks(PG / "annotate.patch") == {"VPROF_INTERVAL_BEGIN", "VPROF_INTERVAL_END"}
    assert touched(PG / "annotate.patch") == ["src/backend/tcop/postgres.c"]


def test_the_latch_marks_are_a_custom_primitive_of_their_own():
    assert marks(PG / "latch-marks.patch") == {"VPROF_WAKE", "VPROF_WAIT_BEGIN",
                                               "VPROF_WAIT_END"}
    assert touched(PG / "latch-marks.patch") == ["src/backend/storage/ipc/latch.c"]


def test_a_bad_variant_is_refused_before_anything_is_fetched(tmp_path):
    env = {**os.environ, "VPROF_PG_LATCH_MARKS": "no", "VPROF_REAL_CACHE": str(tmp_path)}
    r = subprocess.run(["bash", str(PG / "fetch.sh")], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1
    assert "VPROF_PG_LATCH_MARKS must be 0 or 1, not 'no'" in r.stderr
    assert not any(tmp_path.iterdir())


def cached_tarball():
    cache = pathlib.Path(os.environ.get("VPROF_REAL_CACHE", ROOT / "build" / "real"))
    found = sorted((cache / "postgres" / "dl").glob("postgresql-15_*.orig.tar.bz2"))
    return found[-1] if found else None


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """The release's copies of the files the patches touch (one bzip2 pass over the tarball:
    ~8 s of CPU, hence marked real)."""
    tarball = cached_tarball()
    if tarball is None or shutil.which("patch") is None:
        pytest.skip("PostgreSQL's source is not downloaded (benchmarks/real/postgres/fetch.sh)")
    out = tmp_path_factory.mktemp("pg")
    top = tarball.name.split("_")[1].removesuffix(".orig.tar.bz2")
    files = sorted({f for p in ("annotate.patch", "latch-marks.patch") for f in touched(PG / p)})
    subprocess.run(["tar", "xjf", str(tarball), "-C", str(out),
                    *(f"postgresql-{top}/{f}" for f in files)], check=True, timeout=600)
    return out / f"postgresql-{top}"


@pytest.mark.real
@pytest.mark.parametrize("variant", [["annotate.patch"], ["annotate.patch", "latch-marks.patch"]])
def test_each_patch_set_applies_to_the_pinned_source(pristine, tmp_path, variant):
    tree = tmp_path / "src"
    shutil.copytree(pristine, tree)
    for p in variant:
        r = subprocess.run(["patch", "-s", "-d", str(tree), "-p1", "-i", str(PG / p)],
                           capture_output=True, text=True)
        assert r.returncode == 0 and not r.stdout.strip(), (p, r.stdout, r.stderr)
    latch = (tree / "src/backend/storage/ipc/latch.c").read_text()
    assert ("VPROF_WAKE(latch)" in latch) == ("latch-marks.patch" in variant)
    assert "VPROF_INTERVAL_BEGIN" in (tree / "src/backend/tcop/postgres.c").read_text()
