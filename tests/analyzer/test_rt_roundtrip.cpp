// Writer -> reader -> critical path through the runtime's real writer (libvprof_rt) with
// injected timestamps (vprof_rt_emit_at): the mutex and hand-off scenarios come back with
// the exact decomposition the builder-based tests expect.
#include "engine.hpp"
#include "vprof/rt_testing.h"
#include "vprof/trace_format.h"
#include "vprof/trace_reader.hpp"
#include "vprof/vprof.h"

#include <gtest/gtest.h>

#include <map>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace vprof::analyzer::detail;

namespace {

std::string path_of(const EngineOutput &eo, std::uint32_t n) {
  if (n == 0)
    return "/";
  std::string p;
  for (; n != 0; n = eo.nodes[n].parent) {
    auto l = eo.nodes[n].label;
    p = "/" +
        (l >= kLabelWaitBase ? std::string("wait:") + wait_kind_name(unsigned(l - kLabelWaitBase))
                             : "s" + std::to_string(l)) +
        p;
  }
  return p;
}

std::uint64_t probe(std::uint32_t site, std::uint32_t depth) {
  return site | (std::uint64_t(depth) << 32);
}

} // namespace

TEST(RuntimeRoundTrip, MutexScenarioThroughTheRealWriter) {
  fs::path dir = fs::temp_directory_path() / ("vprof-rt-roundtrip-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ASSERT_EQ(vprof_rt_set_trace_dir(dir.c_str()), 0);
  if (!vprof_rt_enabled())
    GTEST_SKIP() << "tracing disabled in this environment";
  std::uint64_t base = 0, hz = 0;
  vprof_rt_clock(&base, &hz);
  // Far enough after start-up that no real record of these threads is later.
  const std::uint64_t t0 = base + 1000000;
  std::thread waiter([&] {
    vprof_rt_emit_at(VPROF_REC_INTERVAL_BEGIN, 1, t0 + 0);
    vprof_rt_emit_at(VPROF_REC_ENTER, probe(1, 1), t0 + 10);
    vprof_rt_emit_at(VPROF_REC_LOCK_WAIT, 0xA0, t0 + 10);
    vprof_rt_emit_at(VPROF_REC_LOCK_ACQUIRE, 0xA0, t0 + 60);
    vprof_rt_emit_at(VPROF_REC_EXIT, probe(1, 1), t0 + 62);
    vprof_rt_emit_at(VPROF_REC_INTERVAL_END, 1, t0 + 100);
    vprof_rt_close_thread_stream(nullptr, 0);
  });
  std::thread holder([&] {
    vprof_rt_emit_at(VPROF_REC_ENTER, probe(5, 1), t0 + 0);
    vprof_rt_emit_at(VPROF_REC_LOCK_ACQUIRE, 0xA0, t0 + 5);
    vprof_rt_emit_at(VPROF_REC_ENTER, probe(6, 2), t0 + 20);
    vprof_rt_emit_at(VPROF_REC_EXIT, probe(6, 2), t0 + 40);
    vprof_rt_emit_at(VPROF_REC_LOCK_RELEASE, 0xA0, t0 + 50);
    vprof_rt_emit_at(VPROF_REC_EXIT, probe(5, 1), t0 + 80);
    vprof_rt_close_thread_stream(nullptr, 0);
  });
  waiter.join();
  holder.join();
  auto tr = vprof::trace::Trace::open(dir);
  ASSERT_GE(tr.streams().size(), 2u);
  auto eo = run_engine(tr, {});
  ASSERT_EQ(eo.intervals.size(), 1u);
  EXPECT_EQ(eo.path_sum_mismatches, 0u);
  EXPECT_EQ(eo.wake_edges, 1u);
  std::map<std::string, std::int64_t> got;
  const auto &r = eo.intervals[0];
  for (std::uint32_t k = 0; k < r.times_n; ++k)
    got[path_of(eo, eo.times[r.times_off + k].node)] += eo.times[r.times_off + k].ticks;
  EXPECT_EQ(got, (std::map<std::string, std::int64_t>{{"/", 38},
                                                      {"/s1", 2},
                                                      {"/s1/wait:mutex/wait:wakeup", 10},
                                                      {"/s1/wait:mutex/s5", 30},
                                                      {"/s1/wait:mutex/s5/s6", 20}}));
  fs::remove_all(dir);
}

// Labels through the real writer: one LABEL per change of a thread's label, and every
// interval still gets its own (a, a, none, b, b, a).
TEST(RuntimeRoundTrip, EachIntervalKeepsItsLabelWithOneRecordPerChange) {
  fs::path dir = fs::temp_directory_path() / ("vprof-rt-labels-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ASSERT_EQ(vprof_rt_set_trace_dir(dir.c_str()), 0);
  if (!vprof_rt_enabled())
    GTEST_SKIP() << "tracing disabled in this environment";
  static vprof_label a = {"a", 0}, b = {"b", 0};
  std::thread worker([&] {
    for (vprof_label *l : {&a, &a, static_cast<vprof_label *>(nullptr), &b, &b, &a})
      vprof_interval_end(vprof_interval_begin(l));
    vprof_rt_close_thread_stream(nullptr, 0);
  });
  worker.join();
  auto tr = vprof::trace::Trace::open(dir);
  std::size_t label_records = 0;
  for (const auto &st : tr.streams())
    for (const auto &r : st.records())
      label_records += vprof_record_kind_of(&r) == VPROF_REC_LABEL;
  EXPECT_EQ(label_records, 4u); // a, none, b, a
  auto eo = run_engine(tr, {});
  ASSERT_EQ(eo.intervals.size(), 6u);
  std::vector<std::string> got;
  for (const auto &r : eo.intervals)
    got.push_back(eo.labels[r.label]);
  EXPECT_EQ(got, (std::vector<std::string>{"a", "a", "", "b", "b", "a"}));
  fs::remove_all(dir);
}
