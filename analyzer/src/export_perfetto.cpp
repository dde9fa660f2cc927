// The Perfetto export (docs/analyzer.md, "Pictures"): the critical paths of the slowest and
// of median intervals as a Perfetto TrackEvent trace — a track per thread (grouped by
// process) with the probed functions and waits as nested slices, a track per exported
// interval with its critical path, stretch by stretch, joined by flow arrows along the
// wake-up edges it takes. Written by a small protobuf encoder (field numbers below are
// those of Perfetto's public protos/perfetto/trace/*.proto).
#include "engine.hpp"
#include "vprof/analyzer.hpp"
#include "vprof/trace_reader.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace vprof::analyzer {
namespace {

// ---- a minimal protobuf writer: varints, length-delimited fields, fixed64 ----
class Proto {
public:
  Proto &varint(int field, std::uint64_t v) {
    key(field, 0);
    raw_varint(v);
    return *this;
  }
  Proto &fixed64(int field, std::uint64_t v) {
    key(field, 1);
    for (int i = 0; i < 8; ++i)
      buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return *this;
  }
  Proto &bytes(int field, const std::string &s) {
    key(field, 2);
    raw_varint(s.size());
    buf_ += s;
    return *this;
  }
  Proto &message(int field, const Proto &m) { return bytes(field, m.buf_); }
  const std::string &str() const { return buf_; }

private:
  void key(int field, int wire) { raw_varint((static_cast<std::uint64_t>(field) << 3) | wire); }
  void raw_varint(std::uint64_t v) {
    while (v >= 0x80) {
      buf_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    buf_.push_back(static_cast<char>(v));
  }
  std::string buf_;
};

// Field numbers (perfetto/trace/trace.proto, trace_packet.proto, track_event/*.proto).
namespace pf {
constexpr int kTracePacket = 1;                                                 // Trace
constexpr int kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11;               // TracePacket
constexpr int kSequenceFlags = 13, kTrackDescriptor = 60, kFirstPacket = 87;    // TracePacket
constexpr int kUuid = 1, kName = 2, kProcess = 3, kThread = 4, kParentUuid = 5; // TrackDescriptor
constexpr int kPid = 1, kProcessName = 6;                                       // ProcessDescriptor
constexpr int kTid = 2, kThreadName = 5;                                        // ThreadDescriptor
constexpr int kType = 9, kTrackUuid = 11, kEventName = 23;                      // TrackEvent
constexpr int kDebugAnnotations = 4, kFlowIds = 47, kTerminatingFlowIds = 48;   // TrackEvent
constexpr int kAnnName = 10, kAnnString = 6, kAnnInt = 4;                       // DebugAnnotation
constexpr int kSliceBegin = 1, kSliceEnd = 2;                                   // TrackEvent.Type
constexpr int kIncrementalStateCleared = 1; // TracePacket.SequenceFlags
constexpr std::uint32_t kSequence = 1;      // one writer sequence for the whole file
} // namespace pf

// The file being written, packet by packet, with the counts the summary reports.
class PerfettoWriter {
public:
  explicit PerfettoWriter(const std::filesystem::path &out) : out_(out, std::ios::binary) {
    if (!out_)
      throw AnalysisError(out.string() + ": cannot write");
  }
  void process_track(std::uint64_t uuid, std::uint32_t pid, const std::string &name) {
    Proto p;
    p.varint(pf::kPid, pid).bytes(pf::kProcessName, name);
    Proto d;
    d.varint(pf::kUuid, uuid).message(pf::kProcess, p);
    descriptor(d);
  }
  void thread_track(std::uint64_t uuid, std::uint64_t parent, std::uint32_t pid, std::uint32_t tid,
                    const std::string &name) {
    Proto t;
    t.varint(pf::kPid, pid).varint(pf::kTid, tid).bytes(pf::kThreadName, name);
    Proto d;
    d.varint(pf::kUuid, uuid).varint(pf::kParentUuid, parent).message(pf::kThread, t);
    descriptor(d);
  }
  void named_track(std::uint64_t uuid, std::uint64_t parent, const std::string &name) {
    Proto d;
    d.varint(pf::kUuid, uuid).bytes(pf::kName, name);
    if (parent)
      d.varint(pf::kParentUuid, parent);
    descriptor(d);
  }
  struct Annotation {
    std::string name, text;
    std::int64_t value = 0;
    bool is_text = true;
  };
  void begin(std::uint64_t track, std::uint64_t ns, const std::string &name,
             const std::vector<std::uint64_t> &flows = {},
             const std::vector<std::uint64_t> &terminating = {},
             const std::vector<Annotation> &args = {}) {
    Proto e;
    e.varint(pf::kType, pf::kSliceBegin).varint(pf::kTrackUuid, track).bytes(pf::kEventName, name);
    for (auto f : flows)
      e.fixed64(pf::kFlowIds, f);
    for (auto f : terminating)
      e.fixed64(pf::kTerminatingFlowIds, f);
    for (const auto &a : args) {
      Proto d;
      d.bytes(pf::kAnnName, a.name);
      if (a.is_text)
        d.bytes(pf::kAnnString, a.text);
      else
        d.varint(pf::kAnnInt, static_cast<std::uint64_t>(a.value));
      e.message(pf::kDebugAnnotations, d);
    }
    event(ns, e);
    ++slices;
    flows_started += flows.size();
  }
  void end(std::uint64_t track, std::uint64_t ns) {
    Proto e;
    e.varint(pf::kType, pf::kSliceEnd).varint(pf::kTrackUuid, track);
    event(ns, e);
  }
  void finish() {
    out_.flush();
    if (!out_)
      throw AnalysisError("cannot write the Perfetto trace");
  }
  std::size_t tracks = 0, slices = 0, flows_started = 0;
  std::uint64_t bytes = 0;

private:
  void descriptor(const Proto &d) {
    Proto p;
    p.message(pf::kTrackDescriptor, d);
    packet(p);
    ++tracks;
  }
  void event(std::uint64_t ns, const Proto &e) {
    Proto p;
    p.varint(pf::kTimestamp, ns).message(pf::kTrackEvent, e);
    packet(p);
  }
  void packet(Proto &p) {
    p.varint(pf::kSequenceId, pf::kSequence);
    if (first_) { // no interned state is used; the flag tells readers it is valid from here
      p.varint(pf::kSequenceFlags, pf::kIncrementalStateCleared).varint(pf::kFirstPacket, 1);
      first_ = false;
    }
    Proto t;
    t.message(pf::kTracePacket, p);
    out_.write(t.str().data(), static_cast<std::streamsize>(t.str().size()));
    bytes += t.str().size();
  }
  std::ofstream out_;
  bool first_ = true;
};

struct Selected {
  const detail::IntervalRec *rec;
  std::string why; // "slowest" | "median" | "chosen"
};

// The slowest intervals (latency at or above p99, at least one) and as many around the
// median, of one label or all; or the ones asked for by id.
std::vector<Selected> select_intervals(const detail::EngineOutput &eo, const PerfettoOptions &opt) {
  std::vector<Selected> out;
  if (!opt.intervals.empty()) {
    std::unordered_set<std::uint64_t> want(opt.intervals.begin(), opt.intervals.end());
    for (const auto &r : eo.intervals)
      if (want.count(r.id))
        out.push_back({&r, "chosen"});
    return out;
  }
  std::vector<const detail::IntervalRec *> v;
  for (const auto &r : eo.intervals)
    if (opt.label.empty() || eo.labels[r.label] == opt.label)
      v.push_back(&r);
  if (v.empty())
    return out;
  std::sort(v.begin(), v.end(), [](const auto *a, const auto *b) {
    return a->end - a->begin != b->end - b->begin ? a->end - a->begin < b->end - b->begin
                                                  : a->id < b->id;
  });
  std::size_t n = v.size();
  std::size_t slow =
      std::clamp<std::size_t>(n - static_cast<std::size_t>(std::floor(0.99 * n)), 1, opt.max_each);
  for (std::size_t i = n - slow; i < n; ++i)
    out.push_back({v[i], "slowest"});
  std::size_t mid = n / 2, lo = mid >= slow / 2 ? mid - slow / 2 : 0;
  for (std::size_t i = lo; i < std::min(lo + slow, n - slow); ++i)
    out.push_back({v[i], "median"});
  return out;
}

std::string wait_name(unsigned kind) {
  switch (kind) {
  case VPROF_REC_LOCK_WAIT:
    return "[wait:mutex]";
  case VPROF_REC_RWLOCK_WAIT_RD:
  case VPROF_REC_RWLOCK_WAIT_WR:
    return "[wait:rwlock]";
  case VPROF_REC_COND_WAIT_BEGIN:
    return "[wait:cond]";
  case VPROF_REC_SEM_WAIT:
    return "[wait:sem]";
  case VPROF_REC_WAIT_BEGIN:
    return "[wait:custom]";
  default:
    return "";
  }
}
bool ends_wait(unsigned kind) {
  return kind == VPROF_REC_LOCK_ACQUIRE || kind == VPROF_REC_RWLOCK_ACQUIRE_RD ||
         kind == VPROF_REC_RWLOCK_ACQUIRE_WR || kind == VPROF_REC_COND_WAIT_END ||
         kind == VPROF_REC_COND_WAIT_TIMEOUT || kind == VPROF_REC_SEM_ACQUIRE ||
         kind == VPROF_REC_WAIT_END;
}

// Time windows [lo, hi] (run ticks) of one thread, merged.
using Windows = std::vector<std::pair<std::int64_t, std::int64_t>>;
Windows merged(Windows w) {
  std::sort(w.begin(), w.end());
  Windows out;
  for (const auto &x : w)
    if (!out.empty() && x.first <= out.back().second)
      out.back().second = std::max(out.back().second, x.second);
    else
      out.push_back(x);
  return out;
}

// The thread's probed functions and waits as nested slices, those that overlap its windows
// (a slice is kept whole): the stream replayed as a stack; an EXIT closes the frames above its own
// (abandoned by longjmp), an unmatched EXIT is ignored.
void thread_slices(PerfettoWriter &w, const trace::Trace &tr, const trace::Stream &s,
                   std::uint64_t track, const Windows &win,
                   const std::unordered_map<std::int64_t, std::string> &site_name,
                   double ns_per_tick) {
  struct Open {
    std::int64_t site; // -1: a wait
    std::int64_t t;
    std::string name;
  };
  std::vector<Open> stack;
  std::int64_t last = 0;
  auto ns = [&](std::int64_t t) {
    return static_cast<std::uint64_t>(std::llround(static_cast<double>(t) * ns_per_tick));
  };
  // whether [t0, t1] overlaps a window (sorted, disjoint)
  auto overlaps = [&](std::int64_t t0, std::int64_t t1) {
    auto it = std::lower_bound(win.begin(), win.end(), t0,
                               [](const auto &w, std::int64_t t) { return w.second <= t; });
    return it != win.end() && it->first < t1;
  };
  // Slices must nest on a track: a frame is written when it closes, after its children, so
  // children and parents are collected first and written sorted by (start, -end).
  struct Done {
    std::int64_t t0, t1;
    std::size_t depth;
    std::string name;
  };
  std::vector<Done> done;
  auto close = [&](std::int64_t t) {
    if (t > stack.back().t && overlaps(stack.back().t, t))
      done.push_back({stack.back().t, t, stack.size(), stack.back().name});
    stack.pop_back();
  };
  for (const auto &r : s.records()) {
    auto t = static_cast<std::int64_t>(tr.run_ticks(s, r));
    t = std::max(t, last);
    last = t;
    unsigned kind = vprof_record_kind_of(&r);
    if (kind == VPROF_REC_ENTER) {
      auto site = static_cast<std::int64_t>(r.arg & 0xffffffffu);
      auto it = site_name.find(site);
      stack.push_back(
          {site, t, it != site_name.end() ? it->second : "site " + std::to_string(site)});
    } else if (kind == VPROF_REC_EXIT) {
      auto site = static_cast<std::int64_t>(r.arg & 0xffffffffu);
      auto it =
          std::find_if(stack.rbegin(), stack.rend(), [&](const Open &o) { return o.site == site; });
      if (it == stack.rend())
        continue;
      std::size_t keep = static_cast<std::size_t>(stack.rend() - it) - 1;
      while (stack.size() > keep)
        close(t);
    } else if (!wait_name(kind).empty()) {
      stack.push_back({-1, t, wait_name(kind)});
    } else if (ends_wait(kind)) {
      if (!stack.empty() && stack.back().site == -1)
        close(t);
    }
  }
  while (!stack.empty())
    close(last);
  std::sort(done.begin(), done.end(), [](const Done &a, const Done &b) {
    return a.t0 != b.t0 ? a.t0 < b.t0 : a.depth < b.depth;
  });
  // write with a stack of open ends so that END events stay nested
  std::vector<std::int64_t> ends;
  for (const auto &d : done) {
    while (!ends.empty() && ends.back() <= d.t0) {
      w.end(track, ns(ends.back()));
      ends.pop_back();
    }
    std::int64_t e = ends.empty() ? d.t1 : std::min(d.t1, ends.back());
    w.begin(track, ns(d.t0), d.name);
    ends.push_back(e);
  }
  while (!ends.empty()) {
    w.end(track, ns(ends.back()));
    ends.pop_back();
  }
}

std::string ms_text(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", ns / 1e6);
  return buf;
}

// "pid N", and with several hosts "pid N on <host name or directory>".
std::string process_track_name(const trace::Trace &tr, std::uint32_t host, std::uint32_t pid) {
  std::string name = "pid " + std::to_string(pid);
  if (tr.hosts().size() < 2)
    return name;
  const auto &h = tr.hosts()[host];
  return name + " on " +
         (h.hostname.empty() ? h.dir.string()
                             : h.hostname + " (" + h.dir.filename().string() + ")");
}

} // namespace

PerfettoSummary export_perfetto(const std::vector<std::filesystem::path> &trace_dirs,
                                ws::Database *db, const std::filesystem::path &out,
                                const PerfettoOptions &opt) {
  trace::Trace tr = trace::Trace::open(trace_dirs);
  AnalyzeOptions ao;
  ao.bootstrap_samples = 0;
  ao.whatif_factors = 0;
  AnalysisResult res = analyze_trace(tr, db, ao);
  std::unordered_map<std::int64_t, std::string> site_name;
  for (const auto &n : res.nodes)
    if (n.kind == Node::Kind::Site)
      site_name.emplace(n.site, n.name);

  detail::EngineOptions eopt = detail::engine_options(db);
  detail::EngineOutput all = detail::run_engine(tr, eopt);
  std::vector<Selected> chosen = select_intervals(all, opt);
  if (chosen.empty())
    throw AnalysisError(trace_dirs.front().string() + ": no finished interval" +
                        (opt.label.empty() ? std::string() : " labelled '" + opt.label + "'") +
                        (opt.intervals.empty() ? "" : " with the ids asked for"));
  std::unordered_set<std::uint64_t> ids;
  for (const auto &c : chosen)
    ids.insert(c.rec->id);
  eopt.record_paths = &ids;
  detail::EngineOutput rec = detail::run_engine(tr, eopt);
  std::unordered_map<std::uint64_t, const detail::CriticalPath *> path_of;
  for (const auto &p : rec.paths)
    path_of[p.interval] = &p;

  const double ns_per_tick = 1e9 / tr.ticks_per_second();
  auto ns = [&](std::int64_t t) {
    return static_cast<std::uint64_t>(std::llround(t * ns_per_tick));
  };
  PerfettoWriter w(out);
  PerfettoSummary sum;

  // threads on the exported paths, their windows (the exported intervals they serve)
  std::map<std::uint32_t, Windows> windows;
  for (const auto &c : chosen)
    if (auto it = path_of.find(c.rec->id); it != path_of.end())
      for (const auto &piece : it->second->pieces)
        windows[piece.thread].push_back({c.rec->begin, c.rec->end});
  const auto &streams = tr.streams();
  // one process track per (host, pid): pids of different hosts may repeat
  constexpr std::uint64_t kProcessUuid = 1ull << 40, kThreadUuid = 2ull << 40,
                          kIntervalUuid = 3ull << 40, kLabelUuid = 4ull << 40;
  auto process_uuid = [&](std::uint32_t host, std::uint32_t pid) {
    return kProcessUuid + (std::uint64_t{host} << 32) + pid;
  };
  std::set<std::pair<std::uint32_t, std::uint32_t>> processes; // (host, pid)
  for (const auto &[th, win] : windows)
    processes.insert({streams[th].host(), streams[th].info().pid});
  for (const auto &[host, pid] : processes)
    w.process_track(process_uuid(host, pid), pid, process_track_name(tr, host, pid));
  for (const auto &[th, win] : windows) {
    const auto &info = streams[th].info();
    std::string name =
        info.thread_name.empty() ? "tid " + std::to_string(info.tid) : info.thread_name;
    w.thread_track(kThreadUuid + th, process_uuid(streams[th].host(), info.pid), info.pid, info.tid,
                   name);
    thread_slices(w, tr, streams[th], kThreadUuid + th, merged(win), site_name, ns_per_tick);
  }
  const std::size_t thread_slices_written = w.slices;

  // one track per exported interval under its type's track: the interval, then its critical
  // path stretch by stretch, each stretch a slice on a child track of the thread it ran on,
  // joined by a flow from the waker's stretch to the stretch it let continue
  std::set<std::uint32_t> labels;
  for (const auto &c : chosen)
    labels.insert(c.rec->label);
  for (auto l : labels)
    w.named_track(kLabelUuid + l, 0,
                  "intervals: " +
                      (all.labels[l].empty() ? std::string("(unlabelled)") : all.labels[l]));
  std::uint64_t next_flow = 1, next_track = kIntervalUuid;
  for (const auto &c : chosen) {
    const auto &r = *c.rec;
    std::string label = all.labels[r.label].empty() ? "interval" : all.labels[r.label];
    std::uint64_t itrack = ++next_track;
    w.named_track(itrack, kLabelUuid + r.label,
                  label + " #" + std::to_string(r.id) + " (" + c.why + ")");
    w.begin(itrack, ns(r.begin),
            label + " #" + std::to_string(r.id) + ", " + ms_text((r.end - r.begin) * ns_per_tick),
            {}, {},
            {{"selected", c.why},
             {"latency_ns", "", static_cast<std::int64_t>(ns(r.end) - ns(r.begin)), false}});
    w.end(itrack, ns(r.end));
    ++sum.intervals;
    (c.why == "slowest" ? sum.slowest : c.why == "median" ? sum.median : sum.chosen)++;
    auto pit = path_of.find(r.id);
    if (pit == path_of.end())
      continue;
    const auto &pieces = pit->second->pieces;
    std::map<std::uint32_t, std::uint64_t> piece_track;
    // pieces run from the end backwards: pieces[k + 1] woke pieces[k]
    std::vector<std::uint64_t> flow_into(pieces.size(), 0);
    for (std::size_t k = 0; k + 1 < pieces.size(); ++k)
      flow_into[k] = next_flow++;
    for (std::size_t k = pieces.size(); k-- > 0;) {
      const auto &pc = pieces[k];
      auto [tt, fresh] = piece_track.try_emplace(pc.thread, 0);
      if (fresh) {
        tt->second = ++next_track;
        const auto &info = streams[pc.thread].info();
        w.named_track(tt->second, itrack,
                      "path on tid " + std::to_string(info.tid) + " (pid " +
                          std::to_string(info.pid) + ")");
      }
      std::vector<std::uint64_t> flows, terminating;
      if (k > 0)
        flows.push_back(flow_into[k - 1]); // this stretch's release lets pieces[k - 1] go on
      if (flow_into[k])
        terminating.push_back(flow_into[k]);
      w.begin(tt->second, ns(pc.t0),
              k + 1 == pieces.size() ? "critical path (begin)" : "critical path", flows,
              terminating);
      w.end(tt->second, ns(pc.t1));
      ++sum.path_pieces;
    }
    sum.flows += pieces.empty() ? 0 : pieces.size() - 1;
  }
  w.finish();
  sum.tracks = w.tracks;
  sum.slices = w.slices;
  sum.thread_slices = thread_slices_written;
  sum.bytes = w.bytes;
  return sum;
}

} // namespace vprof::analyzer
