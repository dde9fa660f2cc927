// The runtime's per-thread stream cap as the driver sets it (stream_cap_mb, passed to the
// workload as VPROF_MAX_THREAD_MB) and the one line a run that hit it prints.
#pragma once

#include "config.hpp"

#include <cstdint>
#include <filesystem>
#include <string>

namespace vprof::driver {

// Records the runtime dropped at the cap, from the stream headers of a trace directory.
struct StreamDrops {
  std::uint64_t records = 0; // dropped records, summed over the streams
  std::uint64_t streams = 0; // streams that dropped any
  // the most any of those streams holds (data region + window), in bytes: near the cap
  // when the cap stopped them
  std::uint64_t stopped_bytes = 0;
};

// Reads the `dropped` field of every <pid>.<seq>.vpt header in `dir` (a file too short or
// without the magic is skipped: the analyzer names it). Cost: one 256-byte read per stream.
StreamDrops count_stream_drops(const std::filesystem::path &dir);

// The value of VPROF_MAX_THREAD_MB the workload gets.
std::string stream_cap_env(const Config &cfg);

// "stream cap: N records dropped in K streams (stream_cap_mb = 256); raise stream_cap_mb in
// vprof.toml or shorten the workload", naming where the value came from when not the file.
std::string stream_cap_line(const StreamDrops &drops, const Config &cfg);

} // namespace vprof::driver
