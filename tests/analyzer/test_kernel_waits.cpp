// Kernel waits (sched.vpk): hand-built traces with the kernel's scheduler events whose
// decomposition is known exactly — futex and pipe hand-offs with no interposed record,
// pseudo-wakers, deduplication with interposed waits, the file's validation and the clock
// conversion (docs/analyzer.md, "Kernel waits").
#include "engine.hpp"
#include "sched_builder.hpp"
#include "timeline_gen.hpp"
#include "trace_builder.hpp"
#include "vprof/analyzer.hpp"
#include "vprof/trace_reader.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <set>
#include <sys/syscall.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace vprof::analyzer::detail;
using vprof::testing::SchedBuilder;
using vprof::testing::TraceBuilder;

namespace {

fs::path fresh_dir(const std::string &name) {
  fs::path d = fs::temp_directory_path() / ("vprof-kw-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string path_of(const EngineOutput &eo, std::uint32_t n) {
  std::string p;
  while (n != 0) {
    const auto &d = eo.nodes[n];
    std::string part;
    if (d.label == kLabelUntracked)
      part = "untracked";
    else if (d.label >= kLabelWakerBase)
      part = std::string("wait:") + pseudo_waker_tag(unsigned(d.label - kLabelWakerBase));
    else if (d.label >= kLabelWaitBase)
      part = std::string("wait:") + wait_kind_name(unsigned(d.label - kLabelWaitBase));
    else
      part = "s" + std::to_string(d.label);
    p = "/" + part + p;
    n = d.parent;
  }
  return p.empty() ? "/" : p;
}

using Times = std::map<std::string, std::int64_t>;

Times self_times(const EngineOutput &eo, std::size_t i) {
  Times m;
  const auto &r = eo.intervals.at(i);
  for (std::uint32_t k = 0; k < r.times_n; ++k)
    m[path_of(eo, eo.times[r.times_off + k].node)] += eo.times[r.times_off + k].ticks;
  return m;
}

EngineOutput run(const fs::path &dir) {
  auto t = vprof::trace::Trace::open(dir);
  auto eo = run_engine(t, {});
  EXPECT_EQ(eo.path_sum_mismatches, 0u) << dir;
  EXPECT_EQ(eo.inexact_splits, 0u) << dir;
  return eo;
}

std::int64_t sum(const Times &t) {
  std::int64_t s = 0;
  for (const auto &[k, v] : t)
    s += v;
  return s;
}

// T1 runs an interval and blocks at 20 in a call of site 1 with no interposed record; T2
// works in site 5 (site 6 nested in [30, 55]) and wakes it.
TraceBuilder waiter_and_worker() {
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 10, 1)
      .exit(1, 80, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 100);
  b.thread(2).enter(5, 0, 1).enter(6, 30, 2).exit(6, 55, 2).exit(5, 90, 1);
  return b;
}

} // namespace

TEST(KernelWaits, FutexHandoffFollowsTheWaker) {
  auto dir = fresh_dir("futex");
  waiter_and_worker().write(dir);
  SchedBuilder().sleep(20, 1, 1, SYS_futex).wake(60, 1, 1, 2, 1).run(70, 1, 1).write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.kernel_waits, 1u);
  EXPECT_EQ(eo.kernel_edges, 1u);
  EXPECT_EQ(eo.wake_edges, 1u);
  EXPECT_EQ(eo.sched_files, 1u);
  // T1 [70, 100]; the futex wait [20, 70] woken at 60: 10 of wake-up delay, then T2 from
  // 60 back to the begin under the wait (T1's own [0, 20] ran in parallel).
  const Times want{{"/", 20},
                   {"/s1", 10},
                   {"/s1/wait:futex/wait:wakeup", 10},
                   {"/s1/wait:futex/s5", 35},
                   {"/s1/wait:futex/s5/s6", 25}};
  EXPECT_EQ(self_times(eo, 0), want);
  EXPECT_EQ(sum(self_times(eo, 0)), 100);
}

// A thread that fills its other half before the drain has appended the first sleeps in a
// futex inside the profiler's frame, woken by the drain (thread 9 of the process, no
// stream). That sleep is the stall the frame stands for: no kernel wait, no pseudo-waker,
// the time stays (profiler)'s own.
TEST(KernelWaits, ASleepInsideTheProfilersFrameStaysTheFramesTime) {
  auto dir = fresh_dir("profiler-frame");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 10, 1)
      .enter(VPROF_SITE_PROFILER, 20, 1000)
      .exit(VPROF_SITE_PROFILER, 60, 1000)
      .exit(1, 80, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 100);
  b.write(dir);
  SchedBuilder().sleep(30, 1, 1, SYS_futex).wake(45, 1, 1, 9, 1).run(50, 1, 1).write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.kernel_waits, 0u);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/", 30}, {"/s1", 30}, {"/s1/s4294967295", 40}}));
}

// The recorder's one-record switch: the SLEEP of thread 3 (of the tree, no stream) carries
// T1's RUN at 70; the reader expands it and the analysis is the one above. A version 1 file
// with the separate RUN reads the same.
TEST(KernelWaits, SleepCarryingTheNextThreadsRunEndsItsWait) {
  const Times want{{"/", 20},
                   {"/s1", 10},
                   {"/s1/wait:futex/wait:wakeup", 10},
                   {"/s1/wait:futex/s5", 35},
                   {"/s1/wait:futex/s5/s6", 25}};
  auto dir = fresh_dir("next-runs");
  waiter_and_worker().write(dir);
  SchedBuilder()
      .sleep(20, 1, 1, SYS_futex)
      .wake(60, 1, 1, 2, 1)
      .sleep_next_runs(70, 3, 1, SYS_read, 1, 1)
      .write(dir);
  auto sf = vprof::trace::read_sched(dir / VPROF_SCHED_FILE_NAME);
  EXPECT_EQ(sf.info.records, 3u);
  ASSERT_EQ(sf.records.size(), 4u);
  const vprof_sched_record &expanded = sf.records[2], &sleep = sf.records[3];
  EXPECT_EQ(expanded.kind, VPROF_SCHED_RUN);
  EXPECT_EQ(expanded.time_ns, 70u);
  EXPECT_EQ(expanded.tid, 1u);
  EXPECT_EQ(expanded.pid, 1u);
  EXPECT_EQ(expanded.other, 3u);
  EXPECT_EQ(expanded.other_pid, 1u);
  EXPECT_EQ(sleep.kind, VPROF_SCHED_SLEEP);
  EXPECT_EQ(sleep.tid, 3u);
  EXPECT_EQ(vprof_sched_syscall(&sleep), SYS_read);
  auto eo = run(dir);
  EXPECT_EQ(eo.kernel_waits, 1u);
  EXPECT_EQ(eo.kernel_edges, 1u);
  EXPECT_EQ(self_times(eo, 0), want);

  auto v1 = fresh_dir("version-1");
  waiter_and_worker().write(v1);
  SchedBuilder().version(1).sleep(20, 1, 1, SYS_futex).wake(60, 1, 1, 2, 1).run(70, 1, 1).write(v1);
  auto eo1 = run(v1);
  EXPECT_EQ(eo1.kernel_edges, 1u);
  EXPECT_EQ(self_times(eo1, 0), want);
}

TEST(KernelWaits, WithoutTheFileTheWaitingFunctionTakesTheBlame) {
  auto dir = fresh_dir("nofile");
  waiter_and_worker().write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.sched_files, 0u);
  EXPECT_EQ(eo.kernel_waits, 0u);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/", 30}, {"/s1", 70}}));
}

TEST(KernelWaits, PipeReadWokenByATracedWriter) {
  auto dir = fresh_dir("pipe");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 10, 1)
      .exit(1, 60, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 70);
  b.thread(2).enter(7, 5, 1).exit(7, 45, 1);
  b.write(dir);
  SchedBuilder()
      .sleep(15, 1, 1, SYS_read)
      .wake(44, 1, 1, 2, 1)
      .run(50, 1, 1)
      .sleep(46, 2, 1, SYS_read) // the writer's own sleep after its write: not on the path
      .write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.kernel_waits, 2u);
  EXPECT_EQ(eo.kernel_edges, 1u);
  // T1 [50, 70]: s1 10, root 10; wake-up delay 6; T2 from 44 back to 0: s7 39 (from 5),
  // untracked 5 before its first record.
  EXPECT_EQ(self_times(eo, 0), (Times{{"/", 10},
                                      {"/s1", 10},
                                      {"/s1/wait:read/wait:wakeup", 6},
                                      {"/s1/wait:read/s7", 39},
                                      {"/s1/wait:read/untracked", 5}}));
}

// A receive on an AF_UNIX stream socket (T1, sleeping in recvfrom at 15) is woken at 20 by
// its server (T2) reading the request: that wake-up freed room, it brought no data (a room
// wake-up); T2 works in site 7 and sends the reply at 60 (the recorder's data wake-up), T1
// runs at 70. Its wait belongs to T2's work up to the send, not to a wake-up delay of 50.
namespace {
TraceBuilder receiver_and_server() {
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 10, 1)
      .exit(1, 80, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 90);
  b.thread(2).enter(7, 5, 1).exit(7, 65, 1);
  return b;
}
} // namespace

TEST(KernelWaits, RoomWakeUpTakesTheWakerOfItsData) {
  auto dir = fresh_dir("room");
  receiver_and_server().write(dir);
  SchedBuilder()
      .sleep(15, 1, 1, SYS_recvfrom)
      .room_wake(20, 1, 1, 2, 1, SYS_recvfrom)
      .data_wake(60, 1, 1, 2, 1, SYS_sendto)
      .run(70, 1, 1)
      .write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.kernel_edges, 1u);
  EXPECT_EQ(eo.kernel_data_wakes, 1u);
  // T1 [70, 90]: root 10, s1 10; wake-up delay 70 - 60; T2 from 60 back to 0: s7 55 (from
  // 5), untracked 5
  EXPECT_EQ(self_times(eo, 0), (Times{{"/", 10},
                                      {"/s1", 10},
                                      {"/s1/wait:read/wait:wakeup", 10},
                                      {"/s1/wait:read/s7", 55},
                                      {"/s1/wait:read/untracked", 5}}));
}

TEST(KernelWaits, DataWakeUpIgnoredAfterTheRunOrWithoutARoomWakeUp) {
  // the first wake-up's time stands: wake-up delay 70 - 20, T2 from 20 back: s7 15, untracked 5
  const Times first_waker{{"/", 10},
                          {"/s1", 10},
                          {"/s1/wait:read/wait:wakeup", 50},
                          {"/s1/wait:read/s7", 15},
                          {"/s1/wait:read/untracked", 5}};
  auto check = [&](const char *name, SchedBuilder sched) {
    auto dir = fresh_dir(name);
    receiver_and_server().write(dir);
    sched.write(dir);
    auto eo = run(dir);
    EXPECT_EQ(eo.kernel_data_wakes, 0u) << name;
    EXPECT_EQ(self_times(eo, 0), first_waker) << name;
  };
  // the receiver ran before the send: the data found it awake
  check("room-ran", SchedBuilder()
                        .sleep(15, 1, 1, SYS_recvfrom)
                        .room_wake(20, 1, 1, 2, 1, SYS_recvfrom)
                        .run(70, 1, 1)
                        .data_wake(75, 1, 1, 2, 1, SYS_sendto));
  // a wake-up by the scheduler that did bring data: a later data record is stray
  check("plain-wake", SchedBuilder()
                          .sleep(15, 1, 1, SYS_recvfrom)
                          .wake(20, 1, 1, 2, 1)
                          .data_wake(60, 1, 1, 2, 1, SYS_sendto)
                          .run(70, 1, 1));
}

TEST(KernelWaits, PseudoWakersNameWhatWokeTheWait) {
  // one interval per case: the wait of site 1 in [10, 50] woken at 40, running at 45
  struct Case {
    std::int64_t syscall;
    std::uint32_t waker;
    bool irq;
    const char *wait, *pseudo;
  };
  const Case cases[] = {{SYS_fdatasync, 0, true, "io", "io-device"},
                        {-1, 0, true, "kernel", "io-device"}, // a page fault
                        {SYS_recvfrom, 0, true, "read", "net-receive"},
                        {SYS_epoll_wait, 77, true, "poll", "net-receive"},
                        {SYS_read, 999, false, "read", "other-process"},
                        {SYS_nanosleep, 0, true, "sleep", "timer"},
                        {SYS_futex, 999, false, "futex", "other-process"},
                        // an interrupt that arrived while the traced T2 ran: T2 is no waker
                        {SYS_recvfrom, 2, true, "read", "net-receive"}};
  auto dir = fresh_dir("pseudo");
  TraceBuilder b(1);
  SchedBuilder s;
  std::uint64_t t0 = 0;
  for (std::size_t i = 0; i < std::size(cases); ++i, t0 += 100) {
    b.thread(1)
        .emit(VPROF_REC_INTERVAL_BEGIN, i + 1, t0)
        .enter(1, t0 + 5, 1)
        .exit(1, t0 + 50, 1)
        .emit(VPROF_REC_INTERVAL_END, i + 1, t0 + 60);
    s.sleep(t0 + 10, 1, 1, cases[i].syscall)
        .wake(t0 + 40, 1, 1, cases[i].waker, cases[i].waker ? 555 : 0, cases[i].irq)
        .run(t0 + 45, 1, 1);
  }
  b.thread(2).enter(9, 0, 1).exit(9, t0, 1);
  b.write(dir);
  s.write(dir);
  auto eo = run(dir);
  ASSERT_EQ(eo.intervals.size(), std::size(cases));
  EXPECT_EQ(eo.kernel_waits, std::size(cases));
  EXPECT_EQ(eo.kernel_edges, 0u);
  EXPECT_EQ(eo.pseudo_waits[kPseudoIo], 2u);
  EXPECT_EQ(eo.pseudo_waits[kPseudoNet], 3u);
  EXPECT_EQ(eo.pseudo_waits[kPseudoProcess], 2u);
  EXPECT_EQ(eo.pseudo_waits[kPseudoTimer], 1u);
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    const std::string w = std::string("/s1/wait:") + cases[i].wait;
    // the wait's time until the wake-up is the pseudo-waker's, no jump to another thread
    EXPECT_EQ(
        self_times(eo, i),
        (Times{
            {"/", 15}, {"/s1", 10}, {w + "/wait:" + cases[i].pseudo, 30}, {w + "/wait:wakeup", 5}}))
        << cases[i].wait << " " << cases[i].pseudo;
  }
  // the analysis names them, and its report counts them
  auto res = vprof::analyzer::analyze(dir, nullptr, {.bootstrap_samples = 0});
  std::set<std::pair<std::string, std::string>> below; // (name, its parent's name)
  for (const auto &n : res.nodes)
    if (n.parent >= 0)
      below.insert({n.name, res.nodes[static_cast<std::size_t>(n.parent)].name});
  EXPECT_TRUE(below.count({"[io] block device", "[wait:io]"}));
  EXPECT_TRUE(below.count({"[io] block device", "[wait:kernel]"}));
  EXPECT_TRUE(below.count({"[net] receive", "[wait:read]"}));
  EXPECT_TRUE(below.count({"[timer]", "[wait:sleep]"}));
  EXPECT_TRUE(below.count({"[process] other", "[wait:futex]"}));
  EXPECT_EQ(res.kernel.waits, std::size(cases));
  EXPECT_EQ(res.kernel.io_device, 2u);
  // the places of the disk's, the network's and the timer's time (no wait's, no wake-up
  // delay's, not another process's) say so: the function that waited answers for them (the
  // planner's final plan)
  int outside = 0;
  for (const auto &g : res.groups)
    for (const auto &p : g.places) {
      const bool pseudo = p.name.starts_with("[io] ") || p.name.starts_with("[net] ") ||
                          p.name.starts_with("[timer] ");
      EXPECT_EQ(p.outside_waker, pseudo) << p.name;
      outside += p.outside_waker;
    }
  EXPECT_GE(outside, 3);
  const std::string text = vprof::analyzer::render_text(res);
  EXPECT_NE(text.find("8 kernel waits (0 woken by traced threads; [io] block device 2"),
            std::string::npos)
      << text;
  const std::string json = vprof::analyzer::render_json(res);
  EXPECT_NE(json.find("\"io-device\": 2"), std::string::npos) << json.substr(0, 600);
}

// A waker that belongs to the recorded process tree (the file shows it sleeping or running)
// but wrote no records — a worker thread or a forked server whose code no plan probes yet —
// is "[thread] without records", not another process: the planner expands into the static
// wakers of the wait's kind there. A waker the file never shows as a subject stays
// "[process] other".
TEST(KernelWaits, AWakerOfTheTreeWithoutRecordsIsNamedSo) {
  auto dir = fresh_dir("unrecorded");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 5, 1)
      .exit(1, 50, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 60)
      .emit(VPROF_REC_INTERVAL_BEGIN, 2, 100)
      .enter(1, 105, 1)
      .exit(1, 150, 1)
      .emit(VPROF_REC_INTERVAL_END, 2, 160);
  SchedBuilder s;
  s.sleep(10, 1, 1, SYS_read).wake(40, 1, 1, 33, 1, false).run(45, 1, 1);
  s.sleep(20, 33, 1, SYS_futex).wake(22, 33, 1, 0, 0, true).run(23, 33, 1);  // tid 33 in the tree
  s.sleep(110, 1, 1, SYS_read).wake(140, 1, 1, 44, 9, false).run(145, 1, 1); // 44: not
  b.write(dir);
  s.write(dir);
  auto eo = run(dir);
  ASSERT_EQ(eo.intervals.size(), 2u);
  EXPECT_EQ(eo.pseudo_waits[kPseudoUnrecorded], 1u);
  EXPECT_EQ(eo.pseudo_waits[kPseudoProcess], 1u);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/", 15},
                                      {"/s1", 10},
                                      {"/s1/wait:read/wait:unrecorded-thread", 30},
                                      {"/s1/wait:read/wait:wakeup", 5}}));
  auto res = vprof::analyzer::analyze(dir, nullptr, {.bootstrap_samples = 0});
  EXPECT_EQ(res.kernel.unrecorded_thread, 1u);
  EXPECT_NE(vprof::analyzer::render_text(res).find("[thread] without records 1"),
            std::string::npos);
}

// The interposed mutex wait of test_critical_path's MutexWaitFollowsTheHolder.
TraceBuilder mutex_trace() {
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
  return b;
}

TEST(KernelWaits, InterposedWaitAndItsKernelSleepAreOneEdge) {
  auto plain = fresh_dir("mutex-plain"), with = fresh_dir("mutex-kernel");
  mutex_trace().write(plain);
  mutex_trace().write(with);
  SchedBuilder()
      .sleep(12, 1, 1, SYS_futex)
      .wake(52, 1, 1, 2, 1) // the kernel agrees: T2 woke it
      .run(58, 1, 1)
      .write(with);
  auto a = run(plain), b = run(with);
  EXPECT_EQ(a.wake_edges, 1u);
  EXPECT_EQ(b.wake_edges, 1u) << "one edge, not two";
  EXPECT_EQ(b.kernel_waits, 0u);
  EXPECT_EQ(b.kernel_edges, 0u);
  EXPECT_EQ(b.kernel_filled, 0u) << "the interposed pairing had a waker";
  EXPECT_EQ(self_times(b, 0), self_times(a, 0));
  EXPECT_EQ(self_times(b, 0).count("/s1/wait:mutex/s5"), 1u);
}

TEST(KernelWaits, KernelSleepJustBeforeTheInterposedRecordIsTheSameWait) {
  // clocks a few ticks apart: the kernel's SLEEP at 8 before LOCK_WAIT at 10, RUN at 61
  // after LOCK_ACQUIRE at 60
  auto dir = fresh_dir("mutex-skew");
  mutex_trace().write(dir);
  SchedBuilder().sleep(8, 1, 1, SYS_futex).wake(52, 1, 1, 2, 1).run(61, 1, 1).write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.wake_edges, 1u);
  EXPECT_GE(eo.kernel_clamped, 1u);
  auto t = self_times(eo, 0);
  EXPECT_EQ(sum(t), 100);
  EXPECT_EQ(t.count("/s1/wait:futex"), 0u) << "no second wait";
  EXPECT_EQ(t["/s1/wait:mutex/wait:wakeup"], 10);
  EXPECT_EQ(t["/s1/wait:mutex/s5/s6"], 20);
}

// A marked wait (vprof_wait_begin/end) whose waker marks nothing: the records find no edge.
TraceBuilder unpaired_trace() {
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 10, 1)
      .emit(VPROF_REC_WAIT_BEGIN, 0xB0, 10)
      .emit(VPROF_REC_WAIT_END, 0xB0, 60)
      .exit(1, 62, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 100);
  b.thread(2).enter(5, 0, 1).emit(VPROF_REC_LOCK_RELEASE, 0xC0, 3).exit(5, 80, 1);
  return b;
}

TEST(KernelWaits, KernelWakerFillsAnInterposedWaitWithoutPairing) {
  auto plain = fresh_dir("fill-plain"), with = fresh_dir("fill-kernel");
  unpaired_trace().write(plain);
  unpaired_trace().write(with);
  SchedBuilder().sleep(12, 1, 1, SYS_futex).wake(50, 1, 1, 2, 1).run(55, 1, 1).write(with);
  auto a = run(plain), b = run(with);
  EXPECT_EQ(a.wake_edges, 0u);
  EXPECT_EQ(self_times(a, 0).at("/s1/wait:custom"), 50);
  EXPECT_EQ(b.wake_edges, 1u);
  EXPECT_EQ(b.kernel_filled, 1u);
  EXPECT_EQ(b.kernel_waits, 0u);
  EXPECT_EQ(
      self_times(b, 0),
      (Times{
          {"/", 38}, {"/s1", 2}, {"/s1/wait:custom/wait:wakeup", 10}, {"/s1/wait:custom/s5", 50}}));
}

TEST(KernelWaits, KernelWakeALittleAfterTheWaitEndStillFills) {
  auto dir = fresh_dir("fill-late");
  unpaired_trace().write(dir);
  SchedBuilder().sleep(12, 1, 1, SYS_futex).wake(61, 1, 1, 2, 1).run(63, 1, 1).write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.kernel_filled, 1u);
  auto t = self_times(eo, 0);
  EXPECT_EQ(t["/s1/wait:custom/s5"], 60) << "the waker's work up to the wait's end";
  EXPECT_EQ(sum(t), 100);
}

TEST(KernelWaits, ARecordInsideAKernelSleepEndsItWithTheKernelsWaker) {
  // the thread's probe at 68 lies before the kernel's RUN at 70 (clocks a little apart)
  auto dir = fresh_dir("probe-in-sleep");
  TraceBuilder b(1);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .enter(1, 10, 1)
      .enter(2, 68, 2)
      .exit(2, 75, 2)
      .exit(1, 80, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 100);
  b.thread(2).enter(5, 0, 1).exit(5, 90, 1);
  b.write(dir);
  SchedBuilder().sleep(20, 1, 1, SYS_futex).wake(60, 1, 1, 2, 1).run(70, 1, 1).write(dir);
  auto eo = run(dir);
  EXPECT_EQ(eo.kernel_edges, 1u);
  EXPECT_GE(eo.kernel_clamped, 1u);
  EXPECT_EQ(self_times(eo, 0), (Times{{"/", 20},
                                      {"/s1", 5},
                                      {"/s1/s2", 7},
                                      {"/s1/wait:futex/wait:wakeup", 8},
                                      {"/s1/wait:futex/s5", 60}}));
}

TEST(KernelWaits, TruncatedFileIsReadWithAWarning) {
  auto dir = fresh_dir("truncated");
  waiter_and_worker().write(dir);
  SchedBuilder s;
  s.sleep(20, 1, 1, SYS_futex).wake(60, 1, 1, 2, 1).run(70, 1, 1).sleep(85, 2, 1, SYS_futex);
  // closed, but cut inside the fourth record: three whole records remain
  auto file = s.write(dir, true, VPROF_SCHED_HEADER_SIZE + 3 * VPROF_SCHED_RECORD_SIZE + 7);
  auto t = vprof::trace::Trace::open(dir);
  ASSERT_EQ(t.warnings().size(), 1u);
  EXPECT_NE(t.warnings()[0].find(file.string()), std::string::npos);
  EXPECT_NE(t.warnings()[0].find("truncated"), std::string::npos) << t.warnings()[0];
  ASSERT_EQ(t.sched().size(), 1u);
  EXPECT_EQ(t.sched()[0].records, 3u);
  auto eo = run_engine(t, {});
  EXPECT_EQ(eo.kernel_edges, 1u);

  // a recorder killed before its end: not closed, records = 0 in the header
  s.write(dir, false);
  auto killed = vprof::trace::Trace::open(dir);
  ASSERT_EQ(killed.warnings().size(), 1u);
  EXPECT_NE(killed.warnings()[0].find("not closed"), std::string::npos);
  EXPECT_EQ(killed.sched()[0].records, 4u);
  auto res = vprof::analyzer::analyze(dir, nullptr, {.bootstrap_samples = 0});
  bool named = false;
  for (const auto &w : res.warnings)
    named |= w.find(file.string()) != std::string::npos;
  EXPECT_TRUE(named) << "the analysis's warnings name the file";
}

TEST(KernelWaits, LostRecordsAreALoudWarning) {
  auto dir = fresh_dir("lost");
  waiter_and_worker().write(dir);
  SchedBuilder().sleep(20, 1, 1, SYS_futex).run(70, 1, 1).lost(12).write(dir);
  auto res = vprof::analyzer::analyze(dir, nullptr, {.bootstrap_samples = 0});
  EXPECT_EQ(res.kernel.lost, 12u);
  bool loud = false;
  for (const auto &w : res.warnings)
    loud |= w.find("KERNEL EVENTS LOST") != std::string::npos &&
            w.find("--ring-mb") != std::string::npos;
  EXPECT_TRUE(loud);
  EXPECT_EQ(res.kernel.waits, 1u);
  EXPECT_EQ(res.kernel.edges, 0u) << "no WAKE: the wait has no waker";
}

TEST(KernelWaits, CorruptFileIsAnErrorNamingIt) {
  auto dir = fresh_dir("corrupt");
  waiter_and_worker().write(dir);
  auto expect_error = [&](const char *what, const std::string &problem) {
    try {
      vprof::trace::Trace::open(dir);
      ADD_FAILURE() << what << ": no error";
    } catch (const vprof::trace::TraceError &e) {
      EXPECT_EQ(e.file().filename(), "sched.vpk") << what;
      EXPECT_NE(e.problem().find(problem), std::string::npos) << what << ": " << e.what();
    }
  };
  SchedBuilder s;
  s.sleep(20, 1, 1, SYS_futex).run(70, 1, 1);
  vprof_sched_header h;
  std::memset(&h, 0, sizeof h);
  std::memcpy(h.magic, VPROF_SCHED_MAGIC, VPROF_SCHED_MAGIC_SIZE);
  h.version = VPROF_SCHED_VERSION;
  h.header_size = VPROF_SCHED_HEADER_SIZE;
  h.record_size = VPROF_SCHED_RECORD_SIZE;
  h.flags = VPROF_SCHED_CLOSED;
  h.records = 2;
  auto bad = h;
  bad.magic[0] = 'X';
  s.write_raw(dir, bad);
  expect_error("magic", "bad magic");
  bad = h;
  bad.version = 9;
  s.write_raw(dir, bad);
  expect_error("version", "unsupported version 9");
  bad = h;
  bad.record_size = 16;
  s.write_raw(dir, bad);
  expect_error("record size", "record_size 16");
  bad = h;
  bad.records = 1;
  s.write_raw(dir, bad);
  expect_error("count", "more than the 1 records");
  s.write(dir, true, 50);
  expect_error("short header", "truncated header");
  vprof_sched_record r{};
  r.kind = 9;
  r.tid = 1;
  SchedBuilder(s).raw(r).write(dir);
  try {
    vprof::trace::Trace::open(dir);
    ADD_FAILURE() << "unknown kind: no error";
  } catch (const vprof::trace::TraceError &e) {
    EXPECT_EQ(e.offset(), VPROF_SCHED_HEADER_SIZE + 2 * VPROF_SCHED_RECORD_SIZE + 24);
    EXPECT_NE(e.problem().find("unknown kind 9"), std::string::npos) << e.what();
  }
  r.kind = VPROF_SCHED_WAKE;
  r.flags = VPROF_SCHED_NEXT_RUNS;
  r.other = 2;
  SchedBuilder(s).raw(r).write(dir);
  try {
    vprof::trace::Trace::open(dir);
    ADD_FAILURE() << "NEXT_RUNS on a WAKE: no error";
  } catch (const vprof::trace::TraceError &e) {
    EXPECT_EQ(e.offset(), VPROF_SCHED_HEADER_SIZE + 2 * VPROF_SCHED_RECORD_SIZE + 25);
    EXPECT_NE(e.problem().find("NEXT_RUNS"), std::string::npos) << e.what();
  }
  for (const auto &[kind, version] :
       {std::pair{VPROF_SCHED_RUN, VPROF_SCHED_VERSION}, {VPROF_SCHED_WAKE, 2u}}) {
    r.kind = static_cast<std::uint8_t>(kind);
    r.flags = VPROF_SCHED_WAKE_DATA;
    SchedBuilder(s).version(version).raw(r).write(dir);
    try {
      vprof::trace::Trace::open(dir);
      ADD_FAILURE() << "a data wake-up flag on kind " << kind << ", version " << version
                    << ": no error";
    } catch (const vprof::trace::TraceError &e) {
      EXPECT_EQ(e.offset(), VPROF_SCHED_HEADER_SIZE + 2 * VPROF_SCHED_RECORD_SIZE + 25);
      EXPECT_NE(e.problem().find("version-3 WAKE"), std::string::npos) << e.what();
    }
  }
}

TEST(KernelWaits, ClockConversionAcrossTwoProcesses) {
  // two processes on one 2 GHz TSC, started 1 ms apart; CLOCK_MONOTONIC 1 ms at the first
  auto dir = fresh_dir("clock");
  TraceBuilder a(100, 2000000, 2000000000ull, VPROF_CLOCK_TSC),
      b(200, 4000000, 2000000000ull, VPROF_CLOCK_TSC);
  a.monotonic(1000000);
  b.monotonic(2000000);
  a.thread(100).enter(1, 0, 1).exit(1, 4000, 1);
  b.thread(200).enter(2, 0, 1).exit(2, 4000, 1);
  a.write(dir);
  b.write(dir);
  SchedBuilder()
      .sleep(1000250, 100, 100, SYS_futex) // 250 ns after a's base: 500 ticks
      .wake(2000500, 200, 200, 100, 100)   // 500 ns after b's base: 1000 ticks past it
      .sleep(2000600, 300, 200, SYS_futex) // not a traced thread
      .run(1500000, 100, 100)
      .write(dir);
  auto t = vprof::trace::Trace::open(dir);
  ASSERT_EQ(t.streams().size(), 2u);
  EXPECT_EQ(t.sched_run_ticks(0, 100, 1000250), 500);
  EXPECT_EQ(t.sched_run_ticks(0, 200, 2000500), 2000000 + 1000);
  EXPECT_EQ(t.sched_run_ticks(0, 999, 1000250), 500) << "an unknown pid: the first process";
  auto ka = t.kernel_events(0), kb = t.kernel_events(1);
  ASSERT_EQ(ka.size(), 2u);
  ASSERT_EQ(kb.size(), 1u);
  EXPECT_EQ(ka[0].t, 500);
  EXPECT_EQ(ka[0].kind, VPROF_SCHED_SLEEP);
  EXPECT_EQ(ka[1].t, 1000000) << "RUN at 1.5 ms: 0.5 ms after a's base";
  EXPECT_EQ(kb[0].t, 2001000);
  EXPECT_EQ(kb[0].waker, 0) << "the waker tid 100 is stream 0";
  EXPECT_EQ(t.sched()[0].unknown_tid, 1u);
}

TEST(KernelWaits, SeveralHostsTheFileBelongsToItsDirectory) {
  // the same pid and tid on two hosts; only the second directory has a sched.vpk
  auto a = fresh_dir("host-a"), b = fresh_dir("host-b");
  TraceBuilder ta(1), tb(1, 3000000);
  ta.realtime(5000000000ull);
  tb.realtime(5000001000ull); // started 1 µs later by the wall clock
  ta.thread(1).enter(1, 0, 1).exit(1, 1000, 1);
  tb.thread(1).enter(2, 0, 1).enter(3, 100, 2).exit(3, 150, 2).exit(2, 1000, 1);
  ta.write(a);
  tb.write(b);
  SchedBuilder().sleep(100, 1, 1, SYS_futex).run(150, 1, 1).write(b);
  auto t = vprof::trace::Trace::open(std::vector<fs::path>{a, b});
  ASSERT_EQ(t.streams().size(), 2u);
  ASSERT_EQ(t.sched().size(), 1u);
  EXPECT_EQ(t.sched()[0].host, 1u);
  EXPECT_TRUE(t.kernel_events(0).empty()) << "not the first directory's thread";
  auto ev = t.kernel_events(1);
  ASSERT_EQ(ev.size(), 2u);
  const auto &s = t.streams()[1];
  // on the time line exactly where the second host's records of those times are
  EXPECT_EQ(ev[0].t, static_cast<std::int64_t>(t.run_ticks(s, s.records()[1])));
  EXPECT_EQ(ev[1].t, static_cast<std::int64_t>(t.run_ticks(s, s.records()[2])));
}

TEST(KernelWaits, RandomKernelEventsOverRandomTimelinesKeepEveryPathExact) {
  // The property test's timelines (timeline_gen.hpp) with random scheduler events laid over
  // them, at odds with the records on purpose: sleeps inside interposed waits and across
  // probes, lost WAKEs and RUNs, wakers traced, untraced, idle or in interrupts. The engine
  // must clamp and count, never throw, and keep every path summing to its latency.
  std::uint64_t waits = 0, edges = 0, clamped = 0, filled = 0, data_wakes = 0;
  for (std::uint64_t seed = 1; seed <= 400; ++seed) {
    auto dir = fresh_dir("random");
    vprof::testing::random_timeline(seed).write(dir);
    std::mt19937_64 rng(seed * 7919);
    auto pick = [&](std::uint64_t n) { return rng() % n; };
    SchedBuilder s;
    for (std::uint32_t tid = 1; tid <= 4; ++tid)
      for (std::uint64_t k = 0, n = pick(8); k < n; ++k) {
        std::uint64_t t = pick(260), d1 = pick(30), d2 = pick(5);
        const std::int64_t calls[] = {SYS_futex, SYS_read, SYS_fdatasync, SYS_nanosleep, -1};
        s.sleep(t, tid, 1, calls[pick(5)]);
        const auto waker = static_cast<std::uint32_t>(pick(6));
        const bool room = pick(4) == 0; // a room wake-up, its data wake-up perhaps after the RUN
        if (room)
          s.room_wake(t + d1, tid, 1, waker, 1, SYS_read);
        else if (pick(10))
          s.wake(t + d1, tid, 1, waker, 1, pick(4) == 0);
        if (room && pick(4))
          s.data_wake(t + d1 + pick(10), tid, 1, waker, 1, SYS_write);
        if (pick(10))
          s.run(t + d1 + d2, tid, 1);
      }
    s.write(dir, pick(2) == 0);
    auto trace = vprof::trace::Trace::open(dir);
    EngineOutput eo;
    ASSERT_NO_THROW(eo = run_engine(trace, {})) << "seed " << seed;
    ASSERT_EQ(eo.path_sum_mismatches, 0u) << "seed " << seed;
    EXPECT_EQ(eo.inexact_splits, 0u) << "seed " << seed;
    waits += eo.kernel_waits;
    edges += eo.kernel_edges;
    clamped += eo.kernel_clamped;
    data_wakes += eo.kernel_data_wakes;
    filled += eo.kernel_filled;
  }
  EXPECT_GT(waits, 400u);
  EXPECT_GT(edges, 100u);
  EXPECT_GT(clamped, 100u);
  EXPECT_GT(filled, 10u);
  EXPECT_GT(data_wakes, 10u); // the data wake-ups taken kept the paths exact too
}
