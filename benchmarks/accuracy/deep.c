/* Accuracy program "deep": the planted cause is deep_fetch_block, four calls below the
 * annotated root (handle_request -> route_request -> lookup_index -> fetch_page ->
 * deep_fetch_block), busy-waiting U(50, 450) us per interval: Var = 400^2/12 = 13333 us^2.
 * Siblings: parse_request and finish_lookup are constant, log_request is U(100, 300) us
 * (Var 3333 us^2), independent of the planted draw. Hence Var(L) = 16667 us^2 and the
 * planted share is 13333/16667 = 0.80 by construction; the program also prints the
 * realised share from its own per-interval measurements. */
#include "acc_common.h"

static double *g_deep_us, *g_noise_us; /* drawn up front, one per interval */
static double *g_cause_ns, *g_lat_ns;  /* realised, one per interval */

void deep_fetch_block(int i) { ACC_SPIN_US(g_deep_us[i]); }

void fetch_page(int i) {
  ACC_SPIN_US(10); /* constant: page header check */
  uint64_t t = ACC_NOW_NS();
  deep_fetch_block(i);
  g_cause_ns[i] = (double)(ACC_NOW_NS() - t);
}

void finish_lookup(int i) {
  (void)i;
  ACC_SPIN_US(20);
}

void lookup_index(int i) {
  ACC_SPIN_US(15);
  fetch_page(i);
  finish_lookup(i);
}

void route_request(int i) {
  ACC_SPIN_US(10);
  lookup_index(i);
}

void parse_request(int i) {
  (void)i;
  ACC_SPIN_US(40);
}

void log_request(int i) { ACC_SPIN_US(g_noise_us[i]); }

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
  acc_parse(argc, argv, &o, 1000);
  int n = o.intervals;
  uint64_t rng = o.seed;
  g_deep_us = acc_xcalloc(n, sizeof(double));
  g_noise_us = acc_xcalloc(n, sizeof(double));
  g_cause_ns = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  for (int i = 0; i < n; ++i) {
    g_deep_us[i] = acc_uniform(&rng, 50, 450);
    g_noise_us[i] = acc_uniform(&rng, 100, 300);
  }
  for (int i = 0; i < n; ++i)
    handle_request(i);
  acc_report("deep", "deep_fetch_block", g_lat_ns, g_cause_ns, NULL, n,
             13333.333 / (13333.333 + 3333.333));
  return 0;
}
