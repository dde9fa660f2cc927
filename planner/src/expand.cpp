// Expansion: the next plan from the top-k factors of the last run, within the exploration
// budget (docs/planner.md, "Expansion").
#include "expand_room.hpp"
#include "plan_common.hpp"
#include "vprof/planner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <unordered_map>

namespace vprof::planner {
using namespace room;
namespace {

// The functions that release what a wait of this kind waits for: the static waker
// candidates, used when the trace shows no instrumented frame of the waker.
std::vector<FunctionId> wakers_of_kind(ws::Database &db, const std::string &wait_kind) {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> primitives = {
      {"mutex", {"pthread_mutex_unlock"}},
      {"rwlock", {"pthread_rwlock_unlock"}},
      {"cond", {"pthread_cond_signal", "pthread_cond_broadcast"}},
      {"sem", {"sem_post"}},
      {"custom", {"vprof_wake"}}};
  // Kernel waits (docs/analyzer.md, "Kernel waits"): the calls that end them, as glob
  // patterns of the callee's qualified name (a futex is woken by a promise's set_value, a
  // semaphore's release, an atomic's notify, or a raw futex syscall; a pipe, socket or
  // eventfd read by a write or send to it).
  static const std::vector<std::pair<std::string, std::vector<std::string>>> kernel = {
      {"futex",
       {"*::set_value", "*::set_value_at_thread_exit", "*::set_exception", "*::notify_one",
        "*::notify_all", "*semaphore*::release", "*latch::count_down", "*barrier*::arrive*",
        "syscall", "*futex_wake*"}},
      {"read", {"write", "writev", "send", "sendto", "sendmsg", "eventfd_write"}},
      {"poll", {"write", "writev", "send", "sendto", "sendmsg", "eventfd_write"}},
      {"write", {"read", "readv", "recv", "recvfrom", "recvmsg"}},
      {"child", {"exit", "_exit"}}};
  std::vector<FunctionId> fs;
  for (const auto &[kind, names] : primitives)
    if (kind == wait_kind)
      for (const auto &name : names)
        for (auto f : ws::defined_callers_of(db, name))
          fs.push_back(f);
  for (const auto &[kind, patterns] : kernel)
    if (kind == wait_kind)
      for (const auto &pattern : patterns)
        for (auto f : ws::defined_callers_matching(db, pattern))
          fs.push_back(f);
  return fs;
}

class Expansion {
public:
  // `seen`: the functions already taken, shared by the expansions of every group
  Expansion(ws::Database &db, const RunView &view, const CostModel &cost,
            const std::set<FunctionId> &plan, std::set<FunctionId> &seen)
      : db_(db), view_(view), cost_(cost), plan_(plan), seen_(seen) {}

  // The candidates of one factor side: a node of the run's tree, its body or its whole time.
  void add_side(int node, bool body, const std::string &key) {
    if (node < 0 || node >= static_cast<int>(view_.tree.size()))
      return;
    const ws::NodeRow &n = view_.tree[static_cast<std::size_t>(node)];
    switch (n.kind) {
    case ws::NodeKind::Root:
      if (body)
        for (auto r : ws::annotated_functions(db_))
          add_function(r, key);
      break;
    case ws::NodeKind::Wait:
      add_waker(node, key);
      break;
    case ws::NodeKind::Site:
      if (body)
        break;
      if (n.function)
        add_function(n.function, key);
      // every function the call may reach: virtual overrides, indirect-call candidates
      add_dispatch_targets(n.site, key);
      // a call that blocked (pthread_cond_wait, a lock call) has wait children: the time
      // is the waker's, so expand into it
      for (int c : view_.children[static_cast<std::size_t>(node)])
        if (view_.tree[static_cast<std::size_t>(c)].kind == ws::NodeKind::Wait)
          add_waker(c, key);
      break;
    case ws::NodeKind::Untracked:
      break;
    }
  }

  // The candidates of a place: a function's callees, a wait's waker, a dispatching site's
  // targets; a call of an outside function is a leaf.
  void add_place(const ws::PlaceRow &p) {
    switch (p.kind) {
    case ws::PlaceKind::Function:
      add_function(p.function, p.key);
      break;
    case ws::PlaceKind::Wait:
      if (p.node >= 0)
        add_waker(p.node, p.key);
      break;
    case ws::PlaceKind::Site:
      if (p.node >= 0 && p.node < static_cast<int>(view_.tree.size()))
        add_dispatch_targets(view_.tree[static_cast<std::size_t>(p.node)].site, p.key);
      break;
    case ws::PlaceKind::Call:
    case ws::PlaceKind::Outside: // expands upward, as its own source (add_outer)
      break;
    }
  }

  // The outer frames above `starts` (docs/planner.md, "Upward expansion"), in their order:
  // the common ancestors, the chains down to the starts, then their callees.
  void add_outer(const std::vector<FunctionId> &starts, int depth, const std::string &key) {
    const OuterFrames of = outer_frames(db_, starts, depth);
    for (const auto *fs : {&of.ancestors, &of.chains, &of.callees})
      for (FunctionId f : *fs)
        push(f, key, ws::PlanReason::Outer);
  }

  std::vector<Candidate> take() { return std::move(out_); }
  std::size_t size() const { return out_.size(); }

private:
  void push(FunctionId f, const std::string &key, ws::PlanReason reason = ws::PlanReason::Expand) {
    if (f > 0 && plan_.count(f) && cost_.body_only(f) && reason == ws::PlanReason::Expand)
      return push_upgrade(f, key);
    if (f <= 0 || plan_.count(f) || seen_.count(f))
      return;
    auto row = ws::function_row(db_, f);
    if (!row || !row->defined || !row->body) // `= default`: nothing to probe
      return;
    seen_.insert(f);
    auto cp = view_.critical_ns.find(f);
    out_.push_back({f, key, cp == view_.critical_ns.end() ? 0 : cp->second, row->height, reason});
  }

  // A function planned for its body alone whose place is expanded: its call sites join (its
  // callees join as candidates of their own beside it).
  void push_upgrade(FunctionId f, const std::string &key) {
    if (seen_.count(f))
      return;
    seen_.insert(f);
    auto row = ws::function_row(db_, f);
    auto cp = view_.critical_ns.find(f);
    out_.push_back({f, key, cp == view_.critical_ns.end() ? 0 : cp->second, row ? row->height : -1,
                    ws::PlanReason::Expand, true});
  }

  // The function and its callees. The callees of a function whose body probe ran were
  // timed at their call sites: only those that ran on the critical path are worth a body
  // probe. A function without probes inside: all its callees are candidates.
  void add_function(FunctionId f, const std::string &key) {
    push(f, key);
    std::set<FunctionId> probed; // callees of f whose call sites were probed in the run
    if (cost_.calls_probed(f))
      for (const auto &s : ws::sites_of(db_, f))
        if (!s.body)
          for (const auto &t : ws::call_targets(db_, s.id))
            probed.insert(t.function);
    for (auto g : ws::defined_callees(db_, f))
      if (!probed.count(g) || view_.critical_ns.count(g))
        push(g, key);
  }

  // A dispatching call (virtual, or indirect through a pointer matched by type) adds its
  // targets: those seen on the critical path first (they sort first by critical time), the
  // others priced at their share of the call's count, so that the budget admits the many
  // cheap ones and refuses the rest.
  void add_dispatch_targets(ws::SiteId site, const std::string &key) {
    for (const auto &t : ws::call_targets(db_, site))
      add_function(t.function, key);
  }

  // The waker's work is the whole subtree below a wait node: its top frames are usually
  // planned already (the worker loop), the holder's real work sits deeper. Nested waits
  // are not entered: their own factors expand them.
  void add_waker(int wait_node, const std::string &key) {
    std::vector<FunctionId> fs;
    std::vector<int> frontier{wait_node};
    while (!frontier.empty()) {
      int n = frontier.back();
      frontier.pop_back();
      for (int c : view_.children[static_cast<std::size_t>(n)]) {
        const auto &cn = view_.tree[static_cast<std::size_t>(c)];
        if (cn.kind == ws::NodeKind::Wait)
          continue;
        if (cn.function)
          fs.push_back(cn.function);
        frontier.push_back(c);
      }
    }
    if (fs.empty()) {
      // No frame of the waker is instrumented: start from the functions that call the
      // waking primitive of this wait's kind (pthread_cond_signal for a condition wait...).
      const std::string &path = view_.tree[static_cast<std::size_t>(wait_node)].path;
      auto at = path.rfind("/wait:");
      if (at != std::string::npos)
        fs = wakers_of_kind(db_, path.substr(at + 6));
    }
    for (auto f : fs)
      add_function(f, key);
  }

  ws::Database &db_;
  const RunView &view_;
  const CostModel &cost_;
  const std::set<FunctionId> &plan_;
  std::set<FunctionId> &seen_;
  std::vector<Candidate> out_;
};

// The functions an upward expansion starts from: the outermost probed frames the run saw on
// the intervals' own path (the root's site children: where intervals begin and end as far
// as the probes show), else the annotated functions.
std::vector<FunctionId> outer_starts(ws::Database &db, const RunView &view) {
  std::set<FunctionId> out;
  if (!view.tree.empty())
    for (int c : view.children[0])
      if (const auto &n = view.tree[static_cast<std::size_t>(c)];
          n.kind == ws::NodeKind::Site && n.function)
        out.insert(n.function);
  if (out.empty())
    for (auto f : ws::annotated_functions(db))
      out.insert(f);
  return {out.begin(), out.end()};
}

// The k best-ranked places (of `places`, in rank order) that carry at least `share` of
// Var(L), waits included.
std::vector<ws::PlaceRow> top_places(const std::vector<ws::PlaceRow> &places, int k, double share) {
  std::vector<ws::PlaceRow> out;
  for (const auto &p : places) {
    if (static_cast<int>(out.size()) == k)
      break;
    if (p.contribution >= share)
      out.push_back(p);
  }
  return out;
}

// The keys the stopping rule compares: the top-k factors' and the top-k places' of each
// group the loop expands on (a label's keys prefixed by it).
std::set<std::string> top_keys(ws::Database &db, ws::RunId run,
                               const std::vector<std::string> &groups, int k, double share) {
  std::set<std::string> keys;
  for (const auto &label : groups) {
    const std::string prefix = label.empty() ? "" : label + "|";
    for (const auto &f : ws::top_factors(db, run, k, label))
      keys.insert(prefix + f.key);
    for (const auto &p : top_places(ws::places_of(db, run, label), k, share))
      keys.insert(prefix + p.key);
  }
  return keys;
}

// The stopping rule on the ranking: the same top-k factors and places (`now`, of `run`) as
// the previous iteration's run, neither run having dropped records (a run with drops saw
// only the start of some threads).
bool top_k_unchanged(ws::Database &db, const ws::RunRow &run, int iteration, int k, double share,
                     const std::vector<std::string> &groups, const std::set<std::string> &now) {
  if (iteration == 0 || run.dropped > 0 || now.empty())
    return false;
  auto prev = ws::latest_run(db, iteration - 1);
  if (!prev || prev->dropped > 0)
    return false;
  return now == top_keys(db, prev->id, groups, k, share);
}

// How far predictions fall short: probes inside a newly planned function run once per call
// in the prediction, loops make it more. The larger of two measures: the prediction made
// for this iteration's plan against the run ((measured − kept) / added), and the rule
// applied to the functions this run measured; clamped to [1, 20]: an overestimate is the
// safe side (PostgreSQL's executor nodes loop over tuples: 2.4 times the prediction).
double calibration(ws::Database &db, int iteration, const CostModel &cost, double measured,
                   double max_calibration) {
  auto pc = ws::plan_cost(db, iteration);
  // Before any prediction was checked: at least 2 (PostgreSQL's first expansions fell short
  // 2.0 to 2.2 times).
  double shortfall =
      pc && pc->added_records > 0 ? (measured - pc->kept_records) / pc->added_records : 2;
  return std::clamp(std::max(shortfall, cost.self_calibration()), 1.0,
                    std::max(1.0, max_calibration));
}

// True for a declaration in the system's headers: a library's function, defined in no unit
// of the program.
bool in_system_headers(const std::string &file) {
  for (const char *dir : {"/usr/include/", "/usr/lib/", "/usr/local/include/"})
    if (file.starts_with(dir))
      return true;
  return false;
}

// The skipped units most likely to define a function declared in `decl_file`: those whose
// file name without its extension is the declaring header's (foo.h, foo.cc); all of them
// when none is.
std::vector<ws::SkippedUnitRow> likely_definers(const std::vector<ws::SkippedUnitRow> &skipped,
                                                const std::string &decl_file) {
  std::vector<ws::SkippedUnitRow> out;
  const auto stem = std::filesystem::path(decl_file).stem();
  for (const auto &u : skipped)
    if (std::filesystem::path(u.file).stem() == stem)
      out.push_back(u);
  return out.empty() ? skipped : out;
}

// The stop of a loop that cannot go below a top place (docs/instrumenter.md, "A unit that
// crashes"): the place calls a program function that no scanned unit defines, and the scan
// skipped units, one of which may define it. Names the place and the skipped units ("" when
// no top place is such a call, or no unit was skipped).
std::string unscanned_stop(ws::Database &db, const ws::RunRow &run,
                           const std::vector<std::string> &groups, int k, double share) {
  const std::vector<ws::SkippedUnitRow> skipped = ws::skipped_units(db);
  if (skipped.empty())
    return "";
  for (const auto &label : groups) {
    const std::vector<ws::NodeRow> tree = ws::tree_of(db, run.id, label);
    for (const auto &p : top_places(ws::places_of(db, run.id, label), k, share)) {
      if (p.kind != ws::PlaceKind::Call || p.node < 0 || p.node >= static_cast<int>(tree.size()))
        continue;
      const auto callee = ws::function_row(db, tree[static_cast<std::size_t>(p.node)].function);
      if (!callee || callee->defined || in_system_headers(callee->file))
        continue;
      const auto units = likely_definers(skipped, callee->file);
      std::string names;
      for (std::size_t i = 0; i < units.size() && i < 3; ++i)
        names += (i ? "; " : "") + units[i].file + " (" + units[i].reason + ")";
      if (units.size() > 3)
        names += "; and " + std::to_string(units.size() - 3) + " more";
      return "the top place " + p.name + " is a call of " + callee->name + ", declared in " +
             callee->file + " but defined in no scanned translation unit; the scan skipped " +
             std::to_string(units.size()) + " unit(s) that may define it: " + names +
             ". Fix them (or report the crash) and run `vprof init` again to go below it "
             "(.vprof/skipped-units.txt lists every skipped unit)";
    }
  }
  return "";
}

} // namespace

std::vector<std::string> loop_groups(ws::Database &db, const ws::RunRow &run,
                                     const std::string &label,
                                     const std::vector<std::string> &exclude) {
  if (label.empty() && exclude.empty())
    return {""};
  const std::vector<std::string> labels = ws::labels_of(db, run.id);
  auto known = [&](const std::string &l) {
    return std::find(labels.begin(), labels.end(), l) != labels.end();
  };
  std::string names;
  for (const auto &l : labels)
    names += (names.empty() ? "" : ", ") + ("\"" + l + "\"");
  if (names.empty())
    names = "none: no interval carries a label (VPROF_INTERVAL_LABEL)";
  auto unknown = [&](const std::string &key, const std::string &l) {
    return PlanError(key + " = \"" + l + "\": no interval of iteration " +
                     std::to_string(run.iteration) + "'s run carries it (labels with a group of " +
                     "their own, at least two intervals: " + names + ")");
  };
  if (!label.empty()) {
    if (!known(label))
      throw unknown("label", label);
    return {label};
  }
  for (const auto &l : exclude)
    if (!known(l))
      throw unknown("exclude_labels", l);
  std::vector<std::string> out;
  for (const auto &l : labels)
    if (std::find(exclude.begin(), exclude.end(), l) == exclude.end())
      out.push_back(l);
  if (out.empty())
    throw PlanError("exclude_labels leaves no interval type of iteration " +
                    std::to_string(run.iteration) + "'s run to expand on (labels: " + names + ")");
  return out;
}

ExpandResult expand(ws::Database &db, int iteration, const ExpandOptions &opt) {
  ExpandResult er;
  er.next_iteration = opt.write_iteration >= 0 ? opt.write_iteration : iteration + 1;
  ws::RunRow run = require_run(db, iteration);
  const int k = std::max(1, opt.k);
  const std::vector<std::string> groups = loop_groups(db, run, opt.label, opt.exclude_labels);
  const std::set<std::string> keys = top_keys(db, run.id, groups, k, opt.keep_share);
  er.top_keys.assign(keys.begin(), keys.end());
  if (std::string why = unscanned_stop(db, run, groups, k, opt.keep_share); !why.empty()) {
    er.stop = true;
    er.reason = std::move(why);
    return er;
  }
  if (!opt.resume && top_k_unchanged(db, run, iteration, k, opt.keep_share, groups, keys)) {
    er.stop = true;
    er.reason = "top-k unchanged";
    return er;
  }
  if (er.next_iteration >= opt.max_iterations) {
    er.stop = true;
    er.reason = "iteration budget reached";
    return er;
  }
  std::vector<ws::PlanRow> plan = ws::read_plan(db, iteration);
  std::set<FunctionId> planned;
  for (const auto &r : plan)
    planned.insert(r.function);
  CostModel cost(db, run, plan);

  // Candidates, source by source: the k best-ranked factors and the k best-ranked places
  // that still have something to add (a high-level function that stays on top gives its
  // place to the next), looking at most 4k ranks deep; within a source, what took longest
  // on the critical path first. Factors are VProfiler's rule; places add what the factors
  // miss when nested frames of one chain fill the top ranks with the same time. Each group
  // the loop expands on (all intervals, the `label`'s, or every label but the excluded
  // ones) gives its own sources.
  std::vector<Group> by_group;
  for (const auto &label : groups)
    by_group.push_back({label, ws::places_of(db, run.id, label), run_view(db, run, label), {}});
  std::set<FunctionId> seen;
  std::vector<std::vector<Candidate>> per_factor;
  Lead lead; // the source carrying the most, whose first candidate may take others' room
  // Those seen on the critical path first, by their time there; then the unseen ones with
  // the most code below them (the callee that can hold a hot function's time: PostgreSQL's
  // CommitTransaction, not the leaf BlockStateAsString beside it).
  auto took = [&](std::vector<Candidate> got) {
    std::stable_sort(got.begin(), got.end(), [](const Candidate &x, const Candidate &y) {
      if (x.critical_ns != y.critical_ns)
        return x.critical_ns > y.critical_ns;
      return x.height > y.height;
    });
    per_factor.push_back(std::move(got));
  };
  for (Group &g : by_group) {
    Expansion ex(db, g.view, cost, planned, seen);
    // Upward first: when the intervals' own time outside every probed function carries
    // outer_share of Var(L), the frames above the roots hold it (an event loop's work
    // between a command's processing and its reply). In their order, not sorted: the
    // ancestor first.
    for (const auto &p : g.places)
      if (p.kind == ws::PlaceKind::Outside && p.contribution >= opt.outer_share) {
        lead.consider(p, g.label);
        ex.add_outer(outer_starts(db, g.view), opt.outer_depth, p.key);
        if (ex.size())
          per_factor.push_back(ex.take());
        break;
      }
    int from_factors = 0, from_places = 0;
    for (const auto &f : ws::top_factors(db, run.id, 4 * k, g.label)) {
      if (from_factors == k)
        break;
      ex.add_side(f.a, f.a_body, f.key);
      if (f.b >= 0)
        ex.add_side(f.b, f.b_body, f.key);
      auto got = ex.take();
      if (got.empty())
        continue;
      ++from_factors;
      g.protected_nodes.insert(f.a);
      if (f.b >= 0)
        g.protected_nodes.insert(f.b);
      took(std::move(got));
    }
    for (const auto &p : top_places(g.places, 4 * k, opt.keep_share)) {
      if (from_places == k)
        break;
      lead.consider(p, g.label);
      ex.add_place(p);
      auto got = ex.take();
      if (got.empty())
        continue;
      ++from_places;
      if (p.node >= 0)
        g.protected_nodes.insert(p.node);
      took(std::move(got));
    }
  }
  // Taken in turns, one of each source, so that the first factor's many callees do not
  // spend the budget of the others.
  std::vector<Candidate> candidates;
  for (std::size_t i = 0;; ++i) {
    bool any = false;
    for (const auto &fc : per_factor)
      if (i < fc.size()) {
        candidates.push_back(fc[i]);
        any = true;
      }
    if (!any)
      break;
  }
  if (candidates.empty()) {
    er.stop = true;
    er.reason = "all top factors are leaves";
    return er;
  }

  // The budget: the exploration share of the least perturbed mean latency, capped so that
  // the longest stream stays within half the runtime's stream cap.
  // Records are counted where they delay an interval: on its critical path, path_factor()
  // times the records per interval (an event loop's interval holds its whole batch's
  // probes); against the latency, that is what a plan costs.
  const double path = cost.path_factor();
  er.budget_records =
      budget_records(db, iteration, opt.budget, opt.budget.exploration, Basis::Latency);
  er.measured_records = path * cost.records_per_interval();
  er.path_factor = path;
  if (cost.max_stream_records() > 0 && opt.budget.stream_cap_records > 0) {
    // Half the cap once a prediction has been checked against a run; a quarter before (the
    // first expansion's estimates fell short by up to 2.1 times on PostgreSQL).
    const double room = ws::plan_cost(db, iteration) ? 0.5 : 0.25;
    double cap = room * static_cast<double>(opt.budget.stream_cap_records) /
                 static_cast<double>(cost.max_stream_records()) * er.measured_records;
    er.stream_capped = cap < er.budget_records;
    er.budget_records = std::min(er.budget_records, cap);
  }
  er.calibration = calibration(db, iteration, cost, er.measured_records, opt.max_calibration);
  std::vector<Price> price_of(candidates.size());
  double wanted = 0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    price_of[i] = candidate_price(cost, candidates[i], path * er.calibration);
    wanted += price_of[i].full;
  }

  // Room: when the plan costs more than the budget, or the candidates do not fit, planned
  // functions that carry nothing (no place of theirs reaches keep_share, on no chain of a
  // place that does or of the factors being expanded) are dropped, the most expensive per
  // unit of variance first, until everything fits or nothing is left to drop.
  double predicted = er.measured_records;
  std::set<FunctionId> planned_now = planned;
  if (predicted + wanted > er.budget_records) {
    const auto order = trim_order(plan, kept_functions(db, by_group, opt.keep_share),
                                  contributions_of(by_group), cost, path);
    trim_until(order, wanted, er.budget_records, cost, path, predicted, planned_now, er.trimmed);
  }
  // Room for the lead source: when even its cheapest candidate does not fit after that (an
  // outer frame: its body probe), the planned functions whose places carry less than the
  // lead place go too (never the roots, the annotated functions or the lead's chain): it is
  // where the variance is, and a plan that cannot look there stalls on its crumbs
  // (memcached: plan 0 at three times the budget, 70 % outside probed functions, nothing
  // admitted; later a hash helper measured at 65 calls an interval, 2 % of Var(L)).
  if (const double need = cheapest_of_lead(db, candidates, price_of, lead);
      need >= 0 && predicted + need > er.budget_records) {
    const auto order = trim_order(plan, lead_keep(db, plan, by_group, lead),
                                  contributions_of(by_group), cost, path);
    const std::size_t before = er.trimmed.size();
    trim_until(order, need, er.budget_records, cost, path, predicted, planned_now, er.trimmed);
    er.trimmed_for_lead.assign(er.trimmed.begin() + static_cast<long>(before), er.trimmed.end());
    er.lead = lead.name;
    // the room is the lead's: its candidates are admitted first
    lead_first(db, lead, candidates, price_of);
  }

  // Admit candidates in order while the prediction fits; an outer frame whose calls do not
  // fit is admitted for its body probe alone when that fits.
  const double kept = predicted;
  std::vector<Admitted> additions =
      admit(db, candidates, price_of, er.budget_records, er.stream_capped, predicted, er.refused);
  er.predicted_records = predicted;
  if (additions.empty()) {
    er.stop = true;
    er.reason = budget_stop_reason(db, iteration, opt, er, kept);
    return er;
  }
  std::vector<ws::PlanRow> next = next_plan(plan, planned_now, additions, er);
  ws::write_plan(db, er.next_iteration, next);
  ws::write_plan_cost(db, {er.next_iteration, kept, predicted - kept, er.budget_records});
  er.reason = "expanded";
  return er;
}

} // namespace vprof::planner
