// The slow group (docs/statistics.md, "The slow group"): a few intervals far slower than all
// the others. When a rare kind of request (a 2,000-key multi-get among single-key gets) is
// what makes Var(L), its time is spread over every place it passes — the lookups, the reply's
// writing, the loop's work while it waits — and no place carries what removing those
// requests would remove. The group names it: found from the latencies alone, the best split
// of them into the few slowest and the rest (Otsu's criterion: the largest share of Var(L)
// between the two groups), with the group's extra time by place.
//
// Why a high bar: the slowest few percent of any long-tailed distribution explain part of
// its variance (a lognormal's best split explains 42-55 %, a Pareto's with shape 2 to 3
// 38-44 %); two kinds of interval, one far slower than the other, explain 90 % and more.
#include "stages.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace vprof::analyzer::detail {
namespace {

constexpr int kBinsPerOctave = 16;
constexpr double kMaxFraction = 0.10;       // the group holds at most this share of intervals
constexpr std::uint64_t kMinIntervals = 10; // and at least this many: not one outlier
constexpr double kMinBetween = 0.80;        // the split explains at least this share of Var(L)

// Bin 0 holds L below 1 ns; bin b >= 1 holds 2^((b-1)/16) <= L < 2^(b/16) ns.
std::size_t bin_of(double L_ns) {
  return L_ns < 1 ? 0 : static_cast<std::size_t>(std::floor(kBinsPerOctave * std::log2(L_ns))) + 1;
}

double lower_edge(std::size_t bin) {
  return bin == 0 ? 0 : std::exp2(static_cast<double>(bin - 1) / kBinsPerOctave);
}

// Per bin: the count and the sums of d = L - mean and d^2 (centred at the group's mean,
// so the sums of squares keep their digits).
struct LogHistogram {
  std::vector<double> n, s, q;
  explicit LogHistogram(double L_max) : n(bin_of(L_max) + 1), s(n.size()), q(n.size()) {}
  void add(double L, double mean) {
    const std::size_t b = std::min(bin_of(L), n.size() - 1);
    const double d = L - mean;
    n[b] += 1;
    s[b] += d;
    q[b] += d * d;
  }
};

// The sums of one side of a split; ss() its sum of squares about its own mean.
struct Side {
  double n = 0, s = 0, q = 0;
  double ss() const { return n > 0 ? q - s * s / n : 0; }
};

struct Split {
  std::size_t bin = 0; // the group: bins >= it
  Side group, rest;
  double between = 0;  // the share of the sum of squares between the two sides
  double total_ss = 0; // the sum of squares of L about its mean
};

// The split with the largest between-group share among those whose group holds
// kMinIntervals to kMaxFraction of the intervals (ties: the higher threshold).
Split best_split(const LogHistogram &h) {
  Side all;
  for (std::size_t b = 0; b < h.n.size(); ++b) {
    all.n += h.n[b];
    all.s += h.s[b];
    all.q += h.q[b];
  }
  Split best;
  best.total_ss = all.ss();
  if (best.total_ss <= 0)
    return best;
  Side g;
  for (std::size_t b = h.n.size(); b-- > 1;) {
    g.n += h.n[b];
    g.s += h.s[b];
    g.q += h.q[b];
    if (g.n > kMaxFraction * all.n)
      break;
    if (g.n < static_cast<double>(kMinIntervals) || h.n[b] == 0)
      continue;
    const Side r{all.n - g.n, all.s - g.s, all.q - g.q};
    // between = n_g (mean_g - mean)^2 + n_r (mean_r - mean)^2, the means as offsets
    const double between = (g.s * g.s / g.n + r.s * r.s / r.n) / best.total_ss;
    if (between > best.between) {
      best.bin = b;
      best.group = g;
      best.rest = r;
      best.between = between;
    }
  }
  return best;
}

} // namespace

void slow_group_stats(const PlaceTable &pt, const GroupTimes &gt, GroupResult &gr) {
  SlowGroup &sg = gr.slow;
  sg = SlowGroup{};
  if (gt.rows < 2 || gr.latency.var_ns2 <= 0)
    return;
  const double mean = gr.latency.mean_ns;
  LogHistogram h(gt.L_max);
  for_each_block(gt, [&](Eigen::Index, const Eigen::MatrixXd &, const Eigen::MatrixXd &T) {
    for (Eigen::Index i = 0; i < T.rows(); ++i)
      h.add(T(i, 0), mean);
  });
  const Split best = best_split(h);
  if (best.between < kMinBetween)
    return;
  sg.found = true;
  sg.threshold_ns = lower_edge(best.bin);
  sg.intervals = static_cast<std::uint64_t>(best.group.n);
  sg.mean_ns = mean + best.group.s / best.group.n;
  sg.rest_mean_ns = mean + best.rest.s / best.rest.n;
  sg.between = best.between;
  // Var(L) and the rest's variance on the same footing (population: / n)
  const double var_all = best.total_ss / (best.group.n + best.rest.n);
  sg.removed = var_all > 0 ? 1 - (best.rest.ss() / best.rest.n) / var_all : 0;
  TailExcess total;
  sg.places = excess_by_place(pt, gt, sg.threshold_ns, total);
}

} // namespace vprof::analyzer::detail
