// The analyzer's pairing rule that VPROF_SYNC=1 relies on (docs/trace-format.md, "Sync
// levels"): a blocked acquisition pairs only with a release written after its wait began.
// At level 1 the runtime skips releases that found no waiter, so the last release before
// an acquisition may be stale; such a wait must get no edge rather than a wrong one.
#include "engine.hpp"
#include "trace_builder.hpp"
#include "vprof/trace_reader.hpp"

#include <gtest/gtest.h>

#include <string>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace vprof::analyzer::detail;
using vprof::testing::TraceBuilder;

namespace {

fs::path fresh_dir(const std::string &name) {
  fs::path d =
      fs::temp_directory_path() / ("vprof-edges-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

EngineOutput run(const fs::path &dir) {
  auto t = vprof::trace::Trace::open(dir);
  return run_engine(t, {});
}

// Thread 1 waits on obj from 40 to 90 inside an interval; thread 2 writes a release of obj
// at `release_at` (one old release at 10, before the wait, is always there).
EngineOutput waiter_and_releaser(const std::string &name, unsigned wait_kind, unsigned acquire_kind,
                                 unsigned release_kind, long release_at) {
  auto dir = fresh_dir(name);
  TraceBuilder b(1);
  b.features(VPROF_FEATURE_FRAME_DEPTH | VPROF_FEATURE_SYNC_INTERPOSE |
             VPROF_FEATURE_SYNC_EDGES_ONLY);
  b.thread(1)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 0)
      .emit(wait_kind, 0xA0, 40)
      .emit(acquire_kind, 0xA0, 90)
      .emit(VPROF_REC_INTERVAL_END, 1, 100);
  auto &t2 = b.thread(2);
  t2.enter(5, 0, 1).emit(release_kind, 0xA0, 10);
  if (release_at >= 0)
    t2.emit(release_kind, 0xA0, static_cast<std::uint64_t>(release_at));
  t2.exit(5, 95, 1);
  b.write(dir);
  return run(dir);
}

struct Kinds {
  const char *name;
  unsigned wait, acquire, release;
};
const Kinds kKinds[] = {
    {"mutex", VPROF_REC_LOCK_WAIT, VPROF_REC_LOCK_ACQUIRE, VPROF_REC_LOCK_RELEASE},
    {"rwlock", VPROF_REC_RWLOCK_WAIT_WR, VPROF_REC_RWLOCK_ACQUIRE_WR, VPROF_REC_RWLOCK_RELEASE},
    {"sem", VPROF_REC_SEM_WAIT, VPROF_REC_SEM_ACQUIRE, VPROF_REC_SEM_POST},
};

} // namespace

TEST(SyncEdges, StaleReleaseBeforeTheWaitGivesNoEdge) {
  for (const auto &k : kKinds) {
    SCOPED_TRACE(k.name);
    // the only release is at 10, before the wait began at 40 (its waker's release was
    // skipped by the level-1 check race): no edge
    auto eo = waiter_and_releaser(std::string("stale-") + k.name, k.wait, k.acquire, k.release, -1);
    EXPECT_EQ(eo.wake_edges, 0u);
  }
}

TEST(SyncEdges, ReleaseDuringTheWaitIsTheEdge) {
  for (const auto &k : kKinds) {
    SCOPED_TRACE(k.name);
    auto eo = waiter_and_releaser(std::string("live-") + k.name, k.wait, k.acquire, k.release, 70);
    EXPECT_EQ(eo.wake_edges, 1u);
  }
}

TEST(SyncEdges, ReleaseAtTheWaitBeginStillCounts) {
  auto eo = waiter_and_releaser("same-tick", VPROF_REC_LOCK_WAIT, VPROF_REC_LOCK_ACQUIRE,
                                VPROF_REC_LOCK_RELEASE, 40);
  EXPECT_EQ(eo.wake_edges, 1u);
}
