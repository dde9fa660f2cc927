// Statistics over the engine's per-interval node times: variance trees (Eigen covariance
// of [children..., body]), factors with specificity and score, bootstrap intervals,
// what-if estimates and latency statistics (formulas: docs/statistics.md). analyze_trace
// runs the stages of stages.hpp in order.
#include "vprof/analyzer.hpp"

#include "accumulators.hpp"
#include "engine.hpp"
#include "stages.hpp"
#include "vprof/trace_reader.hpp"
#include "vprof/workspace.hpp"
#include "vprof/workspace_analysis.hpp"
#include "vprof/workspace_rows.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>

namespace vprof::analyzer {
namespace detail {

using Eigen::MatrixXd;
using Eigen::VectorXd;

namespace {

// Linear-interpolation percentile (R type 7) of an unsorted vector, which it reorders: the
// two order statistics around p * (n - 1) by selection (linear time, no sort), exactly the
// sorted vector's values.
double percentile_in_place(std::vector<double> &v, double p) {
  if (v.empty())
    return 0;
  double pos = p * static_cast<double>(v.size() - 1);
  auto i = static_cast<std::size_t>(pos);
  double f = pos - static_cast<double>(i);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  const double lo = v[i];
  if (i + 1 >= v.size())
    return lo;
  const double hi = *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(i) + 1, v.end());
  return lo + f * (hi - lo);
}

double percentile(std::vector<double> v, double p) { return percentile_in_place(v, p); }

} // namespace

double cov_of(const VectorXd &x, const VectorXd &y) {
  if (x.size() == 0)
    return 0;
  return ((x.array() - x.mean()) * (y.array() - y.mean())).sum() / static_cast<double>(x.size());
}

LatencyStats latency_stats(const VectorXd &L) {
  LatencyStats s;
  s.count = static_cast<std::uint64_t>(L.size());
  if (L.size() == 0)
    return s;
  s.mean_ns = L.mean();
  s.var_ns2 = cov_of(L, L);
  s.cv = s.mean_ns != 0 ? std::sqrt(s.var_ns2) / s.mean_ns : 0;
  s.min_ns = L.minCoeff();
  s.max_ns = L.maxCoeff();
  std::vector<double> v(L.data(), L.data() + L.size());
  s.p50_ns = percentile_in_place(v, 0.50);
  s.p95_ns = percentile_in_place(v, 0.95);
  s.p99_ns = percentile_in_place(v, 0.99);
  return s;
}

constexpr int kHistogramBins = 40;

// 40 log-spaced bins from the smallest to the largest latency (the HTML report's histogram;
// a log scale because latency distributions of servers are long-tailed).
LatencyHistogram latency_histogram(const VectorXd &L) {
  LatencyHistogram h;
  if (L.size() == 0)
    return h;
  h = histogram_bins(L.minCoeff(), L.maxCoeff(), static_cast<std::uint64_t>(L.size()));
  for (Eigen::Index i = 0; i < L.size(); ++i)
    histogram_add(h, L[i]);
  return h;
}

LatencyHistogram histogram_bins(double lo, double hi, std::uint64_t n) {
  LatencyHistogram h;
  if (n == 0)
    return h;
  h.lo_ns = std::max(1.0, lo);
  h.hi_ns = std::max(h.lo_ns * 1.001, hi * 1.000001);
  h.counts.assign(kHistogramBins, 0);
  return h;
}

void histogram_add(LatencyHistogram &h, double L) {
  const double span = std::log(h.hi_ns / h.lo_ns);
  const double x = std::max(L, h.lo_ns);
  auto bin = static_cast<int>(std::log(x / h.lo_ns) / span * kHistogramBins);
  ++h.counts[static_cast<std::size_t>(std::clamp(bin, 0, kHistogramBins - 1))];
}

DbFacts read_db(ws::Database *db, const std::vector<detail::NodeDef> &nodes) {
  DbFacts f;
  if (!db)
    return f;
  f.have = true;
  if (auto h = db->meta("H")) {
    try {
      f.H = std::stoi(*h);
    } catch (...) {
      f.H = -1;
    }
  }
  if (f.H < 0)
    f.H = ws::max_annotated_height(*db).value_or(-1);
  if (f.H < 0)
    f.H = ws::max_height(*db).value_or(-1);
  ws::SiteFactsReader reader(*db);
  for (const auto &n : nodes) {
    if (n.label >= detail::kLabelWaitBase || f.sites.count(static_cast<std::int64_t>(n.label)))
      continue;
    auto site = static_cast<std::int64_t>(n.label);
    SiteInfo si;
    if (auto sf = reader.read(site)) {
      si.kind = sf->body ? "body" : "call";
      const std::string &fname = sf->function_name;
      const std::string &file = sf->file;
      auto slash = file.find_last_of('/');
      std::string base = slash == std::string::npos ? file : file.substr(slash + 1);
      int caller_h = sf->function_height;
      si.caller = sf->function;
      si.caller_name = fname;
      if (sf->body) {
        si.function = sf->function;
        si.name = fname;
        si.height = caller_h;
        si.has_callees = sf->has_defined_callees;
      } else {
        si.function = sf->callee;
        const std::string &callee = sf->callee_name;
        si.callee_name = callee;
        si.name = callee + "() @" + base + ":" + std::to_string(sf->line);
        bool callee_defined = sf->callee_defined;
        // call targets (virtual overrides, indirect candidates, template patterns whose
        // callee the site table could not resolve)
        auto targets = ws::call_targets(*db, site);
        int target_h = -1;
        auto ntargets = targets.size();
        bool dispatch = ntargets > 1;
        for (const auto &t : targets) {
          target_h = std::max(target_h, t.height);
          dispatch = dispatch || t.dispatch;
        }
        si.dispatch = dispatch;
        if (dispatch) {
          // A virtual or indirect call names the dispatch, not one function: it sits one
          // level above the highest of its targets, so an instrumented target's body
          // below it is more specific.
          si.height = target_h + 1;
        } else if (callee_defined && sf->callee_height >= 0) {
          si.height = std::max(sf->callee_height, target_h);
        } else if (ntargets > 0) {
          si.height = target_h;
        } else {
          // Outside the program (libc, a library): its height in our call graph is
          // unknown (0 only because its body is not seen). The call is a statement of
          // the caller, the deepest code the user can change: rank it at the caller's
          // height (docs/statistics.md, "Specificity and score").
          si.external = true;
          si.height = caller_h;
        }
        si.has_callees = callee_defined || ntargets > 0;
      }
    }
    f.sites[site] = si;
  }
  return f;
}

// Site ids at or above this (16M) stay out of the engine's dense site table.
constexpr ws::SiteId kSiteTableLimit = 16777216;

EngineOptions engine_options(ws::Database *db) {
  EngineOptions eopt;
  if (db) {
    eopt.site_function = ws::site_function_table(*db, kSiteTableLimit);
    eopt.calls = ws::call_edges(*db);
  }
  return eopt;
}

// ---- load -----------------------------------------------------------------------------

// What the dropped records cost the analysis, by the kind of thread that lost them: a
// stream working for intervals loses the intervals after its limit (the analysis covers
// mostly the start of the run); a background thread (no interval mark before its limit)
// loses only its time on the paths that reach it as a waker, which becomes (untracked).
std::string drop_warning(const trace::Trace &tr, const EngineOutput &eo) {
  std::size_t working = 0, background = 0;
  const auto &streams = tr.streams();
  for (std::size_t i = 0; i < streams.size(); ++i) {
    if (streams[i].info().dropped == 0)
      continue;
    const bool marks = i < eo.stream_interval_marks.size() && eo.stream_interval_marks[i];
    ++(marks ? working : background);
  }
  std::string w = std::to_string(eo.dropped) +
                  " records were dropped by the runtime: thread streams reached the stream cap "
                  "(stream_cap_mb in vprof.toml, the program's VPROF_MAX_THREAD_MB; default 256 "
                  "MiB) and recorded nothing after it. ";
  if (working)
    w += std::to_string(working) +
         " of them worked for intervals, so the intervals after that point are missing or "
         "incomplete: the analysis covers mostly the start of the run (" +
         std::to_string(eo.intervals_finished) + " finished intervals). ";
  if (background)
    w += std::to_string(background) +
         " of them are background threads (no interval of their own before the limit): the "
         "intervals are all there, but where their critical paths reach such a thread as a "
         "waker after its limit, its work shows as (untracked). ";
  w += "Raise stream_cap_mb in vprof.toml (VPROF_MAX_THREAD_MB in the program's environment "
       "when it runs without vprof), run a shorter workload, or plan fewer functions; a run "
       "with drops never decides the loop's stopping rule";
  return w;
}

// Several hosts with one pid: interval ids carry the pid, so their intervals (and the
// processes' identities, e.g. the host of an exported interval) may be mixed up. Said loudly.
void warn_repeated_pids(const trace::Trace &tr, AnalysisResult &res) {
  std::map<std::uint32_t, std::set<std::uint32_t>> hosts_of_pid;
  for (const auto &p : tr.processes())
    hosts_of_pid[p.pid].insert(p.host);
  for (const auto &[pid, hosts] : hosts_of_pid)
    if (hosts.size() > 1) {
      std::string dirs;
      for (auto h : hosts)
        dirs += (dirs.empty() ? "" : ", ") + tr.hosts()[h].dir.string();
      res.warnings.push_back("pid " + std::to_string(pid) + " ran on several hosts (" + dirs +
                             "): their interval ids may collide; begin intervals with "
                             "VPROF_INTERVAL_BEGIN_ID and ids of your own (docs/multihost.md, "
                             "\"Limits\")");
    }
}

// res.hosts and res.trace_dir from a trace of several directories, with a loud warning for
// every host whose clock could not be placed well.
void host_clocks(const trace::Trace &tr, AnalysisResult &res) {
  if (tr.hosts().size() < 2)
    return;
  res.trace_dir.clear();
  for (const auto &h : tr.hosts()) {
    HostClock c;
    c.dir = h.dir.string();
    c.hostname = h.hostname;
    c.clock_samples = h.clock_samples;
    c.offset_ns = h.offset_ns;
    c.skew_bound_ns = h.skew_bound_ns;
    c.edges_out = h.edges_out;
    c.edges_in = h.edges_in;
    c.violations = h.violations;
    c.worst_violation_ns = h.worst_violation_ns;
    res.trace_dir += (res.trace_dir.empty() ? "" : ", ") + c.dir;
    if (h.violations)
      res.warnings.push_back(
          "CAUSALITY: " + std::to_string(h.violations) + " message edges into " + c.dir +
          " are received before they were sent on the merged time line (by up to " +
          std::to_string(static_cast<long long>(h.worst_violation_ns)) +
          " ns): its clock drifts or messages were paired wrongly; cross-host waits are "
          "unreliable");
    else if (&h != &tr.hosts().front() && h.skew_bound_ns < 0)
      res.warnings.push_back(
          c.dir + ": no message edges both to and from the other hosts: its clock offset is "
                  "not bounded (its wall clock is trusted where causality allows)");
    res.hosts.push_back(std::move(c));
  }
  const auto &m = tr.messages();
  if (m.ambiguous)
    res.warnings.push_back(std::to_string(m.ambiguous) +
                           " message receives have a key sent from several other hosts: not "
                           "used to align the clocks");
  warn_repeated_pids(tr, res);
}

// Begins without ends and ends without begins: a note while they are a few (the intervals
// still running when the workload stopped), a warning when they are a real part of the run
// (more than 1 % of the finished intervals: the marks do not pair, and the analysis misses them).
void interval_mark_notes(const EngineOutput &eo, AnalysisResult &res) {
  const double finished = static_cast<double>(eo.intervals_finished);
  auto add = [&](std::uint64_t n, const std::string &what) {
    if (n == 0)
      return;
    const bool many = static_cast<double>(n) > 0.01 * finished;
    std::string text = std::to_string(n) + what;
    if (many)
      res.warnings.push_back(text + ": more than 1 % of the " +
                             std::to_string(eo.intervals_finished) +
                             " finished intervals; check that every VPROF_INTERVAL_BEGIN has "
                             "its VPROF_INTERVAL_END");
    else
      res.notes.push_back(text);
  };
  add(eo.intervals_unfinished, " intervals began but never ended (ignored)");
  add(eo.intervals_unmatched_end, " interval ends without a matching begin (ignored)");
}

// res.kernel from the engine's counters, with the reader's warnings about sched.vpk and a
// loud one when its recorder lost events.
void kernel_waits(const trace::Trace &tr, const EngineOutput &eo, AnalysisResult &res) {
  KernelWaitStats &k = res.kernel;
  k.files = eo.sched_files;
  k.lost = eo.sched_lost;
  k.waits = eo.kernel_waits;
  k.edges = eo.kernel_edges;
  k.filled = eo.kernel_filled;
  k.clamped = eo.kernel_clamped;
  k.io_device = eo.pseudo_waits[kPseudoIo];
  k.net_receive = eo.pseudo_waits[kPseudoNet];
  k.timer = eo.pseudo_waits[kPseudoTimer];
  k.other_process = eo.pseudo_waits[kPseudoProcess];
  k.unrecorded_thread = eo.pseudo_waits[kPseudoUnrecorded];
  for (const auto &w : tr.warnings())
    res.warnings.push_back(w);
  if (k.lost)
    res.warnings.push_back(
        "KERNEL EVENTS LOST: the kernel recorder lost " + std::to_string(k.lost) +
        " scheduler records (its ring buffer was full): the waits they belonged to have no "
        "kernel waker or end early; record again with a bigger --ring-mb");
}

AnalysisResult load_result(const trace::Trace &tr, EngineOutput &eo) {
  AnalysisResult res;
  res.trace_dir = tr.dir().string();
  host_clocks(tr, res);
  res.message_edges = eo.message_edges;
  res.cross_host_edges = eo.cross_host_edges;
  res.messages_unmatched = eo.messages_unmatched;
  res.messages_unreceived = eo.messages_unreceived;
  if (eo.messages_unmatched)
    res.warnings.push_back(std::to_string(eo.messages_unmatched) +
                           " message receives (VPROF_MSG_RECV) had no unreceived send of their "
                           "key before them: no edge (a sender not traced, or not analysed "
                           "with these directories?)");
  if (eo.messages_unreceived)
    res.warnings.push_back(std::to_string(eo.messages_unreceived) +
                           " message sends (VPROF_MSG_SEND) were never received in the "
                           "traces analysed");
  res.records = eo.records;
  res.streams = tr.streams().size();
  res.processes = tr.processes().size();
  for (const auto &p : tr.processes())
    if (p.cpu_ns) {
      res.cpu_ns += static_cast<double>(*p.cpu_ns);
      ++res.cpu_processes;
    }
  res.dropped = eo.dropped;
  res.max_stream_records = eo.max_stream_records;
  res.critical_records = eo.critical_records;
  res.site_calls = std::move(eo.site_calls);
  res.intervals = eo.intervals_finished;
  res.intervals_unfinished = eo.intervals_unfinished;
  res.wake_edges = eo.wake_edges;
  kernel_waits(tr, eo, res);
  res.abandoned_frames = eo.abandoned_frames;
  res.path_sum_mismatches = eo.path_sum_mismatches;
  res.inexact_splits = eo.inexact_splits;
  res.ticks_per_second = eo.ticks_per_second;
  if (eo.intervals_finished && eo.ticks_per_second > 0)
    res.span_ns = static_cast<double>(eo.last_end - eo.first_begin) * 1e9 / eo.ticks_per_second;
  res.cores = std::thread::hardware_concurrency();
  if (eo.dropped)
    res.warnings.push_back(drop_warning(tr, eo));
  interval_mark_notes(eo, res);
  if (eo.path_sum_mismatches)
    res.warnings.push_back(std::to_string(eo.path_sum_mismatches) +
                           " intervals whose critical path does not sum to L (a bug in vprof: "
                           "please report it with the trace)");
  if (eo.clock_regressions)
    res.notes.push_back(std::to_string(eo.clock_regressions) +
                        " records earlier than their predecessor (clamped)");
  if (eo.unmatched_exits)
    res.notes.push_back(std::to_string(eo.unmatched_exits) +
                        " probe exits without an open frame (a fork child's inherited frames, "
                        "or a function left by longjmp)");
  return res;
}

// ---- naming and heights ---------------------------------------------------------------

void name_nodes(const EngineOutput &eo, const DbFacts &facts, AnalysisResult &res) {
  const std::size_t N = eo.nodes.size();
  res.nodes.resize(N);
  for (std::size_t i = 0; i < N; ++i) {
    const auto &d = eo.nodes[i];
    Node &n = res.nodes[i];
    n.id = static_cast<int>(i);
    if (i == 0) {
      n.kind = Node::Kind::Root;
      n.name = "(interval)";
      n.path = "/";
      continue;
    }
    n.parent = static_cast<int>(d.parent);
    const Node &p = res.nodes[d.parent];
    n.depth = p.depth + 1;
    std::string prefix = p.path == "/" ? "" : p.path;
    if (d.label == kLabelUntracked) {
      n.kind = Node::Kind::Untracked;
      n.name = "(untracked)";
      n.path = prefix + "/untracked";
    } else if (d.label >= kLabelWakerBase) {
      // what woke a kernel wait when no traced thread did: a wait-kind node below it
      const auto p = static_cast<unsigned>(d.label - kLabelWakerBase);
      n.kind = Node::Kind::Wait;
      n.wait = pseudo_waker_tag(p);
      n.name = pseudo_waker_name(p);
      n.path = prefix + "/wait:" + n.wait;
      n.height = 0;
    } else if (d.label >= kLabelWaitBase) {
      n.kind = Node::Kind::Wait;
      n.wait = wait_kind_name(static_cast<unsigned>(d.label - kLabelWaitBase));
      n.name = d.label == kLabelWaitBase + kWakeup ? "[wake-up delay]" : "[wait:" + n.wait + "]";
      n.path = prefix + "/wait:" + n.wait;
      n.height = 0;
    } else {
      n.kind = Node::Kind::Site;
      n.site = static_cast<std::int64_t>(d.label);
      n.path = prefix + "/s" + std::to_string(n.site);
      auto it = facts.sites.find(n.site);
      if (it != facts.sites.end() && !it->second.kind.empty()) {
        n.name = it->second.name;
        n.function = it->second.function;
        n.height = it->second.height;
      } else {
        n.name = "site " + std::to_string(n.site);
      }
    }
  }
}

NodeFacts heights_and_specificity(const DbFacts &facts, AnalysisResult &res) {
  const std::size_t N = res.nodes.size();
  NodeFacts nf;
  int max_depth = 0;
  for (const auto &n : res.nodes)
    max_depth = std::max(max_depth, n.depth);
  bool use_db_heights = facts.have && facts.H >= 0;
  res.heights_from_db = use_db_heights;
  // Waker contexts: the nearest wait ancestor of every node and the waker's top frame
  // (the child of that wait node on the path). Node ids grow from parents to children.
  nf.wait_anc.assign(N, -1);
  nf.top_of.assign(N, -1);
  for (std::size_t i = 1; i < N; ++i) {
    int p = res.nodes[i].parent;
    bool pw = res.nodes[p].kind == Node::Kind::Wait;
    nf.wait_anc[i] = pw ? p : nf.wait_anc[p];
    nf.top_of[i] = pw ? static_cast<int>(i) : nf.top_of[p];
  }
  // H, the root's height: the workspace's value, raised to the height of every function
  // on the interval's own path (outside waker contexts), so that no node there is "above"
  // the root (an RAII annotation can mark the annotation class instead of the user's
  // function, which leaves the workspace value too low).
  int H = max_depth;
  if (use_db_heights) {
    H = facts.H;
    for (std::size_t i = 1; i < N; ++i)
      if (res.nodes[i].kind == Node::Kind::Site && nf.wait_anc[i] < 0)
        H = std::max(H, res.nodes[i].height);
  }
  res.H = H;
  // h(x): call-graph height of the function behind x (an unknown one: its parent's - 1);
  // a wait node sits one level below its enclosing node; without a call graph, H - depth.
  std::vector<int> hraw(N, 0);
  for (std::size_t i = 1; i < N; ++i) {
    const Node &n = res.nodes[i];
    int ph = n.parent == 0 ? H : hraw[n.parent];
    if (!use_db_heights)
      hraw[i] = std::max(0, H - n.depth);
    else if (n.kind == Node::Kind::Site && n.height >= 0)
      hraw[i] = n.height;
    else
      hraw[i] = std::max(0, ph - 1);
  }
  if (N > 0)
    hraw[0] = H;
  // specificity per node (docs/statistics.md): the squared distance from the root in
  // call-graph levels, (H - h)^2 on the interval's own path; across a wake-up edge the
  // distance continues into the waker's call tree: dist(x) = dist(w) + (Hw - h(x)), with
  // w the wait node and Hw - 1 the height of the waker's top frame, so the waker's frames
  // are more specific than the wait they explain, deeper ones more so.
  std::vector<double> dist(N, 0.0);
  nf.spec.assign(N, 0.0);
  // A kernel wait is part of the time of the function (or the outside call) that waited,
  // and so are its pseudo-waker and wake-up delay below it: as specific as that frame, not a
  // level below it, and not "waker's work" — so the frame's whole time, not a slice of it
  // that names no code ("[io] block device"), ranks as the answer. A traced waker's frames
  // below the wait keep the waker rule.
  std::vector<char> of_frame(N, 0);
  for (std::size_t i = 1; i < N; ++i) {
    const Node &n = res.nodes[i];
    int w = nf.wait_anc[i];
    of_frame[i] = n.kind == Node::Kind::Wait && (is_kernel_wait_name(n.wait) || of_frame[n.parent]);
    if (of_frame[i]) {
      dist[i] = dist[n.parent];
    } else if (n.kind == Node::Kind::Untracked) {
      dist[i] = w < 0 ? 0.0 : dist[w];
    } else if (w < 0) {
      dist[i] = H - std::clamp(hraw[i], 0, H);
    } else {
      int hw = std::max(0, hraw[nf.top_of[i]]) + 1;
      dist[i] = dist[w] + (hw - std::clamp(hraw[i], 0, hw - 1));
    }
    nf.spec[i] = dist[i] * dist[i];
  }
  nf.kids.assign(N, {});
  for (std::size_t i = 1; i < N; ++i)
    nf.kids[res.nodes[i].parent].push_back(static_cast<int>(i));
  // the observed ranking's levels (the default; the static rule above is VProfiler's): a
  // kernel wait and a call of an outside function are part of the frame that makes them, a
  // function's body below its call is that function (one level)
  std::vector<char> in_frame = of_frame;
  for (std::size_t i = 1; i < N; ++i) {
    const Node &n = res.nodes[i];
    auto it = n.kind == Node::Kind::Site ? facts.sites.find(n.site) : facts.sites.end();
    if (it == facts.sites.end())
      continue;
    const Node &p = res.nodes[static_cast<std::size_t>(n.parent)];
    const bool body_of_call = it->second.kind == "body" && p.kind == Node::Kind::Site &&
                              n.function != 0 && p.function == n.function;
    if (it->second.external || body_of_call)
      in_frame[i] = 1;
  }
  observed_levels(res, in_frame, nf);
  subtree_ranges(nf);
  return nf;
}

// ---- places (docs/statistics.md, "Places") --------------------------------------------

// The waiter's wake-up delay below a wait node (the engine's kWakeup child).
bool is_wakeup_delay(const AnalysisResult &res, int node) {
  const Node &n = res.nodes[static_cast<std::size_t>(node)];
  return n.kind == Node::Kind::Wait && n.parent >= 0 &&
         res.nodes[static_cast<std::size_t>(n.parent)].kind == Node::Kind::Wait &&
         n.wait == wait_kind_name(kWakeup);
}

// A kernel wait (or its pseudo-waker or wake-up delay) directly inside a timed call of an
// outside function: the place the call's time belongs to takes it too.
bool in_outside_call(const AnalysisResult &res, const PlaceTable &pt, int node) {
  const Node &n = res.nodes[static_cast<std::size_t>(node)];
  if (n.parent <= 0)
    return false;
  const Node &p = res.nodes[static_cast<std::size_t>(n.parent)];
  const int pp = pt.place_of[static_cast<std::size_t>(n.parent)];
  if (pp < 0)
    return false;
  if (p.kind == Node::Kind::Site)
    return pt.kind[static_cast<std::size_t>(pp)] == Place::Kind::Call &&
           is_kernel_wait_name(n.wait);
  // below a folded kernel wait: its pseudo-waker and its wake-up delay (not a waker's frames)
  return p.kind == Node::Kind::Wait && n.kind == Node::Kind::Wait && pt.folded[n.parent];
}

// Every site and wait node belongs to one place, the root to "outside probed functions"
// (its body: the interval's own time where no probed frame is open), (untracked) to none. A
// call of a function defined in the program belongs to the callee (with its body below it:
// one place), a call of an outside function to "callee in caller", a wait to "kind in the
// function that waited"; below a wait node, places are the waker's and are kept apart per
// wait.
PlaceTable assign_places(const AnalysisResult &res, const DbFacts &facts) {
  const std::size_t N = res.nodes.size();
  PlaceTable pt;
  pt.place_of.assign(N, -1);
  pt.folded.assign(N, 0);
  std::unordered_map<std::string, int> place_index;
  if (N > 0) {
    pt.key.push_back(kOutsideKey);
    pt.name.push_back(kOutsideName);
    pt.function.push_back(0);
    pt.holder.push_back(0);
    pt.site.push_back(0);
    pt.kind.push_back(Place::Kind::Outside);
    pt.wakeup_delay.push_back(0);
    pt.place_of[0] = 0;
    place_index.emplace(kOutsideKey, 0);
  }
  // the function whose code a node's time runs in (key, name); an unknown site stands for
  // itself
  std::vector<std::string> encl_key(N), encl_name(N);
  std::vector<std::int64_t> encl_fn(N, 0);
  // a call of a program function whose body the plan does not probe: the calling function
  // (key, name), so that a wait inside it is a place per caller — LevelDB's writer queue
  // and its compaction wait both wait in CondVar::Wait, called from DBImpl::Write and from
  // MakeRoomForWrite
  std::vector<std::string> call_from_key(N), call_from_name(N);
  for (std::size_t i = 1; i < N; ++i) {
    const Node &n = res.nodes[i];
    encl_key[i] = encl_key[n.parent];
    encl_name[i] = encl_name[n.parent];
    encl_fn[i] = encl_fn[n.parent];
    std::string key, name;
    std::int64_t fn = 0, holder = 0, psite = 0;
    Place::Kind pkind = Place::Kind::Function;
    bool wakeup_delay = false;
    if (n.kind == Node::Kind::Untracked) {
      continue;
    } else if (n.kind == Node::Kind::Wait && in_outside_call(res, pt, static_cast<int>(i))) {
      // a kernel wait inside a timed call of an outside function (fdatasync, read) is that
      // call's time, as it was before the kernel's events split it: one place, the call's;
      // its waker's work (if a traced thread woke it) reaches the path through that place
      pt.place_of[i] = pt.place_of[n.parent];
      pt.folded[i] = 1;
      continue;
    } else if (n.kind == Node::Kind::Wait && is_wakeup_delay(res, static_cast<int>(i))) {
      // the waiter's delay after the release: a place of its own beside the wait's
      const int wp = pt.place_of[n.parent];
      pkind = Place::Kind::Wait;
      wakeup_delay = true;
      holder = pt.holder[wp];
      key = "w:wakeup@" + pt.key[wp];
      name = n.name + " after " + pt.name[wp];
    } else if (n.kind == Node::Kind::Wait) {
      pkind = Place::Kind::Wait;
      holder = encl_fn[n.parent];
      key = "w:" + n.wait + "@" + encl_key[n.parent];
      name = n.name + " in " + (encl_name[n.parent].empty() ? "(interval)" : encl_name[n.parent]);
      if (!call_from_key[n.parent].empty()) {
        key += "<" + call_from_key[n.parent];
        name += " from " + call_from_name[n.parent];
      }
    } else {
      auto it = facts.sites.find(n.site);
      const SiteInfo *si =
          it == facts.sites.end() || it->second.kind.empty() ? nullptr : &it->second;
      if (!si) {
        pkind = Place::Kind::Site;
        psite = n.site;
        key = "s:" + std::to_string(n.site);
        name = n.name;
        encl_key[i] = key;
        encl_name[i] = name;
        encl_fn[i] = 0;
      } else if (si->kind == "body" || (si->function && !si->dispatch && !si->external)) {
        fn = si->function;
        key = "f:" + std::to_string(fn);
        name = si->kind == "body" ? si->name : si->callee_name;
        encl_key[i] = "f:" + std::to_string(fn);
        encl_name[i] = name;
        encl_fn[i] = fn;
        if (si->kind != "body" && si->caller) {
          call_from_key[i] = "f:" + std::to_string(si->caller);
          call_from_name[i] = si->caller_name;
        }
      } else {
        pkind = si->external ? Place::Kind::Call : Place::Kind::Site;
        holder = si->caller;
        psite = si->external ? 0 : n.site;
        key = si->external ? "x:" + si->callee_name + "@" + std::to_string(si->caller)
                           : "s:" + std::to_string(n.site);
        name = si->external ? si->callee_name + "() in " + si->caller_name : n.name;
        encl_key[i] = "f:" + std::to_string(si->caller);
        encl_name[i] = si->caller_name;
        encl_fn[i] = si->caller;
      }
    }
    auto [it, fresh] = place_index.try_emplace(key, static_cast<int>(pt.key.size()));
    if (fresh) {
      pt.key.push_back(key);
      pt.name.push_back(name);
      pt.function.push_back(fn);
      pt.holder.push_back(holder);
      pt.site.push_back(psite);
      pt.kind.push_back(pkind);
      pt.wakeup_delay.push_back(wakeup_delay);
    }
    pt.place_of[i] = it->second;
  }
  // how a node reaches the critical path: -1 on the interval's own path, else the place of
  // its outermost wait ancestor (the wait on the own path whose waker's work it is)
  pt.via_of.assign(N, -1);
  for (std::size_t i = 1; i < N; ++i) {
    int p = res.nodes[i].parent;
    if (is_wakeup_delay(res, static_cast<int>(i))) { // on the path the wait itself is on
      pt.via_of[i] = pt.via_of[p];
      continue;
    }
    pt.via_of[i] = pt.via_of[p] >= 0                       ? pt.via_of[p]
                   : res.nodes[p].kind == Node::Kind::Wait ? pt.place_of[p]
                                                           : -1;
  }
  return pt;
}

// ---- trees ----------------------------------------------------------------------------

Terms variance_trees(const AnalysisResult &res, const DbFacts &facts, const NodeFacts &nf,
                     const PlaceTable &pt, const GroupTimes &gt, const AnalyzeOptions &opt,
                     GroupResult &gr) {
  const Eigen::Index C = static_cast<Eigen::Index>(gt.present.size());
  const double varL = gr.latency.var_ns2;
  auto spec_of = [&](int node, bool body) { return body && node == 0 ? 0.0 : nf.spec[node]; };
  auto is_leaf = [&](int node, bool body) {
    const Node &n = res.nodes[node];
    if (body)
      return node != 0;
    if (!nf.kids[node].empty())
      return false;
    if (n.kind == Node::Kind::Untracked || n.kind == Node::Kind::Wait)
      return true;
    if (n.kind == Node::Kind::Site) {
      auto it = facts.sites.find(n.site);
      if (it == facts.sites.end() || it->second.kind.empty())
        return true;
      // a body: its function's callees can be instrumented; a call site: its callee or
      // call targets can (not an external function's)
      return !it->second.has_callees;
    }
    return true;
  };
  Terms terms;
  auto &factors = terms.factors;
  auto &factor_cols = terms.cols;
  for (Eigen::Index c = 0; c < C; ++c) {
    int nd = gt.present[c];
    NodeStats ns;
    ns.node = nd;
    // T_n is variable c of the columns' moments, B_n variable C + c
    ns.mean_ns = gt.cols.mean(c);
    ns.var_ns2 = gt.cols.var(c);
    ns.body_mean_ns = gt.cols.mean(C + c);
    ns.body_var_ns2 = gt.cols.var(C + c);
    ns.share = varL > 0 ? ns.var_ns2 / varL : 0;
    ns.contribution = varL > 0 ? gt.cols.cov_ref(c) / varL : 0;
    ns.body_contribution = varL > 0 ? gt.cols.cov_ref(C + c) / varL : 0;
    const auto &ch = gt.kids[nd];
    if (!ch.empty()) {
      ns.expanded = true;
      const Eigen::Index k = static_cast<Eigen::Index>(ch.size());
      std::vector<Col> cols;
      for (Eigen::Index j = 0; j < k; ++j)
        cols.push_back({ch[j], false});
      cols.push_back({nd, true});
      // Cov of [T of the children..., B_n], from the node's cross-products
      const MatrixXd Cov = gt.trees.at(nd).cov();
      double total = Cov.sum(), scale = std::max(std::abs(ns.var_ns2), Cov.cwiseAbs().sum());
      ns.residual = scale > 0 ? std::abs(total - ns.var_ns2) / scale : 0;
      gr.max_residual = std::max(gr.max_residual, ns.residual);
      auto key_of = [&](const Col &cc) {
        return res.nodes[cc.node].path + (cc.body ? "#body" : "");
      };
      auto name_of = [&](const Col &cc) {
        return cc.body ? "body(" + res.nodes[cc.node].name + ")" : res.nodes[cc.node].name;
      };
      // the waker's work: say whose wait it fills (the same function appears on the
      // interval's own path too)
      auto context_of = [&](int node) {
        return pt.via_of[node] >= 0 ? "  (waker of " + pt.name[pt.via_of[node]] + ")"
                                    : std::string();
      };
      // A call site whose one child is the callee's body: Var of the body is the call's
      // variance less the probe gap between them, the same factor twice; the call site's
      // term (one level up, with its position) stands for both.
      const bool call_with_body = k == 1 && res.nodes[nd].kind == Node::Kind::Site &&
                                  res.nodes[ch[0]].kind == Node::Kind::Site &&
                                  res.nodes[nd].function != 0 &&
                                  res.nodes[ch[0]].function == res.nodes[nd].function &&
                                  facts.sites.count(res.nodes[ch[0]].site) &&
                                  facts.sites.at(res.nodes[ch[0]].site).kind == "body";
      // the part of each member's variance that reaches the node: min(Var(X_i),
      // Cov(X_i, T_n)) — what the rest of the node cancels (a negative covariance with
      // it) is taken off; a positive one stays a covariance term of its own
      VectorXd reaching(k + 1);
      for (Eigen::Index i = 0; i <= k; ++i)
        reaching[i] = std::min(Cov(i, i), Cov.row(i).sum());
      for (Eigen::Index i = 0; i <= k; ++i)
        for (Eigen::Index j = i; j <= k; ++j) {
          double term = i == j ? Cov(i, i) : 2 * Cov(i, j);
          if (term == 0 || (call_with_body && i == 0 && j == 0))
            continue;
          Factor f;
          f.parent = nd;
          f.a = cols[i].node;
          f.a_body = cols[i].body;
          if (i == j) {
            f.kind = Factor::Kind::Variance;
            f.key = "var:" + key_of(cols[i]);
            f.name = "Var " + name_of(cols[i]) + context_of(f.a);
            f.specificity = spec_of(f.a, f.a_body);
            f.leaf = is_leaf(f.a, f.a_body);
          } else {
            f.kind = Factor::Kind::Covariance;
            f.b = cols[j].node;
            f.b_body = cols[j].body;
            f.key = "cov:" + key_of(cols[i]) + "|" + key_of(cols[j]);
            f.name = "Cov " + name_of(cols[i]) + ", " + name_of(cols[j]) + context_of(f.a);
            f.specificity = std::min(spec_of(f.a, f.a_body), spec_of(f.b, f.b_body));
            f.leaf = is_leaf(f.a, f.a_body) && is_leaf(f.b, f.b_body);
          }
          f.term_ns2 = term;
          f.share = varL > 0 ? term / varL : 0;
          f.share_lo = f.share_hi = f.share;
          f.net_share = i != j ? f.share : varL > 0 ? reaching[i] / varL : 0;
          f.vprofiler_score = f.specificity * f.share;
          f.score = opt.ranking == Ranking::Net ? f.specificity * f.net_share : f.vprofiler_score;
          f.noise = std::abs(f.share) < opt.noise_share;
          factors.push_back(f);
          factor_cols.push_back({cols[i], i == j ? Col{-1, false} : cols[j]});
        }
    }
    gr.nodes.push_back(ns);
  }
  return terms;
}

// ---- places and waits -----------------------------------------------------------------

// X_p = the self times of p's nodes (a leaf's self time is its whole time). The root's
// body is the place "outside probed functions" when some interval of the group spent time
// there; its specificity is kOutsideSpecificity (the root's own is 0).
void place_stats(const NodeFacts &nf, const PlaceTable &pt, const GroupTimes &gt,
                 const AnalyzeOptions &opt, GroupResult &gr) {
  const Eigen::Index C = static_cast<Eigen::Index>(gt.present.size());
  const double varL = gr.latency.var_ns2;
  std::vector<int> gplace(pt.key.size(), -1), plist;
  // column 0 is the root; its body joins when it ever held time (times are never negative:
  // its mean is above 0)
  const Eigen::Index first = C > 0 && gt.cols.count() > 0 && gt.cols.mean(C) > 0 ? 0 : 1;
  auto spec_of = [&](int node) { return node == 0 ? kOutsideSpecificity : nf.spec[node]; };
  for (Eigen::Index c = first; c < C; ++c) {
    int p = pt.place_of[gt.present[c]];
    if (p >= 0 && gplace[p] < 0) {
      gplace[p] = static_cast<int>(plist.size());
      plist.push_back(p);
    }
  }
  const Eigen::Index P = static_cast<Eigen::Index>(plist.size());
  std::vector<int> contexts(plist.size(), 0);
  // the same split by the way the place reaches the critical path (own path or one
  // wait's waker): its contributions and the specificity of each way
  std::map<std::pair<int, int>, int> route_col;
  std::vector<std::pair<int, int>> routes;
  std::vector<double> route_spec;
  for (Eigen::Index c = first; c < C; ++c) {
    int nd = gt.present[c];
    int p = pt.place_of[nd];
    if (p < 0)
      continue;
    ++contexts[gplace[p]];
    auto [it, fresh] =
        route_col.try_emplace({gplace[p], pt.via_of[nd]}, static_cast<int>(routes.size()));
    if (fresh) {
      routes.push_back({gplace[p], pt.via_of[nd]});
      route_spec.push_back(spec_of(nd));
    }
    route_spec[it->second] = std::min(route_spec[it->second], spec_of(nd));
  }
  // one pass: each place's time X_p (variable q) and each route's R_r (variable P + r), the
  // sums of their nodes' self times, against L
  const Eigen::Index NR = static_cast<Eigen::Index>(routes.size());
  std::vector<std::pair<Eigen::Index, Eigen::Index>> vars_of(static_cast<std::size_t>(C), {-1, -1});
  for (Eigen::Index c = first; c < C; ++c) {
    int nd = gt.present[c];
    if (pt.place_of[nd] >= 0)
      vars_of[c] = {gplace[pt.place_of[nd]],
                    P + route_col[{gplace[pt.place_of[nd]], pt.via_of[nd]}]};
  }
  RefMoments xm(P + NR);
  MatrixXd XR;
  for_each_block(gt, [&](Eigen::Index, const MatrixXd &S, const MatrixXd &T) {
    XR.setZero(S.rows(), P + NR);
    for (Eigen::Index c = first; c < C; ++c)
      if (vars_of[c].first >= 0) {
        XR.col(vars_of[c].first) += S.col(c);
        XR.col(vars_of[c].second) += S.col(c);
      }
    xm.add_rows(XR, T.col(0));
  });
  // the context (node) carrying most of each place's contribution
  std::vector<int> best_node(plist.size(), -1);
  std::vector<double> best_cov(plist.size(), -std::numeric_limits<double>::infinity());
  for (Eigen::Index c = first; c < C; ++c) {
    int nd = gt.present[c];
    if (pt.place_of[nd] < 0)
      continue;
    // a kernel wait folded into an outside call's place is no context of its own: the call's
    // node (the site a plan times) stands for the place
    if (pt.folded[static_cast<std::size_t>(nd)])
      continue;
    int q = gplace[pt.place_of[nd]];
    double cv = gt.cols.cov_ref(C + c); // Cov(B_n, L)
    if (cv > best_cov[static_cast<std::size_t>(q)]) {
      best_cov[static_cast<std::size_t>(q)] = cv;
      best_node[static_cast<std::size_t>(q)] = nd;
    }
  }
  std::vector<std::vector<std::pair<double, int>>> by_place(plist.size()); // (contrib, route)
  for (std::size_t r = 0; r < routes.size(); ++r) {
    const double cv = xm.cov_ref(P + static_cast<Eigen::Index>(r));
    by_place[routes[r].first].push_back({varL > 0 ? cv / varL : 0, static_cast<int>(r)});
  }
  for (Eigen::Index q = 0; q < P; ++q) {
    int p = plist[q];
    Place pl;
    pl.key = pt.key[p];
    pl.name = pt.name[p];
    pl.function = pt.function[p];
    pl.kind = pt.kind[p];
    pl.wakeup_delay = pt.wakeup_delay[p] != 0;
    pl.holder = pt.holder[p];
    pl.site = pt.site[p];
    pl.node = best_node[q];
    pl.contexts = contexts[q];
    pl.mean_ns = xm.mean(q);
    pl.var_ns2 = xm.var(q);
    pl.share = varL > 0 ? pl.var_ns2 / varL : 0;
    pl.contribution = varL > 0 ? xm.cov_ref(q) / varL : 0;
    auto &ways = by_place[q];
    std::sort(ways.begin(), ways.end(), [&](const auto &a, const auto &b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (const auto &[contrib, r] : ways) {
      int w = routes[r].second;
      pl.via.push_back({w < 0 ? "" : pt.name[w], contrib});
    }
    // the specificity of the way that carries most of it (its contexts' smallest)
    pl.specificity = route_spec[ways.front().second];
    pl.waker = routes[ways.front().second].second >= 0;
    pl.vprofiler_score = pl.specificity * pl.share;
    pl.score = opt.ranking == Ranking::Net ? pl.specificity * pl.contribution : pl.vprofiler_score;
    pl.noise = std::max(std::abs(pl.share), std::abs(pl.contribution)) < opt.noise_share;
    gr.places.push_back(std::move(pl));
  }
  // the observed ranking: each place at the context carrying most of it, the nested rule
  // over contributions (docs/statistics.md); VProfiler's: static specificity x share
  std::vector<double> level(gr.places.size(), 0);
  if (opt.ranking == Ranking::Net) {
    std::vector<NestedItem> items;
    for (const auto &pl : gr.places) {
      const auto nd = static_cast<std::size_t>(std::max(pl.node, 0));
      items.push_back({pl.node, pl.node < 0 ? 0.0 : static_cast<double>(nf.level[nd]), pl.node >= 0,
                       pl.contribution, pl.contribution, pl.noise});
    }
    const std::vector<double> keys = nested_keys(nf, items);
    for (std::size_t i = 0; i < gr.places.size(); ++i) {
      Place &pl = gr.places[i];
      pl.specificity = pl.node < 0 ? 0.0 : nf.observed[static_cast<std::size_t>(pl.node)];
      pl.score = keys[i];
      level[i] = items[i].level;
    }
  }
  std::vector<std::size_t> porder(gr.places.size());
  std::iota(porder.begin(), porder.end(), 0);
  std::sort(porder.begin(), porder.end(), [&](std::size_t x, std::size_t y) {
    const Place &a = gr.places[x], &b = gr.places[y];
    if (a.noise != b.noise)
      return b.noise;
    if (a.wakeup_delay != b.wakeup_delay) // the scheduler's time follows the code's
      return b.wakeup_delay;
    if (a.score != b.score)
      return a.score > b.score;
    if (level[x] != level[y]) // equal keys: the deeper place first
      return level[x] > level[y];
    if (a.share != b.share)
      return a.share > b.share;
    return a.key < b.key;
  });
  std::vector<Place> sorted;
  for (auto i : porder)
    sorted.push_back(std::move(gr.places[i]));
  gr.places = std::move(sorted);
  if (gr.places.size() > opt.max_factors)
    gr.places.resize(opt.max_factors);
}

// The waits on the interval's own path, each with the waker's work below it (T, not the
// self time): how much of Var(L) each kind of waiting stands for.
void wait_stats(const AnalysisResult &res, const NodeFacts &nf, const PlaceTable &pt,
                const GroupTimes &gt, GroupResult &gr) {
  const Eigen::Index C = static_cast<Eigen::Index>(gt.present.size());
  const double varL = gr.latency.var_ns2;
  std::vector<int> gw(pt.key.size(), -1), wlist;
  for (Eigen::Index c = 1; c < C; ++c) {
    int nd = gt.present[c];
    if (res.nodes[nd].kind != Node::Kind::Wait || nf.wait_anc[nd] >= 0)
      continue;
    int p = pt.place_of[nd];
    if (gw[p] < 0) {
      gw[p] = static_cast<int>(wlist.size());
      wlist.push_back(p);
    }
  }
  const Eigen::Index NW = static_cast<Eigen::Index>(wlist.size());
  std::vector<Eigen::Index> var_of(static_cast<std::size_t>(C), -1);
  std::vector<int> wctx(wlist.size(), 0);
  std::vector<double> wspec(wlist.size(), std::numeric_limits<double>::infinity());
  for (Eigen::Index c = 1; c < C; ++c) {
    int nd = gt.present[c];
    if (res.nodes[nd].kind != Node::Kind::Wait || nf.wait_anc[nd] >= 0)
      continue;
    int q = gw[pt.place_of[nd]];
    var_of[c] = q;
    ++wctx[q];
    wspec[q] = std::min(wspec[q], nf.spec[nd]);
  }
  if (NW == 0)
    return;
  // one pass: each kind's W_q, the sum of its waits' inclusive times, against L
  RefMoments wm(NW);
  MatrixXd W;
  for_each_block(gt, [&](Eigen::Index, const MatrixXd &, const MatrixXd &T) {
    W.setZero(T.rows(), NW);
    for (Eigen::Index c = 1; c < C; ++c)
      if (var_of[c] >= 0)
        W.col(var_of[c]) += T.col(c);
    wm.add_rows(W, T.col(0));
  });
  for (std::size_t q = 0; q < wlist.size(); ++q) {
    const auto v = static_cast<Eigen::Index>(q);
    Place pl;
    pl.key = pt.key[wlist[q]];
    pl.name = pt.name[wlist[q]];
    pl.kind = Place::Kind::Wait;
    pl.holder = pt.holder[wlist[q]];
    pl.contexts = wctx[q];
    pl.mean_ns = wm.mean(v);
    pl.var_ns2 = wm.var(v);
    pl.share = varL > 0 ? pl.var_ns2 / varL : 0;
    pl.contribution = varL > 0 ? wm.cov_ref(v) / varL : 0;
    pl.specificity = wspec[q];
    pl.vprofiler_score = pl.specificity * pl.share;
    pl.score = pl.specificity * pl.contribution;
    gr.waits.push_back(std::move(pl));
  }
  std::sort(gr.waits.begin(), gr.waits.end(), [](const Place &a, const Place &b) {
    if (a.contribution != b.contribution)
      return a.contribution > b.contribution;
    return a.key < b.key;
  });
}

// ---- ranking --------------------------------------------------------------------------

namespace {

// A factor as the nested rule sees it: a variance of T_a contains the terms of a's subtree;
// a body is half a level below its node and contains nothing, except the root's (the time
// outside every probed function, which stands for the code above the roots: an ancestor of
// everything, as is (untracked), which names no code, of its frame's subtree); a covariance
// sits at its sides' level in their parent and contains nothing.
// `spanning`: per node, a frame that spans the interval (the interval itself: at the root's
// level, containing all below it, like the root); `worth`: per node, the contribution of its
// function's place (0: none known).
NestedItem nested_item(const AnalysisResult &res, const NodeFacts &nf, const Factor &f,
                       const std::vector<char> &spanning, const std::vector<double> &worth,
                       const std::vector<int> &group) {
  auto level_of = [&](int node, bool body) {
    const auto nd = static_cast<std::size_t>(node);
    return node == 0 || spanning[nd] ? 0.0 : nf.level[nd] + (body ? 0.5 : 0.0);
  };
  NestedItem it;
  it.value = it.rank_value = f.net_share;
  it.noise = f.noise;
  if (f.kind == Factor::Kind::Covariance) {
    it.node = f.parent;
    it.level = std::min(level_of(f.a, f.a_body), level_of(f.b, f.b_body));
    return it;
  }
  const Node &n = res.nodes[static_cast<std::size_t>(f.a)];
  if (n.kind == Node::Kind::Untracked) {
    it.node = n.parent;
    it.level = nf.level[static_cast<std::size_t>(f.a)];
    it.contains = true;
    return it;
  }
  const auto a = static_cast<std::size_t>(f.a);
  it.node = f.a;
  it.level = level_of(f.a, f.a_body);
  it.contains = !f.a_body || f.a == 0 || spanning[a];
  if (!f.a_body)
    it.group = group[a];
  if (spanning[a] && !f.a_body) // the interval's own variance names nothing
    it.rank_value = 0;
  else if (f.a != 0)
    it.rank_value = std::max(it.rank_value, worth[a]);
  return it;
}

// A function's place contribution holds its covariances with its siblings. Where such a
// covariance carries more of Var(L) than the function's own variance (two functions slow
// together: a shared cause), that covariance is a factor of its own and the story; the
// function's worth keeps only its side's half of it out, so its variance term does not
// outrank the covariance with the covariance's own weight (the covary program).
void discount_covarying_pairs(const std::vector<Factor> &factors, std::vector<double> &worth) {
  std::vector<double> var_share(worth.size(), 0.0);
  for (const auto &f : factors)
    if (f.kind == Factor::Kind::Variance && !f.a_body)
      var_share[static_cast<std::size_t>(f.a)] = f.share;
  for (const auto &f : factors) {
    if (f.kind != Factor::Kind::Covariance || f.a_body || f.b_body || f.b < 0)
      continue;
    for (const int side : {f.a, f.b}) {
      const auto s = static_cast<std::size_t>(side);
      if (side > 0 && worth[s] > 0 && f.share > var_share[s])
        worth[s] = std::max(var_share[s], worth[s] - f.share / 2);
    }
  }
}

} // namespace

std::vector<std::size_t> rank_factors(const AnalysisResult &res, const NodeFacts &nf,
                                      std::vector<Factor> &factors, std::size_t max_factors,
                                      const PlaceTable *pt, const GroupResult *gr) {
  // the observed ranking: observed specificity, score = the nested rule's key over net shares
  std::vector<double> level(factors.size(), 0);
  if (res.ranking == Ranking::Net) {
    const std::size_t N = res.nodes.size();
    std::vector<char> spanning(N, 0);
    std::vector<double> worth(N, 0.0);
    std::vector<int> group(N, -1); // a function's place, for its nodes' variance terms
    if (pt)
      for (std::size_t i = 1; i < N; ++i) {
        const int p = pt->place_of[i];
        if (p >= 0 && res.nodes[i].kind == Node::Kind::Site &&
            pt->kind[static_cast<std::size_t>(p)] == Place::Kind::Function)
          group[i] = p;
      }
    if (gr) {
      // the frames open for the whole interval, from the root down (the annotated function
      // whose body the interval begins in, and the frames above it)
      std::vector<char> open(N, 0);
      for (const auto &ns : gr->nodes)
        open[static_cast<std::size_t>(ns.node)] =
            gr->latency.mean_ns > 0 && ns.mean_ns >= kSpanningFrame * gr->latency.mean_ns;
      for (std::size_t i = 1; i < N; ++i) {
        const Node &n = res.nodes[i];
        const auto p = static_cast<std::size_t>(n.parent);
        spanning[i] = open[i] && n.kind == Node::Kind::Site && (p == 0 || spanning[p]);
      }
    }
    if (gr && pt) {
      std::unordered_map<std::string, double> contribution;
      for (const auto &pl : gr->places)
        contribution[pl.key] = pl.contribution;
      for (std::size_t i = 1; i < N; ++i) {
        const int p = pt->place_of[i];
        if (p < 0 || res.nodes[i].kind != Node::Kind::Site)
          continue;
        auto it = contribution.find(pt->key[static_cast<std::size_t>(p)]);
        if (it != contribution.end())
          worth[i] = it->second;
      }
      discount_covarying_pairs(factors, worth);
    }
    std::vector<NestedItem> items;
    for (const auto &f : factors)
      items.push_back(nested_item(res, nf, f, spanning, worth, group));
    const std::vector<double> keys = nested_keys(nf, items);
    auto spec_of = [&](int node, bool body) {
      return body && node == 0 ? 0.0 : nf.observed[static_cast<std::size_t>(node)];
    };
    for (std::size_t i = 0; i < factors.size(); ++i) {
      Factor &f = factors[i];
      f.specificity = f.b < 0 ? spec_of(f.a, f.a_body)
                              : std::min(spec_of(f.a, f.a_body), spec_of(f.b, f.b_body));
      f.score = keys[i];
      level[i] = items[i].level;
    }
  } else {
    for (std::size_t i = 0; i < factors.size(); ++i) {
      const Factor &f = factors[i];
      level[i] = std::max(res.nodes[f.a].depth, f.b >= 0 ? res.nodes[f.b].depth : 0);
    }
  }
  std::vector<std::size_t> order(factors.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    const Factor &a = factors[x], &b = factors[y];
    if (a.noise != b.noise)
      return b.noise;
    if (a.score != b.score)
      return a.score > b.score;
    // equal scores: the deeper (more specific in context) term first
    if (level[x] != level[y])
      return level[x] > level[y];
    if (std::abs(a.share) != std::abs(b.share))
      return std::abs(a.share) > std::abs(b.share);
    return a.key < b.key;
  });
  if (order.size() > max_factors)
    order.resize(max_factors);
  return order;
}

// ---- bootstrap ------------------------------------------------------------------------

namespace {

// A column's variable in gt.cols (T_c: c, B_c: C + c) and its values in a block.
Eigen::Index variable_of(const GroupTimes &gt, const Col &c) {
  return gt.col_of[c.node] + (c.body ? static_cast<Eigen::Index>(gt.present.size()) : 0);
}
auto block_column(const GroupTimes &gt, const Col &c, const MatrixXd &S, const MatrixXd &T) {
  return c.body ? S.col(gt.col_of[c.node]) : T.col(gt.col_of[c.node]);
}

} // namespace

// Poisson bootstrap (docs/statistics.md, "Bootstrap"): replicate b weighs interval i by
// w_bi ~ Poisson(1); its share of a term is Cov_w(x, y) / Var_w(L) from the weighted sums
// of 1, L, L^2, x, y and x y (centred at the full sample's means), filled in one pass for
// every replicate at once: memory replicates x (3 + columns + products), whatever the
// number of intervals.
void bootstrap_intervals(const GroupTimes &gt, const Terms &terms,
                         const std::vector<std::size_t> &order, const AnalyzeOptions &opt,
                         std::mt19937_64 &rng, GroupResult &gr, std::vector<std::string> &notes) {
  (void)notes; // the replicates are never reduced any more
  const Eigen::Index I = gt.rows;
  const int nci = std::min<int>(opt.ci_factors, static_cast<int>(order.size()));
  const int samples = opt.bootstrap_samples;
  if (samples <= 0 || nci <= 0 || I <= 1)
    return;
  // Z's columns: 1, L, L^2, the distinct columns x of the factors' terms, then the distinct
  // products x y (a variance term's x x), all centred at the full sample's means
  std::vector<Col> vars;
  std::vector<std::pair<Eigen::Index, Eigen::Index>> prods;
  struct Slots {
    Eigen::Index x, y, xy;
  };
  std::vector<Slots> slots;
  auto slot_of_var = [&](const Col &c) {
    for (std::size_t v = 0; v < vars.size(); ++v)
      if (vars[v].node == c.node && vars[v].body == c.body)
        return static_cast<Eigen::Index>(v);
    vars.push_back(c);
    return static_cast<Eigen::Index>(vars.size() - 1);
  };
  for (int r = 0; r < nci; ++r) {
    const auto &fc = terms.cols[order[r]];
    const Eigen::Index x = slot_of_var(fc.first),
                       y = fc.second.node >= 0 ? slot_of_var(fc.second) : x;
    const std::pair<Eigen::Index, Eigen::Index> xy{std::min(x, y), std::max(x, y)};
    auto it = std::find(prods.begin(), prods.end(), xy);
    if (it == prods.end())
      it = prods.insert(prods.end(), xy);
    slots.push_back({x, y, static_cast<Eigen::Index>(it - prods.begin())});
  }
  const Eigen::Index V = static_cast<Eigen::Index>(vars.size());
  const Eigen::Index q = 3 + V + static_cast<Eigen::Index>(prods.size());
  std::vector<double> var_mean;
  for (const auto &c : vars)
    var_mean.push_back(gt.cols.mean(variable_of(gt, c)));
  const double mean_L = gt.cols.ref_mean();
  ReplicateSums rs(samples, q);
  PoissonWeights weights(rng());
  MatrixXd Z, W;
  for_each_block(gt, [&](Eigen::Index, const MatrixXd &S, const MatrixXd &T) {
    const Eigen::Index n = S.rows();
    Z.resize(n, q);
    Z.col(0).setOnes();
    Z.col(1) = T.col(0).array() - mean_L;
    Z.col(2) = Z.col(1).array().square();
    for (Eigen::Index v = 0; v < V; ++v)
      Z.col(3 + v) = block_column(gt, vars[v], S, T).array() - var_mean[v];
    for (std::size_t k = 0; k < prods.size(); ++k)
      Z.col(3 + V + static_cast<Eigen::Index>(k)) =
          Z.col(3 + prods[k].first).cwiseProduct(Z.col(3 + prods[k].second));
    W.resize(samples, n);
    weights.fill(W);
    rs.add_rows(W, Z);
  });
  std::vector<std::vector<double>> shares(static_cast<std::size_t>(nci));
  for (int b = 0; b < samples; ++b) {
    const double w = rs.sums(b, 0);
    if (w <= 0)
      continue; // every weight 0 (a tiny group): no replicate
    const double mL = rs.sums(b, 1) / w, vL = rs.sums(b, 2) / w - mL * mL;
    for (int r = 0; r < nci; ++r) {
      const Slots &sl = slots[static_cast<std::size_t>(r)];
      const double mx = rs.sums(b, 3 + sl.x) / w, my = rs.sums(b, 3 + sl.y) / w;
      const double term = (rs.sums(b, 3 + V + sl.xy) / w - mx * my) *
                          (gr.factors[r].kind == Factor::Kind::Covariance ? 2 : 1);
      shares[static_cast<std::size_t>(r)].push_back(vL > 0 ? term / vL : 0);
    }
  }
  if (shares.front().empty())
    return;
  double alpha = (1 - opt.confidence) / 2;
  for (int r = 0; r < nci; ++r) {
    gr.factors[r].share_lo = percentile(shares[r], alpha);
    gr.factors[r].share_hi = percentile(shares[r], 1 - alpha);
    gr.factors[r].has_ci = true;
  }
}

// ---- noise floor ----------------------------------------------------------------------

// Where the bootstrap intervals of the top factors are wider than noise_share, a term
// smaller than their median half-width cannot be told from zero; terms and places below it
// move behind every larger one (stable: order kept within). At most 5 %: with a heavy tail
// (LevelDB's fsyncs) the intervals are wide for every term, and a place with a third of
// Var(L) is no noise.
void apply_noise_floor(GroupResult &gr, std::vector<std::size_t> &order, double noise_share) {
  constexpr double kMaxNoiseFloor = 0.05;
  gr.noise_floor = noise_share;
  std::vector<double> half;
  for (const auto &f : gr.factors)
    if (f.has_ci)
      half.push_back((f.share_hi - f.share_lo) / 2);
  if (!half.empty()) {
    std::nth_element(half.begin(), half.begin() + static_cast<std::ptrdiff_t>(half.size() / 2),
                     half.end());
    gr.noise_floor = std::max(gr.noise_floor, std::min(half[half.size() / 2], kMaxNoiseFloor));
  }
  if (gr.noise_floor <= noise_share)
    return;
  std::vector<std::size_t> perm(gr.factors.size());
  std::iota(perm.begin(), perm.end(), 0);
  for (auto &f : gr.factors)
    f.noise = std::abs(f.share) < gr.noise_floor;
  std::stable_sort(perm.begin(), perm.end(), [&](std::size_t x, std::size_t y) {
    const Factor &a = gr.factors[x], &b = gr.factors[y];
    return a.noise != b.noise ? b.noise : a.score > b.score;
  });
  std::vector<Factor> fs;
  std::vector<std::size_t> ord;
  for (auto r : perm) {
    fs.push_back(std::move(gr.factors[r]));
    ord.push_back(order[r]);
  }
  gr.factors = std::move(fs);
  std::copy(ord.begin(), ord.end(), order.begin());
  for (auto &pl : gr.places)
    pl.noise = std::max(std::abs(pl.share), std::abs(pl.contribution)) < gr.noise_floor;
  std::stable_sort(gr.places.begin(), gr.places.end(), [](const Place &a, const Place &b) {
    return a.noise != b.noise ? b.noise : a.score > b.score;
  });
}

// ---- what-if --------------------------------------------------------------------------

// L' = L - x + mean(x) per interval (and - y + mean(y) for a covariance term), exact: its
// variance and p99 from the vector itself. One vector of n doubles per factor, at most
// kWhatIfDoubles of them per pass over the intervals (10 factors of 10 M intervals: 4 passes).
constexpr Eigen::Index kWhatIfDoubles = Eigen::Index{1} << 25; // 256 MiB

void what_if(const GroupTimes &gt, const Terms &terms, const std::vector<std::size_t> &order, int n,
             GroupResult &gr) {
  const double varL = gr.latency.var_ns2;
  const Eigen::Index I = gt.rows;
  const int nw = std::min<int>(n, static_cast<int>(order.size()));
  if (I == 0 || nw <= 0)
    return;
  const int batch = static_cast<int>(
      std::clamp<Eigen::Index>(kWhatIfDoubles / I, 1, static_cast<Eigen::Index>(nw)));
  for (int r0 = 0; r0 < nw; r0 += batch) {
    const int nb = std::min(batch, nw - r0);
    std::vector<VectorXd> Lp(static_cast<std::size_t>(nb), VectorXd(I));
    for_each_block(gt, [&](Eigen::Index first, const MatrixXd &S, const MatrixXd &T) {
      for (int j = 0; j < nb; ++j) {
        const auto &fc = terms.cols[order[r0 + j]];
        auto seg = Lp[static_cast<std::size_t>(j)].segment(first, S.rows());
        seg = T.col(0);
        seg.array() +=
            gt.cols.mean(variable_of(gt, fc.first)) - block_column(gt, fc.first, S, T).array();
        if (fc.second.node >= 0)
          seg.array() +=
              gt.cols.mean(variable_of(gt, fc.second)) - block_column(gt, fc.second, S, T).array();
      }
    });
    for (int j = 0; j < nb; ++j) {
      const LatencyStats ls = latency_stats(Lp[static_cast<std::size_t>(j)]);
      Lp[static_cast<std::size_t>(j)] = VectorXd(); // free before the next one's sort copy
      WhatIf w;
      w.key = gr.factors[r0 + j].key;
      w.var_after_ns2 = ls.var_ns2;
      w.p99_after_ns = ls.p99_ns;
      w.var_drop = varL > 0 ? 1 - ls.var_ns2 / varL : 0;
      w.p99_drop = gr.latency.p99_ns > 0 ? 1 - ls.p99_ns / gr.latency.p99_ns : 0;
      gr.whatifs.push_back(w);
    }
  }
}

} // namespace detail

AnalysisResult analyze(const std::filesystem::path &trace_dir, ws::Database *db,
                       const AnalyzeOptions &opt) {
  auto t = trace::Trace::open(trace_dir);
  return analyze_trace(t, db, opt);
}

AnalysisResult analyze(const std::vector<std::filesystem::path> &trace_dirs, ws::Database *db,
                       const AnalyzeOptions &opt) {
  auto t = trace::Trace::open(trace_dirs);
  return analyze_trace(t, db, opt);
}

AnalysisResult analyze_trace(const trace::Trace &tr, ws::Database *db, const AnalyzeOptions &opt) {
  using namespace detail;
  // the walk hands the finished intervals over a block at a time: their node times go to
  // the store (a temporary file), their labels counted for the groups
  NodeTimeStore store;
  std::vector<std::uint64_t> label_counts;
  EngineOptions eopt = engine_options(db);
  eopt.sink = [&](const std::vector<IntervalRec> &ivs, const std::vector<NodeTime> &times) {
    store.append(ivs, times);
    for (const auto &r : ivs) {
      if (r.label >= label_counts.size())
        label_counts.resize(r.label + 1);
      ++label_counts[r.label];
    }
  };
  EngineOutput eo = run_engine(tr, eopt);
  AnalysisResult res = load_result(tr, eo);
  res.ranking = opt.ranking;
  const DbFacts facts = read_db(db, eo.nodes);
  name_nodes(eo, facts, res);
  const NodeFacts nf = heights_and_specificity(facts, res);
  const PlaceTable pt = assign_places(res, facts);
  std::mt19937_64 rng(opt.seed);
  for (auto &group : interval_groups(label_counts, eo.labels, opt.min_group_size)) {
    GroupResult gr;
    gr.label = group.label;
    const GroupTimes gt = group_times(store, eo.nodes, eo.ticks_per_second, group);
    // the latency's order statistics every stage wants (its percentiles, the tail's
    // threshold and its bootstrap candidates' cut), found together, with the histogram
    std::vector<std::uint64_t> ranks;
    for (double q : {0.50, 0.95, 0.99})
      for (auto r : percentile_rank_pair(gt, q))
        ranks.push_back(r);
    if (opt.tail_percentile > 0 && opt.tail_percentile < 100) {
      for (auto r : percentile_rank_pair(gt, opt.tail_percentile / 100))
        ranks.push_back(r);
      ranks.push_back(tail_cut_rank(group.count, opt.tail_percentile));
    }
    latency_ranks(gt, ranks, &gr.histogram);
    gr.latency = latency_stats(gt);
    Terms terms = variance_trees(res, facts, nf, pt, gt, opt, gr);
    place_stats(nf, pt, gt, opt, gr);
    wait_stats(res, nf, pt, gt, gr);
    std::vector<std::size_t> order =
        rank_factors(res, nf, terms.factors, opt.max_factors, &pt, &gr);
    for (auto r : order)
      gr.factors.push_back(terms.factors[r]);
    std::mt19937_64 tail_rng = rng; // the factors' resamples: the other results stay as they were
    bootstrap_intervals(gt, terms, order, opt, rng, gr, res.notes);
    tail_stats(pt, gt, opt, tail_rng, gr, res.notes);
    apply_noise_floor(gr, order, opt.noise_share);
    gr.answer = answer_of(res, gr);
    what_if(gt, terms, order, opt.whatif_factors, gr);
    res.groups.push_back(std::move(gr));
  }
  return res;
}

} // namespace vprof::analyzer
