// The analyzer's rows of the workspace: what it reads to name nodes (site facts, heights,
// the site table), the results it stores per run, the iteration history. An ...Entry is a
// row to insert; its text fields are views into the caller's data, read during the call,
// and default to '' (a default-constructed view would store NULL).
#pragma once

#include "vprof/workspace_rows.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vprof::ws {

// ---- what the analysis reads ------------------------------------------------------

// One site with its function and callee, as the analysis names a node.
struct SiteFacts {
  bool body = false;       // a body probe (else a call site)
  FunctionId function = 0; // the instrumented function holding the probe
  std::string function_name;
  int function_height = -1; // -1: unknown
  FunctionId callee = 0;    // call sites: the function named, 0 when unknown
  std::string callee_name;  // call sites: the callee's qualified name when known, else as spelled
  int callee_height = -1;   // -1: unknown
  bool callee_defined = false;
  // the callee (call sites with a known callee), else the function, calls a defined function
  bool has_defined_callees = false;
  std::string file;
  int line = 0;
};

// Reads sites one at a time with one statement prepared once (a trace names each site once).
class SiteFactsReader {
public:
  explicit SiteFactsReader(Database &db);
  // nullopt for a site the table does not hold.
  std::optional<SiteFacts> read(SiteId site);

private:
  Statement st_;
};

// The function of every site with an id in [0, limit), indexed by site id (0: no such
// site); `limit` bounds the table's size.
std::vector<FunctionId> site_function_table(Database &db, SiteId limit);

// ---- storing an analysed run ------------------------------------------------------

enum class Ranking { Net, VProfiler };

// A row of analysis_runs (`created` is the insertion time).
struct AnalysisRunEntry {
  int iteration = 0;
  std::string_view trace_dir = "";
  std::uint64_t records = 0, streams = 0, processes = 0, dropped = 0;
  std::uint64_t intervals = 0, intervals_unfinished = 0, wake_edges = 0;
  int root_height = 0; // H
  double ticks_per_second = 0;
  double max_residual = 0; // the worst over all groups
  std::uint64_t max_stream_records = 0;
  std::uint64_t critical_records = 0; // probe records on the intervals' critical paths, summed
  Ranking ranking = Ranking::Net;
  double cpu_ns = 0;               // CPU time of the processes that reported it
  std::uint64_t cpu_processes = 0; // how many did
  double span_ns = 0;              // first interval's begin to last interval's end
  unsigned cores = 0;              // of the analysing machine
};
// Inserts a run; returns its id.
RunId insert_analysis_run(Database &db, const AnalysisRunEntry &run);

// The latency statistics of one group (interval_stats).
struct IntervalStatsEntry {
  std::uint64_t count = 0;
  double mean_ns = 0, var_ns2 = 0, cv = 0, min_ns = 0;
  double p50_ns = 0, p95_ns = 0, p99_ns = 0, max_ns = 0;
  double max_residual = 0;
};

// A variance tree node within one group (tree_nodes).
struct TreeNodeEntry {
  int node = 0, parent = -1; // parent -1: the root (NULL)
  std::string_view path = "", name = "";
  NodeKind kind = NodeKind::Root;
  SiteId site = 0;         // stored for kind Site only
  FunctionId function = 0; // 0: unknown (NULL)
  int height = -1;         // -1: unknown (NULL)
  double mean_ns = 0, var_ns2 = 0, share = 0;
  double body_mean_ns = 0, body_var_ns2 = 0;
  bool expanded = false;
  double residual = 0;
};

// A ranked term of a variance tree (factors).
struct FactorEntry {
  int rank = 0; // 1 = highest score
  std::string_view key = "", name = "";
  bool covariance = false; // kind 'cov', else 'var'
  int parent = 0;
  int a = 0, b = -1; // b = -1: a variance (b and b_body NULL)
  bool a_body = false, b_body = false;
  double term_ns2 = 0, share = 0;
  bool has_ci = false; // else share_lo and share_hi are NULL
  double share_lo = 0, share_hi = 0;
  double specificity = 0, score = 0;
  bool leaf = false;
  double net_share = 0, vprofiler_score = 0;
};

// A ranked place (places).
struct PlaceEntry {
  int rank = 0;
  std::string_view key = "", name = "";
  PlaceKind kind = PlaceKind::Function;
  FunctionId function = 0; // 0: NULL
  FunctionId holder = 0;   // 0: NULL
  int node = -1;           // -1: NULL
  int contexts = 0;
  double mean_ns = 0, var_ns2 = 0, share = 0, contribution = 0;
  double specificity = 0, score = 0, vprofiler_score = 0;
  bool waker = false;
  std::string_view via = "";
  bool outside_waker = false; // the disk's, network's, timer's time (Place::outside_waker)
};

// A wait on the intervals' own path (waits).
struct WaitEntry {
  int rank = 0;
  std::string_view key = "", name = "";
  int contexts = 0;
  double mean_ns = 0, var_ns2 = 0, share = 0, contribution = 0;
};

// A what-if estimate (whatif).
struct WhatIfEntry {
  std::string_view key = "";
  double var_after_ns2 = 0, var_drop = 0, p99_after_ns = 0, p99_drop = 0;
};

// Writes the result rows of one run, each table's INSERT prepared once; use it inside the
// Transaction that inserted the run. `label` names the group ('' = all intervals).
class ResultWriter {
public:
  ResultWriter(Database &db, RunId run);
  void interval_stats(std::string_view label, const IntervalStatsEntry &e);
  void tree_node(std::string_view label, const TreeNodeEntry &e);
  void factor(std::string_view label, const FactorEntry &e);
  void place(std::string_view label, const PlaceEntry &e);
  void wait(std::string_view label, const WaitEntry &e);
  void whatif(std::string_view label, const WhatIfEntry &e);

private:
  RunId run_;
  Statement stats_, node_, factor_, whatif_, wait_, place_;
};

// ---- the history ------------------------------------------------------------------

// The latest run of one iteration with its plan's size and its top place by contribution
// (all intervals).
struct IterationRow {
  int iteration = 0;
  std::uint64_t intervals = 0, records = 0, dropped = 0;
  int plan_functions = 0;  // distinct functions of the iteration's plan
  int final_functions = 0; // rows of that plan marked final
  std::optional<std::string> top_place;
  double top_contribution = 0;
};
// Every analysed iteration, oldest first.
std::vector<IterationRow> iteration_rows(Database &db);

// How many runs analysis_runs holds.
int count_analysis_runs(Database &db);
// Deletes every run and its results, one DELETE per table; call it inside a Transaction.
void delete_analysis_results(Database &db);

} // namespace vprof::ws
