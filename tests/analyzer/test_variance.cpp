// Variance trees, factors, bootstrap, what-if, store and expand, on builder traces with a
// known decomposition; property tests on random record soups (path sums, residuals).
#include "engine.hpp"
#include "plan_helpers.hpp"
#include "trace_builder.hpp"
#include "vprof/analyzer.hpp"
#include "vprof/trace_reader.hpp"
#include "vprof/workspace.hpp"
#include "vprof/workspace_rows.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <unistd.h>

namespace fs = std::filesystem;
namespace va = vprof::analyzer;
using vprof::testing::TraceBuilder;

namespace {

fs::path fresh_dir(const std::string &name) {
  fs::path d = fs::temp_directory_path() / ("vprof-var-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

const va::Node &node_by_path(const va::AnalysisResult &r, const std::string &p) {
  for (const auto &n : r.nodes)
    if (n.path == p)
      return n;
  throw std::runtime_error("no node " + p);
}
const va::Factor *factor_by_key(const va::GroupResult &g, const std::string &k) {
  for (const auto &f : g.factors)
    if (f.key == k)
      return &f;
  return nullptr;
}

// Intervals on one thread: [a: site 1 for xa ticks][b: site 2 for xb ticks], root gap 1.
fs::path two_children_trace(const std::string &name, const std::vector<std::pair<int, int>> &xs) {
  auto dir = fresh_dir(name);
  TraceBuilder b(1);
  auto &t = b.thread(1);
  std::uint64_t now = 0;
  std::uint64_t id = 1;
  for (auto [xa, xb] : xs) {
    t.emit(VPROF_REC_INTERVAL_BEGIN, id, now);
    t.enter(1, now + 1, 1).exit(1, now + 1 + xa, 1);
    t.enter(2, now + 1 + xa, 1).exit(2, now + 1 + xa + xb, 1);
    now += 1 + xa + xb;
    t.emit(VPROF_REC_INTERVAL_END, id++, now);
    now += 5;
  }
  b.write(dir);
  return dir;
}

double pop_var(const std::vector<double> &v) {
  double m = 0, s = 0;
  for (double x : v)
    m += x;
  m /= v.size();
  for (double x : v)
    s += (x - m) * (x - m);
  return s / v.size();
}

} // namespace

TEST(Variance, IndependentChildAndConstant) {
  std::vector<std::pair<int, int>> xs;
  std::vector<double> L;
  for (int i = 0; i < 50; ++i) {
    xs.push_back({10 + (i * 7) % 13, 20});
    L.push_back(1 + xs.back().first + 20);
  }
  auto res = va::analyze(two_children_trace("indep", xs), nullptr, {});
  ASSERT_EQ(res.groups.size(), 1u);
  const auto &g = res.groups[0];
  EXPECT_EQ(g.latency.count, 50u);
  EXPECT_NEAR(g.latency.var_ns2, pop_var(L), 1e-9);
  EXPECT_LE(g.max_residual, 1e-9);
  const va::Factor *fa = factor_by_key(g, "var:/s1");
  ASSERT_NE(fa, nullptr);
  EXPECT_NEAR(fa->share, 1.0, 1e-12);
  EXPECT_EQ(factor_by_key(g, "var:/s2"), nullptr); // constant: zero term, not listed
  // the top factor's what-if removes all variance
  ASSERT_FALSE(g.whatifs.empty());
  EXPECT_NEAR(g.whatifs[0].var_drop, 1.0, 1e-12);
}

TEST(Variance, CorrelatedChildrenCovarianceCountedTwice) {
  std::vector<std::pair<int, int>> xs;
  for (int i = 0; i < 40; ++i)
    xs.push_back({5 + i % 9, 5 + i % 9});
  auto res = va::analyze(two_children_trace("corr", xs), nullptr, {});
  const auto &g = res.groups[0];
  EXPECT_NEAR(factor_by_key(g, "var:/s1")->share, 0.25, 1e-12);
  EXPECT_NEAR(factor_by_key(g, "var:/s2")->share, 0.25, 1e-12);
  EXPECT_NEAR(factor_by_key(g, "cov:/s1|/s2")->share, 0.5, 1e-12);
  double sum = 0;
  for (const auto &f : g.factors)
    if (f.parent == 0)
      sum += f.share;
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

TEST(Variance, NegativeCovarianceKept) {
  std::vector<std::pair<int, int>> xs;
  for (int i = 0; i < 40; ++i)
    xs.push_back({10 + i % 5, 30 - 2 * (i % 5)}); // b falls when a rises
  auto res = va::analyze(two_children_trace("neg", xs), nullptr, {});
  const auto &g = res.groups[0];
  const va::Factor *c = factor_by_key(g, "cov:/s1|/s2");
  ASSERT_NE(c, nullptr);
  EXPECT_LT(c->share, 0);
  double sum = 0;
  for (const auto &f : g.factors)
    if (f.parent == 0)
      sum += f.term_ns2;
  EXPECT_NEAR(sum, g.latency.var_ns2, 1e-9 * std::max(1.0, g.latency.var_ns2));
  EXPECT_LE(g.max_residual, 1e-9);
}

TEST(Variance, BootstrapIsSeededAndBracketsTheShare) {
  std::vector<std::pair<int, int>> xs;
  std::mt19937 r(3);
  for (int i = 0; i < 200; ++i)
    xs.push_back({int(r() % 50), int(r() % 20)});
  auto dir = two_children_trace("boot", xs);
  va::AnalyzeOptions o;
  o.seed = 7;
  auto a = va::analyze(dir, nullptr, o), b = va::analyze(dir, nullptr, o);
  o.seed = 8;
  auto c = va::analyze(dir, nullptr, o);
  const auto &fa = a.groups[0].factors[0];
  ASSERT_TRUE(fa.has_ci);
  EXPECT_EQ(fa.share_lo, b.groups[0].factors[0].share_lo);
  EXPECT_EQ(fa.share_hi, b.groups[0].factors[0].share_hi);
  EXPECT_NE(fa.share_lo, c.groups[0].factors[0].share_lo);
  EXPECT_LE(fa.share_lo, fa.share);
  EXPECT_GE(fa.share_hi, fa.share);
  EXPECT_LT(fa.share_lo, fa.share_hi);
}

TEST(Variance, LabelsAreSeparateGroups) {
  auto dir = fresh_dir("labelgroups");
  TraceBuilder b(1);
  auto &t = b.thread(1);
  std::uint64_t now = 0;
  for (int i = 0; i < 20; ++i) {
    bool slow = i % 2;
    t.emit(VPROF_REC_INTERVAL_BEGIN, i + 1, now).emit(VPROF_REC_LABEL, slow ? 2 : 1, now);
    t.enter(slow ? 2 : 1, now, 1).exit(slow ? 2 : 1, now + (slow ? 100 + i : 10 + i % 3), 1);
    now += slow ? 100 + i : 10 + i % 3;
    t.emit(VPROF_REC_INTERVAL_END, i + 1, now);
  }
  b.label(1, "fast");
  b.label(2, "slow");
  b.write(dir);
  auto res = va::analyze(dir, nullptr, {});
  ASSERT_EQ(res.groups.size(), 3u);
  EXPECT_EQ(res.groups[1].label, "fast");
  EXPECT_EQ(res.groups[2].label, "slow");
  EXPECT_EQ(res.groups[1].latency.count, 10u);
  EXPECT_EQ(factor_by_key(res.groups[2], "var:/s1"), nullptr); // slow intervals never run s1
  EXPECT_NE(factor_by_key(res.groups[2], "var:/s2"), nullptr);
}

TEST(Variance, StoreAndExpandWithWorkspace) {
  auto dir = fresh_dir("expand");
  // a (fn 1, annotated root) calls b (fn 2) through call site 2; b calls c (fn 3) and d (fn 4).
  std::vector<std::pair<int, int>> xs;
  for (int i = 0; i < 30; ++i)
    xs.push_back({10 + (i * 5) % 17, 4});
  auto tdir = two_children_trace("expand-trace", xs);
  vprof::ws::Database db(dir / "vprof.db");
  db.exec(
      "INSERT INTO functions(id, usr, name, defined, height, annotated) VALUES "
      "(1,'a','a',1,3,1),(2,'b','b',1,1,0),(3,'c','c',1,0,0),(4,'d','d',1,0,0),(5,'e','e',1,0,0);"
      "INSERT INTO calls(caller, callee, kind, file, line, col) VALUES "
      "(1,2,'direct','f.c',1,1),(2,3,'direct','f.c',2,1),"
      "(2,4,'direct','f.c',3,1),(1,5,'direct','f.c',4,1);"
      "INSERT INTO sites(id, kind, function, callee, callee_name, file, line, col) VALUES "
      "(1,'call',1,2,'b','/src/f.c',10,3),(2,'call',1,5,'e','/src/f.c',11,3);"
      "INSERT INTO plans(iteration, function, reason) VALUES (0,1,'root');");
  auto res = va::analyze(tdir, &db, {});
  EXPECT_TRUE(res.heights_from_db);
  EXPECT_EQ(res.H, 3);
  EXPECT_EQ(node_by_path(res, "/s1").name, "b() @f.c:10");
  const auto &g = res.groups[0];
  ASSERT_FALSE(g.factors.empty());
  EXPECT_EQ(g.factors[0].key, "var:/s1");
  EXPECT_DOUBLE_EQ(g.factors[0].specificity, 1.0); // observed: one call below the root
  EXPECT_DOUBLE_EQ(g.factors[0].vprofiler_score,
                   4.0 * g.factors[0].share); // VProfiler's (3 - h(b)=1)^2 x share
  std::int64_t run = va::store(db, res, 0);
  EXPECT_GT(run, 0);
  {
    auto st = db.prepare("SELECT COUNT(*) FROM factors WHERE run = ?");
    st.bind(1, run);
    ASSERT_TRUE(st.step());
    EXPECT_EQ(st.int64(0), static_cast<std::int64_t>(g.factors.size()));
  }
  auto e = vprof::testing::expand(db, 0, 1, 8);
  EXPECT_FALSE(e.stop);
  EXPECT_EQ(e.reason, "expanded");
  std::vector<std::int64_t> added = e.added;
  std::sort(added.begin(), added.end());
  EXPECT_EQ(added, (std::vector<std::int64_t>{2, 3, 4}));
  {
    auto st = db.prepare("SELECT reason, factor FROM plans WHERE iteration = 1 AND function = 3");
    ASSERT_TRUE(st.step());
    EXPECT_EQ(st.text(0), "expand");
    EXPECT_EQ(st.text(1), "var:/s1");
  }
  // same top-k in iteration 1 -> stop
  va::store(db, res, 1);
  auto e2 = vprof::testing::expand(db, 1, 1, 8);
  EXPECT_TRUE(e2.stop);
  EXPECT_EQ(e2.reason, "top-k unchanged");
  auto e3 = vprof::testing::expand(db, 1, 1, 2);
  EXPECT_TRUE(e3.stop);
  EXPECT_THROW(vprof::testing::expand(db, 5, 1, 8), vprof::planner::PlanError);
  // JSON and text render
  EXPECT_NE(va::render_text(res).find("b() @f.c:10"), std::string::npos);
  EXPECT_NE(va::render_json(res).find("\"var:/s1\""), std::string::npos);
}

TEST(Variance, AllLeavesStops) {
  auto dir = fresh_dir("leaves");
  std::vector<std::pair<int, int>> xs;
  for (int i = 0; i < 10; ++i)
    xs.push_back({10 + i, 4});
  auto tdir = two_children_trace("leaves-trace", xs);
  vprof::ws::Database db(dir / "vprof.db");
  db.exec(
      "INSERT INTO functions(id, usr, name, defined, height, annotated) VALUES "
      "(1,'a','a',1,1,1),(2,'b','b',1,0,0);"
      "INSERT INTO calls(caller, callee, kind, file, line, col) VALUES (1,2,'direct','f.c',1,1);"
      "INSERT INTO sites(id, kind, function, callee, callee_name, file, line, col) VALUES "
      "(1,'call',1,2,'b','/src/f.c',10,3),(2,'call',1,2,'b','/src/f.c',11,3);"
      "INSERT INTO plans(iteration, function, reason) VALUES (0,1,'root'),(0,2,'depth');");
  auto res = va::analyze(tdir, &db, {});
  va::store(db, res, 0);
  auto e = vprof::testing::expand(db, 0, 2, 8);
  EXPECT_TRUE(e.stop);
  EXPECT_EQ(e.reason, "all top factors are leaves");
}

// Property: for random record soups (any kinds, objects, sites, threads, processes),
// every interval's critical path sums to its latency and every tree sums to its parent.
TEST(Property, RandomTracesAreExact) {
  static const unsigned kinds[] = {VPROF_REC_ENTER,          VPROF_REC_ENTER,
                                   VPROF_REC_ENTER,          VPROF_REC_EXIT,
                                   VPROF_REC_EXIT,           VPROF_REC_EXIT,
                                   VPROF_REC_INTERVAL_BEGIN, VPROF_REC_INTERVAL_END,
                                   VPROF_REC_ATTACH,         VPROF_REC_DETACH,
                                   VPROF_REC_LABEL,          VPROF_REC_LOCK_WAIT,
                                   VPROF_REC_LOCK_ACQUIRE,   VPROF_REC_LOCK_RELEASE,
                                   VPROF_REC_RWLOCK_WAIT_RD, VPROF_REC_RWLOCK_ACQUIRE_RD,
                                   VPROF_REC_RWLOCK_RELEASE, VPROF_REC_COND_WAIT_BEGIN,
                                   VPROF_REC_COND_WAIT_END,  VPROF_REC_COND_WAIT_TIMEOUT,
                                   VPROF_REC_COND_SIGNAL,    VPROF_REC_COND_BROADCAST,
                                   VPROF_REC_SEM_WAIT,       VPROF_REC_SEM_ACQUIRE,
                                   VPROF_REC_SEM_POST,       VPROF_REC_HANDOFF_SEND,
                                   VPROF_REC_HANDOFF_RECV,   VPROF_REC_WAIT_BEGIN,
                                   VPROF_REC_WAIT_END,       VPROF_REC_WAKE};
  std::uint64_t total_intervals = 0, total_edges = 0, total_nodes = 0;
  for (int seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    auto dir = fresh_dir("prop" + std::to_string(seed));
    int nproc = 1 + int(rng() % 2);
    for (int p = 0; p < nproc; ++p) {
      TraceBuilder b(100 + p, 1000 + rng() % 50);
      b.label(1, "x");
      b.label(2, "y");
      b.maps("7f0000000000-7f0000001000 rw-s 00000000 00:05 9 /dev/shm/p\n");
      int nthreads = 1 + int(rng() % 4);
      for (int th = 0; th < nthreads; ++th) {
        auto &t = b.thread(100 * (p + 1) + th);
        std::uint64_t now = rng() % 20;
        int n = 50 + int(rng() % 300);
        for (int i = 0; i < n; ++i) {
          unsigned k = kinds[rng() % (sizeof kinds / sizeof kinds[0])];
          std::uint64_t arg;
          if (k == VPROF_REC_ENTER || k == VPROF_REC_EXIT)
            arg = (1 + rng() % 5) | ((rng() % 6) << 32);
          else if (k >= VPROF_REC_INTERVAL_BEGIN && k <= VPROF_REC_LABEL)
            arg = 1 + rng() % 6;
          else
            arg = (rng() % 2 ? 0x7f0000000000ull : 0x1000ull) + 8 * (rng() % 3);
          t.emit(k, arg, now);
          now += rng() % 4 == 0 ? 0 : rng() % 30;
        }
      }
      b.write(dir);
    }
    auto tr = vprof::trace::Trace::open(dir);
    auto eo = va::detail::run_engine(tr, {});
    EXPECT_EQ(eo.path_sum_mismatches, 0u) << "seed " << seed;
    EXPECT_EQ(eo.inexact_splits, 0u) << "seed " << seed;
    total_intervals += eo.intervals.size();
    total_edges += eo.wake_edges;
    total_nodes += eo.nodes.size();
    va::AnalyzeOptions o;
    o.bootstrap_samples = 20;
    auto res = va::analyze_trace(tr, nullptr, o);
    for (const auto &g : res.groups) {
      EXPECT_LE(g.max_residual, 1e-9) << "seed " << seed;
      double sum = 0;
      for (const auto &ns : g.nodes)
        if (ns.node == 0)
          EXPECT_NEAR(ns.var_ns2, g.latency.var_ns2, 1e-9 * std::max(1.0, g.latency.var_ns2));
      for (const auto &f : g.factors)
        if (f.parent == 0)
          sum += f.term_ns2;
      if (g.factors.size() < 500)
        EXPECT_NEAR(sum, g.latency.var_ns2, 1e-9 * std::max(1.0, g.latency.var_ns2)) << seed;
    }
  }
  // the soups must exercise the engine: many intervals, wake-up edges, deep trees
  EXPECT_GT(total_intervals, 200u);
  EXPECT_GT(total_edges, 100u);
  EXPECT_GT(total_nodes, 400u);
  std::printf("property: %llu intervals, %llu edges, %llu nodes\n",
              (unsigned long long)total_intervals, (unsigned long long)total_edges,
              (unsigned long long)total_nodes);
}

// A lock wait whose holder runs serve (planned) -> work (planned) -> deep (not planned):
// expanding the wait (or the blocked lock call above it) must reach the holder's deep
// work, not stop at the holder's already-planned top frame.
TEST(Variance, ExpandFollowsTheWakerSubtree) {
  auto dir = fresh_dir("expand-waker");
  TraceBuilder b(1);
  for (std::uint64_t i = 0; i < 30; ++i) {
    std::uint64_t t = i * 10000, w = 100 + (i * 37) % 200;
    b.thread(1)
        .emit(VPROF_REC_INTERVAL_BEGIN, i + 1, t)
        .enter(1, t + 10, 1)
        .emit(VPROF_REC_LOCK_WAIT, 0xA0, t + 10)
        .emit(VPROF_REC_LOCK_ACQUIRE, 0xA0, t + 20 + w)
        .exit(1, t + 22 + w, 1)
        .emit(VPROF_REC_INTERVAL_END, i + 1, t + 25 + w);
    b.thread(2)
        .enter(5, t, 1)
        .emit(VPROF_REC_LOCK_ACQUIRE, 0xA0, t + 1)
        .enter(6, t + 2, 1)
        .enter(7, t + 3, 2)
        .exit(7, t + 3 + w, 2)
        .exit(6, t + 4 + w, 1)
        .emit(VPROF_REC_LOCK_RELEASE, 0xA0, t + 10 + w)
        .exit(5, t + 11 + w, 1);
  }
  auto tdir = dir / "trace";
  b.write(tdir);
  vprof::ws::Database db(dir / "vprof.db");
  db.exec("INSERT INTO functions(id, usr, name, defined, height, annotated) VALUES "
          "(1,'txn','txn',1,3,1),(2,'lock','lock',0,0,0),(10,'serve','serve',1,2,0),"
          "(11,'work','work',1,1,0),(12,'deep','deep',1,0,0);"
          "INSERT INTO calls(caller, callee, kind, file, line, col) VALUES "
          "(1,2,'direct','f.c',1,1),(10,11,'direct','f.c',2,1),"
          "(11,12,'direct','f.c',3,1);"
          "INSERT INTO sites(id, kind, function, callee, callee_name, file, line, col) VALUES "
          "(1,'call',1,2,'lock','/src/f.c',10,3),(5,'body',10,NULL,NULL,'/src/f.c',20,1),"
          "(6,'call',10,11,'work','/src/f.c',21,3),(7,'body',11,NULL,NULL,'/src/f.c',30,1);"
          "INSERT INTO plans(iteration, function, reason) VALUES "
          "(0,1,'root'),(0,10,'root'),(0,11,'depth');");
  auto res = va::analyze(tdir, &db, {});
  EXPECT_EQ(res.wake_edges, 30u);
  va::store(db, res, 0);
  for (int k : {1, 2}) {
    db.exec("DELETE FROM plans WHERE iteration = 1");
    auto e = vprof::testing::expand(db, 0, k, 8);
    EXPECT_EQ(e.reason, "expanded") << "k=" << k;
    auto st = db.prepare("SELECT COUNT(*) FROM plans WHERE iteration = 1 AND function = 12");
    ASSERT_TRUE(st.step());
    EXPECT_EQ(st.int64(0), 1) << "the holder's callee 'deep' must be planned, k=" << k;
  }
}

// A top factor whose functions and callees are all planned gives its place to the next
// one: with k = 1, the stuck top (b, callees planned) must not end the loop while the
// second-ranked factor (e, with an unplanned callee f) can still be expanded.
TEST(Variance, ExpandSkipsTopFactorsWithNothingToAdd) {
  auto dir = fresh_dir("expand-skip");
  std::vector<std::pair<int, int>> xs;
  for (int i = 0; i < 30; ++i)
    xs.push_back({10 + (i * 5) % 17, 2 + (i * 3) % 5});
  auto tdir = two_children_trace("expand-skip-trace", xs);
  vprof::ws::Database db(dir / "vprof.db");
  db.exec("INSERT INTO functions(id, usr, name, defined, height, annotated) VALUES "
          "(1,'a','a',1,3,1),(2,'b','b',1,1,0),(3,'c','c',1,0,0),(5,'e','e',1,1,0),"
          "(6,'f','f',1,0,0);"
          "INSERT INTO calls(caller, callee, kind, file, line, col) VALUES "
          "(1,2,'direct','f.c',1,1),(2,3,'direct','f.c',2,1),"
          "(1,5,'direct','f.c',4,1),(5,6,'direct','f.c',5,1);"
          "INSERT INTO sites(id, kind, function, callee, callee_name, file, line, col) VALUES "
          "(1,'call',1,2,'b','/src/f.c',10,3),(2,'call',1,5,'e','/src/f.c',11,3);"
          "INSERT INTO plans(iteration, function, reason) VALUES "
          "(0,1,'root'),(0,2,'depth'),(0,3,'depth'),(0,5,'depth');");
  auto res = va::analyze(tdir, &db, {});
  ASSERT_FALSE(res.groups[0].factors.empty());
  ASSERT_EQ(res.groups[0].factors[0].key, "var:/s1"); // b: nothing left to add below it
  va::store(db, res, 0);
  auto e = vprof::testing::expand(db, 0, 1, 8);
  EXPECT_EQ(e.reason, "expanded");
  auto st = db.prepare("SELECT COUNT(*) FROM plans WHERE iteration = 1 AND function = 6");
  ASSERT_TRUE(st.step());
  EXPECT_EQ(st.int64(0), 1) << "f, below the second factor, must be planned";
}

// An event loop's interval: begun where a command is processed (site 1), ended where its
// reply is written (site 2), and between them the loop's own work in no probed function
// (g ticks). That time is the place "outside probed functions": its mean, share and
// contribution are those of the gaps, and the places' contributions sum to 1.
TEST(Variance, TimeOutsideEveryProbedFunctionIsAPlaceOfTheReport) {
  auto dir = fresh_dir("outside");
  TraceBuilder b(1);
  auto &t = b.thread(1);
  std::uint64_t now = 0, id = 1;
  std::vector<double> gaps, L;
  for (int i = 0; i < 60; ++i) {
    const std::uint64_t xa = 5 + i % 3, g = 20 + (i * 37) % 200, xb = 4 + i % 5;
    t.emit(VPROF_REC_INTERVAL_BEGIN, id, now);
    t.enter(1, now, 1).exit(1, now + xa, 1);
    t.enter(2, now + xa + g, 1).exit(2, now + xa + g + xb, 1);
    now += xa + g + xb;
    t.emit(VPROF_REC_INTERVAL_END, id++, now);
    now += 50;
    gaps.push_back(static_cast<double>(g));
    L.push_back(static_cast<double>(xa + g + xb));
  }
  b.write(dir);
  auto r = va::analyze(dir, nullptr, {});
  ASSERT_EQ(r.groups.size(), 1u);
  const auto &g = r.groups[0];
  ASSERT_FALSE(g.places.empty());
  const va::Place &top = g.places.front();
  EXPECT_EQ(top.key, "o:outside");
  EXPECT_EQ(top.name, "outside probed functions");
  EXPECT_EQ(top.kind, va::Place::Kind::Outside);
  double mean = 0;
  for (double x : gaps)
    mean += x / static_cast<double>(gaps.size());
  EXPECT_NEAR(top.mean_ns, mean, 1e-6);
  EXPECT_NEAR(top.share, pop_var(gaps) / pop_var(L), 1e-9);
  EXPECT_GT(top.contribution, 0.9);
  double sum = 0;
  for (const auto &p : g.places)
    sum += p.contribution;
  EXPECT_NEAR(sum, 1.0, 1e-9) << "the places partition L";
  EXPECT_TRUE(g.waits.empty());
}
