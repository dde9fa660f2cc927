// The room of an expansion within its budget: prices, the lead's room, admission and the
// next plan (expand_room.hpp; docs/planner.md, "Expansion").
#include "expand_room.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace vprof::planner::room {

// What the lead's cheapest candidate costs (an outer frame: its body probe), or
// -1 when the source brought none: the least room the lead source needs.
double cheapest_of_lead(ws::Database &db, const std::vector<Candidate> &candidates,
                        const std::vector<Price> &price_of, const Lead &lead) {
  double least = -1;
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (lead.brought(db, candidates[i])) {
      const double p =
          candidates[i].reason == ws::PlanReason::Outer ? price_of[i].body : price_of[i].full;
      least = least < 0 ? p : std::min(least, p);
    }
  return least;
}

// A candidate's price per interval, predictions scaled by `scale` (the critical-path factor
// times the calibration). An upgrade pays for its call sites only: its body probe ran.
Price candidate_price(const CostModel &cost, const Candidate &c, double scale) {
  const double body = scale * cost.predict_body_records(c.function);
  const double full = scale * cost.predict_records(c.function);
  return {c.upgrade ? std::max(0.0, full - body) : full, body};
}

// The largest |contribution| or |share| of a place each function holds, over the groups.
std::unordered_map<FunctionId, double> contributions_of(const std::vector<Group> &groups) {
  std::unordered_map<FunctionId, double> out;
  for (const Group &g : groups)
    for (const auto &[f, c] : place_contributions(g.places))
      out[f] = std::max(out[f], c);
  return out;
}

// The planned functions the room step never drops: the annotated functions, the functions
// on the chains of the sources being expanded and of the places carrying keep_share, and
// the functions holding those places.
std::set<FunctionId> kept_functions(ws::Database &db, const std::vector<Group> &groups,
                                    double keep_share) {
  std::set<FunctionId> keep;
  for (auto f : ws::annotated_functions(db))
    keep.insert(f);
  for (const Group &g : groups) {
    for (auto f : chain_functions(g.view, g.protected_nodes))
      keep.insert(f);
    std::set<int> carrying;
    for (const auto &p : g.places)
      if (std::max(std::abs(p.contribution), std::abs(p.share)) >= keep_share) {
        if (p.node >= 0)
          carrying.insert(p.node);
        keep.insert(p.kind == ws::PlaceKind::Function ? p.function : p.holder);
      }
    for (auto f : chain_functions(g.view, carrying))
      keep.insert(f);
  }
  return keep;
}

// What the room step keeps when the lead source needs room: the annotated functions, the
// roots, the functions on the chain of the lead place's node, and the functions whose
// places carry as much as the lead place.
std::set<FunctionId> lead_keep(ws::Database &db, const std::vector<ws::PlanRow> &plan,
                               const std::vector<Group> &groups, const Lead &lead) {
  std::set<FunctionId> keep;
  for (auto f : ws::annotated_functions(db))
    keep.insert(f);
  for (const auto &r : plan)
    if (r.reason == ws::PlanReason::Root)
      keep.insert(r.function);
  for (const Group &g : groups)
    if (g.label == lead.label && lead.node >= 0)
      for (auto f : chain_functions(g.view, {lead.node}))
        keep.insert(f);
  for (const auto &[f, c] : contributions_of(groups))
    if (c >= lead.share)
      keep.insert(f);
  return keep;
}

// The planned functions that may be dropped (neither roots nor in `keep`), the most
// expensive per unit of explained variance first: cheap, important functions stay.
std::vector<std::pair<double, FunctionId>>
trim_order(const std::vector<ws::PlanRow> &plan, const std::set<FunctionId> &keep,
           const std::unordered_map<FunctionId, double> &contribution, const CostModel &cost,
           double path) {
  std::vector<std::pair<double, FunctionId>> out;
  for (const auto &r : plan) {
    if (r.reason == ws::PlanReason::Root || keep.count(r.function))
      continue;
    auto it = contribution.find(r.function);
    const double c = it == contribution.end() ? 0 : it->second;
    out.push_back({path * cost.function_records(r.function) / std::max(c, 1e-3), r.function});
  }
  std::sort(out.rbegin(), out.rend());
  return out;
}

// Drops the functions of `order` still in `planned` until `predicted + need` fits the budget
// (or nothing is left to drop); each dropped function saves its measured records.
void trim_until(const std::vector<std::pair<double, FunctionId>> &order, double need, double budget,
                const CostModel &cost, double path, double &predicted,
                std::set<FunctionId> &planned, std::vector<FunctionId> &trimmed) {
  for (const auto &[price, f] : order) {
    if (predicted + need <= budget)
      break;
    const double saved = path * cost.function_records(f);
    if (saved <= 0 || !planned.count(f))
      continue;
    predicted -= saved;
    planned.erase(f);
    trimmed.push_back(f);
  }
}

// Moves the lead's candidates (and their prices) ahead of the others, each side in its order.
void lead_first(ws::Database &db, const Lead &lead, std::vector<Candidate> &candidates,
                std::vector<Price> &price_of) {
  std::vector<std::pair<Candidate, Price>> both;
  for (std::size_t i = 0; i < candidates.size(); ++i)
    both.push_back({candidates[i], price_of[i]});
  std::stable_partition(both.begin(), both.end(),
                        [&](const auto &cp) { return lead.brought(db, cp.first); });
  for (std::size_t i = 0; i < both.size(); ++i) {
    candidates[i] = both[i].first;
    price_of[i] = both[i].second;
  }
}

// Admits the candidates in order while `predicted` stays within the budget: with their call
// sites, or — an outer frame (drive_machine: a switch over a connection's states, dozens
// of calls, a few of them run per event) — for its body probe alone when only that fits.
// The others are refused, with the reason.
std::vector<Admitted> admit(ws::Database &db, const std::vector<Candidate> &candidates,
                            const std::vector<Price> &price_of, double budget, bool stream_capped,
                            double &predicted, std::vector<Refusal> &refused) {
  std::vector<Admitted> out;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const Candidate &c = candidates[i];
    const Price &p = price_of[i];
    if (predicted + p.full <= budget) {
      predicted += p.full;
      out.push_back({&c, false});
      continue;
    }
    if (c.reason == ws::PlanReason::Outer && predicted + p.body <= budget) {
      predicted += p.body;
      out.push_back({&c, true});
      continue;
    }
    Refusal r;
    r.function = c.function;
    auto row = ws::function_row(db, c.function);
    r.name = row ? row->name : std::to_string(c.function);
    r.records = p.full;
    r.why = p.full > 0.25 * budget ? "hot: timed at its call sites instead"
            : stream_capped        ? "over the stream cap"
                                   : "over the exploration budget";
    refused.push_back(std::move(r));
  }
  return out;
}

// Why nothing was admitted, by the limit that bound the plan: the stream cap (the user's to
// raise), the plan itself costing more than the budget before any candidate (what to change
// is the budget or the annotations), or the candidates' prices.
std::string budget_stop_reason(ws::Database &db, int iteration, const ExpandOptions &opt,
                               const ExpandResult &er, double kept) {
  char buf[400];
  if (er.stream_capped)
    return "stream cap: the next plan's longest thread stream would pass " +
           std::string(ws::plan_cost(db, iteration) ? "half" : "a quarter") +
           " of the per-thread stream cap (stream_cap_mb = " +
           std::to_string((opt.budget.stream_cap_records * 16) >> 20) + "; " +
           std::to_string(er.refused.size()) +
           " candidate(s) refused); raise stream_cap_mb in vprof.toml or shorten the workload";
  if (kept > er.budget_records) {
    const double mean_us =
        er.budget_records * opt.budget.record_ns / std::max(opt.budget.exploration, 1e-6) / 1e3;
    // one decimal when whole records would print the cost equal to the budget it exceeds
    const int digits = std::lround(kept) == std::lround(er.budget_records) ? 1 : 0;
    std::snprintf(
        buf, sizeof buf,
        "probe budget spent: plan %d costs %.*f records per interval on an interval's "
        "critical path%s, more than the budget of %.*f (budget = %g of the mean "
        "latency %.1f us, %.0f ns a record) before any of %zu candidate(s); raise "
        "`budget` in vprof.toml, or begin and end the intervals in functions called "
        "once per interval",
        iteration, digits, kept,
        er.trimmed.empty()
            ? ""
            : (" after dropping " + std::to_string(er.trimmed.size()) + " function(s)").c_str(),
        digits, er.budget_records, opt.budget.exploration, mean_us, opt.budget.record_ns,
        er.refused.size());
    return buf;
  }
  return "probe budget spent (" + std::to_string(er.refused.size()) +
         " candidate(s) would cost more than the exploration budget)";
}

// The next plan: the last one without the trimmed functions (none of it final any more),
// an upgraded function with its call sites, then the admitted candidates.
std::vector<ws::PlanRow> next_plan(const std::vector<ws::PlanRow> &plan,
                                   const std::set<FunctionId> &planned,
                                   const std::vector<Admitted> &additions, ExpandResult &er) {
  std::vector<ws::PlanRow> next;
  std::set<FunctionId> upgraded;
  for (const Admitted &a : additions)
    if (a.candidate->upgrade)
      upgraded.insert(a.candidate->function);
  for (auto r : plan) {
    if (!planned.count(r.function))
      continue;
    r.final = false; // expanding a final plan by hand: the next plan is not final
    if (upgraded.count(r.function))
      r.body_only = false;
    next.push_back(std::move(r));
  }
  for (const Admitted &a : additions) {
    const Candidate *c = a.candidate;
    er.added.push_back(c->function);
    if (c->upgrade)
      continue;
    ws::PlanRow r;
    r.function = c->function;
    r.reason = c->reason;
    r.factor = c->factor;
    r.body_only = a.body_only;
    if (a.body_only)
      er.body_only.push_back(c->function);
    next.push_back(std::move(r));
  }
  return next;
}

} // namespace vprof::planner::room
