// The runtime's own frame (site VPROF_SITE_PROFILER, written after a record that waited for a
// full window's flush): its time is a node and a place of its own, "(profiler)", not the self
// time of the function the stall interrupted (docs/trace-format.md, "The profiler's frame").
#include "engine_paths.hpp"
#include "trace_builder.hpp"
#include "vprof/analyzer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace fs = std::filesystem;
namespace va = vprof::analyzer;
using namespace vprof::analyzer::detail;
using vprof::testing::self_times;
using vprof::testing::Times;
using vprof::testing::TraceBuilder;

namespace {

constexpr std::uint32_t kDeep = 1000; // the runtime's frame: deeper than the program's

fs::path fresh_dir(const std::string &name) {
  return vprof::testing::fresh_engine_dir("profiler", name);
}

} // namespace

TEST(ProfilerFrame, TheStallIsANodeOfItsOwnBelowTheFunctionItInterrupted) {
  auto dir = fresh_dir("node");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 10, 1)
      .enter(VPROF_SITE_PROFILER, 20, kDeep)
      .exit(VPROF_SITE_PROFILER, 50, kDeep)
      .exit(1, 70, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 100);
  b.write(dir);
  auto eo = vprof::testing::run_exact(dir);
  ASSERT_EQ(eo.intervals.size(), 1u);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/", 40}, {"/s1", 30}, {"/s1/s4294967295", 30}}));
}

TEST(ProfilerFrame, ItsPlaceIsNamedProfilerAndTakesTheStallsVariance) {
  // 400 intervals of site 1 for 100 ticks; every 10th flushes a window inside it for 5,000
  auto dir = fresh_dir("place");
  TraceBuilder b(1);
  auto &t = b.thread(1);
  std::uint64_t now = 0;
  for (std::uint64_t id = 1; id <= 400; ++id) {
    t.emit(VPROF_REC_INTERVAL_BEGIN, id, now).enter(1, now + 1, 1);
    now += 51;
    if (id % 10 == 0) {
      t.enter(VPROF_SITE_PROFILER, now, kDeep).exit(VPROF_SITE_PROFILER, now + 5000, kDeep);
      now += 5000;
    }
    now += 50;
    t.exit(1, now, 1).emit(VPROF_REC_INTERVAL_END, id, now + 1);
    now += 10;
  }
  b.write(dir);
  auto res = va::analyze(dir, nullptr, {});
  const auto &g = res.groups.front();
  ASSERT_FALSE(g.places.empty());
  EXPECT_EQ(g.places.front().name, "(profiler)");
  EXPECT_NEAR(g.places.front().contribution, 1.0, 1e-9) << "site 1's own time is constant";
  auto site1 = std::find_if(g.places.begin(), g.places.end(),
                            [](const va::Place &p) { return p.name == "site 1"; });
  ASSERT_NE(site1, g.places.end());
  EXPECT_NEAR(site1->mean_ns, 100.0, 1e-6) << "the stall is not the function's";
}
