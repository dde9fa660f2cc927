// Mergeable sums (accumulators.hpp): block co-moments merged pairwise, Poisson weights.
#include "accumulators.hpp"

#include <array>
#include <cmath>

namespace vprof::analyzer::detail {

using Eigen::Index;
using Eigen::MatrixXd;
using Eigen::VectorXd;

CrossProducts::CrossProducts(Index m) : mean_(VectorXd::Zero(m)), m2_(MatrixXd::Zero(m, m)) {}

void CrossProducts::add_rows(const Eigen::Ref<const MatrixXd> &X) {
  if (X.rows() == 0)
    return;
  CrossProducts b;
  b.n_ = static_cast<double>(X.rows());
  b.mean_ = X.colwise().mean().transpose();
  const MatrixXd Xc = X.rowwise() - b.mean_.transpose();
  b.m2_.noalias() = Xc.transpose() * Xc;
  merge(b);
}

void CrossProducts::merge(const CrossProducts &o) {
  if (o.n_ == 0)
    return;
  if (n_ == 0) {
    *this = o;
    return;
  }
  const double n = n_ + o.n_;
  const VectorXd d = o.mean_ - mean_;
  m2_ += o.m2_;
  m2_.noalias() += d * d.transpose() * (n_ * o.n_ / n);
  mean_ += d * (o.n_ / n);
  n_ = n;
}

MatrixXd CrossProducts::cov() const {
  return n_ > 0 ? MatrixXd(m2_ / n_) : MatrixXd::Zero(m2_.rows(), m2_.cols());
}

RefMoments::RefMoments(Index m)
    : mean_(VectorXd::Zero(m)), m2_(VectorXd::Zero(m)), cross_(VectorXd::Zero(m)) {}

void RefMoments::add_rows(const Eigen::Ref<const MatrixXd> &X,
                          const Eigen::Ref<const VectorXd> &ref) {
  if (X.rows() == 0)
    return;
  RefMoments b;
  b.n_ = static_cast<double>(X.rows());
  b.mean_ = X.colwise().mean().transpose();
  b.ref_mean_ = ref.mean();
  const MatrixXd Xc = X.rowwise() - b.mean_.transpose();
  const VectorXd rc = ref.array() - b.ref_mean_;
  b.m2_ = Xc.colwise().squaredNorm().transpose();
  b.cross_.noalias() = Xc.transpose() * rc;
  b.ref_m2_ = rc.squaredNorm();
  merge(b);
}

void RefMoments::merge(const RefMoments &o) {
  if (o.n_ == 0)
    return;
  if (n_ == 0) {
    *this = o;
    return;
  }
  const double n = n_ + o.n_, f = n_ * o.n_ / n;
  const VectorXd d = o.mean_ - mean_;
  const double dr = o.ref_mean_ - ref_mean_;
  m2_ += o.m2_ + d.cwiseProduct(d) * f;
  cross_ += o.cross_ + d * (dr * f);
  ref_m2_ += o.ref_m2_ + dr * dr * f;
  mean_ += d * (o.n_ / n);
  ref_mean_ += dr * (o.n_ / n);
  n_ = n;
}

namespace {

// P(K <= k) for K ~ Poisson(1), k = 0..kMax-1, scaled to 2^64 (the last entry: every draw).
constexpr int kMax = 20;
std::array<std::uint64_t, kMax> poisson_cdf() {
  std::array<std::uint64_t, kMax> t{};
  double p = std::exp(-1.0), c = 0;
  for (int k = 0; k < kMax; ++k) {
    c += p;
    p /= static_cast<double>(k + 1);
    t[static_cast<std::size_t>(k)] =
        c >= 1.0 || k == kMax - 1 ? ~0ull : static_cast<std::uint64_t>(std::ldexp(c, 64));
  }
  return t;
}

} // namespace

// splitmix64: a fast 64-bit generator whose whole state is one seed
std::uint64_t PoissonWeights::next() {
  std::uint64_t z = (state_ += kStep);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

namespace {

// The draw of u's top byte when the whole byte's range of u falls in one k (kSplit when it
// straddles a boundary of the CDF: about 5 of 256, which compare u itself).
constexpr std::uint8_t kSplit = 0xff;
std::array<std::uint8_t, 256> poisson_by_top_byte(const std::array<std::uint64_t, kMax> &cdf) {
  std::array<std::uint8_t, 256> t{};
  for (std::uint64_t b = 0; b < 256; ++b) {
    const std::uint64_t lo = b << 56, hi = lo | ((1ull << 56) - 1);
    unsigned k_lo = 0, k_hi = 0;
    while (lo > cdf[k_lo])
      ++k_lo;
    while (hi > cdf[k_hi])
      ++k_hi;
    t[b] = k_lo == k_hi ? static_cast<std::uint8_t>(k_lo) : kSplit;
  }
  return t;
}

} // namespace

// K = the smallest k with u <= P(K <= k) 2^64: by the top byte's table, else by the CDF
unsigned PoissonWeights::draw() {
  static const std::array<std::uint64_t, kMax> cdf = poisson_cdf();
  static const std::array<std::uint8_t, 256> by_byte = poisson_by_top_byte(cdf);
  const std::uint64_t u = next();
  const std::uint8_t k0 = by_byte[u >> 56];
  if (k0 != kSplit)
    return k0;
  unsigned k = 0;
  while (u > cdf[k])
    ++k;
  return k;
}

void PoissonWeights::fill(MatrixXd &W) {
  for (Index j = 0; j < W.cols(); ++j)
    for (Index b = 0; b < W.rows(); ++b)
      W(b, j) = static_cast<double>(draw());
}

} // namespace vprof::analyzer::detail
