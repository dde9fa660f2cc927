/* Accuracy program "deep": the planted cause is deep_fetch_block, four calls below the
 * annotated root (handle_request -> route_request -> lookup_index -> fetch_page ->
 * deep_fetch_block), busy-waiting U(0, 400) u per interval: Var = 400^2/12 = 13333 u^2.
 * Siblings: parse_request and finish_lookup are constant, log_request is U(0, 200) u
 * (Var 3333 u^2), independent of the planted draw. Hence Var(L) = 16667 u^2 and the
 * planted share is 13333/16667 = 0.80 by construction; the program also prints the
 * realised share from its own per-interval measurements. */
#include "acc_common.h"

static double *g_deep_u, *g_noise_u;  /* drawn up front, one per interval */
static double *g_cause_ns, *g_lat_ns; /* realised, one per interval */

void deep_fetch_block(int i) { ACC_SPIN_UNITS(g_deep_u[i]); }

void fetch_page(int i) {
  ACC_SPIN_UNITS(3); /* constant: page header check */
  uint64_t t = ACC_NOW_NS();
  deep_fetch_block(i);
  g_cause_ns[i] = (double)(ACC_NOW_NS() - t);
}

void finish_lookup(int i) {
  (void)i;
  ACC_SPIN_UNITS(5);
}

void lookup_index(int i) {
  ACC_SPIN_UNITS(4);
  fetch_page(i);
  finish_lookup(i);
}

void route_request(int i) {
  ACC_SPIN_UNITS(3);
  lookup_index(i);
}

void parse_request(int i) {
  (void)i;
  ACC_SPIN_UNITS(10);
}

void log_request(int i) { ACC_SPIN_UNITS(g_noise_u[i]); }

/* The root: one interval per request. */
void handle_request(int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(iv, "request");
  parse_request(i);
  route_request(i);
  log_request(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  g_deep_u = acc_xcalloc(n, sizeof(double));
  g_noise_u = acc_xcalloc(n, sizeof(double));
  g_cause_ns = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  for (int i = 0; i < n; ++i) {
    g_deep_u[i] = acc_uniform(&rng, 0, 400);
    g_noise_u[i] = acc_uniform(&rng, 0, 200);
  }
  for (int i = 0; i < n; ++i)
    handle_request(i);
  acc_report("deep", "deep_fetch_block", g_lat_ns, g_cause_ns, NULL, n,
             13333.333 / (13333.333 + 3333.333));
  return 0;
}
