// Per group: the places' and the waits' statistics and the places' ranking.
#include "accumulators.hpp"
#include "stages.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

namespace vprof::analyzer::detail {

using Eigen::MatrixXd;
using Eigen::VectorXd;

bool place_before(const Place &a, const Place &b) {
  if (a.noise != b.noise)
    return b.noise;
  if (a.wakeup_delay != b.wakeup_delay) // the scheduler's time follows the code's
    return b.wakeup_delay;
  return a.score > b.score;
}

// X_p = the self times of p's nodes (a leaf's self time is its whole time). The root's
// body is the place "outside probed functions" when some interval of the group spent time
// there; its specificity is kOutsideSpecificity (the root's own is 0).
void place_stats(const NodeFacts &nf, const PlaceTable &pt, const GroupTimes &gt,
                 const AnalyzeOptions &opt, GroupResult &gr) {
  const Eigen::Index C = static_cast<Eigen::Index>(gt.present.size());
  const double varL = gr.latency.var_ns2;
  std::vector<int> gplace(pt.key.size(), -1), plist;
  // column 0 is the root; its body joins when it ever held time (times are never negative:
  // its mean is above 0)
  const Eigen::Index first = C > 0 && gt.cols.count() > 0 && gt.cols.mean(C) > 0 ? 0 : 1;
  auto spec_of = [&](int node) { return node == 0 ? kOutsideSpecificity : nf.spec[node]; };
  for (Eigen::Index c = first; c < C; ++c) {
    int p = pt.place_of[gt.present[c]];
    if (p >= 0 && gplace[p] < 0) {
      gplace[p] = static_cast<int>(plist.size());
      plist.push_back(p);
    }
  }
  const Eigen::Index P = static_cast<Eigen::Index>(plist.size());
  std::vector<int> contexts(plist.size(), 0);
  // the same split by the way the place reaches the critical path (own path or one
  // wait's waker): its contributions and the specificity of each way
  std::map<std::pair<int, int>, int> route_col;
  std::vector<std::pair<int, int>> routes;
  std::vector<double> route_spec;
  for (Eigen::Index c = first; c < C; ++c) {
    int nd = gt.present[c];
    int p = pt.place_of[nd];
    if (p < 0)
      continue;
    ++contexts[gplace[p]];
    auto [it, fresh] =
        route_col.try_emplace({gplace[p], pt.via_of[nd]}, static_cast<int>(routes.size()));
    if (fresh) {
      routes.push_back({gplace[p], pt.via_of[nd]});
      route_spec.push_back(spec_of(nd));
    }
    route_spec[it->second] = std::min(route_spec[it->second], spec_of(nd));
  }
  // one pass: each place's time X_p (variable q) and each route's R_r (variable P + r), the
  // sums of their nodes' self times, against L
  const Eigen::Index NR = static_cast<Eigen::Index>(routes.size());
  std::vector<std::pair<Eigen::Index, Eigen::Index>> vars_of(static_cast<std::size_t>(C), {-1, -1});
  for (Eigen::Index c = first; c < C; ++c) {
    int nd = gt.present[c];
    if (pt.place_of[nd] >= 0)
      vars_of[c] = {gplace[pt.place_of[nd]],
                    P + route_col[{gplace[pt.place_of[nd]], pt.via_of[nd]}]};
  }
  RefMoments xm(P + NR);
  MatrixXd XR;
  for_each_block(gt, [&](Eigen::Index, const MatrixXd &S, const MatrixXd &T) {
    XR.setZero(S.rows(), P + NR);
    for (Eigen::Index c = first; c < C; ++c)
      if (vars_of[c].first >= 0) {
        XR.col(vars_of[c].first) += S.col(c);
        XR.col(vars_of[c].second) += S.col(c);
      }
    xm.add_rows(XR, T.col(0));
  });
  // the context (node) carrying most of each place's contribution
  std::vector<int> best_node(plist.size(), -1);
  std::vector<double> best_cov(plist.size(), -std::numeric_limits<double>::infinity());
  for (Eigen::Index c = first; c < C; ++c) {
    int nd = gt.present[c];
    if (pt.place_of[nd] < 0)
      continue;
    // a kernel wait folded into an outside call's place is no context of its own: the call's
    // node (the site a plan times) stands for the place
    if (pt.folded[static_cast<std::size_t>(nd)])
      continue;
    int q = gplace[pt.place_of[nd]];
    double cv = gt.cols.cov_ref(C + c); // Cov(B_n, L)
    if (cv > best_cov[static_cast<std::size_t>(q)]) {
      best_cov[static_cast<std::size_t>(q)] = cv;
      best_node[static_cast<std::size_t>(q)] = nd;
    }
  }
  std::vector<std::vector<std::pair<double, int>>> by_place(plist.size()); // (contrib, route)
  for (std::size_t r = 0; r < routes.size(); ++r) {
    const double cv = xm.cov_ref(P + static_cast<Eigen::Index>(r));
    by_place[routes[r].first].push_back({varL > 0 ? cv / varL : 0, static_cast<int>(r)});
  }
  for (Eigen::Index q = 0; q < P; ++q) {
    int p = plist[q];
    Place pl;
    pl.key = pt.key[p];
    pl.name = pt.name[p];
    pl.function = pt.function[p];
    pl.kind = pt.kind[p];
    pl.wakeup_delay = pt.wakeup_delay[p] != 0;
    pl.outside_waker = pt.outside_waker[p] != 0;
    pl.holder = pt.holder[p];
    pl.site = pt.site[p];
    pl.node = best_node[q];
    pl.contexts = contexts[q];
    pl.mean_ns = xm.mean(q);
    pl.var_ns2 = xm.var(q);
    pl.share = varL > 0 ? pl.var_ns2 / varL : 0;
    pl.contribution = varL > 0 ? xm.cov_ref(q) / varL : 0;
    auto &ways = by_place[q];
    std::sort(ways.begin(), ways.end(), [&](const auto &a, const auto &b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (const auto &[contrib, r] : ways) {
      int w = routes[r].second;
      pl.via.push_back({w < 0 ? "" : pt.name[w], contrib});
    }
    // the specificity of the way that carries most of it (its contexts' smallest)
    pl.specificity = route_spec[ways.front().second];
    pl.waker = routes[ways.front().second].second >= 0;
    pl.vprofiler_score = pl.specificity * pl.share;
    pl.score = opt.ranking == Ranking::Net ? pl.specificity * pl.contribution : pl.vprofiler_score;
    pl.noise = std::max(std::abs(pl.share), std::abs(pl.contribution)) < opt.noise_share;
    gr.places.push_back(std::move(pl));
  }
  // the observed ranking: each place at the context carrying most of it, the nested rule
  // over contributions (docs/statistics.md); VProfiler's: static specificity x share
  std::vector<double> level(gr.places.size(), 0);
  if (opt.ranking == Ranking::Net) {
    std::vector<NestedItem> items;
    for (const auto &pl : gr.places) {
      const auto nd = static_cast<std::size_t>(std::max(pl.node, 0));
      items.push_back({pl.node, pl.node < 0 ? 0.0 : static_cast<double>(nf.level[nd]), pl.node >= 0,
                       pl.contribution, pl.contribution, pl.noise});
    }
    const std::vector<double> keys = nested_keys(nf, items);
    for (std::size_t i = 0; i < gr.places.size(); ++i) {
      Place &pl = gr.places[i];
      pl.specificity = pl.node < 0 ? 0.0 : nf.observed[static_cast<std::size_t>(pl.node)];
      pl.score = keys[i];
      level[i] = items[i].level;
    }
  }
  std::vector<std::size_t> porder(gr.places.size());
  std::iota(porder.begin(), porder.end(), 0);
  std::sort(porder.begin(), porder.end(), [&](std::size_t x, std::size_t y) {
    const Place &a = gr.places[x], &b = gr.places[y];
    if (place_before(a, b) || place_before(b, a))
      return place_before(a, b);
    if (level[x] != level[y]) // equal keys: the deeper place first
      return level[x] > level[y];
    if (a.share != b.share)
      return a.share > b.share;
    return a.key < b.key;
  });
  std::vector<Place> sorted;
  for (auto i : porder)
    sorted.push_back(std::move(gr.places[i]));
  gr.places = std::move(sorted);
  if (gr.places.size() > opt.max_factors)
    gr.places.resize(opt.max_factors);
}

// The waits on the interval's own path, each with the waker's work below it (T, not the
// self time): how much of Var(L) each kind of waiting stands for.
void wait_stats(const AnalysisResult &res, const NodeFacts &nf, const PlaceTable &pt,
                const GroupTimes &gt, GroupResult &gr) {
  const Eigen::Index C = static_cast<Eigen::Index>(gt.present.size());
  const double varL = gr.latency.var_ns2;
  std::vector<int> gw(pt.key.size(), -1), wlist;
  for (Eigen::Index c = 1; c < C; ++c) {
    int nd = gt.present[c];
    if (res.nodes[nd].kind != Node::Kind::Wait || nf.wait_anc[nd] >= 0)
      continue;
    int p = pt.place_of[nd];
    if (gw[p] < 0) {
      gw[p] = static_cast<int>(wlist.size());
      wlist.push_back(p);
    }
  }
  const Eigen::Index NW = static_cast<Eigen::Index>(wlist.size());
  std::vector<Eigen::Index> var_of(static_cast<std::size_t>(C), -1);
  std::vector<int> wctx(wlist.size(), 0);
  std::vector<double> wspec(wlist.size(), std::numeric_limits<double>::infinity());
  for (Eigen::Index c = 1; c < C; ++c) {
    int nd = gt.present[c];
    if (res.nodes[nd].kind != Node::Kind::Wait || nf.wait_anc[nd] >= 0)
      continue;
    int q = gw[pt.place_of[nd]];
    var_of[c] = q;
    ++wctx[q];
    wspec[q] = std::min(wspec[q], nf.spec[nd]);
  }
  if (NW == 0)
    return;
  // one pass: each kind's W_q, the sum of its waits' inclusive times, against L
  RefMoments wm(NW);
  MatrixXd W;
  for_each_block(gt, [&](Eigen::Index, const MatrixXd &, const MatrixXd &T) {
    W.setZero(T.rows(), NW);
    for (Eigen::Index c = 1; c < C; ++c)
      if (var_of[c] >= 0)
        W.col(var_of[c]) += T.col(c);
    wm.add_rows(W, T.col(0));
  });
  for (std::size_t q = 0; q < wlist.size(); ++q) {
    const auto v = static_cast<Eigen::Index>(q);
    Place pl;
    pl.key = pt.key[wlist[q]];
    pl.name = pt.name[wlist[q]];
    pl.kind = Place::Kind::Wait;
    pl.holder = pt.holder[wlist[q]];
    pl.contexts = wctx[q];
    pl.mean_ns = wm.mean(v);
    pl.var_ns2 = wm.var(v);
    pl.share = varL > 0 ? pl.var_ns2 / varL : 0;
    pl.contribution = varL > 0 ? wm.cov_ref(v) / varL : 0;
    pl.specificity = wspec[q];
    pl.vprofiler_score = pl.specificity * pl.share;
    pl.score = pl.specificity * pl.contribution;
    gr.waits.push_back(std::move(pl));
  }
  std::sort(gr.waits.begin(), gr.waits.end(), [](const Place &a, const Place &b) {
    if (a.contribution != b.contribution)
      return a.contribution > b.contribution;
    return a.key < b.key;
  });
}

} // namespace vprof::analyzer::detail
