// Test input: every public header, compiled as strict C++17 (-pedantic -Werror).
#include <vprof/probe.h>
#include <vprof/rt_testing.h>
#include <vprof/trace_format.h>
#include <vprof/vprof.h>
#include <vprof/vprof.hpp>

static int g(int x) { return x + 1; }
int probed(int x);
int probed(int x) {
  VPROF_PROBE_SCOPE(1);
  int y = ::vprof::rt::call(2, [&]() -> decltype(auto) { return g(x); });
  return y;
}
