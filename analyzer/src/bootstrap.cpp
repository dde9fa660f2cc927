// Bootstrap intervals of the top factors and places (Poisson weights, streaming).
#include "accumulators.hpp"
#include "stages.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <random>

namespace vprof::analyzer::detail {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// Poisson bootstrap (docs/statistics.md, "Bootstrap"): replicate b weighs interval i by
// w_bi ~ Poisson(1); its share of a term is Cov_w(x, y) / Var_w(L) from the weighted sums
// of 1, L, L^2, x, y and x y (centred at the full sample's means), filled in one pass for
// every replicate at once: memory replicates x (3 + columns + products), whatever the
// number of intervals.
void bootstrap_intervals(const GroupTimes &gt, const Terms &terms,
                         const std::vector<std::size_t> &order, const AnalyzeOptions &opt,
                         std::mt19937_64 &rng, GroupResult &gr, std::vector<std::string> &notes) {
  (void)notes; // the replicates are never reduced any more
  const Eigen::Index I = gt.rows;
  const int nci = std::min<int>(opt.ci_factors, static_cast<int>(order.size()));
  const int samples = opt.bootstrap_samples;
  if (samples <= 0 || nci <= 0 || I <= 1)
    return;
  // Z's columns: 1, L, L^2, the distinct columns x of the factors' terms, then the distinct
  // products x y (a variance term's x x), all centred at the full sample's means
  std::vector<Col> vars;
  std::vector<std::pair<Eigen::Index, Eigen::Index>> prods;
  struct Slots {
    Eigen::Index x, y, xy;
  };
  std::vector<Slots> slots;
  auto slot_of_var = [&](const Col &c) {
    for (std::size_t v = 0; v < vars.size(); ++v)
      if (vars[v].node == c.node && vars[v].body == c.body)
        return static_cast<Eigen::Index>(v);
    vars.push_back(c);
    return static_cast<Eigen::Index>(vars.size() - 1);
  };
  for (int r = 0; r < nci; ++r) {
    const auto &fc = terms.cols[order[r]];
    const Eigen::Index x = slot_of_var(fc.first),
                       y = fc.second.node >= 0 ? slot_of_var(fc.second) : x;
    const std::pair<Eigen::Index, Eigen::Index> xy{std::min(x, y), std::max(x, y)};
    auto it = std::find(prods.begin(), prods.end(), xy);
    if (it == prods.end())
      it = prods.insert(prods.end(), xy);
    slots.push_back({x, y, static_cast<Eigen::Index>(it - prods.begin())});
  }
  const Eigen::Index V = static_cast<Eigen::Index>(vars.size());
  const Eigen::Index q = 3 + V + static_cast<Eigen::Index>(prods.size());
  std::vector<double> var_mean;
  for (const auto &c : vars)
    var_mean.push_back(gt.cols.mean(variable_of(gt, c)));
  const double mean_L = gt.cols.ref_mean();
  ReplicateSums rs(samples, q);
  PoissonWeights weights(rng());
  MatrixXd Z, W;
  for_each_block(gt, [&](Eigen::Index, const MatrixXd &S, const MatrixXd &T) {
    const Eigen::Index n = S.rows();
    Z.resize(n, q);
    Z.col(0).setOnes();
    Z.col(1) = T.col(0).array() - mean_L;
    Z.col(2) = Z.col(1).array().square();
    for (Eigen::Index v = 0; v < V; ++v)
      Z.col(3 + v) = block_column(gt, vars[v], S, T).array() - var_mean[v];
    for (std::size_t k = 0; k < prods.size(); ++k)
      Z.col(3 + V + static_cast<Eigen::Index>(k)) =
          Z.col(3 + prods[k].first).cwiseProduct(Z.col(3 + prods[k].second));
    W.resize(samples, n);
    weights.fill(W);
    rs.add_rows(W, Z);
  });
  std::vector<std::vector<double>> shares(static_cast<std::size_t>(nci));
  for (int b = 0; b < samples; ++b) {
    const double w = rs.sums(b, 0);
    if (w <= 0)
      continue; // every weight 0 (a tiny group): no replicate
    const double mL = rs.sums(b, 1) / w, vL = rs.sums(b, 2) / w - mL * mL;
    for (int r = 0; r < nci; ++r) {
      const Slots &sl = slots[static_cast<std::size_t>(r)];
      const double mx = rs.sums(b, 3 + sl.x) / w, my = rs.sums(b, 3 + sl.y) / w;
      const double term = (rs.sums(b, 3 + V + sl.xy) / w - mx * my) *
                          (gr.factors[r].kind == Factor::Kind::Covariance ? 2 : 1);
      shares[static_cast<std::size_t>(r)].push_back(vL > 0 ? term / vL : 0);
    }
  }
  if (shares.front().empty())
    return;
  double alpha = (1 - opt.confidence) / 2;
  for (int r = 0; r < nci; ++r) {
    gr.factors[r].share_lo = percentile(shares[r], alpha);
    gr.factors[r].share_hi = percentile(shares[r], 1 - alpha);
    gr.factors[r].has_ci = true;
  }
}

} // namespace vprof::analyzer::detail
