// Typed rows of the workspace database: the call graph, plans, analysed runs and their
// results as C++ values, so that no module outside the workspace writes SQL. The analyzer's
// writes are in workspace_analysis.hpp, the instrumenter's in workspace_scan.hpp. The tables
// are described in docs/workspace.md; the SQL stays in src/.
#pragma once

#include "vprof/workspace.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vprof::ws {

using FunctionId = std::int64_t;
using SiteId = std::int64_t;
using RunId = std::int64_t;

// ---- the call graph ---------------------------------------------------------------

struct FunctionRow {
  FunctionId id = 0;
  std::string name;
  int height = -1;
  bool defined = false, annotated = false;
  // false: no body the instrumenter can probe — defined `= default` out of line, or
  // defined only in headers (the rewriter probes a TU's main file only)
  bool body = true;
  std::string file; // of the definition, or of a declaration when not defined
};

std::optional<FunctionRow> function_row(Database &db, FunctionId f);
// The defined functions `f` calls (one row per function, any number of call sites).
std::vector<FunctionId> defined_callees(Database &db, FunctionId f);
// The call sites in f's body (static; calls of outside functions included): those outside
// any loop and those inside one.
struct CallSiteCount {
  int straight = 0, looped = 0;
};
CallSiteCount call_sites_in(Database &db, FunctionId f);
// The call sites (positions in callers' bodies) naming `f`, counted per calling function.
std::vector<std::pair<FunctionId, int>> call_sites_naming_by_caller(Database &db, FunctionId f);
// The defined functions that call a function named `name` (pthread_cond_signal...).
std::vector<FunctionId> defined_callers_of(Database &db, const std::string &name);
// The same for every callee whose qualified name matches the GLOB `pattern`
// ("*::notify_one"), in id order.
std::vector<FunctionId> defined_callers_matching(Database &db, const std::string &pattern);
std::vector<FunctionId> annotated_functions(Database &db);
// Defined functions whose qualified name or USR is `name`.
std::vector<FunctionId> functions_named(Database &db, const std::string &name);
// The n defined functions with the most call sites naming them.
std::vector<FunctionId> most_called_functions(Database &db, int n);
// Every (caller, callee) edge of the call graph once, whatever its call sites.
std::vector<std::pair<FunctionId, FunctionId>> call_edges(Database &db);
// The largest height of an annotated function (the root height H) and of any function;
// nullopt when no such function has a height.
std::optional<int> max_annotated_height(Database &db);
std::optional<int> max_height(Database &db);

// Source files holding vprof marks (any annotation), absolute paths.
std::vector<std::string> marked_files(Database &db);
void add_marked_file(Database &db, const std::string &file);
void clear_marked_files(Database &db);

// Translation units the last scan skipped, by file (absolute path), with the reason.
struct SkippedUnitRow {
  std::string file, reason;
};
std::vector<SkippedUnitRow> skipped_units(Database &db);
void add_skipped_unit(Database &db, const std::string &file, const std::string &reason);
void clear_skipped_units(Database &db);

// ---- sites ------------------------------------------------------------------------

struct SiteRow {
  SiteId id = 0;
  bool body = false;       // a body probe (else a call site)
  FunctionId function = 0; // the instrumented function holding the probe
  FunctionId callee = 0;   // call sites: the function named, 0 when unknown
  bool callee_defined = false;
};
std::vector<SiteRow> sites_of(Database &db, FunctionId f);

// A call in f's body of a function the program does not define (fdatasync, read, a
// library's), by name (the callee's display name) and site.
struct OutsideCall {
  SiteId site = 0;
  std::string callee_name;
  bool in_loop = false; // inside a for/while/do loop of f
};
// f's direct and member calls of outside functions, from the scan's `calls`, in source order,
// each with its site row — made here when the rewriter has not made it yet (no plan probed
// f's calls), with the (kind, function, file, line, col) the rewriter's row of that call has,
// so that both name one site: what a final plan may time in a function whose calls no
// exploration timed (docs/planner.md, "The final plan").
std::vector<OutsideCall> outside_call_sites(Database &db, FunctionId f);

struct CallTarget {
  FunctionId function = 0;
  int height = -1;       // -1: unknown
  bool dispatch = false; // reached through a virtual or indirect call edge
};
// Defined functions called at the position of call site `site`: the callees of the
// `calls` edges with the site's (caller, file, line, col) — the direct callee, every
// override of a virtual call, the candidates of an indirect call. When no edge has that
// exact column and the site's callee is unresolved (a call in a template pattern), edges
// on the same line whose callee's unqualified name equals the spelled callee's last
// identifier are taken. Empty for an unknown site or a call into external code.
std::vector<CallTarget> call_targets(Database &db, SiteId site);

// ---- plans ------------------------------------------------------------------------

// Why a function is in a plan. Outer: an outer frame of the intervals (a caller above the
// annotated functions, up to their nearest common ancestor, or a callee of those), planned
// when the interval's time outside every probed function carried Var(L) (docs/planner.md).
enum class PlanReason { Root, Depth, Expand, Answer, Outer, User };
const char *reason_text(PlanReason r);
std::optional<PlanReason> reason_from_text(const std::string &s);

struct PlanRow {
  FunctionId function = 0;
  PlanReason reason = PlanReason::User;
  std::string factor; // Expand, Answer: the factor or place key that brought it
  bool final = false; // part of a final plan
  // Only its body probe, none of its call sites: an outer frame whose calls would not fit
  // the budget (docs/planner.md, "Upward expansion"); its callees join on their own.
  bool body_only = false;
};

// The newest plan's iteration, or nullopt without a plan.
std::optional<int> newest_plan_iteration(Database &db);
std::vector<PlanRow> read_plan(Database &db, int iteration);
int plan_size(Database &db, int iteration);
bool is_final_plan(Database &db, int iteration);
// Replaces the plan of `iteration` (one transaction).
void write_plan(Database &db, int iteration, const std::vector<PlanRow> &rows);
// The call sites a final plan times (outside and dispatching calls that carried variance).
void write_final_sites(Database &db, int iteration, const std::vector<SiteId> &sites);
struct SitePosition {
  std::string file;
  int line = 0, col = 0;
};
std::vector<SitePosition> final_site_positions(Database &db, int iteration);
// The call sites in the same function as `site` that name the same callee (one outside
// call's place covers them all).
std::vector<SiteId> sites_calling_alike(Database &db, SiteId site);
// Deletes every plan after `iteration` (a new history).
void delete_plans_after(Database &db, int iteration);

// The planner's prediction for a plan, records per interval.
struct PlanCost {
  int iteration = 0;
  double kept_records = 0, added_records = 0, budget_records = 0;
};
void write_plan_cost(Database &db, const PlanCost &cost);
std::optional<PlanCost> plan_cost(Database &db, int iteration);

// A planned function as the instrumenter sees it: its USR and the file that defines it.
struct PlannedFunction {
  FunctionId id = 0;
  std::string usr, file;
  bool body_only = false; // PlanRow::body_only: no call-site probes in it
};
// The functions of a plan, ordered by file, then id.
std::vector<PlannedFunction> planned_functions(Database &db, int iteration);
// The USRs of the defined functions a plan leaves out (a final plan does not time calls of
// them: their time stays in the caller's body).
std::vector<std::string> unplanned_usrs(Database &db, int iteration);
// Whether a plan holds a function defined in `file`.
bool file_has_plan(Database &db, const std::string &file, int iteration);

// ---- analysed runs ----------------------------------------------------------------

struct RunRow {
  RunId id = 0;
  int iteration = 0;
  std::uint64_t intervals = 0, records = 0, dropped = 0, max_stream_records = 0;
  double mean_ns = 0; // the mean interval latency (all intervals)
  std::string trace_dir;
  // the machine's capacity per interval: cores x span / intervals (0: unknown)
  double capacity_ns = 0;
  // probe records on the intervals' critical paths, summed over them (0: not counted)
  std::uint64_t critical_records = 0;
};
// The newest run of `iteration`.
std::optional<RunRow> latest_run(Database &db, int iteration);
// The newest run of every iteration up to `iteration`, oldest first.
std::vector<RunRow> latest_runs_upto(Database &db, int iteration);

enum class NodeKind { Root, Site, Wait, Untracked };
// "root", "site", "wait", "untracked": tree_nodes.kind.
const char *node_kind_text(NodeKind k);
struct NodeRow {
  int node = 0, parent = -1;
  NodeKind kind = NodeKind::Site;
  SiteId site = 0;
  FunctionId function = 0;
  std::string path, name;
  double mean_ns = 0; // mean time on the critical path per interval
};
// The variance tree of all intervals (label '') of a run, indexed by node id.
// `label`: the variance tree of that interval type's group instead (its node ids are the
// same: one calling-context tree serves every group of a run).
std::vector<NodeRow> tree_of(Database &db, RunId run, const std::string &label = "");
// The interval types of a run that have a group of their own (interval_stats), sorted.
std::vector<std::string> labels_of(Database &db, RunId run);

struct FactorRow {
  int rank = 0;
  std::string key, name;
  int a = -1, b = -1; // tree nodes; b = -1 for a variance
  bool a_body = false, b_body = false;
  double share = 0, specificity = 0;
};
// The best-ranked factors of all intervals of a run.
// `label`: of that interval type's group.
std::vector<FactorRow> top_factors(Database &db, RunId run, int limit,
                                   const std::string &label = "");

// Outside: the interval's own time outside every probed function (the root's body), the
// code above the roots.
enum class PlaceKind { Function, Call, Site, Wait, Outside };
// "function", "call", "site", "wait", "outside": places.place_kind.
const char *place_kind_text(PlaceKind k);
struct PlaceRow {
  int rank = 0;
  std::string key, name;
  PlaceKind kind = PlaceKind::Function;
  FunctionId function = 0; // Function: the function; Site: its function when known
  FunctionId holder = 0;   // Call, Wait: the function that calls or waits
  int node = -1;           // the context carrying most of it
  double share = 0, contribution = 0, specificity = 0;
  bool waker = false;
  // Wait: a kernel wait's pseudo-waker that is no program (the disk, the network, a timer),
  // whose time names no code but the holder's wait
  bool outside_waker = false;
};
// Places and waits (waits have kind Wait) of all intervals of a run.
// `label`: of that interval type's group.
std::vector<PlaceRow> places_of(Database &db, RunId run, const std::string &label = "");

// ENTER counts per site of a run.
struct SiteCalls {
  SiteId site = 0;
  std::uint64_t calls = 0;
};
std::vector<SiteCalls> site_calls_of(Database &db, RunId run);
void store_site_calls(Database &db, RunId run, const std::vector<SiteCalls> &calls);

} // namespace vprof::ws
