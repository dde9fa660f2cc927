// Mergeable sums for the per-group statistics (docs/statistics.md, "Sums, not matrices"):
// means and centred cross-products filled a block of intervals at a time, so a group's
// statistics keep no intervals x columns matrix; and the Poisson bootstrap's replicate sums.
// Internal to the analyzer (analyzer.cpp's stages; tests/analyzer/test_accumulators.cpp).
#pragma once

#include <Eigen/Dense>

#include <cstdint>

namespace vprof::analyzer::detail {

// Means and co-moments (sums of centred cross-products) of m variables. A block of rows
// (intervals) adds its own centred products, merged into the running ones by the pairwise
// update  M = Ma + Mb + d d' na nb / n  (d = mean_b - mean_a): no raw sums of squares, so
// no cancellation; two halves merged equal the whole to rounding.
class CrossProducts {
public:
  CrossProducts() = default;
  explicit CrossProducts(Eigen::Index m);
  // rows = intervals, columns = the m variables
  void add_rows(const Eigen::Ref<const Eigen::MatrixXd> &X);
  void merge(const CrossProducts &o);
  double count() const { return n_; }
  Eigen::Index size() const { return mean_.size(); }
  double mean(Eigen::Index i) const { return mean_[i]; }
  // population covariance (divide by n), the analyzer's one estimator
  double cov(Eigen::Index i, Eigen::Index j) const { return n_ > 0 ? m2_(i, j) / n_ : 0.0; }
  Eigen::MatrixXd cov() const;

private:
  double n_ = 0;
  Eigen::VectorXd mean_;
  Eigen::MatrixXd m2_;
};

// The same for m variables against one reference variable (the latency L), without the
// m x m cross terms: each variable's mean, variance and covariance with the reference.
class RefMoments {
public:
  RefMoments() = default;
  explicit RefMoments(Eigen::Index m);
  void add_rows(const Eigen::Ref<const Eigen::MatrixXd> &X,
                const Eigen::Ref<const Eigen::VectorXd> &ref);
  void merge(const RefMoments &o);
  double count() const { return n_; }
  Eigen::Index size() const { return mean_.size(); }
  double mean(Eigen::Index i) const { return mean_[i]; }
  double var(Eigen::Index i) const { return n_ > 0 ? m2_[i] / n_ : 0.0; }
  double cov_ref(Eigen::Index i) const { return n_ > 0 ? cross_[i] / n_ : 0.0; }
  double ref_mean() const { return ref_mean_; }
  double ref_var() const { return n_ > 0 ? ref_m2_ / n_ : 0.0; }

private:
  double n_ = 0, ref_mean_ = 0, ref_m2_ = 0;
  Eigen::VectorXd mean_, m2_, cross_;
};

// Poisson(1) weights for the bootstrap: each interval counts w ~ Poisson(1) times in each
// replicate, drawn independently per interval and replicate, so the replicates fill in one
// pass over the intervals in any order (the multinomial resampling of n out of n needs the
// whole sample at once). Seeded: the same seed gives the same weights in the same order.
class PoissonWeights {
public:
  // splitmix64's state step before each draw: the k-th draw of the stream from `seed` is the
  // first of the stream from seed + k * kStep (poisson_weight_at, tail.cpp)
  static constexpr std::uint64_t kStep = 0x9e3779b97f4a7c15ull;
  explicit PoissonWeights(std::uint64_t seed) : state_(seed) {}
  // a replicates x rows block of weights
  void fill(Eigen::MatrixXd &W);
  unsigned draw();

private:
  std::uint64_t next();
  std::uint64_t state_;
};

// Weighted sums of q columns per replicate (replicates x q): sums += W * Z, with Z's columns
// centred beforehand at the full sample's means (so the replicate's moments, from these raw
// sums, do not cancel).
struct ReplicateSums {
  Eigen::MatrixXd sums; // replicates x q
  ReplicateSums(Eigen::Index replicates, Eigen::Index q)
      : sums(Eigen::MatrixXd::Zero(replicates, q)) {}
  void add_rows(const Eigen::MatrixXd &W, const Eigen::Ref<const Eigen::MatrixXd> &Z) {
    sums.noalias() += W * Z;
  }
};

} // namespace vprof::analyzer::detail
