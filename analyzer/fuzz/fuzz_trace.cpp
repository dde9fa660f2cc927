// libFuzzer target for the trace reader (and, when built with VPROF_FUZZ_ANALYZE, the
// whole analysis): the input becomes a trace directory on tmpfs; any outcome other than
// success or a TraceError/AnalysisError is a bug. Build and run: analyzer/fuzz/run.sh.
#include <vprof/sched_format.h>

#include "vprof/trace_reader.hpp"
#ifdef VPROF_FUZZ_ANALYZE
#include "vprof/analyzer.hpp"
#endif

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

std::filesystem::path g_dir;

void remove_work_dir() {
  std::error_code ec;
  std::filesystem::remove_all(g_dir, ec);
}

std::filesystem::path work_dir() {
  if (g_dir.empty()) {
    std::filesystem::path base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
    g_dir = base / ("vprof-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(g_dir);
    std::atexit(remove_work_dir);
  }
  return g_dir;
}

void put(const std::filesystem::path &p, const std::uint8_t *data, std::size_t n) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(n));
}

} // namespace

// Input layout: byte 0 = number of streams (1..4, mod 4 + 1), and with bit 0x40 set and
// more than one stream, two hosts: the odd streams go to a second trace directory, opened
// together with the first (Trace::open of several directories, the clock alignment); then
// the rest is split evenly into that many stream files; a trailing part after the byte
// sequence "\n#labels\n" is <pid>.labels, after "\n#maps\n" is <pid>.maps, after
// "\n#sched\n" the kernel wake-up file's records behind a valid header (its first byte's bit
// 0: closed) in the first directory.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size < 1)
    return 0;
  const auto dir = work_dir() / "a", dir2 = work_dir() / "b";
  for (const auto &d : {dir, dir2}) {
    std::filesystem::create_directories(d);
    for (const auto &e : std::filesystem::directory_iterator(d))
      std::filesystem::remove(e.path());
  }
  std::string all(reinterpret_cast<const char *>(data + 1), size - 1);
  std::string maps, labels, sched;
  if (auto k = all.find("\n#sched\n"); k != std::string::npos) {
    sched = all.substr(k + 8);
    all.resize(k);
  }
  if (auto m = all.find("\n#maps\n"); m != std::string::npos) {
    maps = all.substr(m + 7);
    all.resize(m);
  }
  if (auto l = all.find("\n#labels\n"); l != std::string::npos) {
    labels = all.substr(l + 9);
    all.resize(l);
  }
  unsigned n = data[0] % 4 + 1;
  const bool two_hosts = (data[0] & 0x40) && n > 1;
  std::size_t part = all.size() / n;
  for (unsigned i = 0; i < n; ++i) {
    std::size_t len = i + 1 == n ? all.size() - part * i : part;
    put((two_hosts && i % 2 ? dir2 : dir) / ("1." + std::to_string(i) + ".vpt"),
        reinterpret_cast<const std::uint8_t *>(all.data()) + part * i, len);
  }
  if (!labels.empty())
    put(dir / "1.labels", reinterpret_cast<const std::uint8_t *>(labels.data()), labels.size());
  if (!maps.empty())
    put(dir / "1.maps", reinterpret_cast<const std::uint8_t *>(maps.data()), maps.size());
  if (!sched.empty()) {
    vprof_sched_header h;
    std::memset(&h, 0, sizeof h);
    std::memcpy(h.magic, VPROF_SCHED_MAGIC, VPROF_SCHED_MAGIC_SIZE);
    h.version = VPROF_SCHED_VERSION;
    h.header_size = VPROF_SCHED_HEADER_SIZE;
    h.record_size = VPROF_SCHED_RECORD_SIZE;
    h.flags = sched[0] & 1 ? VPROF_SCHED_CLOSED : 0;
    h.records = (sched.size() - 1) / VPROF_SCHED_RECORD_SIZE;
    std::string bytes(reinterpret_cast<const char *>(&h), sizeof h);
    bytes += sched.substr(1);
    put(dir / VPROF_SCHED_FILE_NAME, reinterpret_cast<const std::uint8_t *>(bytes.data()),
        bytes.size());
  }
  try {
    auto t = two_hosts ? vprof::trace::Trace::open(std::vector<std::filesystem::path>{dir, dir2})
                       : vprof::trace::Trace::open(dir);
    std::uint64_t sum = 0;
    for (const auto &s : t.streams())
      for (const auto &r : s.records())
        sum += t.run_ticks(s, r) + vprof_record_kind_of(&r);
    if (sum == 42)
      std::fputs("", stderr);
    static std::FILE *devnull = std::fopen("/dev/null", "w");
    vprof::trace::dump(dir, devnull);
#ifdef VPROF_FUZZ_ANALYZE
    vprof::analyzer::AnalyzeOptions opt;
    opt.bootstrap_samples = 5;
    auto res = vprof::analyzer::analyze_trace(t, nullptr, opt);
    (void)vprof::analyzer::render_text(res, {});
    (void)vprof::analyzer::render_json(res);
#endif
  } catch (const vprof::trace::TraceError &) {
#ifdef VPROF_FUZZ_ANALYZE
  } catch (const vprof::analyzer::AnalysisError &) {
#endif
  }
  return 0;
}
