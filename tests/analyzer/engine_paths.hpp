// Test helpers for the critical-path engine: a fresh trace directory, a node's path as text
// ("/s1/wait:mutex/s5"), an interval's self time per node path, and a run that requires
// exact paths (no sum mismatch, no inexact split).
#pragma once

#include "engine.hpp"
#include "vprof/trace_reader.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <unistd.h>

namespace vprof::testing {

inline std::filesystem::path fresh_engine_dir(const std::string &suite, const std::string &name) {
  auto d = std::filesystem::temp_directory_path() /
           ("vprof-" + suite + "-test-" + std::to_string(::getpid())) / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

inline std::string path_of(const analyzer::detail::EngineOutput &eo, std::uint32_t n) {
  using namespace analyzer::detail;
  if (n == 0)
    return "/";
  std::string p;
  while (n != 0) {
    const auto &d = eo.nodes[n];
    std::string part;
    if (d.label == kLabelUntracked)
      part = "untracked";
    else if (d.label >= kLabelWaitBase)
      part = std::string("wait:") + wait_kind_name(unsigned(d.label - kLabelWaitBase));
    else
      part = "s" + std::to_string(d.label);
    p = "/" + part + p;
    n = d.parent;
  }
  return p;
}

using Times = std::map<std::string, std::int64_t>;

// Self time per node path of interval i.
inline Times self_times(const analyzer::detail::EngineOutput &eo, std::size_t i) {
  Times m;
  const auto &r = eo.intervals.at(i);
  for (std::uint32_t k = 0; k < r.times_n; ++k)
    m[path_of(eo, eo.times[r.times_off + k].node)] += eo.times[r.times_off + k].ticks;
  return m;
}

inline analyzer::detail::EngineOutput run_exact(const std::filesystem::path &dir,
                                                const analyzer::detail::EngineOptions &opt = {}) {
  auto t = trace::Trace::open(dir);
  auto eo = analyzer::detail::run_engine(t, opt);
  EXPECT_EQ(eo.path_sum_mismatches, 0u);
  EXPECT_EQ(eo.inexact_splits, 0u);
  return eo;
}

} // namespace vprof::testing
