// Fleet benchmark, the analyzer's side (benchmarks/fleet/run.sh): a synthetic fleet of N hosts
// x M intervals over one 16-node calling-context tree (a lock wait with the holder's work
// below it, nodes present in part of the intervals, two interval types), made by a hash of
// (host, interval, node) so that every run and both sides see the same numbers.
//   fleet_bench rows DIR HOST M      the rows of one host (export_rows' TSV files) for
//                                    `python -m vprof_fleet convert` (the DuckDB side)
//   fleet_bench analyze N M [--full] the analyzer's statistics over all N x M intervals in
//                                    one process: per interval type the node-time matrices,
//                                    Var(L), the variance trees and places (what the SQL
//                                    computes); --full adds ranking, 200 bootstrap resamples
//                                    and what-if. Prints JSON: seconds, the RSS of the input
//                                    (the engine's output) and the peak RSS, Var(L).
#include "../common/proc_status.hpp"
#include "engine.hpp"
#include "stages.hpp"
#include "vprof/analyzer.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

using namespace vprof::analyzer;
using namespace vprof::analyzer::detail;

std::uint64_t mix(std::uint64_t x) { // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// One node of the synthetic tree: its parent, engine label, self time base + U[0, spread) ns,
// and which presence draw it follows (-1: every interval).
struct Shape {
  std::uint32_t parent;
  std::uint64_t label;
  std::int64_t base, spread;
  int draw;
};
constexpr std::uint64_t kWait = kLabelWaitBase;
const Shape kTree[] = {
    {kNoParent, 0, 0, 0, -1},            // 0 the interval
    {0, 1, 2000, 500, -1},               // 1 handler body
    {1, 2, 50, 10, -1},                  // 2 call parse
    {2, 3, 20000, 20000, -1},            // 3 parse body
    {1, 4, 50, 10, -1},                  // 4 call execute
    {4, 5, 5000, 2000, -1},              // 5 execute body
    {5, 6, 50, 10, 0},                   // 6 call read_page (60 %)
    {6, 7, 80000, 160000, 0},            // 7 read_page body: the big variance
    {5, kWait + kMutex, 1000, 500, 1},   // 8 [wait:mutex] (30 %)
    {8, 9, 30000, 60000, 1},             // 9 the holder's body (waker's work)
    {9, 10, 10000, 50000, 1},            // 10 the holder's fsync call
    {8, kWait + kWakeup, 3000, 3000, 1}, // 11 [wake-up delay]
    {1, 12, 50, 10, -1},                 // 12 call log
    {12, 13, 10000, 5000, -1},           // 13 log body (+ a quarter of read_page's)
    {0, kLabelUntracked, 500, 500, -1},  // 14 (untracked)
    {5, 15, 200, 400, 2},                // 15 call alloc (50 %)
};
constexpr int kNodes = sizeof kTree / sizeof kTree[0];
constexpr std::uint64_t kPresence[] = {600, 300, 500}; // per mille, per draw

// Appends host `host`'s M intervals (ids 1..M) to `eo`.
void synthesize(EngineOutput &eo, std::uint64_t host, std::uint64_t M) {
  if (eo.nodes.empty()) {
    for (const auto &s : kTree)
      eo.nodes.push_back({s.parent, s.label});
    eo.labels = {"", "read", "write"};
    eo.ticks_per_second = 1e9;
  }
  for (std::uint64_t i = 1; i <= M; ++i) {
    const std::uint64_t key = (host << 40) ^ (i << 8);
    IntervalRec r{};
    r.id = i;
    r.label = 1 + static_cast<std::uint32_t>(mix(key ^ 0xff) % 2);
    r.times_off = eo.times.size();
    bool present[3];
    for (int d = 0; d < 3; ++d)
      present[d] = mix(key ^ (0xf0 + static_cast<std::uint64_t>(d))) % 1000 < kPresence[d];
    std::int64_t read_ticks = 0, total = 0;
    for (int n = 1; n < kNodes; ++n) {
      const Shape &s = kTree[n];
      if (s.draw >= 0 && !present[s.draw])
        continue;
      std::int64_t t = s.base + static_cast<std::int64_t>(mix(key ^ static_cast<std::uint64_t>(n)) %
                                                          static_cast<std::uint64_t>(s.spread));
      if (n == 7)
        read_ticks = t;
      if (n == 13)
        t += read_ticks / 4;
      eo.times.push_back({static_cast<std::uint32_t>(n), t});
      total += t;
    }
    r.times_n = static_cast<std::uint32_t>(eo.times.size() - r.times_off);
    r.begin = 0;
    r.end = total;
    eo.intervals.push_back(r);
  }
}

int usage() {
  std::fprintf(stderr, "usage: fleet_bench rows DIR HOST M | fleet_bench analyze N M [--full]\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  if (argc >= 5 && std::strcmp(argv[1], "rows") == 0) {
    EngineOutput eo;
    synthesize(eo, std::strtoull(argv[3], nullptr, 10), std::strtoull(argv[4], nullptr, 10));
    AnalysisResult res;
    name_nodes(eo, DbFacts{}, res);
    write_rows(eo, res, assign_places(res, DbFacts{}), argv[2]);
    return 0;
  }
  if (argc < 4 || std::strcmp(argv[1], "analyze") != 0)
    return usage();
  const std::uint64_t N = std::strtoull(argv[2], nullptr, 10);
  const std::uint64_t M = std::strtoull(argv[3], nullptr, 10);
  const bool full = argc > 4 && std::strcmp(argv[4], "--full") == 0;
  auto t0 = std::chrono::steady_clock::now();
  EngineOutput eo;
  eo.intervals.reserve(N * M);
  eo.times.reserve(N * M * 13);
  for (std::uint64_t h = 1; h <= N; ++h)
    synthesize(eo, h, M);
  auto t1 = std::chrono::steady_clock::now();
  const long input_kb = vprof::bench::status_kb("VmRSS:");
  AnalysisResult res;
  const DbFacts facts;
  name_nodes(eo, facts, res);
  const NodeFacts nf = heights_and_specificity(facts, res);
  const PlaceTable pt = assign_places(res, facts);
  AnalyzeOptions opt;
  std::mt19937_64 rng(opt.seed);
  std::string groups;
  for (auto &group : interval_groups(eo, opt.min_group_size)) {
    GroupResult gr;
    gr.label = group.label;
    const GroupTimes gt = group_times(eo, group.intervals);
    gr.latency = latency_stats(gt);
    Terms terms = variance_trees(res, facts, nf, pt, gt, opt, gr);
    place_stats(nf, pt, gt, opt, gr);
    if (full) {
      gr.histogram = latency_histogram(gt);
      wait_stats(res, nf, pt, gt, gr);
      std::vector<std::size_t> order =
          rank_factors(res, nf, terms.factors, opt.max_factors, &pt, &gr);
      for (auto r : order)
        gr.factors.push_back(terms.factors[r]);
      bootstrap_intervals(gt, terms, order, opt, rng, gr, res.warnings);
      apply_noise_floor(gr, order, opt.noise_share);
      what_if(gt, terms, order, opt.whatif_factors, gr);
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s{\"label\": \"%s\", \"intervals\": %llu, \"var_ns2\": %.17g}",
                  groups.empty() ? "" : ", ", gr.label.c_str(),
                  static_cast<unsigned long long>(gr.latency.count), gr.latency.var_ns2);
    groups += buf;
  }
  auto t2 = std::chrono::steady_clock::now();
  std::printf("{\"hosts\": %llu, \"intervals_per_host\": %llu, \"rows\": %zu, \"full\": %s, "
              "\"synthesize_s\": %.3f, \"analyze_s\": %.3f, \"input_rss_mb\": %.1f, "
              "\"peak_rss_mb\": %.1f, "
              "\"groups\": [%s]}\n",
              static_cast<unsigned long long>(N), static_cast<unsigned long long>(M),
              eo.times.size() + eo.intervals.size(), full ? "true" : "false",
              std::chrono::duration<double>(t1 - t0).count(),
              std::chrono::duration<double>(t2 - t1).count(),
              static_cast<double>(input_kb) / 1024.0,
              static_cast<double>(vprof::bench::status_kb("VmHWM:")) / 1024.0, groups.c_str());
  return 0;
}
