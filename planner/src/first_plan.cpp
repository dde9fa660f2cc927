// The first plan: the roots and every defined function within `depth` call edges.
#include "vprof/planner.hpp"

#include <deque>
#include <unordered_map>

namespace vprof::planner {
namespace {

std::vector<FunctionId> find_roots(ws::Database &db, const FirstPlanOptions &opt) {
  std::vector<FunctionId> roots;
  if (opt.most_called > 0)
    roots = ws::most_called_functions(db, opt.most_called);
  for (const auto &r : opt.roots) {
    auto named = ws::functions_named(db, r);
    if (named.empty())
      throw PlanError("plan: no defined function named '" + r + "' in the call graph");
    roots.insert(roots.end(), named.begin(), named.end());
  }
  if (opt.roots.empty() && opt.most_called <= 0) {
    roots = ws::annotated_functions(db);
    if (roots.empty())
      throw PlanError("plan: no roots given and no function contains a vprof interval "
                      "annotation (vprof_interval_begin)");
  }
  return roots;
}

} // namespace

int first_plan(ws::Database &db, const FirstPlanOptions &opt) {
  // breadth-first over call edges to defined callees
  std::unordered_map<FunctionId, int> dist;
  std::vector<FunctionId> order;
  std::deque<FunctionId> todo;
  for (auto r : find_roots(db, opt))
    if (dist.emplace(r, 0).second) {
      todo.push_back(r);
      order.push_back(r);
    }
  while (!todo.empty()) {
    FunctionId f = todo.front();
    todo.pop_front();
    int d = dist[f];
    if (d >= opt.depth)
      continue;
    for (auto g : ws::defined_callees(db, f))
      if (dist.emplace(g, d + 1).second) {
        todo.push_back(g);
        order.push_back(g);
      }
  }
  std::vector<ws::PlanRow> rows;
  for (auto f : order) {
    if (auto row = ws::function_row(db, f); row && !row->body && dist[f] > 0)
      continue; // `= default` out of line: nothing to probe (its callees stay)
    ws::PlanRow r;
    r.function = f;
    r.reason = dist[f] == 0 ? ws::PlanReason::Root : ws::PlanReason::Depth;
    rows.push_back(r);
  }
  ws::write_plan(db, opt.iteration, rows);
  return static_cast<int>(rows.size());
}

} // namespace vprof::planner
