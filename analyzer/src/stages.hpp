// The stages of one analysis (analyze_trace), in order: load (the engine's counts and what
// degrades the result), naming and heights (the calling-context tree's nodes, their
// specificity), places, then per interval group: times (the node-time matrices), trees
// (node statistics and factors), places and waits, ranking, bootstrap, noise floor and
// what-if. Formulas: docs/statistics.md. Internal to the analyzer; the unit tests call the
// stages one by one (tests/analyzer/test_stages.cpp).
#pragma once

#include "accumulators.hpp"
#include "engine.hpp"
#include "node_time_store.hpp"
#include "vprof/analyzer.hpp"

#include <Eigen/Dense>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace vprof::ws {
class Database;
}

namespace vprof::analyzer::detail {

// ---- the workspace's facts about the sites the trace names ----------------------------

struct SiteInfo {
  std::string kind, name;
  std::int64_t function = 0, callee = 0;
  int height = -1;
  bool has_callees = false;
  bool external = false;   // a call site whose callee has no body in the program
  bool dispatch = false;   // a virtual or indirect call (several possible targets)
  std::int64_t caller = 0; // the function the site is in
  std::string caller_name, callee_name;
};

struct DbFacts {
  bool have = false;
  int H = -1; // the root height the workspace gives (-1: none)
  std::unordered_map<std::int64_t, SiteInfo> sites;
};

DbFacts read_db(ws::Database *db, const std::vector<NodeDef> &nodes);

// ---- load -----------------------------------------------------------------------------

// The result's trace-wide counts, taken from the engine's output (its site counts are
// moved), with a warning for everything that makes the analysis partial.
AnalysisResult load_result(const trace::Trace &tr, EngineOutput &eo);
// The hosts of a trace of several directories (res.hosts) and their clock warnings.
void host_clocks(const trace::Trace &tr, AnalysisResult &res);
// The warning for dropped records, by the kind of thread that lost them.
std::string drop_warning(const trace::Trace &tr, const EngineOutput &eo);

// ---- naming and heights ---------------------------------------------------------------

// Per node of the calling-context tree.
struct NodeFacts {
  std::vector<int> wait_anc;          // the nearest wait ancestor (-1: the interval's own path)
  std::vector<int> top_of;            // the waker's top frame below that wait (-1: none)
  std::vector<double> spec;           // VProfiler's specificity, from static heights
  std::vector<std::vector<int>> kids; // children in the whole tree
  // The observed ranking (specificity.cpp): the level below the interval's root in the
  // calling contexts the trace saw (a kernel wait at its frame's level, (untracked) at its
  // wait's or the root's), its square (the observed specificity) and each node's subtree
  // as a preorder range [tin, tout).
  std::vector<int> level;
  std::vector<double> observed;
  std::vector<int> tin, tout;
};

// res.nodes from the engine's node definitions, named from the workspace.
void name_nodes(const EngineOutput &eo, const DbFacts &facts, AnalysisResult &res);
// The root height (res.H, res.heights_from_db) and every node's specificity.
NodeFacts heights_and_specificity(const DbFacts &facts, AnalysisResult &res);

// ---- the observed ranking (specificity.cpp; docs/statistics.md, "Specificity and score") --

// nf.level and nf.observed from the tree (nf.wait_anc set; in_frame: the nodes that are
// part of their parent frame — a kernel wait and what hangs below it, a call of a function
// outside the program, a function's body below its call — at its level, not below it).
void observed_levels(const AnalysisResult &res, const std::vector<char> &in_frame, NodeFacts &nf);
// nf.tin, nf.tout from nf.kids.
void subtree_ranges(NodeFacts &nf);

// The nested rule: a term whose time lies inside another's (its node in the other's
// subtree, at a deeper level) explains that ancestor when it carries at least this part of
// what the ancestor carries; the ancestor then ranks right behind it.
inline constexpr double kNestedShare = 0.5;

// One factor or place as the nested rule sees it.
struct NestedItem {
  int node = -1;         // the tree node it is anchored at (-1: none)
  double level = 0;      // its observed level (a body: half a level below its node)
  bool contains = false; // the terms anchored in its node's subtree are inside it
  double value = 0;      // what it carries: net share (factors), contribution (places)
  double rank_value = 0; // what it is worth against unrelated items (factors: at least what
                         // its function carries in all its contexts; places: its value)
  bool noise = false;    // below the noise floor: explains nothing
  // the function (place) a variance term times, -1: none; the outermost terms of one group
  // inside an item explain it together (a function called in several contexts below it)
  int group = -1;
};
// Each item's rank key (rank by key, descending; ties: deeper first): its rank value, or,
// when a nested item explains it, the smaller of its rank value and that item's key (the
// explaining item with the largest key).
std::vector<double> nested_keys(const NodeFacts &nf, const std::vector<NestedItem> &items);

// ---- places ---------------------------------------------------------------------------

// The place of the root's body: the interval's own time outside every probed function,
// which stands for the code above the roots (the outer frames). Its specificity is one
// level: a large part of Var(L) there outranks the roots' own places (specificity 0), and
// any place one level below the roots with more contribution, or two levels below with a
// quarter of it, outranks it (docs/statistics.md, "Places").
inline constexpr const char *kOutsideKey = "o:outside";
inline constexpr const char *kOutsideName = "outside probed functions";
inline constexpr double kOutsideSpecificity = 1.0;

struct PlaceTable {
  std::vector<int> place_of; // node -> place (0 for the root: kOutsideKey; -1: (untracked))
  std::vector<int> via_of;   // node -> the place of its outermost wait ancestor (-1: own path)
  std::vector<std::string> key, name;
  std::vector<std::int64_t> function, holder, site;
  std::vector<Place::Kind> kind;
  std::vector<char> wakeup_delay;  // per place: a wait's wake-up delay (Place::wakeup_delay)
  std::vector<char> outside_waker; // per place: a kernel wait's pseudo-waker (Place::outside_waker)
  // node -> 1 for a kernel wait (or its pseudo-waker, wake-up delay) folded into the place of
  // the outside call it happened in: part of that call's time, never the place's context
  std::vector<char> folded;
};

PlaceTable assign_places(const AnalysisResult &res, const DbFacts &facts);
// Whether `node` is a waiter's wake-up delay (below the wait node that had a waker).
bool is_wakeup_delay(const AnalysisResult &res, int node);
// Whether `n` is a kernel wait's pseudo-waker: the block device, the network, a timer or
// another process (not a traced process's thread without records, which is the program's code
// no plan probes yet).
bool is_pseudo_waker(const Node &n);
// Whether `n` is a pseudo-waker that is no program at all: the block device, the network, a
// timer. Its time names no code but the wait of the function that waited (Place::outside_waker);
// another process's time is that program's work, which tracing it would show.
bool is_outside_waker(const Node &n);

// ---- per group ------------------------------------------------------------------------

struct IntervalGroup {
  std::string label;                    // "" = all intervals
  std::vector<std::uint32_t> intervals; // of an EngineOutput (interval_groups(eo, ...))
  // of a NodeTimeStore (interval_groups(counts, ...)): the intervals with this label index
  // (-1: all of them), and how many they are
  std::int64_t label_index = -1;
  std::uint64_t count = 0;
};
// All intervals, then one group per label with at least `min_group_size` intervals.
std::vector<IntervalGroup> interval_groups(const EngineOutput &eo, int min_group_size);
// The same from the finished intervals' count per label index (labels: their texts).
std::vector<IntervalGroup> interval_groups(const std::vector<std::uint64_t> &label_counts,
                                           const std::vector<std::string> &labels,
                                           int min_group_size);

// A group's node times as sums, not matrices (docs/statistics.md, "Sums, not matrices"):
// one pass over the group's intervals, a block of rows at a time, fills the columns' moments
// and every expanded node's cross-products; the intervals' node times stay where the engine
// put them — a NodeTimeStore's file (the analysis), or an EngineOutput's sparse ones (tests) —
// and later passes (places, waits, bootstrap, what-if, a tail view) read them again through
// for_each_block. No interval's data stays in memory, not even L: its percentiles are exact
// order statistics found in two passes (latency_ranks).
struct GroupTimes {
  std::vector<int> present;    // nodes with a column, ascending id (root first)
  std::vector<int> col_of;     // node -> its column (-1: not in the group)
  std::vector<int> parent_col; // column -> its parent's column (-1: the root)
  // the latencies L (T of the root) are not kept: their smallest and largest from the
  // first pass, their order statistics (rank -> value) as passes found them (latency_ranks)
  double L_min = 0, L_max = 0;
  mutable std::map<std::uint64_t, double> order;
  std::vector<std::vector<int>> kids; // children present in the group
  double ns_per_tick = 1;
  // the rows, in order: eo's intervals `intervals`, or the store's intervals with the label
  // index `label_index` (-1: all), `rows` of them
  const EngineOutput *eo = nullptr;
  std::vector<std::uint32_t> intervals;
  const NodeTimeStore *store = nullptr;
  std::int64_t label_index = -1;
  Eigen::Index rows = 0;
  // per column c: T_c as variable c, B_c (self time) as variable C + c, against L
  RefMoments cols;
  // per expanded node: the cross-products of [T of its children (gt.kids order)..., B]
  std::unordered_map<int, CrossProducts> trees;
};

// The group's columns and sums (one pass over its intervals' node times).
GroupTimes group_times(const EngineOutput &eo, const std::vector<std::uint32_t> &intervals);
// The same over a store's intervals (`nodes`: the engine's node table).
GroupTimes group_times(const NodeTimeStore &store, const std::vector<NodeDef> &nodes,
                       double ticks_per_second, const IntervalGroup &group);

// The latencies' order statistics (0-based ranks among the group's rows: the k-th smallest)
// in gt.order, exact, in passes over the group's blocks (OrderStatistics; typically two)
// for the ranks not known yet; `hist` (when given) is counted in the first of them.
void latency_ranks(const GroupTimes &gt, std::vector<std::uint64_t> ranks,
                   LatencyHistogram *hist = nullptr);
// The q-th percentile of L (q in [0, 1], type 7 as LatencyStats), from gt.order or passes.
double latency_percentile(const GroupTimes &gt, double q);
// The ranks the percentile q needs.
std::vector<std::uint64_t> percentile_rank_pair(const GroupTimes &gt, double q);
// The group's latency statistics and histogram (count, mean, Var(L) from the first pass's
// sums; min, max from it; p50, p95, p99 from latency_ranks).
LatencyStats latency_stats(const GroupTimes &gt);
LatencyHistogram latency_histogram(const GroupTimes &gt);
// The histogram's bins for the range [lo, hi] of the latencies (empty when n is 0).
LatencyHistogram histogram_bins(double lo, double hi, std::uint64_t n);
void histogram_add(LatencyHistogram &h, double L);

// One block of the group's rows: S (self times) and T (inclusive times), ns, rows x columns,
// for rows first .. first + S.rows() - 1 of the group (the same doubles as L).
using BlockFn =
    std::function<void(Eigen::Index first, const Eigen::MatrixXd &S, const Eigen::MatrixXd &T)>;
// Calls `fn` for every block of the group's rows in order: the hook for further passes (a
// tail view's sums over the intervals with L above a threshold: latency_ranks, ...).
// Memory: a block of at most ~4 M doubles per matrix, whatever the number of intervals.
void for_each_block(const GroupTimes &gt, const BlockFn &fn);

// The whole matrices (tests and small groups only: intervals x columns doubles).
struct DenseTimes {
  Eigen::MatrixXd S, T;
};
DenseTimes dense_times(const GroupTimes &gt);

// One term's column source: T of a node, or B (its self time).
struct Col {
  int node;
  bool body;
};
// One column over the group's intervals (one pass; n doubles).
Eigen::VectorXd column(const GroupTimes &gt, const Col &c);
// A column's variable in gt.cols (T_c: c, B_c: C + c) and its values in a block.
Eigen::Index variable_of(const GroupTimes &gt, const Col &c);
Eigen::MatrixXd::ConstColXpr block_column(const GroupTimes &gt, const Col &c,
                                          const Eigen::MatrixXd &S, const Eigen::MatrixXd &T);

// The factors of one group, with the columns of each term (second.node -1: a variance).
struct Terms {
  std::vector<Factor> factors;
  std::vector<std::pair<Col, Col>> cols;
};

// gr.nodes, gr.max_residual and every term of every expanded node.
Terms variance_trees(const AnalysisResult &res, const DbFacts &facts, const NodeFacts &nf,
                     const PlaceTable &pt, const GroupTimes &gt, const AnalyzeOptions &opt,
                     GroupResult &gr);
// gr.places (ranked, truncated to opt.max_factors) and gr.waits (by contribution).
void place_stats(const NodeFacts &nf, const PlaceTable &pt, const GroupTimes &gt,
                 const AnalyzeOptions &opt, GroupResult &gr);
void wait_stats(const AnalysisResult &res, const NodeFacts &nf, const PlaceTable &pt,
                const GroupTimes &gt, GroupResult &gr);

// The factors' order by score (ties: the deeper term, the larger |share|, the key), noise
// after the rest; at most `max_factors`. Ranking::Net (observed): each factor's specificity
// becomes its observed one and its score its nested-rule key (docs/statistics.md).
// `pt`, `gr` (the group's node statistics and places, when known): a frame that spans the
// interval (its mean time at least kSpanningFrame of the latency's) is the interval itself,
// at the root's level, its variance ranked last; a variance term of a function's node is
// worth at least the contribution of the function's place (all its contexts merged).
inline constexpr double kSpanningFrame = 0.99;
std::vector<std::size_t> rank_factors(const AnalysisResult &res, const NodeFacts &nf,
                                      std::vector<Factor> &factors, std::size_t max_factors,
                                      const PlaceTable *pt = nullptr,
                                      const GroupResult *gr = nullptr);

// Percentile intervals of the top opt.ci_factors factors' shares (gr.factors in rank order,
// `order` their indexes into `terms`): opt.bootstrap_samples Poisson-weighted replicates
// filled in one pass (docs/statistics.md, "Bootstrap"). `notes` is kept for callers.
void bootstrap_intervals(const GroupTimes &gt, const Terms &terms,
                         const std::vector<std::size_t> &order, const AnalyzeOptions &opt,
                         std::mt19937_64 &rng, GroupResult &gr, std::vector<std::string> &notes);

// The places' order, one rule for every stage that sorts them: those above the noise floor
// first, the scheduler's wake-up delays behind the code places, then the larger score. True
// when `a` goes before `b` by these; neither does when they tie on all three.
bool place_before(const Place &a, const Place &b);

// The group's noise floor (docs/statistics.md, "Noise floor") and the factors and places
// below it moved behind the rest (order kept within); `order` follows gr.factors.
void apply_noise_floor(GroupResult &gr, std::vector<std::size_t> &order, double noise_share);

// What-if for the top `n` factors: each one's time replaced by its mean in every interval.
// Their L' vectors are held up to `cap_doubles` doubles a pass; a group larger than that
// gets them streamed (no vector: moments and exact order statistics in passes).
inline constexpr Eigen::Index kWhatIfDoubles = Eigen::Index{1} << 25; // 256 MiB
void what_if(const GroupTimes &gt, const Terms &terms, const std::vector<std::size_t> &order, int n,
             GroupResult &gr, Eigen::Index cap_doubles = kWhatIfDoubles);

// ---- the tail (tail.cpp) --------------------------------------------------------------

// E[X_j | L >= p_q] - E[X_j] for every column j of X (intervals x places), with p_q the
// q-th percentile of L (linear interpolation, as LatencyStats), q in (0, 100). When the
// columns add up to L, the excesses add up to E[L | L >= p_q] - E[L] (docs/statistics.md,
// "The tail"). The whole tail computation: it needs the per-interval latencies and place
// times only.
struct TailExcess {
  double threshold_ns = 0;
  std::size_t intervals = 0; // with L >= p_q
  double excess_ns = 0;      // of L
  Eigen::VectorXd excess;    // per column of X
};
TailExcess tail_excess(const Eigen::VectorXd &L, const Eigen::MatrixXd &X, double q);

// The rank (0-based, ascending) of the smallest latency of the tail bootstrap's candidates:
// the intervals with L at or above the m-th largest, m = 2 ceil((1 - q/100) n) + 100.
std::uint64_t tail_cut_rank(std::uint64_t n, double q);

// The k-th draw (from 0) of PoissonWeights(seed): the weight fill() gives interval i of
// replicate b when it fills `replicates` rows per interval, k = i * replicates + b.
unsigned poisson_weight_at(std::uint64_t seed, std::uint64_t k);

// The q-th percentile (type 7, as percentile_of) of the sample that holds values_desc[j]
// weights[j] times (values descending, total = the sum of every weight of the sample, those
// past values_desc's end included: smaller values). found = false when the percentile lies
// below values_desc's last value (the weights given there do not reach it).
double weighted_percentile(const std::vector<double> &values_desc,
                           const std::vector<unsigned> &weights, double total, double q,
                           bool &found);

// gr.tail: every place's excess in the slowest intervals (the time on no place's account as
// "u:untracked", so the excesses add up to the latency's), by excess, with Poisson bootstrap
// percentile intervals for the first opt.ci_factors (opt.bootstrap_samples replicates, each
// with its own threshold; weights seeded from `rng`). Two passes over the group's blocks;
// memory: replicates x ci_factors sums and the place times of about twice the tail's
// intervals x ci_factors, never intervals x places. A replicate whose threshold falls below
// those candidates (never seen) is dropped and said in `notes`.
void tail_stats(const PlaceTable &pt, const GroupTimes &gt, const AnalyzeOptions &opt,
                std::mt19937_64 &rng, GroupResult &gr, std::vector<std::string> &notes);

// ---- the answer (answer.cpp) ----------------------------------------------------------

// The group's answer from its ranked places (gr.places after the noise floor: their first,
// in the order given), its chain in the calling-context tree and the wait it stands behind.
// Every place's excess (the time on no place's account last among equals) over the
// intervals with L >= threshold, E[T_x | L >= threshold] - E[T_x], by excess descending, in
// one pass; `total` gets the latency's. Empty when no interval reaches the threshold.
std::vector<TailPlace> excess_by_place(const PlaceTable &pt, const GroupTimes &gt, double threshold,
                                       TailExcess &total);

// ---- the slow group (slow_group.cpp) ----------------------------------------------------

// gr.slow (docs/statistics.md, "The slow group"): the best split of the latencies into the
// few slowest and the rest, from a log-spaced histogram of L filled in one pass (16 bins an
// octave: the threshold is a bin's lower edge), and when found, the group's excess by place
// in a second. Memory: the histogram's bins, never the intervals.
void slow_group_stats(const PlaceTable &pt, const GroupTimes &gt, GroupResult &gr);

Answer answer_of(const AnalysisResult &res, const GroupResult &gr);

// ---- rows for SQL engines (export_rows.cpp) -------------------------------------------

// The rows of export_rows (analyzer.hpp) from an engine output whose nodes are named
// (res.nodes, by name_nodes) and placed (`pt`, by assign_places). `interval_hosts`: the host
// name of each of eo.intervals (where it began), or empty: every host cell empty.
RowsSummary write_rows(const EngineOutput &eo, const AnalysisResult &res, const PlaceTable &pt,
                       const std::filesystem::path &out,
                       const std::vector<std::string> &interval_hosts = {});

// Population variance / covariance (divide by n): the one estimator used everywhere.
double cov_of(const Eigen::VectorXd &x, const Eigen::VectorXd &y);
// The linear-interpolation percentile (R type 7) of v, p in [0, 1] (latency.cpp).
double percentile(std::vector<double> v, double p);
LatencyStats latency_stats(const Eigen::VectorXd &L);
LatencyHistogram latency_histogram(const Eigen::VectorXd &L);

} // namespace vprof::analyzer::detail
