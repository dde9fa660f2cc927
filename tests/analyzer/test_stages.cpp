// The analysis stages of analyzer/src/stages.hpp, one by one, on hand-built engine output
// and workspace facts whose results are known in closed form: specificity across a wake-up
// edge, place assignment, interval groups, the time matrices, the ranking's tie rules, the
// noise floor and what-if.
#include "stages.hpp"
#include "trace_builder.hpp"
#include "vprof/trace_reader.hpp"

#include <gtest/gtest.h>

#include <random>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace vprof::analyzer;
using namespace vprof::analyzer::detail;

namespace {

SiteInfo body_site(std::int64_t fn, const std::string &name, int height, bool has_callees) {
  SiteInfo s;
  s.kind = "body";
  s.function = s.caller = fn;
  s.name = s.caller_name = name;
  s.height = height;
  s.has_callees = has_callees;
  return s;
}

SiteInfo call_site(std::int64_t caller, const std::string &caller_name, std::int64_t callee,
                   const std::string &callee_name, int height, bool external) {
  SiteInfo s;
  s.kind = "call";
  s.caller = caller;
  s.caller_name = caller_name;
  s.function = external ? 0 : callee;
  s.callee_name = callee_name;
  s.name = callee_name + "()";
  s.height = height;
  s.external = external;
  s.has_callees = !external;
  return s;
}

// The tree: root -> s1 (serve's body, h 2) -> s2 (a call of lock_row, h 1) ->
// wait:mutex -> s3 (the holder's flush body, h 1) -> s4 (fsync called in flush: outside,
// ranked at flush's height).
EngineOutput convoy_tree() {
  EngineOutput eo;
  eo.nodes = {{kNoParent, 0}, {0, 1}, {1, 2}, {2, kLabelWaitBase + kMutex}, {3, 3}, {4, 4}};
  return eo;
}

DbFacts convoy_facts() {
  DbFacts f;
  f.have = true;
  f.H = 3;
  f.sites[1] = body_site(10, "serve", 2, true);
  f.sites[2] = call_site(10, "serve", 11, "lock_row", 1, false);
  f.sites[3] = body_site(12, "flush", 1, true);
  f.sites[4] = call_site(12, "flush", 0, "fsync", 1, true);
  return f;
}

} // namespace

// Specificity is the squared distance from the root in call-graph levels, continued across
// the wake-up edge into the waker's tree (docs/statistics.md).
TEST(Stages, SpecificityContinuesAcrossTheWakeUpEdge) {
  EngineOutput eo = convoy_tree();
  DbFacts facts = convoy_facts();
  AnalysisResult res;
  name_nodes(eo, facts, res);
  ASSERT_EQ(res.nodes.size(), 6u);
  EXPECT_EQ(res.nodes[3].kind, Node::Kind::Wait);
  EXPECT_EQ(res.nodes[5].path, "/s1/s2/wait:mutex/s3/s4");
  NodeFacts nf = heights_and_specificity(facts, res);
  EXPECT_TRUE(res.heights_from_db);
  EXPECT_EQ(res.H, 3);
  EXPECT_EQ(nf.wait_anc[4], 3);
  EXPECT_EQ(nf.top_of[5], 4);
  EXPECT_DOUBLE_EQ(nf.spec[1], 1);  // (3 - 2)^2
  EXPECT_DOUBLE_EQ(nf.spec[2], 4);  // (3 - 1)^2
  EXPECT_DOUBLE_EQ(nf.spec[3], 9);  // one level below lock_row: h 0, (3 - 0)^2
  EXPECT_DOUBLE_EQ(nf.spec[4], 16); // dist(w) 3 + (Hw 2 - h 1) = 4
  EXPECT_DOUBLE_EQ(nf.spec[5], 16); // fsync at flush's height: as specific as flush
  EXPECT_EQ(nf.kids[3], std::vector<int>{4});
}

// Without a workspace the depth stands for the height.
TEST(Stages, WithoutACallGraphDepthIsTheHeight) {
  EngineOutput eo;
  eo.nodes = {{kNoParent, 0}, {0, 7}, {1, 8}};
  AnalysisResult res;
  name_nodes(eo, {}, res);
  EXPECT_EQ(res.nodes[2].name, "site 8");
  NodeFacts nf = heights_and_specificity({}, res);
  EXPECT_FALSE(res.heights_from_db);
  EXPECT_EQ(res.H, 2);
  EXPECT_DOUBLE_EQ(nf.spec[1], 1);
  EXPECT_DOUBLE_EQ(nf.spec[2], 4);
}

// A call of a program function is the callee's place, an outside call is "callee in
// caller", a wait is named by the function that waited — and, in a call whose body no
// probe timed, by the caller too (one place per calling function); the waker's frames reach
// the path through the wait.
TEST(Stages, PlacesMergeCallsWithTheirCalleeAndNameWaitsAndOutsideCalls) {
  EngineOutput eo = convoy_tree();
  eo.nodes.push_back({1, 5}); // node 6: a second call of lock_row, from serve
  DbFacts facts = convoy_facts();
  facts.sites[5] = call_site(10, "serve", 11, "lock_row", 1, false);
  AnalysisResult res;
  name_nodes(eo, facts, res);
  PlaceTable pt = assign_places(res, facts);
  auto key_of = [&](int node) { return pt.place_of[node] < 0 ? "" : pt.key[pt.place_of[node]]; };
  EXPECT_EQ(key_of(0), "o:outside") << "the root's body: time outside every probed function";
  EXPECT_EQ(pt.kind[pt.place_of[0]], Place::Kind::Outside);
  EXPECT_EQ(pt.name[pt.place_of[0]], "outside probed functions");
  EXPECT_EQ(key_of(1), "f:10");
  EXPECT_EQ(key_of(2), "f:11");
  EXPECT_EQ(key_of(6), "f:11") << "two call sites of one function: one place";
  EXPECT_EQ(key_of(3), "w:mutex@f:11<f:10");
  EXPECT_EQ(pt.name[pt.place_of[3]], "[wait:mutex] in lock_row from serve");
  EXPECT_EQ(pt.kind[pt.place_of[3]], Place::Kind::Wait);
  EXPECT_EQ(key_of(5), "x:fsync@12");
  EXPECT_EQ(pt.name[pt.place_of[5]], "fsync() in flush");
  EXPECT_EQ(pt.holder[pt.place_of[5]], 12);
  EXPECT_EQ(pt.via_of[1], -1);
  EXPECT_EQ(pt.via_of[4], pt.place_of[3]);
  EXPECT_EQ(pt.via_of[5], pt.place_of[3]);
}

// Groups: all intervals, then each label with enough intervals; the time matrices hold
// self and inclusive times per column, and L is the root's inclusive time.
TEST(Stages, GroupsAndTimeMatrices) {
  EngineOutput eo;
  eo.nodes = {{kNoParent, 0}, {0, 1}, {1, 2}};
  eo.labels = {"", "GET", "PUT"};
  eo.ticks_per_second = 1e9;
  // interval i: root body 1, s1 body 2 + i, s2 3 * i; labels GET, GET, PUT
  for (std::uint32_t i = 0; i < 3; ++i) {
    IntervalRec r{};
    r.id = i + 1;
    r.label = i < 2 ? 1 : 2;
    r.times_off = eo.times.size();
    eo.times.push_back({0, 1});
    eo.times.push_back({1, 2 + i});
    eo.times.push_back({2, 3 * i});
    r.times_n = 3;
    eo.intervals.push_back(r);
  }
  auto groups = interval_groups(eo, 2);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].label, "");
  EXPECT_EQ(groups[0].intervals.size(), 3u);
  EXPECT_EQ(groups[1].label, "GET");
  GroupTimes gt = group_times(eo, groups[0].intervals);
  ASSERT_EQ(gt.present, (std::vector<int>{0, 1, 2}));
  const DenseTimes d = dense_times(gt);
  EXPECT_DOUBLE_EQ(d.S(2, 1), 4);
  EXPECT_DOUBLE_EQ(d.T(2, 1), 10);
  EXPECT_DOUBLE_EQ(column(gt, {0, false})[2], 11);
  EXPECT_DOUBLE_EQ(column(gt, {1, true})[1], 3);
  EXPECT_EQ(gt.kids[1], std::vector<int>{2});
}

// The rows for SQL engines (export_rows): a row per interval x node its path touched (the
// node or one below it; ancestors without self time get B = 0), absent nodes none, and T, B
// and L the very doubles of group_times; the tree's nodes with their places and via.
TEST(Stages, RowsHoldTheTimeMatricesDoublesAndOnlyTouchedNodes) {
  EngineOutput eo = convoy_tree();
  eo.labels = {"", "GET"};
  eo.ticks_per_second = 3e9; // ns per tick 1/3: doubles that print with 17 digits
  // interval 1: serve's body and the lock wait's holder's fsync (s4 below s3 below the wait);
  // interval 2: serve's body and the lock_row call only
  const std::vector<std::vector<NodeTime>> times = {{{1, 7}, {5, 11}, {3, 2}, {1, 1}},
                                                    {{1, 5}, {2, 13}}};
  for (std::uint32_t i = 0; i < times.size(); ++i) {
    IntervalRec r{};
    r.id = 100 + i;
    r.label = i;
    r.times_off = eo.times.size();
    r.times_n = static_cast<std::uint32_t>(times[i].size());
    eo.times.insert(eo.times.end(), times[i].begin(), times[i].end());
    eo.intervals.push_back(r);
  }
  DbFacts facts = convoy_facts();
  AnalysisResult res;
  name_nodes(eo, facts, res);
  PlaceTable pt = assign_places(res, facts);
  auto dir = std::filesystem::temp_directory_path() / ("vprof-rows-" + std::to_string(getpid()));
  RowsSummary sum = write_rows(eo, res, pt, dir, {"front-1", "db-1"}); // where each began
  EXPECT_EQ(sum.intervals, 2u);
  EXPECT_EQ(sum.nodes, 6u);
  auto lines = [&](const char *file) {
    std::ifstream in(dir / file);
    std::vector<std::vector<std::string>> rows;
    std::string line;
    std::getline(in, line); // header
    while (std::getline(in, line)) {
      std::vector<std::string> f;
      std::size_t a = 0, b;
      while ((b = line.find('\t', a)) != std::string::npos) {
        f.push_back(line.substr(a, b - a));
        a = b + 1;
      }
      f.push_back(line.substr(a));
      rows.push_back(f);
    }
    return rows;
  };
  auto nodes = lines("nodes.tsv"), ivs = lines("intervals.tsv"), nt = lines("node_times.tsv");
  std::filesystem::remove_all(dir);
  ASSERT_EQ(nodes.size(), 6u);
  EXPECT_EQ(nodes[5], (std::vector<std::string>{"5", "4", "5", "site", "/s1/s2/wait:mutex/s3/s4",
                                                "(interval);serve;lock_row();[wait:mutex];flush;"
                                                "fsync()",
                                                "fsync()", "x:fsync@12", "fsync() in flush",
                                                pt.name[pt.place_of[3]]}));
  EXPECT_EQ(nodes[0][7], "o:outside"); // the root's body: outside probed functions
  ASSERT_EQ(ivs.size(), 2u);
  EXPECT_EQ(ivs[1][0], "101");
  EXPECT_EQ(ivs[1][1], "GET");
  EXPECT_EQ(ivs[0][3], "front-1");
  EXPECT_EQ(ivs[1][3], "db-1");
  // interval 100 touches every node (s2 as an ancestor only); 101 the root, s1, s2
  ASSERT_EQ(nt.size(), 6u + 3u);
  GroupTimes gt = group_times(eo, {0, 1});
  const DenseTimes d = dense_times(gt);
  auto num = [](const std::string &s) {
    double v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
  };
  for (const auto &r : nt) {
    int row = r[0] == "100" ? 0 : 1, node = std::stoi(r[1]);
    EXPECT_EQ(num(r[2]), d.T(row, gt.col_of[node])) << r[0] << " " << r[1];
    EXPECT_EQ(num(r[3]), d.S(row, gt.col_of[node])) << r[0] << " " << r[1];
  }
  EXPECT_EQ(num(ivs[0][2]), column(gt, {0, false})[0]);
  EXPECT_EQ(num(nt[2][3]), 0.0); // s2 of interval 100: no self time, a row as s4's ancestor
}

// Equal scores: the deeper term first, then the larger |share|; noise after everything
// (VProfiler's ranking keeps the scores it is given; the observed one is in
// test_specificity.cpp).
TEST(Stages, RankingBreaksTiesByDepthThenShareAndPutsNoiseLast) {
  AnalysisResult res;
  res.ranking = Ranking::VProfiler;
  NodeFacts nf;
  res.nodes.resize(4);
  res.nodes[1].depth = 1;
  res.nodes[2].depth = 2;
  res.nodes[3].depth = 2;
  std::vector<Factor> fs(4);
  fs[0].a = 1, fs[0].score = 1, fs[0].share = 0.5, fs[0].key = "a";
  fs[1].a = 2, fs[1].score = 1, fs[1].share = 0.2, fs[1].key = "b";
  fs[2].a = 3, fs[2].score = 1, fs[2].share = -0.4, fs[2].key = "c";
  fs[3].a = 3, fs[3].score = 9, fs[3].share = 0.001, fs[3].key = "d", fs[3].noise = true;
  EXPECT_EQ(rank_factors(res, nf, fs, 10), (std::vector<std::size_t>{2, 1, 0, 3}));
  EXPECT_EQ(rank_factors(res, nf, fs, 2).size(), 2u);
}

// The floor is the median half-width of the bootstrap intervals (capped at 5 %): a factor
// and a place below it move behind the others whatever their score.
TEST(Stages, NoiseFloorMovesWhatIsBelowItBehind) {
  GroupResult gr;
  gr.factors.resize(3);
  gr.factors[0].share = 0.02, gr.factors[0].score = 50;
  gr.factors[1].share = 0.6, gr.factors[1].score = 10;
  gr.factors[2].share = 0.3, gr.factors[2].score = 5;
  for (auto &f : gr.factors) {
    f.has_ci = true;
    f.share_lo = f.share - 0.03;
    f.share_hi = f.share + 0.03;
  }
  gr.places.resize(2);
  gr.places[0].share = gr.places[0].contribution = 0.01, gr.places[0].score = 40;
  gr.places[1].share = gr.places[1].contribution = 0.7, gr.places[1].score = 3;
  std::vector<std::size_t> order{7, 8, 9};
  apply_noise_floor(gr, order, 0.01);
  EXPECT_NEAR(gr.noise_floor, 0.03, 1e-12);
  EXPECT_DOUBLE_EQ(gr.factors[0].share, 0.6);
  EXPECT_TRUE(gr.factors[2].noise);
  EXPECT_EQ(order, (std::vector<std::size_t>{8, 9, 7}));
  EXPECT_DOUBLE_EQ(gr.places[0].share, 0.7);
  EXPECT_TRUE(gr.places[1].noise);
  // intervals narrower than the default floor leave it alone
  GroupResult quiet;
  quiet.factors.resize(1);
  quiet.factors[0].has_ci = true;
  quiet.factors[0].share_hi = 0.001;
  apply_noise_floor(quiet, order, 0.01);
  EXPECT_DOUBLE_EQ(quiet.noise_floor, 0.01);
}

// The root's body is the place "outside probed functions": an interval's own time where no
// probed frame is open (an event loop's work between a command's processing and its reply,
// above the annotated functions). Its share and contribution are those of the root's self
// time, the places' contributions sum to 1, and its specificity is one level: it outranks
// the roots' own places, a place below them explaining more outranks it.
TEST(Stages, TimeOutsideEveryProbedFunctionIsAPlace) {
  EngineOutput eo;
  eo.nodes = {{kNoParent, 0}, {0, 1}, {1, 2}}; // root -> serve's body -> a call of parse
  eo.ticks_per_second = 1e9;
  DbFacts facts;
  facts.have = true;
  facts.H = 2;
  facts.sites[1] = body_site(10, "serve", 2, true);
  facts.sites[2] = call_site(10, "serve", 11, "parse", 1, false);
  // interval i: outside 10 + 6 (i % 4), serve's own time 5 + (i % 3), parse 3 + 2 (i % 2)
  for (std::uint32_t i = 0; i < 24; ++i) {
    IntervalRec r{};
    r.id = i + 1;
    r.times_off = eo.times.size();
    eo.times.push_back({0, 10 + 6 * (i % 4)});
    eo.times.push_back({1, 5 + (i % 3)});
    eo.times.push_back({2, 3 + 2 * (i % 2)});
    r.times_n = 3;
    eo.intervals.push_back(r);
  }
  AnalysisResult res;
  name_nodes(eo, facts, res);
  NodeFacts nf = heights_and_specificity(facts, res);
  PlaceTable pt = assign_places(res, facts);
  GroupTimes gt = group_times(eo, interval_groups(eo, 2)[0].intervals);
  GroupResult gr;
  gr.latency = latency_stats(gt);
  AnalyzeOptions opt;
  place_stats(nf, pt, gt, opt, gr);
  ASSERT_EQ(gr.places.size(), 3u);
  const Place *outside = nullptr;
  double contributions = 0;
  for (const auto &p : gr.places) {
    contributions += p.contribution;
    if (p.key == "o:outside")
      outside = &p;
  }
  ASSERT_NE(outside, nullptr);
  EXPECT_EQ(outside->kind, Place::Kind::Outside);
  EXPECT_EQ(outside->name, "outside probed functions");
  EXPECT_EQ(outside->node, 0);
  EXPECT_EQ(outside->function, 0);
  const Eigen::VectorXd x = column(gt, {0, true});
  const double varL = gr.latency.var_ns2;
  const double mean = x.mean();
  const double var = (x.array() - mean).square().sum() / static_cast<double>(x.size());
  EXPECT_NEAR(outside->mean_ns, 19.0, 1e-9); // 10 + 6 * 1.5
  EXPECT_NEAR(outside->share, var / varL, 1e-9);
  EXPECT_NEAR(contributions, 1.0, 1e-9) << "the places partition L: their contributions sum to 1";
  EXPECT_GT(outside->contribution, 0.5);
  EXPECT_DOUBLE_EQ(outside->specificity, 0.0) << "observed: the root's level";
  EXPECT_EQ(gr.places.front().key, "o:outside")
      << "it explains most and nothing below it carries half of it";
  // VProfiler's static rule: one level, above the roots' own places (specificity 0)
  opt.ranking = Ranking::VProfiler;
  GroupResult gv;
  gv.latency = gr.latency;
  place_stats(nf, pt, gt, opt, gv);
  EXPECT_EQ(gv.places.front().key, "o:outside");
  EXPECT_DOUBLE_EQ(gv.places.front().specificity, kOutsideSpecificity);
  opt.ranking = Ranking::Net;
  // an interval that never leaves the probed frames has no such place
  for (auto &t : eo.times)
    if (t.node == 0)
      t.ticks = 0;
  GroupTimes inside = group_times(eo, interval_groups(eo, 2)[0].intervals);
  GroupResult gi;
  gi.latency = latency_stats(inside);
  place_stats(nf, pt, inside, opt, gi);
  for (const auto &p : gi.places)
    EXPECT_NE(p.key, "o:outside");
}

// What-if of a variance term: L' = L - X + mean(X); with L = X + Y, Var(L') = Var(Y).
TEST(Stages, WhatIfReplacesTheTermByItsMean) {
  EngineOutput eo;
  eo.nodes = {{kNoParent, 0}, {0, 1}, {0, 2}}; // L = X (s1) + Y (s2)
  eo.ticks_per_second = 1e9;
  const int n = 6;
  for (std::uint32_t i = 0; i < n; ++i) {
    IntervalRec r{};
    r.id = i + 1;
    r.times_off = eo.times.size();
    eo.times.push_back({1, 10 * (i % 3)}); // X
    eo.times.push_back({2, i});            // Y
    r.times_n = 2;
    eo.intervals.push_back(r);
  }
  GroupTimes gt = group_times(eo, interval_groups(eo, 2)[0].intervals);
  ASSERT_EQ(gt.present, (std::vector<int>{0, 1, 2}));
  Terms terms;
  terms.factors.resize(1);
  terms.factors[0].key = "var:/s1";
  terms.cols.push_back({{1, false}, {-1, false}});
  GroupResult gr;
  gr.latency = latency_stats(gt);
  gr.factors = terms.factors;
  what_if(gt, terms, {0}, 10, gr);
  ASSERT_EQ(gr.whatifs.size(), 1u);
  const Eigen::VectorXd y = column(gt, {2, true});
  const double var_y = cov_of(y, y);
  EXPECT_NEAR(gr.whatifs[0].var_after_ns2, var_y, 1e-9);
  EXPECT_NEAR(gr.whatifs[0].var_drop, 1 - var_y / gr.latency.var_ns2, 1e-12);
  // and from the sums alone: Var(L - X + mean X) = Var(L) - 2 Cov(L, X) + Var(X)
  const Eigen::Index x = gt.col_of[1];
  EXPECT_NEAR(gr.whatifs[0].var_after_ns2,
              gr.latency.var_ns2 - 2 * gt.cols.cov_ref(x) + gt.cols.var(x), 1e-9);
}

// A group too large for the what-if's vectors gets them streamed: the same variance (up to
// rounding) and the same p99, to the bit, as the held vectors — here with a cap of 100
// doubles for 5,000 intervals, and two factors (a variance and a covariance term).
TEST(Stages, TheStreamedWhatIfEqualsTheHeldOne) {
  EngineOutput eo;
  eo.nodes = {{kNoParent, 0}, {0, 1}, {0, 2}}; // L = X (s1) + Y (s2)
  eo.ticks_per_second = 1e9;
  std::mt19937_64 rng(17);
  std::lognormal_distribution<double> x_ticks(5, 1), y_ticks(4, 0.5);
  for (std::uint32_t i = 0; i < 5000; ++i) {
    IntervalRec r{};
    r.id = i + 1;
    r.times_off = eo.times.size();
    eo.times.push_back({1, static_cast<std::int64_t>(x_ticks(rng))});
    eo.times.push_back({2, static_cast<std::int64_t>(y_ticks(rng))});
    r.times_n = 2;
    eo.intervals.push_back(r);
  }
  GroupTimes gt = group_times(eo, interval_groups(eo, 2)[0].intervals);
  Terms terms;
  terms.factors.resize(2);
  terms.factors[0].key = "var:/s1";
  terms.factors[1].key = "cov:/s1|/s2";
  terms.cols.push_back({{1, false}, {-1, false}});
  terms.cols.push_back({{1, false}, {2, false}});
  GroupResult held, streamed;
  held.latency = streamed.latency = latency_stats(gt);
  held.factors = streamed.factors = terms.factors;
  what_if(gt, terms, {0, 1}, 10, held);
  what_if(gt, terms, {0, 1}, 10, streamed, 100);
  ASSERT_EQ(held.whatifs.size(), 2u);
  ASSERT_EQ(streamed.whatifs.size(), 2u);
  for (std::size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(streamed.whatifs[k].key, held.whatifs[k].key);
    EXPECT_NEAR(streamed.whatifs[k].var_after_ns2, held.whatifs[k].var_after_ns2,
                1e-12 * held.latency.var_ns2)
        << k;
    EXPECT_EQ(streamed.whatifs[k].p99_after_ns, held.whatifs[k].p99_after_ns) << k;
    EXPECT_GT(held.whatifs[k].var_drop, 0) << k;
  }
  // holding L - X - Y + their means: a constant, no variance left
  EXPECT_NEAR(streamed.whatifs[1].var_after_ns2, 0, 1e-9);
}

// The drop warning says what the lost records cost: intervals after the limit when the
// capped stream worked for intervals; only the waker's time on some paths when it is a
// background thread (LevelDB's compaction thread at the cap).
TEST(Stages, TheDropWarningTellsIntervalThreadsFromBackgroundThreads) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("vprof-stages-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto warning_for = [&](bool worker_capped, bool background_capped) {
    vprof::testing::TraceBuilder b(1);
    auto &w = b.thread(1);
    for (std::uint64_t i = 0; i < 4; ++i)
      w.emit(VPROF_REC_INTERVAL_BEGIN, i + 1, i * 10)
          .emit(VPROF_REC_INTERVAL_END, i + 1, i * 10 + 5);
    w.dropped = worker_capped ? 100 : 0;
    auto &bg = b.thread(2);
    bg.enter(3, 1, 1).exit(3, 30, 1);
    bg.dropped = background_capped ? 7 : 0;
    fs::remove_all(dir);
    b.write(dir);
    auto tr = vprof::trace::Trace::open(dir);
    EngineOutput eo = run_engine(tr, {});
    EXPECT_EQ(eo.stream_interval_marks, (std::vector<std::uint8_t>{1, 0}));
    return load_result(tr, eo).warnings;
  };
  auto only = [](const std::vector<std::string> &ws) {
    EXPECT_EQ(ws.size(), 1u);
    return ws.empty() ? std::string() : ws[0];
  };
  std::string bg = only(warning_for(false, true));
  EXPECT_NE(bg.find("1 of them are background threads"), std::string::npos) << bg;
  EXPECT_EQ(bg.find("covers mostly the start"), std::string::npos) << bg;
  EXPECT_NE(bg.find("VPROF_MAX_THREAD_MB"), std::string::npos);
  EXPECT_NE(bg.find("the stream cap (stream_cap_mb in vprof.toml"), std::string::npos) << bg;
  EXPECT_NE(bg.find("Raise stream_cap_mb in vprof.toml"), std::string::npos) << bg;
  std::string work = only(warning_for(true, false));
  EXPECT_NE(work.find("1 of them worked for intervals"), std::string::npos) << work;
  EXPECT_NE(work.find("covers mostly the start of the run (4 finished intervals)"),
            std::string::npos)
      << work;
  EXPECT_EQ(work.find("background"), std::string::npos);
  EXPECT_TRUE(warning_for(false, false).empty());
  fs::remove_all(dir);
}

// Interval marks that do not pair are a note while they are a few (intervals still open
// when the workload stopped), a warning past 1 % of the finished intervals; probe exits
// without an open frame (a fork child's inherited frames) are a note.
TEST(Stages, UnpairedMarksAreANoteWhenFewAndAWarningWhenMany) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("vprof-notes-" + std::to_string(::getpid()));
  auto result_for = [&](std::uint64_t finished, std::uint64_t open) {
    vprof::testing::TraceBuilder b(1);
    auto &w = b.thread(1);
    std::uint64_t t = 0;
    for (std::uint64_t i = 0; i < finished; ++i, t += 10)
      w.emit(VPROF_REC_INTERVAL_BEGIN, i + 1, t).emit(VPROF_REC_INTERVAL_END, i + 1, t + 5);
    for (std::uint64_t i = 0; i < open; ++i, t += 10)
      w.emit(VPROF_REC_INTERVAL_BEGIN, 1000 + i, t);
    w.exit(7, t + 1, 1);
    fs::remove_all(dir);
    b.write(dir);
    auto tr = vprof::trace::Trace::open(dir);
    EngineOutput eo = run_engine(tr, {});
    return load_result(tr, eo);
  };
  auto has = [](const std::vector<std::string> &v, const char *text) {
    return std::any_of(v.begin(), v.end(),
                       [&](const std::string &s) { return s.find(text) != std::string::npos; });
  };
  AnalysisResult few = result_for(200, 1);
  EXPECT_FALSE(has(few.warnings, "began but never ended"));
  EXPECT_TRUE(has(few.notes, "1 intervals began but never ended"));
  EXPECT_TRUE(has(few.notes, "probe exits without an open frame"));
  EXPECT_FALSE(has(few.warnings, "probe exits"));
  AnalysisResult many = result_for(50, 5);
  EXPECT_TRUE(has(many.warnings, "5 intervals began but never ended"));
  EXPECT_TRUE(has(many.warnings, "more than 1 %"));
  EXPECT_FALSE(has(many.notes, "began but never ended"));
  fs::remove_all(dir);
}

// A wait that had a waker: the waiter's delay from the release to running again is a node
// of its own below the wait, and a place of its own on the waiter's path ("[wake-up
// delay] after [wait:cond] in serve"), not part of the waker's work.
TEST(Stages, TheWakeUpDelayIsAPlaceOfItsOwn) {
  EngineOutput eo;
  eo.nodes = {
      {kNoParent, 0}, {0, 1}, {1, kLabelWaitBase + kCond}, {2, 3}, {2, kLabelWaitBase + kWakeup}};
  DbFacts facts;
  facts.have = true;
  facts.H = 2;
  facts.sites[1] = body_site(10, "serve", 2, true);
  facts.sites[3] = body_site(12, "flush", 1, true);
  AnalysisResult res;
  name_nodes(eo, facts, res);
  EXPECT_EQ(res.nodes[4].name, "[wake-up delay]");
  EXPECT_EQ(res.nodes[4].path, "/s1/wait:cond/wait:wakeup");
  EXPECT_TRUE(is_wakeup_delay(res, 4));
  EXPECT_FALSE(is_wakeup_delay(res, 2));
  PlaceTable pt = assign_places(res, facts);
  const int wait = pt.place_of[2], delay = pt.place_of[4];
  ASSERT_GE(delay, 0);
  EXPECT_NE(delay, wait);
  EXPECT_EQ(pt.key[delay], "w:wakeup@w:cond@f:10");
  EXPECT_EQ(pt.name[delay], "[wake-up delay] after [wait:cond] in serve");
  EXPECT_EQ(pt.kind[delay], Place::Kind::Wait);
  EXPECT_EQ(pt.via_of[4], -1) << "the delay is the waiter's own, not the waker's work";
  EXPECT_EQ(pt.via_of[3], wait);
}
