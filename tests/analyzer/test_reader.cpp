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
  b.write(dir, /*window_records*/ 100);
  Trace t = Trace::open(dir);
  EXPECT_EQ(t.streams()[0].records().size(), 2u);
}

namespace {

// One thread of n ENTER records whose arg is their index, written with the given window.
fs::path counted_stream(const fs::path &dir, std::uint64_t n, std::uint64_t window) {
  TraceBuilder b(1);
  auto &th = b.thread(1);
  for (std::uint64_t i = 0; i < n; ++i)
    th.emit(VPROF_REC_ENTER, i, i);
  return b.write(dir, window)[0];
}

void expect_counted(const vprof::trace::Stream &s, std::uint64_t n) {
  ASSERT_EQ(s.records().size(), n);
  for (std::uint64_t i = 0; i < n; ++i)
    ASSERT_EQ(s.records()[i].arg, i) << "record " << i;
}

} // namespace

TEST(Reader, DataRegionThenWindowInWritingOrder) {
  auto dir = fresh_dir("regions");
  counted_stream(dir, 1000, 256); // 768 in the data region, 232 in the window
  Trace t = Trace::open(dir);
  const auto &s = t.streams()[0];
  EXPECT_EQ(s.info().committed_records, 768u);
  EXPECT_EQ(s.info().window_count, 232u);
  expect_counted(s, 1000);
  EXPECT_EQ(s.offset_of(0), 4096u + 4096u);
  EXPECT_EQ(s.offset_of(768), 4096u);
  // Released pages are read again from the file.
  s.release_pages(0, 1000);
  expect_counted(s, 1000);
}

// A stream as the drain leaves it: records [0, committed) in the data region, and the
// window a ring of `window` slots holding records from `window_base` on in slot
// i % window (`last` the newest record written; slots not yet reached are empty).
fs::path ring_stream(const fs::path &dir, std::uint64_t window, std::uint64_t committed,
                     std::uint64_t window_base, std::uint64_t last) {
  TraceBuilder b(1);
  b.thread(1).emit(VPROF_REC_ENTER, 0, 0);
  fs::path f = b.write(dir, window)[0];
  vprof_stream_header h;
  std::ifstream(f, std::ios::binary).read(reinterpret_cast<char *>(&h), sizeof h);
  h.committed_records = committed;
  h.window_base = window_base;
  std::vector<vprof_record> ring(window, vprof_record{0, 0}), data(committed);
  auto rec = [](std::uint64_t i) { return vprof_record{vprof_record_head(VPROF_REC_ENTER, i), i}; };
  for (std::uint64_t i = 0; i < committed; ++i)
    data[i] = rec(i);
  for (std::uint64_t i = window_base; i <= last; ++i)
    ring[i % window] = rec(i);
  std::ofstream o(f, std::ios::binary | std::ios::trunc);
  std::vector<char> pad(4096 - sizeof h, 0);
  o.write(reinterpret_cast<const char *>(&h), sizeof h);
  o.write(pad.data(), static_cast<std::streamsize>(pad.size()));
  o.write(reinterpret_cast<const char *>(ring.data()),
          static_cast<std::streamsize>(window * sizeof(vprof_record)));
  o.write(reinterpret_cast<const char *>(data.data()),
          static_cast<std::streamsize>(committed * sizeof(vprof_record)));
  return f;
}

TEST(Reader, TheWindowIsARingReadFromTheSlotAfterTheDataRegion) {
  auto dir = fresh_dir("ring");
  // three halves of 256 appended; the newest records from slot 256 on, wrapped to slot 0
  ring_stream(dir, 512, 768, 768, 1100);
  Trace t = Trace::open(dir);
  const auto &s = t.streams()[0];
  EXPECT_EQ(s.info().window_count, 1101u - 768u);
  expect_counted(s, 1101);
  EXPECT_EQ(s.offset_of(768), 4096u + 256u * 16);
  EXPECT_EQ(s.offset_of(1024), 4096u);
  s.release_pages(0, 1101);
  expect_counted(s, 1101);
}

TEST(Reader, AHalfAppendedButNotYetZeroedIsReadOnce) {
  auto dir = fresh_dir("ring-killed");
  // killed after records 512..767 were appended and counted, before their half (slots
  // 0..255, still holding them) was zeroed: the ring is read only up to window_base + 512
  ring_stream(dir, 512, 768, 512, 900);
  Trace t = Trace::open(dir);
  EXPECT_EQ(t.streams()[0].info().window_count, 901u - 768u);
  expect_counted(t.streams()[0], 901);
}

TEST(Reader, AWindowBaseMoreThanAWindowBehindIsDiagnosed) {
  auto dir = fresh_dir("ring-bad");
  fs::path f = ring_stream(dir, 512, 1024, 256, 1024);
  auto e = expect_error([&] { Trace::open(dir); });
  EXPECT_EQ(e.file(), f);
  EXPECT_EQ(e.offset(), 144u);
  EXPECT_NE(e.problem().find("more than a window behind"), std::string::npos) << e.problem();
}

TEST(Reader, UnalignedRegionsAreCopied) {
  auto dir = fresh_dir("unaligned");
  counted_stream(dir, 10, 3); // 9 in the data region, 1 in the window
  Trace t = Trace::open(dir);
  EXPECT_EQ(t.streams()[0].info().window_count, 1u);
  expect_counted(t.streams()[0], 10);
  t.streams()[0].release_pages(0, 10); // a copy: nothing to release, nothing lost
  expect_counted(t.streams()[0], 10);
}

TEST(Reader, OnlyTheDataRegionOrOnlyTheWindow) {
  auto dir = fresh_dir("one-region");
  auto f = counted_stream(dir, 512, 256); // 256 + a full window
  {
    Trace t = Trace::open(dir);
    expect_counted(t.streams()[0], 512);
  }
  std::uint64_t zero = 0;
  patch(f, 136, &zero, 8); // as if nothing had been flushed
  patch(f, 144, &zero, 8);
  {
    Trace t = Trace::open(dir);
    ASSERT_EQ(t.streams()[0].records().size(), 256u);
    EXPECT_EQ(t.streams()[0].records()[0].arg, 256u);
  }
  std::uint64_t head = 0; // window emptied: data only
  patch(f, 4096, &head, 8);
  std::uint64_t committed = 256;
  patch(f, 136, &committed, 8);
  patch(f, 144, &committed, 8);
  {
    Trace t = Trace::open(dir);
    expect_counted(t.streams()[0], 256);
  }
}

TEST(Reader, KilledWhileTheWindowWasReset) {
  // committed_records already counts the window's records, window_base does not yet: the
  // window (flushed, maybe half zeroed) must not be read a second time.
  auto dir = fresh_dir("killed-reset");
  auto f = counted_stream(dir, 600, 256); // 512 committed, 88 in the window
  std::uint64_t base = 256;
  patch(f, 144, &base, 8);
  Trace t = Trace::open(dir);
  expect_counted(t.streams()[0], 512);
}

TEST(Reader, CorruptDataRegion) {
  auto dir = fresh_dir("corrupt-data");
  auto f = counted_stream(dir, 600, 256);
  std::uint64_t head = 0;
  patch(f, 8192 + 16 * 5, &head, 8);
  auto e = expect_error([&] { Trace::open(dir); });
  EXPECT_EQ(e.offset(), 8192u + 16 * 5);
  EXPECT_NE(e.problem().find("empty record inside the data region"), std::string::npos);
  fs::resize_file(f, 8192 + 16 * 100); // truncated: 512 committed, room for 100
  e = expect_error([&] { Trace::open(dir); });
  EXPECT_EQ(e.offset(), 136u);
  EXPECT_NE(e.problem().find("truncated"), std::string::npos);
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

  v = 1; // the layout before the window (session 2 traces)
  patch(f, 8, &v, 4);
  e = expect_error([&] { Trace::open(dir); });
  EXPECT_NE(e.problem().find("unsupported version 1"), std::string::npos);
  v = VPROF_TRACE_VERSION;
  patch(f, 8, &v, 4);

  std::uint64_t bad = 1000;
  patch(f, 88, &bad, 8);
  e = expect_error([&] { Trace::open(dir); });
  EXPECT_EQ(e.offset(), 88u);
  EXPECT_NE(e.problem().find("window_records 1000"), std::string::npos);
  std::uint64_t good = 256;
  patch(f, 88, &good, 8);

  bad = 100; // inside the header
  patch(f, 120, &bad, 8);
  e = expect_error([&] { Trace::open(dir); });
  EXPECT_EQ(e.offset(), 120u);
  good = 4096;
  patch(f, 120, &good, 8);

  bad = 4096 + 16; // overlaps the window
  patch(f, 128, &bad, 8);
  e = expect_error([&] { Trace::open(dir); });
  EXPECT_EQ(e.offset(), 128u);
  good = 4096 + 256 * 16;
  patch(f, 128, &good, 8);

  bad = 5; // the file has no data region
  patch(f, 136, &bad, 8);
  e = expect_error([&] { Trace::open(dir); });
  EXPECT_EQ(e.offset(), 136u);
  EXPECT_NE(e.problem().find("truncated"), std::string::npos);
  good = 0;
  patch(f, 136, &good, 8);

  std::uint64_t head = vprof_record_head(77, 1);
  patch(f, 4096 + 16, &head, 8);
  e = expect_error([&] { Trace::open(dir); });
  EXPECT_EQ(e.offset(), 4096u + 16u);
  EXPECT_NE(e.problem().find("unknown kind 77"), std::string::npos);

  fs::resize_file(f, 100);
  e = expect_error([&] { Trace::open(dir); });
  EXPECT_NE(e.problem().find("truncated header"), std::string::npos);

  vprof::trace::OpenOptions skip;
  skip.skip_bad_streams = true;
  EXPECT_THROW(Trace::open(dir, skip), TraceError); // nothing valid left
  EXPECT_THROW(Trace::open(dir / "missing"), TraceError);
  EXPECT_THROW(vprof::trace::parse_labels("abc\n", "l"), TraceError);
  EXPECT_EQ(vprof::trace::parse_cpu("1500\t250\n", "c"), 1750u);
  EXPECT_THROW(vprof::trace::parse_cpu("1500\n", "c"), TraceError);
  EXPECT_THROW(vprof::trace::parse_cpu("1 2 3\n", "c"), TraceError);
}
