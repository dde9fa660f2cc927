/* Accuracy program "compensate": two siblings that compensate each other must not outrank
 * the cause (issue 12). Each transaction applies a fixed budget of 200 rows, split at random
 * between apply_inserts (r rows, r ~ U(0, 200)) and apply_updates (200 - r rows), one row
 * costing 1 u: each stage alone has Var = 200^2/12 = 3333 u^2, more than the interval's, but
 * their sum is constant (Cov = -3333 u^2 cancels both). The planted cause is
 * check_constraints, U(0, 120) u (Var 1200 u^2); the sibling write_undo is U(0, 60) u
 * (Var 300 u^2). Var(L) = 1500 u^2 and the cause's share is 1200/1500 = 0.80; VProfiler's
 * score (specificity x share) ranks the two stages (222 % each) above it. */
#include "acc_common.h"

static int *g_rows;                   /* rows given to the inserts, per interval */
static double *g_cause_u, *g_undo_u;  /* drawn up front, one per interval */
static double *g_cause_ns, *g_lat_ns; /* realised, one per interval */

enum { kRowBudget = 200 };

void apply_inserts(int rows) { ACC_SPIN_UNITS(rows); }
void apply_updates(int rows) { ACC_SPIN_UNITS(rows); }
void check_constraints(int i) { ACC_SPIN_UNITS(g_cause_u[i]); }
void write_undo(int i) { ACC_SPIN_UNITS(g_undo_u[i]); }

/* The root: one interval per transaction. */
void run_transaction(int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(iv, "txn");
  apply_inserts(g_rows[i]);
  apply_updates(kRowBudget - g_rows[i]);
  uint64_t t = ACC_NOW_NS();
  check_constraints(i);
  g_cause_ns[i] = (double)(ACC_NOW_NS() - t);
  write_undo(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  g_rows = acc_xcalloc(n, sizeof(int));
  g_cause_u = acc_xcalloc(n, sizeof(double));
  g_undo_u = acc_xcalloc(n, sizeof(double));
  g_cause_ns = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  for (int i = 0; i < n; ++i) {
    g_rows[i] = (int)acc_uniform(&rng, 0, kRowBudget + 1);
    if (g_rows[i] > kRowBudget)
      g_rows[i] = kRowBudget;
    g_cause_u[i] = acc_uniform(&rng, 0, 120);
    g_undo_u[i] = acc_uniform(&rng, 0, 60);
  }
  for (int i = 0; i < n; ++i)
    run_transaction(i);
  acc_report("compensate", "check_constraints", g_lat_ns, g_cause_ns, NULL, n, 1200.0 / 1500.0);
  return 0;
}
