/* Accuracy program "callbackscc" (a trap for static specificity): the stages of a request
 * are callbacks that call each other through a dispatcher, and an error path that logs and
 * retries recurses into them, so the static call graph has one strongly connected
 * component: dispatch_stage calls stage_parse, stage_route and stage_store through a table
 * of function pointers (indirect edges to every address-taken handler of that type), each
 * stage calls dispatch_stage for the next one, and on an error (never taken here) a stage
 * calls log_failure -> retry_stage, which calls the stages again. The component's height
 * comes from the formatter chain the logger calls (fmt_1 -> ... -> fmt_5): 5, so every
 * member has VProfiler's specificity 1 (H = 6) and the largest share in it wins — the
 * outermost frame, which holds the whole chain. The planted cause is one member,
 * stage_store (the third callback, four probed frames deep), busy-waiting U(0, 400) u
 * (Var 13333 u^2); the other stages are constant. Beside the component the leaf
 * checksum_reply (height 0, specificity 36) busy-waits U(0, 200) u (Var 3333 u^2).
 * Var(L) = 16667 u^2: the planted share is 0.80 by construction. The program also prints
 * the realised share of stage_store's calls. */
#include "acc_common.h"

static double *g_store_u, *g_sum_u;   /* drawn up front, one per interval */
static double *g_cause_ns, *g_lat_ns; /* realised, one per interval */
static int g_fail;                    /* set by ACC_FAIL: never in the suite */

typedef void (*stage_fn)(int i, int stage);
void dispatch_stage(int i, int stage);

/* The logger's formatter: static height, no runtime time. */
void fmt_5(int i) { ACC_SPIN_UNITS(i % 2); }
void fmt_4(int i) { fmt_5(i + 1); }
void fmt_3(int i) { fmt_4(i + 1); }
void fmt_2(int i) { fmt_3(i + 1); }
void fmt_1(int i) { fmt_2(i + 1); }

void retry_stage(int i, int stage);

/* The error path: log, then retry the stage (recursion back into the callbacks). */
void log_failure(int i, int stage) {
  fmt_1(i);
  if (stage < 3)
    retry_stage(i, stage);
}

void stage_parse(int i, int stage) {
  ACC_SPIN_UNITS(6);
  if (g_fail)
    log_failure(i, stage);
  dispatch_stage(i, stage + 1);
}

void stage_route(int i, int stage) {
  ACC_SPIN_UNITS(4);
  if (g_fail)
    log_failure(i, stage);
  dispatch_stage(i, stage + 1);
}

void stage_store(int i, int stage) {
  uint64_t t = ACC_NOW_NS();
  ACC_SPIN_UNITS(g_store_u[i]);
  g_cause_ns[i] = (double)(ACC_NOW_NS() - t);
  if (g_fail)
    log_failure(i, stage);
  dispatch_stage(i, stage + 1);
}

static stage_fn g_stages[3] = {stage_parse, stage_route, stage_store};

void dispatch_stage(int i, int stage) {
  if (stage < 3)
    g_stages[stage](i, stage);
}

void retry_stage(int i, int stage) { g_stages[stage](i, stage + 3); }

void checksum_reply(int i) { ACC_SPIN_UNITS(g_sum_u[i]); }

/* The root: one interval per request. */
void serve_request(int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(iv, "request");
  dispatch_stage(i, 0);
  checksum_reply(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  g_fail = getenv("ACC_FAIL") != NULL;
  g_store_u = acc_xcalloc(n, sizeof(double));
  g_sum_u = acc_xcalloc(n, sizeof(double));
  g_cause_ns = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  for (int i = 0; i < n; ++i) {
    g_store_u[i] = acc_uniform(&rng, 0, 400);
    g_sum_u[i] = acc_uniform(&rng, 0, 200);
  }
  for (int i = 0; i < n; ++i)
    serve_request(i);
  acc_report("callbackscc", "stage_store", g_lat_ns, g_cause_ns, NULL, n,
             13333.333 / (13333.333 + 3333.333));
  return 0;
}
