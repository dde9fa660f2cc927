// What expansion and the final plan share (plan_common.hpp).
#include "plan_common.hpp"

#include <algorithm>
#include <cmath>

namespace vprof::planner {

RunView run_view(ws::Database &db, const ws::RunRow &run, const std::string &label) {
  RunView v;
  v.tree = ws::tree_of(db, run.id, label);
  v.children.resize(v.tree.size());
  for (const auto &n : v.tree) {
    if (n.parent >= 0 && n.parent < static_cast<int>(v.tree.size()))
      v.children[static_cast<std::size_t>(n.parent)].push_back(n.node);
    if (n.function && n.kind == ws::NodeKind::Site)
      v.critical_ns[n.function] += n.mean_ns;
  }
  return v;
}

ws::RunRow require_run(ws::Database &db, int iteration) {
  auto run = ws::latest_run(db, iteration);
  if (!run)
    throw PlanError(db.path().string() + ": no analysis stored for iteration " +
                    std::to_string(iteration) + " (run `vprof analyze` first)");
  return *run;
}

double interval_basis_ns(const ws::RunRow &r, Basis basis) {
  if (r.intervals == 0 || r.mean_ns <= 0)
    return 0;
  if (basis == Basis::Capacity && r.capacity_ns > 0)
    return std::min(r.mean_ns, r.capacity_ns);
  return r.mean_ns;
}

double budget_records(ws::Database &db, int iteration, const Budget &budget, double share,
                      Basis basis) {
  double least = 0;
  for (const auto &r : ws::latest_runs_upto(db, iteration))
    if (double b = interval_basis_ns(r, basis); b > 0)
      least = least > 0 ? std::min(least, b) : b;
  return share * least / std::max(budget.record_ns, 1e-3);
}

std::vector<FunctionId> chain_path(const RunView &view, int node) {
  std::vector<FunctionId> out;
  // a path is at most as long as the tree: the bound keeps a corrupt parent cycle finite
  for (std::size_t steps = 0;
       node >= 0 && node < static_cast<int>(view.tree.size()) && steps <= view.tree.size();
       ++steps) {
    const auto &row = view.tree[static_cast<std::size_t>(node)];
    if (row.function && std::find(out.begin(), out.end(), row.function) == out.end())
      out.push_back(row.function);
    node = row.parent;
  }
  return out;
}

std::set<FunctionId> chain_functions(const RunView &view, const std::set<int> &nodes) {
  std::set<FunctionId> out;
  for (int n : nodes)
    for (FunctionId f : chain_path(view, n))
      out.insert(f);
  return out;
}

std::unordered_map<FunctionId, double>
place_contributions(const std::vector<ws::PlaceRow> &places) {
  std::unordered_map<FunctionId, double> out;
  for (const auto &p : places) {
    FunctionId f = p.kind == ws::PlaceKind::Function ? p.function : p.holder;
    if (!f)
      continue;
    double v = std::max(std::abs(p.contribution), std::abs(p.share));
    out[f] = std::max(out[f], v);
  }
  return out;
}

} // namespace vprof::planner
