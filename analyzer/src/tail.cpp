// The tail view (docs/statistics.md, "The tail"): per place, how much longer it takes in the
// slowest intervals than on average. A cause that makes a few intervals very slow carries
// little variance and ranks low by it; here it leads. Sums, not matrices: the threshold is a
// percentile of L (an exact order statistic found in passes: latency_ranks), the places' times come
// a block of intervals at a time (for_each_block), and the bootstrap is the Poisson one of the
// factors, each replicate's threshold its own weighted percentile of L.
#include "stages.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

namespace vprof::analyzer::detail {

using Eigen::Index;
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

// The sums behind the excesses, filled a block of intervals at a time: every column's sum
// over all intervals and over those with L >= threshold, and the same of L.
struct TailSums {
  double threshold = 0;
  VectorXd all, tail;
  double n = 0, n_tail = 0, L_all = 0, L_tail = 0;
  TailSums(Index columns, double thr)
      : threshold(thr), all(VectorXd::Zero(columns)), tail(VectorXd::Zero(columns)) {}
  void add_rows(const Eigen::Ref<const VectorXd> &L, const Eigen::Ref<const MatrixXd> &X) {
    all += X.colwise().sum().transpose();
    n += static_cast<double>(L.size());
    L_all += L.sum();
    for (Index i = 0; i < L.size(); ++i)
      if (L[i] >= threshold) {
        tail += X.row(i).transpose();
        L_tail += L[i];
        ++n_tail;
      }
  }
  // the maximum is never below the threshold: the tail holds at least one interval
  TailExcess excess() const {
    TailExcess t;
    t.threshold_ns = threshold;
    t.intervals = static_cast<std::size_t>(n_tail);
    t.excess = tail / n_tail - all / n;
    t.excess_ns = L_tail / n_tail - L_all / n;
    return t;
  }
};

constexpr const char *kUntrackedKey = "u:untracked";
constexpr const char *kUntrackedName = "(time on no place: untracked)";

// The group's places (in the order of their first column) and each column's place among
// them (-1: none), as place_stats sums them; the last of the P + 1 variables is untracked.
struct TailColumns {
  std::vector<int> plist;    // variable -> the place (pt's index)
  std::vector<Index> var_of; // column -> its variable (-1: no place)
  Index places() const { return static_cast<Index>(plist.size()); }
};

TailColumns tail_columns(const PlaceTable &pt, const GroupTimes &gt) {
  TailColumns tc;
  std::vector<int> gplace(pt.key.size(), -1);
  for (int node : gt.present) {
    const int p = pt.place_of[static_cast<std::size_t>(node)];
    if (p >= 0 && gplace[static_cast<std::size_t>(p)] < 0) {
      gplace[static_cast<std::size_t>(p)] = static_cast<int>(tc.plist.size());
      tc.plist.push_back(p);
    }
    tc.var_of.push_back(p >= 0 ? gplace[static_cast<std::size_t>(p)] : -1);
  }
  return tc;
}

// A block's places' times (rows x P + 1): each place's nodes' self times, then L minus them.
void place_block(const TailColumns &tc, const MatrixXd &S, const MatrixXd &T, MatrixXd &X) {
  const Index P = tc.places();
  X.setZero(S.rows(), P + 1);
  for (Index c = 0; c < S.cols(); ++c)
    if (tc.var_of[static_cast<std::size_t>(c)] >= 0)
      X.col(tc.var_of[static_cast<std::size_t>(c)]) += S.col(c);
  X.col(P) = T.col(0) - X.leftCols(P).rowwise().sum();
}

// One pass over the group: every place's time (and the untracked time: L minus the places',
// so the excesses add up to L's) summed over all intervals and over those with L >= the
// threshold; the rows by excess, descending (ties: the place's variable), each with its
// variable in column_of. The untracked row only when it reaches 1 ns in some interval.
struct ExcessPass {
  TailColumns tc;
  TailSums sums;
  TailExcess total;
  std::vector<TailPlace> rows;
  std::vector<Index> column_of;
  ExcessPass(const PlaceTable &pt, const GroupTimes &gt, double threshold)
      : tc(tail_columns(pt, gt)), sums(tc.places() + 1, threshold) {
    const Index P = tc.places();
    double untracked_max = 0;
    MatrixXd X;
    for_each_block(gt, [&](Index, const MatrixXd &S, const MatrixXd &T) {
      place_block(tc, S, T, X);
      sums.add_rows(T.col(0), X);
      untracked_max = std::max(untracked_max, X.col(P).cwiseAbs().maxCoeff());
    });
    if (sums.n_tail == 0)
      return;
    total = sums.excess();
    std::vector<Index> order(static_cast<std::size_t>(P + 1));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](Index a, Index b) { return total.excess[a] > total.excess[b]; });
    for (Index j : order) {
      const bool untracked = j == P;
      if (untracked && untracked_max < 0.5) // below 1 ns in every interval
        continue;
      TailPlace tp;
      tp.key = untracked ? kUntrackedKey : pt.key[static_cast<std::size_t>(tc.plist[j])];
      tp.name = untracked ? kUntrackedName : pt.name[static_cast<std::size_t>(tc.plist[j])];
      tp.excess_ns = tp.excess_lo_ns = tp.excess_hi_ns = total.excess[j];
      tp.fraction = total.excess_ns != 0 ? total.excess[j] / total.excess_ns : 0;
      rows.push_back(std::move(tp));
      column_of.push_back(j);
    }
  }
};

} // namespace

std::uint64_t tail_cut_rank(std::uint64_t n, double q) {
  const double k0 = std::ceil((1 - q / 100) * static_cast<double>(n));
  const std::uint64_t m = std::min<std::uint64_t>(n, static_cast<std::uint64_t>(2 * k0) + 100);
  return n - m;
}

unsigned poisson_weight_at(std::uint64_t seed, std::uint64_t k) {
  PoissonWeights w(seed + k * PoissonWeights::kStep);
  return w.draw();
}

double weighted_percentile(const std::vector<double> &values_desc,
                           const std::vector<unsigned> &weights, double total, double q,
                           bool &found) {
  found = false;
  if (total <= 0)
    return 0;
  const double pos = q / 100 * (total - 1);
  const double i = std::floor(pos), f = pos - i;
  // ascending order statistic i is descending d0 = total - 1 - i; i + 1 is d0 - 1
  const double d0 = total - 1 - i, d1 = d0 - 1;
  double c = 0, v1 = 0;
  bool has_v1 = d1 < 0;
  for (std::size_t j = 0; j < values_desc.size(); ++j) {
    c += weights[j];
    if (!has_v1 && c > d1) {
      v1 = values_desc[j];
      has_v1 = true;
    }
    if (c > d0) {
      found = true;
      const double v0 = values_desc[j];
      return d1 < 0 ? v0 : v0 + f * (v1 - v0);
    }
  }
  return 0;
}

std::vector<TailPlace> excess_by_place(const PlaceTable &pt, const GroupTimes &gt, double threshold,
                                       TailExcess &total) {
  ExcessPass pass(pt, gt, threshold);
  if (pass.sums.n_tail == 0)
    return {};
  total = pass.total;
  return std::move(pass.rows);
}

TailExcess tail_excess(const VectorXd &L, const MatrixXd &X, double q) {
  TailExcess t;
  t.excess = VectorXd::Zero(X.cols());
  if (L.size() == 0)
    return t;
  TailSums sums(X.cols(), percentile_of(L, q));
  sums.add_rows(L, X);
  return sums.excess();
}

namespace {

// Bootstrap percentile intervals of the first nci places' excesses (`column_of`: their
// variables): replicate b weighs interval i by w_bi ~ Poisson(1) and takes its own
// threshold, the weighted p_q of L. One block pass fills every replicate's weighted sums
// over all intervals (replicates x nci) and keeps the candidates' place times (rows within
// about twice the tail, x nci); then each replicate's threshold and tail sums come from the
// candidates, their weights drawn again at their place in the stream.
void tail_bootstrap(const TailColumns &tc, const GroupTimes &gt, const AnalyzeOptions &opt,
                    const std::vector<Index> &column_of, const VectorXd &mean, int nci,
                    std::uint64_t seed, GroupResult &gr, std::vector<std::string> &notes) {
  const int B = opt.bootstrap_samples;
  const double q = opt.tail_percentile;
  // the candidates: the rows with L at or above the m-th largest (an exact order statistic,
  // latency_ranks), with their L and their place times centred at the full sample's means
  const std::uint64_t cut_rank = tail_cut_rank(static_cast<std::uint64_t>(gt.rows), q);
  latency_ranks(gt, {cut_rank});
  const double cut = gt.order.at(cut_rank);
  std::vector<Index> cand;
  std::vector<double> cand_L, cand_X; // cand_X: nci per candidate
  ReplicateSums rs(B, 1 + nci);
  PoissonWeights weights(seed);
  MatrixXd X, Z, W;
  for_each_block(gt, [&](Index first, const MatrixXd &S, const MatrixXd &T) {
    const Index n = S.rows();
    place_block(tc, S, T, X);
    Z.resize(n, 1 + nci);
    Z.col(0).setOnes();
    for (int r = 0; r < nci; ++r)
      Z.col(1 + r) = X.col(column_of[static_cast<std::size_t>(r)]).array() -
                     mean[column_of[static_cast<std::size_t>(r)]];
    for (Index i = 0; i < n; ++i)
      if (T(i, 0) >= cut) {
        cand.push_back(first + i);
        cand_L.push_back(T(i, 0));
        for (int r = 0; r < nci; ++r)
          cand_X.push_back(Z(i, 1 + r));
      }
    W.resize(B, n);
    weights.fill(W);
    rs.add_rows(W, Z);
  });
  const Index M = static_cast<Index>(cand.size());
  const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>
      Xcand(cand_X.data(), M, nci);
  // the candidates by L, descending (ties by row)
  std::vector<Index> desc(static_cast<std::size_t>(M));
  std::iota(desc.begin(), desc.end(), 0);
  std::sort(desc.begin(), desc.end(), [&](Index a, Index b) {
    const double la = cand_L[static_cast<std::size_t>(a)], lb = cand_L[static_cast<std::size_t>(b)];
    return la != lb ? la > lb : a < b;
  });
  std::vector<double> L_desc;
  for (Index s : desc)
    L_desc.push_back(cand_L[static_cast<std::size_t>(s)]);
  std::vector<std::vector<double>> est(static_cast<std::size_t>(nci));
  std::vector<unsigned> w(static_cast<std::size_t>(M));
  VectorXd tail_sum(nci);
  int dropped = 0;
  for (int b = 0; b < B; ++b) {
    const double total = rs.sums(b, 0);
    if (total <= 0)
      continue; // every weight 0 (a tiny group): no replicate
    for (std::size_t j = 0; j < desc.size(); ++j) {
      const auto row = static_cast<std::uint64_t>(cand[static_cast<std::size_t>(desc[j])]);
      w[j] = poisson_weight_at(seed,
                               row * static_cast<std::uint64_t>(B) + static_cast<std::uint64_t>(b));
    }
    bool found = false;
    const double thr = weighted_percentile(L_desc, w, total, q, found);
    if (!found) {
      ++dropped;
      continue;
    }
    tail_sum.setZero();
    double tail_w = 0;
    for (std::size_t j = 0; j < desc.size() && L_desc[j] >= thr; ++j)
      if (w[j] > 0) {
        tail_w += w[j];
        tail_sum += w[j] * Xcand.row(desc[j]).transpose();
      }
    for (int r = 0; r < nci; ++r)
      est[static_cast<std::size_t>(r)].push_back(tail_sum[r] / tail_w - rs.sums(b, 1 + r) / total);
  }
  if (dropped > 0)
    notes.push_back("group '" + gr.label + "': " + std::to_string(dropped) +
                    " of the tail's bootstrap replicates dropped (threshold below the " +
                    std::to_string(M) + " candidate intervals)");
  if (est.front().empty())
    return;
  const double alpha = (1 - opt.confidence) / 2;
  for (int r = 0; r < nci; ++r) {
    TailPlace &tp = gr.tail.places[static_cast<std::size_t>(r)];
    tp.excess_lo_ns = quantile(est[static_cast<std::size_t>(r)], alpha);
    tp.excess_hi_ns = quantile(est[static_cast<std::size_t>(r)], 1 - alpha);
    tp.has_ci = true;
  }
}

} // namespace

void tail_stats(const PlaceTable &pt, const GroupTimes &gt, const AnalyzeOptions &opt,
                std::mt19937_64 &rng, GroupResult &gr, std::vector<std::string> &notes) {
  const Index I = gt.rows;
  if (!(opt.tail_percentile > 0 && opt.tail_percentile < 100))
    throw AnalysisError("tail_percentile = " + std::to_string(opt.tail_percentile) +
                        ": the tail's percentile must lie in (0, 100), e.g. 99");
  TailStats &ts = gr.tail;
  ts.percentile = opt.tail_percentile;
  if (I == 0)
    return;
  ExcessPass pass(pt, gt, latency_percentile(gt, opt.tail_percentile / 100));
  ts.threshold_ns = pass.total.threshold_ns;
  ts.intervals = pass.total.intervals;
  ts.excess_ns = pass.total.excess_ns;
  ts.places = std::move(pass.rows);
  const std::vector<Index> &column_of = pass.column_of; // ts.places -> its variable
  const int nci = std::min<int>(opt.ci_factors, static_cast<int>(ts.places.size()));
  if (opt.bootstrap_samples <= 0 || nci <= 0 || I <= 1)
    return;
  // the factors' bootstrap seeds its weights with rng()'s next draw (from its own copy of
  // the generator): the tail takes the draw after it, so its replicates are independent
  rng.discard(1);
  const std::uint64_t seed = rng();
  tail_bootstrap(pass.tc, gt, opt, column_of, pass.sums.all / pass.sums.n, nci, seed, gr, notes);
}

} // namespace vprof::analyzer::detail
