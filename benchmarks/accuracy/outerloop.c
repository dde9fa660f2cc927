/* Accuracy program "outerloop": one thread serves many connections the way Redis does. Each
 * loop iteration polls (ol_poll: a batch of 1-8 commands from the connections is ready),
 * processes the batch (ol_process_command, 5 u + U(0, 2) u each: the interval of a command
 * begins there), then, before it writes any reply, runs its own shared work in
 * ol_before_sleep: ol_expire_keys (constant 3 u) and ol_flush_log, the log write and
 * fdatasync of every pending command — U(20, 220) u once per iteration, the planted cause
 * (Var = 3333 u^2 per command, shared by the whole batch). Then it writes the replies
 * (ol_write_reply, 2 u + U(0, 10) u each: the interval ends there). The intervals stay
 * attached from begin to end: the loop's work for the other commands of the batch and its
 * own work between processing and replies are on every command's critical path.
 * The annotated functions (the roots a new user gets by default) hold only the command's
 * own processing and reply: the cause runs in the loop's code above them, which only an
 * upward expansion (docs/planner.md) reaches. The batch's size and the command's place in
 * it add unplanted variance, so no closed form is given: the realised share,
 * Var(time in ol_flush_log on the command's path) / Var(L), is the reference. */
#include "acc_common.h"

enum { kMaxBatch = 8 };

static double *g_proc_u, *g_reply_u; /* per command, drawn up front */
static double *g_flush_u;            /* per loop iteration */
static int *g_batch;                 /* commands per loop iteration */
static double *g_cause_ns, *g_lat_ns;
static uint64_t *g_begin_ns, *g_interval;
static int g_pending[kMaxBatch], g_npending;

void ol_expire_keys(void) { ACC_SPIN_UNITS(3); }
void ol_flush_log(int iteration) { ACC_SPIN_UNITS(g_flush_u[iteration]); }

/* The loop's own work before it sleeps again: the log of every pending command is written
 * and synced before any of their replies leaves. */
void ol_before_sleep(int iteration) {
  ol_expire_keys();
  uint64_t t = ACC_NOW_NS();
  ol_flush_log(iteration);
  double flush = (double)(ACC_NOW_NS() - t);
  for (int k = 0; k < g_npending; ++k)
    g_cause_ns[g_pending[k]] = flush;
}

/* The commands the connections made ready this iteration: the next `g_batch[iteration]`. */
int ol_poll(int iteration, int next, int n) {
  ACC_SPIN_UNITS(1);
  int b = g_batch[iteration];
  return next + b <= n ? b : n - next;
}

void ol_process_command(int cmd) {
  g_begin_ns[cmd] = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(g_interval[cmd], "command");
  ACC_SPIN_UNITS(5 + g_proc_u[cmd]);
  g_pending[g_npending++] = cmd;
}

void ol_write_reply(int cmd) {
  ACC_SPIN_UNITS(2 + g_reply_u[cmd]);
  VPROF_INTERVAL_END(g_interval[cmd]);
  g_lat_ns[cmd] = (double)(ACC_NOW_NS() - g_begin_ns[cmd]);
}

void ol_process_batch(int first, int count) {
  for (int k = 0; k < count; ++k)
    ol_process_command(first + k);
}

void ol_write_replies(void) {
  for (int k = 0; k < g_npending; ++k)
    ol_write_reply(g_pending[k]);
  g_npending = 0;
}

/* One iteration of the event loop: poll, process what is ready, the loop's own work,
 * replies. Returns the commands served. */
int ol_loop_iteration(int iteration, int next, int n) {
  int count = ol_poll(iteration, next, n);
  ol_process_batch(next, count);
  ol_before_sleep(iteration);
  ol_write_replies();
  return count;
}

void ol_run(int n) {
  int next = 0;
  for (int iteration = 0; next < n; ++iteration)
    next += ol_loop_iteration(iteration, next, n);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  g_proc_u = acc_xcalloc(n, sizeof(double));
  g_reply_u = acc_xcalloc(n, sizeof(double));
  g_flush_u = acc_xcalloc(n, sizeof(double));
  g_batch = acc_xcalloc(n, sizeof(int));
  g_cause_ns = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  g_begin_ns = acc_xcalloc(n, sizeof(uint64_t));
  g_interval = acc_xcalloc(n, sizeof(uint64_t));
  for (int i = 0; i < n; ++i) {
    g_proc_u[i] = acc_uniform(&rng, 0, 2);
    g_reply_u[i] = acc_uniform(&rng, 0, 10);
    g_flush_u[i] = acc_uniform(&rng, 20, 220);
    g_batch[i] = 1 + (int)acc_uniform(&rng, 0, kMaxBatch);
  }
  ol_run(n);
  acc_report("outerloop", "ol_flush_log", g_lat_ns, g_cause_ns, NULL, n, -1);
  return 0;
}
