// Critical-path engine tests on hand-built traces whose decomposition is known exactly:
// nested calls, mutex / condvar / hand-off / attach hops across threads, longjmp repair,
// and a process-shared mutex matched through <pid>.maps.
#include "engine_paths.hpp"
#include "trace_builder.hpp"

#include <gtest/gtest.h>

namespace fs = std::filesystem;
using namespace vprof::analyzer::detail;
using vprof::testing::self_times;
using vprof::testing::Times;
using vprof::testing::TraceBuilder;

namespace {

fs::path fresh_dir(const std::string &name) { return vprof::testing::fresh_engine_dir("cp", name); }

EngineOutput run(const fs::path &dir) { return vprof::testing::run_exact(dir); }

} // namespace

TEST(CriticalPath, NestedCallsOneThread) {
  auto dir = fresh_dir("nested");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 7, 0)
      .enter(1, 10, 1)
      .enter(2, 20, 2)
      .exit(2, 50, 2)
      .exit(1, 70, 1)
      .emit(VPROF_REC_INTERVAL_END, 7, 100);
  b.write(dir);
  auto eo = run(dir);
  ASSERT_EQ(eo.intervals.size(), 1u);
  EXPECT_EQ(eo.intervals[0].id, 7u);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/", 40}, {"/s1", 30}, {"/s1/s2", 30}}));
}

TEST(CriticalPath, FramesOpenBeforeBeginCountOnlyInside) {
  auto dir = fresh_dir("prebegin");
  TraceBuilder b(1);
  b.thread(1)
      .enter(9, 0, 1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 40)
      .emit(VPROF_REC_INTERVAL_END, 1, 90)
      .exit(9, 95, 1);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/s9", 50}}));
}

TEST(CriticalPath, MutexWaitFollowsTheHolder) {
  auto dir = fresh_dir("mutex");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 10, 1)
      .emit(VPROF_REC_LOCK_WAIT, 0xA0, 10)
      .emit(VPROF_REC_LOCK_ACQUIRE, 0xA0, 60)
      .exit(1, 62, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 100);
  b.thread(2)
      .enter(5, 0, 1)
      .emit(VPROF_REC_LOCK_ACQUIRE, 0xA0, 5)
      .enter(6, 20, 2)
      .exit(6, 40, 2)
      .emit(VPROF_REC_LOCK_RELEASE, 0xA0, 50)
      .exit(5, 80, 1);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.wake_edges, 1u);
  // T1 [60,100]; the wait [10,60] woken at 50: 10 of latency, then T2 from 50 back to the
  // interval's begin (T1's own [0,10] ran in parallel and is off the path).
  EXPECT_EQ(self_times(eo, 0), (Times{{"/", 38},
                                      {"/s1", 2},
                                      {"/s1/wait:mutex/wait:wakeup", 10},
                                      {"/s1/wait:mutex/s5", 30},
                                      {"/s1/wait:mutex/s5/s6", 20}}));
}

TEST(CriticalPath, UncontendedLockHasNoEdge) {
  auto dir = fresh_dir("uncontended");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .emit(VPROF_REC_LOCK_ACQUIRE, 0xA0, 10)
      .emit(VPROF_REC_LOCK_RELEASE, 0xA0, 20)
      .emit(VPROF_REC_INTERVAL_END, 1, 30);
  b.thread(2).emit(VPROF_REC_LOCK_ACQUIRE, 0xA0, 1).emit(VPROF_REC_LOCK_RELEASE, 0xA0, 5);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.wake_edges, 0u);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/", 30}}));
}

TEST(CriticalPath, CondvarSignalWakesTheWaiter) {
  auto dir = fresh_dir("cond");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 5, 1)
      .emit(VPROF_REC_LOCK_RELEASE, 0xA0, 5)
      .emit(VPROF_REC_COND_WAIT_BEGIN, 0xC0, 5)
      .emit(VPROF_REC_COND_WAIT_END, 0xC0, 70)
      .emit(VPROF_REC_LOCK_ACQUIRE, 0xA0, 72)
      .exit(1, 75, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 100);
  b.thread(2).enter(7, 0, 1).emit(VPROF_REC_COND_SIGNAL, 0xC0, 60).exit(7, 65, 1);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(
      self_times(eo, 0),
      (Times{{"/", 25}, {"/s1", 5}, {"/s1/wait:cond/s7", 60}, {"/s1/wait:cond/wait:wakeup", 10}}));
}

TEST(CriticalPath, CondSignalBeforeTheWaitIsNoEdge) {
  auto dir = fresh_dir("cond-early");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .emit(VPROF_REC_COND_WAIT_BEGIN, 0xC0, 10)
      .emit(VPROF_REC_COND_WAIT_TIMEOUT, 0xC0, 50)
      .emit(VPROF_REC_INTERVAL_END, 1, 60);
  b.thread(2).emit(VPROF_REC_COND_SIGNAL, 0xC0, 5);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.wake_edges, 0u);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/", 20}, {"/wait:cond", 40}}));
}

TEST(CriticalPath, HandoffJumpsToTheSender) {
  auto dir = fresh_dir("handoff");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 0, 1)
      .exit(1, 30, 1)
      .emit(VPROF_REC_HANDOFF_SEND, 0x99, 30)
      .enter(9, 35, 1)
      .exit(9, 90, 1);
  b.thread(2)
      .enter(8, 0, 1)
      .exit(8, 38, 1)
      .emit(VPROF_REC_HANDOFF_RECV, 0x99, 40)
      .enter(2, 40, 1)
      .exit(2, 80, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 90);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/", 10}, {"/s2", 40}, {"/wait:handoff", 10}, {"/s1", 30}}));
}

TEST(CriticalPath, AttachHopsToTheLastDetach) {
  auto dir = fresh_dir("attach");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 0, 1)
      .exit(1, 30, 1)
      .emit(VPROF_REC_DETACH, 1, 30)
      .enter(9, 31, 1)
      .exit(9, 99, 1);
  b.thread(2)
      .enter(8, 0, 1)
      .exit(8, 44, 1)
      .emit(VPROF_REC_ATTACH, 1, 45)
      .enter(2, 45, 1)
      .exit(2, 80, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 90);
  b.write(dir);
  auto eo = run(dir);
  // the gap (30, 45] opens into what thread 2 did before taking the interval up: s8 until
  // 44, then 1 outside any probe (the queue node's own time)
  EXPECT_EQ(
      self_times(eo, 0),
      (Times{{"/", 10}, {"/s2", 35}, {"/wait:queue", 1}, {"/wait:queue/s8", 14}, {"/s1", 30}}));
}

// An event loop: one thread serves interval 1 in two steps and interval 2 in between.
// Interval 1's path is its own steps and the wait from its detach to its re-attach; that
// wait's children are the loop's work for interval 2 in the gap (head-of-line), its own
// time the loop's time outside any probe (test_queue_gap.cpp has more).
TEST(CriticalPath, ReattachOnTheSameThreadQueuesBehindTheWorkForOthers) {
  auto dir = fresh_dir("event-loop");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 0, 1)
      .exit(1, 20, 1)
      .emit(VPROF_REC_DETACH, 1, 20)
      .emit(VPROF_REC_INTERVAL_BEGIN, 2, 25)
      .enter(2, 25, 1)
      .exit(2, 55, 1)
      .emit(VPROF_REC_DETACH, 2, 55)
      .emit(VPROF_REC_ATTACH, 1, 60)
      .enter(3, 60, 1)
      .exit(3, 70, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 70)
      .emit(VPROF_REC_ATTACH, 2, 75)
      .enter(3, 75, 1)
      .exit(3, 85, 1)
      .emit(VPROF_REC_INTERVAL_END, 2, 85);
  b.write(dir);
  auto eo = run(dir);
  ASSERT_EQ(eo.intervals.size(), 2u);
  EXPECT_EQ(self_times(eo, 0),
            (Times{{"/s1", 20}, {"/wait:queue", 10}, {"/wait:queue/s2", 30}, {"/s3", 10}}));
  EXPECT_EQ(self_times(eo, 1),
            (Times{{"/s2", 30}, {"/wait:queue", 10}, {"/wait:queue/s3", 10}, {"/s3", 10}}));
}

// A hand-off received after the thread's own detach is the later event: the path follows
// the receive to its sender, not the thread's earlier work.
TEST(CriticalPath, ReattachAfterALaterHandoffFollowsTheSend) {
  auto dir = fresh_dir("reattach-handoff");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 0, 1)
      .exit(1, 10, 1)
      .emit(VPROF_REC_DETACH, 1, 10)
      .emit(VPROF_REC_HANDOFF_RECV, 0x77, 50)
      .emit(VPROF_REC_ATTACH, 1, 50)
      .enter(3, 50, 1)
      .exit(3, 60, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 60);
  b.thread(2).enter(5, 0, 1).exit(5, 40, 1).emit(VPROF_REC_HANDOFF_SEND, 0x77, 40);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/s5", 40}, {"/wait:handoff", 10}, {"/s3", 10}}));
}

// A custom primitive's marked wait holds the user's own code (here a futex wrapper, site
// 2): its probes do not end the wait, the waker's work fills it, and the wrapper's frame
// gets none of the blocked time.
TEST(CriticalPath, ProbesInsideACustomWaitStayInTheWait) {
  auto dir = fresh_dir("custom-wait");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 5, 1)
      .emit(VPROF_REC_WAIT_BEGIN, 0xE0, 10)
      .enter(2, 11, 2)
      .exit(2, 40, 2)
      .enter(2, 41, 2)
      .exit(2, 60, 2)
      .emit(VPROF_REC_WAIT_END, 0xE0, 62)
      .exit(1, 70, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 80);
  b.thread(2).enter(7, 0, 1).emit(VPROF_REC_WAKE, 0xE0, 55).exit(7, 58, 1);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.wake_edges, 1u);
  EXPECT_EQ(
      self_times(eo, 0),
      (Times{
          {"/", 10}, {"/s1", 8}, {"/s1/wait:custom/s7", 55}, {"/s1/wait:custom/wait:wakeup", 7}}));
}

// A custom wait whose end was never marked ends when the function that waited returns.
TEST(CriticalPath, ACustomWaitEndsWithItsFunction) {
  auto dir = fresh_dir("custom-wait-unended");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 0, 1)
      .emit(VPROF_REC_WAIT_BEGIN, 0xE0, 10)
      .enter(2, 11, 2)
      .exit(2, 20, 2)
      .exit(1, 30, 1)
      .enter(4, 30, 1)
      .exit(4, 90, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 90);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/s1", 10}, {"/s1/wait:custom", 20}, {"/s4", 60}}));
}

TEST(CriticalPath, AttachWhileTheBeginnerStillRuns) {
  auto dir = fresh_dir("attach-parallel");
  TraceBuilder b(1);
  // thread 1 begins and keeps running in s1 past the attach; thread 2 ends the interval
  b.thread(1).emit(VPROF_REC_INTERVAL_BEGIN, 1, 0).enter(1, 10, 1).exit(1, 200, 1);
  b.thread(2)
      .emit(VPROF_REC_ATTACH, 1, 50)
      .enter(2, 60, 1)
      .exit(2, 90, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 100);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/", 30}, {"/s1", 40}, {"/s2", 30}}));
}

TEST(CriticalPath, LongjmpAbandonedFramesAreClosedByDepth) {
  auto dir = fresh_dir("longjmp");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 10, 1) // a
      .enter(2, 20, 2) // b, called by a
      .enter(3, 30, 3) // c, called by b; longjmp from c back into a follows
      .enter(4, 50, 1) // a call site of a (a's frame): b and c were abandoned
      .exit(4, 60, 1)
      .exit(1, 70, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 100);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.abandoned_frames, 2u);
  EXPECT_EQ(self_times(eo, 0),
            (Times{{"/", 40}, {"/s1", 20}, {"/s1/s2", 10}, {"/s1/s2/s3", 20}, {"/s1/s4", 10}}));
}

TEST(CriticalPath, ExitPopsToItsSite) {
  auto dir = fresh_dir("exitpop");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 0, 1)
      .enter(2, 10, 2) // never exited: an exception skipped its exit
      .exit(1, 30, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 40);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.abandoned_frames, 1u);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/", 10}, {"/s1", 10}, {"/s1/s2", 20}}));
}

TEST(CriticalPath, LabelsAndMultipleIntervals) {
  auto dir = fresh_dir("labels");
  TraceBuilder b(3);
  auto &t = b.thread(3);
  t.emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .emit(VPROF_REC_LABEL, 1, 0)
      .emit(VPROF_REC_INTERVAL_END, 1, 10);
  t.emit(VPROF_REC_INTERVAL_BEGIN, 2, 20)
      .emit(VPROF_REC_LABEL, 2, 20)
      .emit(VPROF_REC_INTERVAL_END, 2, 50);
  b.label(1, "NewOrder");
  b.label(2, "Payment");
  b.write(dir);
  auto eo = run(dir);
  ASSERT_EQ(eo.intervals.size(), 2u);
  EXPECT_EQ(eo.labels[eo.intervals[0].label], "NewOrder");
  EXPECT_EQ(eo.labels[eo.intervals[1].label], "Payment");
  EXPECT_EQ(eo.intervals[1].end - eo.intervals[1].begin, 30);
}

TEST(CriticalPath, SharedMutexAcrossProcesses) {
  auto dir = fresh_dir("multiproc");
  TraceBuilder a(100, 1000), b(200, 1000);
  a.maps("7f0000000000-7f0000001000 rw-s 00000000 00:05 777 /dev/shm/vprof-x\n");
  b.maps("7f1000000000-7f1000001000 rw-s 00000000 00:05 777 /dev/shm/vprof-x\n");
  a.thread(100)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .emit(VPROF_REC_LOCK_WAIT, 0x7f0000000010, 10)
      .emit(VPROF_REC_LOCK_ACQUIRE, 0x7f0000000010, 60)
      .emit(VPROF_REC_INTERVAL_END, 1, 100);
  b.thread(200)
      .enter(3, 0, 1)
      .emit(VPROF_REC_LOCK_ACQUIRE, 0x7f1000000010, 1)
      .emit(VPROF_REC_LOCK_RELEASE, 0x7f1000000010, 50)
      .exit(3, 70, 1);
  a.write(dir);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.wake_edges, 1u);
  EXPECT_EQ(self_times(eo, 0),
            (Times{{"/", 40}, {"/wait:mutex/wait:wakeup", 10}, {"/wait:mutex/s3", 50}}));
}

TEST(CriticalPath, ChainedWaitsFlattenIntoTheOuterWait) {
  // T1 waits for T2 (mutex A) while T2 waits for T3 (mutex B). T2's own wake-up latency
  // stays in its nested wait node; T3's work joins the outer wait's context.
  auto dir = fresh_dir("chain");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .emit(VPROF_REC_LOCK_WAIT, 0xA, 10)
      .emit(VPROF_REC_LOCK_ACQUIRE, 0xA, 80)
      .emit(VPROF_REC_INTERVAL_END, 1, 100);
  b.thread(2)
      .emit(VPROF_REC_LOCK_ACQUIRE, 0xA, 1)
      .enter(2, 2, 1)
      .emit(VPROF_REC_LOCK_WAIT, 0xB, 20)
      .emit(VPROF_REC_LOCK_ACQUIRE, 0xB, 50)
      .exit(2, 70, 1)
      .emit(VPROF_REC_LOCK_RELEASE, 0xA, 75);
  b.thread(3)
      .emit(VPROF_REC_LOCK_ACQUIRE, 0xB, 3)
      .enter(3, 4, 1)
      .exit(3, 45, 1)
      .emit(VPROF_REC_LOCK_RELEASE, 0xB, 45);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.wake_edges, 2u);
  // T1 [80,100] + latency 5 (its wake-up delay); T2 from 75 back: no frame [70,75] (5, in
  // the wait node), s2 [50,70], its wait [20,50] woken at 45 (5 of wake-up delay); T3 from
  // 45 back to 0: s3 [4,45], no frame [3,4] (1, the wait node), untracked before its first
  // record [0,3].
  EXPECT_EQ(self_times(eo, 0), (Times{{"/", 20},
                                      {"/wait:mutex", 6},
                                      {"/wait:mutex/wait:wakeup", 5},
                                      {"/wait:mutex/s2", 20},
                                      {"/wait:mutex/s2/wait:mutex/wait:wakeup", 5},
                                      {"/wait:mutex/s3", 41},
                                      {"/wait:mutex/untracked", 3}}));
}

TEST(CriticalPath, ConvoyChainMergesTheHoldersWork) {
  // T1 waits (mutex A) for T2, which waited for T3 on the same mutex: both holders ran
  // the same function (site 5), so the outer wait holds one node for it with the sum.
  auto dir = fresh_dir("convoychain");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .emit(VPROF_REC_LOCK_WAIT, 0xA, 10)
      .emit(VPROF_REC_LOCK_ACQUIRE, 0xA, 90)
      .emit(VPROF_REC_INTERVAL_END, 1, 100);
  b.thread(2)
      .emit(VPROF_REC_LOCK_WAIT, 0xA, 5)
      .emit(VPROF_REC_LOCK_ACQUIRE, 0xA, 40)
      .enter(5, 40, 1)
      .exit(5, 85, 1)
      .emit(VPROF_REC_LOCK_RELEASE, 0xA, 85);
  b.thread(3)
      .emit(VPROF_REC_LOCK_ACQUIRE, 0xA, 1)
      .enter(5, 2, 1)
      .exit(5, 38, 1)
      .emit(VPROF_REC_LOCK_RELEASE, 0xA, 38);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.wake_edges, 2u);
  // T1: [90,100] own, wait [10,90] woken at 85 -> 5 of wake-up delay; T2 back from 85: s5
  // [40,85] = 45, its wait [5,40] woken at 38 -> 2 of wake-up delay in the nested node; T3
  // back from 38 to 0: s5 [2,38] = 36 into the outer wait's context, no frame [1,2] (the
  // wait node), untracked [0,1].
  EXPECT_EQ(self_times(eo, 0), (Times{{"/", 10},
                                      {"/wait:mutex", 1},
                                      {"/wait:mutex/wait:wakeup", 5},
                                      {"/wait:mutex/s5", 81},
                                      {"/wait:mutex/untracked", 1},
                                      {"/wait:mutex/wait:mutex/wait:wakeup", 2}}));
}

TEST(CriticalPath, InlinedCalleeAtTheSameDepthNests) {
  // f (body site 1) calls g (body site 2) inlined into f's frame: same depth. With the
  // call edge f -> g known, g nests under f instead of closing it as a dead sibling.
  auto dir = fresh_dir("inlined");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 0, 1)
      .enter(2, 10, 1)
      .exit(2, 30, 1)
      .exit(1, 50, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 50);
  b.write(dir);
  auto tr = vprof::trace::Trace::open(dir);
  EngineOptions opt;
  opt.site_function = {0, 100, 200};
  opt.calls = {{100, 150}, {150, 200}}; // f calls g through an uninstrumented helper
  auto eo = run_engine(tr, opt);
  EXPECT_EQ(eo.abandoned_frames, 0u);
  EXPECT_EQ(eo.unmatched_exits, 0u);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/s1", 30}, {"/s1/s2", 20}}));
  // without the edge, g's ENTER closes f (the longjmp rule) and f's EXIT is unmatched
  opt.calls.clear();
  auto eo2 = run_engine(tr, opt);
  EXPECT_EQ(eo2.unmatched_exits, 1u);
}

TEST(CriticalPath, SameDepthSiblingOfAnotherFunctionIsClosed) {
  // f (site 1 body, depth 1) calls g (body site 2, depth 2), g longjmps back into f, and f
  // then calls h (body site 3) from the same stack position: depth 2 again.
  auto dir = fresh_dir("samedepth");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 0, 1)
      .enter(2, 10, 2)
      .enter(3, 30, 2)
      .exit(3, 40, 2)
      .exit(1, 50, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 50);
  b.write(dir);
  auto tr = vprof::trace::Trace::open(dir);
  EngineOptions opt;
  opt.site_function = {0, 100, 200, 300}; // three different functions
  auto eo = run_engine(tr, opt);
  EXPECT_EQ(eo.abandoned_frames, 1u);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/s1", 20}, {"/s1/s2", 20}, {"/s1/s3", 10}}));
  // without the site table the open g frame stays (h nests under it)
  auto eo2 = run_engine(tr, {});
  EXPECT_EQ(self_times(eo2, 0), (Times{{"/s1", 10}, {"/s1/s2", 30}, {"/s1/s2/s3", 10}}));
}

TEST(CriticalPath, EqualSiteAndDepthReentryClosesTheOldFrame) {
  auto dir = fresh_dir("reenter");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(4, 0, 2)
      .enter(4, 10, 2) // the first activation was abandoned
      .exit(4, 30, 2)
      .emit(VPROF_REC_INTERVAL_END, 1, 40);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.abandoned_frames, 1u);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/", 10}, {"/s4", 30}}));
}

TEST(CriticalPath, NoDepthFeatureMeansNoDepthRepair) {
  // Recursion f -> f with depth 0 everywhere (a writer without frame depths): the second
  // ENTER must nest, not close the first.
  auto dir = fresh_dir("nodepth");
  TraceBuilder b(1);
  b.features(0);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 0, 0)
      .enter(1, 10, 0)
      .exit(1, 20, 0)
      .exit(1, 30, 0)
      .emit(VPROF_REC_INTERVAL_END, 1, 30);
  b.write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.abandoned_frames, 0u);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/s1", 20}, {"/s1/s1", 10}}));
}
