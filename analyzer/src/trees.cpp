// Variance trees per group: the covariance of each node's [children..., body]
// (docs/statistics.md).
#include "stages.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>

namespace vprof::analyzer::detail {

using Eigen::MatrixXd;
using Eigen::VectorXd;

Terms variance_trees(const AnalysisResult &res, const DbFacts &facts, const NodeFacts &nf,
                     const PlaceTable &pt, const GroupTimes &gt, const AnalyzeOptions &opt,
                     GroupResult &gr) {
  const Eigen::Index C = static_cast<Eigen::Index>(gt.present.size());
  const double varL = gr.latency.var_ns2;
  auto spec_of = [&](int node, bool body) { return body && node == 0 ? 0.0 : nf.spec[node]; };
  auto is_leaf = [&](int node, bool body) {
    const Node &n = res.nodes[node];
    if (body)
      return node != 0;
    if (!nf.kids[node].empty())
      return false;
    if (n.kind == Node::Kind::Untracked || n.kind == Node::Kind::Wait)
      return true;
    if (n.kind == Node::Kind::Site) {
      auto it = facts.sites.find(n.site);
      if (it == facts.sites.end() || it->second.kind.empty())
        return true;
      // a body: its function's callees can be instrumented; a call site: its callee or
      // call targets can (not an external function's)
      return !it->second.has_callees;
    }
    return true;
  };
  Terms terms;
  auto &factors = terms.factors;
  auto &factor_cols = terms.cols;
  for (Eigen::Index c = 0; c < C; ++c) {
    int nd = gt.present[c];
    NodeStats ns;
    ns.node = nd;
    // T_n is variable c of the columns' moments, B_n variable C + c
    ns.mean_ns = gt.cols.mean(c);
    ns.var_ns2 = gt.cols.var(c);
    ns.body_mean_ns = gt.cols.mean(C + c);
    ns.body_var_ns2 = gt.cols.var(C + c);
    ns.share = varL > 0 ? ns.var_ns2 / varL : 0;
    ns.contribution = varL > 0 ? gt.cols.cov_ref(c) / varL : 0;
    ns.body_contribution = varL > 0 ? gt.cols.cov_ref(C + c) / varL : 0;
    const auto &ch = gt.kids[nd];
    if (!ch.empty()) {
      ns.expanded = true;
      const Eigen::Index k = static_cast<Eigen::Index>(ch.size());
      std::vector<Col> cols;
      for (Eigen::Index j = 0; j < k; ++j)
        cols.push_back({ch[j], false});
      cols.push_back({nd, true});
      // Cov of [T of the children..., B_n], from the node's cross-products
      const MatrixXd Cov = gt.trees.at(nd).cov();
      double total = Cov.sum(), scale = std::max(std::abs(ns.var_ns2), Cov.cwiseAbs().sum());
      ns.residual = scale > 0 ? std::abs(total - ns.var_ns2) / scale : 0;
      gr.max_residual = std::max(gr.max_residual, ns.residual);
      auto key_of = [&](const Col &cc) {
        return res.nodes[cc.node].path + (cc.body ? "#body" : "");
      };
      auto name_of = [&](const Col &cc) {
        return cc.body ? "body(" + res.nodes[cc.node].name + ")" : res.nodes[cc.node].name;
      };
      // the waker's work: say whose wait it fills (the same function appears on the
      // interval's own path too)
      auto context_of = [&](int node) {
        return pt.via_of[node] >= 0 ? "  (waker of " + pt.name[pt.via_of[node]] + ")"
                                    : std::string();
      };
      // A call site whose one child is the callee's body: Var of the body is the call's
      // variance less the probe gap between them, the same factor twice; the call site's
      // term (one level up, with its position) stands for both.
      const bool call_with_body = k == 1 && res.nodes[nd].kind == Node::Kind::Site &&
                                  res.nodes[ch[0]].kind == Node::Kind::Site &&
                                  res.nodes[nd].function != 0 &&
                                  res.nodes[ch[0]].function == res.nodes[nd].function &&
                                  facts.sites.count(res.nodes[ch[0]].site) &&
                                  facts.sites.at(res.nodes[ch[0]].site).kind == "body";
      // the part of each member's variance that reaches the node: min(Var(X_i),
      // Cov(X_i, T_n)) — what the rest of the node cancels (a negative covariance with
      // it) is taken off; a positive one stays a covariance term of its own
      VectorXd reaching(k + 1);
      for (Eigen::Index i = 0; i <= k; ++i)
        reaching[i] = std::min(Cov(i, i), Cov.row(i).sum());
      for (Eigen::Index i = 0; i <= k; ++i)
        for (Eigen::Index j = i; j <= k; ++j) {
          double term = i == j ? Cov(i, i) : 2 * Cov(i, j);
          if (term == 0 || (call_with_body && i == 0 && j == 0))
            continue;
          Factor f;
          f.parent = nd;
          f.a = cols[i].node;
          f.a_body = cols[i].body;
          if (i == j) {
            f.kind = Factor::Kind::Variance;
            f.key = "var:" + key_of(cols[i]);
            f.name = "Var " + name_of(cols[i]) + context_of(f.a);
            f.specificity = spec_of(f.a, f.a_body);
            f.leaf = is_leaf(f.a, f.a_body);
          } else {
            f.kind = Factor::Kind::Covariance;
            f.b = cols[j].node;
            f.b_body = cols[j].body;
            f.key = "cov:" + key_of(cols[i]) + "|" + key_of(cols[j]);
            f.name = "Cov " + name_of(cols[i]) + ", " + name_of(cols[j]) + context_of(f.a);
            f.specificity = std::min(spec_of(f.a, f.a_body), spec_of(f.b, f.b_body));
            f.leaf = is_leaf(f.a, f.a_body) && is_leaf(f.b, f.b_body);
          }
          f.term_ns2 = term;
          f.share = varL > 0 ? term / varL : 0;
          f.share_lo = f.share_hi = f.share;
          f.net_share = i != j ? f.share : varL > 0 ? reaching[i] / varL : 0;
          f.vprofiler_score = f.specificity * f.share;
          f.score = opt.ranking == Ranking::Net ? f.specificity * f.net_share : f.vprofiler_score;
          f.noise = std::abs(f.share) < opt.noise_share;
          factors.push_back(f);
          factor_cols.push_back({cols[i], i == j ? Col{-1, false} : cols[j]});
        }
    }
    gr.nodes.push_back(ns);
  }
  return terms;
}

} // namespace vprof::analyzer::detail
