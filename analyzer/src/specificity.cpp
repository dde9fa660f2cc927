// The observed ranking (docs/statistics.md, "Specificity and score"): every node's level
// below the interval's root in the calling contexts the trace saw, and the nested rule that
// orders factors and places by it — depth decides only along one chain (a term and the
// terms whose time lies inside it), unrelated terms compare by what they carry. VProfiler's
// static score (heights from the call graph) stays in heights_and_specificity.
#include "stages.hpp"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace vprof::analyzer::detail {

void observed_levels(const AnalysisResult &res, const std::vector<char> &in_frame, NodeFacts &nf) {
  const std::size_t N = res.nodes.size();
  nf.level.assign(N, 0);
  nf.observed.assign(N, 0.0);
  for (std::size_t i = 1; i < N; ++i) {
    const Node &n = res.nodes[i];
    const auto p = static_cast<std::size_t>(n.parent);
    if (in_frame[i]) // a kernel wait, an outside call: time of the frame that makes it
      nf.level[i] = nf.level[p];
    else if (n.kind == Node::Kind::Untracked) // names no code: at its wait's (or the root's)
      nf.level[i] = nf.wait_anc[i] < 0 ? 0 : nf.level[static_cast<std::size_t>(nf.wait_anc[i])];
    else
      nf.level[i] = nf.level[p] + 1;
    nf.observed[i] = static_cast<double>(nf.level[i]) * nf.level[i];
  }
}

void subtree_ranges(NodeFacts &nf) {
  const std::size_t N = nf.kids.size();
  nf.tin.assign(N, 0);
  nf.tout.assign(N, 0);
  if (N == 0)
    return;
  // iterative preorder: tin on the way down, tout (exclusive) once every child is done
  std::vector<std::pair<int, std::size_t>> stack{{0, 0}};
  int clock = 0;
  nf.tin[0] = clock++;
  while (!stack.empty()) {
    auto &[node, next] = stack.back();
    const auto &ch = nf.kids[static_cast<std::size_t>(node)];
    if (next < ch.size()) {
      const int c = ch[next++];
      nf.tin[static_cast<std::size_t>(c)] = clock++;
      stack.push_back({c, 0});
    } else {
      nf.tout[static_cast<std::size_t>(node)] = clock;
      stack.pop_back();
    }
  }
}

std::vector<double> nested_keys(const NodeFacts &nf, const std::vector<NestedItem> &items) {
  const std::size_t n = items.size();
  std::vector<double> keys(n);
  for (std::size_t i = 0; i < n; ++i)
    keys[i] = items[i].rank_value;
  // the terms that can explain an ancestor (something positive above the noise), by the
  // preorder position of their node: a subtree is one range of them
  std::vector<std::size_t> by_tin;
  for (std::size_t i = 0; i < n; ++i)
    if (items[i].node >= 0 && items[i].value > 0 && !items[i].noise)
      by_tin.push_back(i);
  auto tin_of = [&](std::size_t i) { return nf.tin[static_cast<std::size_t>(items[i].node)]; };
  std::sort(by_tin.begin(), by_tin.end(), [&](std::size_t a, std::size_t b) {
    return tin_of(a) != tin_of(b) ? tin_of(a) < tin_of(b) : a < b;
  });
  std::vector<int> tins(by_tin.size());
  for (std::size_t k = 0; k < by_tin.size(); ++k)
    tins[k] = tin_of(by_tin[k]);
  // deeper terms first, so a nested term's key is final when its ancestors look at it
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return items[a].level > items[b].level; });
  for (std::size_t i : order) {
    const NestedItem &it = items[i];
    if (!it.contains || it.node < 0 || it.value <= 0 || it.noise)
      continue;
    const auto node = static_cast<std::size_t>(it.node);
    auto lo = std::lower_bound(tins.begin(), tins.end(), nf.tin[node]);
    auto hi = std::lower_bound(tins.begin(), tins.end(), nf.tout[node]);
    std::ptrdiff_t best = -1;
    auto consider = [&](std::size_t j) {
      const auto b = static_cast<std::size_t>(best);
      if (best < 0 || keys[j] > keys[b] || (keys[j] == keys[b] && items[j].level > items[b].level))
        best = static_cast<std::ptrdiff_t>(j);
    };
    // per group: the outermost members' total, where the last counted one ends, the member
    // of largest key
    struct Group {
      double total = 0;
      int end = -1;
      std::size_t top = 0;
    };
    std::unordered_map<int, Group> groups;
    for (auto k = lo - tins.begin(); k < hi - tins.begin(); ++k) {
      const std::size_t j = by_tin[static_cast<std::size_t>(k)];
      if (j == i || items[j].level <= it.level)
        continue;
      if (items[j].group >= 0) {
        auto [g, fresh] = groups.try_emplace(items[j].group, Group{0, -1, j});
        if (tin_of(j) >= g->second.end) { // not inside a member already counted
          g->second.total += items[j].value;
          g->second.end = nf.tout[static_cast<std::size_t>(items[j].node)];
        }
        if (keys[j] > keys[g->second.top])
          g->second.top = j;
      }
      if (items[j].value >= kNestedShare * it.value)
        consider(j);
    }
    for (const auto &[id, g] : groups)
      if (g.total >= kNestedShare * it.value)
        consider(g.top);
    if (best >= 0) // explained: it ranks right behind the term that explains it
      keys[i] = std::min(it.rank_value, keys[static_cast<std::size_t>(best)]);
  }
  return keys;
}

} // namespace vprof::analyzer::detail
