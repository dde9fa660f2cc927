// Corpus regression for the trace fuzzer: every input of tests/analyzer/fuzz_corpus (seeds
// plus inputs found by libFuzzer runs) goes through the reader and the whole analysis;
// each must end in success or a clean TraceError/AnalysisError.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size);

TEST(FuzzCorpus, EveryInputEndsCleanly) {
  std::filesystem::path dir = VPROF_FUZZ_CORPUS;
  int n = 0;
  for (const auto &e : std::filesystem::directory_iterator(dir)) {
    std::ifstream f(e.path(), std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    SCOPED_TRACE(e.path().string());
    EXPECT_EQ(
        LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t *>(bytes.data()), bytes.size()),
        0);
    ++n;
  }
  EXPECT_GE(n, 3);
}
