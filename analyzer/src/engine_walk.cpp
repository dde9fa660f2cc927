// The walk of an interval's critical path at its end, backwards along its threads' segments
// and wake-up edges, and its node times handed over (docs/analyzer.md, "Walk").
#include "engine_timeline.hpp"

namespace vprof::analyzer::detail::engine_impl {

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
  out_.first_begin = out_.intervals_finished ? std::min(out_.first_begin, rec.begin) : rec.begin;
  out_.last_end = out_.intervals_finished ? std::max(out_.last_end, rec.end) : rec.end;
  ++out_.intervals_finished;
  out_.intervals.push_back(rec);
  if (opt_.sink && out_.intervals.size() >= opt_.sink_block)
    hand_over();
}

// The finished intervals so far to the sink, then forgotten.
void Engine::hand_over() {
  if (out_.intervals.empty())
    return;
  opt_.sink(out_.intervals, out_.times);
  out_.intervals.clear();
  out_.times.clear();
}

} // namespace vprof::analyzer::detail::engine_impl
