// Queueing on a loop (issue 21): a detached interval re-attached later waited for what the
// re-attaching thread did in the gap, so the gap of a [wait:queue] opens into that thread's
// work (head-of-line), its waits and their wakers, while the time it idled stays visible.
#include "engine_paths.hpp"
#include "trace_builder.hpp"
#include "vprof/analyzer.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <random>
#include <unordered_set>
#include <vector>

namespace fs = std::filesystem;
using namespace vprof::analyzer::detail;
using vprof::testing::self_times;
using vprof::testing::Times;
using vprof::testing::TraceBuilder;

namespace {

fs::path fresh_dir(const std::string &name) {
  return vprof::testing::fresh_engine_dir("queue", name);
}

EngineOutput run(const fs::path &dir, const EngineOptions &opt = {}) {
  return vprof::testing::run_exact(dir, opt);
}

// Sites of the loop tests.
constexpr std::uint32_t kParse = 10, kSlow = 11, kReply = 12, kPollFn = 13, kFlush = 14;

// The index of interval `id` in the engine's output.
std::size_t index_of(const EngineOutput &eo, std::uint64_t id) {
  for (std::size_t i = 0; i < eo.intervals.size(); ++i)
    if (eo.intervals[i].id == id)
      return i;
  ADD_FAILURE() << "no interval " << id;
  return 0;
}

} // namespace

// A loop serves A (its handler `slow` takes 100) and B, ready when A's handler starts:
// B's wait in the loop's queue is A's `slow`, and A's own waits are B's steps.
TEST(QueueGap, AQueuedRequestWaitsForTheWorkAheadOfIt) {
  auto dir = fresh_dir("head-of-line");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0) // A
      .enter(kParse, 0, 1)
      .exit(kParse, 5, 1)
      .emit(VPROF_REC_DETACH, 1, 5)
      .emit(VPROF_REC_INTERVAL_BEGIN, 2, 5) // B
      .enter(kParse, 5, 1)
      .exit(kParse, 10, 1)
      .emit(VPROF_REC_DETACH, 2, 10)
      .emit(VPROF_REC_ATTACH, 1, 10)
      .enter(kSlow, 10, 1)
      .exit(kSlow, 110, 1)
      .emit(VPROF_REC_DETACH, 1, 110)
      .emit(VPROF_REC_ATTACH, 2, 110)
      .enter(kReply, 110, 1)
      .exit(kReply, 115, 1)
      .emit(VPROF_REC_INTERVAL_END, 2, 115)
      .emit(VPROF_REC_ATTACH, 1, 115)
      .enter(kReply, 115, 1)
      .exit(kReply, 120, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 120);
  b.write(dir);
  std::unordered_set<std::uint64_t> record{2};
  EngineOptions opt;
  opt.record_paths = &record;
  auto eo = run(dir, opt);
  ASSERT_EQ(eo.intervals.size(), 2u);
  EXPECT_EQ(self_times(eo, index_of(eo, 2)),
            (Times{{"/s10", 5}, {"/wait:queue/s11", 100}, {"/s12", 5}}));
  EXPECT_EQ(self_times(eo, index_of(eo, 1)), (Times{{"/s10", 5},
                                                    {"/wait:queue/s10", 5},
                                                    {"/s11", 100},
                                                    {"/wait:queue/s12", 5},
                                                    {"/s12", 5}}));
  // B's path, from its end backwards: its reply, the loop's work in the gap, its parse
  ASSERT_EQ(eo.paths.size(), 1u);
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;
  for (const auto &p : eo.paths[0].pieces)
    spans.push_back({p.t0, p.t1});
  const std::int64_t base = eo.intervals[index_of(eo, 2)].begin - 5;
  EXPECT_EQ(spans, (std::vector<std::pair<std::int64_t, std::int64_t>>{
                       {base + 110, base + 115}, {base + 10, base + 110}, {base + 5, base + 10}}));
}

// The loop idles in the gap: outside any probe (the queue node's own time) and blocked in a
// marked wait nobody woke (an epoll_wait): both stay visible, beside its other work.
TEST(QueueGap, TheLoopsIdleTimeStaysVisible) {
  auto dir = fresh_dir("idle");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(kParse, 0, 1)
      .exit(kParse, 5, 1)
      .emit(VPROF_REC_DETACH, 1, 5)
      .enter(kPollFn, 20, 1)
      .emit(VPROF_REC_WAIT_BEGIN, 0xE0, 20)
      .emit(VPROF_REC_WAIT_END, 0xE0, 50)
      .exit(kPollFn, 50, 1)
      .enter(kSlow, 50, 1)
      .exit(kSlow, 60, 1)
      .emit(VPROF_REC_ATTACH, 1, 60)
      .enter(kReply, 60, 1)
      .exit(kReply, 65, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 65);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/s10", 5},
                                      {"/wait:queue", 15},
                                      {"/wait:queue/s13/wait:custom", 30},
                                      {"/wait:queue/s11", 10},
                                      {"/s12", 5}}));
}

// In the gap the loop blocks on a mutex a worker holds while it flushes: the worker's
// flush is what the loop, and so the queued request, waited for (flattened under the queue
// node like a convoy's holders); the loop's delay after the release stays its wake-up.
TEST(QueueGap, AWaitInTheGapFollowsItsWaker) {
  auto dir = fresh_dir("gap-waker");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(kParse, 0, 1)
      .exit(kParse, 5, 1)
      .emit(VPROF_REC_DETACH, 1, 5)
      .enter(kSlow, 5, 1)
      .emit(VPROF_REC_LOCK_WAIT, 0xA0, 10)
      .emit(VPROF_REC_LOCK_ACQUIRE, 0xA0, 40)
      .exit(kSlow, 45, 1)
      .emit(VPROF_REC_ATTACH, 1, 50)
      .enter(kReply, 50, 1)
      .exit(kReply, 55, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 55);
  b.thread(2)
      .enter(kFlush, 0, 1)
      .emit(VPROF_REC_LOCK_ACQUIRE, 0xA0, 1)
      .emit(VPROF_REC_LOCK_RELEASE, 0xA0, 35)
      .exit(kFlush, 36, 1);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/s10", 5},
                                      {"/wait:queue", 5},
                                      {"/wait:queue/s11", 5},
                                      {"/wait:queue/s11/wait:mutex/wait:wakeup", 5},
                                      {"/wait:queue/s14", 30},
                                      {"/s12", 5}}));
}

// A chain of waits in the gap that comes back to the loop (the worker waited for a lock the
// loop released): the loop's work there was for others, so it stays under the queue node
// instead of returning to the root context as the ending thread's own work would.
TEST(QueueGap, AChainBackToTheLoopStaysInTheGap) {
  auto dir = fresh_dir("gap-chain");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(kParse, 0, 1)
      .exit(kParse, 5, 1)
      .emit(VPROF_REC_DETACH, 1, 5)
      .enter(kSlow, 5, 1)
      .emit(VPROF_REC_LOCK_ACQUIRE, 0xB0, 6)
      .emit(VPROF_REC_LOCK_RELEASE, 0xB0, 15)
      .emit(VPROF_REC_LOCK_WAIT, 0xA0, 20)
      .emit(VPROF_REC_LOCK_ACQUIRE, 0xA0, 40)
      .exit(kSlow, 45, 1)
      .emit(VPROF_REC_ATTACH, 1, 50)
      .enter(kReply, 50, 1)
      .exit(kReply, 55, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 55);
  b.thread(2)
      .emit(VPROF_REC_LOCK_ACQUIRE, 0xA0, 2)
      .enter(kFlush, 8, 1)
      .emit(VPROF_REC_LOCK_WAIT, 0xB0, 10)
      .emit(VPROF_REC_LOCK_ACQUIRE, 0xB0, 17)
      .exit(kFlush, 30, 1)
      .emit(VPROF_REC_LOCK_RELEASE, 0xA0, 35);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.wake_edges, 2u);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/s10", 5},
                                      {"/wait:queue", 10},
                                      {"/wait:queue/s11", 15},
                                      {"/wait:queue/s11/wait:mutex/wait:wakeup", 5},
                                      {"/wait:queue/s14", 13},
                                      {"/wait:queue/s14/wait:mutex/wait:wakeup", 2},
                                      {"/s12", 5}}));
}

// Another thread takes the interval up (no hand-off): it was blocked on a condition the
// detaching thread signalled after the detach, so the gap holds that thread's work up to
// the signal and the taker's wake-up delay.
TEST(QueueGap, AnotherThreadsGapOpensTheSameWay) {
  auto dir = fresh_dir("other-thread");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 0, 1)
      .exit(1, 30, 1)
      .emit(VPROF_REC_DETACH, 1, 30)
      .enter(9, 31, 1)
      .emit(VPROF_REC_COND_SIGNAL, 0xC0, 40)
      .exit(9, 99, 1);
  b.thread(2)
      .enter(8, 0, 1)
      .emit(VPROF_REC_COND_WAIT_BEGIN, 0xC0, 10)
      .emit(VPROF_REC_COND_WAIT_END, 0xC0, 44)
      .exit(8, 44, 1)
      .emit(VPROF_REC_ATTACH, 1, 45)
      .enter(2, 45, 1)
      .exit(2, 80, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 90);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/", 10},
                                      {"/s2", 35},
                                      {"/wait:queue", 2},
                                      {"/wait:queue/s8/wait:cond/wait:wakeup", 4},
                                      {"/wait:queue/s9", 9},
                                      {"/s1", 30}}));
}

// A message the loop receives in the gap is another request arriving, not a wait: the gap
// keeps the loop's own timeline and does not jump to the sender. (A receive right before
// the re-attach, with no mark between, is this interval's hand-off: test_critical_path.cpp,
// ReattachAfterALaterHandoffFollowsTheSend.)
TEST(QueueGap, AReceiveInTheGapIsNotFollowed) {
  auto dir = fresh_dir("gap-receive");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(kParse, 0, 1)
      .exit(kParse, 5, 1)
      .emit(VPROF_REC_DETACH, 1, 5)
      .enter(kSlow, 5, 1)
      .exit(kSlow, 20, 1)
      .emit(VPROF_REC_MSG_RECV, 0x5, 25)
      .emit(VPROF_REC_INTERVAL_BEGIN, 3, 25) // the request that arrived
      .enter(kParse, 25, 1)
      .exit(kParse, 30, 1)
      .emit(VPROF_REC_DETACH, 3, 30)
      .emit(VPROF_REC_ATTACH, 1, 40)
      .enter(kReply, 40, 1)
      .exit(kReply, 45, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 45);
  b.thread(2).enter(7, 0, 1).exit(7, 22, 1).emit(VPROF_REC_MSG_SEND, 0x5, 22);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.message_edges, 1u);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/s10", 5},
                                      {"/wait:queue", 15},
                                      {"/wait:queue/s10", 5},
                                      {"/wait:queue/s11", 15},
                                      {"/s12", 5}}));
}

// A hand-off sent before the detach and received at the re-attach is not what the interval
// waited for since its detach (test_critical_path.cpp's ReattachAfterALaterHandoffFollowsTheSend
// has one sent after it, whose edge stays the path): the gap opens into the loop's work and
// the receive inside it is not followed to its sender.
TEST(QueueGap, AHandoffSentBeforeTheDetachLeavesTheQueueWait) {
  auto dir = fresh_dir("early-handoff");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .emit(VPROF_REC_DETACH, 1, 10)
      .enter(kSlow, 10, 1)
      .exit(kSlow, 40, 1)
      .emit(VPROF_REC_HANDOFF_RECV, 0x77, 50)
      .emit(VPROF_REC_ATTACH, 1, 50)
      .enter(kReply, 50, 1)
      .exit(kReply, 60, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 60);
  b.thread(2).enter(5, 0, 1).emit(VPROF_REC_HANDOFF_SEND, 0x77, 3).exit(5, 4, 1);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.wake_edges, 1u);
  EXPECT_EQ(self_times(eo, 0),
            (Times{{"/", 10}, {"/wait:queue", 10}, {"/wait:queue/s11", 30}, {"/s12", 10}}));
}

namespace {

// A random event-loop world: a loop thread and a worker begin, step and end requests; a
// request's steps run attached on either thread and never block, and between them it is
// detached. Not attached, a thread does others' work (probes), idles in a marked wait that
// nobody wakes (an epoll_wait), or takes a mutex the other thread may hold (and waits for
// it). Time advances by 0-2 ticks a step, so many records share a timestamp. `gaps` is what
// each request spent detached: on its critical path, exactly the [wait:queue] subtrees.
struct LoopWorld {
  TraceBuilder b{1};
  std::map<std::uint64_t, std::int64_t> gaps;
  std::size_t begun = 0;
};

LoopWorld loop_timeline(std::uint64_t seed, int steps) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
  LoopWorld w;
  struct Th {
    std::vector<std::uint32_t> stack;
    std::uint64_t iv = 0;
    bool blocked = false, idle = false, holds = false;
  };
  struct Req {
    std::int64_t detach_t = -1;  // -1: attached
    int steps_left = 0, by = -1; // by: the thread that detached it
  };
  Th th[2];
  std::map<std::uint64_t, Req> open;
  std::deque<int> waiters;
  int holder = -1;
  std::int64_t now = 0;
  std::uint64_t next_iv = 1;
  constexpr std::uint64_t kMutex = 0xA0, kPollObj = 0x400;
  constexpr std::uint32_t kPollSite = 9;
  auto rec = [&](int i) -> TraceBuilder::Thread & {
    return w.b.thread(static_cast<std::uint32_t>(i + 1));
  };
  auto depth = [&](int i) { return static_cast<std::uint32_t>(th[i].stack.size()); };
  auto probe = [&](int i, std::uint32_t first_site) {
    if (th[i].stack.size() < 3 && pick(2)) {
      th[i].stack.push_back(first_site + static_cast<std::uint32_t>(pick(3)));
      rec(i).enter(th[i].stack.back(), now, depth(i));
    } else if (!th[i].stack.empty()) {
      rec(i).exit(th[i].stack.back(), now, depth(i));
      th[i].stack.pop_back();
    }
  };
  auto close_frames = [&](int i) {
    while (!th[i].stack.empty()) {
      rec(i).exit(th[i].stack.back(), now, depth(i));
      th[i].stack.pop_back();
    }
  };
  auto release = [&](int i) {
    rec(i).emit(VPROF_REC_LOCK_RELEASE, kMutex, now);
    th[i].holds = false;
    holder = -1;
    if (!waiters.empty()) {
      int n = waiters.front();
      waiters.pop_front();
      holder = n;
      th[n].holds = true;
      th[n].blocked = false;
      rec(n).emit(VPROF_REC_LOCK_ACQUIRE, kMutex, now);
    }
  };
  auto end_idle = [&](int i) {
    rec(i).emit(VPROF_REC_WAIT_END, kPollObj, now);
    rec(i).exit(kPollSite, now, depth(i) + 1);
    th[i].idle = false;
  };
  auto attach = [&](int i, std::uint64_t id) {
    rec(i).emit(VPROF_REC_ATTACH, id, now);
    w.gaps[id] += now - open[id].detach_t;
    open[id].detach_t = -1;
    th[i].iv = id;
  };
  auto end = [&](int i) {
    close_frames(i);
    rec(i).emit(VPROF_REC_INTERVAL_END, th[i].iv, now);
    open.erase(th[i].iv);
    th[i].iv = 0;
  };
  for (int step = 0; step < steps; ++step) {
    now += pick(3);
    int i = pick(2);
    Th &t = th[i];
    if (t.blocked)
      continue;
    if (t.idle) {
      if (pick(2))
        end_idle(i);
      continue;
    }
    if (t.iv) { // a request's step: it never blocks
      int a = pick(5);
      if (a < 3) {
        probe(i, 1);
      } else if (a == 3 && t.holds) {
        release(i);
      } else if (a == 4) {
        Req &q = open[t.iv];
        if (q.steps_left > 0 && pick(4)) {
          close_frames(i);
          --q.steps_left;
          rec(i).emit(VPROF_REC_DETACH, t.iv, now);
          q.detach_t = now;
          q.by = i;
          t.iv = 0;
        } else {
          end(i);
        }
      }
      continue;
    }
    // records of two threads at one tick have no order: the other thread's detach is seen
    // by an attach a tick later at the earliest
    std::vector<std::uint64_t> detached;
    for (const auto &[id, q] : open)
      if (q.detach_t >= 0 && (q.by == i || now > q.detach_t))
        detached.push_back(id);
    switch (pick(6)) {
    case 0: // a request arrives
      if (t.stack.empty()) {
        t.iv = next_iv++;
        open[t.iv].steps_left = 1 + pick(3);
        rec(i).emit(VPROF_REC_INTERVAL_BEGIN, t.iv, now);
      }
      break;
    case 1: // a queued request's next step
      if (!detached.empty() && t.stack.empty())
        attach(i, detached[static_cast<std::size_t>(pick(static_cast<int>(detached.size())))]);
      break;
    case 2: // others' work
      probe(i, 5);
      break;
    case 3: // idle until input arrives
      rec(i).enter(kPollSite, now, depth(i) + 1);
      rec(i).emit(VPROF_REC_WAIT_BEGIN, kPollObj, now);
      t.idle = true;
      break;
    default: // the shared mutex
      if (t.holds) {
        release(i);
      } else if (holder < 0) {
        holder = i;
        t.holds = true;
        rec(i).emit(VPROF_REC_LOCK_ACQUIRE, kMutex, now);
      } else {
        rec(i).emit(VPROF_REC_LOCK_WAIT, kMutex, now);
        waiters.push_back(i);
        t.blocked = true;
      }
      break;
    }
  }
  // wake everyone, finish what is attached, then serve the queued requests on the loop
  now += 1 + pick(2);
  for (int i = 0; i < 2; ++i)
    if (th[i].idle)
      end_idle(i);
  for (int i = 0; i < 2; ++i)
    if (th[i].holds)
      release(i);
  for (int i = 0; i < 2; ++i)
    if (th[i].holds)
      release(i);
  now += 1;
  for (int i = 0; i < 2; ++i)
    if (th[i].iv)
      end(i);
  close_frames(0);
  while (!open.empty()) {
    now += pick(3);
    attach(0, open.begin()->first);
    end(0);
  }
  w.begun = static_cast<std::size_t>(next_iv - 1);
  return w;
}

// The time of interval i's nodes at or below a [wait:queue] node.
std::int64_t queue_time(const EngineOutput &eo, std::size_t i) {
  std::int64_t sum = 0;
  const auto &r = eo.intervals[i];
  for (std::uint32_t k = 0; k < r.times_n; ++k) {
    const auto &nt = eo.times[r.times_off + k];
    for (std::uint32_t n = nt.node; n != 0; n = eo.nodes[n].parent)
      if (eo.nodes[n].label == kLabelWaitBase + kQueue) {
        sum += nt.ticks;
        break;
      }
  }
  return sum;
}

} // namespace

TEST(QueueGap, EveryRandomEventLoopSumsAndItsQueueWaitsAreItsGaps) {
  std::size_t intervals = 0, edges = 0, opened = 0;
  for (std::uint64_t seed = 1; seed <= 1000; ++seed) {
    auto dir = fresh_dir("random");
    LoopWorld w = loop_timeline(seed, 150);
    w.b.write(dir);
    auto trace = vprof::trace::Trace::open(dir);
    auto eo = run_engine(trace, {});
    ASSERT_EQ(eo.path_sum_mismatches, 0u) << "seed " << seed;
    ASSERT_EQ(eo.inexact_splits, 0u) << "seed " << seed;
    ASSERT_EQ(eo.intervals.size(), w.begun) << "seed " << seed;
    for (std::size_t i = 0; i < eo.intervals.size(); ++i) {
      auto g = w.gaps.find(eo.intervals[i].id);
      std::int64_t want = g == w.gaps.end() ? 0 : g->second;
      ASSERT_EQ(queue_time(eo, i), want) << "seed " << seed << " interval " << eo.intervals[i].id;
      for (std::uint32_t k = 0; k < eo.intervals[i].times_n; ++k) {
        std::uint32_t n = eo.times[eo.intervals[i].times_off + k].node;
        if (n != 0 && eo.nodes[n].label < kLabelWaitBase &&
            eo.nodes[eo.nodes[n].parent].label == kLabelWaitBase + kQueue)
          ++opened; // a probe's time under a queue node: the gap opened into work
      }
    }
    intervals += eo.intervals.size();
    edges += eo.wake_edges;
    if (eo.intervals.size() >= 2 && seed % 4 == 0) {
      vprof::analyzer::AnalyzeOptions ao;
      ao.bootstrap_samples = 0;
      auto res = vprof::analyzer::analyze_trace(trace, nullptr, ao);
      for (const auto &gr : res.groups)
        EXPECT_LE(gr.max_residual, 1e-9) << "seed " << seed;
    }
  }
  // the generator must exercise what it claims to
  EXPECT_GT(intervals, 3000u);
  EXPECT_GT(edges, 1000u);
  EXPECT_GT(opened, 1000u);
}

// The planner prices a plan by the probe records on an interval's critical path (issue 24,
// "Budgets that see event loops"): the loop above wrote 10 probe records (5 calls), but B's
// path holds its parse, A's `slow` in its queue gap and its reply (6), and A's its parse,
// B's parse, `slow`, B's reply and its own reply (10): 16 on the two paths.
TEST(QueueGap, TheCriticalPathsCountTheProbesOfTheWorkAheadOfThem) {
  auto dir = fresh_dir("path-records");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0) // A
      .enter(kParse, 0, 1)
      .exit(kParse, 5, 1)
      .emit(VPROF_REC_DETACH, 1, 5)
      .emit(VPROF_REC_INTERVAL_BEGIN, 2, 5) // B
      .enter(kParse, 5, 1)
      .exit(kParse, 10, 1)
      .emit(VPROF_REC_DETACH, 2, 10)
      .emit(VPROF_REC_ATTACH, 1, 10)
      .enter(kSlow, 10, 1)
      .exit(kSlow, 110, 1)
      .emit(VPROF_REC_DETACH, 1, 110)
      .emit(VPROF_REC_ATTACH, 2, 110)
      .enter(kReply, 110, 1)
      .exit(kReply, 115, 1)
      .emit(VPROF_REC_INTERVAL_END, 2, 115)
      .emit(VPROF_REC_ATTACH, 1, 115)
      .enter(kReply, 115, 1)
      .exit(kReply, 120, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 120);
  b.write(dir);
  auto eo = run(dir);
  ASSERT_EQ(eo.intervals.size(), 2u);
  EXPECT_EQ(eo.critical_records, 16u);

  // Without the queue (one interval at a time), each path holds its own probes only.
  auto alone = fresh_dir("path-records-alone");
  TraceBuilder c(1);
  c.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(kParse, 0, 1)
      .exit(kParse, 5, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 5)
      .emit(VPROF_REC_INTERVAL_BEGIN, 2, 6)
      .enter(kParse, 6, 1)
      .exit(kParse, 9, 1)
      .enter(kReply, 9, 1)
      .exit(kReply, 12, 1)
      .emit(VPROF_REC_INTERVAL_END, 2, 12);
  c.write(alone);
  EXPECT_EQ(run(alone).critical_records, 6u);
}
