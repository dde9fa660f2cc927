/* Test input: uses every annotation macro. Compiled with -c only (nm test). */
#include <vprof/vprof.h>

#include <stdint.h>

static int queue;

uint64_t annotated(uint64_t given) {
  uint64_t iv;
  VPROF_INTERVAL_BEGIN(iv, "GET");
  VPROF_INTERVAL_BEGIN_ID(given, "PUT");
  VPROF_ATTACH(iv);
  VPROF_HANDOFF_SEND(&queue);
  VPROF_HANDOFF_RECV(&queue);
  VPROF_WAIT_BEGIN(&queue);
  VPROF_WAIT_END(&queue);
  VPROF_WAKE(&queue);
  VPROF_MSG_SEND(given);
  VPROF_MSG_RECV(given);
  VPROF_DETACH(iv);
  VPROF_INTERVAL_END(iv);
  VPROF_INTERVAL_END(given);
  return iv + given;
}
