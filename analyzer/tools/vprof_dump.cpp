// vprof-dump: prints a trace directory (or one .vpt stream) as text, one line per record:
// pid, tid, ns since the run's start, kind, decoded arg. Exit 0 ok, 1 bad trace, 2 usage.
#include "vprof/trace_reader.hpp"

#include <cstdio>
#include <cstring>

namespace {

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
    vprof::trace::dump(target, stdout, headers_only);
  } catch (const std::exception &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "vprof-dump: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
