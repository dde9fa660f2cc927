// vprof analyzer: from a trace directory to per-interval critical paths, exact variance
// trees, ranked factors with bootstrap intervals and what-if estimates, stored in the
// workspace DB and rendered as text, JSON, HTML, folded stacks or a Perfetto trace. The next
// plan is the planner's (planner/).
// Eigen and SQLite stay behind this header. Formulas: docs/statistics.md; algorithms and
// DB tables: docs/analyzer.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace vprof::ws {
class Database;
}
namespace vprof::trace {
class Trace;
}

namespace vprof::analyzer {

// A trace that is valid byte for byte but cannot be analysed (a limit exceeded), or a
// workspace without the data an operation needs.
class AnalysisError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// A broken invariant of the analysis itself (a bug in vprof, not in the trace): the
// driver exits with code 4 (internal error).
class InternalError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// How factors and places are ranked (docs/statistics.md, "Specificity and score"):
//  Net       — factors by specificity x net share (a variance term less what its siblings
//              cancel of it), places by specificity x contribution:
//              a pair of siblings that compensate each other cannot outrank a real cause;
//  VProfiler — both by specificity x share, the score of VProfiler (EuroSys'17), for comparison.
enum class Ranking { Net, VProfiler };

struct AnalyzeOptions {
  int bootstrap_samples = 200;   // resamples for the share confidence intervals (0: none)
  std::uint64_t seed = 1;        // bootstrap RNG seed: same seed, same intervals
  double confidence = 0.95;      // two-sided level of the bootstrap percentile intervals
  int ci_factors = 20;           // how many top factors get bootstrap intervals
  int whatif_factors = 10;       // how many top factors get what-if estimates
  std::size_t max_factors = 500; // factors kept per group (ranked by score)
  int min_group_size = 2;        // a label needs this many intervals for its own group
  // The share of Var(L) below which a factor or place is noise: it ranks after every larger
  // one whatever its specificity (docs/statistics.md, "Noise floor").
  double noise_share = 0.01;
  Ranking ranking = Ranking::Net;
  // The tail view's percentile q: the slowest intervals are those with L >= p_q
  // (docs/statistics.md, "The tail"); in (0, 100).
  double tail_percentile = 99;
};

// One node of the calling-context tree (shared by all groups of one analysis).
struct Node {
  enum class Kind { Root, Site, Wait, Untracked };
  int id = 0;
  int parent = -1; // -1 for the root
  Kind kind = Kind::Root;
  std::int64_t site = 0; // Site: the site id of the trace
  // Wait: mutex|rwlock|cond|sem|custom|handoff|queue|message, a kernel wait's
  // futex|poll|read|write|io|sleep|child|kernel, wakeup (the wake-up delay below a wait), or
  // a pseudo-waker below a kernel wait: io-device|net-receive|timer|other-process
  std::string wait;
  std::string name;          // display name (from the site table when known)
  std::string path;          // stable key: "/s12/s40/wait:mutex/s7"
  std::int64_t function = 0; // workspace functions.id behind the node (0: unknown)
  int height = -1;           // h(f) used for specificity (-1: unknown)
  int depth = 0;
};

struct LatencyStats {
  std::uint64_t count = 0;
  double mean_ns = 0, var_ns2 = 0, cv = 0, min_ns = 0, max_ns = 0;
  double p50_ns = 0, p95_ns = 0, p99_ns = 0;
};

// A node's statistics within one group (interval type).
struct NodeStats {
  int node = 0;
  double mean_ns = 0, var_ns2 = 0;           // of T_n
  double body_mean_ns = 0, body_var_ns2 = 0; // of B_n
  bool expanded = false;                     // has children: its variance is decomposed
  double residual = 0; // |sum of terms - Var(T_n)| / scale (see docs/statistics.md)
  double share = 0;    // Var(T_n) / Var(L)
  // Cov(T_n, L) / Var(L) and Cov(B_n, L) / Var(L): a node's contribution is the sum of its
  // children's and its body's, so they draw a flame graph whose widths add up (the root's is 1).
  double contribution = 0, body_contribution = 0;
};

// One term of a variance tree: Var(X) or 2 Cov(X, Y); X, Y are a child's T or a body B.
struct Factor {
  enum class Kind { Variance, Covariance };
  Kind kind = Kind::Variance;
  std::string key;                     // stable across runs: "var:<path>[#body]" / "cov:<a>|<b>"
  int parent = 0;                      // the node whose decomposition holds this term
  int a = 0, b = -1;                   // nodes; b = -1 for a variance term
  bool a_body = false, b_body = false; // the term is over B_a (B_b) rather than T_a
  std::string name;                    // display
  double term_ns2 = 0;                 // Var, or 2 Cov (counted twice)
  double share = 0;                    // term / Var(L)
  double share_lo = 0, share_hi = 0;   // bootstrap interval (equal to share when not computed)
  bool has_ci = false;
  // A variance term Var(X) of node n: min(Var(X), Cov(X, T_n)) / Var(L), the part of X's
  // variance that reaches n (what the rest of n cancels is taken off); a covariance term:
  // its share. docs/statistics.md, "Specificity and score".
  double net_share = 0;
  double specificity = 0;
  double score = 0;           // specificity x net_share (Ranking::Net) or x share (VProfiler)
  double vprofiler_score = 0; // specificity x share, whichever ranking is used
  bool leaf = false;          // nothing instrumentable below it
  bool noise = false;         // |share| below the group's noise floor: ranked after every other
};

// A place: one function, one call of an outside function (fsync in Wal::commit) or one
// wait (a condition wait in LockManager::acquire), with all its calling contexts merged,
// the waker's contexts below wait nodes included. Its time per interval is its self time
// on the critical path summed over those contexts (a node's body when its children are
// instrumented, its whole time otherwise), so the places partition the critical path.
// `via` splits its contribution by the way it reaches the critical path: the interval's
// own path ("") or as the waker's work of a wait on it. docs/statistics.md, "Places".
struct Place {
  std::string key;           // "f:<function id>", "x:<callee>@<caller id>", "s:<site>",
                             // "w:<kind>@<enclosing key>", "o:outside"
  std::string name;          // display
  std::int64_t function = 0; // the function behind it (0: outside the program, a wait)
  int contexts = 0;          // tree nodes merged into it (in this group)
  double mean_ns = 0, var_ns2 = 0;
  double share = 0;        // Var(X_p) / Var(L)
  double contribution = 0; // Cov(X_p, L) / Var(L): all places (the root's body is the
                           // place "outside probed functions") and untracked time sum to 1
  double specificity = 0;
  double score = 0;           // specificity x contribution (Ranking::Net) or x share (VProfiler)
  double vprofiler_score = 0; // specificity x share, whichever ranking is used
  bool waker = false;         // its largest part is a waker's work (via a wait)
  std::vector<std::pair<std::string, double>> via; // (wait place name or "", contribution)
  // What the key says, typed: the kind, the function that makes the call or waits (Call,
  // Wait), the site of an unknown site, and the tree node (context) carrying most of it.
  // Outside: the interval's own time outside every probed function (the root's body, node
  // 0): the code above the roots, "outside probed functions" (docs/statistics.md).
  enum class Kind { Function, Call, Site, Wait, Outside } kind = Kind::Function;
  std::int64_t holder = 0;
  std::int64_t site = 0;
  int node = -1;
  bool noise = false; // |share| and |contribution| below the group's noise floor
  // A wait's wake-up delay (key "w:wakeup@..."): the waiter runnable but not yet running
  // after its waker's release — the scheduler's time, no code of the program. It ranks
  // behind every place above the noise floor that names code (docs/statistics.md, "Places").
  bool wakeup_delay = false;
  // A kernel wait's pseudo-waker that is no program (key "w:io-device@...",
  // "w:net-receive@...", "w:timer@..."): the time the disk, the network or a timer took to end
  // a wait of `holder`. It names no code but the function that waited, which answers for it
  // (the planner's final plan keeps that function and times its outside calls:
  // docs/planner.md, "The final plan"). Not `[process] other`: another program's time is that
  // program's work, which tracing it too would show.
  bool outside_waker = false;
};

struct WhatIf {
  std::string key; // the factor
  double var_after_ns2 = 0, p99_after_ns = 0;
  double var_drop = 0, p99_drop = 0; // fractions of the original (0.25 = 25 % less)
};

// Interval latencies binned on a log scale: bin i covers
// [lo_ns * ratio^i, lo_ns * ratio^(i+1)), ratio = (hi_ns / lo_ns)^(1 / counts.size()).
struct LatencyHistogram {
  double lo_ns = 0, hi_ns = 0;
  std::vector<std::uint64_t> counts;
};

// The answer of one group, computed once by the analyzer (the first place after ranking and
// the noise floor) and read by every front end: the text report's first lines, the HTML
// sentence, the JSON field `answer`, `vprof loop`'s last line and the final plan's chain
// (docs/analyzer.md, "The answer").
struct Answer {
  bool found = false;    // false: no place, or no variance to explain
  std::string key, name; // the place (Place::key, Place::name)
  Place::Kind kind = Place::Kind::Function;
  double share = 0, contribution = 0; // the place's (Place::share, Place::contribution)
  int node = -1;                      // the context carrying most of it (Place::node)
  // The way from the interval's root down to that context: the names of the tree nodes
  // (outermost first; a waker's frames follow the wait they stand behind) and the functions
  // on the way (tree order, each once).
  std::vector<std::string> chain;
  std::vector<std::int64_t> chain_functions;
  // The wait on the intervals' own path it stands behind ("": it is on the own path), that
  // wait's contribution (the whole waiting, waker's work included), the place's contribution
  // through it, and the waker's outermost frame below the wait ("": none traced).
  std::string wait;
  double wait_contribution = 0, via_contribution = 0;
  std::string waker;
  // The largest wake-up delay place when it carries more than the answer (its name and
  // contribution; "" when none does): the waiters' run-queue time, said beside the answer
  // because no code of the program is its cause.
  std::string wakeup_delay;
  double wakeup_delay_contribution = 0;
  // The group's slow group (GroupResult::slow) is said beside the answer when it carries at
  // least 1.5 times the answer's contribution: the variance is a few intervals' being of
  // another kind (a request that does far more), spread over places none of which carries it.
  bool slow_group = false;
  // The one sentence every front end prints, e.g. "nanosleep() in BufferPool::read_page:
  // 68.0% of Var(latency) (its own variance 61.2%), the wakers' work behind [wait:cond] in
  // LockManager::acquire (86.7% of Var(latency) waiting there, 57.7% through it), woken by
  // Server::worker_loop.".
  std::string sentence;
};

// The tail view of one place: how much longer it takes in the slowest intervals than on
// average, E[T_x | L >= p_q] - E[T_x] (docs/statistics.md, "The tail").
struct TailPlace {
  std::string key, name; // as Place; the time on no place's account: "u:untracked"
  double excess_ns = 0;
  double excess_lo_ns = 0, excess_hi_ns = 0; // bootstrap percentile interval
  bool has_ci = false;
  double fraction = 0; // excess_ns / TailStats::excess_ns
};

struct TailStats {
  double percentile = 99;        // q
  double threshold_ns = 0;       // p_q of L
  std::uint64_t intervals = 0;   // intervals with L >= p_q
  double excess_ns = 0;          // E[L | L >= p_q] - E[L]: the places' excesses sum to it
  std::vector<TailPlace> places; // by excess, descending
};

// A few intervals far slower than all the others (docs/statistics.md, "The slow group"):
// the split of the latencies at `threshold_ns` that explains most of Var(L) (the between-group
// share eta^2), among splits leaving at most 10 % of the intervals above; found when it
// explains at least 80 % and at least 10 intervals lie above. A distinct kind of interval (a
// multi-key request among single-key ones, a rare stall), not a long tail's last percent.
struct SlowGroup {
  bool found = false;
  double threshold_ns = 0;     // the slow group: the intervals with L >= it
  std::uint64_t intervals = 0; // how many
  double mean_ns = 0, rest_mean_ns = 0;
  double between = 0; // eta^2: the share of Var(L) the split into the two groups explains
  double removed = 0; // 1 - Var(L of the others) / Var(L): what removing the group removes
  // their extra time by place, E[T_x | L >= threshold] - E[T_x] (as TailStats::places, no CI)
  std::vector<TailPlace> places;
};

struct GroupResult {
  std::string label; // "" = all intervals
  LatencyStats latency;
  LatencyHistogram histogram;
  std::vector<NodeStats> nodes; // nodes seen in this group
  std::vector<Factor> factors;  // sorted by score, descending
  std::vector<Place> places;    // sorted by score, descending
  // The waits on the intervals' own path, each place's time being the whole wait (the
  // waker's work below it included); sorted by contribution, descending.
  std::vector<Place> waits;
  std::vector<WhatIf> whatifs;
  double max_residual = 0;
  // Terms and places whose |share| (places: and |contribution|) is below this fraction of
  // Var(L) rank after all others: AnalyzeOptions::noise_share, raised to the median
  // half-width of the top factors' bootstrap intervals when that is wider.
  double noise_floor = 0;
  Answer answer;  // computed once from `places` (their first after the noise floor)
  TailStats tail; // what makes the slowest intervals slow, by place
  SlowGroup slow; // a few intervals far slower than the rest, when there are
};

// One host of an analysis of several trace directories (docs/multihost.md): how its
// clock was placed on the first host's time line.
struct HostClock {
  std::string dir;
  std::string hostname;            // recorded by its processes (empty: unknown)
  std::uint64_t clock_samples = 0; // (clock, CLOCK_REALTIME) pairs its streams carry
  // its CLOCK_REALTIME ran ahead of the first host's by offset_ns (estimated from the
  // message edges); the truth lies within +- skew_bound_ns (< 0: unknown, no edges both ways)
  double offset_ns = 0, skew_bound_ns = 0;
  std::uint64_t edges_out = 0, edges_in = 0; // message edges to / from other hosts
  std::uint64_t violations = 0;              // edges into it received before they were sent
  double worst_violation_ns = 0;
};

// The kernel waits of a trace with a kernel wake-up file (sched.vpk; docs/analyzer.md,
// "Kernel waits"); all zero without one.
struct KernelWaitStats {
  std::uint64_t files = 0;   // sched.vpk files read
  std::uint64_t lost = 0;    // records their recorders lost (a full ring buffer)
  std::uint64_t waits = 0;   // kernel sleeps outside every interposed or marked wait
  std::uint64_t edges = 0;   // of them, woken by a traced thread
  std::uint64_t filled = 0;  // interposed waits without a pairing given the kernel's waker
  std::uint64_t clamped = 0; // kernel events at odds with the thread's records (clock skew)
  // room wake-ups (a receiver's, that freed room: no data) given the waker's next send instead
  std::uint64_t data_wakes = 0;
  // kernel waits ended at a pseudo-waker: [io] block device, [net] receive, [timer],
  // [process] other
  std::uint64_t io_device = 0, net_receive = 0, timer = 0, other_process = 0;
  std::uint64_t unrecorded_thread = 0; // woken by a task of the tree that wrote no records
};

struct AnalysisResult {
  std::string trace_dir; // several directories: joined by ", "
  // several trace directories analysed together: one per directory, the first the reference
  std::vector<HostClock> hosts;
  std::uint64_t message_edges = 0, cross_host_edges = 0; // VPROF_MSG_SEND -> VPROF_MSG_RECV
  std::uint64_t messages_unmatched = 0;  // receives with no unreceived send of their key
  std::uint64_t messages_unreceived = 0; // sends nobody received (in the traces analysed)
  std::uint64_t records = 0, streams = 0, processes = 0, dropped = 0;
  std::uint64_t max_stream_records = 0; // the longest stream, dropped records included
  // probe records on the intervals' critical paths, summed over the intervals (the planner
  // prices plans by them: docs/planner.md, "Budget")
  std::uint64_t critical_records = 0;
  // CPU time (user + system) of the processes that reported it at exit (<pid>.cpu)
  double cpu_ns = 0;
  std::uint64_t cpu_processes = 0;
  // the intervals' span (first begin to last end) and this machine's cores: the machine's
  // capacity per interval, cores x span / intervals
  double span_ns = 0;
  unsigned cores = 0;
  // ENTER records per site over the whole trace (index = site id): the planner's call counts
  std::vector<std::uint64_t> site_calls;
  std::uint64_t intervals = 0, intervals_unfinished = 0, wake_edges = 0;
  std::uint64_t abandoned_frames = 0, path_sum_mismatches = 0, inexact_splits = 0;
  KernelWaitStats kernel;
  double ticks_per_second = 0;
  int H = 0; // the root height used for specificity
  bool heights_from_db = false;
  Ranking ranking = Ranking::Net; // the rule the factors and places are sorted by
  std::vector<Node> nodes;
  std::vector<GroupResult> groups; // [0] = all intervals, then one per label
  // What may make the result wrong or incomplete (dropped records, a bug's mismatched path,
  // clocks that break causality): said first and loudly by every front end.
  std::vector<std::string> warnings;
  // Informational notes (a reduced bootstrap, a few unfinished intervals, probe exits of a
  // fork child): printed apart, folded, never as a warning.
  std::vector<std::string> notes;
};

// Reads the trace directory and analyses it. `db` (may be null) supplies site names,
// functions and heights; without it nodes are named "site N" and specificity uses the
// node depth. Throws trace::TraceError for a corrupt trace, AnalysisError otherwise.
// Cost: one streaming pass over the records; memory grows with intervals x nodes and
// the sync events of the intervals open at one time, not with the record count.
AnalysisResult analyze(const std::filesystem::path &trace_dir, ws::Database *db,
                       const AnalyzeOptions &opt = {});
// Several trace directories, one per host or run, merged on one time line
// (trace::Trace::open of several directories); one directory is analyze(dir).
AnalysisResult analyze(const std::vector<std::filesystem::path> &trace_dirs, ws::Database *db,
                       const AnalyzeOptions &opt = {});
AnalysisResult analyze_trace(const trace::Trace &trace, ws::Database *db,
                             const AnalyzeOptions &opt = {});

// Deletes every stored run and its results (a new history after `vprof init`); returns how
// many runs there were.
int discard_results(ws::Database &db);
// Stores a result as a new run of plan iteration `iteration`; returns the run id.
std::int64_t store(ws::Database &db, const AnalysisResult &res, int iteration);

struct RenderOptions {
  int max_factors = 20;         // rows of the factor table
  double min_tree_share = 0.01; // tree nodes (and bodies) below this share of Var(L) are folded
  int max_depth = 14;           // deeper subtrees are summarised by their node count
  bool all_groups = true;
  bool tree = true; // print the variance tree (after the tables)
};
// A readable report: latency statistics, the variance tree, the ranked factor table and
// the what-if table, for every group.
std::string render_text(const AnalysisResult &res, const RenderOptions &opt = {});
// The same content as JSON (one object; schema in docs/analyzer.md).
// How much of the tree the JSON report carries. The whole of it is in the workspace
// (tables tree_nodes, factors, places); a stored report keeps the detail a reader looks at.
struct JsonOptions {
  bool full = true;                    // every node and factor (vprof-analyze --json)
  std::size_t max_factors = 100;       // when !full: factors per group
  std::size_t max_places = 100;        // when !full: places per group
  double min_node_contribution = 1e-3; // when !full: nodes kept: |contribution| or share at
                                       // least this in some group, their ancestors and the
                                       // nodes of the kept factors
};
std::string render_json(const AnalysisResult &res, const JsonOptions &opt = {});

// ---- pictures: thin front ends over an AnalysisResult (docs/analyzer.md, "Pictures") ----

// The answer of one group in one sentence: g.answer.sentence (Answer), computed by the
// analyzer; every front end prints this text.
std::string answer_sentence(const GroupResult &g);

// Folded stacks ("root;a;b value", one line per tree node, as flamegraph.pl, inferno and
// speedscope read them) of a group's variance tree. A line's value is the node's body
// contribution Cov(B_n, L) in ns^2 rounded to an integer, so a frame's total width is
// Cov(T_n, L) and all lines add up to Var(L) (to within half a unit per line). Lines with
// a negative contribution go to `negative`, with their absolute value: never dropped.
struct FoldedStacks {
  std::string positive, negative;
  double positive_ns2 = 0, negative_ns2 = 0; // sums of the written values
};
FoldedStacks render_folded(const AnalysisResult &res, const GroupResult &g);

// One iteration of the loop as the HTML report's history shows it.
struct IterationSummary {
  int iteration = 0;
  int plan_functions = 0;
  bool final_plan = false;
  std::uint64_t intervals = 0, records = 0, dropped = 0;
  std::string top_place; // all intervals: the run's answer (its first ranked place)
  double top_contribution = 0;
};
// Every analysed iteration's latest run, oldest first (empty without analysed runs).
std::vector<IterationSummary> iteration_history(ws::Database &db);

struct HtmlOptions {
  std::string title = "vprof report";
  std::vector<IterationSummary> history; // shown when not empty
  double min_frame = 0.0005;             // flame-graph nodes below this |contribution| fold
  std::size_t max_frames = 4000;         // per group, the largest |contribution| kept
  std::size_t max_rows = 60;             // rows of the places and factor tables
};
// One self-contained HTML page (inline CSS, JS and SVG; no network): the answer, the
// latency histogram, the places, waits, factors and what-if tables, the variance flame
// graph (width = contribution to Var(L)) per interval type, and the iteration history.
std::string render_html(const AnalysisResult &res, const HtmlOptions &opt = {});

struct PerfettoOptions {
  // Intervals to export by id; empty: the slowest (latency at or above p99, at least one,
  // at most max_each) and as many around the median, so the two can be compared.
  std::vector<std::uint64_t> intervals;
  std::string label; // the default selection from this interval type only ("" = all)
  std::size_t max_each = 50;
};
struct PerfettoSummary {
  std::size_t intervals = 0, slowest = 0, median = 0, chosen = 0;
  std::size_t tracks = 0, slices = 0, thread_slices = 0;
  std::size_t path_pieces = 0; // stretches of the exported critical paths
  std::size_t flows = 0;       // wake-up edges on them (one flow arrow each)
  std::uint64_t bytes = 0;
};
// Writes the critical paths of the selected intervals of the trace (several directories: one
// per host, on one time line, docs/multihost.md; a process track per host and pid) as a Perfetto
// trace (protobuf TrackEvent, opened by ui.perfetto.dev or trace_processor): a track per thread on
// those paths (grouped by process) with the probed functions and waits as nested slices,
// and a track per interval with its critical path stretch by stretch (a child track per
// thread), joined by flow arrows along the wake-up edges the path takes. `db` (may be null)
// names the sites. Throws trace::TraceError for a corrupt trace, AnalysisError when nothing
// matches the selection or `out` cannot be written. Cost: three passes over the trace.
PerfettoSummary export_perfetto(const std::vector<std::filesystem::path> &trace_dirs,
                                ws::Database *db, const std::filesystem::path &out,
                                const PerfettoOptions &opt = {});

// ---- fleet analysis: the variance trees' whole input as rows (docs/fleet.md) ----------

// What export_rows wrote.
struct RowsSummary {
  std::uint64_t intervals = 0; // rows of intervals.tsv
  std::uint64_t nodes = 0;     // rows of nodes.tsv (the calling-context tree)
  std::uint64_t rows = 0;      // rows of node_times.tsv (interval x node)
  std::string hostname;        // the host the trace recorded (empty: none recorded)
};
// Writes the per-interval node times of the trace (several directories: one per host, merged
// as analyze() merges them) — the whole input of the variance trees,
// places included — into the folder `out` as three tab-separated files with a header line
// (doubles in shortest round-trip form, so the numbers read back are the analyzer's bit for
// bit; schema in docs/fleet.md):
//   intervals.tsv   interval  label  latency_ns  host (the host name its trace recorded)
//   nodes.tsv       node  parent  depth  kind  path  frames  name  place  place_name  via
//   node_times.tsv  interval  node  t_ns  b_ns
// A node has a row for an interval when its critical path touched the node or one below it
// (T_n, B_n of an absent node are 0). `db` (may be null) names sites and places as the
// analysis does. Throws trace::TraceError for a corrupt trace, AnalysisError when `out`
// cannot be written. Cost: one engine pass; memory as analyze(), output ~40 B per row.
RowsSummary export_rows(const std::vector<std::filesystem::path> &trace_dirs, ws::Database *db,
                        const std::filesystem::path &out);

} // namespace vprof::analyzer
