// The streaming critical-path engine (docs/analyzer.md, "Critical path"): merges the
// per-thread streams by time at sync events, keeps per-thread segment summaries only as far
// back as the oldest open interval, and walks each interval's critical path at its end.
#include "engine.hpp"
#include "engine_timeline.hpp"

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

namespace vprof::analyzer::detail {

const char *wait_kind_name(unsigned k) {
  static const char *names[] = {"mutex", "rwlock", "cond",    "sem",   "custom", "handoff",
                                "queue", "wakeup", "message", "futex", "poll",   "read",
                                "write", "io",     "sleep",   "child", "kernel"};
  static_assert(sizeof names / sizeof names[0] == kWaitKinds);
  return k < kWaitKinds ? names[k] : "?";
}

namespace engine_impl {

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
  if (opt_.sink)
    hand_over();
  out_.intervals_unfinished += open_.size();
  for (const auto &[key, q] : sends_)
    if (key.a == kCatMessage << 56)
      out_.messages_unreceived += q.size();
  out_.nodes = std::move(nodes_);
  for (const auto &th : threads_)
    out_.stream_interval_marks.push_back(th.interval_marks ? 1 : 0);
  return std::move(out_);
}

} // namespace engine_impl

EngineOutput run_engine(const trace::Trace &trace, const EngineOptions &opt) {
  engine_impl::Engine e(trace, opt);
  return e.run();
}

} // namespace vprof::analyzer::detail
