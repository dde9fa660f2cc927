// The tail view (docs/statistics.md, "The tail"): per place, how much longer it takes in the
// slowest intervals than on average. A cause that makes a few intervals very slow carries
// little variance and ranks low by it; here it leads. tail_excess is the whole computation
// over the per-interval latencies and place times; tail_stats gathers those from the group's
// node times and adds bootstrap intervals.
#include "stages.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

namespace vprof::analyzer::detail {

using Eigen::MatrixXd;
using Eigen::VectorXd;

namespace {

// The q-th percentile (q in (0, 100)) of L by linear interpolation between order statistics
// (R type 7), the rule of LatencyStats: at q = 99 the threshold is the group's p99.
// Linear time: the i-th order statistic by selection, the next one as the smallest above it.
double percentile_of(const VectorXd &L, double q) {
  std::vector<double> v(L.data(), L.data() + L.size());
  if (v.empty())
    return 0;
  const double pos = q / 100 * static_cast<double>(v.size() - 1);
  const auto i = static_cast<std::size_t>(pos);
  const double f = pos - static_cast<double>(i);
  const auto nth = v.begin() + static_cast<std::ptrdiff_t>(i);
  std::nth_element(v.begin(), nth, v.end());
  if (i + 1 >= v.size())
    return *nth;
  const double next = *std::min_element(nth + 1, v.end());
  return *nth + f * (next - *nth);
}

// Linear-interpolation percentile of a sample of estimates (p in [0, 1]).
double quantile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  const double pos = p * static_cast<double>(v.size() - 1);
  const auto i = static_cast<std::size_t>(pos);
  const double f = pos - static_cast<double>(i);
  return i + 1 < v.size() ? v[i] + f * (v[i + 1] - v[i]) : v[i];
}

constexpr const char *kUntrackedKey = "u:untracked";
constexpr const char *kUntrackedName = "(time on no place: untracked)";

} // namespace

TailExcess tail_excess(const VectorXd &L, const MatrixXd &X, double q) {
  TailExcess t;
  const Eigen::Index I = L.size();
  t.excess = VectorXd::Zero(X.cols());
  if (I == 0)
    return t;
  t.threshold_ns = percentile_of(L, q);
  VectorXd tail_sum = VectorXd::Zero(X.cols());
  double tail_L = 0;
  for (Eigen::Index i = 0; i < I; ++i)
    if (L[i] >= t.threshold_ns) {
      tail_sum += X.row(i).transpose();
      tail_L += L[i];
      ++t.intervals;
    }
  // the maximum is never below the threshold: the tail holds at least one interval
  const double n = static_cast<double>(t.intervals);
  t.excess = tail_sum / n - X.colwise().mean().transpose();
  t.excess_ns = tail_L / n - L.mean();
  return t;
}

void tail_stats(const PlaceTable &pt, const GroupTimes &gt, const AnalyzeOptions &opt,
                std::mt19937_64 &rng, GroupResult &gr, std::vector<std::string> &notes) {
  const Eigen::Index I = gt.L.size(), C = static_cast<Eigen::Index>(gt.present.size());
  if (!(opt.tail_percentile > 0 && opt.tail_percentile < 100))
    throw AnalysisError("tail_percentile = " + std::to_string(opt.tail_percentile) +
                        ": the tail's percentile must lie in (0, 100), e.g. 99");
  TailStats &ts = gr.tail;
  ts.percentile = opt.tail_percentile;
  if (I == 0)
    return;
  // X: the group's places' self times per interval, as place_stats sums them, and a last
  // column with what no place holds (untracked time), so the columns add up to L
  std::vector<int> gplace(pt.key.size(), -1), plist;
  for (Eigen::Index c = 0; c < C; ++c) {
    const int p = pt.place_of[static_cast<std::size_t>(gt.present[c])];
    if (p >= 0 && gplace[static_cast<std::size_t>(p)] < 0) {
      gplace[static_cast<std::size_t>(p)] = static_cast<int>(plist.size());
      plist.push_back(p);
    }
  }
  const Eigen::Index P = static_cast<Eigen::Index>(plist.size());
  MatrixXd X = MatrixXd::Zero(I, P + 1);
  for (Eigen::Index c = 0; c < C; ++c) {
    const int p = pt.place_of[static_cast<std::size_t>(gt.present[c])];
    if (p >= 0)
      X.col(gplace[static_cast<std::size_t>(p)]) += gt.S.col(c);
  }
  X.col(P) = gt.L - X.leftCols(P).rowwise().sum();

  const TailExcess t = tail_excess(gt.L, X, opt.tail_percentile);
  ts.threshold_ns = t.threshold_ns;
  ts.intervals = t.intervals;
  ts.excess_ns = t.excess_ns;
  std::vector<Eigen::Index> order(static_cast<std::size_t>(P + 1));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](Eigen::Index a, Eigen::Index b) {
    if (t.excess[a] != t.excess[b])
      return t.excess[a] > t.excess[b];
    return a < b;
  });
  std::vector<Eigen::Index> column_of; // ts.places -> its column of X
  for (Eigen::Index j : order) {
    TailPlace tp;
    const bool untracked = j == P;
    if (untracked && X.col(P).cwiseAbs().maxCoeff() < 0.5) // below 1 ns in every interval
      continue;
    tp.key = untracked ? kUntrackedKey : pt.key[static_cast<std::size_t>(plist[j])];
    tp.name = untracked ? kUntrackedName : pt.name[static_cast<std::size_t>(plist[j])];
    tp.excess_ns = tp.excess_lo_ns = tp.excess_hi_ns = t.excess[j];
    tp.fraction = t.excess_ns != 0 ? t.excess[j] / t.excess_ns : 0;
    ts.places.push_back(std::move(tp));
    column_of.push_back(j);
  }

  // bootstrap percentile intervals of the first ci_factors excesses: resample the intervals,
  // the threshold recomputed in each resample
  const int nci = std::min<int>(opt.ci_factors, static_cast<int>(ts.places.size()));
  int samples = opt.bootstrap_samples;
  if (samples > 50 && static_cast<double>(samples) * nci * static_cast<double>(I) > 4e8) {
    samples =
        std::max(50, static_cast<int>(4e8 / (static_cast<double>(nci) * static_cast<double>(I))));
    notes.push_back("group '" + gr.label + "': the tail's bootstrap reduced to " +
                    std::to_string(samples) + " samples (" + std::to_string(I) + " intervals)");
  }
  if (samples <= 0 || nci <= 0 || I <= 1)
    return;
  MatrixXd Xc(I, nci);
  for (int r = 0; r < nci; ++r)
    Xc.col(r) = X.col(column_of[static_cast<std::size_t>(r)]);
  std::uniform_int_distribution<Eigen::Index> pick(0, I - 1);
  std::vector<Eigen::Index> idx(static_cast<std::size_t>(I));
  VectorXd Lb(I);
  MatrixXd Xb(I, nci);
  std::vector<std::vector<double>> est(static_cast<std::size_t>(nci));
  for (int b = 0; b < samples; ++b) {
    for (Eigen::Index i = 0; i < I; ++i) {
      idx[static_cast<std::size_t>(i)] = pick(rng);
      Lb[i] = gt.L[idx[static_cast<std::size_t>(i)]];
    }
    for (int r = 0; r < nci; ++r) // column by column: each read stays in one column
      for (Eigen::Index i = 0; i < I; ++i)
        Xb(i, r) = Xc(idx[static_cast<std::size_t>(i)], r);
    const TailExcess tb = tail_excess(Lb, Xb, opt.tail_percentile);
    for (int r = 0; r < nci; ++r)
      est[static_cast<std::size_t>(r)].push_back(tb.excess[r]);
  }
  const double alpha = (1 - opt.confidence) / 2;
  for (int r = 0; r < nci; ++r) {
    TailPlace &tp = ts.places[static_cast<std::size_t>(r)];
    tp.excess_lo_ns = quantile(est[static_cast<std::size_t>(r)], alpha);
    tp.excess_hi_ns = quantile(est[static_cast<std::size_t>(r)], 1 - alpha);
    tp.has_ci = true;
  }
}

} // namespace vprof::analyzer::detail
