// Trace reader unit tests: round trip through the test builder, validation errors with
// file and offset, killed-process streams, labels and maps.
#include "trace_builder.hpp"
#include "vprof/trace_reader.hpp"

#include <gtest/gtest.h>

#include <fstream>

namespace fs = std::filesystem;
using vprof::testing::TraceBuilder;
using vprof::trace::Trace;
using vprof::trace::TraceError;

namespace {

fs::path fresh_dir(const std::string &name) {
  fs::path d =
      fs::temp_directory_path() / ("vprof-reader-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void patch(const fs::path &file, std::uint64_t off, const void *bytes, std::size_t n) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(off));
  f.write(static_cast<const char *>(bytes), static_cast<std::streamsize>(n));
}

template <class F> TraceError expect_error(F &&f) {
  try {
    f();
  } catch (const TraceError &e) {
    return e;
  }
  ADD_FAILURE() << "no TraceError";
  return TraceError("", 0, "");
}

} // namespace

TEST(Reader, RoundTripWithLabelsAndClock) {
  auto dir = fresh_dir("roundtrip");
  TraceBuilder b(42, /*base*/ 5000, /*hz*/ 2000000000ull, VPROF_CLOCK_TSC);
  b.thread(7)
      .emit(VPROF_REC_INTERVAL_BEGIN, 1, 10)
      .emit(VPROF_REC_LABEL, 3, 10)
      .enter(5, 20, 1)
      .exit(5, 60, 1)
      .emit(VPROF_REC_INTERVAL_END, 1, 100);
  b.thread(8).emit(VPROF_REC_LOCK_RELEASE, 0xdead, 30);
  b.label(3, "NewOrder");
  b.write(dir);
  Trace t = Trace::open(dir);
  ASSERT_EQ(t.streams().size(), 2u);
  ASSERT_EQ(t.processes().size(), 1u);
  EXPECT_EQ(t.processes()[0].labels.at(3), "NewOrder");
  const auto &s = t.streams()[0];
  EXPECT_EQ(s.info().tid, 7u);
  ASSERT_EQ(s.records().size(), 5u);
  EXPECT_EQ(vprof_record_kind_of(&s.records()[2]), unsigned(VPROF_REC_ENTER));
  EXPECT_EQ(s.records()[2].arg & 0xffffffffu, 5u);
  EXPECT_EQ(s.relative_ticks(s.records()[4]), 100u);
  EXPECT_EQ(t.run_ticks(s, s.records()[4]), 100u);
  EXPECT_DOUBLE_EQ(t.ticks_to_ns(100), 50.0);
}

TEST(Reader, WrapOf56BitTicks) {
  auto dir = fresh_dir("wrap");
  std::uint64_t base = VPROF_TICKS_MASK - 10; // the low 56 bits wrap during the run
  TraceBuilder b(1, base);
  b.thread(1).emit(VPROF_REC_INTERVAL_BEGIN, 1, 5).emit(VPROF_REC_INTERVAL_END, 1, 25);
  b.write(dir);
  Trace t = Trace::open(dir);
  const auto &s = t.streams()[0];
  EXPECT_EQ(s.relative_ticks(s.records()[0]), 5u);
  EXPECT_EQ(s.relative_ticks(s.records()[1]), 25u);
}

TEST(Reader, StreamEndsAtFirstZeroRecord) {
  auto dir = fresh_dir("killed");
  TraceBuilder b(1);
  b.thread(1).emit(VPROF_REC_INTERVAL_BEGIN, 1, 5).emit(VPROF_REC_ENTER, 1, 6);
  b.write(dir, /*spare*/ 100);
  Trace t = Trace::open(dir);
  EXPECT_EQ(t.streams()[0].records().size(), 2u);
}

TEST(Reader, MultiProcessClockAlignment) {
  auto dir = fresh_dir("multiproc");
  TraceBuilder a(10, 1000), b(11, 1500);
  a.thread(10).emit(VPROF_REC_INTERVAL_BEGIN, 1, 0);
  b.thread(11).emit(VPROF_REC_INTERVAL_END, 1, 0);
  a.write(dir);
  b.write(dir);
  Trace t = Trace::open(dir);
  ASSERT_EQ(t.processes().size(), 2u);
  EXPECT_EQ(t.run_base_ticks(), 1000u);
  EXPECT_EQ(t.run_ticks(t.streams()[1], t.streams()[1].records()[0]), 500u);
}

TEST(Reader, SharedMappingKeys) {
  auto maps = vprof::trace::parse_maps(
      "7f0000000000-7f0000002000 rw-s 00001000 00:05 12345 /dev/shm/x\n"
      "7f0000003000-7f0000004000 rw-p 00000000 00:00 0 \n"
      "7f0000005000-7f0000006000 rw-s 00000000 08:01 99 /dev/zero (deleted)\n",
      "m");
  ASSERT_EQ(maps.size(), 2u);
  vprof::trace::ProcessInfo p;
  p.shared = maps;
  std::uint64_t dev, ino, off;
  ASSERT_TRUE(p.shared_key(0x7f0000000010, dev, ino, off));
  EXPECT_EQ(ino, 12345u);
  EXPECT_EQ(off, 0x1010u);
  EXPECT_EQ(dev, 5u);
  EXPECT_FALSE(p.shared_key(0x7f0000003010, dev, ino, off));
  EXPECT_FALSE(p.shared_key(0x7f0000002000, dev, ino, off));
}

TEST(Reader, Errors) {
  auto dir = fresh_dir("errors");
  TraceBuilder b(1);
  b.thread(1).emit(VPROF_REC_INTERVAL_BEGIN, 1, 5).emit(VPROF_REC_INTERVAL_END, 1, 6);
  auto files = b.write(dir);
  const fs::path f = files[0];

  patch(f, 0, "XXXX", 4);
  auto e = expect_error([&] { Trace::open(dir); });
  EXPECT_EQ(e.file(), f);
  EXPECT_EQ(e.offset(), 0u);
  EXPECT_NE(e.problem().find("magic"), std::string::npos);
  patch(f, 0, "VPRO", 4);

  std::uint32_t v = 9;
  patch(f, 8, &v, 4);
  e = expect_error([&] { Trace::open(dir); });
  EXPECT_EQ(e.offset(), 8u);
  v = VPROF_TRACE_VERSION;
  patch(f, 8, &v, 4);

  std::uint64_t bad = 1000;
  patch(f, 88, &bad, 8);
  e = expect_error([&] { Trace::open(dir); });
  EXPECT_EQ(e.offset(), 88u);
  EXPECT_NE(e.problem().find("capacity"), std::string::npos);
  std::uint64_t good = 6;
  patch(f, 88, &good, 8);

  std::uint64_t head = vprof_record_head(77, 1);
  patch(f, 256 + 16, &head, 8);
  e = expect_error([&] { Trace::open(dir); });
  EXPECT_EQ(e.offset(), 256u + 16u);
  EXPECT_NE(e.problem().find("unknown kind 77"), std::string::npos);

  fs::resize_file(f, 100);
  e = expect_error([&] { Trace::open(dir); });
  EXPECT_NE(e.problem().find("truncated header"), std::string::npos);

  vprof::trace::OpenOptions skip;
  skip.skip_bad_streams = true;
  EXPECT_THROW(Trace::open(dir, skip), TraceError); // nothing valid left
  EXPECT_THROW(Trace::open(dir / "missing"), TraceError);
  EXPECT_THROW(vprof::trace::parse_labels("abc\n", "l"), TraceError);
}
