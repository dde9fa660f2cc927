// libFuzzer target: the fuzzer's bytes choose a multi-thread timeline (the generator of
// tests/analyzer/timeline_gen.hpp: probes, hand-offs, waits, attach/detach, several threads
// on one interval, equal timestamps); the engine must end on it (libFuzzer's -timeout
// catches a hang), every interval's path must sum to its latency and every variance tree
// must add up. Built and run by analyzer/fuzz/run.sh SECONDS timeline.
#include "engine.hpp"
#include "timeline_gen.hpp"
#include "vprof/analyzer.hpp"
#include "vprof/trace_reader.hpp"

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size < 2)
    return 0;
  std::size_t pos = 0;
  auto pick = [&](int n) { return pos < size ? data[pos++] % n : 0; };
  auto b = vprof::testing::make_timeline(pick, static_cast<int>(std::min<std::size_t>(size, 600)));
  static const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                           ("vprof-fuzz-timeline-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  b.write(dir);
  auto trace = vprof::trace::Trace::open(dir);
  auto eo = vprof::analyzer::detail::run_engine(trace, {});
  if (eo.path_sum_mismatches != 0) {
    std::fprintf(stderr, "a critical path does not sum to its interval's latency\n");
    std::abort();
  }
  if (eo.intervals.size() >= 2) {
    vprof::analyzer::AnalyzeOptions ao;
    ao.bootstrap_samples = 0;
    auto res = vprof::analyzer::analyze_trace(trace, nullptr, ao);
    for (const auto &g : res.groups)
      if (g.max_residual > 1e-9) {
        std::fprintf(stderr, "variance tree residual %g\n", g.max_residual);
        std::abort();
      }
  }
  return 0;
}
