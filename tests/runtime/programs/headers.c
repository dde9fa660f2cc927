/* Test input: every public header, compiled as strict C99 (-pedantic -Werror). */
#include <vprof/probe.h>
#include <vprof/rt_testing.h>
#include <vprof/trace_format.h>
#include <vprof/vprof.h>

int probed(int x);
int probed(int x) {
  VPROF_PROBE_SCOPE(1);
  int y = __extension__({
    VPROF_PROBE_SCOPE(2);
    x + 1;
  });
  return y;
}
