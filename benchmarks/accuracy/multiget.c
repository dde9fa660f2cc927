/* Accuracy program "multiget": a rare kind of request makes the variance, and its time is
 * spread over every function it passes. One request in 50 is a multi-key get of 40 keys
 * (memcached's multi-get among single-key gets); each key costs a lookup (mg_lookup,
 * U(2, 4) u), its part of the reply (mg_build_reply, 2 u) and its part of the write
 * (mg_write_reply, 1.5 u). A single-key request takes about 8.5 u, a multi-key one about
 * 262 u, so Var(L) is almost all the difference between the two kinds, shared by three
 * functions in proportion to their per-key cost (about 46, 31 and 23 %): no function
 * carries what removing the multi-key requests would remove (the VProfiler terms are
 * mostly the functions' covariances). The truth is that removal's share, in the program's
 * own latencies: 1 - Var(L of the single-key requests) / Var(L), population variances
 * (as the analyzer's slow group, docs/statistics.md). By construction, with p = 1/50:
 * Var(L) ~ p (1 - p) 253.5^2 + 1.5 = 1261 u^2, the single-key requests' 1.5 u^2, so 0.9988. */
#include "acc_common.h"

#define MULTI_EVERY 50
#define MULTI_KEYS 40

static double *g_lookup_u, *g_write_u;
static int *g_keys;
static double *g_lat_ns;

void mg_parse(int i) {
  (void)i;
  ACC_SPIN_UNITS(2);
}

void mg_lookup(int i, int k) { ACC_SPIN_UNITS(g_lookup_u[(size_t)i * MULTI_KEYS + (size_t)k]); }

void mg_build_reply(int i) { ACC_SPIN_UNITS(g_keys[i] == 1 ? 2.0 : 2.0 * g_keys[i]); }

void mg_write_reply(int i) { ACC_SPIN_UNITS(g_keys[i] == 1 ? g_write_u[i] : 1.5 * g_keys[i]); }

/* The root: one interval per request. */
void mg_serve(int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(iv, "get");
  mg_parse(i);
  for (int k = 0; k < g_keys[i]; ++k)
    mg_lookup(i, k);
  mg_build_reply(i);
  mg_write_reply(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
}

/* Population variance of the latencies of the requests with `keys` keys (0: all). */
static double latency_var(int n, int keys) {
  double s = 0, q = 0;
  int m = 0;
  for (int i = 0; i < n; ++i)
    if (keys == 0 || g_keys[i] == keys) {
      s += g_lat_ns[i];
      ++m;
    }
  const double mean = s / m;
  for (int i = 0; i < n; ++i)
    if (keys == 0 || g_keys[i] == keys)
      q += (g_lat_ns[i] - mean) * (g_lat_ns[i] - mean);
  return q / m;
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 1000);
  int n = o.intervals;
  uint64_t rng = o.seed;
  g_lookup_u = acc_xcalloc((size_t)n * MULTI_KEYS, sizeof(double));
  g_write_u = acc_xcalloc(n, sizeof(double));
  g_keys = acc_xcalloc(n, sizeof(int));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  int multi = 0;
  for (int i = 0; i < n; ++i) {
    g_keys[i] = i % MULTI_EVERY == MULTI_EVERY / 2 ? MULTI_KEYS : 1;
    multi += g_keys[i] > 1;
    for (int k = 0; k < MULTI_KEYS; ++k)
      g_lookup_u[(size_t)i * MULTI_KEYS + (size_t)k] = acc_uniform(&rng, 2, 4);
    g_write_u[i] = acc_uniform(&rng, 0, 3);
  }
  for (int i = 0; i < n; ++i)
    mg_serve(i);
  const double var_all = latency_var(n, 0), var_single = latency_var(n, 1);
  printf("accuracy: program=multiget intervals=%d mean_us=%.3f var_us2=%.3f\n", n,
         acc_mean(g_lat_ns, n) / 1e3, acc_cov(g_lat_ns, g_lat_ns, n) / 1e6);
  printf("truth: program=multiget cause=mg_lookup kind=group share=%.4f analytic=%.4f "
         "group_intervals=%d\n",
         var_all > 0 ? 1 - var_single / var_all : 0.0, 0.9988, multi);
  fflush(stdout);
  return 0;
}
