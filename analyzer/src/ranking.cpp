// Ranking the factors: the observed rule or VProfiler's (docs/statistics.md, "Specificity
// and score").
#include "stages.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

namespace vprof::analyzer::detail {

using Eigen::MatrixXd;
using Eigen::VectorXd;

namespace {

// A factor as the nested rule sees it: a variance of T_a contains the terms of a's subtree;
// a body is half a level below its node and contains nothing, except the root's (the time
// outside every probed function, which stands for the code above the roots: an ancestor of
// everything, as is (untracked), which names no code, of its frame's subtree); a covariance
// sits at its sides' level in their parent and contains nothing.
// `spanning`: per node, a frame that spans the interval (the interval itself: at the root's
// level, containing all below it, like the root); `worth`: per node, the contribution of its
// function's place (0: none known).
NestedItem nested_item(const AnalysisResult &res, const NodeFacts &nf, const Factor &f,
                       const std::vector<char> &spanning, const std::vector<double> &worth,
                       const std::vector<int> &group) {
  auto level_of = [&](int node, bool body) {
    const auto nd = static_cast<std::size_t>(node);
    return node == 0 || spanning[nd] ? 0.0 : nf.level[nd] + (body ? 0.5 : 0.0);
  };
  NestedItem it;
  it.value = it.rank_value = f.net_share;
  it.noise = f.noise;
  if (f.kind == Factor::Kind::Covariance) {
    it.node = f.parent;
    it.level = std::min(level_of(f.a, f.a_body), level_of(f.b, f.b_body));
    return it;
  }
  const Node &n = res.nodes[static_cast<std::size_t>(f.a)];
  if (n.kind == Node::Kind::Untracked) {
    it.node = n.parent;
    it.level = nf.level[static_cast<std::size_t>(f.a)];
    it.contains = true;
    return it;
  }
  const auto a = static_cast<std::size_t>(f.a);
  it.node = f.a;
  it.level = level_of(f.a, f.a_body);
  it.contains = !f.a_body || f.a == 0 || spanning[a];
  if (!f.a_body)
    it.group = group[a];
  if (spanning[a] && !f.a_body) // the interval's own variance names nothing
    it.rank_value = 0;
  else if (f.a != 0)
    it.rank_value = std::max(it.rank_value, worth[a]);
  return it;
}

// A function's place contribution holds its covariances with its siblings. Where such a
// covariance carries more of Var(L) than the function's own variance (two functions slow
// together: a shared cause), that covariance is a factor of its own and the story; the
// function's worth keeps only its side's half of it out, so its variance term does not
// outrank the covariance with the covariance's own weight (the covary program).
void discount_covarying_pairs(const std::vector<Factor> &factors, std::vector<double> &worth) {
  std::vector<double> var_share(worth.size(), 0.0);
  for (const auto &f : factors)
    if (f.kind == Factor::Kind::Variance && !f.a_body)
      var_share[static_cast<std::size_t>(f.a)] = f.share;
  for (const auto &f : factors) {
    if (f.kind != Factor::Kind::Covariance || f.a_body || f.b_body || f.b < 0)
      continue;
    for (const int side : {f.a, f.b}) {
      const auto s = static_cast<std::size_t>(side);
      if (side > 0 && worth[s] > 0 && f.share > var_share[s])
        worth[s] = std::max(var_share[s], worth[s] - f.share / 2);
    }
  }
}

} // namespace

std::vector<std::size_t> rank_factors(const AnalysisResult &res, const NodeFacts &nf,
                                      std::vector<Factor> &factors, std::size_t max_factors,
                                      const PlaceTable *pt, const GroupResult *gr) {
  // the observed ranking: observed specificity, score = the nested rule's key over net shares
  std::vector<double> level(factors.size(), 0);
  if (res.ranking == Ranking::Net) {
    const std::size_t N = res.nodes.size();
    std::vector<char> spanning(N, 0);
    std::vector<double> worth(N, 0.0);
    std::vector<int> group(N, -1); // a function's place, for its nodes' variance terms
    if (pt)
      for (std::size_t i = 1; i < N; ++i) {
        const int p = pt->place_of[i];
        if (p >= 0 && res.nodes[i].kind == Node::Kind::Site &&
            pt->kind[static_cast<std::size_t>(p)] == Place::Kind::Function)
          group[i] = p;
      }
    if (gr) {
      // the frames open for the whole interval, from the root down (the annotated function
      // whose body the interval begins in, and the frames above it)
      std::vector<char> open(N, 0);
      for (const auto &ns : gr->nodes)
        open[static_cast<std::size_t>(ns.node)] =
            gr->latency.mean_ns > 0 && ns.mean_ns >= kSpanningFrame * gr->latency.mean_ns;
      for (std::size_t i = 1; i < N; ++i) {
        const Node &n = res.nodes[i];
        const auto p = static_cast<std::size_t>(n.parent);
        spanning[i] = open[i] && n.kind == Node::Kind::Site && (p == 0 || spanning[p]);
      }
    }
    if (gr && pt) {
      std::unordered_map<std::string, double> contribution;
      for (const auto &pl : gr->places)
        contribution[pl.key] = pl.contribution;
      for (std::size_t i = 1; i < N; ++i) {
        const int p = pt->place_of[i];
        if (p < 0 || res.nodes[i].kind != Node::Kind::Site)
          continue;
        auto it = contribution.find(pt->key[static_cast<std::size_t>(p)]);
        if (it != contribution.end())
          worth[i] = it->second;
      }
      discount_covarying_pairs(factors, worth);
    }
    std::vector<NestedItem> items;
    for (const auto &f : factors)
      items.push_back(nested_item(res, nf, f, spanning, worth, group));
    const std::vector<double> keys = nested_keys(nf, items);
    auto spec_of = [&](int node, bool body) {
      return body && node == 0 ? 0.0 : nf.observed[static_cast<std::size_t>(node)];
    };
    for (std::size_t i = 0; i < factors.size(); ++i) {
      Factor &f = factors[i];
      f.specificity = f.b < 0 ? spec_of(f.a, f.a_body)
                              : std::min(spec_of(f.a, f.a_body), spec_of(f.b, f.b_body));
      f.score = keys[i];
      level[i] = items[i].level;
    }
  } else {
    for (std::size_t i = 0; i < factors.size(); ++i) {
      const Factor &f = factors[i];
      level[i] = std::max(res.nodes[f.a].depth, f.b >= 0 ? res.nodes[f.b].depth : 0);
    }
  }
  std::vector<std::size_t> order(factors.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    const Factor &a = factors[x], &b = factors[y];
    if (a.noise != b.noise)
      return b.noise;
    if (a.score != b.score)
      return a.score > b.score;
    // equal scores: the deeper (more specific in context) term first
    if (level[x] != level[y])
      return level[x] > level[y];
    if (std::abs(a.share) != std::abs(b.share))
      return std::abs(a.share) > std::abs(b.share);
    return a.key < b.key;
  });
  if (order.size() > max_factors)
    order.resize(max_factors);
  return order;
}

} // namespace vprof::analyzer::detail
