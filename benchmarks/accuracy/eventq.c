/* Accuracy program "eventq": head-of-line blocking on an event loop. One thread runs the
 * loop; work arrives in batches (as epoll_wait returns several ready connections at once):
 * four ordinary requests, and in one batch in three a bulk job (an untimed batch request,
 * no interval of its own) at a random place among them. The loop first accepts the batch
 * in arrival order: an ordinary request begins its interval, eq_parse (constant 3 u), and
 * detaches (VPROF_DETACH) to wait its turn; then it runs the queued work first in, first
 * out: a request re-attaches (VPROF_ATTACH), runs eq_handle_get (constant 5 u) and
 * eq_write_reply U(0, 60) u, and ends; the bulk job runs eq_handle_bulk U(200, 1800) u.
 * eq_dispatch is the one entry of every step. The ordinary requests queued behind a bulk
 * job wait for all of it: the planted cause is eq_handle_bulk, work of no interval,
 * reached only by following a request's queued wait (detach -> attach on the loop thread)
 * into the loop's other work. Realised term per request: the time of eq_handle_bulk
 * between its detach and its attach; share = Var(that) / Var(L) over the requests. The
 * other requests' parse and handler times ahead of it are the unplanted rest (position in
 * the batch), so no closed form is given (0.96 by construction, simulated). The ordinary
 * work is kept short and the bulk job long so that a loaded machine's preemptions of the
 * loop thread (tens of ms at load 12 on 2 cores) fall mostly in the bulk job, whose
 * measured time includes them: with 20 u handlers and U(100, 900) u bulk jobs the realised
 * share was 0.15-0.65 there. */
#include "acc_common.h"

enum { kPerBatch = 4, kGapUnits = 100 };

typedef enum eq_kind { EQ_ACCEPT, EQ_SERVE, EQ_BULK } eq_kind;

typedef struct eq_item {
  eq_kind kind;
  int index; /* request (EQ_ACCEPT, EQ_SERVE) or batch (EQ_BULK) */
} eq_item;

static double *g_reply_u, *g_bulk_u; /* per request; per batch (0: no bulk job) */
static int *g_bulk_slot;             /* per batch: the bulk job's place among the arrivals */
static double *g_cause_ns, *g_lat_ns;
static uint64_t *g_begin_ns, *g_detach_ns, *g_attach_ns;
static uint64_t *g_bulk_begin_ns, *g_bulk_end_ns; /* per batch */
static uint64_t *g_interval;                      /* the requests' interval ids */
static eq_item *g_queue;                          /* the run queue of one batch */
static int g_queued;

void eq_parse(int i) {
  (void)i;
  ACC_SPIN_UNITS(3);
}
void eq_handle_get(int i) {
  (void)i;
  ACC_SPIN_UNITS(5);
}
void eq_write_reply(int i) { ACC_SPIN_UNITS(g_reply_u[i]); }
void eq_handle_bulk(int b) { ACC_SPIN_UNITS(g_bulk_u[b]); }

/* One step of the loop: accept a request (begin its interval and queue its handler), serve
 * a queued request (its interval ends), or run a bulk job (no interval). */
void eq_dispatch(eq_item item) {
  int i = item.index;
  switch (item.kind) {
  case EQ_ACCEPT:
    g_begin_ns[i] = ACC_NOW_NS();
    VPROF_INTERVAL_BEGIN(g_interval[i], "request");
    eq_parse(i);
    g_queue[g_queued++] = (eq_item){EQ_SERVE, i};
    g_detach_ns[i] = ACC_NOW_NS();
    VPROF_DETACH(g_interval[i]);
    break;
  case EQ_SERVE:
    VPROF_ATTACH(g_interval[i]);
    g_attach_ns[i] = ACC_NOW_NS();
    eq_handle_get(i);
    eq_write_reply(i);
    VPROF_INTERVAL_END(g_interval[i]);
    g_lat_ns[i] = (double)(ACC_NOW_NS() - g_begin_ns[i]);
    break;
  case EQ_BULK:
    g_bulk_begin_ns[i] = ACC_NOW_NS();
    eq_handle_bulk(i);
    g_bulk_end_ns[i] = ACC_NOW_NS();
    break;
  }
}

/* The loop: batch b holds requests kPerBatch * b .. (at most n); it starts kGapUnits after
 * the previous batch's last step (the loop idles, spinning, as if waiting for readiness). */
static void eq_loop(int n, int batches) {
  for (int b = 0; b < batches; ++b) {
    ACC_SPIN_UNITS(kGapUnits);
    int first = b * kPerBatch, last = first + kPerBatch < n ? first + kPerBatch : n;
    g_queued = 0;
    int bulk = g_bulk_u[b] > 0, slots = last - first + bulk;
    int bulk_slot = g_bulk_slot[b] < slots - 1 ? g_bulk_slot[b] : slots - 1;
    for (int slot = 0, i = first; slot < slots; ++slot) {
      if (bulk && slot == bulk_slot)
        g_queue[g_queued++] = (eq_item){EQ_BULK, b}; /* accepting it is queueing it */
      else
        eq_dispatch((eq_item){EQ_ACCEPT, i++});
    }
    for (int k = 0; k < g_queued; ++k)
      eq_dispatch(g_queue[k]);
  }
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  int batches = (n + kPerBatch - 1) / kPerBatch;
  uint64_t rng = o.seed;
  g_reply_u = acc_xcalloc(n, sizeof(double));
  g_cause_ns = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  g_begin_ns = acc_xcalloc(n, sizeof(uint64_t));
  g_detach_ns = acc_xcalloc(n, sizeof(uint64_t));
  g_attach_ns = acc_xcalloc(n, sizeof(uint64_t));
  g_interval = acc_xcalloc(n, sizeof(uint64_t));
  g_bulk_u = acc_xcalloc(batches, sizeof(double));
  g_bulk_slot = acc_xcalloc(batches, sizeof(int));
  g_bulk_begin_ns = acc_xcalloc(batches, sizeof(uint64_t));
  g_bulk_end_ns = acc_xcalloc(batches, sizeof(uint64_t));
  g_queue = acc_xcalloc(kPerBatch + 1, sizeof(eq_item));
  for (int i = 0; i < n; ++i)
    g_reply_u[i] = acc_uniform(&rng, 0, 60);
  for (int b = 0; b < batches; ++b) {
    int bulk = acc_uniform(&rng, 0, 3) < 1;
    double work = acc_uniform(&rng, 200, 1800);
    g_bulk_slot[b] = (int)acc_uniform(&rng, 0, kPerBatch + 1);
    g_bulk_u[b] = bulk ? work : 0;
  }
  eq_loop(n, batches);
  for (int i = 0; i < n; ++i) { /* the bulk job of i's batch, if it ran while i waited */
    int b = i / kPerBatch;
    if (g_bulk_u[b] > 0 && g_bulk_begin_ns[b] >= g_detach_ns[i] &&
        g_bulk_end_ns[b] <= g_attach_ns[i])
      g_cause_ns[i] = (double)(g_bulk_end_ns[b] - g_bulk_begin_ns[b]);
  }
  acc_report("eventq", "eq_handle_bulk", g_lat_ns, g_cause_ns, NULL, n, -1);
  return 0;
}
