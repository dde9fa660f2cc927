/* Accuracy program "deepdecoy" (a trap for static specificity): the planted cause
 * crunch_records busy-waits U(0, 400) u in its own body (Var 13333 u^2), but it also holds
 * an audit path that calls a chain of eight functions (audit_1 -> ... -> audit_8) the
 * workload never takes: in the static call graph crunch_records sits eight levels above
 * the leaves, its height is 8 and the root's 9, so VProfiler's specificity (H - h)^2 gives
 * it 1. Beside it, the small leaf stamp_record (height 0, specificity 81) busy-waits
 * U(0, 200) u (Var 3333 u^2). Var(L) = 16667 u^2: the planted share is 0.80 by
 * construction, stamp_record's 0.20; specificity x share ranks stamp_record first
 * (81 x 0.2 against 1 x 0.8). In the calling contexts the trace sees both are one call
 * below the root, and the cause explains four times more. The program also prints the
 * realised share of the call. */
#include "acc_common.h"

static double *g_crunch_u, *g_stamp_u; /* drawn up front, one per interval */
static double *g_cause_ns, *g_lat_ns;  /* realised, one per interval */
static int g_audit;                    /* set by ACC_AUDIT: never in the suite */

/* The audit chain: static depth, no runtime time. */
void audit_8(int i) { ACC_SPIN_UNITS(i % 2); }
void audit_7(int i) { audit_8(i + 1); }
void audit_6(int i) { audit_7(i + 1); }
void audit_5(int i) { audit_6(i + 1); }
void audit_4(int i) { audit_5(i + 1); }
void audit_3(int i) { audit_4(i + 1); }
void audit_2(int i) { audit_3(i + 1); }
void audit_1(int i) { audit_2(i + 1); }

void crunch_records(int i) {
  ACC_SPIN_UNITS(g_crunch_u[i]);
  if (g_audit)
    audit_1(i);
}

void stamp_record(int i) { ACC_SPIN_UNITS(g_stamp_u[i]); }

/* The root: one interval per job. */
void handle_job(int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(iv, "job");
  uint64_t t = ACC_NOW_NS();
  crunch_records(i);
  g_cause_ns[i] = (double)(ACC_NOW_NS() - t);
  stamp_record(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  g_audit = getenv("ACC_AUDIT") != NULL;
  g_crunch_u = acc_xcalloc(n, sizeof(double));
  g_stamp_u = acc_xcalloc(n, sizeof(double));
  g_cause_ns = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  for (int i = 0; i < n; ++i) {
    g_crunch_u[i] = acc_uniform(&rng, 0, 400);
    g_stamp_u[i] = acc_uniform(&rng, 0, 200);
  }
  for (int i = 0; i < n; ++i)
    handle_job(i);
  acc_report("deepdecoy", "crunch_records", g_lat_ns, g_cause_ns, NULL, n,
             13333.333 / (13333.333 + 3333.333));
  return 0;
}
