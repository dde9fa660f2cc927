// The critical-path engine's state (docs/analyzer.md, "Critical path"): per-thread
// timelines cut into segments, the calling-context node table, the wake-up edges' objects,
// and the Engine class whose timeline bookkeeping is inline here. Its passes live in
// engine.cpp (the merge of the streams, pruning), engine_sync.cpp (sync records and kernel
// events: waits, edges, interval marks) and engine_walk.cpp (each interval's walk, its node
// times handed over). Internal to engine*.cpp.
#pragma once

#include "engine.hpp"

#include "kernel_waits.hpp"
#include "vprof/analyzer.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace vprof::analyzer::detail::engine_impl {

constexpr std::int64_t kInf = INT64_MAX;
constexpr std::uint64_t kAnyInterval = ~0ull;

// Open-addressing map from a 64-bit key (never ~0) to a 32-bit value.
class FlatMap {
public:
  FlatMap() { keys_.assign(1024, kEmpty), vals_.resize(1024); }
  bool find(std::uint64_t key, std::uint32_t &v) const {
    std::size_t mask = keys_.size() - 1, i = hash(key) & mask;
    while (keys_[i] != kEmpty) {
      if (keys_[i] == key) {
        v = vals_[i];
        return true;
      }
      i = (i + 1) & mask;
    }
    return false;
  }
  // Returns the slot value, inserting `v` when absent; `inserted` tells which.
  std::uint32_t get_or_insert(std::uint64_t key, std::uint32_t v, bool &inserted) {
    if ((size_ + 1) * 2 > keys_.size())
      grow();
    std::size_t mask = keys_.size() - 1, i = hash(key) & mask;
    while (keys_[i] != kEmpty) {
      if (keys_[i] == key) {
        inserted = false;
        return vals_[i];
      }
      i = (i + 1) & mask;
    }
    keys_[i] = key;
    vals_[i] = v;
    ++size_;
    inserted = true;
    return v;
  }

private:
  static constexpr std::uint64_t kEmpty = ~0ull;
  static std::size_t hash(std::uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return static_cast<std::size_t>(k);
  }
  void grow() {
    std::vector<std::uint64_t> ok;
    std::vector<std::uint32_t> ov;
    ok.swap(keys_);
    ov.swap(vals_);
    keys_.assign(ok.size() * 2, kEmpty);
    vals_.resize(ok.size() * 2);
    size_ = 0;
    bool ins;
    for (std::size_t i = 0; i < ok.size(); ++i)
      if (ok[i] != kEmpty)
        get_or_insert(ok[i], ov[i], ins);
  }
  std::vector<std::uint64_t> keys_;
  std::vector<std::uint32_t> vals_;
  std::size_t size_ = 0;
};

struct Frame {
  std::uint32_t site, depth, node;
};

enum SegmentType : std::uint8_t { kRun, kWait, kHop };

// A segment (the glossary's word): a stretch of one thread's timeline. kRun: [t0, tle] aggregated
// into deltas (self time per local node), then [tle, t1] spent wholly in `tail`. No truncation
// point (interval begin, wait begin, attach) lies strictly inside (t0, tle), so any clip of a walk
// is exact. kWait: blocked in [t0, t1] under local node ctx, woken by src at r (src -1: no edge;
// then a kernel wait may name its pseudo-waker, woken at r).
// kHop: zero-length marker at t0: the thread's work continues src's at r.
struct Segment {
  std::int64_t t0, tle, t1, r;
  std::uint64_t interval;
  std::uint64_t dbegin;
  std::uint32_t dcount, tail, ctx;
  std::int32_t src;
  std::uint8_t type, wkind, pseudo;
  std::uint32_t probes; // kRun: the probe records (ENTER, EXIT) in [t0, tle]
};

struct Delta {
  std::uint32_t node;
  std::int64_t dt;
};

struct Thread {
  const trace::Stream *stream = nullptr;
  const vprof_record *recs = nullptr;
  std::size_t n = 0, pos = 0, next_sync = 0, released = 0;
  std::int64_t off = 0; // run ticks of the stream's base
  double scale = 1.0;   // run ticks per stream tick (another host's clock: not exactly 1)
  bool scaled = false;
  std::uint64_t base = 0;
  std::uint32_t pid = 0, host = 0;
  bool depth_ok = true; // VPROF_FEATURE_FRAME_DEPTH: probe args carry frame depths
  // VPROF_FEATURE_STICKY_LABEL: the last LABEL holds for the stream's later begins
  bool sticky_labels = false;
  std::uint32_t label = 0; // that label's id (0: none)
  const trace::ProcessInfo *proc = nullptr;

  std::vector<Frame> stack;
  std::deque<Segment> segments;
  std::deque<Delta> deltas;
  std::uint64_t delta_base = 0; // absolute index of deltas.front()

  bool started = false;
  std::int64_t t0 = 0, last_t = 0;
  std::vector<std::uint32_t> touched;
  std::vector<std::int64_t> acc;
  std::vector<std::uint32_t> stamp;
  std::uint32_t serial = 1;
  std::uint32_t run_probes = 0; // probe records since the open kRun segment began

  bool waiting = false;
  std::int64_t wb = 0;
  std::uint8_t wkind = 0;
  std::uint32_t wctx = 0;
  std::size_t wstack = 0; // frames open when the wait began
  std::uint64_t last_begun = kAnyInterval;
  // A hand-off received since the thread last attached, detached, began or ended an
  // interval, or woke from a wait: an ATTACH that follows it is the receiver taking up the
  // handed-off work, whose edge is the receive's (to the send), not the attach's.
  bool received = false;
  std::int64_t received_send_t = 0; // that hand-off's send time
  bool interval_marks = false;      // the stream holds a begin, end, attach or detach
  std::uint64_t trunc_cursor = 0;   // absolute index into the truncation list

  // The thread's kernel events (sched.vpk) in time order, and the kernel's view of it
  // (docs/analyzer.md, "Kernel waits").
  const trace::KernelEvent *kev = nullptr;
  std::size_t kn = 0, kpos = 0;
  bool ksleep = false;  // between a SLEEP and its RUN
  bool kwait = false;   // the open wait is a kernel wait (no interposed or marked record)
  bool kwoken = false;  // a WAKE came since the SLEEP: kwake
  bool kresume = false; // a kernel wait undone by a record just after its SLEEP: resume it
  std::uint8_t kresume_kind = 0;
  trace::KernelEvent kwake;
  std::int32_t iw_src = -1; // the last traced kernel waker in the open interposed wait, at
  std::int64_t iw_r = 0;    // iw_r

  std::uint32_t cur() const { return stack.empty() ? 0 : stack.back().node; }
  std::int64_t time_of(std::size_t i) const {
    auto rel = static_cast<std::int64_t>((vprof_record_ticks(&recs[i]) - base) & VPROF_TICKS_MASK);
    if (__builtin_expect(scaled, 0))
      return off + std::llround(std::clamp(static_cast<double>(rel) * scale, -0x1p61, 0x1p61));
    return off + rel;
  }
};

inline bool is_probe(unsigned k) { return k == VPROF_REC_ENTER || k == VPROF_REC_EXIT; }

// The thread is inside the runtime's own frame (VPROF_SITE_PROFILER: making room in its
// stream, or waiting for the drain to).
inline bool in_profiler_frame(const Thread &th) {
  return !th.stack.empty() && th.stack.back().site == VPROF_SITE_PROFILER;
}

struct ObjKey {
  std::uint64_t a, b, c;
  bool operator==(const ObjKey &) const = default;
};
struct ObjKeyHash {
  std::size_t operator()(const ObjKey &k) const {
    std::uint64_t h = k.a * 0x9e3779b97f4a7c15ull ^
                      (k.b + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full ^ (k.c << 1);
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

// The last two releases of an object by distinct threads (so "the last release by
// another thread" is always at hand).
struct Releases {
  std::int32_t th[2] = {-1, -1};
  std::int64_t t[2] = {0, 0};
  void add(std::int32_t who, std::int64_t when) {
    if (th[0] != who) {
      th[1] = th[0];
      t[1] = t[0];
    }
    th[0] = who;
    t[0] = when;
  }
  bool last_other(std::int32_t me, std::int32_t &who, std::int64_t &when) const {
    for (int i = 0; i < 2; ++i)
      if (th[i] >= 0 && th[i] != me) {
        who = th[i];
        when = t[i];
        return true;
      }
    return false;
  }
};

struct Send {
  std::int32_t th;
  std::int64_t t;
};

struct OpenInterval {
  std::int64_t begin;
  std::uint32_t label = 0, pid = 0;
  std::int32_t holder = -1;
  bool holder_detached = false;
  std::int64_t detach_t = 0;
};

enum Category : std::uint64_t {
  kCatLock = 1,
  kCatRw,
  kCatCond,
  kCatSem,
  kCatCustom,
  kCatHandoff,
  kCatMessage
};

class Engine {
public:
  Engine(const trace::Trace &tr, const EngineOptions &opt) : tr_(tr), opt_(opt) {
    nodes_.push_back({kNoParent, 0});
    for (const auto &[caller, callee] : opt_.calls)
      callees_[caller].push_back(callee);
    out_.ticks_per_second = tr.ticks_per_second();
  }

  EngineOutput run();

private:
  // ---- node table -------------------------------------------------------------
  std::uint32_t child(std::uint32_t parent, std::uint64_t label) {
    std::uint64_t key = (std::uint64_t(parent) << 34) | label;
    auto &slot = child_cache_[(key * 0x9e3779b97f4a7c15ull) >> 52];
    if (slot.key == key)
      return slot.value;
    std::uint32_t v = child_slow(parent, label);
    slot = {key, v};
    return v;
  }
  std::uint32_t child_slow(std::uint32_t parent, std::uint64_t label) {
    bool ins;
    auto id = static_cast<std::uint32_t>(nodes_.size());
    std::uint32_t v = child_map_.get_or_insert((std::uint64_t(parent) << 34) | label, id, ins);
    if (ins) {
      if (nodes_.size() >= opt_.max_nodes)
        throw AnalysisError(tr_.dir().string() + ": more than " + std::to_string(opt_.max_nodes) +
                            " calling-context nodes");
      nodes_.push_back({parent, label});
    }
    return v;
  }
  // The node whose path is path(prefix) followed by path(local).
  std::uint32_t compose(std::uint32_t prefix, std::uint32_t local) {
    if (prefix == 0 || local == 0)
      return local == 0 ? prefix : local;
    std::uint64_t key = (std::uint64_t(prefix) << 32) | local;
    std::uint32_t v;
    if (compose_map_.find(key, v))
      return v;
    std::uint32_t r = child(compose(prefix, nodes_[local].parent), nodes_[local].label);
    bool ins;
    compose_map_.get_or_insert(key, r, ins);
    return r;
  }

  // ---- per-thread timeline ------------------------------------------------------
  void add_local(Thread &th, std::uint32_t node, std::int64_t dt) {
    if (node >= th.acc.size()) {
      th.acc.resize(nodes_.size() + 64, 0);
      th.stamp.resize(nodes_.size() + 64, 0);
    }
    if (th.stamp[node] != th.serial) {
      th.stamp[node] = th.serial;
      th.acc[node] = 0;
      th.touched.push_back(node);
    }
    th.acc[node] += dt;
  }
  void close_run(Thread &th, std::int64_t tle, std::int64_t t1) {
    Segment c{};
    c.type = kRun;
    c.t0 = th.t0;
    c.tle = tle;
    c.t1 = t1;
    c.tail = th.cur();
    c.src = -1;
    c.dbegin = th.delta_base + th.deltas.size();
    c.dcount = static_cast<std::uint32_t>(th.touched.size());
    for (std::uint32_t nd : th.touched)
      th.deltas.push_back({nd, th.acc[nd]});
    th.touched.clear();
    ++th.serial;
    c.probes = th.run_probes;
    if (c.t1 > c.t0 || c.dcount) {
      th.segments.push_back(c);
      th.run_probes = 0;
    }
    th.t0 = t1;
  }
  // Brings a running thread's accounting to time t (t >= last_t).
  void advance(Thread &th, std::int64_t t) {
    if (th.trunc_cursor < trunc_base_)
      th.trunc_cursor = trunc_base_;
    if (!th.started) {
      th.started = true;
      th.t0 = th.last_t = t;
      while (th.trunc_cursor < trunc_base_ + truncs_.size() &&
             truncs_[th.trunc_cursor - trunc_base_] <= t)
        ++th.trunc_cursor;
      return;
    }
    if (th.waiting) {
      th.last_t = t;
      return;
    }
    std::uint64_t end = trunc_base_ + truncs_.size();
    if (th.trunc_cursor == end) { // fast path: no truncation point since the last event
      if (t > th.last_t)
        add_local(th, th.cur(), t - th.last_t);
      th.last_t = t;
      return;
    }
    while (th.trunc_cursor < end && truncs_[th.trunc_cursor - trunc_base_] < th.last_t)
      ++th.trunc_cursor;
    if (th.trunc_cursor < end && truncs_[th.trunc_cursor - trunc_base_] <= t) {
      close_run(th, th.last_t, t); // the gap [last_t, t] becomes the tail
      while (th.trunc_cursor < end && truncs_[th.trunc_cursor - trunc_base_] <= t)
        ++th.trunc_cursor;
    } else if (t > th.last_t) {
      add_local(th, th.cur(), t - th.last_t);
    }
    th.last_t = t;
  }
  void boundary(Thread &th, std::int64_t t) {
    advance(th, t);
    if (!th.waiting)
      close_run(th, t, t);
  }
  void register_trunc(std::int64_t t) { truncs_.push_back(t); }
  // A truncation point at t unless it would break the list's time order (a clamped time).
  void register_trunc_ordered(std::int64_t t) {
    if (truncs_.empty() || t >= truncs_.back())
      truncs_.push_back(t);
  }

  // The index in out_.labels of a label id of the thread's process (its text from the
  // process's labels file; "label#N" when unknown).
  std::uint32_t label_index(const Thread &th, std::uint32_t id) {
    std::string text;
    if (th.proc) {
      auto l = th.proc->labels.find(id);
      if (l != th.proc->labels.end())
        text = l->second;
    }
    if (text.empty())
      text = "label#" + std::to_string(id);
    auto [li, ins] = label_ids_.try_emplace(text, static_cast<std::uint32_t>(out_.labels.size()));
    if (ins)
      out_.labels.push_back(text);
    return li->second;
  }

  // The planner's cost model: how often each site ran (docs/planner.md).
  void count_call(std::uint32_t site) {
    if (site >= kMaxCountedSite)
      return;
    if (site >= out_.site_calls.size())
      out_.site_calls.resize(site + 1);
    ++out_.site_calls[site];
  }
  static constexpr std::uint32_t kMaxCountedSite = 1u << 24;

  std::int64_t rec_time(Thread &th, std::size_t i) {
    std::int64_t t = th.time_of(i);
    if (t < th.last_t && th.started) {
      ++out_.clock_regressions;
      t = th.last_t;
    }
    return t;
  }

  // A probe while blocked ends the wait unseen — except in a custom wait: the user's marks
  // (vprof_wait_begin/end) enclose the user's own code (a futex wrapper, a spin loop), whose
  // probes keep the frames right while the time stays the wait's, until the function that
  // waited returns (a missing vprof_wait_end cannot swallow the rest of the thread).
  void probe(Thread &th, unsigned kind, std::uint64_t arg, std::int64_t t) {
    bool in_custom_wait = false;
    if (__builtin_expect(th.waiting, 0)) {
      in_custom_wait = th.wkind == kCustom;
      if (!in_custom_wait)
        end_wait(th, t, -1, 0);
    }
    advance(th, t); // while waiting: only the clock moves
    ++th.run_probes;
    update_stack(th, kind, arg);
    if (__builtin_expect(in_custom_wait, 0) && th.waiting && th.stack.size() < th.wstack)
      end_wait(th, t, -1, 0);
  }

  // The probe's effect on the thread's open frames (with the repair rules of
  // docs/analyzer.md, "Frame repair").
  void update_stack(Thread &th, unsigned kind, std::uint64_t arg) {
    auto site = static_cast<std::uint32_t>(arg);
    auto depth = static_cast<std::uint32_t>(arg >> 32);
    if (kind == VPROF_REC_ENTER) {
      count_call(site);
      // Without frame depths (older writers) only EXIT can repair the stack.
      while (th.depth_ok && !th.stack.empty() &&
             static_cast<std::int32_t>(th.stack.back().depth - depth) > 0) {
        th.stack.pop_back();
        ++out_.abandoned_frames;
      }
      // Same depth: the same (site, depth) cannot be open twice, and a frame of another
      // function at this depth is a dead sibling (when the site table tells functions).
      while (th.depth_ok && !th.stack.empty() && th.stack.back().depth == depth) {
        std::uint32_t open_site = th.stack.back().site;
        std::int64_t fo = fn_of(open_site), fn = fn_of(site);
        if (open_site != site && (fo == 0 || fn == 0 || fo == fn || reaches(fo, fn)))
          break;
        th.stack.pop_back();
        ++out_.abandoned_frames;
      }
      if (th.stack.size() >= opt_.max_stack) {
        ++out_.unmatched_exits;
        return;
      }
      th.stack.push_back({site, depth, child(th.cur(), site)});
    } else {
      // Pop to the innermost open frame of this site (same depth preferred).
      std::size_t i = th.stack.size(), found = SIZE_MAX;
      while (i > 0) {
        --i;
        if (th.stack[i].site == site) {
          if (found == SIZE_MAX)
            found = i;
          if (th.stack[i].depth == depth) {
            found = i;
            break;
          }
        }
        if (static_cast<std::int32_t>(th.stack[i].depth - depth) < 0)
          break; // shallower than the exiting frame: stop searching
      }
      if (found == SIZE_MAX) {
        ++out_.unmatched_exits;
        return;
      }
      out_.abandoned_frames += th.stack.size() - found - 1;
      th.stack.resize(found);
    }
  }

  std::int64_t fn_of(std::uint32_t site) const {
    return site < opt_.site_function.size() ? opt_.site_function[site] : 0;
  }
  // Whether `from` calls `to`, directly or transitively, in the static call graph
  // (memoised breadth-first search; only asked for same-depth ENTERs).
  bool reaches(std::int64_t from, std::int64_t to) {
    if (callees_.empty())
      return false;
    auto key = std::make_pair(from, to);
    if (auto m = reach_memo_.find(key); m != reach_memo_.end())
      return m->second;
    std::unordered_set<std::int64_t> seen{from};
    std::vector<std::int64_t> todo{from};
    bool found = false;
    while (!todo.empty() && !found) {
      std::int64_t f = todo.back();
      todo.pop_back();
      auto e = callees_.find(f);
      if (e == callees_.end())
        continue;
      for (std::int64_t c : e->second) {
        if (c == to) {
          found = true;
          break;
        }
        if (seen.insert(c).second)
          todo.push_back(c);
      }
    }
    reach_memo_[key] = found;
    return found;
  }

  void begin_wait(Thread &th, std::int64_t t, WaitKind k) {
    if (th.waiting && th.kwait && !is_kernel_wait(k)) {
      // The kernel saw the thread block just before the interposed record (clocks a few
      // µs apart): one wait, the interposed one, from the kernel's sleep.
      ++out_.kernel_clamped;
      --out_.kernel_waits;
      th.kwait = false;
      th.wkind = k;
      th.iw_src = -1;
      if (th.kwoken)
        note_kernel_waker(th, th.kwake, static_cast<std::int32_t>(&th - threads_.data()));
      return;
    }
    if (th.waiting)
      end_wait(th, t, -1, 0);
    boundary(th, t);
    register_trunc(t);
    th.waiting = true;
    th.wb = t;
    th.wkind = k;
    th.wctx = th.cur();
    th.wstack = th.stack.size();
    th.kwait = is_kernel_wait(k);
    th.kresume = false;
    th.iw_src = -1;
  }
  // Ends the open wait at t with the edge (src, r). A kernel wait ended by a record of the
  // thread before the kernel's RUN (clock skew) takes the kernel's waker all the same.
  void end_wait(Thread &th, std::int64_t t, std::int32_t src, std::int64_t r) {
    std::uint8_t pseudo = kNoPseudo;
    if (th.kwait && !kernel_end_early(th, t, src, r, pseudo)) {
      undo_kernel_wait(th);
      return;
    }
    close_wait(th, t, src, r, pseudo);
  }
  // The kernel wait had not begun yet after all (its SLEEP lies a little before a record
  // of the thread): the thread ran from its start, and the wait resumes after the record.
  void undo_kernel_wait(Thread &th) {
    th.waiting = false;
    th.kwait = false;
    th.t0 = th.last_t = th.wb; // (a walk may have split the wait: its rest only)
    th.kresume = true;
    th.kresume_kind = th.wkind;
    --out_.kernel_waits;
  }
  void resume_kernel_wait(Thread &th) {
    th.kresume = false;
    if (th.waiting || !th.ksleep)
      return;
    // not before a published truncation point, so that the list stays in time order
    std::int64_t t = th.last_t;
    if (!truncs_.empty())
      t = std::max(t, std::min(truncs_.back(), th.kpos < th.kn ? th.kev[th.kpos].t : kInf));
    begin_wait(th, t, static_cast<WaitKind>(th.kresume_kind));
    ++out_.kernel_waits;
  }
  void close_wait(Thread &th, std::int64_t t, std::int32_t src, std::int64_t r,
                  std::uint8_t pseudo) {
    th.received = false;
    Segment c{};
    c.type = kWait;
    c.t0 = th.wb;
    c.tle = c.t1 = t;
    c.ctx = th.wctx;
    c.wkind = th.wkind;
    c.src = src;
    c.r = r;
    c.pseudo = pseudo;
    c.dbegin = th.delta_base + th.deltas.size();
    if (src >= 0)
      ++out_.wake_edges;
    if (th.kwait && src >= 0)
      ++out_.kernel_edges;
    else if (th.kwait)
      ++out_.pseudo_waits[pseudo];
    th.kwait = false;
    th.segments.push_back(c);
    th.waiting = false;
    th.t0 = th.last_t = t;
    th.touched.clear();
    ++th.serial;
  }
  void hop(Thread &th, std::int64_t t, std::int32_t src, std::int64_t r, std::uint64_t interval,
           WaitKind k) {
    Segment c{};
    c.type = kHop;
    c.t0 = c.tle = c.t1 = t;
    c.src = src;
    c.r = r;
    c.interval = interval;
    c.ctx = th.cur();
    c.wkind = k;
    c.dbegin = th.delta_base + th.deltas.size();
    th.segments.push_back(c);
  }

  ObjKey obj_key(const Thread &th, Category cat, std::uint64_t addr) const {
    std::uint64_t dev, ino, off;
    if (th.proc && !th.proc->shared.empty() && th.proc->shared_key(addr, dev, ino, off))
      return {(cat << 56) | (1ull << 55) | (dev & ((1ull << 55) - 1)), ino, off};
    return {(cat << 56) | th.pid, th.host, addr};
  }
  // A message key is a value of the program's protocol: the same in every process and host.
  static ObjKey message_key(std::uint64_t key) { return {kCatMessage << 56, 0, key}; }

  void sync(std::int32_t ti, unsigned kind, std::uint64_t arg, std::int64_t t);
  void kernel(std::int32_t ti, const trace::KernelEvent &ev);
  void kernel_waker(const Thread &th, std::int64_t t, std::int32_t &src, std::int64_t &r,
                    std::uint8_t &pseudo) const;
  bool kernel_end_early(Thread &th, std::int64_t t, std::int32_t &src, std::int64_t &r,
                        std::uint8_t &pseudo);
  void kernel_fill(Thread &th, std::int64_t t, std::int32_t &src, std::int64_t &r);
  bool take_wake(Thread &th, const trace::KernelEvent &ev);
  std::int64_t cuttable_release(std::int32_t src, std::int64_t r, std::int64_t t);
  void note_kernel_waker(Thread &th, const trace::KernelEvent &ev, std::int32_t ti) {
    if (th.waiting && !th.kwait && ev.kind == VPROF_SCHED_WAKE &&
        !(ev.flags & VPROF_SCHED_WAKE_DATA) && ev.waker >= 0 && ev.waker != ti && ev.t >= th.wb) {
      th.iw_src = ev.waker;
      th.iw_r = ev.t;
    }
  }
  void end_interval(std::int32_t ti, std::uint64_t id, std::int64_t t);
  void hand_over();
  void walk(std::int32_t ti, std::int64_t hi, std::int64_t lo, std::uint64_t interval);
  void ensure_closed(std::int32_t ti, std::int64_t hi);
  void run_probes(Thread &th, std::size_t stop, std::int64_t until);
  void prune(std::int64_t now);
  void attribute(std::uint32_t node, std::int64_t dt) {
    if (dt == 0)
      return;
    if (node >= res_.size())
      res_.resize(nodes_.size() + 64, 0);
    if (res_[node] == 0 && !res_seen(node))
      res_touched_.push_back(node);
    res_[node] += dt;
  }
  bool res_seen(std::uint32_t node) {
    if (node >= res_flag_.size())
      res_flag_.resize(nodes_.size() + 64, 0);
    if (res_flag_[node])
      return true;
    res_flag_[node] = 1;
    return false;
  }

  const trace::Trace &tr_;
  EngineOptions opt_;
  EngineOutput out_;
  std::vector<NodeDef> nodes_;
  FlatMap child_map_, compose_map_;
  struct CacheSlot {
    std::uint64_t key = ~0ull;
    std::uint32_t value = 0;
  };
  std::vector<CacheSlot> child_cache_ = std::vector<CacheSlot>(4096);
  std::vector<Thread> threads_;
  std::vector<std::int64_t> truncs_; // truncation times, index = absolute - trunc_base_
  std::uint64_t trunc_base_ = 0;
  std::unordered_map<ObjKey, Releases, ObjKeyHash> releases_;
  std::unordered_map<ObjKey, std::deque<Send>, ObjKeyHash> sends_;
  std::unordered_map<std::uint64_t, OpenInterval> open_;
  std::multiset<std::int64_t> open_begins_;
  std::unordered_map<std::string, std::uint32_t> label_ids_;
  std::vector<std::int64_t> res_;
  std::vector<std::uint8_t> res_flag_;
  std::vector<std::uint32_t> res_touched_;
  std::uint64_t syncs_since_prune_ = 0;
  std::unordered_map<std::int64_t, std::vector<std::int64_t>> callees_;
  std::map<std::pair<std::int64_t, std::int64_t>, bool> reach_memo_;
  std::int64_t skew_ = 0;         // how far a thread's records and its kernel events may disagree
  std::uint64_t path_probes_ = 0; // probe records on the critical path being walked
};

} // namespace vprof::analyzer::detail::engine_impl
