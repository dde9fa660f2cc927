// Continuing after a final plan: what a place that carried variance calls that no plan held,
// and the exploration iteration to resume from (docs/planner.md, "The loop continues").
#include "vprof/planner.hpp"

#include <set>

namespace vprof::planner {
namespace {

// The defined, probeable callees of f that no plan in `planned` holds.
std::vector<FunctionId> unplanned_callees(ws::Database &db, FunctionId f,
                                          const std::set<FunctionId> &planned) {
  std::vector<FunctionId> out;
  for (FunctionId c : ws::defined_callees(db, f))
    if (auto row = ws::function_row(db, c);
        row && row->defined && row->body && !planned.count(c) && c != f)
      out.push_back(c);
  return out;
}

} // namespace

Unexplored unexplored_below_answer(ws::Database &db, int iteration, double answer_share) {
  Unexplored un;
  un.answer = deepest_answer(db, iteration, answer_share);
  for (int it = iteration; it >= 0 && un.source < 0; --it)
    if (ws::latest_run(db, it) && !ws::is_final_plan(db, it))
      un.source = it;
  std::set<FunctionId> planned;
  for (int it = 0; it <= iteration; ++it)
    for (const auto &r : ws::read_plan(db, it))
      planned.insert(r.function);
  // The answer's own place first; else the function's own place that carried the most of
  // Var(L) in any run (the ranking may name a smaller leaf beside it: its callees are where
  // the rest of the variance went unlooked-at).
  double best = -1;
  for (const auto &run : ws::latest_runs_upto(db, iteration))
    for (const auto &p : ws::places_of(db, run.id)) {
      if (p.kind != ws::PlaceKind::Function || !p.function || p.contribution < answer_share)
        continue;
      const bool answer = run.iteration == un.answer.iteration && p.key == un.answer.key;
      const double rank = answer ? 2.0 : p.contribution; // contributions stay below 2 here
      if (rank <= best)
        continue;
      auto callees = unplanned_callees(db, p.function, planned);
      if (callees.empty())
        continue;
      best = rank;
      un.function = p.function;
      un.name = p.name;
      un.contribution = p.contribution;
      un.iteration = run.iteration;
      un.callees = std::move(callees);
    }
  return un;
}

} // namespace vprof::planner
