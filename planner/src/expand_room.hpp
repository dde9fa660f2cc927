// The room of an expansion within its budget (docs/planner.md, "Expansion"): the candidates'
// prices, the place carrying the most (the lead) and the room it may take from functions
// carrying less, admission within the budget, and the next plan. Internal to the planner.
#pragma once

#include "plan_common.hpp"
#include "vprof/planner.hpp"

#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace vprof::planner::room {

// One group the loop expands on: its places and its variance tree, and the nodes of the
// sources expanded (never trimmed).
struct Group {
  std::string label;
  std::vector<ws::PlaceRow> places;
  RunView view;
  std::set<int> protected_nodes;
};

// One function the top factors would add, in the order they are considered.
struct Candidate {
  FunctionId function = 0;
  std::string factor;
  double critical_ns = 0; // its time on the critical path (0: never seen there)
  int height = -1;        // call-graph height: how much code runs below it
  ws::PlanReason reason = ws::PlanReason::Expand;
  // a function the last plan held for its body alone, now given its call sites too
  bool upgrade = false;
};

// What admitting a candidate costs, per interval on the critical path: with its call sites,
// and (an outer frame may be planned for its body alone) its body probe only.
struct Price {
  double full = 0, body = 0;
};

// The source carrying the most of Var(L) among those expanded: the place outside probed
// functions when it expands upward, else the best-ranked place taken (its key, share, node).
struct Lead {
  std::string key, label, name;
  double share = 0;
  int node = -1;
  FunctionId function = 0; // a function's place: its function
  void consider(const ws::PlaceRow &p, const std::string &group) {
    if (p.contribution > share)
      *this = {p.key,          group,  p.name,
               p.contribution, p.node, p.kind == ws::PlaceKind::Function ? p.function : 0};
  }
  // Whether a candidate is the lead's: brought by its key, or — a function's place whose
  // candidates a factor of the same function took first — the function or one of its callees.
  bool brought(ws::Database &db, const Candidate &c) const {
    if (c.factor == key)
      return true;
    if (!function)
      return false;
    if (c.function == function)
      return true;
    const auto callees = ws::defined_callees(db, function);
    return std::find(callees.begin(), callees.end(), c.function) != callees.end();
  }
};

// One admitted candidate, and whether it joins for its body probe alone.
struct Admitted {
  const Candidate *candidate = nullptr;
  bool body_only = false;
};

// What the lead's cheapest candidate costs (an outer frame: its body probe), or
// -1 when the source brought none: the least room the lead source needs.
double cheapest_of_lead(ws::Database &db, const std::vector<Candidate> &candidates,
                        const std::vector<Price> &price_of, const Lead &lead);

// A candidate's price per interval, predictions scaled by `scale` (the critical-path factor
// times the calibration). An upgrade pays for its call sites only: its body probe ran.
Price candidate_price(const CostModel &cost, const Candidate &c, double scale);

// The largest |contribution| or |share| of a place each function holds, over the groups.
std::unordered_map<FunctionId, double> contributions_of(const std::vector<Group> &groups);

// The planned functions the room step never drops: the annotated functions, the functions
// on the chains of the sources being expanded and of the places carrying keep_share, and
// the functions holding those places.
std::set<FunctionId> kept_functions(ws::Database &db, const std::vector<Group> &groups,
                                    double keep_share);

// What the room step keeps when the lead source needs room: the annotated functions, the
// roots, the functions on the chain of the lead place's node, and the functions whose
// places carry as much as the lead place.
std::set<FunctionId> lead_keep(ws::Database &db, const std::vector<ws::PlanRow> &plan,
                               const std::vector<Group> &groups, const Lead &lead);

// The planned functions that may be dropped (neither roots nor in `keep`), the most
// expensive per unit of explained variance first: cheap, important functions stay.
std::vector<std::pair<double, FunctionId>>
trim_order(const std::vector<ws::PlanRow> &plan, const std::set<FunctionId> &keep,
           const std::unordered_map<FunctionId, double> &contribution, const CostModel &cost,
           double path);

// Drops the functions of `order` still in `planned` until `predicted + need` fits the budget
// (or nothing is left to drop); each dropped function saves its measured records.
void trim_until(const std::vector<std::pair<double, FunctionId>> &order, double need, double budget,
                const CostModel &cost, double path, double &predicted,
                std::set<FunctionId> &planned, std::vector<FunctionId> &trimmed);

// Moves the lead's candidates (and their prices) ahead of the others, each side in its order.
void lead_first(ws::Database &db, const Lead &lead, std::vector<Candidate> &candidates,
                std::vector<Price> &price_of);

// Admits the candidates in order while `predicted` stays within the budget: with their call
// sites, or — an outer frame (drive_machine: a switch over a connection's states, dozens
// of calls, a few of them run per event) — for its body probe alone when only that fits.
// The others are refused, with the reason.
std::vector<Admitted> admit(ws::Database &db, const std::vector<Candidate> &candidates,
                            const std::vector<Price> &price_of, double budget, bool stream_capped,
                            double &predicted, std::vector<Refusal> &refused);

// Why nothing was admitted, by the limit that bound the plan: the stream cap (the user's to
// raise), the plan itself costing more than the budget before any candidate (what to change
// is the budget or the annotations), or the candidates' prices.
std::string budget_stop_reason(ws::Database &db, int iteration, const ExpandOptions &opt,
                               const ExpandResult &er, double kept);

// The next plan: the last one without the trimmed functions (none of it final any more),
// an upgraded function with its call sites, then the admitted candidates.
std::vector<ws::PlanRow> next_plan(const std::vector<ws::PlanRow> &plan,
                                   const std::set<FunctionId> &planned,
                                   const std::vector<Admitted> &additions, ExpandResult &er);

} // namespace vprof::planner::room
