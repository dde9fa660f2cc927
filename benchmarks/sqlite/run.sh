#!/usr/bin/env bash
# Real-code bar for the instrumenter on the SQLite amalgamation (docs/instrumenter.md):
# fetch sqlite3.c, scan its call graph, plan its 50 most-called functions at depth 2,
# instrument, compile with gcc, run a checking workload, and time the instrumenter
# against `clang-19 -fsyntax-only` on the same file in the same run. The source stays
# byte-identical (checked). Takes about a minute; not part of the default test run.
#
#   benchmarks/sqlite/run.sh [BUILD_DIR]      (default: build-instrumenter)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$(cd "${1:-$root/build-instrumenter}" && pwd)"
tool="$build/instrumenter/vprof-instrument"
[ -x "$tool" ] || { echo "run.sh: $tool not built" >&2; exit 1; }

"$here/fetch.sh"
src="$root/benchmarks/third_party/sqlite"
work="${VPROF_SQLITE_WORK:-$(mktemp -d /tmp/vprof-sqlite.XXXXXX)}"
mkdir -p "$work"
flags=(-O2 -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION)
cat >"$work/compile_commands.json" <<JSON
[{"directory": "$src", "file": "sqlite3.c",
  "arguments": ["gcc", "-O2", "-DSQLITE_THREADSAFE=0", "-DSQLITE_OMIT_LOAD_EXTENSION", "-c", "sqlite3.c"]}]
JSON
before="$(sha256sum "$src/sqlite3.c" "$src/sqlite3.h")"
ws=(-w "$work/vprof.db")
now() { date +%s.%N; }

scans=()
for i in 1 2 3; do  # a re-scan replaces the edges; ids stay
  a=$(now); "$tool" "${ws[@]}" $([ $i -gt 1 ] && echo -q) scan -p "$work"; b=$(now)
  scans+=("$(echo "$b - $a" | bc)")
done
"$tool" "${ws[@]}" plan --most-called 50 -d 2
planned=$(sqlite3 "$work/vprof.db" "SELECT count(*) FROM plans WHERE iteration = 0")

# Same run, same flags: clang's own parse vs the instrumenter (parse + rewrite + sites).
resdir="$(clang-19 -print-resource-dir)"
best() { sort -n | head -1; }
syn=(); ins=()
for i in 1 2 3; do
  a=$(now); (cd "$src" && clang-19 -fsyntax-only -w "${flags[@]}" sqlite3.c); b=$(now)
  syn+=("$(echo "$b - $a" | bc)")
  a=$(now); (cd "$src" && "$tool" "${ws[@]}" -q rewrite sqlite3.c -p "$work" -o "$work/sqlite3.inst.c"); b=$(now)
  ins+=("$(echo "$b - $a" | bc)")
done
tsyn=$(printf '%s\n' "${syn[@]}" | best)
tins=$(printf '%s\n' "${ins[@]}" | best)
(cd "$src" && "$tool" "${ws[@]}" rewrite sqlite3.c -p "$work" -o "$work/sqlite3.inst.c") 2>"$work/rewrite.log"
skipped=$(grep -c "not instrumented" "$work/rewrite.log" || true)
sites=$(sqlite3 "$work/vprof.db" "SELECT count(*) FROM sites")

# Compile the instrumented amalgamation with gcc and run the checking workload.
rtlib=$(ls "$build"/runtime/libvprof_rt.so "$build"/runtime/*/libvprof_rt.so 2>/dev/null | head -1 || true)
if [ -n "$rtlib" ]; then
  rt=(-L"$(dirname "$rtlib")" -Wl,-rpath,"$(dirname "$rtlib")" -lvprof_rt); rtname="libvprof_rt.so"
else
  gcc -c -O2 -I"$root/runtime/include" -I"$root/annotations/include" "$root/tests/instrumenter/stub_runtime.c" -o "$work/stub.o"
  rt=("$work/stub.o"); rtname="test stub runtime"
fi
a=$(now)
gcc "${flags[@]}" -w -I"$src" -I"$root/runtime/include" -iquote "$src" -c "$work/sqlite3.inst.c" -o "$work/sqlite3.inst.o"
b=$(now)
gcc -O2 -I"$src" "$here/workload.c" "$work/sqlite3.inst.o" "${rt[@]}" -lm -o "$work/workload"
(cd "$work" && VPROF_TRACE_DIR="$work/trace" ./workload >workload.out 2>workload.err)
grep -q "workload ok" "$work/workload.out"
probes=$(grep -o "enter=[0-9]*" "$work/workload.err" || echo "trace: $(du -sh "$work/trace" 2>/dev/null | cut -f1) in $work/trace")

after="$(sha256sum "$src/sqlite3.c" "$src/sqlite3.h")"
[ "$before" = "$after" ] || { echo "run.sh: the SQLite sources changed!" >&2; exit 1; }

ratio=$(echo "scale=2; $tins / $tsyn" | bc)
tscan=$(printf '%s\n' "${scans[@]}" | sort -n | head -1)
scanratio=$(echo "scale=2; $tscan / $tsyn" | bc)
rm -rf "$work/trace"
cat <<OUT
sqlite: $(grep -m1 '#define SQLITE_VERSION ' "$src/sqlite3.h" | awk '{print $3}'), $(wc -l <"$src/sqlite3.c") lines
scan (parse + call graph + heights + SQLite): ${tscan} s = ${scanratio}x clang-19 -fsyntax-only (best of 3)
plan: 50 most-called functions at depth 2 -> $planned planned functions, $sites sites, $skipped call sites refused
clang-19 -fsyntax-only: ${tsyn} s   instrumenter rewrite: ${tins} s   ratio: ${ratio}x (best of 3)
gcc compile of the instrumented file: $(echo "$b - $a" | bc) s; workload with $rtname: ok ($probes)
sources byte-identical: yes
OUT
