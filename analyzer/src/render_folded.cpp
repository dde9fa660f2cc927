// Folded stacks of a variance tree (docs/analyzer.md, "Pictures"): one "a;b;c value" line
// per node, valued by the node's body contribution Cov(B_n, L), for flame-graph tools.
#include "vprof/analyzer.hpp"

#include <cmath>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

namespace vprof::analyzer {
namespace {

// A frame name as folded-stack readers split it: ';' separates frames and the line ends
// at the last space-separated field, so ';' and line breaks are replaced.
std::string frame_name(const std::string &name) {
  std::string out = name;
  for (char &c : out)
    if (c == ';')
      c = ':';
    else if (c == '\n' || c == '\r')
      c = ' ';
  return out;
}

// "root;...;node" for a node, memoised: the tree is shallow, each path is built once.
class FramePaths {
public:
  explicit FramePaths(const AnalysisResult &res) : res_(res) {}
  const std::string &of(int node) {
    auto it = paths_.find(node);
    if (it != paths_.end())
      return it->second;
    const Node &n = res_.nodes[static_cast<std::size_t>(node)];
    std::string p = frame_name(n.name);
    if (n.parent >= 0)
      p = of(n.parent) + ";" + p;
    return paths_.emplace(node, std::move(p)).first->second;
  }

private:
  const AnalysisResult &res_;
  std::unordered_map<int, std::string> paths_;
};

} // namespace

FoldedStacks render_folded(const AnalysisResult &res, const GroupResult &g) {
  FoldedStacks out;
  const double varL = g.latency.var_ns2;
  FramePaths path(res);
  for (const auto &ns : g.nodes) {
    double value = std::round(ns.body_contribution * varL);
    if (value == 0)
      continue;
    std::string &dst = value > 0 ? out.positive : out.negative;
    (value > 0 ? out.positive_ns2 : out.negative_ns2) += std::abs(value);
    char num[32];
    std::snprintf(num, sizeof num, "%.0f", std::abs(value));
    dst += path.of(ns.node) + " " + num + "\n";
  }
  return out;
}

} // namespace vprof::analyzer
