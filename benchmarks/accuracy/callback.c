/* Accuracy program "callback": the planted cause sits behind a function pointer.
 * dispatch_message calls handlers[k](i) for k = 0..2 through a table; only
 * cb_on_message (k = 1) is random, U(0, 300) u (Var 7500 u^2). cb_on_header and
 * cb_on_trailer are constant; the sibling audit_message is U(0, 200) u (Var 3333 u^2).
 * Var(L) = 10833 u^2; planted share 7500/10833 = 0.692. A static call graph sees only an
 * indirect call in dispatch_message: the tool must resolve the pointer table (or treat
 * address-taken functions as possible callees) to reach the cause. */
#include "acc_common.h"

static double *g_cb_u, *g_noise_u;
static double *g_cause_ns, *g_lat_ns;

typedef void (*handler_fn)(int);

void cb_on_header(int i) {
  (void)i;
  ACC_SPIN_UNITS(8);
}
void cb_on_message(int i) { ACC_SPIN_UNITS(g_cb_u[i]); }
void cb_on_trailer(int i) {
  (void)i;
  ACC_SPIN_UNITS(5);
}

static handler_fn g_handlers[3] = {cb_on_header, cb_on_message, cb_on_trailer};

void dispatch_message(int i) {
  for (int k = 0; k < 3; ++k) {
    uint64_t t = ACC_NOW_NS();
    g_handlers[k](i);
    if (k == 1)
      g_cause_ns[i] = (double)(ACC_NOW_NS() - t);
  }
}

void audit_message(int i) { ACC_SPIN_UNITS(g_noise_u[i]); }

/* The root: one interval per message. */
void on_message(int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(iv, "message");
  dispatch_message(i);
  audit_message(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  g_cb_u = acc_xcalloc(n, sizeof(double));
  g_noise_u = acc_xcalloc(n, sizeof(double));
  g_cause_ns = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  for (int i = 0; i < n; ++i) {
    g_cb_u[i] = acc_uniform(&rng, 0, 300);
    g_noise_u[i] = acc_uniform(&rng, 0, 200);
  }
  for (int i = 0; i < n; ++i)
    on_message(i);
  acc_report("callback", "cb_on_message", g_lat_ns, g_cause_ns, NULL, n, 7500.0 / 10833.333);
  return 0;
}
