// Random multi-thread timelines for property tests and fuzzing of the critical-path engine:
// a seeded discrete-event world in which, at each step, one thread acts at a global time
// that advances by 0-2 ticks (so many records share a timestamp): probes, interval begin and
// end, hand-offs (send + detach, receive + attach), a second thread attaching to an interval
// that is already attached, mutex waits released by the holder, condition waits released by
// a signal, marked custom waits (with the user's wrapper probed inside) released by a wake.
// Blocked threads act only when woken, so every trace is one a program could write.
#pragma once

#include "trace_builder.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

namespace vprof::testing {

// `pick(n)` returns a choice in [0, n): a seeded generator (random_timeline) or the bytes
// of a fuzzer's input (analyzer/fuzz/fuzz_timeline.cpp).
template <class Pick> TraceBuilder make_timeline(Pick &&pick, int steps) {
  const int T = 2 + pick(3);
  TraceBuilder b(1);
  struct Th {
    std::vector<std::uint32_t> stack;
    std::uint64_t iv = 0; // attached interval (0: none)
    bool blocked = false;
    int held = -1; // mutex held (index)
  };
  std::vector<Th> th(static_cast<std::size_t>(T));
  for (int i = 0; i < T; ++i)
    b.thread(static_cast<std::uint32_t>(i + 1));
  std::uint64_t now = 0, next_iv = 1;
  std::vector<std::uint64_t> open;                           // begun, not ended
  std::deque<std::pair<std::uint64_t, std::uint64_t>> queue; // (obj, interval) sent
  const int M = 2;
  std::vector<int> holder(M, -1);
  std::vector<std::deque<int>> lock_waiters(M);
  std::deque<int> cond_waiters, custom_waiters;
  constexpr std::uint32_t kWrapperSite = 6; // the user's code inside a marked custom wait
  auto rec = [&](int i) -> TraceBuilder::Thread & {
    return b.thread(static_cast<std::uint32_t>(i + 1));
  };
  auto release = [&](int i) {
    int m = th[i].held;
    rec(i).emit(VPROF_REC_LOCK_RELEASE, 0x100 + m, now);
    th[i].held = -1;
    holder[m] = -1;
    if (!lock_waiters[m].empty()) { // the next waiter acquires when it runs again
      int w = lock_waiters[m].front();
      lock_waiters[m].pop_front();
      holder[m] = w;
      th[w].held = m;
      th[w].blocked = false;
      rec(w).emit(VPROF_REC_LOCK_ACQUIRE, 0x100 + m, now);
    }
  };
  for (int step = 0; step < steps; ++step) {
    now += pick(3);
    int i = pick(T);
    Th &t = th[i];
    if (t.blocked)
      continue;
    auto &r = rec(i);
    switch (pick(13)) {
    case 0: // begin
      if (!t.iv) {
        t.iv = next_iv++;
        open.push_back(t.iv);
        r.emit(VPROF_REC_INTERVAL_BEGIN, t.iv, now);
      }
      break;
    case 1: // end (also an interval begun elsewhere and attached here)
      if (t.iv && t.stack.empty()) {
        r.emit(VPROF_REC_INTERVAL_END, t.iv, now);
        open.erase(std::remove(open.begin(), open.end(), t.iv), open.end());
        for (auto &o : th)
          if (&o != &t && o.iv == t.iv)
            o.iv = 0;
        t.iv = 0;
      }
      break;
    case 2:
    case 3: // probe enter / exit
      if (t.stack.size() < 4 && pick(2)) {
        auto site = static_cast<std::uint32_t>(1 + pick(5));
        t.stack.push_back(site);
        r.enter(site, now, static_cast<std::uint32_t>(t.stack.size()));
      } else if (!t.stack.empty()) {
        r.exit(t.stack.back(), now, static_cast<std::uint32_t>(t.stack.size()));
        t.stack.pop_back();
      }
      break;
    case 4: // hand-off: send and detach
      if (t.iv) {
        std::uint64_t obj = 0x200 + static_cast<std::uint64_t>(pick(3));
        r.emit(VPROF_REC_HANDOFF_SEND, obj, now);
        queue.push_back({obj, t.iv});
        if (pick(3)) {
          r.emit(VPROF_REC_DETACH, t.iv, now);
          t.iv = 0;
        }
      }
      break;
    case 5: // hand-off: receive and attach
      if (!t.iv && !queue.empty()) {
        auto [obj, iv] = queue.front();
        queue.pop_front();
        r.emit(VPROF_REC_HANDOFF_RECV, obj, now);
        if (std::find(open.begin(), open.end(), iv) != open.end()) {
          r.emit(VPROF_REC_ATTACH, iv, now);
          t.iv = iv;
        }
      }
      break;
    case 6: // a second thread attaches to an open interval
      if (!t.iv && !open.empty()) {
        t.iv = open[static_cast<std::size_t>(pick(static_cast<int>(open.size())))];
        r.emit(VPROF_REC_ATTACH, t.iv, now);
      }
      break;
    case 7: // detach
      if (t.iv && pick(2)) {
        r.emit(VPROF_REC_DETACH, t.iv, now);
        t.iv = 0;
      }
      break;
    case 8: { // lock (maybe blocking) or release
      if (t.held >= 0) {
        release(i);
        break;
      }
      int m = pick(M);
      if (holder[m] < 0) {
        holder[m] = i;
        t.held = m;
      } else {
        r.emit(VPROF_REC_LOCK_WAIT, 0x100 + m, now);
        lock_waiters[m].push_back(i);
        t.blocked = true;
      }
      break;
    }
    case 9: // condition wait (blocks until signalled)
      if (t.held < 0) {
        r.emit(VPROF_REC_COND_WAIT_BEGIN, 0x300, now);
        cond_waiters.push_back(i);
        t.blocked = true;
      }
      break;
    case 10: // signal one waiter
      if (!cond_waiters.empty()) {
        int w = cond_waiters.front();
        cond_waiters.pop_front();
        r.emit(VPROF_REC_COND_SIGNAL, 0x300, now);
        th[w].blocked = false;
        rec(w).emit(VPROF_REC_COND_WAIT_END, 0x300, now);
      }
      break;
    case 11: // a marked custom wait, the user's wrapper probed inside it
      if (t.held < 0) {
        r.emit(VPROF_REC_WAIT_BEGIN, 0x400, now);
        r.enter(kWrapperSite, now, static_cast<std::uint32_t>(t.stack.size() + 1));
        custom_waiters.push_back(i);
        t.blocked = true;
      }
      break;
    case 12: // wake one custom waiter
      if (!custom_waiters.empty()) {
        int w = custom_waiters.front();
        custom_waiters.pop_front();
        r.emit(VPROF_REC_WAKE, 0x400, now);
        th[w].blocked = false;
        rec(w)
            .exit(kWrapperSite, now, static_cast<std::uint32_t>(th[w].stack.size() + 1))
            .emit(VPROF_REC_WAIT_END, 0x400, now);
      }
      break;
    }
  }
  // wake everyone, close what is open, end the intervals still attached somewhere
  now += 1 + pick(2);
  for (int i = 0; i < T; ++i)
    if (th[i].held >= 0)
      release(i);
  while (!cond_waiters.empty()) {
    int w = cond_waiters.front();
    cond_waiters.pop_front();
    th[w].blocked = false;
    rec(w).emit(VPROF_REC_COND_WAIT_END, 0x300, now);
  }
  while (!custom_waiters.empty()) {
    int w = custom_waiters.front();
    custom_waiters.pop_front();
    th[w].blocked = false;
    rec(w)
        .exit(kWrapperSite, now, static_cast<std::uint32_t>(th[w].stack.size() + 1))
        .emit(VPROF_REC_WAIT_END, 0x400, now);
  }
  now += 2;
  for (int i = 0; i < T; ++i) {
    auto &r = rec(i);
    while (!th[i].stack.empty()) {
      r.exit(th[i].stack.back(), now, static_cast<std::uint32_t>(th[i].stack.size()));
      th[i].stack.pop_back();
    }
    if (th[i].iv && std::find(open.begin(), open.end(), th[i].iv) != open.end()) {
      r.emit(VPROF_REC_INTERVAL_END, th[i].iv, now);
      open.erase(std::remove(open.begin(), open.end(), th[i].iv), open.end());
    }
  }
  return b;
}

inline TraceBuilder random_timeline(std::uint64_t seed, int steps = 120) {
  std::mt19937_64 rng(seed);
  return make_timeline(
      [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); }, steps);
}

} // namespace vprof::testing
