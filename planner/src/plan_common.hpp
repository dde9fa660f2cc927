// Internal: what expansion and the final plan share — a run's tree as typed rows with its
// children and critical-path times, the budget, and the chain of functions above a node.
#pragma once

#include "vprof/planner.hpp"

#include <set>
#include <unordered_map>

namespace vprof::planner {

struct RunView {
  std::vector<ws::NodeRow> tree;
  std::vector<std::vector<int>> children;
  // the time each function spent on the critical path per interval, summed over its nodes
  std::unordered_map<FunctionId, double> critical_ns;
};
RunView run_view(ws::Database &db, const ws::RunRow &run);

// The newest run of `iteration`, or PlanError.
ws::RunRow require_run(ws::Database &db, int iteration);

// What an interval costs the machine in one run: its mean latency, or the CPU time the
// traced processes used per interval when that is less (many intervals at once on few
// cores; a latency stretched by I/O waits). 0 when unknown.
double interval_basis_ns(const ws::RunRow &r);
// Records per interval a plan may cost: `share` of the least interval basis of the runs up
// to `iteration` (the least perturbed), at `budget.record_ns` per record.
double budget_records(ws::Database &db, int iteration, const Budget &budget, double share);

// The functions of the nodes and of all their ancestors (the waker's frames above a node
// below a wait included).
std::set<FunctionId> chain_functions(const RunView &view, const std::set<int> &nodes);

// The largest |contribution| or |share| of a place held by each function among a run's
// places: its own place, the outside calls it makes and the waits in it.
std::unordered_map<FunctionId, double> place_contributions(const std::vector<ws::PlaceRow> &places);

} // namespace vprof::planner
