// stacks.vpk (runtime/include/vprof/stacks_format.h) through read_stacks: a closed file's
// stacks and samples with their ids resolved, a killed recorder's cut tail, a sample whose
// stack the kernel lost, and corrupt files refused with the offset of the problem.
#include "vprof/stacks_reader.hpp"
#include "vprof/trace_reader.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <unistd.h>

namespace tr = vprof::trace;

namespace {

struct StacksBuilder {
  vprof_stacks_header h{};
  std::vector<std::uint8_t> body;
  std::uint64_t samples = 0, stacks = 0;
  std::vector<std::filesystem::path> written;

  ~StacksBuilder() {
    std::error_code ec;
    for (const auto &p : written)
      std::filesystem::remove(p, ec);
  }
  StacksBuilder() {
    std::memcpy(h.magic, VPROF_STACKS_MAGIC, VPROF_STACKS_MAGIC_SIZE);
    h.version = VPROF_STACKS_VERSION;
    h.header_size = VPROF_STACKS_HEADER_SIZE;
    h.root_pid = 100;
    h.sample_hz = 997;
  }
  void put(const void *p, std::size_t n) {
    const auto *b = static_cast<const std::uint8_t *>(p);
    body.insert(body.end(), b, b + n);
  }
  StacksBuilder &stack(std::uint64_t id, std::vector<std::uint64_t> pc, std::uint64_t sp = 0) {
    vprof_stacks_stack s{};
    s.entry.size = static_cast<std::uint32_t>(VPROF_STACKS_STACK_SIZE + 8 * pc.size());
    s.entry.kind = VPROF_STACKS_STACK;
    s.id = id;
    s.frames = static_cast<std::uint32_t>(pc.size());
    s.sp_word = sp;
    put(&s, sizeof s);
    put(pc.data(), 8 * pc.size());
    ++stacks;
    return *this;
  }
  StacksBuilder &sample(std::uint64_t t, std::uint64_t id, std::uint8_t what,
                        std::uint32_t tid = 101) {
    vprof_stacks_sample s{};
    s.entry.size = VPROF_STACKS_SAMPLE_SIZE;
    s.entry.kind = VPROF_STACKS_SAMPLE;
    s.time_ns = t;
    s.stack = id;
    s.tid = tid;
    s.pid = 100;
    s.what = what;
    put(&s, sizeof s);
    ++samples;
    return *this;
  }
  std::filesystem::path write(bool closed, std::size_t cut = 0) {
    if (closed) {
      h.flags = VPROF_STACKS_CLOSED;
      h.samples = samples;
      h.stacks = stacks;
    }
    const auto p = std::filesystem::temp_directory_path() /
                   ("vprof-stacks-" + std::to_string(::getpid()) + "-" + std::to_string(n_++));
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char *>(&h), sizeof h);
    f.write(reinterpret_cast<const char *>(body.data()),
            static_cast<std::streamsize>(body.size() - cut));
    written.push_back(p);
    return p;
  }
  static inline int n_ = 0;
};

std::uint64_t refused_at(const std::filesystem::path &p, const std::string &problem) {
  try {
    tr::read_stacks(p);
  } catch (const tr::TraceError &e) {
    EXPECT_NE(e.problem().find(problem), std::string::npos) << e.problem();
    return e.offset();
  }
  ADD_FAILURE() << p << ": not refused (" << problem << ")";
  return 0;
}

} // namespace

TEST(StacksReader, SamplesResolveTheirStacksWhateverTheOrder) {
  StacksBuilder b;
  b.sample(10, 0xaa, VPROF_STACKS_SLEEP) // before its STACK: another CPU's ring came first
      .stack(0xaa, {0x1000, 0x2000}, 0x1500)
      .stack(0xbb, {0x3000})
      .sample(20, 0xbb, VPROF_STACKS_ONCPU)
      .sample(30, 0xaa, VPROF_STACKS_WAKER);
  const auto f = tr::read_stacks(b.write(true));
  EXPECT_TRUE(f.warning.empty()) << f.warning;
  EXPECT_TRUE(f.info.closed);
  EXPECT_EQ(f.info.sample_hz, 997u);
  ASSERT_EQ(f.stacks.size(), 2u);
  EXPECT_EQ(f.stacks[0].pc, (std::vector<std::uint64_t>{0x1000, 0x2000}));
  EXPECT_EQ(f.stacks[0].sp_word, 0x1500u);
  ASSERT_EQ(f.samples.size(), 3u);
  EXPECT_EQ(f.samples[0].stack, 0u);
  EXPECT_EQ(f.samples[1].stack, 1u);
  EXPECT_EQ(f.samples[2].what, VPROF_STACKS_WAKER);
  EXPECT_EQ(f.info.unresolved, 0u);
}

TEST(StacksReader, AKilledRecordersCutTailIsReadUpToItsLastWholeEntry) {
  StacksBuilder b;
  b.stack(0xaa, {0x1000}).sample(10, 0xaa, VPROF_STACKS_ONCPU).sample(20, 0xaa, VPROF_STACKS_ONCPU);
  const auto f = tr::read_stacks(b.write(false, 12));
  EXPECT_FALSE(f.info.closed);
  EXPECT_EQ(f.samples.size(), 1u);
  EXPECT_NE(f.warning.find("not closed"), std::string::npos) << f.warning;
}

TEST(StacksReader, ASampleWhoseStackTheKernelLostIsCountedAndDropped) {
  StacksBuilder b;
  b.stack(0xaa, {0x1000}).sample(10, 0xaa, VPROF_STACKS_ONCPU).sample(20, 0xcc, VPROF_STACKS_SLEEP);
  const auto f = tr::read_stacks(b.write(true));
  EXPECT_EQ(f.samples.size(), 1u);
  EXPECT_EQ(f.info.unresolved, 1u);
}

TEST(StacksReader, CorruptFilesAreRefusedWithTheOffset) {
  {
    StacksBuilder b;
    b.stack(0xaa, {0x1000}).stack(0xaa, {0x2000});
    EXPECT_EQ(refused_at(b.write(true), "defined twice"), 128u + 40u + 8u);
  }
  {
    StacksBuilder b;
    b.sample(10, 0xaa, 9);
    EXPECT_EQ(refused_at(b.write(true), "unknown kind 9"), 128u + 36u);
  }
  {
    StacksBuilder b;
    b.stack(0xaa, {0x1000});
    b.body[4] = 7; // the entry's kind
    EXPECT_EQ(refused_at(b.write(true), "entry of unknown kind 7"), 132u);
  }
  {
    StacksBuilder b;
    b.stack(0xaa, {0x1000}).sample(10, 0xaa, VPROF_STACKS_ONCPU);
    EXPECT_EQ(refused_at(b.write(true, 8), "cut by the end"), 128u + 40u);
  }
  {
    StacksBuilder b;
    b.h.version = 9;
    refused_at(b.write(true), "unsupported version 9");
  }
  {
    StacksBuilder b;
    b.stack(0xaa, {0x1000});
    const auto p = b.write(true);
    b.h.samples = 0;
    b.h.stacks = 0;
    std::fstream f(p, std::ios::binary | std::ios::in | std::ios::out);
    b.h.flags = VPROF_STACKS_CLOSED;
    f.write(reinterpret_cast<const char *>(&b.h), sizeof b.h);
    f.close();
    refused_at(p, "more than its closed header counts");
  }
}
