"""memcached 1.6.18 (benchmarks/real/memcached). The cheap check runs whenever the pinned
Debian source package is already downloaded ($VPROF_REAL_CACHE/memcached/dl, default
build/real/memcached/dl, left by fetch.sh): the annotation patch applies to it, and the two
annotated files compile with and without -DVPROF_ENABLE (memcached's own -Wall -Werror
-pedantic), the disabled build without a single reference to the runtime. The whole loop
(run.sh, ~10 minutes) is a documented command, benchmarks/real/memcached/README.md."""
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
HERE = ROOT / "benchmarks" / "real" / "memcached"
CACHE = pathlib.Path(os.environ.get("VPROF_REAL_CACHE", ROOT / "build" / "real")) / "memcached"
DSC = CACHE / "dl" / "memcached_1.6.18-1.dsc"


@pytest.fixture(scope="module")
def patched(tmp_path_factory) -> pathlib.Path:
    if not DSC.exists() or not shutil.which("dpkg-source"):
        pytest.skip(f"{DSC}: the Debian source is not downloaded (benchmarks/real/memcached/fetch.sh)")
    src = tmp_path_factory.mktemp("memcached") / "src"
    subprocess.run(["dpkg-source", "-x", str(DSC), str(src)], check=True, capture_output=True)
    r = subprocess.run(["patch", "-p1", "-d", str(src), "-i", str(HERE / "annotate.patch")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "offset" not in r.stdout and "fuzz" not in r.stdout, r.stdout
    return src


def compile_object(src: pathlib.Path, name: str, enable: bool) -> pathlib.Path:
    # config.h as configure writes it on this machine; the plain build tree's, when present
    config = CACHE / "plain" / "config.h"
    if not config.exists():
        pytest.skip(f"{config}: no configured build (benchmarks/real/memcached/build.sh plain)")
    out = src / f"{name}.{'on' if enable else 'off'}.o"
    cmd = ["gcc", "-c", "-O0", "-std=gnu99", "-DHAVE_CONFIG_H", f"-I{config.parent}", f"-I{src}",
           f"-I{ROOT / 'annotations' / 'include'}", "-Wall", "-Werror", "-pedantic",
           str(src / name), "-o", str(out)] + (["-DVPROF_ENABLE"] if enable else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return out


@pytest.mark.parametrize("name", ["proto_text.c", "memcached.c"])
def test_annotation_compiles_both_ways(patched, name):
    on = compile_object(patched, name, True)
    off = compile_object(patched, name, False)
    undefined = lambda o: subprocess.run(["nm", "-u", str(o)], capture_output=True, text=True,
                                         check=True).stdout
    assert "vprof_interval_" in undefined(on)
    assert "vprof_" not in undefined(off)
