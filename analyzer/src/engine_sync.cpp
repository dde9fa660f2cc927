// Sync records (waits, releases, hand-offs, messages, interval marks) and kernel events: the
// wake-up edges and the segments' boundaries (docs/analyzer.md, "Wake-up edge rules",
// "Kernel waits").
#include "engine_timeline.hpp"

namespace vprof::analyzer::detail::engine_impl {

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

// Takes WAKE `ev` as the open sleep's wake-up: the first since its SLEEP, or a data wake-up
// after a room wake-up (VPROF_SCHED_WAKE_ROOM: the waker consumed data, the kernel woke every
// sleeper of the socket, this one sleeps to receive; the data came with the waker's next send,
// VPROF_SCHED_WAKE_DATA, before the sleeper ran). A data wake-up of a sleep that ran already,
// or was not room-woken, is ignored (docs/analyzer.md, "Kernel waits").
bool Engine::take_wake(Thread &th, const trace::KernelEvent &ev) {
  if (ev.kind != VPROF_SCHED_WAKE)
    return false;
  if (ev.flags & VPROF_SCHED_WAKE_DATA) {
    const auto self = static_cast<std::int32_t>(&th - threads_.data());
    if (!th.kwoken || !(th.kwake.flags & VPROF_SCHED_WAKE_ROOM) || ev.waker < 0 ||
        ev.waker == self || ev.t < th.kwake.t)
      return false;
    ++out_.kernel_data_wakes;
  } else if (th.kwoken) {
    return false;
  }
  th.kwoken = true;
  th.kwake = ev;
  return true;
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
    if (take_wake(th, th.kev[th.kpos]))
      peeked = true;
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
    // A sleep inside the runtime's own frame (a thread waiting for the drain to append its
    // other half) is the stall the frame already stands for: it stays the frame's time.
    if (!th.waiting && !in_profiler_frame(th)) {
      begin_wait(th, t, kernel_wait_kind(ev.syscall));
      ++out_.kernel_waits;
    }
    break;
  case VPROF_SCHED_WAKE:
    if (ev.flags & VPROF_SCHED_WAKE_DATA) { // not the scheduler's: only a room wake-up's data
      if (th.ksleep && take_wake(th, ev))
        register_trunc_ordered(ev.t);
      break;
    }
    // a wake-up by a traced thread of a waiting thread may become an edge: the walk will
    // cut the waker's timeline at its time
    if (ev.waker >= 0 && ev.waker != ti && (th.ksleep || th.waiting))
      register_trunc_ordered(ev.t);
    if (th.ksleep)
      take_wake(th, ev);
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

} // namespace vprof::analyzer::detail::engine_impl
