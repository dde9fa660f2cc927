// The streaming critical-path engine (docs/analyzer.md, "Critical path"): merges the
// per-thread streams by time at sync events, keeps per-thread segment summaries only as far
// back as the oldest open interval, and walks each interval's critical path at its end.
#include "engine.hpp"

#include "kernel_waits.hpp"
#include "vprof/analyzer.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace vprof::analyzer::detail {

const char *wait_kind_name(unsigned k) {
  static const char *names[] = {"mutex", "rwlock", "cond",    "sem",   "custom", "handoff",
                                "queue", "wakeup", "message", "futex", "poll",   "read",
                                "write", "io",     "sleep",   "child", "kernel"};
  static_assert(sizeof names / sizeof names[0] == kWaitKinds);
  return k < kWaitKinds ? names[k] : "?";
}

namespace {

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

bool is_probe(unsigned k) { return k == VPROF_REC_ENTER || k == VPROF_REC_EXIT; }

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
  std::int64_t cuttable_release(std::int32_t src, std::int64_t r, std::int64_t t);
  void note_kernel_waker(Thread &th, const trace::KernelEvent &ev, std::int32_t ti) {
    if (th.waiting && !th.kwait && ev.kind == VPROF_SCHED_WAKE && ev.waker >= 0 && ev.waker != ti &&
        ev.t >= th.wb) {
      th.iw_src = ev.waker;
      th.iw_r = ev.t;
    }
  }
  void end_interval(std::int32_t ti, std::uint64_t id, std::int64_t t);
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

void Engine::run_probes(Thread &th, std::size_t stop, std::int64_t until) {
  std::size_t i = th.pos;
  for (; i < stop; ++i) {
    std::int64_t t = rec_time(th, i);
    if (t > until)
      break;
    const vprof_record &r = th.recs[i];
    probe(th, vprof_record_kind_of(&r), r.arg, t);
  }
  th.pos = i;
  // Records before pos are never read again: give their pages back (every 1 MiB), keeping
  // 256 KiB behind pos mapped so the kernel's fault-around (64 KiB windows) never maps
  // released pages in again.
  constexpr std::size_t kLag = 1u << 14;
  if (th.pos - th.released >= (1u << 16) + kLag) {
    th.stream->release_pages(th.released, th.pos - kLag);
    th.released = th.pos - kLag;
  }
}

void Engine::ensure_closed(std::int32_t ti, std::int64_t hi) {
  Thread &th = threads_[ti];
  // a thread not started yet (a waker the kernel named that has no sync record before hi)
  // starts with its first probe
  if (!th.started && !(th.pos < th.next_sync && th.time_of(th.pos) <= hi))
    return;
  if (th.waiting) {
    if (hi > th.wb) { // split the pending wait: its first part has no known waker
      std::int64_t keep_wb = th.wb;
      std::uint32_t ctx = th.wctx;
      std::uint8_t k = th.wkind;
      Segment c{};
      c.type = kWait;
      c.t0 = keep_wb;
      c.tle = c.t1 = hi;
      c.ctx = ctx;
      c.wkind = k;
      c.src = -1;
      c.dbegin = th.delta_base + th.deltas.size();
      th.segments.push_back(c);
      th.wb = hi;
    }
    return;
  }
  if (hi <= th.t0)
    return;
  run_probes(th, th.next_sync, hi);
  if (th.waiting)
    return;
  boundary(th, std::max(hi, th.last_t));
}

// Termination (by construction). An item covers (lo, hi] of one thread; it attributes its
// thread's time from hi down and pushes successors for the rest, on disjoint ranges: at most
// one on the waker, whose hi is the release time r <= hi, or, at a queued wait (an attach
// hop at t <= hi), the gap (r, t] on the attaching thread and the continuation (lo, r] on
// the last holder, r < t. A jump with r < hi consumes time. A jump with r == hi (a wake-up or
// hand-off at the very instant the item starts) consumes none, and two threads that woke
// each other at one instant would send the walk round that cycle forever (the thread-pool
// hang of issue 12). So every (thread, hi, gap or not) is walked with jumps at most once:
// when it comes round again, it is walked "settled", taking no zero-time jump (the wait's
// time stays its own). A gap item follows no hop (it walks the thread's own timeline), so
// the only successor at its own hi a settled item can push is a gap item, and a settled gap
// item pushes none at its hi. Hence every item is followed by ones with a smaller hi or, at one hi,
// by an unvisited triple or a settled walk that cannot jump at that hi: at most 4 x threads
// items per distinct hi, and the hi values are segment times. The step budget below is a
// second line: a broken invariant is an internal error, never a hang.
void Engine::walk(std::int32_t ti, std::int64_t hi, std::int64_t lo, std::uint64_t interval) {
  // gap: the thread's own work in a queued wait's gap (hops are not followed: a receive of
  // another interval's message is the loop taking up other work, not a wait). detached: in a
  // gap, or reached from one, where the interval was detached: the ending thread's work there
  // was for others, so a chain that reaches it stays under the queue node.
  struct Item {
    std::int32_t th;
    std::int64_t hi, lo;
    std::uint32_t prefix;
    bool settled = false, gap = false, detached = false;
  };
  std::vector<Item> work{{ti, hi, lo, 0}};
  // (thread, hi) walked with jumps; a gap item's thread as -1 - thread
  std::vector<std::pair<std::int32_t, std::int64_t>> walked;
  std::uint64_t steps = 0, budget = 64;
  for (const auto &t : threads_)
    budget += 4 * (t.segments.size() + 1);
  const std::uint32_t untracked_local = child(0, kLabelUntracked);
  CriticalPath *path = nullptr;
  if (opt_.record_paths && opt_.record_paths->count(interval)) {
    out_.paths.push_back({interval, {}});
    path = &out_.paths.back();
  }
  while (!work.empty()) {
    Item it = work.back();
    work.pop_back();
    if (++steps > budget)
      throw InternalError("the critical-path walk of interval " + std::to_string(interval) +
                          " did not end after " + std::to_string(steps) +
                          " steps (a bug in vprof: please report it with the trace)");
    if (!it.settled) {
      std::pair<std::int32_t, std::int64_t> key{it.gap ? -1 - it.th : it.th, it.hi};
      it.settled = std::find(walked.begin(), walked.end(), key) != walked.end();
      if (!it.settled)
        walked.push_back(key);
    }
    std::int64_t piece_lo = it.lo; // where this thread's stretch of the path begins
    ensure_closed(it.th, it.hi);
    Thread &T = threads_[it.th];
    const auto &ch = T.segments;
    std::size_t idx = static_cast<std::size_t>(
        std::upper_bound(ch.begin(), ch.end(), it.hi,
                         [](std::int64_t v, const Segment &c) { return v < c.t0; }) -
        ch.begin());
    std::int64_t cur = it.hi;
    bool stopped = false;
    for (std::size_t j = idx; j-- > 0;) {
      if (cur <= it.lo)
        break;
      const Segment &c = ch[j];
      if (c.t1 <= it.lo && c.type != kHop)
        break;
      if (c.t1 < cur) { // not contiguous (thread start, pruned or unseen time)
        std::int64_t g = std::max(c.t1, it.lo);
        attribute(compose(it.prefix, untracked_local), cur - g);
        cur = g;
        if (cur <= it.lo)
          break;
      }
      if (c.type == kHop) {
        if (!it.gap && c.t0 > it.lo && c.src >= 0 &&
            (c.interval == kAnyInterval || c.interval == interval) &&
            !(it.settled && std::clamp(c.r, it.lo, c.t0) >= it.hi)) {
          std::int64_t r = std::clamp(c.r, it.lo, c.t0);
          std::uint32_t w = compose(it.prefix, child(c.ctx, kLabelWaitBase + c.wkind));
          if (r > it.lo)
            work.push_back({c.src, r, it.lo, it.prefix, false, false, it.detached});
          if (c.wkind == kQueue && c.t0 > r) {
            // A queued wait: what the attaching thread did from the detach to the attach
            // is what the interval waited for (head-of-line); its nodes become the queue
            // node's children, its time outside any node the node's own. Walked before
            // the continuation (pushed last), so the path's pieces stay in time order.
            work.push_back({it.th, c.t0, r, w, false, true, true});
            piece_lo = c.t0;
          } else {
            attribute(w, c.t0 - r);
            piece_lo = r;
          }
          cur = it.lo;
          stopped = true;
          break;
        }
        continue;
      }
      std::int64_t a = std::max(c.t0, it.lo), b = std::min(c.t1, cur);
      if (b <= a) {
        cur = std::min(cur, std::max(a, it.lo));
        continue;
      }
      if (c.type == kRun) {
        if (b > c.tle)
          attribute(compose(it.prefix, c.tail), b - std::max(c.tle, a));
        std::int64_t dhi = std::min(b, c.tle);
        if (dhi > a) {
          std::size_t d0 = static_cast<std::size_t>(c.dbegin - T.delta_base);
          // the probes that ran on the path: whole in the exact case, else prorated
          path_probes_ += a == c.t0 && dhi == c.tle
                              ? c.probes
                              : static_cast<std::uint64_t>(static_cast<__int128>(c.probes) *
                                                           (dhi - a) / (c.tle - c.t0));
          if (a == c.t0 && dhi == c.tle) {
            for (std::uint32_t k = 0; k < c.dcount; ++k)
              attribute(compose(it.prefix, T.deltas[d0 + k].node), T.deltas[d0 + k].dt);
          } else { // cannot happen by construction; stay exact in sum anyway
            ++out_.inexact_splits;
            std::int64_t len = dhi - a, total = c.tle - c.t0, given = 0;
            for (std::uint32_t k = 0; k < c.dcount && total > 0; ++k) {
              auto v = static_cast<std::int64_t>(static_cast<__int128>(T.deltas[d0 + k].dt) * len /
                                                 total);
              attribute(compose(it.prefix, T.deltas[d0 + k].node), v);
              given += v;
            }
            attribute(compose(it.prefix, c.dcount ? T.deltas[d0].node : c.tail), len - given);
          }
        }
      } else { // kWait
        std::uint32_t w = compose(it.prefix, child(c.ctx, kLabelWaitBase + c.wkind));
        if (c.src >= 0 && !(it.settled && std::clamp(c.r, a, b) >= it.hi)) {
          std::int64_t r = std::clamp(c.r, a, b);
          // from the release to the waiter running again: its own wake-up delay
          if (b > r)
            attribute(child(w, kLabelWaitBase + kWakeup), b - r);
          if (r > a) {
            // The path continues on the waker from its release back to the interval's
            // begin (the waiter's own history before it blocked ran in parallel and is
            // off the path). Chains are flattened: a waker that itself waited keeps its
            // wake-up latency in its nested wait node, but its waker's work joins the
            // outer wait's context, so a wait node's children are what the holders did;
            // the interval's own ending thread is in the root context (except in a queued
            // wait's gap, where its work was for other intervals).
            std::uint32_t next = c.src == ti && !it.detached ? 0 : (it.prefix == 0 ? w : it.prefix);
            work.push_back({c.src, r, it.lo, next, false, false, it.detached});
            piece_lo = r;
            cur = it.lo;
            stopped = true;
            break;
          }
        } else if (c.pseudo != kNoPseudo) {
          // a kernel wait woken by no traced thread: until the wake-up, what woke it (a
          // device, the network, a timer, another process); then the wake-up delay
          const std::int64_t r = std::clamp(c.r, a, b);
          attribute(child(w, kLabelWakerBase + c.pseudo), r - a);
          attribute(child(w, kLabelWaitBase + kWakeup), b - r);
        } else {
          attribute(w, b - a);
        }
      }
      cur = a;
    }
    if (!stopped && cur > it.lo)
      attribute(compose(it.prefix, untracked_local), cur - it.lo);
    if (path && it.hi > piece_lo)
      path->pieces.push_back({static_cast<std::uint32_t>(it.th), piece_lo, it.hi});
  }
}

void Engine::end_interval(std::int32_t ti, std::uint64_t id, std::int64_t e) {
  auto it = open_.find(id);
  if (it == open_.end()) {
    ++out_.intervals_unmatched_end;
    return;
  }
  OpenInterval oi = it->second;
  open_.erase(it);
  if (auto b = open_begins_.find(oi.begin); b != open_begins_.end())
    open_begins_.erase(b);
  if (e < oi.begin) {
    ++out_.intervals_unmatched_end;
    return;
  }
  res_touched_.clear();
  path_probes_ = 0;
  walk(ti, e, oi.begin, id);
  out_.critical_records += path_probes_;
  IntervalRec rec{};
  rec.id = id;
  rec.label = oi.label;
  rec.pid = oi.pid;
  rec.begin = oi.begin;
  rec.end = e;
  rec.times_off = out_.times.size();
  std::int64_t sum = 0;
  std::sort(res_touched_.begin(), res_touched_.end());
  for (std::uint32_t nd : res_touched_) {
    if (res_[nd] != 0)
      out_.times.push_back({nd, res_[nd]});
    sum += res_[nd];
    res_[nd] = 0;
    res_flag_[nd] = 0;
  }
  rec.times_n = static_cast<std::uint32_t>(out_.times.size() - rec.times_off);
  if (sum != e - oi.begin)
    ++out_.path_sum_mismatches;
  out_.intervals.push_back(rec);
}

void Engine::sync(std::int32_t ti, unsigned kind, std::uint64_t arg, std::int64_t t) {
  Thread &th = threads_[ti];
  // A wait pairs only with a release written after the wait began: at VPROF_SYNC=1 the
  // runtime skips releases that found no waiter, and a waiter that blocks between that
  // check and the unlock must not be paired with an older release (it gets no edge).
  auto acquire = [&](Category cat, WaitKind wk, bool need_after_wb) {
    if (th.waiting && th.wkind == wk) {
      std::int32_t src = -1;
      std::int64_t r = 0;
      auto f = releases_.find(obj_key(th, cat, arg));
      if (f != releases_.end() && f->second.last_other(ti, src, r) && need_after_wb && r < th.wb)
        src = -1;
      if (src < 0)
        kernel_fill(th, t, src, r);
      advance(th, t);
      end_wait(th, t, src, r);
    } else {
      if (th.waiting)
        end_wait(th, t, -1, 0);
      boundary(th, t);
    }
  };
  auto release = [&](Category cat) {
    if (th.waiting)
      end_wait(th, t, -1, 0);
    boundary(th, t);
    releases_[obj_key(th, cat, arg)].add(ti, t);
  };
  switch (kind) {
  case VPROF_REC_LOCK_WAIT:
    begin_wait(th, t, kMutex);
    break;
  case VPROF_REC_LOCK_ACQUIRE:
    acquire(kCatLock, kMutex, true);
    break;
  case VPROF_REC_LOCK_RELEASE:
    release(kCatLock);
    break;
  case VPROF_REC_RWLOCK_WAIT_RD:
  case VPROF_REC_RWLOCK_WAIT_WR:
    begin_wait(th, t, kRwlock);
    break;
  case VPROF_REC_RWLOCK_ACQUIRE_RD:
  case VPROF_REC_RWLOCK_ACQUIRE_WR:
    acquire(kCatRw, kRwlock, true);
    break;
  case VPROF_REC_RWLOCK_RELEASE:
    release(kCatRw);
    break;
  case VPROF_REC_COND_WAIT_BEGIN:
    begin_wait(th, t, kCond);
    break;
  case VPROF_REC_COND_WAIT_END:
    acquire(kCatCond, kCond, true);
    break;
  case VPROF_REC_COND_WAIT_TIMEOUT:
    if (th.waiting) {
      advance(th, t);
      end_wait(th, t, -1, 0);
    } else {
      boundary(th, t);
    }
    break;
  case VPROF_REC_COND_SIGNAL:
  case VPROF_REC_COND_BROADCAST:
    release(kCatCond);
    break;
  case VPROF_REC_SEM_WAIT:
    begin_wait(th, t, kSem);
    break;
  case VPROF_REC_SEM_ACQUIRE:
    acquire(kCatSem, kSem, true);
    break;
  case VPROF_REC_SEM_POST:
    release(kCatSem);
    break;
  case VPROF_REC_WAIT_BEGIN:
    begin_wait(th, t, kCustom);
    break;
  case VPROF_REC_WAIT_END:
    acquire(kCatCustom, kCustom, false);
    break;
  case VPROF_REC_WAKE:
    release(kCatCustom);
    break;
  case VPROF_REC_HANDOFF_SEND: {
    if (th.waiting)
      end_wait(th, t, -1, 0);
    boundary(th, t);
    auto &q = sends_[obj_key(th, kCatHandoff, arg)];
    if (q.size() >= (1u << 20))
      q.pop_front();
    q.push_back({ti, t});
    break;
  }
  case VPROF_REC_HANDOFF_RECV: {
    if (th.waiting)
      end_wait(th, t, -1, 0);
    boundary(th, t);
    auto f = sends_.find(obj_key(th, kCatHandoff, arg));
    if (f != sends_.end() && !f->second.empty()) {
      Send s = f->second.front();
      f->second.pop_front();
      if (s.th != ti) {
        hop(th, t, s.th, s.t, kAnyInterval, kHandoff);
        ++out_.wake_edges;
        th.received = true;
        th.received_send_t = s.t;
      }
    }
    break;
  }
  case VPROF_REC_MSG_SEND: {
    if (th.waiting)
      end_wait(th, t, -1, 0);
    boundary(th, t);
    auto &q = sends_[message_key(arg)];
    if (q.size() >= (1u << 20))
      q.pop_front();
    q.push_back({ti, t});
    break;
  }
  case VPROF_REC_MSG_RECV: {
    if (th.waiting)
      end_wait(th, t, -1, 0);
    boundary(th, t);
    // the oldest send of the key by another thread: a request's receiver never takes the
    // sender's own reply-to-be, nor a client its own request when the server is not traced
    auto f = sends_.find(message_key(arg));
    auto q = f == sends_.end() ? std::deque<Send>::iterator() : f->second.begin();
    while (f != sends_.end() && q != f->second.end() && q->th == ti)
      ++q;
    if (f == sends_.end() || q == f->second.end()) {
      ++out_.messages_unmatched;
      break;
    }
    Send s = *q;
    f->second.erase(q);
    if (f->second.empty())
      sends_.erase(f);
    hop(th, t, s.th, s.t, kAnyInterval, kMessage);
    ++out_.wake_edges;
    ++out_.message_edges;
    if (threads_[s.th].host != th.host)
      ++out_.cross_host_edges;
    th.received = true;
    th.received_send_t = s.t;
    break;
  }
  case VPROF_REC_INTERVAL_BEGIN: {
    th.interval_marks = true;
    if (th.waiting)
      end_wait(th, t, -1, 0);
    boundary(th, t);
    register_trunc(t);
    auto f = open_.find(arg);
    if (f != open_.end()) { // begun twice: the later begin wins
      if (auto b = open_begins_.find(f->second.begin); b != open_begins_.end())
        open_begins_.erase(b);
      ++out_.intervals_unfinished;
    }
    OpenInterval oi;
    oi.begin = t;
    oi.pid = th.pid;
    oi.holder = ti;
    if (th.sticky_labels && th.label != 0)
      oi.label = label_index(th, th.label);
    open_[arg] = oi;
    open_begins_.insert(t);
    th.last_begun = arg;
    break;
  }
  case VPROF_REC_LABEL: {
    const auto id = static_cast<std::uint32_t>(arg);
    if (th.sticky_labels)
      th.label = id;
    auto f = open_.find(th.last_begun);
    if (f != open_.end())
      f->second.label = id == 0 && th.sticky_labels ? 0 : label_index(th, id);
    break;
  }
  case VPROF_REC_INTERVAL_END:
    th.interval_marks = true;
    if (th.waiting)
      end_wait(th, t, -1, 0);
    boundary(th, t);
    end_interval(ti, arg, t);
    prune(t);
    break;
  case VPROF_REC_ATTACH: {
    th.interval_marks = true;
    if (th.waiting)
      end_wait(th, t, -1, 0);
    boundary(th, t);
    register_trunc(t);
    auto f = open_.find(arg);
    if (f != open_.end()) {
      OpenInterval &oi = f->second;
      // Work that came by a marked hand-off: the receive's edge to the send is the path.
      // The last holder is no predecessor then: still attached, it is usually blocked
      // waiting for the very work this thread is about to do (a hop to it at this instant
      // would cut the path short); detached, it may be a sibling task's worker of the same
      // interval that finished first, in parallel (a pool's fast task; following its
      // detach would put its work on the path). Without a hand-off the interval moved from
      // the last holder: hop to its detach (or to it at this instant). Detached, the
      // interval waited in a queue until this thread took it up: the walk opens the gap
      // into this thread's work since the detach (what it was busy with, or idle in).
      const bool joined_by_handoff = th.received;
      if (oi.holder >= 0 && oi.holder != ti && !joined_by_handoff)
        hop(th, t, oi.holder, oi.holder_detached ? oi.detach_t : t, arg, kQueue);
      // The same thread taking the interval up again (an event loop's next step of a
      // request): the interval waited from its detach, and the thread's work in between,
      // for other intervals, is what it waited for (head-of-line; the walk opens the gap).
      // A hand-off received for it after that detach is the later event, and its edge
      // stays the path: the interval waited for the sender, not for its turn on the loop.
      const bool resumed = oi.holder == ti && oi.holder_detached &&
                           !(th.received && th.received_send_t >= oi.detach_t);
      if (resumed)
        hop(th, t, ti, oi.detach_t, arg, kQueue);
      oi.holder = ti;
      oi.holder_detached = false;
    }
    th.received = false;
    break;
  }
  case VPROF_REC_DETACH: {
    th.interval_marks = true;
    if (th.waiting)
      end_wait(th, t, -1, 0);
    boundary(th, t);
    // the gap of a queued wait begins here and is walked on the thread that re-attaches
    register_trunc(t);
    auto f = open_.find(arg);
    if (f != open_.end() && f->second.holder == ti) {
      f->second.holder_detached = true;
      f->second.detach_t = t;
    }
    th.received = false;
    break;
  }
  default:
    break;
  }
  if (++syncs_since_prune_ >= 4096)
    prune(t);
}

// The kernel's waker of the open kernel wait, ending at t: the first WAKE since its SLEEP.
// A traced waker gives the edge (src, r); any other names the pseudo-waker, woken at r.
void Engine::kernel_waker(const Thread &th, std::int64_t t, std::int32_t &src, std::int64_t &r,
                          std::uint8_t &pseudo) const {
  src = -1;
  r = 0;
  pseudo = kNoPseudo;
  if (!th.kwoken)
    return;
  const trace::KernelEvent &w = th.kwake;
  r = std::clamp(w.t, th.wb, std::max(th.wb, t));
  const auto self = static_cast<std::int32_t>(&th - threads_.data());
  if (w.waker >= 0 && w.waker != self)
    src = w.waker;
  else if (w.waker < 0 && (w.flags & trace::kWakerUnrecorded))
    pseudo = kPseudoUnrecorded;
  else if (w.waker < 0)
    pseudo = pseudo_waker(static_cast<WaitKind>(th.wkind),
                          (w.flags & VPROF_SCHED_WAKER_IRQ) != 0 || w.other == 0);
}

// A record of the thread at t inside a kernel wait, before the kernel's RUN: the clocks
// disagree by a little (or the RUN was lost). When the wait was woken already, or its RUN
// follows within the skew allowance and nearer to t than its SLEEP, the wait ends at t with
// the kernel's waker (the events up to that RUN are consumed); otherwise the SLEEP was
// early and the wait has not begun yet (false: the caller undoes it).
bool Engine::kernel_end_early(Thread &th, std::int64_t t, std::int32_t &src, std::int64_t &r,
                              std::uint8_t &pseudo) {
  ++out_.kernel_clamped;
  std::size_t run = th.kn;
  if (!th.kwoken)
    for (std::size_t j = th.kpos; j < th.kn && th.kev[j].t <= t + skew_; ++j) {
      if (th.kev[j].kind == VPROF_SCHED_SLEEP)
        break;
      if (th.kev[j].kind == VPROF_SCHED_RUN) {
        run = j;
        break;
      }
    }
  if (!th.kwoken && (run == th.kn || th.kev[run].t - t > t - th.wb))
    return false;
  bool peeked = false;
  for (; run < th.kn && th.kpos <= run; ++th.kpos) // up to the RUN: its WAKE
    if (th.kev[th.kpos].kind == VPROF_SCHED_WAKE && !th.kwoken) {
      th.kwoken = true;
      th.kwake = th.kev[th.kpos];
      peeked = true;
    }
  if (run < th.kn)
    th.ksleep = false;
  kernel_waker(th, t, src, r, pseudo);
  if (peeked && src >= 0)
    r = cuttable_release(src, r, t);
  return true;
}

// A release time r <= t taken from a WAKE not processed yet: no truncation point marks it
// on the waker's timeline, which may have run past it. The walk cuts the waker there, so it
// must be a segment boundary: not before the waker's last event (at most t), published.
std::int64_t Engine::cuttable_release(std::int32_t src, std::int64_t r, std::int64_t t) {
  const Thread &w = threads_[static_cast<std::size_t>(src)];
  if (w.started)
    r = std::max(r, std::min(w.last_t, t));
  if (!truncs_.empty())
    r = std::max(r, std::min(truncs_.back(), t));
  register_trunc_ordered(r);
  return r;
}

// An interposed or marked wait whose records found no waker: the kernel's traced waker of
// a sleep inside it, if any (the last WAKE seen since the wait began, else the next one
// within the skew allowance).
void Engine::kernel_fill(Thread &th, std::int64_t t, std::int32_t &src, std::int64_t &r) {
  if (th.kwait || !th.waiting)
    return;
  const auto self = static_cast<std::int32_t>(&th - threads_.data());
  const bool peek = th.iw_src < 0;
  if (peek)
    for (std::size_t j = th.kpos; j < th.kn && th.kev[j].t <= t + skew_; ++j) {
      if (th.kev[j].kind == VPROF_SCHED_SLEEP)
        break;
      note_kernel_waker(th, th.kev[j], self);
      if (th.iw_src >= 0)
        break;
    }
  if (th.iw_src < 0)
    return;
  src = th.iw_src;
  r = std::min(th.iw_r, t);
  if (peek)
    r = cuttable_release(src, r, t);
  th.iw_src = -1;
  ++out_.kernel_filled;
}

// One kernel event of thread ti (docs/analyzer.md, "Kernel waits"): a SLEEP outside every
// interposed or marked wait begins a kernel wait, its RUN ends it with the first WAKE's
// waker; inside such a wait they only lend it a waker when its records found none.
void Engine::kernel(std::int32_t ti, const trace::KernelEvent &ev) {
  Thread &th = threads_[ti];
  const std::int64_t t = th.started ? std::max(ev.t, th.last_t) : ev.t;
  switch (ev.kind) {
  case VPROF_SCHED_SLEEP:
    th.kresume = false;
    if (th.waiting && th.kwait) { // a second SLEEP without a RUN: that RUN was lost
      ++out_.kernel_clamped;
      std::int32_t src;
      std::int64_t r;
      std::uint8_t pseudo;
      kernel_waker(th, t, src, r, pseudo);
      advance(th, t);
      close_wait(th, t, src, r, pseudo);
    }
    th.ksleep = true;
    th.kwoken = false;
    if (!th.waiting) {
      begin_wait(th, t, kernel_wait_kind(ev.syscall));
      ++out_.kernel_waits;
    }
    break;
  case VPROF_SCHED_WAKE:
    // a wake-up by a traced thread of a waiting thread may become an edge: the walk will
    // cut the waker's timeline at its time
    if (ev.waker >= 0 && ev.waker != ti && (th.ksleep || th.waiting))
      register_trunc_ordered(ev.t);
    if (th.ksleep && !th.kwoken) {
      th.kwoken = true;
      th.kwake = ev;
    }
    note_kernel_waker(th, ev, ti);
    break;
  case VPROF_SCHED_RUN:
    if (th.ksleep && th.waiting && th.kwait) {
      std::int32_t src;
      std::int64_t r;
      std::uint8_t pseudo;
      kernel_waker(th, t, src, r, pseudo);
      advance(th, t);
      close_wait(th, t, src, r, pseudo);
    }
    th.ksleep = false;
    th.kwoken = false;
    th.kresume = false;
    break;
  default:
    break;
  }
}

void Engine::prune(std::int64_t now) {
  syncs_since_prune_ = 0;
  std::int64_t low = open_begins_.empty() ? now : std::min(now, *open_begins_.begin());
  std::uint64_t min_cursor = trunc_base_ + truncs_.size();
  std::uint64_t segments = 0;
  for (auto &th : threads_) {
    while (!th.segments.empty() && th.segments.front().t1 < low)
      th.segments.pop_front();
    std::uint64_t keep =
        th.segments.empty() ? th.delta_base + th.deltas.size() : th.segments.front().dbegin;
    while (th.delta_base < keep && !th.deltas.empty()) {
      th.deltas.pop_front();
      ++th.delta_base;
    }
    segments += th.segments.size();
    if (th.pos < th.n && th.started)
      min_cursor = std::min(min_cursor, th.trunc_cursor);
  }
  out_.peak_segments = std::max(out_.peak_segments, segments);
  if (min_cursor > trunc_base_) {
    std::size_t drop = std::min<std::size_t>(truncs_.size(), min_cursor - trunc_base_);
    truncs_.erase(truncs_.begin(), truncs_.begin() + static_cast<std::ptrdiff_t>(drop));
    trunc_base_ += drop;
  }
}

EngineOutput Engine::run() {
  const auto &streams = tr_.streams();
  threads_.resize(streams.size());
  using Key = std::pair<std::int64_t, std::int32_t>;
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> heap;
  auto next_sync = [](const Thread &th, std::size_t from) {
    for (std::size_t i = from; i < th.n; ++i)
      if (!is_probe(vprof_record_kind_of(&th.recs[i])))
        return i;
    return th.n;
  };
  // Thread time and kernel time may disagree by this much (200 µs): the clock conversion's
  // error over a run (docs/analyzer.md, "Kernel waits").
  skew_ = static_cast<std::int64_t>(tr_.ticks_per_second() * 2e-4);
  out_.sched_files = tr_.sched().size();
  for (const auto &sf : tr_.sched())
    out_.sched_lost += sf.lost;
  // In a kernel wait the thread's next probe is a sync point too: it may end the wait and
  // make an edge, which must happen in time order with the other threads.
  auto probe_time = [](const Thread &th) {
    return th.waiting && th.kwait && th.pos < th.next_sync ? th.time_of(th.pos) : kInf;
  };
  auto key_of = [&](const Thread &th) {
    std::int64_t ts = th.next_sync < th.n ? th.time_of(th.next_sync) : kInf;
    ts = std::min(ts, probe_time(th));
    return th.kpos < th.kn ? std::min(ts, th.kev[th.kpos].t) : ts;
  };
  for (std::size_t i = 0; i < streams.size(); ++i) {
    Thread &th = threads_[i];
    th.stream = &streams[i];
    auto kev = tr_.kernel_events(i);
    th.kev = kev.data();
    th.kn = kev.size();
    auto recs = streams[i].records();
    th.recs = recs.data();
    th.n = recs.size();
    th.base = streams[i].info().base_ticks;
    th.off = streams[i].run_offset();
    th.scale = streams[i].run_scale();
    th.scaled = streams[i].run_scaled();
    th.pid = streams[i].info().pid;
    th.host = streams[i].host();
    th.depth_ok = (streams[i].info().features & VPROF_FEATURE_FRAME_DEPTH) != 0;
    th.sticky_labels = (streams[i].info().features & VPROF_FEATURE_STICKY_LABEL) != 0;
    th.proc = &tr_.process_of(i);
    th.next_sync = next_sync(th, 0);
    out_.records += th.n;
    out_.max_stream_records =
        std::max<std::uint64_t>(out_.max_stream_records, th.n + streams[i].info().dropped);
    heap.push({key_of(th), static_cast<std::int32_t>(i)});
  }
  for (const auto &p : tr_.processes())
    out_.dropped += p.dropped;
  while (!heap.empty()) {
    auto [key, ti] = heap.top();
    heap.pop();
    Thread &th = threads_[ti];
    if (const std::int64_t tp = probe_time(th);
        tp < kInf && tp <= (th.kpos < th.kn ? th.kev[th.kpos].t : kInf) &&
        tp < (th.next_sync < th.n ? th.time_of(th.next_sync) : kInf)) {
      run_probes(th, th.next_sync, tp);
      if (th.kresume)
        resume_kernel_wait(th);
      heap.push({key_of(th), ti});
      continue;
    }
    // a kernel event before the next sync record (at a tie: a SLEEP after the record, a
    // WAKE or RUN before it)
    if (th.kpos < th.kn) {
      const std::size_t k = th.kpos;
      const trace::KernelEvent &ev = th.kev[k];
      const std::int64_t ts = th.next_sync < th.n ? th.time_of(th.next_sync) : kInf;
      if (ev.t < ts || (ev.t == ts && ev.kind != VPROF_SCHED_SLEEP)) {
        run_probes(th, th.next_sync, ev.t);
        if (th.kresume)
          resume_kernel_wait(th);
        if (th.kpos == k) { // else a probe ended a kernel wait and consumed its events
          ++th.kpos;
          kernel(ti, ev);
        }
        heap.push({key_of(th), ti});
        continue;
      }
    }
    run_probes(th, th.next_sync, kInf);
    if (th.next_sync < th.n) {
      std::size_t i = th.next_sync;
      std::int64_t t = rec_time(th, i);
      th.pos = i + 1;
      th.next_sync = next_sync(th, th.pos);
      sync(ti, vprof_record_kind_of(&th.recs[i]), th.recs[i].arg, t);
      if (th.kresume)
        resume_kernel_wait(th);
      heap.push({key_of(th), ti});
    } else {
      th.pos = th.n;
    }
  }
  out_.intervals_unfinished += open_.size();
  for (const auto &[key, q] : sends_)
    if (key.a == kCatMessage << 56)
      out_.messages_unreceived += q.size();
  out_.nodes = std::move(nodes_);
  for (const auto &th : threads_)
    out_.stream_interval_marks.push_back(th.interval_marks ? 1 : 0);
  return std::move(out_);
}

} // namespace

EngineOutput run_engine(const trace::Trace &trace, const EngineOptions &opt) {
  Engine e(trace, opt);
  return e.run();
}

} // namespace vprof::analyzer::detail
