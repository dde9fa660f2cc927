/* Accuracy program "deep9": the planted cause is d9_read_sector, nine calls below the
 * annotated root (d9_handle_command -> d9_dispatch -> d9_execute -> d9_plan_access ->
 * d9_open_table -> d9_scan_index -> d9_visit_node -> d9_fetch_page -> d9_read_block ->
 * d9_read_sector), busy-waiting U(0, 400) u per interval: Var = 400^2/12 = 13333 u^2.
 * The depth a real server needs (an event loop's root to its storage), with nothing else
 * to help the planner down: every level costs one expansion. Siblings along the chain are
 * constant (d9_check_access, d9_lock_table, d9_decode_node: 1 u each) except d9_log_command
 * beside the chain's top, U(0, 200) u (Var 3333 u^2), independent of the planted draw.
 * Hence Var(L) = 16667 u^2 and the planted share is 0.80 by construction; the program also
 * prints the realised share from its own per-interval measurements. The loop test runs it
 * with the defaults a new user gets (manifest `defaults = true`: default roots, depth, k
 * and iteration budget). */
#include "acc_common.h"

static double *g_cause_u, *g_noise_u; /* drawn up front, one per interval */
static double *g_cause_ns, *g_lat_ns; /* realised, one per interval */

void d9_read_sector(int i) { ACC_SPIN_UNITS(g_cause_u[i]); }

void d9_read_block(int i) {
  uint64_t t = ACC_NOW_NS();
  d9_read_sector(i);
  g_cause_ns[i] = (double)(ACC_NOW_NS() - t);
}

void d9_fetch_page(int i) {
  ACC_SPIN_UNITS(1);
  d9_read_block(i);
}

void d9_decode_node(int i) {
  (void)i;
  ACC_SPIN_UNITS(1);
}

void d9_visit_node(int i) {
  d9_fetch_page(i);
  d9_decode_node(i);
}

void d9_scan_index(int i) {
  ACC_SPIN_UNITS(1);
  d9_visit_node(i);
}

void d9_lock_table(int i) {
  (void)i;
  ACC_SPIN_UNITS(1);
}

void d9_open_table(int i) {
  d9_lock_table(i);
  d9_scan_index(i);
}

void d9_plan_access(int i) {
  ACC_SPIN_UNITS(1);
  d9_open_table(i);
}

void d9_check_access(int i) {
  (void)i;
  ACC_SPIN_UNITS(1);
}

void d9_execute(int i) {
  d9_check_access(i);
  d9_plan_access(i);
}

void d9_dispatch(int i) {
  ACC_SPIN_UNITS(2);
  d9_execute(i);
}

void d9_log_command(int i) { ACC_SPIN_UNITS(g_noise_u[i]); }

/* The root: one interval per command. */
void d9_handle_command(int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(iv, "command");
  d9_dispatch(i);
  d9_log_command(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  g_cause_u = acc_xcalloc(n, sizeof(double));
  g_noise_u = acc_xcalloc(n, sizeof(double));
  g_cause_ns = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  for (int i = 0; i < n; ++i) {
    g_cause_u[i] = acc_uniform(&rng, 0, 400);
    g_noise_u[i] = acc_uniform(&rng, 0, 200);
  }
  for (int i = 0; i < n; ++i)
    d9_handle_command(i);
  acc_report("deep9", "d9_read_sector", g_lat_ns, g_cause_ns, NULL, n,
             13333.333 / (13333.333 + 3333.333));
  return 0;
}
