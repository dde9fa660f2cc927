// What-if: the variance and p99 of the latency with a factor held at its mean.
#include "stages.hpp"

#include <Eigen/Dense>

#include <algorithm>

namespace vprof::analyzer::detail {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// L' = L - x + mean(x) per interval (and - y + mean(y) for a covariance term), exact: its
// variance and p99 from the vector itself. One vector of n doubles per factor, at most
// kWhatIfDoubles of them per pass over the intervals (10 factors of 10 M intervals: 4 passes).
constexpr Eigen::Index kWhatIfDoubles = Eigen::Index{1} << 25; // 256 MiB

void what_if(const GroupTimes &gt, const Terms &terms, const std::vector<std::size_t> &order, int n,
             GroupResult &gr) {
  const double varL = gr.latency.var_ns2;
  const Eigen::Index I = gt.rows;
  const int nw = std::min<int>(n, static_cast<int>(order.size()));
  if (I == 0 || nw <= 0)
    return;
  const int batch = static_cast<int>(
      std::clamp<Eigen::Index>(kWhatIfDoubles / I, 1, static_cast<Eigen::Index>(nw)));
  for (int r0 = 0; r0 < nw; r0 += batch) {
    const int nb = std::min(batch, nw - r0);
    std::vector<VectorXd> Lp(static_cast<std::size_t>(nb), VectorXd(I));
    for_each_block(gt, [&](Eigen::Index first, const MatrixXd &S, const MatrixXd &T) {
      for (int j = 0; j < nb; ++j) {
        const auto &fc = terms.cols[order[r0 + j]];
        auto seg = Lp[static_cast<std::size_t>(j)].segment(first, S.rows());
        seg = T.col(0);
        seg.array() +=
            gt.cols.mean(variable_of(gt, fc.first)) - block_column(gt, fc.first, S, T).array();
        if (fc.second.node >= 0)
          seg.array() +=
              gt.cols.mean(variable_of(gt, fc.second)) - block_column(gt, fc.second, S, T).array();
      }
    });
    for (int j = 0; j < nb; ++j) {
      const LatencyStats ls = latency_stats(Lp[static_cast<std::size_t>(j)]);
      Lp[static_cast<std::size_t>(j)] = VectorXd(); // free before the next one's sort copy
      WhatIf w;
      w.key = gr.factors[r0 + j].key;
      w.var_after_ns2 = ls.var_ns2;
      w.p99_after_ns = ls.p99_ns;
      w.var_drop = varL > 0 ? 1 - ls.var_ns2 / varL : 0;
      w.p99_drop = gr.latency.p99_ns > 0 ? 1 - ls.p99_ns / gr.latency.p99_ns : 0;
      gr.whatifs.push_back(w);
    }
  }
}

} // namespace vprof::analyzer::detail
