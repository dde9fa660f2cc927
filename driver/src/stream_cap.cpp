// Counting the records a run dropped at the stream cap, and saying which limit it was.
#include "stream_cap.hpp"

#include "vprof/trace_format.h"

#include <algorithm>
#include <cstring>
#include <fstream>

namespace vprof::driver {
namespace fs = std::filesystem;

StreamDrops count_stream_drops(const fs::path &dir) {
  StreamDrops d;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".vpt")
      continue;
    std::ifstream in(e.path(), std::ios::binary);
    vprof_stream_header h;
    if (!in.read(reinterpret_cast<char *>(&h), sizeof h) ||
        std::memcmp(h.magic, VPROF_TRACE_MAGIC, VPROF_TRACE_MAGIC_SIZE) != 0)
      continue;
    if (h.dropped > 0) {
      d.records += h.dropped;
      ++d.streams;
      d.stopped_bytes = std::max<std::uint64_t>(
          d.stopped_bytes, (h.committed_records + h.window_records) * VPROF_RECORD_SIZE);
    }
  }
  return d;
}

std::string stream_cap_env(const Config &cfg) { return std::to_string(cfg.stream_cap_mb); }

std::string stream_cap_line(const StreamDrops &drops, const Config &cfg) {
  std::string line = "stream cap: " + std::to_string(drops.records) + " records dropped in " +
                     std::to_string(drops.streams) + " stream" + (drops.streams == 1 ? "" : "s") +
                     " (stream_cap_mb = " + std::to_string(cfg.stream_cap_mb);
  if (!cfg.stream_cap_from.empty())
    line += ", from " + cfg.stream_cap_from;
  line += "); raise stream_cap_mb in vprof.toml or shorten the workload";
  if (cfg.stream_cap_from.rfind("VPROF_MAX_THREAD_MB", 0) == 0)
    line += " (VPROF_MAX_THREAD_MB in vprof's environment wins over the key: raise or unset it)";
  // a stream stops within one window of the cap; far below it, another limit stopped it
  const std::uint64_t cap = cfg.stream_cap_mb << 20;
  if (cap == 0 || drops.stopped_bytes < cap / 2)
    line += "; but the streams stopped at " + std::to_string((drops.stopped_bytes + 1023) >> 10) +
            " KiB, below that cap: does the workload set VPROF_MAX_THREAD_MB itself, or did the "
            "disk fill up?";
  return line;
}

} // namespace vprof::driver
