// The tail view and the answer (analyzer/src/tail.cpp, answer.cpp): the excesses in the
// slowest intervals add up to the latency's, a known tail in closed form, a rare long stall
// that leads the tail while a steady cause leads the variance, and one answer read by the
// text, JSON and HTML reports alike.
#include "stages.hpp"
#include "trace_builder.hpp"
#include "vprof/analyzer.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <random>
#include <unistd.h>

namespace fs = std::filesystem;
namespace va = vprof::analyzer;
using vprof::testing::TraceBuilder;

namespace {

fs::path fresh_dir(const std::string &name) {
  fs::path d = fs::temp_directory_path() / ("vprof-tail-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Intervals on one thread: [site 1: steady U(100, 500) ticks][site 2: 1 tick, or `stall`
// ticks in every `every`-th interval], one tick of root body.
fs::path steady_and_stall(const std::string &name, int n, int every, int stall) {
  auto dir = fresh_dir(name);
  TraceBuilder b(1);
  auto &t = b.thread(1);
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> steady(100, 500);
  std::uint64_t now = 0, id = 1;
  for (int i = 0; i < n; ++i) {
    const int xa = steady(rng), xb = i % every == every - 1 ? stall : 1;
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

} // namespace

TEST(Tail, ExcessOfAKnownTail) {
  // L = 1..100: p99 = 99.01, the tail is the interval of 100; E[L] = 50.5
  Eigen::VectorXd L(100);
  Eigen::MatrixXd X(100, 2);
  for (int i = 0; i < 100; ++i) {
    L[i] = i + 1;
    X(i, 0) = i % 2 ? L[i] : 0; // the even latencies (the tail's 100 among them)
    X(i, 1) = L[i] - X(i, 0);
  }
  auto t = va::detail::tail_excess(L, X, 99);
  EXPECT_NEAR(t.threshold_ns, 99.01, 1e-9);
  EXPECT_EQ(t.intervals, 1u);
  EXPECT_NEAR(t.excess_ns, 100 - 50.5, 1e-9);
  EXPECT_NEAR(t.excess[0], 100 - X.col(0).mean(), 1e-9);
  EXPECT_NEAR(t.excess[1], 0 - X.col(1).mean(), 1e-9);
  // q = 50: the upper half
  t = va::detail::tail_excess(L, X, 50);
  EXPECT_EQ(t.intervals, 50u);
  EXPECT_NEAR(t.excess_ns, 75.5 - 50.5, 1e-9);
}

TEST(Tail, ExcessesAddUpToTheLatencys) {
  std::mt19937_64 rng(3);
  std::exponential_distribution<double> heavy(1e-3);
  std::uniform_real_distribution<double> u(0, 1000);
  Eigen::MatrixXd X(500, 5);
  for (int i = 0; i < X.rows(); ++i)
    for (int j = 0; j < X.cols(); ++j)
      X(i, j) = j == 4 ? heavy(rng) : u(rng);
  const Eigen::VectorXd L = X.rowwise().sum();
  for (double q : {50.0, 90.0, 99.0, 99.9}) {
    auto t = va::detail::tail_excess(L, X, q);
    EXPECT_NEAR(t.excess.sum(), t.excess_ns, 1e-9 * L.mean()) << q;
    EXPECT_GT(t.excess_ns, 0) << q;
  }
}

TEST(Tail, WeightsAtTheirPlaceInTheStreamAreFillsWeights) {
  // the tail's bootstrap draws its candidates' weights again by their place in the stream
  Eigen::MatrixXd W(7, 300);
  va::detail::PoissonWeights pw(12345);
  pw.fill(W);
  for (Eigen::Index i = 0; i < W.cols(); ++i)
    for (Eigen::Index b = 0; b < W.rows(); ++b)
      ASSERT_EQ(W(b, i),
                va::detail::poisson_weight_at(12345, static_cast<std::uint64_t>(i * W.rows() + b)))
          << i << " " << b;
}

TEST(Tail, WeightedPercentileIsThePercentileOfTheRepeatedSample) {
  // values 10, 9, ..., 1 with weights 0, 1, 2, 0, 3, ...: the sample that repeats them
  std::vector<double> desc;
  std::vector<unsigned> w;
  std::vector<double> repeated;
  for (int v = 10; v >= 1; --v) {
    desc.push_back(v);
    w.push_back(static_cast<unsigned>((v * 7) % 4));
    for (unsigned k = 0; k < w.back(); ++k)
      repeated.push_back(v);
  }
  const Eigen::VectorXd R = Eigen::Map<Eigen::VectorXd>(repeated.data(), repeated.size());
  for (double q : {50.0, 90.0, 99.0}) {
    bool found = false;
    const double got =
        va::detail::weighted_percentile(desc, w, static_cast<double>(repeated.size()), q, found);
    ASSERT_TRUE(found) << q;
    EXPECT_NEAR(got, va::detail::tail_excess(R, Eigen::MatrixXd::Zero(R.size(), 1), q).threshold_ns,
                1e-12)
        << q;
  }
  // only the top three values given, of a sample of 100: p50 lies below them
  bool found = true;
  va::detail::weighted_percentile({10, 9, 8}, {1, 1, 1}, 100, 50, found);
  EXPECT_FALSE(found);
}

TEST(Tail, ARareStallLeadsTheTailWhileTheSteadyCauseLeadsTheVariance) {
  // steady U(100, 500): Var 13.4k ticks^2; a stall of 1000 ticks in 1 interval of 200:
  // Var 999^2 x 0.005 x 0.995 = 5.0k, so the steady cause ranks first by variance
  auto res = va::analyze(steady_and_stall("stall", 2000, 200, 1000), nullptr, {});
  const auto &g = res.groups.front();
  ASSERT_GE(g.places.size(), 2u);
  EXPECT_EQ(g.places.front().name, "site 1");
  ASSERT_GE(g.tail.places.size(), 2u);
  EXPECT_EQ(g.tail.places.front().name, "site 2");
  EXPECT_GE(g.tail.intervals, 20u); // 1 % of 2000, more where latencies tie at p99
  EXPECT_LE(g.tail.intervals, 30u);
  EXPECT_NEAR(g.tail.threshold_ns, g.latency.p99_ns, 1e-9);
  // 10 stalls among the 20 slowest: ~ 1000/2 - 1000/200 longer than on average
  EXPECT_NEAR(g.tail.places.front().excess_ns, 10 * 999.0 / g.tail.intervals - 999.0 / 200, 1);
  double sum = 0;
  for (const auto &p : g.tail.places)
    sum += p.excess_ns;
  EXPECT_NEAR(sum, g.tail.excess_ns, 1e-6 * g.latency.mean_ns);
  for (const auto &p : g.tail.places)
    if (p.has_ci) {
      EXPECT_LE(p.excess_lo_ns, p.excess_hi_ns) << p.name;
      EXPECT_GE(p.excess_ns, p.excess_lo_ns - 1e-9) << p.name;
      EXPECT_LE(p.excess_ns, p.excess_hi_ns + 1e-9) << p.name;
    }
  EXPECT_TRUE(g.tail.places.front().has_ci);
  EXPECT_GT(g.tail.places.front().excess_lo_ns, g.tail.places[1].excess_ns)
      << "the stall's interval stays clear of the steady cause's excess";
  // the percentile is a setting
  va::AnalyzeOptions o;
  o.tail_percentile = 90;
  auto r90 = va::analyze(steady_and_stall("stall90", 2000, 200, 1000), nullptr, o);
  EXPECT_GE(r90.groups.front().tail.intervals, 200u);
  EXPECT_LE(r90.groups.front().tail.intervals, 215u);
  EXPECT_EQ(r90.groups.front().tail.places.front().name, "site 1")
      << "in the slowest 10 % the steady cause dominates again";
  o.tail_percentile = 100;
  EXPECT_THROW(va::analyze(steady_and_stall("stall100", 50, 10, 100), nullptr, o),
               va::AnalysisError);
}

TEST(Answer, OneAnswerInEveryReport) {
  auto res = va::analyze(steady_and_stall("answer", 600, 200, 1000), nullptr, {});
  const auto &g = res.groups.front();
  const va::Answer &a = g.answer;
  ASSERT_TRUE(a.found);
  EXPECT_EQ(a.key, g.places.front().key) << "the first place after ranking, not a second pick";
  EXPECT_EQ(a.share, g.places.front().share);
  EXPECT_EQ(a.contribution, g.places.front().contribution);
  EXPECT_EQ(a.chain, std::vector<std::string>{"site 1"});
  EXPECT_TRUE(a.wait.empty());
  EXPECT_EQ(a.sentence.rfind("site 1: ", 0), 0u) << a.sentence;
  EXPECT_NE(a.sentence.find("of Var(latency)"), std::string::npos) << a.sentence;
  EXPECT_EQ(va::answer_sentence(g), a.sentence);
  // the text report's first lines of the group, the JSON field and the HTML data: the same
  const std::string text = va::render_text(res);
  EXPECT_NE(text.find("answer: " + a.sentence + "\n"), std::string::npos) << text;
  EXPECT_LT(text.find("answer: "), text.find("where the variance comes from"));
  EXPECT_NE(text.find("\ntail: the "), std::string::npos) << text;
  auto j = nlohmann::json::parse(va::render_json(res));
  EXPECT_EQ(j["groups"][0]["answer"]["key"], a.key);
  EXPECT_EQ(j["groups"][0]["answer"]["sentence"], a.sentence);
  EXPECT_EQ(j["groups"][0]["answer"]["share"].get<double>(), a.share);
  EXPECT_EQ(j["groups"][0]["tail"]["places"][0]["name"], g.tail.places.front().name);
  const std::string page = va::render_html(res);
  EXPECT_NE(page.find(nlohmann::json(a.sentence).dump()), std::string::npos);
}

TEST(Answer, NoVarianceNoAnswer) {
  auto dir = fresh_dir("flat");
  TraceBuilder b(1);
  auto &t = b.thread(1);
  std::uint64_t now = 0;
  for (std::uint64_t id = 1; id <= 10; ++id) {
    t.emit(VPROF_REC_INTERVAL_BEGIN, id, now);
    t.enter(1, now + 1, 1).exit(1, now + 11, 1);
    now += 12;
    t.emit(VPROF_REC_INTERVAL_END, id, now);
    now += 5;
  }
  b.write(dir);
  auto res = va::analyze(dir, nullptr, {});
  EXPECT_FALSE(res.groups.front().answer.found);
  EXPECT_EQ(va::answer_sentence(res.groups.front()), "No variance to explain (10 intervals).");
}
