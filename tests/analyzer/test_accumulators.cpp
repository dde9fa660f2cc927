// The mergeable sums of the per-group statistics (analyzer/src/accumulators.hpp): equal to
// the dense two-pass formula, merge-invariant, and a Poisson bootstrap that agrees with the
// multinomial one within Monte Carlo error (docs/statistics.md, "Sums, not matrices").
#include "accumulators.hpp"
#include "stages.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace vprof::analyzer;
using namespace vprof::analyzer::detail;

namespace {

// Latency-like columns: a large common offset (1e6 ns) and a small spread, where raw sums
// of squares would lose every digit.
Eigen::MatrixXd random_rows(Eigen::Index n, Eigen::Index m, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  Eigen::MatrixXd X(n, m);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double common = z(rng);
    for (Eigen::Index j = 0; j < m; ++j)
      X(i, j) = 1e6 * (j + 1) + 30 * common * (j % 2 ? 1 : -1) + 50 * z(rng) * (j + 1);
  }
  return X;
}

Eigen::MatrixXd dense_cov(const Eigen::MatrixXd &X) {
  const Eigen::MatrixXd Xc = X.rowwise() - X.colwise().mean();
  return Xc.transpose() * Xc / static_cast<double>(X.rows());
}

// |a - b| relative to the scale of the pair's variances: 1e-9 of sqrt(Var x Var y).
void expect_cov_near(const Eigen::MatrixXd &got, const Eigen::MatrixXd &want) {
  ASSERT_EQ(got.rows(), want.rows());
  for (Eigen::Index i = 0; i < want.rows(); ++i)
    for (Eigen::Index j = 0; j < want.cols(); ++j) {
      const double scale = std::sqrt(want(i, i) * want(j, j));
      EXPECT_NEAR(got(i, j), want(i, j), 1e-9 * scale) << i << "," << j;
    }
}

} // namespace

TEST(Accumulators, CrossProductsEqualTheDenseCovarianceBlockByBlock) {
  const Eigen::MatrixXd X = random_rows(10007, 5, 1);
  CrossProducts cp(5);
  for (Eigen::Index first = 0; first < X.rows(); first += 333)
    cp.add_rows(X.middleRows(first, std::min<Eigen::Index>(333, X.rows() - first)));
  EXPECT_EQ(cp.count(), 10007.0);
  expect_cov_near(cp.cov(), dense_cov(X));
  for (Eigen::Index j = 0; j < 5; ++j)
    EXPECT_NEAR(cp.mean(j), X.col(j).mean(), 1e-12 * std::abs(X.col(j).mean()));
}

TEST(Accumulators, TwoHalvesMergedEqualTheWhole) {
  const Eigen::MatrixXd X = random_rows(5000, 4, 2);
  CrossProducts whole(4), a(4), b(4);
  whole.add_rows(X);
  a.add_rows(X.topRows(1234));
  b.add_rows(X.bottomRows(5000 - 1234));
  a.merge(b);
  expect_cov_near(a.cov(), whole.cov());
  // an empty side changes nothing
  CrossProducts empty(4);
  empty.merge(whole);
  whole.merge(CrossProducts(4));
  expect_cov_near(empty.cov(), whole.cov());

  RefMoments rw(3), ra(3), rb(3);
  rw.add_rows(X.leftCols(3), X.col(3));
  ra.add_rows(X.topRows(17).leftCols(3), X.topRows(17).col(3));
  rb.add_rows(X.bottomRows(5000 - 17).leftCols(3), X.bottomRows(5000 - 17).col(3));
  ra.merge(rb);
  for (Eigen::Index j = 0; j < 3; ++j) {
    EXPECT_NEAR(ra.var(j), rw.var(j), 1e-9 * rw.var(j));
    EXPECT_NEAR(ra.cov_ref(j), rw.cov_ref(j), 1e-9 * std::sqrt(rw.var(j) * rw.ref_var()));
  }
  EXPECT_NEAR(ra.ref_var(), rw.ref_var(), 1e-9 * rw.ref_var());
}

TEST(Accumulators, RefMomentsEqualTheDiagonalAndTheReferenceRow) {
  const Eigen::MatrixXd X = random_rows(9001, 4, 3);
  RefMoments rm(3);
  for (Eigen::Index first = 0; first < X.rows(); first += 1000) {
    const Eigen::Index n = std::min<Eigen::Index>(1000, X.rows() - first);
    rm.add_rows(X.middleRows(first, n).leftCols(3), X.middleRows(first, n).col(3));
  }
  const Eigen::MatrixXd want = dense_cov(X);
  for (Eigen::Index j = 0; j < 3; ++j) {
    EXPECT_NEAR(rm.var(j), want(j, j), 1e-9 * want(j, j));
    EXPECT_NEAR(rm.cov_ref(j), want(j, 3), 1e-9 * std::sqrt(want(j, j) * want(3, 3)));
    EXPECT_NEAR(rm.mean(j), X.col(j).mean(), 1e-12 * X.col(j).mean());
  }
  EXPECT_NEAR(rm.ref_var(), want(3, 3), 1e-9 * want(3, 3));
  EXPECT_NEAR(rm.ref_mean(), X.col(3).mean(), 1e-12 * X.col(3).mean());
}

TEST(Accumulators, PoissonWeightsHaveMeanAndVarianceOne) {
  PoissonWeights w(7);
  Eigen::MatrixXd W(100, 2000);
  w.fill(W);
  const double mean = W.mean();
  const double var = (W.array() - mean).square().mean();
  EXPECT_NEAR(mean, 1.0, 0.01); // sd of the mean of 2e5 draws: 0.0022
  EXPECT_NEAR(var, 1.0, 0.02);
  EXPECT_NEAR((W.array() == 0).cast<double>().mean(), std::exp(-1.0), 0.005);
  PoissonWeights again(7);
  Eigen::MatrixXd W2(100, 2000);
  again.fill(W2);
  EXPECT_EQ(W, W2) << "seeded: the same weights";
}

namespace {

// A group of n intervals: root -> s1 (a body with a call s3 below it), root -> s2; the
// times random (a skewed s1, s3 correlated with s2), more than one block of rows.
EngineOutput random_group(std::uint32_t n, std::uint64_t seed) {
  EngineOutput eo;
  eo.nodes = {{kNoParent, 0}, {0, 1}, {0, 2}, {1, 3}};
  eo.ticks_per_second = 3e9;
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> ex(1.0 / 3000);
  std::normal_distribution<double> z(0, 1);
  for (std::uint32_t i = 0; i < n; ++i) {
    IntervalRec r{};
    r.id = i + 1;
    r.times_off = eo.times.size();
    const double shared = z(rng);
    eo.times.push_back({0, 900 + static_cast<std::int64_t>(rng() % 200)});
    eo.times.push_back({1, 5000 + static_cast<std::int64_t>(ex(rng))});
    eo.times.push_back({2, 8000 + static_cast<std::int64_t>(600 * shared + 200 * z(rng))});
    if (i % 5)
      eo.times.push_back({3, 4000 + static_cast<std::int64_t>(400 * shared + 300 * z(rng))});
    r.times_n = static_cast<std::uint32_t>(eo.times.size() - r.times_off);
    eo.intervals.push_back(r);
  }
  return eo;
}

} // namespace

// The one pass of group_times against the dense matrices it no longer keeps: every column's
// mean, variance and covariance with L, and every expanded node's covariance matrix.
TEST(Accumulators, GroupSumsEqualTheDenseFormula) {
  const EngineOutput eo = random_group(20000, 11);
  const GroupTimes gt = group_times(eo, interval_groups(eo, 2)[0].intervals);
  const DenseTimes d = dense_times(gt);
  const Eigen::Index C = static_cast<Eigen::Index>(gt.present.size());
  ASSERT_EQ(C, 4);
  const Eigen::VectorXd L = column(gt, {0, false});
  EXPECT_EQ(L, Eigen::VectorXd(d.T.col(0)));
  for (Eigen::Index c = 0; c < C; ++c) {
    const Eigen::VectorXd t = d.T.col(c), b = d.S.col(c);
    const double vL = cov_of(L, L);
    EXPECT_NEAR(gt.cols.var(c), cov_of(t, t), 1e-9 * cov_of(t, t));
    EXPECT_NEAR(gt.cols.var(C + c), cov_of(b, b), 1e-9 * cov_of(b, b));
    EXPECT_NEAR(gt.cols.cov_ref(c), cov_of(t, L), 1e-9 * std::sqrt(cov_of(t, t) * vL));
    EXPECT_NEAR(gt.cols.cov_ref(C + c), cov_of(b, L), 1e-9 * std::sqrt(cov_of(b, b) * vL));
    EXPECT_NEAR(gt.cols.mean(c), t.mean(), 1e-12 * t.mean());
  }
  for (int nd : {0, 1}) {
    const auto &ch = gt.kids[nd];
    Eigen::MatrixXd X(d.T.rows(), static_cast<Eigen::Index>(ch.size()) + 1);
    for (std::size_t j = 0; j < ch.size(); ++j)
      X.col(static_cast<Eigen::Index>(j)) = d.T.col(gt.col_of[ch[j]]);
    X.col(X.cols() - 1) = d.S.col(gt.col_of[nd]);
    expect_cov_near(gt.trees.at(nd).cov(), dense_cov(X));
  }
}

// The Poisson bootstrap against today's multinomial resampling (n of n with replacement),
// both with 4000 replicates: the interval's centre and width agree within their Monte Carlo
// error (a percentile of 4000 replicates: a few per cent of the width).
TEST(Accumulators, PoissonBootstrapAgreesWithResamplingWithinMonteCarloError) {
  const EngineOutput eo = random_group(3000, 5);
  const GroupTimes gt = group_times(eo, interval_groups(eo, 2)[0].intervals);
  const DenseTimes d = dense_times(gt);
  Terms terms;
  terms.factors.resize(2);
  terms.factors[0].kind = Factor::Kind::Variance;
  terms.cols.push_back({{1, false}, {-1, false}}); // Var T(s1)
  terms.factors[1].kind = Factor::Kind::Covariance;
  terms.cols.push_back({{2, false}, {3, false}}); // Cov T(s2), T(s3)
  GroupResult gr;
  gr.latency = latency_stats(gt);
  gr.factors = terms.factors;
  AnalyzeOptions opt;
  opt.bootstrap_samples = 4000;
  opt.ci_factors = 2;
  opt.confidence = 0.9;
  std::mt19937_64 rng(3);
  std::vector<std::string> notes;
  bootstrap_intervals(gt, terms, {0, 1}, opt, rng, gr, notes);
  ASSERT_TRUE(gr.factors[0].has_ci && gr.factors[1].has_ci);

  // the reference: multinomial resampling of the dense columns
  const Eigen::VectorXd L = column(gt, {0, false});
  const Eigen::Index n = L.size();
  const Eigen::VectorXd x0 = d.T.col(gt.col_of[1]), x1 = d.T.col(gt.col_of[2]),
                        y1 = d.T.col(gt.col_of[3]);
  std::mt19937_64 ref_rng(99);
  std::uniform_int_distribution<Eigen::Index> pick(0, n - 1);
  std::vector<double> s0, s1;
  Eigen::VectorXd Lb(n), a(n), b(n), c(n);
  for (int rep = 0; rep < opt.bootstrap_samples; ++rep) {
    for (Eigen::Index i = 0; i < n; ++i) {
      const Eigen::Index k = pick(ref_rng);
      Lb[i] = L[k], a[i] = x0[k], b[i] = x1[k], c[i] = y1[k];
    }
    const double vL = cov_of(Lb, Lb);
    s0.push_back(cov_of(a, a) / vL);
    s1.push_back(2 * cov_of(b, c) / vL);
  }
  auto pct = [](std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
  };
  const std::vector<std::vector<double>> ref = {s0, s1};
  for (int f = 0; f < 2; ++f) {
    const double lo = pct(ref[f], 0.05), hi = pct(ref[f], 0.95);
    const double width = hi - lo, got_width = gr.factors[f].share_hi - gr.factors[f].share_lo;
    const double centre = (hi + lo) / 2,
                 got_centre = (gr.factors[f].share_hi + gr.factors[f].share_lo) / 2;
    ASSERT_GT(width, 0);
    EXPECT_NEAR(got_width / width, 1.0, 0.12) << "factor " << f;
    EXPECT_NEAR(got_centre, centre, 0.1 * width) << "factor " << f;
  }
}
