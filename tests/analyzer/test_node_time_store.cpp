// The engine's intervals streamed into the analysis (docs/statistics.md, "Sums, not
// matrices"): the engine's sink hands over the same intervals it keeps without one, the
// NodeTimeStore gives back what it was given, and a group's sums read from the store are
// the very doubles of the same group read from the engine's whole output.
#include "node_time_store.hpp"
#include "order_statistics.hpp"
#include "stages.hpp"
#include "trace_builder.hpp"
#include "vprof/trace_reader.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include <unistd.h>

using namespace vprof::analyzer;
using namespace vprof::analyzer::detail;

namespace {

// n intervals over a small tree with 3 labels, self times random (some negative, some
// large: the coding must keep them all), more than one block of rows per group.
EngineOutput labelled_group(std::uint32_t n, std::uint64_t seed) {
  EngineOutput eo;
  eo.nodes = {{kNoParent, 0}, {0, 1}, {0, 2}, {1, 3}, {3, 4}};
  eo.labels = {"", "a", "b"};
  eo.ticks_per_second = 2.5e9;
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> ex(1.0 / 5000);
  for (std::uint32_t i = 0; i < n; ++i) {
    IntervalRec r{};
    r.id = i + 1;
    r.label = static_cast<std::uint32_t>(rng() % 3);
    r.times_off = eo.times.size();
    for (std::uint32_t nd = 0; nd < 5; ++nd)
      if (nd == 0 || rng() % 4)
        eo.times.push_back({nd, nd == 4 && i % 97 == 0 ? -3 : static_cast<std::int64_t>(ex(rng))});
    if (i == 7)
      eo.times.back().ticks = std::int64_t{1} << 50;
    r.times_n = static_cast<std::uint32_t>(eo.times.size() - r.times_off);
    eo.intervals.push_back(r);
  }
  return eo;
}

// The store filled from eo in blocks of `block` intervals, as the engine's sink would.
void fill(NodeTimeStore &store, const EngineOutput &eo, std::size_t block) {
  for (std::size_t first = 0; first < eo.intervals.size(); first += block) {
    std::vector<IntervalRec> ivs;
    std::vector<NodeTime> times;
    for (std::size_t i = first; i < std::min(eo.intervals.size(), first + block); ++i) {
      IntervalRec r = eo.intervals[i];
      const auto off = r.times_off;
      r.times_off = times.size();
      times.insert(times.end(), eo.times.begin() + static_cast<std::ptrdiff_t>(off),
                   eo.times.begin() + static_cast<std::ptrdiff_t>(off + r.times_n));
      ivs.push_back(r);
    }
    store.append(ivs, times);
  }
}

} // namespace

TEST(NodeTimeStore, GivesBackEveryIntervalsNodeTimesInOrderAndByLabel) {
  const EngineOutput eo = labelled_group(5000, 3);
  NodeTimeStore store;
  fill(store, eo, 777);
  EXPECT_EQ(store.intervals(), 5000u);
  EXPECT_LT(store.bytes(), eo.times.size() * sizeof(NodeTime)); // smaller than in memory
  for (std::int64_t label : {-1, 0, 1, 2}) {
    std::size_t i = 0, seen = 0;
    store.for_each_interval(label, [&](const NodeTime *t, std::uint32_t n) {
      while (label >= 0 && eo.intervals[i].label != label)
        ++i;
      ASSERT_LT(i, eo.intervals.size());
      const IntervalRec &r = eo.intervals[i++];
      ASSERT_EQ(n, r.times_n);
      for (std::uint32_t k = 0; k < n; ++k) {
        EXPECT_EQ(t[k].node, eo.times[r.times_off + k].node);
        EXPECT_EQ(t[k].ticks, eo.times[r.times_off + k].ticks);
      }
      ++seen;
    });
    std::size_t want = 0;
    for (const auto &r : eo.intervals)
      want += label < 0 || r.label == label;
    EXPECT_EQ(seen, want) << "label " << label;
  }
}

TEST(NodeTimeStore, AnUnwritableDirectoryIsAnErrorNamingIt) {
  try {
    NodeTimeStore store("/nonexistent-vprof-dir");
    FAIL() << "no error";
  } catch (const AnalysisError &e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-vprof-dir"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("TMPDIR"), std::string::npos) << e.what();
  }
}

// Every group's sums from the store equal, bit for bit, those from the engine's output: the
// same rows in the same order and the same blocks.
TEST(NodeTimeStore, GroupSumsFromTheStoreAreTheEngineOutputsOnes) {
  const EngineOutput eo = labelled_group(12000, 9);
  NodeTimeStore store;
  fill(store, eo, 4096);
  std::vector<std::uint64_t> counts(3, 0);
  for (const auto &r : eo.intervals)
    ++counts[r.label];
  const auto from_eo = interval_groups(eo, 2);
  const auto from_counts = interval_groups(counts, eo.labels, 2);
  ASSERT_EQ(from_eo.size(), from_counts.size());
  for (std::size_t g = 0; g < from_eo.size(); ++g) {
    EXPECT_EQ(from_eo[g].label, from_counts[g].label);
    EXPECT_EQ(from_eo[g].intervals.size(), from_counts[g].count);
    const GroupTimes a = group_times(eo, from_eo[g].intervals);
    const GroupTimes b = group_times(store, eo.nodes, eo.ticks_per_second, from_counts[g]);
    EXPECT_EQ(a.present, b.present);
    EXPECT_EQ(column(a, {0, false}), column(b, {0, false}));
    EXPECT_EQ(a.L_min, b.L_min);
    EXPECT_EQ(a.L_max, b.L_max);
    for (Eigen::Index v = 0; v < a.cols.size(); ++v) {
      EXPECT_EQ(a.cols.mean(v), b.cols.mean(v));
      EXPECT_EQ(a.cols.var(v), b.cols.var(v));
      EXPECT_EQ(a.cols.cov_ref(v), b.cols.cov_ref(v));
    }
    for (const auto &[nd, cp] : a.trees)
      EXPECT_EQ(cp.cov(), b.trees.at(nd).cov());
    const DenseTimes da = dense_times(a), db = dense_times(b);
    EXPECT_EQ(da.S, db.S);
    EXPECT_EQ(da.T, db.T);
  }
}

// The engine's sink receives, block by block, exactly the intervals and node times the
// engine keeps without one, and the engine keeps none of them.
TEST(NodeTimeStore, TheEnginesSinkHandsOverWhatItWouldKeep) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("vprof-sink-" + std::to_string(::getpid()));
  vprof::testing::TraceBuilder b(1);
  auto &w = b.thread(1);
  std::uint64_t t = 0;
  for (std::uint64_t i = 0; i < 50; ++i, t += 100) {
    w.emit(VPROF_REC_INTERVAL_BEGIN, i + 1, t);
    w.enter(3, t + 1, 1).enter(4, t + 2 + i % 7, 2).exit(4, t + 20, 2).exit(3, t + 30 + i, 1);
    w.emit(VPROF_REC_INTERVAL_END, i + 1, t + 90);
  }
  fs::remove_all(dir);
  b.write(dir);
  auto tr = vprof::trace::Trace::open(dir);
  const EngineOutput whole = run_engine(tr, {});
  ASSERT_EQ(whole.intervals.size(), 50u);
  std::vector<IntervalRec> got;
  std::vector<NodeTime> got_times;
  std::size_t blocks = 0;
  EngineOptions opt;
  opt.sink_block = 8;
  opt.sink = [&](const std::vector<IntervalRec> &ivs, const std::vector<NodeTime> &times) {
    ++blocks;
    EXPECT_LE(ivs.size(), 8u);
    for (IntervalRec r : ivs) {
      for (std::uint32_t k = 0; k < r.times_n; ++k)
        got_times.push_back(times[r.times_off + k]);
      got.push_back(r);
    }
  };
  const EngineOutput streamed = run_engine(tr, opt);
  EXPECT_TRUE(streamed.intervals.empty());
  EXPECT_TRUE(streamed.times.empty());
  EXPECT_EQ(streamed.intervals_finished, 50u);
  EXPECT_EQ(whole.intervals_finished, 50u);
  EXPECT_EQ(streamed.first_begin, whole.intervals.front().begin);
  EXPECT_EQ(streamed.last_end, whole.intervals.back().end);
  EXPECT_EQ(blocks, 7u); // 6 full blocks, the rest at the end
  ASSERT_EQ(got.size(), whole.intervals.size());
  ASSERT_EQ(got_times.size(), whole.times.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].id, whole.intervals[i].id);
    EXPECT_EQ(got[i].begin, whole.intervals[i].begin);
    EXPECT_EQ(got[i].times_n, whole.intervals[i].times_n);
  }
  for (std::size_t k = 0; k < got_times.size(); ++k) {
    EXPECT_EQ(got_times[k].node, whole.times[k].node);
    EXPECT_EQ(got_times[k].ticks, whole.times[k].ticks);
  }
  fs::remove_all(dir);
}

// Exact order statistics in passes (OrderStatistics): every rank equals the sorted sample's,
// for a heavy tail with ties and negative values, and for more equal values than a pass
// collects (the bits resolve them without collecting).
TEST(OrderStatistics, EveryRankIsTheSortedSamplesValue) {
  std::mt19937_64 rng(17);
  std::lognormal_distribution<double> heavy(10, 2);
  std::vector<double> v;
  for (int i = 0; i < 200000; ++i)
    v.push_back(i % 10 == 0 ? std::round(heavy(rng)) : i % 7 == 0 ? -heavy(rng) : heavy(rng));
  for (int i = 0; i < 3000; ++i)
    v.push_back(42.0);
  auto sorted = v;
  std::sort(sorted.begin(), sorted.end());
  const std::uint64_t n = v.size();
  std::vector<std::uint64_t> ranks{0, 1, n / 2, n / 2 + 1, n - 2000, n - 1, 12345};
  OrderStatistics os(n, ranks);
  int passes = 0;
  do {
    for (double x : v)
      os.add(x);
    ++passes;
  } while (!os.end_pass());
  EXPECT_LE(passes, 3);
  for (std::size_t i = 0; i < ranks.size(); ++i)
    EXPECT_EQ(os.value(i), sorted[ranks[i]]) << "rank " << ranks[i];

  const std::uint64_t many = OrderStatistics::kCollect + 1000;
  OrderStatistics same(many + 2, {0, many / 2, many + 1});
  do {
    for (std::uint64_t i = 0; i < many; ++i)
      same.add(3.25);
    same.add(-1);
    same.add(7);
  } while (!same.end_pass());
  EXPECT_EQ(same.value(0), -1);
  EXPECT_EQ(same.value(1), 3.25);
  EXPECT_EQ(same.value(2), 7);
}

// The group's latency statistics without its latencies in memory: the order statistics are
// the vector's exactly; the mean and Var(L) (the first pass's sums) within 1e-12.
TEST(OrderStatistics, LatencyStatsOfAGroupAreTheVectorsOnes) {
  const EngineOutput eo = labelled_group(30000, 4);
  for (const auto &g : interval_groups(eo, 2)) {
    const GroupTimes gt = group_times(eo, g.intervals);
    const Eigen::VectorXd L = column(gt, {0, false});
    const LatencyStats a = latency_stats(L), b = latency_stats(gt);
    EXPECT_EQ(a.count, b.count);
    EXPECT_EQ(a.min_ns, b.min_ns);
    EXPECT_EQ(a.max_ns, b.max_ns);
    EXPECT_EQ(a.p50_ns, b.p50_ns);
    EXPECT_EQ(a.p95_ns, b.p95_ns);
    EXPECT_EQ(a.p99_ns, b.p99_ns);
    EXPECT_NEAR(a.mean_ns, b.mean_ns, 1e-12 * a.mean_ns);
    EXPECT_NEAR(a.var_ns2, b.var_ns2, 1e-12 * a.var_ns2);
    const LatencyHistogram ha = latency_histogram(L), hb = latency_histogram(gt);
    EXPECT_EQ(ha.counts, hb.counts);
    EXPECT_EQ(ha.lo_ns, hb.lo_ns);
    EXPECT_EQ(ha.hi_ns, hb.hi_ns);
  }
}
