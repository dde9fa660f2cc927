// A group's node times as sums (docs/statistics.md, "Sums, not matrices"): the groups, the
// passes over their rows a block at a time — from a NodeTimeStore (the analysis) or an
// EngineOutput (tests) — and the first pass's sums (group_times).
#include "stages.hpp"

#include "order_statistics.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace vprof::analyzer::detail {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// ---- per group ------------------------------------------------------------------------

std::vector<IntervalGroup> interval_groups(const EngineOutput &eo, int min_group_size) {
  std::vector<IntervalGroup> groups(1);
  std::map<std::uint32_t, std::vector<std::uint32_t>> by_label;
  for (std::uint32_t i = 0; i < eo.intervals.size(); ++i) {
    groups[0].intervals.push_back(i);
    if (eo.intervals[i].label)
      by_label[eo.intervals[i].label].push_back(i);
  }
  for (auto &[l, v] : by_label)
    if (static_cast<int>(v.size()) >= min_group_size)
      groups.push_back({eo.labels[l], std::move(v)});
  return groups;
}

std::vector<IntervalGroup> interval_groups(const std::vector<std::uint64_t> &label_counts,
                                           const std::vector<std::string> &labels,
                                           int min_group_size) {
  std::vector<IntervalGroup> groups(1);
  for (auto c : label_counts)
    groups[0].count += c;
  // by label index, as interval_groups(eo, ...)
  for (std::size_t l = 1; l < label_counts.size(); ++l)
    if (label_counts[l] > 0 && static_cast<std::int64_t>(label_counts[l]) >= min_group_size) {
      IntervalGroup g;
      g.label = labels[l];
      g.label_index = static_cast<std::int64_t>(l);
      g.count = label_counts[l];
      groups.push_back(std::move(g));
    }
  return groups;
}

namespace {

// Calls fn(times, n) with every row's node times, in the group's order.
template <class Fn> void for_each_row(const GroupTimes &gt, Fn &&fn) {
  if (gt.store) {
    gt.store->for_each_interval(gt.label_index, fn);
    return;
  }
  if (!gt.eo)
    return;
  for (auto iv : gt.intervals) {
    const auto &r = gt.eo->intervals[iv];
    fn(gt.eo->times.data() + r.times_off, r.times_n);
  }
}

} // namespace

// The rows of a block: about 4 M doubles per matrix (S and T), between 64 and 4096 rows.
constexpr Eigen::Index kBlockDoubles = Eigen::Index{1} << 22;

void for_each_block(const GroupTimes &gt, const BlockFn &fn) {
  const Eigen::Index I = gt.rows;
  const Eigen::Index C = static_cast<Eigen::Index>(gt.present.size());
  if (I == 0 || C == 0)
    return;
  const Eigen::Index rows =
      std::clamp<Eigen::Index>(kBlockDoubles / std::max<Eigen::Index>(C, 1), 64, 4096);
  MatrixXd S, T;
  Eigen::Index first = 0, row = 0;
  S.setZero(std::min(rows, I), C); // self time = body
  for_each_row(gt, [&](const NodeTime *times, std::uint32_t n) {
    if (first + row >= I)
      return; // more rows than counted: never (the same intervals each pass)
    for (std::uint32_t k = 0; k < n; ++k)
      S(row, gt.col_of[times[k].node]) += static_cast<double>(times[k].ticks) * gt.ns_per_tick;
    if (++row < S.rows())
      return;
    T = S; // inclusive
    for (Eigen::Index c = C - 1; c > 0; --c)
      T.col(gt.parent_col[static_cast<std::size_t>(c)]) += T.col(c);
    fn(first, S, T);
    first += row;
    row = 0;
    if (first < I)
      S.setZero(std::min(rows, I - first), C);
  });
  if (first + row != I)
    throw InternalError("a pass over the node times found " + std::to_string(first + row) +
                        " of the group's " + std::to_string(I) + " intervals");
}

namespace {

// The columns (the nodes seen in the group and their ancestors, ascending id) and the one
// pass: L, the columns' moments against L, each expanded node's cross-products.
void fill_group_times(const std::vector<NodeDef> &nodes, GroupTimes &gt) {
  const std::size_t N = nodes.size();
  gt.col_of.assign(N, -1);
  auto &col_of = gt.col_of;
  auto &present = gt.present;
  for_each_row(gt, [&](const NodeTime *times, std::uint32_t n) {
    for (std::uint32_t k = 0; k < n; ++k) {
      std::uint32_t nd = times[k].node;
      while (nd != kNoParent && col_of[nd] < 0) {
        col_of[nd] = 0;
        present.push_back(static_cast<int>(nd));
        nd = nodes[nd].parent;
      }
    }
  });
  if (col_of[0] < 0) {
    col_of[0] = 0;
    present.push_back(0);
  }
  std::sort(present.begin(), present.end());
  for (std::size_t c = 0; c < present.size(); ++c)
    col_of[present[c]] = static_cast<int>(c);
  const Eigen::Index C = static_cast<Eigen::Index>(present.size());
  gt.parent_col.assign(present.size(), -1);
  gt.kids.assign(N, {});
  for (Eigen::Index c = 1; c < C; ++c) {
    const auto parent = nodes[present[c]].parent;
    gt.parent_col[c] = col_of[parent];
    gt.kids[parent].push_back(present[c]);
  }
  gt.cols = RefMoments(2 * C);
  for (int nd : present)
    if (!gt.kids[nd].empty())
      gt.trees.emplace(nd, CrossProducts(static_cast<Eigen::Index>(gt.kids[nd].size()) + 1));
  MatrixXd TS, X;
  for_each_block(gt, [&](Eigen::Index first, const MatrixXd &S, const MatrixXd &T) {
    const Eigen::Index n = S.rows();
    gt.L_min = first == 0 ? T.col(0).minCoeff() : std::min(gt.L_min, T.col(0).minCoeff());
    gt.L_max = first == 0 ? T.col(0).maxCoeff() : std::max(gt.L_max, T.col(0).maxCoeff());
    TS.resize(n, 2 * C);
    TS << T, S;
    gt.cols.add_rows(TS, T.col(0));
    for (auto &[nd, cp] : gt.trees) {
      const auto &ch = gt.kids[nd];
      const Eigen::Index k = static_cast<Eigen::Index>(ch.size());
      X.resize(n, k + 1);
      for (Eigen::Index j = 0; j < k; ++j)
        X.col(j) = T.col(col_of[ch[j]]);
      X.col(k) = S.col(col_of[nd]);
      cp.add_rows(X);
    }
  });
}

} // namespace

GroupTimes group_times(const EngineOutput &eo, const std::vector<std::uint32_t> &ivs) {
  GroupTimes gt;
  gt.eo = &eo;
  gt.intervals = ivs;
  gt.rows = static_cast<Eigen::Index>(ivs.size());
  gt.ns_per_tick = 1e9 / eo.ticks_per_second;
  fill_group_times(eo.nodes, gt);
  return gt;
}

GroupTimes group_times(const NodeTimeStore &store, const std::vector<NodeDef> &nodes,
                       double ticks_per_second, const IntervalGroup &group) {
  GroupTimes gt;
  gt.store = &store;
  gt.label_index = group.label_index;
  gt.rows = static_cast<Eigen::Index>(group.count);
  gt.ns_per_tick = 1e9 / ticks_per_second;
  fill_group_times(nodes, gt);
  return gt;
}

DenseTimes dense_times(const GroupTimes &gt) {
  const Eigen::Index I = gt.rows;
  const Eigen::Index C = static_cast<Eigen::Index>(gt.present.size());
  DenseTimes d{MatrixXd::Zero(I, C), MatrixXd::Zero(I, C)};
  for_each_block(gt, [&](Eigen::Index first, const MatrixXd &S, const MatrixXd &T) {
    d.S.middleRows(first, S.rows()) = S;
    d.T.middleRows(first, T.rows()) = T;
  });
  return d;
}

VectorXd column(const GroupTimes &gt, const Col &c) {
  VectorXd x(gt.rows);
  const int col = gt.col_of[c.node];
  for_each_block(gt, [&](Eigen::Index first, const MatrixXd &S, const MatrixXd &T) {
    x.segment(first, S.rows()) = c.body ? S.col(col) : T.col(col);
  });
  return x;
}

// ---- the latencies' order statistics ---------------------------------------------------

void latency_ranks(const GroupTimes &gt, std::vector<std::uint64_t> ranks, LatencyHistogram *hist) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::erase_if(ranks, [&](std::uint64_t r) { return gt.order.count(r) > 0; });
  const auto n = static_cast<std::uint64_t>(gt.rows);
  if (hist)
    *hist = histogram_bins(gt.L_min, gt.L_max, n);
  if (n == 0 || (ranks.empty() && !hist))
    return;
  OrderStatistics os(n, ranks);
  bool first = true;
  do {
    for_each_block(gt, [&](Eigen::Index, const MatrixXd &, const MatrixXd &T) {
      for (Eigen::Index i = 0; i < T.rows(); ++i) {
        os.add(T(i, 0));
        if (first && hist)
          histogram_add(*hist, T(i, 0));
      }
    });
    first = false;
  } while (!os.end_pass());
  for (std::size_t i = 0; i < ranks.size(); ++i)
    gt.order[ranks[i]] = os.value(i);
}

std::vector<std::uint64_t> percentile_rank_pair(const GroupTimes &gt, double q) {
  std::uint64_t lo, hi;
  double f;
  percentile_ranks(static_cast<std::uint64_t>(gt.rows), q, lo, hi, f);
  return {lo, hi};
}

double latency_percentile(const GroupTimes &gt, double q) {
  if (gt.rows == 0)
    return 0;
  std::uint64_t lo, hi;
  double f;
  percentile_ranks(static_cast<std::uint64_t>(gt.rows), q, lo, hi, f);
  latency_ranks(gt, {lo, hi});
  const double a = gt.order.at(lo);
  return hi == lo ? a : a + f * (gt.order.at(hi) - a);
}

LatencyStats latency_stats(const GroupTimes &gt) {
  LatencyStats s;
  s.count = static_cast<std::uint64_t>(gt.rows);
  if (gt.rows == 0)
    return s;
  s.mean_ns = gt.cols.ref_mean();
  s.var_ns2 = gt.cols.ref_var();
  s.cv = s.mean_ns != 0 ? std::sqrt(s.var_ns2) / s.mean_ns : 0;
  s.min_ns = gt.L_min;
  s.max_ns = gt.L_max;
  s.p50_ns = latency_percentile(gt, 0.50);
  s.p95_ns = latency_percentile(gt, 0.95);
  s.p99_ns = latency_percentile(gt, 0.99);
  return s;
}

LatencyHistogram latency_histogram(const GroupTimes &gt) {
  LatencyHistogram h;
  latency_ranks(gt, {}, &h);
  return h;
}

Eigen::Index variable_of(const GroupTimes &gt, const Col &c) {
  return gt.col_of[c.node] + (c.body ? static_cast<Eigen::Index>(gt.present.size()) : 0);
}

Eigen::MatrixXd::ConstColXpr block_column(const GroupTimes &gt, const Col &c,
                                          const Eigen::MatrixXd &S, const Eigen::MatrixXd &T) {
  return c.body ? S.col(gt.col_of[c.node]) : T.col(gt.col_of[c.node]);
}

} // namespace vprof::analyzer::detail
