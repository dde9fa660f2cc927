#!/usr/bin/env bash
# Builds the trace fuzzer with clang-19 + libFuzzer + ASan/UBSan and runs it.
# Usage: analyzer/fuzz/run.sh [seconds=600] [reader|analyze|timeline]   (needs libclang-rt-19-dev)
#   reader, analyze: mutated trace bytes; timeline: the bytes choose a multi-thread timeline
#   (tests/analyzer/timeline_gen.hpp) on which the walk must end and every path sum hold.
# Corpus: build-fuzz/corpus (seeded from tests/analyzer/fuzz_corpus); crashes: build-fuzz/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-600}
mode=${2:-analyze}
out=$root/build-fuzz
mkdir -p "$out/corpus"
srcs=("$here/fuzz_trace.cpp" "$root"/analyzer/reader/src/*.cpp)
[ "$mode" = timeline ] && srcs[0]="$here/fuzz_timeline.cpp"
defs=()
if [ "$mode" = analyze ] || [ "$mode" = timeline ]; then
  srcs+=("$root"/analyzer/src/*.cpp)
  defs+=(-DVPROF_FUZZ_ANALYZE -I"$root/analyzer/include" -I"$root/workspace/include"
         -I/usr/include/eigen3 "$root"/workspace/src/*.cpp
         -I"$out/gen" -I"$root/analyzer/src" -I"$root/tests/analyzer" -lsqlite3)
  mkdir -p "$out/gen"
  { printf 'R"vprofsql('; cat "$root/workspace/src/schema.sql"; printf ')vprofsql"'; } > "$out/gen/schema.sql.inc"
  for asset in report.css report.js; do
    { printf 'R"vprofhtml('; cat "$root/analyzer/src/html/$asset"; printf ')vprofhtml"'; } > "$out/gen/$asset.inc"
  done
fi
clang++-19 -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$root/analyzer/reader/include" -I"$root/runtime/include" -I"$root/annotations/include" \
  "${srcs[@]}" "${defs[@]}" -o "$out/fuzz_trace_$mode"
cd "$out"
corpus=corpus
if [ "$mode" = timeline ]; then
  corpus=corpus-timeline
  mkdir -p "$corpus"
else
  cp -n "$root"/tests/analyzer/fuzz_corpus/* "$out/corpus/" 2>/dev/null || true
fi
exec ./fuzz_trace_$mode -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 "$corpus"
