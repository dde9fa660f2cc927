#!/usr/bin/env python3
"""Parses translation units of MariaDB's compile database with clang-19 -fsyntax-only, each with its
own command line (the compiler swapped for clang-19/clang++-19, the output and dependency-file flags
dropped), and prints the ones that fail with their first error line. A sample by default, --all for all."""
import argparse
import concurrent.futures
import json
import os
import random
import re
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
CACHE = os.path.join(os.environ.get("VPROF_REAL_CACHE", os.path.join(REPO, "build", "real")), "mariadb")

# Flags that write files or name the object: meaningless for -fsyntax-only (those with an argument).
DROP_WITH_ARG = {"-o", "-MF", "-MT", "-MQ"}
DROP = {"-c", "-MD", "-MMD", "-M", "-MM"}
C_EXT = (".c",)


def clang_argv(entry, clang, clangxx):
    """The entry's own command line, run by clang-19 with -fsyntax-only."""
    argv = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    compiler = os.path.basename(argv[0])
    cxx = "++" in compiler or not entry["file"].endswith(C_EXT)
    out = [clangxx if cxx else clang]
    it = iter(argv[1:])
    for a in it:
        if a in DROP_WITH_ARG:
            next(it, None)
        elif a in DROP or (a.startswith("-o") and len(a) > 2 and not a.startswith("-obj")):
            continue
        else:
            out.append(a)
    # GCC's own warning names in the flags would only warn; keep the diagnostics to the errors.
    out += ["-fsyntax-only", "-Wno-unknown-warning-option", "-ferror-limit=5"]
    return out


def first_error(stderr):
    for line in stderr.splitlines():
        if re.search(r"\b(error|fatal error):", line):
            return line.strip()
    lines = [l for l in stderr.splitlines() if l.strip()]
    return lines[0].strip() if lines else "(no message)"


def check(entry, clang, clangxx, timeout):
    argv = clang_argv(entry, clang, clangxx)
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, cwd=entry["directory"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, errors="replace", timeout=timeout)
        ok, err = p.returncode == 0, "" if p.returncode == 0 else first_error(p.stderr)
    except subprocess.TimeoutExpired:
        ok, err = False, f"timeout after {timeout} s"
    return entry, ok, err, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--compdb", default=os.path.join(CACHE, "vprof", "compile_commands.json"))
    ap.add_argument("-n", type=int, default=40, help="sample size (default 40)")
    ap.add_argument("--all", action="store_true", help="every command")
    ap.add_argument("--jobs", "-j", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--match", help="only files matching this regular expression")
    ap.add_argument("--clang", default="clang-19")
    ap.add_argument("--clangxx", default="clang++-19")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per translation unit")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every translation unit")
    args = ap.parse_args()

    with open(args.compdb) as f:
        entries = json.load(f)
    if args.match:
        entries = [e for e in entries if re.search(args.match, e["file"])]
    total = len(entries)
    if not args.all and args.n < total:
        entries = random.Random(args.seed).sample(entries, args.n)
    print(f"parse_check: {len(entries)} of {total} commands "
          f"({len({e['file'] for e in entries})} distinct files), {args.jobs} jobs", flush=True)

    t0 = time.monotonic()
    failed = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(check, e, args.clang, args.clangxx, args.timeout) for e in entries]
        for fut in concurrent.futures.as_completed(futures):
            entry, ok, err, secs = fut.result()
            if not ok:
                failed.append((entry["file"], err))
                print(f"FAIL {entry['file']}\n     {err}", flush=True)
            elif args.verbose:
                print(f"ok   {entry['file']} ({secs:.1f} s)", flush=True)
    passed = len(entries) - len(failed)
    print(f"parse_check: {time.monotonic() - t0:.0f} s")
    print(f"{passed} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
