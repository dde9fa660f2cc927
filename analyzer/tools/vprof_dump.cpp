// vprof-dump: prints a trace directory (or one .vpt stream) as text, one line per record:
// pid, tid, ns since the run's start, kind, decoded arg. Exit 0 ok, 1 bad trace, 2 usage.
#include "vprof/trace_reader.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

void print_arg(const vprof::trace::ProcessInfo *proc, unsigned kind, std::uint64_t arg) {
  switch (kind) {
  case VPROF_REC_ENTER:
  case VPROF_REC_EXIT:
    std::printf("site=%" PRIu32 " depth=0x%08" PRIx32, static_cast<std::uint32_t>(arg),
                static_cast<std::uint32_t>(arg >> 32));
    break;
  case VPROF_REC_INTERVAL_BEGIN:
  case VPROF_REC_INTERVAL_END:
  case VPROF_REC_ATTACH:
  case VPROF_REC_DETACH:
    std::printf("interval=%" PRIu64, arg);
    break;
  case VPROF_REC_LABEL: {
    std::printf("label=%" PRIu64, arg);
    if (proc) {
      auto it = proc->labels.find(static_cast<std::uint32_t>(arg));
      if (it != proc->labels.end())
        std::printf(" (%s)", it->second.c_str());
    }
    break;
  }
  default: {
    std::printf("obj=0x%" PRIx64, arg);
    std::uint64_t dev, ino, off;
    if (proc && proc->shared_key(arg, dev, ino, off))
      std::printf(" shared=%" PRIx64 ":%" PRIu64 "+0x%" PRIx64, dev, ino, off);
  }
  }
}

int usage() {
  std::fprintf(stderr, "usage: vprof-dump [--headers-only] <trace-dir | stream.vpt>\n"
                       "Prints every record as: pid tid ns kind arg (streams in (pid, seq) "
                       "order).\nExit status: 0 ok, 1 corrupt or unreadable trace, 2 usage.\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  bool headers_only = false;
  const char *target = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--headers-only") == 0)
      headers_only = true;
    else if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0)
      return usage(), 0;
    else if (!target && argv[i][0] != '-')
      target = argv[i];
    else
      return usage();
  }
  if (!target)
    return usage();
  try {
    std::filesystem::path p(target);
    auto print_stream = [&](const vprof::trace::Stream &s,
                            const vprof::trace::ProcessInfo *proc, std::uint64_t run_base,
                            double hz) {
      const auto &in = s.info();
      std::printf("# stream %s pid=%u tid=%u ppid=%u seq=%u thread=\"%s\" clock=%s hz=%" PRIu64
                  " base_ticks=%" PRIu64 " records=%zu capacity=%" PRIu64 " dropped=%" PRIu64
                  " flags=0x%x features=0x%" PRIx64 "\n",
                  in.path.filename().c_str(), in.pid, in.tid, in.ppid, in.stream_seq,
                  in.thread_name.c_str(), in.clock_kind == VPROF_CLOCK_TSC ? "tsc" : "monotonic",
                  in.ticks_per_second, in.base_ticks, s.records().size(), in.capacity_records,
                  in.dropped, in.flags, in.features);
      if (headers_only)
        return;
      std::uint64_t off = in.base_ticks - run_base;
      for (const vprof_record &r : s.records()) {
        unsigned k = vprof_record_kind_of(&r);
        double ns = static_cast<double>(off + s.relative_ticks(r)) * 1e9 / hz;
        std::printf("%u %u %.0f %s ", in.pid, in.tid, ns, vprof::trace::kind_name(k));
        print_arg(proc, k, r.arg);
        std::putchar('\n');
      }
    };
    if (std::filesystem::is_regular_file(p)) {
      vprof::trace::Stream s(p);
      print_stream(s, nullptr, s.info().base_ticks, static_cast<double>(s.info().ticks_per_second));
    } else {
      auto t = vprof::trace::Trace::open(p);
      for (const auto &s : t.streams())
        print_stream(s, t.process(s.info().pid), t.run_base_ticks(), t.ticks_per_second());
    }
  } catch (const vprof::trace::TraceError &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "vprof-dump: error: %s\n", e.what());
    return 1;
  } catch (const std::exception &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "vprof-dump: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
