/* Accuracy program "macrocall": the planted cause is reached only through a call written
 * in a function-like macro, the shape of PostgreSQL's `#define pg_fsync(fd) ...` wrappers:
 * the root flush_request writes `acc_flush(blk)`, which expands to acc_sync_block(blk).
 * acc_sync_block's body is kept probe-free (no_instrument_function, as a user marks a
 * hand-tuned path; the instrumenter refuses it), so the probe at the macro's invocation is
 * the only thing that times it: without it, its time would be flush_request's own, and a
 * root's own time ranks last (specificity 0). It busy-waits U(0, 400) u per interval
 * (Var 13333 u^2). Siblings: prepare_flush is constant (6 u), update_meta is U(0, 200) u
 * (Var 3333 u^2), independent. Var(L) = 16667 u^2 and the planted share is 0.80 by
 * construction; the program also prints the realised share of the call. */
#include "acc_common.h"

static double *g_block_u, *g_noise_u; /* drawn up front, one per interval */
static double *g_cause_ns, *g_lat_ns; /* realised, one per interval */

__attribute__((no_instrument_function)) void acc_sync_block(double units) { ACC_SPIN_UNITS(units); }
#define acc_flush(blk) acc_sync_block(blk)

void prepare_flush(int i) {
  (void)i;
  ACC_SPIN_UNITS(6);
}

void update_meta(int i) { ACC_SPIN_UNITS(g_noise_u[i]); }

/* The root: one interval per flush request. */
void flush_request(int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(iv, "flush");
  prepare_flush(i);
  uint64_t t = ACC_NOW_NS();
  acc_flush(g_block_u[i]);
  g_cause_ns[i] = (double)(ACC_NOW_NS() - t);
  update_meta(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  g_block_u = acc_xcalloc(n, sizeof(double));
  g_noise_u = acc_xcalloc(n, sizeof(double));
  g_cause_ns = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  for (int i = 0; i < n; ++i) {
    g_block_u[i] = acc_uniform(&rng, 0, 400);
    g_noise_u[i] = acc_uniform(&rng, 0, 200);
  }
  for (int i = 0; i < n; ++i)
    flush_request(i);
  acc_report("macrocall", "acc_sync_block", g_lat_ns, g_cause_ns, NULL, n,
             13333.333 / (13333.333 + 3333.333));
  return 0;
}
