// The trace reader: opens a vprof trace directory, validates every stream against
// runtime/include/vprof/trace_format.h and exposes the records in place (mmap, no copy).
// This is the analyzer's entry point and the base of vprof-dump.
#pragma once

#include <vprof/trace_format.h>

#include "vprof/sched_reader.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace vprof::trace {

// A corrupt or unreadable trace: which file, at which byte offset, and what is wrong.
// what() reads "<file>: offset <n>: <problem>".
class TraceError : public std::runtime_error {
public:
  TraceError(std::filesystem::path file, std::uint64_t offset, std::string problem);
  const std::filesystem::path &file() const { return file_; }
  std::uint64_t offset() const { return offset_; }
  const std::string &problem() const { return problem_; }

private:
  std::filesystem::path file_;
  std::uint64_t offset_;
  std::string problem_;
};

// The name of a record kind ("ENTER", "LOCK_WAIT" …), or nullptr for a kind the format
// does not define (0 included).
const char *kind_name(unsigned kind);
bool kind_known(unsigned kind);

// The decoded stream header.
struct StreamInfo {
  std::filesystem::path path;
  std::uint32_t pid = 0, tid = 0, ppid = 0, stream_seq = 0;
  std::uint32_t clock_kind = 0;
  std::uint64_t ticks_per_second = 0;
  std::uint64_t base_ticks = 0;
  std::uint64_t base_monotonic_ns = 0;
  std::uint64_t base_realtime_ns = 0;
  std::uint64_t end_ticks = 0, end_realtime_ns = 0; // the end clock sample (0: none)
  std::uint64_t features = 0;
  std::uint64_t dropped = 0;
  std::uint64_t window_records = 0;    // slots of the writer's window
  std::uint64_t committed_records = 0; // records read from the data region
  std::uint64_t window_count = 0;      // records read from the window (after those)
  std::uint32_t flags = 0;
  std::string thread_name;
  std::string hostname; // the host's name when the process started (empty: unknown)
};

// One per-thread stream file, mapped read-only. Opening validates the header (magic,
// version, header and record sizes, clock kind and frequency, the window and data regions
// against the file size) and every record: all of the data region's, then the window's
// from the ring slot after them up to the first empty slot (trace_format.h); a record with
// an unknown kind is an error. The parts (the data region, the window's one or two runs)
// are presented as one array in the order written, mapped back to back without a copy. After a
// successful open, records() may be iterated without further checks. Cost: one sequential pass over
// the records at open.
class Stream {
public:
  explicit Stream(const std::filesystem::path &file); // throws TraceError
  ~Stream();
  Stream(Stream &&other) noexcept;
  Stream &operator=(Stream &&) = delete;
  Stream(const Stream &) = delete;

  const StreamInfo &info() const { return info_; }
  // The finished records, in file order, pointing into the mapping.
  std::span<const vprof_record> records() const { return {records_, count_}; }
  // Byte offset of record i in the file.
  std::uint64_t offset_of(std::size_t i) const;
  // Drops the resident pages that lie wholly within records [begin, end) from this
  // process (they are read again from the file if touched later). Streaming consumers
  // call it so that resident memory does not grow with the trace size.
  void release_pages(std::size_t begin, std::size_t end) const;
  // Ticks since this stream's base_ticks: (ticks - base_ticks) mod 2^56.
  std::uint64_t relative_ticks(const vprof_record &r) const {
    return (vprof_record_ticks(&r) - info_.base_ticks) & VPROF_TICKS_MASK;
  }
  // Where the stream sits on its trace's time line (set by Trace::open): the run ticks of
  // its base, and run ticks per stream tick (exactly 1 for the first trace directory's
  // streams; another host's clock is mapped through its wall-clock fit and offset).
  std::int64_t run_offset() const { return run_offset_; }
  double run_scale() const { return run_scale_; }
  bool run_scaled() const { return run_scale_ != 1.0; }
  // The host (index into Trace::hosts()) this stream was recorded on.
  std::uint32_t host() const { return host_; }

private:
  friend class Trace;
  std::int64_t run_offset_ = 0;
  double run_scale_ = 1.0;
  std::uint32_t host_ = 0;
  StreamInfo info_;
  void *map_ = nullptr;
  std::size_t map_size_ = 0;
  const vprof_record *records_ = nullptr;
  std::size_t count_ = 0;
  // Where records_ come from, in order: the data region, then the window's runs.
  struct Part {
    std::uint64_t file_offset = 0, count = 0;
  };
  std::array<Part, 3> parts_{};
  std::size_t nparts_ = 0;
  // Maps (or copies) the parts into one array; returns the problem, or "".
  std::string map_parts(int fd);
  bool copied_ = false; // records_ is a private copy (regions not page-aligned)
};

// A shared mapping from <pid>.maps (perms with 's'): the address range and the
// (device, inode, file offset) it shows, so an address becomes a cross-process key.
struct SharedMapping {
  std::uint64_t start = 0, end = 0, file_offset = 0;
  std::uint64_t dev = 0, inode = 0;
};

// Everything known about one process of the run.
struct ProcessInfo {
  std::uint32_t pid = 0, ppid = 0;
  std::uint32_t host = 0; // index into Trace::hosts()
  std::uint32_t clock_kind = 0;
  std::uint64_t ticks_per_second = 0;
  std::uint64_t base_ticks = 0;
  std::uint64_t base_realtime_ns = 0;
  std::uint64_t dropped = 0;                   // sum over its streams
  std::map<std::uint32_t, std::string> labels; // <pid>.labels
  std::vector<SharedMapping> shared;           // sorted by start, from <pid>.maps
  std::optional<std::uint64_t> cpu_ns;         // user + system at exit, from <pid>.cpu
  std::vector<std::size_t> streams;            // indices into Trace::streams(), by stream_seq

  // The (dev, inode, offset) of an address in a shared mapping, or false.
  bool shared_key(std::uint64_t addr, std::uint64_t &dev, std::uint64_t &inode,
                  std::uint64_t &offset) const;
};

// One host of a trace: the streams of one trace directory, which share one clock
// (docs/multihost.md). Several directories analysed together are several hosts, placed on
// the first one's time line through their clock samples and the message edges between them.
struct HostInfo {
  std::filesystem::path dir;
  std::string hostname;          // its processes' host name (the first stream's; may be empty)
  std::uint64_t base_ticks = 0;  // the earliest base_ticks of its processes
  double ticks_per_second = 0;   // that process's clock frequency
  std::size_t clock_samples = 0; // (clock, CLOCK_REALTIME) pairs found
  double real0_ns = 0;           // the wall-clock fit: CLOCK_REALTIME at base_ticks ...
  double real_ns_per_tick = 0;   // ... and its slope
  // The correction the message edges gave: this host's CLOCK_REALTIME is ahead of the first
  // host's by offset_ns (0 for the first host). The true offset lies within
  // offset_ns +- skew_bound_ns when both directions had edges; skew_bound_ns < 0: unknown
  // (edges in one direction only, or none).
  double offset_ns = 0, skew_bound_ns = 0;
  std::uint64_t edges_out = 0, edges_in = 0; // message edges to / from other hosts
  std::uint64_t violations = 0;              // edges whose receive lies before their send
  double worst_violation_ns = 0;             // by how much, at most
};

// The message edges between hosts that aligned the clocks (Trace::open of several
// directories), and those that could not be paired.
struct MessageStats {
  std::uint64_t cross_host_edges = 0;
  std::uint64_t unpaired = 0;  // sends or receives of a key with no partner on another host
  std::uint64_t ambiguous = 0; // receives of a key sent from several other hosts
};

struct OpenOptions {
  // Skip streams that fail validation (reported in Trace::skipped()) instead of throwing.
  bool skip_bad_streams = false;
};

// A trace directory: every <pid>.<seq>.vpt stream plus <pid>.labels and <pid>.maps.
class Trace {
public:
  // Opens and validates every stream (throws TraceError; an empty or missing directory
  // is an error too). Streams are ordered by (pid, stream_seq).
  static Trace open(const std::filesystem::path &dir, const OpenOptions &opt = {});
  // Opens several trace directories, one per host (or run), as one trace: every
  // directory's streams on the first one's time line (docs/multihost.md). Each directory
  // must be a trace (TraceError naming it otherwise). One directory: the same as open(dir).
  // Cost: for several, one more pass over each stream's records (clock samples, messages).
  static Trace open(const std::vector<std::filesystem::path> &dirs, const OpenOptions &opt = {});

  const std::filesystem::path &dir() const { return dir_; }
  const std::vector<HostInfo> &hosts() const { return hosts_; }
  const MessageStats &messages() const { return messages_; }
  // The process of stream i (pids may repeat across hosts).
  const ProcessInfo &process_of(std::size_t stream) const {
    return processes_[stream_process_[stream]];
  }
  const std::vector<Stream> &streams() const { return streams_; }
  const std::vector<ProcessInfo> &processes() const { return processes_; }
  const ProcessInfo *process(std::uint32_t pid) const;
  const std::vector<std::string> &skipped() const { return skipped_; }
  // What made the trace partial without making it unreadable (a kernel wake-up file the
  // recorder did not close, ...), each naming its file.
  const std::vector<std::string> &warnings() const { return warnings_; }

  // The kernel wake-up files read (one per directory that held a sched.vpk; none: the
  // trace has no kernel waits) and the events of stream i from them, sorted by time
  // (docs/analyzer.md, "Kernel waits"). Held in memory: 32 bytes per event.
  const std::vector<SchedInfo> &sched() const { return sched_; }
  std::span<const KernelEvent> kernel_events(std::size_t stream) const {
    return stream < kernel_events_.size() ? std::span<const KernelEvent>(kernel_events_[stream])
                                          : std::span<const KernelEvent>();
  }
  // A CLOCK_MONOTONIC time of host `host` in run ticks: through the (base_ticks,
  // base_monotonic_ns, ticks_per_second) of process `pid` of that host (else its first
  // process), then onto the time line as that process's streams (clamped at 0).
  std::int64_t sched_run_ticks(std::uint32_t host, std::uint32_t pid, std::uint64_t ns) const;

  // The run's clock: all processes share one clock (TSC or CLOCK_MONOTONIC); time 0 is
  // the smallest base_ticks of any process. ticks_per_second is that of the earliest
  // process (TSC calibrations of one machine differ by a few ppm).
  std::uint64_t run_base_ticks() const { return run_base_; }
  double ticks_per_second() const { return hz_; }
  // Ticks of record r of stream s since the run's start (never negative).
  std::uint64_t run_ticks(const Stream &s, const vprof_record &r) const {
    if (!s.run_scaled())
      return static_cast<std::uint64_t>(s.run_offset()) + s.relative_ticks(r);
    // another host's stream: its clock scaled onto the first's (clamped: a corrupt record's
    // clock value must not overflow)
    const double t =
        std::clamp(static_cast<double>(s.relative_ticks(r)) * s.run_scale(), -0x1p61, 0x1p61);
    return static_cast<std::uint64_t>(s.run_offset() + std::llround(t));
  }
  double ticks_to_ns(double ticks) const { return ticks * 1e9 / hz_; }

private:
  // One directory's streams and side files; its sched.vpk read but not placed (that needs
  // the final time line).
  static Trace open_dir(const std::filesystem::path &dir, const OpenOptions &opt);
  // Places the hosts' streams on one time line (hosts.cpp).
  void align_hosts();
  // sched.vpk of `dir` (host 0 of this Trace), when present (sched.cpp).
  void load_sched(const std::filesystem::path &dir);
  // The read sched files' records as kernel events of the streams (sched.cpp).
  void place_kernel_events();

  std::filesystem::path dir_;
  std::vector<HostInfo> hosts_;
  MessageStats messages_;
  std::vector<std::size_t> stream_process_;
  std::vector<Stream> streams_;
  std::vector<ProcessInfo> processes_;
  std::vector<std::string> skipped_;
  std::vector<std::string> warnings_;
  std::vector<std::pair<std::uint32_t, SchedFile>> sched_pending_; // (host, file)
  std::vector<SchedInfo> sched_;
  std::vector<std::vector<KernelEvent>> kernel_events_; // per stream
  std::uint64_t run_base_ = 0;
  double hz_ = 1e9;
};

// Prints a trace directory, or one stream file, as text to `out`: per stream a "# stream"
// header line, then one line per record "pid tid ns kind arg" (ns since the run's start;
// ENTER/EXIT as "site=N depth=0x…" ("site=profiler": the runtime's own frame), intervals as
// "interval=N", labels with their text, objects as "obj=0x…" plus "shared=dev:inode+0xoff" in a
// shared mapping). Throws TraceError before printing anything for a corrupt directory (a single
// corrupt file too).
void dump(const std::filesystem::path &target, std::FILE *out, bool headers_only = false);

// Parses the text of a <pid>.labels file ("<id>\t<text>\n" lines); throws TraceError
// naming `file` and the byte offset of a malformed line.
std::map<std::uint32_t, std::string> parse_labels(const std::string &text,
                                                  const std::filesystem::path &file);
// Parses a <pid>.cpu file ("<user ns>\t<system ns>\n"): their sum; throws TraceError.
std::uint64_t parse_cpu(const std::string &text, const std::filesystem::path &file);
// Parses /proc/<pid>/maps text, keeping shared mappings with a non-zero inode.
std::vector<SharedMapping> parse_maps(const std::string &text, const std::filesystem::path &file);

} // namespace vprof::trace
