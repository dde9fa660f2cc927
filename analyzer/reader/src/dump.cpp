// Text dump of a trace (vprof-dump, `vprof dump`): one line per record with pid, tid,
// ns since the run's start, kind name and decoded arg.
#include "vprof/trace_reader.hpp"

#include <cinttypes>
#include <cstdio>

namespace vprof::trace {
namespace {

void print_arg(std::FILE *out, const ProcessInfo *proc, unsigned kind, std::uint64_t arg) {
  switch (kind) {
  case VPROF_REC_ENTER:
  case VPROF_REC_EXIT:
    if (static_cast<std::uint32_t>(arg) == VPROF_SITE_PROFILER)
      std::fprintf(out, "site=profiler depth=0x%08" PRIx32, static_cast<std::uint32_t>(arg >> 32));
    else
      std::fprintf(out, "site=%" PRIu32 " depth=0x%08" PRIx32, static_cast<std::uint32_t>(arg),
                   static_cast<std::uint32_t>(arg >> 32));
    break;
  case VPROF_REC_INTERVAL_BEGIN:
  case VPROF_REC_INTERVAL_END:
  case VPROF_REC_ATTACH:
  case VPROF_REC_DETACH:
    std::fprintf(out, "interval=%" PRIu64, arg);
    break;
  case VPROF_REC_LABEL: {
    std::fprintf(out, "label=%" PRIu64, arg);
    if (proc) {
      auto it = proc->labels.find(static_cast<std::uint32_t>(arg));
      if (it != proc->labels.end())
        std::fprintf(out, " (%s)", it->second.c_str());
    }
    break;
  }
  case VPROF_REC_CLOCK:
    std::fprintf(out, "realtime_ns=%" PRIu64, arg);
    break;
  case VPROF_REC_MSG_SEND:
  case VPROF_REC_MSG_RECV:
    std::fprintf(out, "key=0x%" PRIx64, arg);
    break;
  default: {
    std::fprintf(out, "obj=0x%" PRIx64, arg);
    std::uint64_t dev, ino, off;
    if (proc && proc->shared_key(arg, dev, ino, off))
      std::fprintf(out, " shared=%" PRIx64 ":%" PRIu64 "+0x%" PRIx64, dev, ino, off);
  }
  }
}

void print_stream(std::FILE *out, const Stream &s, const ProcessInfo *proc, std::uint64_t run_base,
                  double hz, bool headers_only) {
  const auto &in = s.info();
  std::fprintf(out,
               "# stream %s pid=%u tid=%u ppid=%u seq=%u thread=\"%s\" clock=%s hz=%" PRIu64
               " base_ticks=%" PRIu64 " records=%zu (data %" PRIu64 " + window %" PRIu64 "/%" PRIu64
               ") dropped=%" PRIu64 " flags=0x%x features=0x%" PRIx64 "\n",
               in.path.filename().c_str(), in.pid, in.tid, in.ppid, in.stream_seq,
               in.thread_name.c_str(), in.clock_kind == VPROF_CLOCK_TSC ? "tsc" : "monotonic",
               in.ticks_per_second, in.base_ticks, s.records().size(), in.committed_records,
               in.window_count, in.window_records, in.dropped, in.flags, in.features);
  if (headers_only)
    return;
  std::uint64_t off = in.base_ticks - run_base;
  for (const vprof_record &r : s.records()) {
    unsigned k = vprof_record_kind_of(&r);
    double ns = static_cast<double>(off + s.relative_ticks(r)) * 1e9 / hz;
    std::fprintf(out, "%u %u %.0f %s ", in.pid, in.tid, ns, kind_name(k));
    print_arg(out, proc, k, r.arg);
    std::fputc('\n', out);
  }
}

} // namespace

void dump(const std::filesystem::path &target, std::FILE *out, bool headers_only) {
  if (std::filesystem::is_regular_file(target)) {
    Stream s(target);
    print_stream(out, s, nullptr, s.info().base_ticks,
                 static_cast<double>(s.info().ticks_per_second), headers_only);
    return;
  }
  auto t = Trace::open(target);
  for (const auto &s : t.streams())
    print_stream(out, s, t.process(s.info().pid), t.run_base_ticks(), t.ticks_per_second(),
                 headers_only);
}

} // namespace vprof::trace
