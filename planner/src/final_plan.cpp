// The final plan: the answer's chain, then what carried variance, within the final budget
// (docs/planner.md, "The final plan").
#include "plan_common.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>

namespace vprof::planner {
namespace {

bool carries(const ws::PlaceRow &p, double threshold) {
  return std::abs(p.contribution) >= threshold || std::abs(p.share) >= threshold;
}

// Whether every defined callee of f was planned in `iteration`: only then is f's own place
// its own work (before, its "self time" was the time of the plan's frontier below it).
bool self_time_known(ws::Database &db, const std::set<FunctionId> &plan, FunctionId f) {
  for (auto c : ws::defined_callees(db, f))
    if (!plan.count(c))
      return false;
  return true;
}

std::set<FunctionId> plan_set(ws::Database &db, int iteration) {
  std::set<FunctionId> out;
  for (const auto &r : ws::read_plan(db, iteration))
    out.insert(r.function);
  return out;
}

// The function a place keeps in the plan: its own, or the one that calls or waits.
FunctionId place_function(const ws::PlaceRow &p) {
  return p.kind == ws::PlaceKind::Function ? p.function : p.holder;
}

// A function's name for a refusal (its id when the workspace has no row for it).
std::string name_of(ws::Database &db, FunctionId f) {
  auto row = ws::function_row(db, f);
  return row ? row->name : std::to_string(f);
}

// What the final plan leaves out for its cost: `name` (f, or calls in f) whose probes would
// write `records` per interval.
Refusal over_budget(FunctionId f, std::string name, double records, const char *why) {
  Refusal r;
  r.function = f;
  r.name = std::move(name);
  r.records = records;
  r.why = why;
  return r;
}

// A chain function's calls of one callee left untimed: together their probes cost `records`
// per interval, more than the whole final budget.
Refusal hot_calls(FunctionId f, std::string name, double records) {
  return over_budget(f, std::move(name), records, "its probes alone would pass the final budget");
}

// The call sites a final plan times: of the outside and dispatching calls, those whose
// place carried the threshold in any run (an outside call's place covers every call of that
// callee in the function). The others cost records in every interval and explain nothing.
// Each with the name of the place that carried (the first run's that did).
std::map<ws::SiteId, std::string> timed_sites(ws::Database &db, const std::vector<ws::RunRow> &runs,
                                              double threshold) {
  std::map<ws::SiteId, std::string> out; // site -> the name of the place that carried
  for (const auto &run : runs) {
    std::vector<ws::NodeRow> tree;
    for (const auto &p : ws::places_of(db, run.id)) {
      if (!carries(p, threshold) ||
          (p.kind != ws::PlaceKind::Call && p.kind != ws::PlaceKind::Site))
        continue;
      if (tree.empty())
        tree = ws::tree_of(db, run.id);
      if (p.node < 0 || p.node >= static_cast<int>(tree.size()) || !tree[p.node].site)
        continue;
      if (p.kind == ws::PlaceKind::Call)
        for (ws::SiteId s : ws::sites_calling_alike(db, tree[p.node].site))
          out.emplace(s, p.name);
      else
        out.emplace(tree[p.node].site, p.name);
    }
  }
  return out;
}

// Prices functions from the newest run whose plan held them, in their final form.
class Prices {
public:
  Prices(ws::Database &db, const std::vector<ws::RunRow> &runs, std::set<ws::SiteId> timed)
      : db_(db), timed_(std::move(timed)) {
    for (auto it = runs.rbegin(); it != runs.rend(); ++it)
      runs_.push_back(*it);
  }
  double final_records(FunctionId f) {
    const double added = added_.count(f) ? added_[f] : 0;
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      const CostModel &m = model(i);
      if (m.measured(f))
        return m.final_records(f, timed_) + added;
    }
    return (runs_.empty() ? 2 : model(0).predict_records(f)) + added;
  }
  // The records per interval of a probe on a call site in f no run measured: two per call of
  // f (its calls from the newest run that saw it, its body probe or a probed call of it; one
  // when none did), loop_trips() times that inside a loop.
  double unmeasured_site_records(FunctionId f, bool in_loop) {
    double calls = 1, trips = runs_.empty() ? 1 : model(0).loop_trips();
    for (std::size_t i = 0; i < runs_.size(); ++i)
      if (double n = model(i).calls(f); n >= 0) {
        calls = n;
        break;
      }
    return 2 * calls * (in_loop ? trips : 1);
  }
  // Times a call site no run measured, at `records` per interval in f's final form.
  void time_unmeasured(FunctionId f, ws::SiteId site, double records) {
    timed_.insert(site);
    added_[f] += records;
  }
  // A timed call site's records per interval, from the newest run that measured f.
  double site_records(FunctionId f, ws::SiteId site) {
    for (std::size_t i = 0; i < runs_.size(); ++i)
      if (model(i).measured(f))
        return model(i).final_site_records(f, site);
    return 0;
  }
  const std::set<ws::SiteId> &timed() const { return timed_; }
  void untime(ws::SiteId site) { timed_.erase(site); }

private:
  const CostModel &model(std::size_t i) {
    if (!models_[i]) {
      auto plan = ws::read_plan(db_, runs_[i].iteration);
      models_[i] = std::make_unique<CostModel>(db_, runs_[i], plan);
    }
    return *models_[i];
  }
  ws::Database &db_;
  std::set<ws::SiteId> timed_;
  std::map<FunctionId, double> added_; // records of timed sites no run measured
  std::vector<ws::RunRow> runs_;       // newest first
  std::map<std::size_t, std::unique_ptr<CostModel>> models_;
};

// The answer's chain's calls too hot for a final plan: per chain function, the timed calls
// of one callee (one outside call's place covers them all) whose probes together cost more
// than the whole final budget. Untimed, so that the final run does not lengthen what it
// measures — a library call in a 10,000-key loop under a lock; their time stays in their
// caller's own, which the chain keeps.
std::vector<Refusal> untime_hot_chain_calls(ws::Database &db, const std::vector<FunctionId> &chain,
                                            const std::map<ws::SiteId, std::string> &named,
                                            double budget, Prices &prices) {
  std::vector<Refusal> out;
  for (FunctionId f : chain)
    for (const auto &site : ws::sites_of(db, f)) {
      if (site.body || !prices.timed().count(site.id))
        continue;
      std::vector<ws::SiteId> alike;
      double records = 0;
      for (ws::SiteId s : ws::sites_calling_alike(db, site.id))
        if (prices.timed().count(s)) {
          alike.push_back(s);
          records += prices.site_records(f, s);
        }
      if (records <= budget)
        continue;
      for (ws::SiteId s : alike)
        prices.untime(s);
      auto it = named.find(site.id);
      out.push_back(hot_calls(
          f, it != named.end() ? it->second : "call site " + std::to_string(site.id), records));
    }
  return out;
}

// Whether a run timed any of the call sites `outside` (ENTERs at one of them).
bool any_site_ran(ws::Database &db, const ws::RunRow &run, const std::set<ws::SiteId> &outside) {
  if (outside.empty())
    return false;
  for (const auto &c : ws::site_calls_of(db, run.id))
    if (c.calls > 0 && outside.count(c.site))
      return true;
  return false;
}

// Whether a wait in f's own code carried the threshold in a run that timed none of f's
// outside calls: a wait place held by f (in its body, or below an untimed call of it), which
// a timed call could hold. A run that timed them and still saw the wait in f's code (a
// system call made inline) says timing them again would not.
bool waits_in_own_code(ws::Database &db, const std::vector<ws::RunRow> &runs, FunctionId f,
                       double threshold) {
  std::set<ws::SiteId> outside; // f's calls of outside functions the rewriter made sites of
  for (const auto &s : ws::sites_of(db, f))
    if (!s.body && !s.callee_defined)
      outside.insert(s.id);
  for (const auto &run : runs) {
    bool carried = false;
    for (const auto &p : ws::places_of(db, run.id))
      carried =
          carried || (p.kind == ws::PlaceKind::Wait && p.holder == f && carries(p, threshold));
    if (carried && !any_site_ran(db, run, outside))
      return true;
  }
  return false;
}

// The answer's function waited in its own code: its calls of outside functions are timed, so
// that the call which made the wait holds it. A kernel wait in a timed outside call is that
// call's time, its pseudo-waker's and its wake-up delay included (analyzer: places.cpp), one
// place where the kernel's events split it in three otherwise (PostgreSQL without latch
// marks: `[io] block device in pg_fdatasync` 24.8 %, the wake-up delay after it 23.9 %,
// `pg_fdatasync` 15.4 %, for one `fdatasync()`). No run timed them (the plans that held the
// function were final, or it was only timed at its call site), so they are priced from its
// calls; a callee whose calls alone cost more than the final budget stays untimed, as the
// chain's hot calls do. Returns the number of call sites timed.
std::size_t time_calls_that_wait(ws::Database &db, FunctionId f, double budget, Prices &prices,
                                 std::vector<Refusal> &untimed) {
  std::map<std::string, std::vector<std::pair<ws::SiteId, double>>> by_callee;
  for (const auto &c : ws::outside_call_sites(db, f))
    if (!prices.timed().count(c.site))
      by_callee[c.callee_name].push_back({c.site, prices.unmeasured_site_records(f, c.in_loop)});
  std::size_t timed = 0;
  for (const auto &[callee, sites] : by_callee) {
    double records = 0;
    for (const auto &[site, r] : sites)
      records += r;
    if (records > budget) {
      untimed.push_back(hot_calls(f, callee + "() in " + name_of(db, f), records));
      continue;
    }
    for (const auto &[site, r] : sites)
      prices.time_unmeasured(f, site, r);
    timed += sites.size();
  }
  return timed;
}

// One run's answer: its best-ranked place that may answer, its function and the functions
// above the place's heaviest context in that run (nearest first).
struct RunAnswer {
  int iteration = -1;
  ws::PlaceRow place;
  FunctionId function = 0;
  std::vector<FunctionId> above;
};

std::optional<RunAnswer> run_answer(ws::Database &db, const ws::RunRow &run, const RunView &view,
                                    double answer_share) {
  for (const auto &p : ws::places_of(db, run.id)) {
    // a wait is answered by the work behind it — but the disk's, the network's or a timer's
    // time (a kernel wait's pseudo-waker) names no code but the function that waited, which
    // answers for it (PostgreSQL without latch marks, iteration 4: `[io] block device in
    // pg_fdatasync` 87.7 %, `pg_fdatasync`'s own place 2.4 %); time outside every probed
    // function names no code (the upward expansion probes its outer frames)
    if ((p.kind == ws::PlaceKind::Wait && !p.outside_waker) || p.kind == ws::PlaceKind::Outside ||
        p.contribution < answer_share)
      continue;
    RunAnswer a;
    a.iteration = run.iteration;
    a.place = p;
    a.function = place_function(p);
    for (FunctionId f : chain_path(view, p.node))
      if (f != a.function)
        a.above.push_back(f);
    return a;
  }
  return std::nullopt;
}

// What the runs observed above a function: the union of its nodes' chains, and the longest
// of them (nearest first), so that a final plan that left the functions above an answer
// unprobed still places it below them.
struct Above {
  std::set<FunctionId> all;
  std::vector<FunctionId> longest;
};
Above observed_above(const std::vector<RunView> &views, FunctionId f) {
  Above out;
  if (!f)
    return out;
  for (const auto &view : views)
    for (std::size_t n = 0; n < view.tree.size(); ++n) {
      if (view.tree[n].function != f)
        continue;
      auto path = chain_path(view, static_cast<int>(n));
      path.erase(std::remove(path.begin(), path.end(), f), path.end());
      out.all.insert(path.begin(), path.end());
      if (path.size() > out.longest.size())
        out.longest = std::move(path);
    }
  return out;
}

// Whether a function is the program's own, with a body a probe can time.
bool probeable(ws::Database &db, FunctionId f) {
  auto row = ws::function_row(db, f);
  return row && row->defined && row->body;
}

} // namespace

// The answer of the analysed iterations, one rule for all of them: each run's answer is its
// best-ranked place (not a wait, not the time outside probed functions) carrying
// `answer_share`; of two such answers, one whose observed chain runs through the other's
// function lies below it and is the deeper (a later iteration split the other's time into
// its callees); on separate branches the larger contribution. A function's chain is what any
// run observed above it: a final plan that left the functions above the answer unprobed still
// places it below them. Static call-graph heights are not used: recursion through error paths,
// logging and callbacks gives most of a real program one height (docs/planner.md, "The final
// plan").
Answer deepest_answer(ws::Database &db, int iteration, double answer_share) {
  std::vector<RunAnswer> answers;
  std::vector<RunView> views;
  for (const auto &run : ws::latest_runs_upto(db, iteration)) {
    RunView view = run_view(db, run);
    if (auto a = run_answer(db, run, view, answer_share)) {
      answers.push_back(std::move(*a));
      views.push_back(std::move(view));
    }
  }
  std::map<FunctionId, Above> above_of;
  for (const auto &a : answers)
    if (!above_of.count(a.function))
      above_of[a.function] = observed_above(views, a.function);
  Answer best;
  std::set<FunctionId> best_chain; // every function from the root down to it
  for (const auto &a : answers) {
    const FunctionId f = a.function;
    std::set<FunctionId> chain = above_of[f].all;
    if (f)
      chain.insert(f);
    const bool below = best.function && chain.count(best.function) && f != best.function;
    const bool above = f && best_chain.count(f) && f != best.function;
    const bool deeper =
        best.iteration < 0 || below || (!above && a.place.contribution > best.contribution);
    if (!deeper)
      continue;
    best_chain = std::move(chain);
    best.iteration = a.iteration;
    best.key = a.place.key;
    best.name = a.place.name;
    best.contribution = a.place.contribution;
    best.function = f;
  }
  if (best.iteration < 0)
    return best;
  for (auto c : best_chain)
    if (probeable(db, c))
      best.chain.push_back(c); // a std::set's order: sorted, unique
  // the path above the heaviest context of the answering runs, the longest of them; a
  // function only a flattened final run answered takes the longest any run observed
  std::vector<FunctionId> path;
  for (const auto &a : answers)
    if (a.function == best.function && a.above.size() > path.size())
      path = a.above;
  if (path.empty())
    path = above_of[best.function].longest;
  for (auto c : path)
    if (probeable(db, c))
      best.above.push_back(c);
  if (!probeable(db, best.function))
    best.function = 0;
  return best;
}

FinalResult final_plan(ws::Database &db, int iteration, const FinalOptions &opt) {
  FinalResult fr;
  fr.next_iteration = iteration + 1;
  require_run(db, iteration);
  const auto runs = ws::latest_runs_upto(db, iteration);
  const std::map<ws::SiteId, std::string> named = timed_sites(db, runs, opt.threshold);
  std::set<ws::SiteId> carried;
  for (const auto &[site, name] : named)
    carried.insert(site);
  Prices prices(db, runs, carried);
  fr.budget_records =
      budget_records(db, iteration, opt.budget, opt.budget.final_share, Basis::Capacity);
  fr.answer = deepest_answer(db, iteration, opt.answer_share);
  fr.untimed_calls = untime_hot_chain_calls(db, fr.answer.chain, named, fr.budget_records, prices);
  if (fr.answer.function && waits_in_own_code(db, runs, fr.answer.function, opt.threshold))
    fr.wait_calls =
        time_calls_that_wait(db, fr.answer.function, fr.budget_records, prices, fr.untimed_calls);
  const std::set<ws::SiteId> &timed = prices.timed();

  // What must stay: the answer's function, whatever it costs. Then, within the final budget,
  // the functions above it (the nearest first, up to the first that does not fit: the chain
  // kept is contiguous) and the annotated functions: a final plan measures the answer, and
  // on an event loop every probe of a root or a dispatcher is paid by every command.
  std::map<FunctionId, ws::PlanRow> rows;
  auto keep = [&](FunctionId f, ws::PlanReason reason, const std::string &factor) {
    if (rows.count(f))
      return false;
    ws::PlanRow r;
    r.function = f;
    r.reason = reason;
    r.factor = factor;
    r.final = true;
    rows[f] = r;
    fr.predicted_records += prices.final_records(f);
    return true;
  };
  auto fits = [&](FunctionId f) {
    return rows.count(f) || fr.predicted_records + prices.final_records(f) <= fr.budget_records;
  };
  auto left_out = [&](FunctionId f) {
    fr.left_out.push_back(over_budget(f, name_of(db, f), prices.final_records(f),
                                      "its probes would pass the final budget"));
  };
  std::map<FunctionId, ws::PlanRow> current;
  for (const auto &r : ws::read_plan(db, iteration))
    current[r.function] = r;
  auto reason_of = [&](FunctionId f, ws::PlanReason otherwise) {
    return current.count(f) ? current[f].reason : otherwise;
  };
  if (fr.answer.function) {
    keep(fr.answer.function, reason_of(fr.answer.function, ws::PlanReason::Answer), fr.answer.key);
    fr.chain_kept = 1;
    bool contiguous = true;
    for (auto f : fr.answer.above) {
      contiguous = contiguous && fits(f);
      if (!contiguous) {
        left_out(f);
        continue;
      }
      keep(f, reason_of(f, ws::PlanReason::Answer), fr.answer.key);
      ++fr.chain_kept;
    }
  }
  auto is_left_out = [&](FunctionId f) {
    return std::any_of(fr.left_out.begin(), fr.left_out.end(),
                       [f](const Refusal &r) { return r.function == f; });
  };
  for (auto f : ws::annotated_functions(db)) {
    if (is_left_out(f))
      continue; // above a gap in the chain
    if (fits(f))
      keep(f, reason_of(f, ws::PlanReason::Root), "");
    else
      left_out(f);
  }
  // the hot calls of a chain function the plan left out are nobody's concern
  std::erase_if(fr.untimed_calls, [&](const Refusal &r) { return !rows.count(r.function); });

  // Then what carried variance in any iteration, largest first, while the budget allows.
  // A run where one outlier dominates Var(L) must not drop what the others showed.
  std::map<FunctionId, std::pair<double, std::string>> wanted; // value, place key
  for (const auto &run : runs) {
    std::set<FunctionId> plan = plan_set(db, run.iteration);
    for (const auto &p : ws::places_of(db, run.id)) {
      if (!carries(p, opt.threshold))
        continue;
      FunctionId f = place_function(p);
      if (!f || !current.count(f))
        continue;
      if (p.kind == ws::PlaceKind::Function && run.iteration != iteration &&
          !self_time_known(db, plan, f))
        continue;
      double v = std::max(std::abs(p.contribution), std::abs(p.share));
      if (v > wanted[f].first)
        wanted[f] = {v, p.key};
    }
  }
  std::vector<std::pair<double, FunctionId>> order;
  for (const auto &[f, w] : wanted)
    order.push_back({w.first, f});
  std::sort(order.rbegin(), order.rend());
  for (const auto &[v, f] : order) {
    if (rows.count(f))
      continue;
    double cost = prices.final_records(f);
    if (fr.predicted_records + cost > fr.budget_records) {
      fr.dropped_for_cost.push_back(
          over_budget(f, name_of(db, f), cost, "its probes would pass the final budget"));
      continue;
    }
    keep(f, current[f].reason, current[f].factor);
    // its own variance keeps it, gap or not
    std::erase_if(fr.left_out, [f](const Refusal &r) { return r.function == f; });
  }

  for (const auto &[f, r] : current)
    fr.dropped += rows.count(f) ? 0 : 1;
  fr.kept = rows.size();
  // the same functions as the last plan, no call of the chain untimed: nothing to measure
  // again
  bool same = rows.size() == current.size() && fr.untimed_calls.empty() && fr.wait_calls == 0;
  for (const auto &[f, r] : rows)
    same = same && current.count(f);
  if (same)
    return fr;
  std::vector<ws::PlanRow> out;
  std::vector<ws::SiteId> sites;
  for (auto &[f, r] : rows) {
    for (const auto &site : ws::sites_of(db, f))
      if (timed.count(site.id))
        sites.push_back(site.id);
    out.push_back(std::move(r));
  }
  ws::write_plan(db, iteration + 1, out);
  ws::write_final_sites(db, iteration + 1, sites);
  fr.timed_sites = sites.size();
  fr.written = true;
  return fr;
}

} // namespace vprof::planner
