// Test input: the C++ annotation guards. Compiled with -c only (nm test).
#include <vprof/vprof.hpp>

#include <cstdint>

static int queue;

std::uint64_t annotated_cpp(std::uint64_t work) {
  VPROF_SCOPED_INTERVAL(iv, "GET");
  vprof::attachment a(work);
  vprof::custom_wait w(&queue);
  VPROF_HANDOFF_SEND(&queue);
  vprof::remote_attachment r(work, work + 1);
  r.reply();
  return iv.id() + work;
}
