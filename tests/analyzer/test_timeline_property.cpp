// Property test of the critical-path engine on random multi-thread timelines: probes,
// hand-offs, lock and condition waits, attach/detach, several threads on one interval,
// intervals that end on another thread, and many equal timestamps. For every timeline the
// analysis must end (the walk terminates by construction), every interval's path must sum
// to its latency, and every variance tree must add up (residual <= 1e-9).
// A bounded, seeded run here; analyzer/fuzz/ drives the same generator for longer.
#include "engine.hpp"
#include "timeline_gen.hpp"
#include "vprof/analyzer.hpp"
#include "vprof/trace_reader.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace fs = std::filesystem;
namespace va = vprof::analyzer;

namespace {

fs::path fresh_dir(const std::string &name) {
  fs::path d =
      fs::temp_directory_path() / ("vprof-timeline-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

} // namespace

TEST(TimelineProperty, EveryRandomTimelineEndsAndSumsToItsLatency) {
  std::size_t intervals = 0, edges = 0;
  for (std::uint64_t seed = 1; seed <= 3000; ++seed) {
    auto dir = fresh_dir("t");
    if (std::getenv("VPROF_TIMELINE_TRACE"))
      std::fprintf(stderr, "seed %llu\n", static_cast<unsigned long long>(seed));
    vprof::testing::random_timeline(seed).write(dir);
    auto trace = vprof::trace::Trace::open(dir);
    auto eo = va::detail::run_engine(trace, {});
    ASSERT_EQ(eo.path_sum_mismatches, 0u) << "seed " << seed;
    intervals += eo.intervals.size();
    edges += eo.wake_edges;
    if (eo.intervals.size() >= 2) {
      va::AnalyzeOptions ao;
      ao.bootstrap_samples = 0;
      auto res = va::analyze_trace(trace, nullptr, ao);
      for (const auto &g : res.groups)
        EXPECT_LE(g.max_residual, 1e-9) << "seed " << seed;
    }
  }
  // the generator must exercise what it claims to
  EXPECT_GT(intervals, 3000u);
  EXPECT_GT(edges, 3000u);
}
