/* Accuracy program "covary": the planted cause is the covariance of two functions.
 * covary_left and covary_right each busy-wait 10 u + X + e, with one shared draw
 * X ~ U(0, 300) u per interval (Var 7500 u^2) and private e1, e2 ~ U(0, 100) u
 * (Var 833 u^2 each); the sibling emit_response waits U(0, 200) u (Var 3333 u^2).
 * Var(L) = 4*7500 + 2*833 + 3333 = 35000 u^2; the factor Cov(left, right), counted
 * twice, is 2*7500/35000 = 0.4286 of it, larger than either function's own variance
 * (8333/35000 = 0.238). */
#include "acc_common.h"

static double *g_shared_u, *g_e1_u, *g_e2_u, *g_noise_u;
static double *g_left_ns, *g_right_ns, *g_lat_ns;

void covary_left(int i) { ACC_SPIN_UNITS(10 + g_shared_u[i] + g_e1_u[i]); }
void covary_right(int i) { ACC_SPIN_UNITS(10 + g_shared_u[i] + g_e2_u[i]); }

void decode_batch(int i) {
  (void)i;
  ACC_SPIN_UNITS(8);
}

void emit_response(int i) { ACC_SPIN_UNITS(g_noise_u[i]); }

/* The root: one interval per batch. */
void process_batch(int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(iv, "batch");
  decode_batch(i);
  uint64_t t = ACC_NOW_NS();
  covary_left(i);
  uint64_t t2 = ACC_NOW_NS();
  covary_right(i);
  uint64_t t3 = ACC_NOW_NS();
  emit_response(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
  g_left_ns[i] = (double)(t2 - t);
  g_right_ns[i] = (double)(t3 - t2);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  g_shared_u = acc_xcalloc(n, sizeof(double));
  g_e1_u = acc_xcalloc(n, sizeof(double));
  g_e2_u = acc_xcalloc(n, sizeof(double));
  g_noise_u = acc_xcalloc(n, sizeof(double));
  g_left_ns = acc_xcalloc(n, sizeof(double));
  g_right_ns = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  for (int i = 0; i < n; ++i) {
    g_shared_u[i] = acc_uniform(&rng, 0, 300);
    g_e1_u[i] = acc_uniform(&rng, 0, 100);
    g_e2_u[i] = acc_uniform(&rng, 0, 100);
    g_noise_u[i] = acc_uniform(&rng, 0, 200);
  }
  for (int i = 0; i < n; ++i)
    process_batch(i);
  acc_report("covary", "covary_left,covary_right", g_lat_ns, g_left_ns, g_right_ns, n,
             2 * 7500.0 / 35000.0);
  return 0;
}
