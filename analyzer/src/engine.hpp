// Internal: the streaming critical-path engine. Turns a validated trace into, for every
// completed interval, the self time of each node on its critical path (docs/analyzer.md).
#pragma once

#include "vprof/trace_reader.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

namespace vprof::ws {
class Database;
}

namespace vprof::analyzer::detail {

// Node labels: a site id (< 2^32), a wait node (kLabelWaitBase + WaitKind), a pseudo-waker
// below a kernel wait (kLabelWakerBase + PseudoWaker), or the untracked-time node.
inline constexpr std::uint64_t kLabelWaitBase = 1ull << 32;
inline constexpr std::uint64_t kLabelWakerBase = 2ull << 32;
inline constexpr std::uint64_t kLabelUntracked = 3ull << 32;
inline constexpr std::uint32_t kNoParent = 0xffffffffu;
// The node of the runtime's own frame (site VPROF_SITE_PROFILER: a window's flush or a
// stream's opening inside the program's time), named so in every output.
inline constexpr const char *kProfilerName = "(profiler)";

enum WaitKind : std::uint8_t {
  kMutex,
  kRwlock,
  kCond,
  kSem,
  kCustom,
  kHandoff,
  kQueue,
  // below a wait node that had a waker: the waiter's delay from the waker's release to its
  // running again (the scheduler's run queue, the primitive's wake-up path)
  kWakeup,
  // a message from another thread, process or host (VPROF_MSG_SEND -> VPROF_MSG_RECV)
  kMessage,
  // kernel waits (sched.vpk), by the system call the thread blocked in
  // (docs/analyzer.md, "Kernel waits")
  kFutex,
  kPoll,
  kRead,
  kWrite,
  kIo,
  kSleep,
  kChild,
  kKernel,
  kWaitKinds
};
const char *wait_kind_name(unsigned k);
inline bool is_kernel_wait(unsigned k) { return k >= kFutex && k <= kKernel; }
// The same by the wait's name ("futex", "io", ...: wait_kind_name).
bool is_kernel_wait_name(const std::string &name);

// What woke a kernel wait when no traced thread did (a child node of the wait).
enum PseudoWaker : std::uint8_t {
  kNoPseudo,
  kPseudoIo,      // [io] block device
  kPseudoNet,     // [net] receive
  kPseudoTimer,   // [timer]
  kPseudoProcess, // [process] other
  // a task of the traced process tree that wrote no records (a thread or child process whose
  // code no plan probes yet): the planner expands into the static wakers of the wait's kind
  kPseudoUnrecorded, // [thread] without records
  kPseudoWakers
};
// The pseudo-waker's key word ("io-device", ...; the node path's "wait:<tag>") and its
// display name ("[io] block device", ...).
const char *pseudo_waker_tag(unsigned p);
const char *pseudo_waker_name(unsigned p);

struct NodeDef {
  std::uint32_t parent; // kNoParent for the root (node 0)
  std::uint64_t label;
};

struct NodeTime {
  std::uint32_t node;
  std::int64_t ticks; // self time on the critical path
};

struct IntervalRec {
  std::uint64_t id;
  std::uint32_t label; // index into EngineOutput::labels (0 = unlabelled)
  std::uint32_t pid;
  std::int64_t begin, end; // run ticks
  std::uint64_t times_off;
  std::uint32_t times_n;
};

// One stretch of an interval's critical path on one thread (stream index), in run ticks.
struct PathPiece {
  std::uint32_t thread;
  std::int64_t t0, t1;
};
// An interval's critical path as the walk found it, from its end backwards: pieces[k + 1]
// is the waker whose release at pieces[k].t0 let pieces[k] continue (a wake-up edge or a
// hand-off; after an attach, the attaching thread's own work in the queued wait's gap, then
// the last holder up to its detach), so consecutive pieces meet at one instant and their
// lengths sum to L(s).
struct CriticalPath {
  std::uint64_t interval = 0;
  std::vector<PathPiece> pieces;
};

struct EngineOutput {
  std::vector<NodeDef> nodes;
  // the finished intervals and their node times; with EngineOptions::sink, only those not
  // handed over yet (empty after run_engine)
  std::vector<IntervalRec> intervals;
  std::vector<NodeTime> times;
  std::uint64_t intervals_finished = 0; // all of them, handed over or not
  // the earliest begin and the latest end of the finished intervals (run ticks)
  std::int64_t first_begin = 0, last_end = 0;
  std::vector<std::string> labels{""};
  std::uint64_t records = 0;
  std::uint64_t dropped = 0;
  std::uint64_t max_stream_records = 0; // the longest stream, its dropped records included
  // probe records (ENTER, EXIT) on the intervals' critical paths, summed over the intervals:
  // an event loop's interval holds the probes of every command of its batch (the planner's
  // price of a plan, docs/planner.md "Budget")
  std::uint64_t critical_records = 0;
  std::vector<std::uint64_t> site_calls; // ENTER records per site id (all threads)
  // per stream (the trace's order): 1 if it holds an interval mark (begin, end, attach,
  // detach) — a thread working for intervals, not only as a waker
  std::vector<std::uint8_t> stream_interval_marks;
  std::uint64_t intervals_unfinished = 0;    // begun, never ended
  std::uint64_t intervals_unmatched_end = 0; // END without a known BEGIN
  std::uint64_t path_sum_mismatches = 0;     // L(s) != sum over the path (must stay 0)
  std::uint64_t inexact_splits = 0;          // segment split by proration (should stay 0)
  std::uint64_t abandoned_frames = 0;        // closed by the depth rule (longjmp)
  std::uint64_t unmatched_exits = 0;
  std::uint64_t clock_regressions = 0; // a record earlier than its predecessor
  std::uint64_t wake_edges = 0;
  std::uint64_t message_edges = 0;       // MSG_SEND -> MSG_RECV edges (cross_host: of them,
  std::uint64_t cross_host_edges = 0;    // between hosts)
  std::uint64_t messages_unmatched = 0;  // receives with no earlier unreceived send
  std::uint64_t messages_unreceived = 0; // sends nobody received
  // kernel waits (sched.vpk; docs/analyzer.md, "Kernel waits")
  std::uint64_t sched_files = 0;    // kernel wake-up files read
  std::uint64_t sched_lost = 0;     // records their recorders lost (headers' `lost`)
  std::uint64_t kernel_waits = 0;   // kernel sleeps outside every interposed or marked wait
  std::uint64_t kernel_edges = 0;   // of them, woken by a traced thread (a wake-up edge)
  std::uint64_t kernel_filled = 0;  // interposed waits without a pairing given the kernel's waker
  std::uint64_t kernel_clamped = 0; // kernel events at odds with the records (clock skew)
  std::uint64_t kernel_data_wakes = 0; // room wake-ups given their data's waker (data wake-up)
  std::uint64_t pseudo_waits[kPseudoWakers] = {}; // kernel waits ended at a pseudo-waker
  std::uint64_t peak_segments = 0;
  double ticks_per_second = 1e9;
  std::vector<std::string> warnings;
  std::vector<CriticalPath> paths; // of the intervals in EngineOptions::record_paths
};

// A block of finished intervals, in the order they ended, handed over during the walk
// (EngineOptions::sink): `times` holds their node times (IntervalRec::times_off indexes it).
// Both are cleared when the sink returns.
using IntervalSink =
    std::function<void(const std::vector<IntervalRec> &, const std::vector<NodeTime> &)>;

struct EngineOptions {
  std::uint32_t max_nodes = 1u << 22;
  std::uint32_t max_stack = 4096;
  // site id -> function id (0 = unknown), from the workspace site table when available:
  // lets an ENTER at depth d close an open frame of another function at the same depth
  // (a sibling abandoned by longjmp; docs/trace-format.md, "Frame depth and longjmp").
  std::vector<std::int64_t> site_function;
  // Static call edges (caller function id, callee function id), from the workspace: an
  // ENTER at the depth of an open frame whose function (transitively) calls the entering
  // one is a callee inlined into that frame (same frame address), not a dead sibling.
  std::vector<std::pair<std::int64_t, std::int64_t>> calls;
  // Intervals whose critical paths are kept in EngineOutput::paths (the Perfetto export).
  const std::unordered_set<std::uint64_t> *record_paths = nullptr;
  // Set: the finished intervals go to the sink a block of `sink_block` at a time (and the
  // rest at the end) instead of staying in EngineOutput, so the engine's memory does not
  // grow with the number of intervals (the analysis streams them into a NodeTimeStore).
  IntervalSink sink;
  std::size_t sink_block = 4096;
};

// The engine's options for a trace of the workspace `db` (may be null): the site table's
// functions and the static call edges (analyzer.cpp).
EngineOptions engine_options(ws::Database *db);

// Throws AnalysisError (see analyzer.hpp) when a limit is exceeded.
EngineOutput run_engine(const trace::Trace &trace, const EngineOptions &opt);

} // namespace vprof::analyzer::detail
