"""The project's one C/C++ style (.clang-format: LLVM, 100 columns) holds for every tracked
source file. The instrumenter's golden inputs (tests/instrumenter/cases) are exempt: their
layout is part of what the goldens test. Fix a failure with

    git ls-files '*.c' '*.h' '*.cpp' '*.hpp' | grep -v '^tests/instrumenter/cases/' \\
        | xargs clang-format-19 -i
"""
import shutil
import subprocess

EXTENSIONS = (".c", ".h", ".cpp", ".hpp", ".cc")


def test_sources_follow_clang_format(root):
    exe = shutil.which("clang-format-19")
    assert exe, "clang-format-19 not found (cmake/install-deps.sh installs it)"
    files = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True,
                           check=True).stdout.split()
    sources = [f for f in files if f.endswith(EXTENSIONS)
               and not f.startswith("tests/instrumenter/cases/")]
    assert len(sources) > 50, sources  # the tree is there
    r = subprocess.run([exe, "--dry-run", "--Werror", *sources], cwd=root,
                       capture_output=True, text=True)
    bad = sorted({line.split(":", 1)[0] for line in r.stderr.splitlines()
                  if ": error:" in line})
    assert r.returncode == 0 and not bad, f"not clang-formatted: {bad}"
