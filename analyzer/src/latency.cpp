// Latency statistics of a group: mean, variance, percentiles and the log-scale histogram
// (docs/statistics.md).
#include "stages.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <vector>

namespace vprof::analyzer::detail {

using Eigen::MatrixXd;
using Eigen::VectorXd;

namespace {

// Linear-interpolation percentile (R type 7) of an unsorted vector, which it reorders: the
// two order statistics around p * (n - 1) by selection (linear time, no sort), exactly the
// sorted vector's values.
double percentile_in_place(std::vector<double> &v, double p) {
  if (v.empty())
    return 0;
  double pos = p * static_cast<double>(v.size() - 1);
  auto i = static_cast<std::size_t>(pos);
  double f = pos - static_cast<double>(i);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  const double lo = v[i];
  if (i + 1 >= v.size())
    return lo;
  const double hi = *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(i) + 1, v.end());
  return lo + f * (hi - lo);
}

} // namespace

double percentile(std::vector<double> v, double p) { return percentile_in_place(v, p); }

double cov_of(const VectorXd &x, const VectorXd &y) {
  if (x.size() == 0)
    return 0;
  return ((x.array() - x.mean()) * (y.array() - y.mean())).sum() / static_cast<double>(x.size());
}

LatencyStats latency_stats(const VectorXd &L) {
  LatencyStats s;
  s.count = static_cast<std::uint64_t>(L.size());
  if (L.size() == 0)
    return s;
  s.mean_ns = L.mean();
  s.var_ns2 = cov_of(L, L);
  s.cv = s.mean_ns != 0 ? std::sqrt(s.var_ns2) / s.mean_ns : 0;
  s.min_ns = L.minCoeff();
  s.max_ns = L.maxCoeff();
  std::vector<double> v(L.data(), L.data() + L.size());
  s.p50_ns = percentile_in_place(v, 0.50);
  s.p95_ns = percentile_in_place(v, 0.95);
  s.p99_ns = percentile_in_place(v, 0.99);
  return s;
}

constexpr int kHistogramBins = 40;

// 40 log-spaced bins from the smallest to the largest latency (the HTML report's histogram;
// a log scale because latency distributions of servers are long-tailed).
LatencyHistogram latency_histogram(const VectorXd &L) {
  LatencyHistogram h;
  if (L.size() == 0)
    return h;
  h = histogram_bins(L.minCoeff(), L.maxCoeff(), static_cast<std::uint64_t>(L.size()));
  for (Eigen::Index i = 0; i < L.size(); ++i)
    histogram_add(h, L[i]);
  return h;
}

LatencyHistogram histogram_bins(double lo, double hi, std::uint64_t n) {
  LatencyHistogram h;
  if (n == 0)
    return h;
  h.lo_ns = std::max(1.0, lo);
  h.hi_ns = std::max(h.lo_ns * 1.001, hi * 1.000001);
  h.counts.assign(kHistogramBins, 0);
  return h;
}

void histogram_add(LatencyHistogram &h, double L) {
  const double span = std::log(h.hi_ns / h.lo_ns);
  const double x = std::max(L, h.lo_ns);
  auto bin = static_cast<int>(std::log(x / h.lo_ns) / span * kHistogramBins);
  ++h.counts[static_cast<std::size_t>(std::clamp(bin, 0, kHistogramBins - 1))];
}

} // namespace vprof::analyzer::detail
