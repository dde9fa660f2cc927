#!/usr/bin/env python3
"""Writes a compile_commands.json for a few source files compiled with one command line.

Used by the accuracy and minidb Makefiles (`make compdb`) so `vprof init` can scan a
program without CMake:
    compdb.py OUT.json --directory DIR --compiler CC [--flags "FLAGS"] SOURCE...
Each source becomes one entry `{directory, file, arguments}` with `-c SOURCE -o SOURCE.o`.
"""
import argparse
import json
import os
import pathlib
import shlex
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="compile_commands.json to write")
    ap.add_argument("--directory", required=True, help="directory the compiler runs in")
    ap.add_argument("--compiler", required=True, help="compiler command (e.g. cc, c++)")
    ap.add_argument("--flags", default="", help="compile flags, one shell-quoted string")
    ap.add_argument("sources", nargs="+")
    args = ap.parse_args()
    directory = pathlib.Path(args.directory).resolve()
    entries = []
    for src in args.sources:
        path = (directory / src).resolve()
        if not path.is_file():
            print(f"compdb.py: {path}: no such source file", file=sys.stderr)
            return 1
        argv = shlex.split(args.compiler) + shlex.split(args.flags)
        argv += ["-c", str(path), "-o", str(path.with_suffix(path.suffix + ".o").name)]
        entries.append({"directory": str(directory), "file": str(path), "arguments": argv})
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(entries, indent=2) + "\n")
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
