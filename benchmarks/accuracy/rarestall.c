/* Accuracy program "rarestall": a steady cause leads the variance, a rare long stall leads
 * the tail. compute_reply busy-waits U(0, 400) u per interval (Var 13333 u^2);
 * append_journal takes 1 u, except in one interval in 200 (every 200th: exactly n/200 of
 * them) where it stalls 1000 u = 10 ms, as a log rotation or a fork would
 * (Var = 1000^2 * (1/200) * (199/200) = 4975 u^2). Var(L) = 18308 u^2, so compute_reply
 * is 0.7283 of it and ranks first by variance; the stall is 0.27.
 * The slowest 1 % of the intervals (L >= p99) are the stalled ones and as many of the
 * longest steady ones: there append_journal takes ~500 u longer than on average and
 * compute_reply only ~100 u, so the stall leads the tail view (docs/statistics.md,
 * "The tail"). The program prints both realised excesses on its `tail:` line. */
#include "acc_common.h"

#define STALL_EVERY 200
#define STALL_U 1000.0

static double *g_steady_u, *g_journal_u;
static double *g_steady_ns, *g_journal_ns, *g_lat_ns;

void parse_op(int i) {
  (void)i;
  ACC_SPIN_UNITS(5);
}

void compute_reply(int i) { ACC_SPIN_UNITS(g_steady_u[i]); }

void append_journal(int i) { ACC_SPIN_UNITS(g_journal_u[i]); }

/* The root: one interval per operation. */
void serve_op(int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(iv, "op");
  parse_op(i);
  uint64_t t1 = ACC_NOW_NS();
  compute_reply(i);
  uint64_t t2 = ACC_NOW_NS();
  append_journal(i);
  uint64_t t3 = ACC_NOW_NS();
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
  g_steady_ns[i] = (double)(t2 - t1);
  g_journal_ns[i] = (double)(t3 - t2);
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* E[x | L >= p99] - E[x], p99 by linear interpolation (as the analyzer). */
static double tail_excess(const double *x, const double *lat, int n) {
  double *sorted = acc_xcalloc(n, sizeof(double));
  memcpy(sorted, lat, (size_t)n * sizeof(double));
  qsort(sorted, (size_t)n, sizeof(double), by_value);
  double pos = 0.99 * (n - 1);
  int k = (int)pos;
  double p99 = k + 1 < n ? sorted[k] + (pos - k) * (sorted[k + 1] - sorted[k]) : sorted[k];
  free(sorted);
  double s = 0;
  int m = 0;
  for (int i = 0; i < n; ++i)
    if (lat[i] >= p99) {
      s += x[i];
      ++m;
    }
  return s / m - acc_mean(x, n);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 1000);
  int n = o.intervals;
  uint64_t rng = o.seed;
  g_steady_u = acc_xcalloc(n, sizeof(double));
  g_journal_u = acc_xcalloc(n, sizeof(double));
  g_steady_ns = acc_xcalloc(n, sizeof(double));
  g_journal_ns = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  for (int i = 0; i < n; ++i) {
    g_steady_u[i] = acc_uniform(&rng, 0, 400);
    g_journal_u[i] = i % STALL_EVERY == STALL_EVERY - 1 ? STALL_U : 1;
  }
  for (int i = 0; i < n; ++i)
    serve_op(i);
  acc_report("rarestall", "compute_reply", g_lat_ns, g_steady_ns, NULL, n,
             13333.333 /
                 (13333.333 + STALL_U * STALL_U * (1.0 / STALL_EVERY) * (1 - 1.0 / STALL_EVERY)));
  printf("tail: program=rarestall cause=append_journal excess_us=%.3f steady_excess_us=%.3f\n",
         tail_excess(g_journal_ns, g_lat_ns, n) / 1e3, tail_excess(g_steady_ns, g_lat_ns, n) / 1e3);
  fflush(stdout);
  return 0;
}
