// vprof planner: which functions each iteration instruments. The first plan (roots and a
// depth over the static call graph), the expansion of the top-k factors within a probe
// budget, and the final plan that keeps the answer's whole chain. Plans are typed rows of
// the workspace (vprof/workspace_rows.hpp); the planner reads the call graph, analysed
// runs and their results there and writes plans, nothing else. docs/planner.md.
#pragma once

#include "vprof/workspace_rows.hpp"

#include <algorithm>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace vprof::planner {

using ws::FunctionId;

// A plan cannot be made (no root, no analysed run): the message says what to do.
class PlanError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// ---- the first plan -----------------------------------------------------------------

struct FirstPlanOptions {
  std::vector<std::string> roots; // qualified names or USRs; empty: the annotated functions
  int most_called = 0;            // >0: roots are the N defined functions with most call sites
  int depth = 0;                  // callees reached in <= depth edges are planned too
  int iteration = 0;
};
// Writes the plan of `iteration` (replacing it): the roots (reason Root) and every defined
// function within `depth` call edges (reason Depth). Returns the number of planned
// functions. Throws PlanError when a named root is unknown or no root can be found.
int first_plan(ws::Database &db, const FirstPlanOptions &opt);

// ---- the cost model -----------------------------------------------------------------

// What probes may cost, per interval, as a share of the mean interval latency.
struct Budget {
  double exploration = 0.10; // plans of the exploration iterations
  double final_share = 0.02; // the final plan
  double record_ns = 40;     // one trace record (ENTER or EXIT) all in (benchmarks/RESULTS.md)
  // The runtime's per-thread stream cap (stream_cap_mb, the workload's VPROF_MAX_THREAD_MB,
  // 16-byte records; 0: none); a plan whose predicted longest stream passes half of it is
  // refused.
  std::uint64_t stream_cap_records = (256ull << 20) / 16;
};

// The measured price of the functions of one run's plan, and predictions for functions
// not yet planned, from the run's ENTER counts per site (docs/planner.md, "Cost model").
class CostModel {
public:
  // A callee named in more functions than this is a utility: all its call sites scale its
  // calls, not only those in functions seen running (docs/planner.md, "Cost model").
  static constexpr int kUtilityCallers = 100;

  CostModel(ws::Database &db, const ws::RunRow &run, const std::vector<ws::PlanRow> &plan);

  double intervals() const { return intervals_; }
  // All records of the run per interval (sync events and marks included; drops counted).
  double records_per_interval() const { return records_; }
  // Measured records per interval of a planned function: its body probe and the call-site
  // probes in it.
  double function_records(FunctionId f) const;
  // The same in a final plan that times only the call sites in `timed` of those a final
  // plan may keep (outside and dispatching calls).
  double final_records(FunctionId f, const std::set<ws::SiteId> &timed) const;
  // The records per interval a final plan's probe of call site `site` in f costs (0: a call
  // a final plan never times, or f not measured).
  double final_site_records(FunctionId f, ws::SiteId site) const;
  // Whether f's body probe ran in the run.
  bool measured(FunctionId f) const {
    auto it = body_calls_.find(f);
    return it != body_calls_.end() && it->second > 0;
  }
  // Whether f's call sites were probed in the run (its body probe ran, and the plan did not
  // hold it for its body alone): then they timed all its callees.
  bool calls_probed(FunctionId f) const { return measured(f) && !body_only_.count(f); }
  // Whether the run's plan held f for its body probe alone (PlanRow::body_only).
  bool body_only(FunctionId f) const { return body_only_.count(f) > 0; }
  // Calls per interval of a function, from its body probe or the probed call sites that
  // name it; -1 when no probe saw it.
  double calls(FunctionId f) const;
  // Predicted records per interval if `f` joined the plan: two per call for its body, two
  // per call for each of its call sites outside loops and loop_trips() times that for each
  // call site inside a loop (the next run measures the truth).
  double predict_records(FunctionId f) const;
  // Predicted records per interval of f's body probe alone: two per call.
  double predict_body_records(FunctionId f) const;
  // How often a call site inside a loop runs per call of its function, from the functions
  // this run measured (4 when none of them has one; at least 1).
  double loop_trips() const { return loop_trips_; }
  std::uint64_t max_stream_records() const { return max_stream_; }
  // How many times an interval's critical path holds the probe records the run wrote per
  // interval (the run's critical-path records over its probe records; at least 1; 1 when
  // not counted): an event loop's interval holds the probes of every command of its batch,
  // so each record per interval delays it that many times (docs/planner.md, "Budget").
  double path_factor() const { return path_factor_; }
  // How the prediction rule fares on the functions this run measured: their measured records
  // over what predict_records would have said for them (1 when nothing ran). Loops around
  // call sites make it exceed 1; it scales the predictions of the candidates.
  double self_calibration() const;

private:
  ws::Database &db_;
  double intervals_ = 1, records_ = 0, scale_ = 1, loop_trips_ = 4, path_factor_ = 1;
  std::uint64_t max_stream_ = 0;
  std::unordered_map<FunctionId, double> body_calls_;   // per interval
  std::unordered_map<FunctionId, double> callee_calls_; // per interval, from call sites
  std::unordered_map<FunctionId, double> site_records_; // call-site records per interval
  // the call sites a final plan may keep (outside, dispatching) and their records per interval
  std::unordered_map<FunctionId, std::vector<std::pair<ws::SiteId, double>>> final_sites_;
  std::unordered_map<FunctionId, ws::CallSiteCount> sites_in_; // planned functions' call sites
  std::set<FunctionId> body_only_;                             // planned for their body probe alone
  ws::CallSiteCount sites_in(FunctionId f) const;
  // The calls per interval the loop-trip and self-calibration rules divide a measured
  // function's call-site records by: its own, at least one (a function called less often
  // encloses the intervals; docs/planner.md, "Cost model").
  static double per_call_basis(double body_calls) { return std::max(body_calls, 1.0); }
  // Calls per interval assumed for a function no probe saw.
  double unseen_calls(FunctionId f) const;
};

// ---- expansion ----------------------------------------------------------------------

struct ExpandOptions {
  int k = 3;
  int max_iterations = 10; // the driver's `iterations` (docs/planner.md, "Expansion")
  Budget budget;
  // Planned functions holding a place that reaches this share of Var(L) (or on the chain of
  // one) are never dropped to make room for candidates.
  double keep_share = 0.01;
  // Predictions are scaled by how far they fell short (at least 1, at most this; 1: never).
  double max_calibration = 20;
  // The place "outside probed functions" (the interval's own time where no probed frame is
  // open) reaching this contribution to Var(L) expands upward: the outer frames join the
  // next plan first (reason Outer), with their callees within outer_depth call edges.
  double outer_share = 0.20;
  int outer_depth = 1;
  // Resuming exploration after a final plan (`vprof loop --continue`): the plan written is
  // `write_iteration` (-1: iteration + 1; the iteration budget counts it) and the stable
  // top-k rule does not stop it (the run it compares with led to the final plan).
  int write_iteration = -1;
  bool resume = false;
  // The groups expanded on (vprof.toml `label`, `exclude_labels`): one interval type's, or
  // every labelled type's but the excluded ones; neither: all intervals (loop_groups).
  std::string label;
  std::vector<std::string> exclude_labels;
};

// The groups (interval labels; "" = all intervals) a loop with these settings expands on in
// `run`: {""} without either, {label}, or the run's labels but the excluded ones. Throws
// PlanError naming the labels the run has when a named label has no group in it, or when
// nothing is left.
std::vector<std::string> loop_groups(ws::Database &db, const ws::RunRow &run,
                                     const std::string &label,
                                     const std::vector<std::string> &exclude);

// A function the budget kept out of the next plan (it stays timed at its call sites).
struct Refusal {
  FunctionId function = 0;
  std::string name, why;
  double records = 0; // predicted per interval
};

struct ExpandResult {
  bool stop = false;
  std::string reason; // "top-k unchanged" | "all top factors are leaves" | "iteration budget
                      // reached" | "probe budget spent" | "stream cap: ..." | "expanded" |
                      // "the top place X calls Y, ... defined in no scanned translation unit"
                      // (the scan skipped units that may define it: they are named)
  int next_iteration = 0;
  std::vector<std::string> top_keys; // the top-k factor and place keys considered
  std::vector<FunctionId> added;     // functions added to plan next_iteration
  std::vector<FunctionId> body_only; // of those, planned for their body probe alone
  std::vector<FunctionId> trimmed;   // functions of the last plan dropped to make room
  // of those, functions whose places carried keep_share but less than the lead place (the
  // source carrying the most: outside probed functions, or the best-ranked place expanded),
  // dropped so that its first candidate fits
  std::vector<FunctionId> trimmed_for_lead;
  std::string lead; // that place's key
  std::vector<Refusal> refused;
  double budget_records = 0;    // per interval
  double measured_records = 0;  // the last run, per interval
  double predicted_records = 0; // the next plan, per interval
  double calibration = 1;       // predictions scaled by the last one's shortfall (>= 1)
  double path_factor = 1;       // records on an interval's critical path per record per interval
  // the stream cap, not the exploration budget, set budget_records (a stop then names it)
  bool stream_capped = false;
};
// Reads the latest stored run of `iteration`, takes the k best-ranked factors that still
// have something to add (at most 4k ranks deep) and writes plan `iteration + 1` = plan
// `iteration` plus, for each factor in turn, the functions behind it and those of their
// callees that ran on the critical path (a wait factor: the waker's functions), as long as
// the predicted records stay within the exploration budget; to make room, planned functions
// that carry nothing are dropped. Stops (no plan written) when the top-k keys equal those
// of the previous run (both without drops), when nothing is left to add, when the budget
// admits nothing, or when iteration + 1 >= max_iterations. Throws PlanError when the
// iteration has no stored run.
ExpandResult expand(ws::Database &db, int iteration, const ExpandOptions &opt);

// ---- the outer frames ---------------------------------------------------------------

// The functions above the frames an interval's time was seen in, from the static call graph
// (docs/planner.md, "Upward expansion").
struct OuterFrames {
  std::vector<FunctionId> ancestors; // the starts' nearest common ancestor(s)
  std::vector<FunctionId> chains;    // on the shortest call paths from them down to the starts
  std::vector<FunctionId> callees;   // defined callees of both within `depth` edges, not above
};
// Goes up the callers of `starts` (the outermost probed frames of the intervals, else the
// annotated functions): the defined functions that reach every start by the fewest call
// edges in all (ties: all of them) are the ancestors, the functions on those shortest paths
// the chains. A start that is itself the nearest common ancestor (one start, or one calling
// the others) gives its callers instead: the intervals' time outside it is above it. Starts
// with no common ancestor give their callers. The walk never goes above `main` nor more
// than kMaxOuterLevels call edges; a thread's entry function has no callers and ends it too.
// Functions without a probeable body are left out; the result may hold planned functions.
inline constexpr int kMaxOuterLevels = 12;
OuterFrames outer_frames(ws::Database &db, const std::vector<FunctionId> &starts, int depth);

// ---- the final plan -----------------------------------------------------------------

struct FinalOptions {
  double threshold = 0.01;    // places below this |contribution| and |share| are dropped
  double answer_share = 0.10; // an iteration's answer: its best-ranked place carrying this
  Budget budget;
};

struct Answer {
  int iteration = -1;
  std::string key, name;
  double contribution = 0;
  std::vector<FunctionId> chain; // the functions from the root down to it, waker's included
  FunctionId function = 0;       // the place's own function (its holder's for a call or wait)
  // The program functions above it as observed, the nearest first (chain less `function`);
  // of every run that held the place's function, the longest such path.
  std::vector<FunctionId> above;
};

struct FinalResult {
  bool written = false; // plan next_iteration was written
  int next_iteration = 0;
  std::size_t kept = 0, dropped = 0;
  std::size_t timed_sites = 0;           // outside and dispatching call sites the final plan times
  Answer answer;                         // the deepest answer of any iteration
  std::vector<Refusal> dropped_for_cost; // places above the threshold the budget dropped
  // Calls in the answer's chain left untimed: each callee's calls in one chain function
  // that alone cost more than the final budget (`function`: the caller; `name`: the call's
  // place; their time stays in the caller's own)
  std::vector<Refusal> untimed_calls;
  // The answer's function's calls of outside functions timed because a wait in its own code
  // carried variance (the call that made it then holds it: docs/planner.md, "The final plan")
  std::size_t wait_calls = 0;
  // The functions above the answer (the nearest first) and the annotated functions that the
  // final budget left out; the chain kept holds the answer's function and those above it up
  // to the first left out
  std::vector<Refusal> left_out;
  std::size_t chain_kept = 0;
  double budget_records = 0, predicted_records = 0;
};
// Writes the final plan `iteration + 1` (final = 1): the function of the answer — the deepest
// of the iterations' answers (each run's best-ranked place whose contribution reaches
// answer_share) — whatever it costs, except its calls whose probes alone would cost more than
// the final budget (a call in a hot loop: timed, it would lengthen what it measures; untimed,
// its caller holds it); then, while the predicted cost stays within the final budget, the
// functions above it on its chain, the nearest first, and the annotated functions (the
// interval marks need no probe); then the functions of the places and waits whose
// contribution or share reached the threshold in any iteration, largest first. Writes nothing
// when the plan would not change. Throws PlanError when the iteration has no stored run.
FinalResult final_plan(ws::Database &db, int iteration, const FinalOptions &opt);

// The deepest answer of the analysed iterations up to `iteration` (Answer::iteration -1:
// none): of each run's best-ranked place (not a wait unless it is a kernel wait's pseudo-waker,
// answered by the function that waited; not outside) whose contribution reaches
// `answer_share`, the one whose observed chain runs through the others' functions (below
// them); on separate branches the larger contribution. No static heights.
Answer deepest_answer(ws::Database &db, int iteration, double answer_share);

// ---- continuing after a final plan ----------------------------------------------------

// What a measured final plan left below its places (docs/planner.md, "The loop continues").
struct Unexplored {
  Answer answer;           // the deepest answer up to the iteration (iteration -1: none)
  FunctionId function = 0; // the function whose callees no plan held (0: none)
  std::string name;        // its place's name
  double contribution = 0; // of Var(L), in `iteration`'s run
  int iteration = -1;
  std::vector<FunctionId> callees; // its defined, probeable callees no plan up to it held
  int source = -1; // the newest analysed exploration (not final) iteration to resume from
};
// A function's own place carrying `answer_share` of Var(L) in a run up to `iteration` whose
// callees no plan held — the answer's if it is one, else the one carrying the most: its time
// is code nobody looked into, and exploration can go on from there.
Unexplored unexplored_below_answer(ws::Database &db, int iteration, double answer_share);

} // namespace vprof::planner
