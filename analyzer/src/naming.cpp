// Naming the tree's nodes and their heights and specificity (static and observed).
#include "stages.hpp"

#include <Eigen/Dense>

#include <algorithm>

namespace vprof::analyzer::detail {

using Eigen::MatrixXd;
using Eigen::VectorXd;

void name_nodes(const EngineOutput &eo, const DbFacts &facts, AnalysisResult &res) {
  const std::size_t N = eo.nodes.size();
  res.nodes.resize(N);
  for (std::size_t i = 0; i < N; ++i) {
    const auto &d = eo.nodes[i];
    Node &n = res.nodes[i];
    n.id = static_cast<int>(i);
    if (i == 0) {
      n.kind = Node::Kind::Root;
      n.name = "(interval)";
      n.path = "/";
      continue;
    }
    n.parent = static_cast<int>(d.parent);
    const Node &p = res.nodes[d.parent];
    n.depth = p.depth + 1;
    std::string prefix = p.path == "/" ? "" : p.path;
    if (d.label == kLabelUntracked) {
      n.kind = Node::Kind::Untracked;
      n.name = "(untracked)";
      n.path = prefix + "/untracked";
    } else if (d.label >= kLabelWakerBase) {
      // what woke a kernel wait when no traced thread did: a wait-kind node below it
      const auto p = static_cast<unsigned>(d.label - kLabelWakerBase);
      n.kind = Node::Kind::Wait;
      n.wait = pseudo_waker_tag(p);
      n.name = pseudo_waker_name(p);
      n.path = prefix + "/wait:" + n.wait;
      n.height = 0;
    } else if (d.label >= kLabelWaitBase) {
      n.kind = Node::Kind::Wait;
      n.wait = wait_kind_name(static_cast<unsigned>(d.label - kLabelWaitBase));
      n.name = d.label == kLabelWaitBase + kWakeup ? "[wake-up delay]" : "[wait:" + n.wait + "]";
      n.path = prefix + "/wait:" + n.wait;
      n.height = 0;
    } else {
      n.kind = Node::Kind::Site;
      n.site = static_cast<std::int64_t>(d.label);
      n.path = prefix + "/s" + std::to_string(n.site);
      auto it = facts.sites.find(n.site);
      if (n.site == VPROF_SITE_PROFILER) {
        n.name = kProfilerName; // the runtime making room in its stream: no program code
        n.height = 0;
      } else if (it != facts.sites.end() && !it->second.kind.empty()) {
        n.name = it->second.name;
        n.function = it->second.function;
        n.height = it->second.height;
      } else {
        n.name = "site " + std::to_string(n.site);
      }
    }
  }
}

NodeFacts heights_and_specificity(const DbFacts &facts, AnalysisResult &res) {
  const std::size_t N = res.nodes.size();
  NodeFacts nf;
  int max_depth = 0;
  for (const auto &n : res.nodes)
    max_depth = std::max(max_depth, n.depth);
  bool use_db_heights = facts.have && facts.H >= 0;
  res.heights_from_db = use_db_heights;
  // Waker contexts: the nearest wait ancestor of every node and the waker's top frame
  // (the child of that wait node on the path). Node ids grow from parents to children.
  nf.wait_anc.assign(N, -1);
  nf.top_of.assign(N, -1);
  for (std::size_t i = 1; i < N; ++i) {
    int p = res.nodes[i].parent;
    bool pw = res.nodes[p].kind == Node::Kind::Wait;
    nf.wait_anc[i] = pw ? p : nf.wait_anc[p];
    nf.top_of[i] = pw ? static_cast<int>(i) : nf.top_of[p];
  }
  // H, the root's height: the workspace's value, raised to the height of every function
  // on the interval's own path (outside waker contexts), so that no node there is "above"
  // the root (an RAII annotation can mark the annotation class instead of the user's
  // function, which leaves the workspace value too low).
  int H = max_depth;
  if (use_db_heights) {
    H = facts.H;
    for (std::size_t i = 1; i < N; ++i)
      if (res.nodes[i].kind == Node::Kind::Site && nf.wait_anc[i] < 0)
        H = std::max(H, res.nodes[i].height);
  }
  res.H = H;
  // h(x): call-graph height of the function behind x (an unknown one: its parent's - 1);
  // a wait node sits one level below its enclosing node; without a call graph, H - depth.
  std::vector<int> hraw(N, 0);
  for (std::size_t i = 1; i < N; ++i) {
    const Node &n = res.nodes[i];
    int ph = n.parent == 0 ? H : hraw[n.parent];
    if (!use_db_heights)
      hraw[i] = std::max(0, H - n.depth);
    else if (n.kind == Node::Kind::Site && n.height >= 0)
      hraw[i] = n.height;
    else
      hraw[i] = std::max(0, ph - 1);
  }
  if (N > 0)
    hraw[0] = H;
  // specificity per node (docs/statistics.md): the squared distance from the root in
  // call-graph levels, (H - h)^2 on the interval's own path; across a wake-up edge the
  // distance continues into the waker's call tree: dist(x) = dist(w) + (Hw - h(x)), with
  // w the wait node and Hw - 1 the height of the waker's top frame, so the waker's frames
  // are more specific than the wait they explain, deeper ones more so.
  std::vector<double> dist(N, 0.0);
  nf.spec.assign(N, 0.0);
  // A kernel wait is part of the time of the function (or the outside call) that waited,
  // and so are its pseudo-waker and wake-up delay below it: as specific as that frame, not a
  // level below it, and not "waker's work" — so the frame's whole time, not a slice of it
  // that names no code ("[io] block device"), ranks as the answer. A traced waker's frames
  // below the wait keep the waker rule.
  std::vector<char> of_frame(N, 0);
  for (std::size_t i = 1; i < N; ++i) {
    const Node &n = res.nodes[i];
    int w = nf.wait_anc[i];
    of_frame[i] = n.kind == Node::Kind::Wait && (is_kernel_wait_name(n.wait) || of_frame[n.parent]);
    if (of_frame[i]) {
      dist[i] = dist[n.parent];
    } else if (n.kind == Node::Kind::Untracked) {
      dist[i] = w < 0 ? 0.0 : dist[w];
    } else if (w < 0) {
      dist[i] = H - std::clamp(hraw[i], 0, H);
    } else {
      int hw = std::max(0, hraw[nf.top_of[i]]) + 1;
      dist[i] = dist[w] + (hw - std::clamp(hraw[i], 0, hw - 1));
    }
    nf.spec[i] = dist[i] * dist[i];
  }
  nf.kids.assign(N, {});
  for (std::size_t i = 1; i < N; ++i)
    nf.kids[res.nodes[i].parent].push_back(static_cast<int>(i));
  // the observed ranking's levels (the default; the static rule above is VProfiler's): a
  // kernel wait and a call of an outside function are part of the frame that makes them, a
  // function's body below its call is that function (one level)
  std::vector<char> in_frame = of_frame;
  for (std::size_t i = 1; i < N; ++i) {
    const Node &n = res.nodes[i];
    auto it = n.kind == Node::Kind::Site ? facts.sites.find(n.site) : facts.sites.end();
    if (it == facts.sites.end())
      continue;
    const Node &p = res.nodes[static_cast<std::size_t>(n.parent)];
    const bool body_of_call = it->second.kind == "body" && p.kind == Node::Kind::Site &&
                              n.function != 0 && p.function == n.function;
    if (it->second.external || body_of_call)
      in_frame[i] = 1;
  }
  observed_levels(res, in_frame, nf);
  subtree_ranges(nf);
  return nf;
}

} // namespace vprof::analyzer::detail
