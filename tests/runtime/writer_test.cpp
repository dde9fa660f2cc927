// Unit tests of the libvprof_rt writer driven with injected timestamps
// (<vprof/rt_testing.h>), read back with a minimal reader of the format.
#include <vprof/probe.h>
#include <vprof/rt_testing.h>
#include <vprof/trace_format.h>
#include <vprof/vprof.h>

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <pthread.h>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Rec {
  unsigned kind;
  uint64_t ticks, arg;
  bool operator==(const Rec &o) const { return kind == o.kind && ticks == o.ticks && arg == o.arg; }
};

struct Stream {
  vprof_stream_header h{};
  std::vector<Rec> recs;
  uint64_t file_size = 0;
};

Stream read_stream(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  Stream s;
  s.file_size = bytes.size();
  EXPECT_GE(bytes.size(), sizeof s.h) << p;
  std::memcpy(&s.h, bytes.data(), sizeof s.h);
  // The data region's records, then the window's (a ring) from the slot after them up to
  // the first empty slot, at most up to window_base + window_records.
  auto at = [&](uint64_t off) {
    vprof_record r{};
    if (off + 16 <= bytes.size())
      std::memcpy(&r, bytes.data() + off, sizeof r);
    return r;
  };
  for (uint64_t i = 0; i < s.h.committed_records; i++) {
    vprof_record r = at(s.h.data_offset + 16 * i);
    s.recs.push_back({vprof_record_kind_of(&r), vprof_record_ticks(&r), r.arg});
  }
  for (uint64_t i = s.h.committed_records; i < s.h.window_base + s.h.window_records; i++) {
    vprof_record r = at(s.h.window_offset + 16 * (i % s.h.window_records));
    if (vprof_record_kind_of(&r) == VPROF_REC_NONE)
      break;
    s.recs.push_back({vprof_record_kind_of(&r), vprof_record_ticks(&r), r.arg});
  }
  return s;
}

class Writer : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vprof-writer-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_EQ(vprof_rt_set_trace_dir(dir_.c_str()), 0);
    ASSERT_EQ(vprof_rt_enabled(), 1);
    vprof_rt_set_stream_limits(4096, 0);
  }
  void TearDown() override {
    vprof_rt_close_thread_stream(nullptr, 0);
    fs::remove_all(dir_);
  }
  Stream close_and_read() {
    char path[4096];
    EXPECT_EQ(vprof_rt_close_thread_stream(path, sizeof path), 0);
    return read_stream(path);
  }
  std::string dir_;
};

TEST_F(Writer, RoundTripOfAnExactTimeline) {
  std::vector<Rec> want = {{VPROF_REC_ENTER, 1000, 7 | (123ull << 32)},
                           {VPROF_REC_LOCK_WAIT, 1005, 0xdeadbeef},
                           {VPROF_REC_LOCK_ACQUIRE, 1010, 0xdeadbeef},
                           {VPROF_REC_EXIT, 1020, 7 | (123ull << 32)},
                           {VPROF_REC_WAKE, VPROF_TICKS_MASK, ~0ull}};
  for (const Rec &r : want)
    vprof_rt_emit_at(r.kind, r.arg, r.ticks);
  vprof_rt_emit_at(VPROF_REC_ENTER, 1, (5ull << 56) | 42); // only low 56 bits are kept
  want.push_back({VPROF_REC_ENTER, 42, 1});
  Stream s = close_and_read();
  EXPECT_EQ(s.recs, want);
  EXPECT_EQ(std::memcmp(s.h.magic, VPROF_TRACE_MAGIC, 8), 0);
  EXPECT_EQ(s.h.version, VPROF_TRACE_VERSION);
  EXPECT_EQ(s.h.header_size, 256u);
  EXPECT_EQ(s.h.record_size, 16u);
  EXPECT_EQ(s.h.pid, (uint32_t)getpid());
  EXPECT_EQ(s.h.tid, (uint32_t)gettid());
  EXPECT_EQ(s.h.ppid, (uint32_t)getppid());
  EXPECT_EQ(s.h.dropped, 0u);
  EXPECT_TRUE(s.h.flags & VPROF_STREAM_CLOSED);
  EXPECT_TRUE(s.h.features & VPROF_FEATURE_FRAME_DEPTH);
  uint64_t base, hz;
  vprof_rt_clock(&base, &hz);
  EXPECT_EQ(s.h.base_ticks, base);
  EXPECT_EQ(s.h.ticks_per_second, hz);
  // Nothing flushed: the header page and the 4 KiB window, nothing in the data region.
  const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  EXPECT_EQ(s.h.window_offset, page);
  EXPECT_EQ(s.h.window_records, 4096u / 16);
  EXPECT_EQ(s.h.data_offset, page + 4096);
  EXPECT_EQ(s.h.committed_records, 0u);
  EXPECT_EQ(s.h.window_base, 0u);
  EXPECT_EQ(s.file_size, page + 4096);
}

TEST_F(Writer, FullWindowsAreAppendedToTheDataRegion) {
  for (uint64_t i = 0; i < 1000; i++)
    vprof_rt_emit_at(VPROF_REC_ENTER, i, 10 + i);
  Stream s = close_and_read();
  ASSERT_EQ(s.recs.size(), 1000u);
  for (uint64_t i = 0; i < 1000; i++)
    ASSERT_EQ(s.recs[i], (Rec{VPROF_REC_ENTER, 10 + i, i}));
  // 256-record window of two 128-record halves: seven halves appended (896 records), 104
  // left in the window, in its second half (the stream's record 896 is in slot 128)
  EXPECT_EQ(s.h.committed_records, 896u);
  EXPECT_EQ(s.h.window_base, 896u);
  EXPECT_EQ(s.file_size, s.h.data_offset + 896u * 16);
}

TEST_F(Writer, DropsPastTheLimitAreCountedExactly) {
  vprof_rt_set_stream_limits(4096, 8192);
  for (uint64_t i = 0; i < 1000; i++)
    vprof_rt_emit_at(VPROF_REC_ENTER, i, i + 1);
  Stream s = close_and_read();
  // 8 KiB = 512 records: two appended halves, and a full window that stays in place (the
  // first half full again, its other half the last lap)
  EXPECT_EQ(s.h.committed_records, 256u);
  ASSERT_EQ(s.recs.size(), 512u);
  EXPECT_EQ(s.h.dropped, 1000u - 512u);
  EXPECT_EQ(s.recs.back(), (Rec{VPROF_REC_ENTER, 512, 511}));
}

// The records of probe `site` and the profiler's frames in a stream, whose records must be
// in time order.
std::pair<int, int> count_in_order(const Stream &s, uint32_t site) {
  int ours = 0, frames = 0;
  uint64_t last = 0;
  for (const Rec &r : s.recs) {
    EXPECT_GE(r.ticks, last);
    last = r.ticks;
    ours += (uint32_t)r.arg == site;
    frames += (uint32_t)r.arg == VPROF_SITE_PROFILER && r.kind == VPROF_REC_ENTER;
  }
  return {ours, frames};
}

// Probes (not an injected timeline) paced so that the drain keeps up: the thread hands each
// full half over and goes on in the other without stalling, so no profiler frame but the
// one of the stream's opening, and every record is read back in order.
TEST_F(Writer, AFullHalfIsAppendedBehindTheThread) {
  vprof_rt_set_stream_limits(64 * 1024, 0); // halves of 2048 records
  const uint32_t site = 7;
  const int pairs = 10000; // ten turns of the window
  for (int i = 0; i < pairs; i++) {
    vprof_probe_scope p = vprof_probe_enter_(site);
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(2);
    while (std::chrono::steady_clock::now() < until) {
    }
    vprof_probe_exit_(&p);
  }
  Stream s = close_and_read();
  const auto [ours, frames] = count_in_order(s, site);
  EXPECT_EQ(ours, 2 * pairs);
  // without the drain every one of the ten turns is a stall; with it, the stream's opening
  // and the turns that found the drain waiting for a CPU (tests run side by side on two)
  EXPECT_LE(frames, 4) << "most halves were appended behind the thread";
  EXPECT_EQ(s.h.committed_records % 2048, 0u);
  EXPECT_GE(s.h.committed_records, 2u * pairs - 2 * 2048);
  bool drain = false;
  for (const auto &e : fs::directory_iterator("/proc/self/task")) {
    std::ifstream comm(e.path() / "comm");
    std::string name;
    std::getline(comm, name);
    drain = drain || name == "vprof-drain";
  }
  EXPECT_TRUE(drain) << "no thread named vprof-drain";
}

// A drain that waits for a CPU (held here) costs a thread one append per half, not the
// wait: the thread takes its half back and appends it itself. The job stays in the drain's
// queue meanwhile and is queued there again, never pushed twice; once the drain goes on it
// passes the job, and the stream closes with every record once, in order.
TEST_F(Writer, AHalfTheDrainHasNotBegunIsTakenBack) {
  vprof_rt_set_stream_limits(64 * 1024, 0); // halves of 2048 records
  const uint32_t site = 9;
  vprof_rt_emit_at(VPROF_REC_ENTER, site, 1); // opens the stream (and starts the drain)
  vprof_rt_emit_at(VPROF_REC_EXIT, site, 2);
  ASSERT_EQ(vprof_rt_hold_drain(1), 0) << "no drain thread";
  const int pairs = 10000; // ten turns of the window
  auto run = [&] {
    for (int i = 0; i < pairs; i++) {
      vprof_probe_scope p = vprof_probe_enter_(site);
      vprof_probe_exit_(&p);
    }
  };
  auto t0 = std::chrono::steady_clock::now();
  run();
  double held_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(vprof_rt_hold_drain(0), 0);
  run(); // handed over again: the job the drain never took is passed first
  Stream s = close_and_read();
  const auto [ours, frames] = count_in_order(s, site);
  EXPECT_EQ(ours, 4 * pairs + 2) << "every record once";
  // 20,000 records while held: nine turns of a half, the first handed over and never taken,
  // each later one a wait that became an append of its own (a frame of the profiler's)
  EXPECT_GE(frames, 8) << "the thread appended the halves itself while the drain was held";
  EXPECT_LT(held_s, 2.0) << "the thread waited for the held drain instead of appending";
  EXPECT_EQ(s.h.committed_records % 2048, 0u);
}

TEST_F(Writer, TheWindowIsCutToHalfTheLimit) {
  vprof_rt_set_stream_limits(64 * 1024, 16 * 1024);
  for (uint64_t i = 0; i < 2000; i++)
    vprof_rt_emit_at(VPROF_REC_ENTER, i, i + 1);
  Stream s = close_and_read();
  EXPECT_EQ(s.h.window_records, 8u * 1024 / 16);
  ASSERT_EQ(s.recs.size(), 1024u);
  EXPECT_EQ(s.h.dropped, 2000u - 1024u);
  for (uint64_t i = 0; i < 1024; i++)
    ASSERT_EQ(s.recs[i].arg, i);
}

TEST_F(Writer, ClosingTwiceOrWithoutStreamFails) {
  EXPECT_EQ(vprof_rt_close_thread_stream(nullptr, 0), -1);
  vprof_rt_emit_at(VPROF_REC_ENTER, 1, 1);
  EXPECT_EQ(vprof_rt_close_thread_stream(nullptr, 0), 0);
  EXPECT_EQ(vprof_rt_close_thread_stream(nullptr, 0), -1);
}

TEST_F(Writer, ReopeningGivesANewStreamSequence) {
  char a[4096], b[4096];
  vprof_rt_emit_at(VPROF_REC_ENTER, 1, 1);
  ASSERT_EQ(vprof_rt_close_thread_stream(a, sizeof a), 0);
  vprof_rt_emit_at(VPROF_REC_ENTER, 2, 2);
  ASSERT_EQ(vprof_rt_close_thread_stream(b, sizeof b), 0);
  Stream sa = read_stream(a), sb = read_stream(b);
  EXPECT_EQ(sb.h.stream_seq, sa.h.stream_seq + 1);
  EXPECT_EQ(sb.recs, (std::vector<Rec>{{VPROF_REC_ENTER, 2, 2}}));
}

TEST_F(Writer, ThreadExitClosesItsStream) {
  uint32_t tid = 0;
  std::thread t([&] {
    tid = (uint32_t)gettid();
    pthread_setname_np(pthread_self(), "vprof-worker");
    vprof_rt_emit_at(VPROF_REC_ATTACH, 5, 50);
  });
  t.join();
  int found = 0;
  for (const auto &e : fs::directory_iterator(dir_)) {
    if (e.path().extension() != ".vpt")
      continue;
    Stream s = read_stream(e.path());
    if (s.h.tid != tid)
      continue;
    found++;
    EXPECT_TRUE(s.h.flags & VPROF_STREAM_CLOSED);
    EXPECT_STREQ(s.h.thread_name, "vprof-worker");
    EXPECT_EQ(s.recs, (std::vector<Rec>{{VPROF_REC_ATTACH, 50, 5}}));
  }
  EXPECT_EQ(found, 1);
}

TEST_F(Writer, AnnotationAbiRecordsAndLabels) {
  static vprof_label label = {"NewOrder", 0};
  uint64_t id = vprof_interval_begin(&label);
  uint64_t id2 = vprof_interval_begin(&label);
  vprof_interval_attach(id);
  vprof_handoff_send(&label);
  vprof_handoff_recv(&label);
  vprof_wait_begin(&label);
  vprof_wait_end(&label);
  vprof_wake(&label);
  vprof_interval_detach(id);
  vprof_interval_end(id);
  vprof_interval_begin_id(77, nullptr);
  Stream s = close_and_read();
  EXPECT_EQ(id >> 40, (uint64_t)getpid());
  EXPECT_NE(id, id2);
  ASSERT_NE(label.id, 0u);
  // the first BEGIN opened the stream: the opening's profiler frame follows its LABEL, which
  // stays right after its BEGIN (docs/trace-format.md, "The profiler's frame")
  ASSERT_GE(s.recs.size(), 4u);
  EXPECT_EQ(s.recs[2].kind, VPROF_REC_ENTER);
  EXPECT_EQ(s.recs[2].arg & 0xffffffffu, VPROF_SITE_PROFILER);
  EXPECT_EQ(s.recs[3].kind, VPROF_REC_EXIT);
  EXPECT_LE(s.recs[1].ticks, s.recs[2].ticks);
  s.recs.erase(s.recs.begin() + 2, s.recs.begin() + 4);
  std::vector<unsigned> kinds;
  for (const Rec &r : s.recs)
    kinds.push_back(r.kind);
  // A LABEL only when the thread's label changes (VPROF_FEATURE_STICKY_LABEL): none for the
  // second NewOrder, a LABEL 0 for the unlabelled begin after them.
  EXPECT_EQ(kinds, (std::vector<unsigned>{
                       VPROF_REC_INTERVAL_BEGIN, VPROF_REC_LABEL, VPROF_REC_INTERVAL_BEGIN,
                       VPROF_REC_ATTACH, VPROF_REC_HANDOFF_SEND, VPROF_REC_HANDOFF_RECV,
                       VPROF_REC_WAIT_BEGIN, VPROF_REC_WAIT_END, VPROF_REC_WAKE, VPROF_REC_DETACH,
                       VPROF_REC_INTERVAL_END, VPROF_REC_INTERVAL_BEGIN, VPROF_REC_LABEL}));
  EXPECT_TRUE(s.h.features & VPROF_FEATURE_STICKY_LABEL);
  EXPECT_EQ(s.recs[0].arg, id);
  EXPECT_EQ(s.recs[1].arg, label.id);
  EXPECT_EQ(s.recs[0].ticks, s.recs[1].ticks); // LABEL shares BEGIN's timestamp
  EXPECT_EQ(s.recs[4].arg, (uint64_t)(uintptr_t)&label);
  EXPECT_EQ(s.recs[s.recs.size() - 2].arg, 77u);
  EXPECT_EQ(s.recs.back().arg, 0u);
  std::ifstream in(fs::path(dir_) / (std::to_string(getpid()) + ".labels"));
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), std::to_string(label.id) + "\tNewOrder\n"); // written once
}

// Sets the sync level for one test and restores the start-up one.
class SyncLevel {
public:
  explicit SyncLevel(int level) : old_(vprof_rt_set_sync_level(level)) {}
  ~SyncLevel() {
    if (old_ >= 0)
      vprof_rt_set_sync_level(old_);
  }
  SyncLevel(const SyncLevel &) = delete;
  SyncLevel &operator=(const SyncLevel &) = delete;

private:
  int old_;
};

TEST_F(Writer, StdMutexIsSeenThroughTheInterposer) {
  SyncLevel every(2);
  std::mutex m;
  m.lock();
  m.unlock();
  Stream s = close_and_read();
  uint64_t obj = (uint64_t)(uintptr_t)m.native_handle();
  std::vector<unsigned> kinds;
  for (const Rec &r : s.recs)
    if (r.arg == obj)
      kinds.push_back(r.kind);
  EXPECT_EQ(kinds, (std::vector<unsigned>{VPROF_REC_LOCK_ACQUIRE, VPROF_REC_LOCK_RELEASE}));
}

// libstdc++ waits with a timeout through pthread_cond_clockwait and locks a timed_mutex
// with pthread_mutex_clocklock (glibc >= 2.30): both are interposed too.
TEST_F(Writer, StdTimedWaitsUseTheClockVariants) {
  SyncLevel every(2);
  std::mutex m;
  std::condition_variable cv;
  std::timed_mutex tm;
  {
    std::unique_lock<std::mutex> lock(m);
    EXPECT_FALSE(cv.wait_for(lock, std::chrono::milliseconds(1), [] { return false; }));
  }
  ASSERT_TRUE(tm.try_lock_for(std::chrono::milliseconds(1)));
  tm.unlock();
  Stream s = close_and_read();
  uint64_t mo = (uint64_t)(uintptr_t)m.native_handle();
  uint64_t co = (uint64_t)(uintptr_t)cv.native_handle();
  std::vector<unsigned> kinds;
  for (const Rec &r : s.recs)
    if (r.arg == mo || r.arg == co)
      kinds.push_back(r.kind);
  // lock, then (one or more) timed waits, each RELEASE BEGIN TIMEOUT ACQUIRE, then unlock
  ASSERT_GE(kinds.size(), 6u);
  EXPECT_EQ(kinds.front(), (unsigned)VPROF_REC_LOCK_ACQUIRE);
  EXPECT_EQ(kinds.back(), (unsigned)VPROF_REC_LOCK_RELEASE);
  EXPECT_EQ(std::vector<unsigned>(kinds.begin() + 1, kinds.begin() + 5),
            (std::vector<unsigned>{VPROF_REC_LOCK_RELEASE, VPROF_REC_COND_WAIT_BEGIN,
                                   VPROF_REC_COND_WAIT_TIMEOUT, VPROF_REC_LOCK_ACQUIRE}));
  uint64_t to = (uint64_t)(uintptr_t)tm.native_handle();
  std::vector<unsigned> tk;
  for (const Rec &r : s.recs)
    if (r.arg == to)
      tk.push_back(r.kind);
  EXPECT_EQ(tk, (std::vector<unsigned>{VPROF_REC_LOCK_ACQUIRE, VPROF_REC_LOCK_RELEASE}));
}

// The default level 1: an uncontended lock/unlock forms no wake-up edge, so nothing is
// written; a timed-out condvar wait keeps BEGIN/TIMEOUT but not the re-acquisition.
TEST_F(Writer, Level1SkipsUncontendedLocksAndKeepsWaits) {
  SyncLevel edges(1);
  vprof_rt_emit_at(VPROF_REC_WAKE, 1, 1); // a stream exists even if nothing else is written
  std::mutex m;
  m.lock();
  m.unlock();
  std::mutex cm;
  std::condition_variable cv;
  {
    std::unique_lock<std::mutex> lock(cm);
    EXPECT_FALSE(cv.wait_for(lock, std::chrono::milliseconds(1), [] { return false; }));
  }
  std::timed_mutex tm;
  ASSERT_TRUE(tm.try_lock_for(std::chrono::milliseconds(1)));
  tm.unlock();
  cv.notify_one(); // nobody waits: not written
  Stream s = close_and_read();
  EXPECT_EQ(s.h.features & VPROF_FEATURE_SYNC_EDGES_ONLY, VPROF_FEATURE_SYNC_EDGES_ONLY);
  uint64_t mo = (uint64_t)(uintptr_t)m.native_handle();
  uint64_t to = (uint64_t)(uintptr_t)tm.native_handle();
  uint64_t cmo = (uint64_t)(uintptr_t)cm.native_handle();
  uint64_t co = (uint64_t)(uintptr_t)cv.native_handle();
  std::vector<unsigned> kinds;
  for (const Rec &r : s.recs) {
    EXPECT_NE(r.arg, mo);
    EXPECT_NE(r.arg, to);
    if (r.arg == cmo || r.arg == co)
      kinds.push_back(r.kind);
  }
  // (BEGIN TIMEOUT)+ and no acquisition; the final unlock is written (glibc re-locks a
  // woken waiter's mutex in the "waiters may exist" state), and so is the release at the
  // start of a second wait for the same reason; the first wait's release is not.
  ASSERT_GE(kinds.size(), 3u);
  EXPECT_EQ(kinds.front(), (unsigned)VPROF_REC_COND_WAIT_BEGIN);
  EXPECT_EQ(kinds.back(), (unsigned)VPROF_REC_LOCK_RELEASE);
  std::vector<unsigned> waits;
  for (unsigned k : kinds)
    if (k != VPROF_REC_LOCK_RELEASE)
      waits.push_back(k);
  ASSERT_EQ(waits.size() % 2, 0u);
  for (size_t i = 0; i < waits.size(); i += 2) {
    EXPECT_EQ(waits[i], (unsigned)VPROF_REC_COND_WAIT_BEGIN) << i;
    EXPECT_EQ(waits[i + 1], (unsigned)VPROF_REC_COND_WAIT_TIMEOUT) << i;
  }
}

TEST_F(Writer, ProbeHotPathWritesDepthAndSite) {
  {
    VPROF_PROBE_SCOPE(9);
  }
  Stream s = close_and_read();
  // the first record opened the stream: the opening's stall follows it as the runtime's own
  // frame, deeper than the probe's (docs/trace-format.md, "The profiler's frame")
  ASSERT_EQ(s.recs.size(), 4u);
  EXPECT_EQ(s.recs[1].kind, VPROF_REC_ENTER);
  EXPECT_EQ(s.recs[2].kind, VPROF_REC_EXIT);
  EXPECT_EQ(s.recs[1].arg & 0xffffffffu, VPROF_SITE_PROFILER);
  EXPECT_EQ(s.recs[1].arg, s.recs[2].arg);
  EXPECT_GT((int32_t)((uint32_t)(s.recs[1].arg >> 32) - (uint32_t)(s.recs[0].arg >> 32)), 0)
      << "deeper than the program's frame";
  EXPECT_LE(s.recs[0].ticks, s.recs[1].ticks);
  EXPECT_LT(s.recs[1].ticks, s.recs[2].ticks);
  EXPECT_LE(s.recs[2].ticks, s.recs[3].ticks);
  s.recs.erase(s.recs.begin() + 1, s.recs.begin() + 3);
  EXPECT_EQ(s.recs[0].kind, VPROF_REC_ENTER);
  EXPECT_EQ(s.recs[1].kind, VPROF_REC_EXIT);
  EXPECT_EQ(s.recs[0].arg, s.recs[1].arg);
  EXPECT_EQ(s.recs[0].arg & 0xffffffffu, 9u);
  EXPECT_EQ(s.recs[0].arg >> 32, (uint32_t)(0u - (uintptr_t)__builtin_frame_address(0)));
  EXPECT_LE(s.recs[0].ticks, s.recs[1].ticks);
}

} // namespace
