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
// `label`: the tree of that interval type's group.
RunView run_view(ws::Database &db, const ws::RunRow &run, const std::string &label = "");

// The newest run of `iteration`, or PlanError.
ws::RunRow require_run(ws::Database &db, int iteration);

// What a plan's records are held against, per interval: the mean latency (exploration: a
// run's probes perturb the latencies it measures), or the least of the latency and the
// machine's capacity per interval, cores x the intervals' span / intervals (the final plan,
// judged by the throughput it costs: LevelDB's four writers on two vCPUs take 17.6 µs each
// but complete one every 3.5 µs).
enum class Basis { Latency, Capacity };
// One run's basis in ns; 0 when unknown.
double interval_basis_ns(const ws::RunRow &r, Basis basis);
// Records per interval a plan may cost: `share` of the least basis of the runs up to
// `iteration` (the least perturbed), at `budget.record_ns` per record.
double budget_records(ws::Database &db, int iteration, const Budget &budget, double share,
                      Basis basis);

// The functions of the nodes and of all their ancestors (the waker's frames above a node
// below a wait included).
std::set<FunctionId> chain_functions(const RunView &view, const std::set<int> &nodes);
// The functions of a node and of its ancestors in order, the node's own first, each once.
std::vector<FunctionId> chain_path(const RunView &view, int node);

// The largest |contribution| or |share| of a place held by each function among a run's
// places: its own place, the outside calls it makes and the waits in it.
std::unordered_map<FunctionId, double> place_contributions(const std::vector<ws::PlaceRow> &places);

} // namespace vprof::planner
