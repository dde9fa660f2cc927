// Continuing after a final plan: what the answer's function calls that no plan held, and
// the exploration iteration to resume from (docs/planner.md, "The loop continues").
#include "vprof/planner.hpp"

#include <set>

namespace vprof::planner {

Unexplored unexplored_below_answer(ws::Database &db, int iteration, double answer_share) {
  Unexplored un;
  un.answer = deepest_answer(db, iteration, answer_share);
  for (int it = iteration; it >= 0 && un.source < 0; --it)
    if (ws::latest_run(db, it) && !ws::is_final_plan(db, it))
      un.source = it;
  if (un.answer.iteration < 0)
    return un;
  auto run = ws::latest_run(db, un.answer.iteration);
  if (!run)
    return un;
  for (const auto &p : ws::places_of(db, run->id))
    if (p.key == un.answer.key) {
      // only a function's own place is code whose callees may hold its time; an outside
      // call, a wait or a dispatching site has no callee of the program's below it
      if (p.kind == ws::PlaceKind::Function)
        un.function = p.function;
      break;
    }
  if (!un.function)
    return un;
  std::set<FunctionId> planned;
  for (int it = 0; it <= iteration; ++it)
    for (const auto &r : ws::read_plan(db, it))
      planned.insert(r.function);
  for (FunctionId c : ws::defined_callees(db, un.function))
    if (auto row = ws::function_row(db, c);
        row && row->defined && row->body && !planned.count(c) && c != un.function)
      un.callees.push_back(c);
  return un;
}

} // namespace vprof::planner
