/* Accuracy program "covary": the planted cause is the covariance of two functions.
 * covary_left and covary_right each busy-wait 5 u + X + e, with one shared draw
 * X ~ U(0, 500) u per interval (Var 20833 u^2) and private e1, e2 ~ U(0, 60) u
 * (Var 300 u^2 each); the sibling emit_response waits U(0, 120) u (Var 1200 u^2).
 * Var(L) = 4*20833 + 2*300 + 1200 = 85133 u^2; the factor Cov(left, right), counted
 * twice, is 2*20833/85133 = 0.4894 of it, larger than either function's own variance
 * (21133/85133 = 0.248). (The covariance term is the most fragile under scheduler
 * stalls, which add variance to one side only; hence the large shared draw.) */
#include "acc_common.h"

static double *g_shared_u, *g_e1_u, *g_e2_u, *g_noise_u;
static double *g_left_ns, *g_right_ns, *g_lat_ns;

void covary_left(int i) { ACC_SPIN_UNITS(5 + g_shared_u[i] + g_e1_u[i]); }
void covary_right(int i) { ACC_SPIN_UNITS(5 + g_shared_u[i] + g_e2_u[i]); }

void decode_batch(int i) {
  (void)i;
  ACC_SPIN_UNITS(5);
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
    g_shared_u[i] = acc_uniform(&rng, 0, 500);
    g_e1_u[i] = acc_uniform(&rng, 0, 60);
    g_e2_u[i] = acc_uniform(&rng, 0, 60);
    g_noise_u[i] = acc_uniform(&rng, 0, 120);
  }
  for (int i = 0; i < n; ++i)
    process_batch(i);
  acc_report("covary", "covary_left,covary_right", g_lat_ns, g_left_ns, g_right_ns, n,
             2 * 20833.333 / 85133.333);
  return 0;
}
