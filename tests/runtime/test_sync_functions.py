"""The runtime interposes exactly the synchronization functions of the one list,
runtime/include/vprof/sync_functions.def (shared with the instrumenter, whose unit test
sync_list_test.cpp checks the other side): every listed function is defined by the built
libvprof_rt (shared and static), and nothing else outside the vprof_ prefix is."""
import re
import subprocess

import pytest

ENTRY = re.compile(r"^VPROF_SYNC_FUNCTION\(\s*(\w+)\s*,\s*(\w+)\s*,", re.M)


def listed(root):
    text = (root / "runtime/include/vprof/sync_functions.def").read_text()
    entries = ENTRY.findall(text)
    names = [name for _, name in entries]
    assert len(names) == len(set(names)), "a function is listed twice"
    return set(names)


def defined_symbols(lib, *flags):
    out = subprocess.run(["nm", "--defined-only", *flags, str(lib)], capture_output=True,
                         text=True, check=True).stdout
    # "address type name": global text symbols only (local ones are lower case)
    return {f[2] for f in (line.split() for line in out.splitlines())
            if len(f) == 3 and f[1] == "T"}


def test_the_list_is_read(root):
    names = listed(root)
    assert {"pthread_mutex_lock", "pthread_cond_wait", "sem_post"} <= names
    assert all(n.startswith(("pthread_", "sem_")) for n in names), sorted(names)


@pytest.mark.parametrize("lib,flags", [("libvprof_rt.so", ("-D",)), ("libvprof_rt.a", ())])
def test_runtime_interposes_exactly_the_list(root, build_dir, lib, flags):
    path = build_dir / "runtime" / lib
    if not path.exists():
        pytest.skip(f"{path} not built")
    interposed = {s for s in defined_symbols(path, *flags) if not s.startswith("vprof_")}
    names = listed(root)
    assert interposed - names == set(), "interposed but not in sync_functions.def"
    assert names - interposed == set(), "in sync_functions.def but not interposed"
