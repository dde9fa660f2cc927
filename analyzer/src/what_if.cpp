// What-if: the variance and p99 of the latency with a factor held at its mean.
#include "order_statistics.hpp"
#include "stages.hpp"

#include <Eigen/Dense>

#include <algorithm>

namespace vprof::analyzer::detail {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// L' = L - x + mean(x) per interval (and - y + mean(y) for a covariance term), exact: its
// variance and p99. Up to kWhatIfDoubles doubles (256 MiB) the factors' L' vectors are held,
// as many factors a pass as fit; a group whose one vector would pass that (more than 33 M
// intervals) gets the streamed form instead, which holds no vector: L''s moments merged
// block by block and its p99 as exact order statistics found in passes (OrderStatistics,
// typically two), kStreamedFactors factors at a time (at most ~80 MiB of them). The cap,
// kWhatIfDoubles, is in stages.hpp.
constexpr int kStreamedFactors = 4;

namespace {

// One block's L' of factor `fc` (rows of S and T).
void block_after(const GroupTimes &gt, const std::pair<Col, Col> &fc, const MatrixXd &S,
                 const MatrixXd &T, Eigen::Ref<VectorXd> out) {
  out = T.col(0);
  out.array() += gt.cols.mean(variable_of(gt, fc.first)) - block_column(gt, fc.first, S, T).array();
  if (fc.second.node >= 0)
    out.array() +=
        gt.cols.mean(variable_of(gt, fc.second)) - block_column(gt, fc.second, S, T).array();
}

WhatIf what_if_row(const GroupResult &gr, const std::string &key, double var_after,
                   double p99_after) {
  WhatIf w;
  w.key = key;
  w.var_after_ns2 = var_after;
  w.p99_after_ns = p99_after;
  w.var_drop = gr.latency.var_ns2 > 0 ? 1 - var_after / gr.latency.var_ns2 : 0;
  w.p99_drop = gr.latency.p99_ns > 0 ? 1 - p99_after / gr.latency.p99_ns : 0;
  return w;
}

// The what-if of the factors order[r0 .. r0 + nb) holding their L' vectors.
void what_if_held(const GroupTimes &gt, const Terms &terms, const std::vector<std::size_t> &order,
                  int r0, int nb, GroupResult &gr) {
  std::vector<VectorXd> Lp(static_cast<std::size_t>(nb), VectorXd(gt.rows));
  for_each_block(gt, [&](Eigen::Index first, const MatrixXd &S, const MatrixXd &T) {
    for (int j = 0; j < nb; ++j)
      block_after(gt, terms.cols[order[r0 + j]], S, T,
                  Lp[static_cast<std::size_t>(j)].segment(first, S.rows()));
  });
  for (int j = 0; j < nb; ++j) {
    const LatencyStats ls = latency_stats(Lp[static_cast<std::size_t>(j)]);
    Lp[static_cast<std::size_t>(j)] = VectorXd(); // free before the next one's sort copy
    gr.whatifs.push_back(what_if_row(gr, gr.factors[r0 + j].key, ls.var_ns2, ls.p99_ns));
  }
}

// The same without the vectors: moments in the first pass, the p99's two order statistics
// in as many passes as they take.
void what_if_streamed(const GroupTimes &gt, const Terms &terms,
                      const std::vector<std::size_t> &order, int r0, int nb, GroupResult &gr) {
  const auto n = static_cast<std::uint64_t>(gt.rows);
  std::uint64_t lo, hi;
  double frac;
  percentile_ranks(n, 0.99, lo, hi, frac);
  const std::vector<std::uint64_t> ranks =
      hi == lo ? std::vector<std::uint64_t>{lo} : std::vector<std::uint64_t>{lo, hi};
  std::vector<OrderStatistics> os(static_cast<std::size_t>(nb), OrderStatistics(n, ranks));
  RefMoments mom(nb); // the factors' L' as its columns (its reference, L, unused)
  std::vector<bool> done(static_cast<std::size_t>(nb), false);
  MatrixXd X;
  for (bool first = true;; first = false) {
    for_each_block(gt, [&](Eigen::Index, const MatrixXd &S, const MatrixXd &T) {
      X.resize(S.rows(), nb);
      for (int j = 0; j < nb; ++j) {
        const auto k = static_cast<std::size_t>(j);
        if (done[k])
          continue;
        block_after(gt, terms.cols[order[r0 + j]], S, T, X.col(j));
        for (Eigen::Index i = 0; i < X.rows(); ++i)
          os[k].add(X(i, j));
      }
      if (first) // every factor is still pending in the first pass
        mom.add_rows(X, T.col(0));
    });
    bool all = true;
    for (std::size_t k = 0; k < os.size(); ++k)
      if (!done[k])
        all = (done[k] = os[k].end_pass()) && all;
    if (all)
      break;
  }
  for (int j = 0; j < nb; ++j) {
    const auto k = static_cast<std::size_t>(j);
    const double a = os[k].value(0), b = ranks.size() > 1 ? os[k].value(1) : a;
    gr.whatifs.push_back(what_if_row(gr, gr.factors[r0 + j].key, mom.var(j), a + frac * (b - a)));
  }
}

} // namespace

void what_if(const GroupTimes &gt, const Terms &terms, const std::vector<std::size_t> &order, int n,
             GroupResult &gr, Eigen::Index cap_doubles) {
  const Eigen::Index I = gt.rows;
  const int nw = std::min<int>(n, static_cast<int>(order.size()));
  if (I == 0 || nw <= 0)
    return;
  const bool streamed = I > cap_doubles;
  const int batch = streamed ? kStreamedFactors
                             : static_cast<int>(std::clamp<Eigen::Index>(
                                   cap_doubles / I, 1, static_cast<Eigen::Index>(nw)));
  for (int r0 = 0; r0 < nw; r0 += batch) {
    const int nb = std::min(batch, nw - r0);
    if (streamed)
      what_if_streamed(gt, terms, order, r0, nb, gr);
    else
      what_if_held(gt, terms, order, r0, nb, gr);
  }
}

} // namespace vprof::analyzer::detail
