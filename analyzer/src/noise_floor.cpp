// The noise floor: terms that the bootstrap cannot tell from zero move behind the others.
#include "stages.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace vprof::analyzer::detail {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// Where the bootstrap intervals of the top factors are wider than noise_share, a term
// smaller than their median half-width cannot be told from zero; terms and places below it
// move behind every larger one (stable: order kept within). At most 5 %: with a heavy tail
// (LevelDB's fsyncs) the intervals are wide for every term, and a place with a third of
// Var(L) is no noise.
void apply_noise_floor(GroupResult &gr, std::vector<std::size_t> &order, double noise_share) {
  constexpr double kMaxNoiseFloor = 0.05;
  gr.noise_floor = noise_share;
  std::vector<double> half;
  for (const auto &f : gr.factors)
    if (f.has_ci)
      half.push_back((f.share_hi - f.share_lo) / 2);
  if (!half.empty()) {
    std::nth_element(half.begin(), half.begin() + static_cast<std::ptrdiff_t>(half.size() / 2),
                     half.end());
    gr.noise_floor = std::max(gr.noise_floor, std::min(half[half.size() / 2], kMaxNoiseFloor));
  }
  if (gr.noise_floor <= noise_share)
    return;
  std::vector<std::size_t> perm(gr.factors.size());
  std::iota(perm.begin(), perm.end(), 0);
  for (auto &f : gr.factors)
    f.noise = std::abs(f.share) < gr.noise_floor;
  std::stable_sort(perm.begin(), perm.end(), [&](std::size_t x, std::size_t y) {
    const Factor &a = gr.factors[x], &b = gr.factors[y];
    return a.noise != b.noise ? b.noise : a.score > b.score;
  });
  std::vector<Factor> fs;
  std::vector<std::size_t> ord;
  for (auto r : perm) {
    fs.push_back(std::move(gr.factors[r]));
    ord.push_back(order[r]);
  }
  gr.factors = std::move(fs);
  std::copy(ord.begin(), ord.end(), order.begin());
  for (auto &pl : gr.places)
    pl.noise = std::max(std::abs(pl.share), std::abs(pl.contribution)) < gr.noise_floor;
  std::stable_sort(gr.places.begin(), gr.places.end(), place_before);
}

} // namespace vprof::analyzer::detail
