// The slow group (analyzer/src/slow_group.cpp): a rare kind of interval far slower than the
// rest is found with what removing it would remove, in closed form; a long tail or one
// outlier is not a group; the answer says it beside a place only when no place carries it.
#include "trace_builder.hpp"
#include "vprof/analyzer.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <random>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
namespace va = vprof::analyzer;
using vprof::testing::TraceBuilder;

namespace {

fs::path fresh_dir(const std::string &name) {
  fs::path d = fs::temp_directory_path() / ("vprof-slow-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// One interval on a thread: calls of (site, ticks) one after the other, one tick of root
// body before them; returns its latency in ticks (= ns: the builder's clock is 1 GHz).
struct OneThread {
  TraceBuilder b{1};
  std::uint64_t now = 0, id = 1;
  std::vector<double> L;
  // `outside`: ticks of the interval's own time after its calls, in no probed function
  void interval(const std::vector<std::pair<int, int>> &calls, int outside = 0) {
    auto &t = b.thread(1);
    const std::uint64_t begin = now;
    t.emit(VPROF_REC_INTERVAL_BEGIN, id, now);
    now += 1;
    for (auto [site, ticks] : calls) {
      t.enter(static_cast<std::uint32_t>(site), now, 1)
          .exit(static_cast<std::uint32_t>(site), now + static_cast<std::uint64_t>(ticks), 1);
      now += static_cast<std::uint64_t>(ticks);
    }
    now += static_cast<std::uint64_t>(outside);
    t.emit(VPROF_REC_INTERVAL_END, id++, now);
    L.push_back(static_cast<double>(now - begin));
    now += 5;
  }
};

double population_var(const std::vector<double> &x) {
  double m = 0, q = 0;
  for (double v : x)
    m += v;
  m /= static_cast<double>(x.size());
  for (double v : x)
    q += (v - m) * (v - m);
  return q / static_cast<double>(x.size());
}

// 2,000 intervals of one site's U(100, 500) ticks; every 100th is a multi-key request: 30
// calls of site 1, then 8,000 ticks in site 2 and 8,000 in site 3 (its reply's writing).
struct MultiKey {
  fs::path dir;
  std::vector<double> L, rest;
};
MultiKey multi_key(const std::string &name) {
  OneThread o;
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> u(100, 500);
  MultiKey m;
  for (int i = 0; i < 2000; ++i) {
    if (i % 100 == 57) {
      std::vector<std::pair<int, int>> calls;
      for (int k = 0; k < 30; ++k)
        calls.emplace_back(1, u(rng));
      calls.emplace_back(2, 8000 + u(rng));
      calls.emplace_back(3, 8000 + u(rng));
      o.interval(calls);
    } else {
      o.interval({{1, u(rng)}});
      m.rest.push_back(o.L.back());
    }
  }
  m.dir = fresh_dir(name);
  o.b.write(m.dir);
  m.L = o.L;
  return m;
}

// n intervals of one site whose times come from `draw`.
fs::path one_site(const std::string &name, int n, const std::function<int()> &draw) {
  OneThread o;
  for (int i = 0; i < n; ++i)
    o.interval({{1, draw()}});
  auto dir = fresh_dir(name);
  o.b.write(dir);
  return dir;
}

} // namespace

TEST(SlowGroup, ARareKindOfRequestIsFoundWithWhatRemovingItRemoves) {
  const MultiKey m = multi_key("multikey");
  auto res = va::analyze(m.dir, nullptr, {});
  const auto &g = res.groups.front();
  const va::SlowGroup &sg = g.slow;
  ASSERT_TRUE(sg.found);
  EXPECT_EQ(sg.intervals, 20u) << "exactly the multi-key requests";
  EXPECT_NEAR(sg.removed, 1 - population_var(m.rest) / population_var(m.L), 1e-9);
  EXPECT_GE(sg.between, 0.8);
  EXPECT_LE(sg.between, sg.removed) << "removing them also removes their own spread";
  double slow_sum = 0, slow_min = 1e18;
  for (double l : m.L)
    if (l > 10000) {
      slow_sum += l;
      slow_min = std::min(slow_min, l);
    }
  EXPECT_NEAR(sg.mean_ns, slow_sum / 20, 1e-6);
  EXPECT_GT(sg.threshold_ns, 502) << "above every ordinary interval";
  EXPECT_LE(sg.threshold_ns, slow_min);
  // their extra time by place adds up to theirs, and is spread over the three sites
  double sum = 0;
  for (const auto &p : sg.places)
    sum += p.excess_ns;
  EXPECT_NEAR(sum, sg.mean_ns - g.latency.mean_ns, 1e-6 * g.latency.mean_ns);
  ASSERT_GE(sg.places.size(), 3u);
  EXPECT_EQ(sg.places[0].name, "site 1"); // 30 x 300 ticks
  for (int k = 0; k < 3; ++k)
    EXPECT_LT(sg.places[static_cast<std::size_t>(k)].fraction, 0.5) << k;
  // no place carries half of it: the answer says the group beside its place, everywhere
  const va::Answer &a = g.answer;
  EXPECT_TRUE(a.slow_group);
  EXPECT_GE(sg.removed, 1.5 * a.contribution);
  EXPECT_NE(a.sentence.find("Beside it, a slow group: 20 of 2000 intervals (1.0%)"),
            std::string::npos)
      << a.sentence;
  EXPECT_NE(a.sentence.find("their extra time: site 1 "), std::string::npos) << a.sentence;
  const std::string text = va::render_text(res);
  EXPECT_NE(text.find("\nslow group: 20 intervals (1.0%) with L >= "), std::string::npos) << text;
  auto j = nlohmann::json::parse(va::render_json(res));
  EXPECT_EQ(j["groups"][0]["slow_group"]["intervals"], 20);
  EXPECT_EQ(j["groups"][0]["slow_group"]["removed"].get<double>(), sg.removed);
  EXPECT_EQ(j["groups"][0]["answer"]["slow_group"], true);
  const std::string page = va::render_html(res);
  EXPECT_NE(page.find("\"slow_group\":{\"between\":"), std::string::npos)
      << "the HTML page's data carries the group";
}

TEST(SlowGroup, ALongTailIsNoGroup) {
  std::mt19937_64 rng(5);
  std::exponential_distribution<double> ex(1.0 / 300);
  auto res =
      va::analyze(one_site("exponential", 5000, [&] { return 1 + int(ex(rng)); }), nullptr, {});
  EXPECT_FALSE(res.groups.front().slow.found);
  std::lognormal_distribution<double> ln(std::log(300.0), 1.5);
  res = va::analyze(one_site("lognormal", 5000, [&] { return 1 + int(ln(rng)); }), nullptr, {});
  EXPECT_FALSE(res.groups.front().slow.found) << "a lognormal's best split explains about half";
  const std::string text = va::render_text(res);
  EXPECT_EQ(text.find("slow group"), std::string::npos);
  EXPECT_FALSE(nlohmann::json::parse(va::render_json(res))["groups"][0].contains("slow_group"));
}

TEST(SlowGroup, OneOutlierIsNoGroup) {
  std::mt19937_64 rng(6);
  std::uniform_int_distribution<int> u(100, 500);
  int i = 0;
  auto res = va::analyze(one_site("outlier", 2000, [&] { return ++i == 1000 ? 1000000 : u(rng); }),
                         nullptr, {});
  EXPECT_FALSE(res.groups.front().slow.found) << "a group holds at least ten intervals";
}

TEST(SlowGroup, AStallInOnePlaceIsAGroupTheAnswerAlreadyCarries) {
  // every 100th interval stalls 100,000 ticks in site 2: a slow group, and site 2 carries it
  OneThread o;
  std::mt19937_64 rng(8);
  std::uniform_int_distribution<int> u(100, 500);
  for (int i = 0; i < 3000; ++i)
    o.interval({{1, u(rng)}, {2, i % 100 == 99 ? 100000 : 1}});
  auto dir = fresh_dir("stall");
  o.b.write(dir);
  auto res = va::analyze(dir, nullptr, {});
  const auto &g = res.groups.front();
  ASSERT_TRUE(g.slow.found);
  EXPECT_EQ(g.slow.intervals, 30u);
  EXPECT_EQ(g.slow.places.front().name, "site 2");
  EXPECT_GT(g.slow.places.front().fraction, 0.99);
  EXPECT_EQ(g.answer.name, "site 2");
  EXPECT_FALSE(g.answer.slow_group) << "the answer carries the group: nothing to add";
  EXPECT_EQ(g.answer.sentence.find("slow group"), std::string::npos) << g.answer.sentence;
}

TEST(SlowGroup, BesideTimeOutsideProbedFunctionsTheGroupIsAlwaysSaid) {
  // every 100th interval spends 20,000 ticks in no probed function: the answer is that time
  // (it carries nearly all the group removes), and it names no code, so the group is said
  OneThread o;
  std::mt19937_64 rng(9);
  std::uniform_int_distribution<int> u(100, 500);
  for (int i = 0; i < 3000; ++i)
    o.interval({{1, u(rng)}}, i % 100 == 42 ? 20000 : 0);
  auto dir = fresh_dir("outside");
  o.b.write(dir);
  auto res = va::analyze(dir, nullptr, {});
  const auto &g = res.groups.front();
  ASSERT_TRUE(g.slow.found);
  EXPECT_EQ(g.slow.intervals, 30u);
  ASSERT_EQ(g.answer.kind, va::Place::Kind::Outside) << g.answer.name;
  EXPECT_GT(g.answer.contribution, g.slow.removed / 1.5) << "within the ratio: said anyway";
  EXPECT_TRUE(g.answer.slow_group);
  EXPECT_NE(g.answer.sentence.find("Beside it, a slow group: 30 of 3000 intervals"),
            std::string::npos)
      << g.answer.sentence;
}
