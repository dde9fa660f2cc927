// The cost model: what each planned function's probes cost per interval in one run, and a
// prediction for functions not planned yet (docs/planner.md, "Cost model").
#include "vprof/planner.hpp"

#include <algorithm>
#include <unordered_set>

namespace vprof::planner {

CostModel::CostModel(ws::Database &db, const ws::RunRow &run, const std::vector<ws::PlanRow> &plan)
    : db_(db) {
  intervals_ = static_cast<double>(std::max<std::uint64_t>(run.intervals, 1));
  // Records past the stream cap were dropped at the end of the run: the counts saw the
  // share of the run that was recorded, so they are scaled up by that share.
  if (run.records > 0)
    scale_ = static_cast<double>(run.records + run.dropped) / static_cast<double>(run.records);
  records_ = static_cast<double>(run.records + run.dropped) / intervals_;
  max_stream_ = run.max_stream_records;
  std::unordered_map<ws::SiteId, double> per_interval;
  std::unordered_map<FunctionId, int> probed_sites; // call sites naming a callee, probed
  double probe_records = 0;                         // ENTER and EXIT, as recorded
  for (const auto &c : ws::site_calls_of(db, run.id)) {
    per_interval[c.site] = static_cast<double>(c.calls) * scale_ / intervals_;
    probe_records += 2 * static_cast<double>(c.calls);
  }
  if (run.critical_records > 0 && probe_records > 0)
    path_factor_ = std::max(1.0, static_cast<double>(run.critical_records) / probe_records);
  for (const auto &row : plan)
    if (row.body_only)
      body_only_.insert(row.function);
  for (const auto &row : plan) {
    double body = 0, sites = 0;
    auto &kept = final_sites_[row.function];
    for (const auto &s : ws::sites_of(db, row.function)) {
      auto it = per_interval.find(s.id);
      double n = it == per_interval.end() ? 0 : it->second;
      if (s.body) {
        body += n;
        continue;
      }
      sites += 2 * n;
      auto targets = ws::call_targets(db, s.id);
      for (const auto &t : targets)
        ++probed_sites[t.function];
      if (n == 0)
        continue;
      // a final plan keeps the probes of outside calls and of dispatching calls only
      if (targets.size() != 1 || targets.front().dispatch)
        kept.push_back({s.id, 2 * n});
      // each call enters one target: a dispatching call's count is shared among them
      for (const auto &t : targets)
        callee_calls_[t.function] += n / static_cast<double>(targets.size());
    }
    body_calls_[row.function] = body;
    site_records_[row.function] = sites;
    sites_in_[row.function] = ws::call_sites_in(db, row.function);
  }
  // A callee's calls seen at the probed call sites are those of the planned callers only: a
  // function called from many places (an allocator, a list append, a lock release) runs far
  // more often. Its count is scaled by its call sites over the probed ones. A utility —
  // named in more than kUtilityCallers functions — runs under most of them: all its call
  // sites count (PostgreSQL's pfree, 1,267 callers: 639 calls a transaction, seen at five
  // probed sites). Otherwise only the call sites in functions seen running count (planned
  // ones that ran, callees a probe saw called): a function named in 41 functions of which
  // the workload runs one (CommitTransactionCommand, once a transaction) is no allocator.
  std::unordered_set<FunctionId> running;
  for (const auto &[f, body] : body_calls_)
    if (body > 0)
      running.insert(f);
  for (const auto &[f, n] : callee_calls_)
    if (n > 0)
      running.insert(f);
  for (auto &[f, n] : callee_calls_) {
    int probed = std::max(1, probed_sites[f]);
    const auto by_caller = ws::call_sites_naming_by_caller(db, f);
    const bool utility = static_cast<int>(by_caller.size()) > kUtilityCallers;
    int all = 0;
    for (const auto &[caller, sites] : by_caller)
      if (utility || running.count(caller))
        all += sites;
    if (all > probed)
      n *= static_cast<double>(all) / probed;
  }
  // Loop trips: the call-site ENTERs of the measured functions beyond one per straight call
  // site and call, over their calls times their call sites inside loops. A function called
  // less often than once per interval counts as called once per interval: it encloses the
  // intervals (an event loop's root, called once per run, or its batch), and its loop is
  // the loop over them — counted per call, its trips grew with the run's length and made
  // every candidate with a loop hot (a dispatcher called once per command).
  double extra = 0, looped = 0;
  for (const auto &[f, body] : body_calls_) {
    if (body <= 0 || body_only_.count(f)) // no call-site probes ran in it
      continue;
    const auto &c = sites_in_[f];
    if (c.looped == 0)
      continue;
    const double calls = per_call_basis(body);
    extra += std::max(0.0, site_records_[f] / 2 - calls * c.straight);
    looped += calls * c.looped;
  }
  if (looped > 0)
    loop_trips_ = std::clamp(extra / looped, 1.0, 1000.0);
}

double CostModel::function_records(FunctionId f) const {
  auto b = body_calls_.find(f);
  if (b == body_calls_.end())
    return 0;
  auto s = site_records_.find(f);
  return 2 * b->second + (s == site_records_.end() ? 0 : s->second);
}

double CostModel::final_records(FunctionId f, const std::set<ws::SiteId> &timed) const {
  auto b = body_calls_.find(f);
  if (b == body_calls_.end())
    return 0;
  double records = 2 * b->second;
  if (auto k = final_sites_.find(f); k != final_sites_.end())
    for (const auto &[site, n] : k->second)
      records += timed.count(site) ? n : 0;
  return records;
}

double CostModel::final_site_records(FunctionId f, ws::SiteId site) const {
  if (auto k = final_sites_.find(f); k != final_sites_.end())
    for (const auto &[s, n] : k->second)
      if (s == site)
        return n;
  return 0;
}

double CostModel::calls(FunctionId f) const {
  if (auto b = body_calls_.find(f); b != body_calls_.end() && b->second > 0)
    return b->second;
  if (auto c = callee_calls_.find(f); c != callee_calls_.end())
    return c->second;
  return -1;
}

ws::CallSiteCount CostModel::sites_in(FunctionId f) const {
  auto it = sites_in_.find(f);
  return it != sites_in_.end() ? it->second : ws::call_sites_in(db_, f);
}

double CostModel::self_calibration() const {
  double measured = 0, predicted = 0;
  for (const auto &[f, body] : body_calls_) {
    if (body <= 0 || body_only_.count(f)) // its call sites were not probed: nothing to check
      continue;
    measured += function_records(f);
    auto c = sites_in(f);
    // its body probe as measured; its call sites per call, at least once per interval
    predicted += 2 * body + 2 * per_call_basis(body) * (c.straight + loop_trips_ * c.looped);
  }
  return predicted > 0 ? measured / predicted : 1;
}

double CostModel::unseen_calls(FunctionId f) const {
  // No probe saw it: one call per interval, the next run measures it — unless it is a
  // utility (its calls hide in macros: PostgreSQL's palloc0 reaches
  // MemoryContextAllocZeroAligned, 1,825 call sites, 690 calls a transaction, through one):
  // a tenth of a call per call site.
  const auto by_caller = ws::call_sites_naming_by_caller(db_, f);
  if (static_cast<int>(by_caller.size()) <= kUtilityCallers)
    return 1;
  int sites = 0;
  for (const auto &[caller, n] : by_caller)
    sites += n;
  return std::max(1.0, sites / 10.0);
}

double CostModel::predict_records(FunctionId f) const {
  double n = calls(f);
  if (n < 0)
    n = unseen_calls(f);
  auto c = sites_in(f);
  return 2 * n * (1 + c.straight + loop_trips_ * c.looped);
}

double CostModel::predict_body_records(FunctionId f) const {
  double n = calls(f);
  return 2 * (n < 0 ? unseen_calls(f) : n);
}

} // namespace vprof::planner
