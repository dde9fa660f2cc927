// Loading a trace: the engine's notes made into the result's warnings (drops, repeated
// pids, host clocks, interval marks, kernel waits).
#include "stages.hpp"
#include "vprof/trace_reader.hpp"

#include <Eigen/Dense>

#include <map>
#include <set>
#include <string>
#include <thread>

namespace vprof::analyzer::detail {

using Eigen::MatrixXd;
using Eigen::VectorXd;

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
  k.data_wakes = eo.kernel_data_wakes;
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

} // namespace vprof::analyzer::detail
