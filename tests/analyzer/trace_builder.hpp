// Test-only trace builder: writes trace directories byte for byte in the format of
// runtime/include/vprof/trace_format.h with exact, injected timestamps (used until and
// beside the runtime's own writer) so analyzer tests know every decomposition exactly.
#pragma once

#include <vprof/trace_format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace vprof::testing {

class TraceBuilder {
public:
  struct Thread {
    std::uint32_t tid = 0;
    std::vector<vprof_record> recs;
    std::uint64_t base = 0;
    std::uint64_t dropped = 0; // the header's count of records lost at the size limit
    // ticks are relative to the process base (the builder adds base_ticks).
    Thread &emit(unsigned kind, std::uint64_t arg, std::uint64_t ticks) {
      vprof_record r;
      r.head = vprof_record_head(kind, base + ticks);
      r.arg = arg;
      recs.push_back(r);
      return *this;
    }
    // depth defaults to the stack depth implied by nesting (larger = deeper).
    Thread &enter(std::uint32_t site, std::uint64_t t, std::uint32_t depth) {
      return emit(VPROF_REC_ENTER, site | (std::uint64_t(depth) << 32), t);
    }
    Thread &exit(std::uint32_t site, std::uint64_t t, std::uint32_t depth) {
      return emit(VPROF_REC_EXIT, site | (std::uint64_t(depth) << 32), t);
    }
  };

  TraceBuilder(std::uint32_t pid, std::uint64_t base_ticks = 1000000,
               std::uint64_t hz = 1000000000ull, std::uint32_t clock = VPROF_CLOCK_MONOTONIC)
      : pid_(pid), base_(base_ticks), hz_(hz), clock_(clock) {}

  Thread &thread(std::uint32_t tid) {
    for (auto &t : threads_)
      if (t.tid == tid)
        return t;
    threads_.push_back(Thread{tid, {}, base_});
    return threads_.back();
  }
  void label(std::uint32_t id, const std::string &text) { labels_[id] = text; }
  void maps(const std::string &text) { maps_ = text; }
  // Header feature bits (default: frame depths present, as libvprof_rt writes them).
  void features(std::uint64_t f) { features_ = f; }
  // The clock samples of every stream header: CLOCK_REALTIME at the base, and an end pair
  // (ticks relative to the base; none while end_realtime_ns is 0).
  // CLOCK_MONOTONIC at the base (the kernel wake-up file's clock; default 0).
  void monotonic(std::uint64_t base_monotonic_ns) { base_mono_ = base_monotonic_ns; }
  void realtime(std::uint64_t base_realtime_ns, std::uint64_t end_ticks = 0,
                std::uint64_t end_realtime_ns = 0) {
    base_real_ = base_realtime_ns;
    end_ticks_ = end_ticks;
    end_real_ = end_realtime_ns;
  }

  // Writes <pid>.<seq>.vpt for every thread as libvprof_rt leaves it (a header page, a
  // window of `window_records` slots at offset 4096 holding the newest records, all
  // earlier records in the data region after it), plus .labels and .maps when given.
  // The default window (4 KiB) keeps the regions page-aligned; a window whose size is not
  // a multiple of the page size gives layouts the reader must copy. Returns the paths.
  std::vector<std::filesystem::path> write(const std::filesystem::path &dir,
                                           std::uint64_t window_records = 256) const {
    std::filesystem::create_directories(dir);
    std::vector<std::filesystem::path> out;
    std::uint32_t seq = 0;
    for (const auto &t : threads_) {
      vprof_stream_header h;
      std::memset(&h, 0, sizeof h);
      std::memcpy(h.magic, VPROF_TRACE_MAGIC, VPROF_TRACE_MAGIC_SIZE);
      h.version = VPROF_TRACE_VERSION;
      h.header_size = VPROF_STREAM_HEADER_SIZE;
      h.record_size = VPROF_RECORD_SIZE;
      h.clock_kind = clock_;
      h.ticks_per_second = hz_;
      h.base_ticks = base_;
      h.base_realtime_ns = base_real_;
      h.base_monotonic_ns = base_mono_;
      if (end_real_) {
        h.end_ticks = base_ + end_ticks_;
        h.end_realtime_ns = end_real_;
      }
      h.pid = pid_;
      h.tid = t.tid;
      h.stream_seq = seq;
      const std::uint64_t n = t.recs.size(), w = window_records;
      const std::uint64_t committed = n ? (n - 1) / w * w : 0;
      h.window_records = w;
      h.window_offset = 4096;
      h.data_offset = 4096 + w * sizeof(vprof_record);
      h.committed_records = committed;
      h.window_base = committed;
      h.features = features_;
      h.dropped = t.dropped;
      std::snprintf(h.thread_name, sizeof h.thread_name, "t%u", t.tid);
      auto path = dir / (std::to_string(pid_) + "." + std::to_string(seq) + ".vpt");
      std::vector<vprof_record> window(w, vprof_record{0, 0});
      std::copy(t.recs.begin() + static_cast<std::ptrdiff_t>(committed), t.recs.end(),
                window.begin());
      std::vector<char> pad(4096 - sizeof h, 0);
      std::ofstream f(path, std::ios::binary | std::ios::trunc);
      f.write(reinterpret_cast<const char *>(&h), sizeof h);
      f.write(pad.data(), static_cast<std::streamsize>(pad.size()));
      f.write(reinterpret_cast<const char *>(window.data()),
              static_cast<std::streamsize>(w * sizeof(vprof_record)));
      f.write(reinterpret_cast<const char *>(t.recs.data()),
              static_cast<std::streamsize>(committed * sizeof(vprof_record)));
      if (!f)
        throw std::runtime_error("cannot write " + path.string());
      out.push_back(path);
      ++seq;
    }
    if (!labels_.empty()) {
      std::ofstream f(dir / (std::to_string(pid_) + ".labels"));
      for (const auto &[id, text] : labels_)
        f << id << '\t' << text << '\n';
    }
    if (!maps_.empty()) {
      std::ofstream f(dir / (std::to_string(pid_) + ".maps"));
      f << maps_;
    }
    return out;
  }

private:
  std::uint32_t pid_;
  std::uint64_t base_, hz_;
  std::uint32_t clock_;
  std::vector<Thread> threads_;
  std::map<std::uint32_t, std::string> labels_;
  std::string maps_;
  std::uint64_t features_ = VPROF_FEATURE_SYNC_INTERPOSE | VPROF_FEATURE_FRAME_DEPTH;
  std::uint64_t base_real_ = 0, end_ticks_ = 0, end_real_ = 0, base_mono_ = 0;
};

} // namespace vprof::testing
