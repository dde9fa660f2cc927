/* Accuracy program "eventloop": one thread serves many requests interleaved, the shape of
 * an nginx worker or Apache's event MPM. Four connections each send requests one after the
 * other; a request is served in three steps, each run when its connection is ready (the
 * loop picks the connection ready first and waits for it, as epoll_wait would): parse,
 * the handler, the reply. Between two steps the request waits 300 u for its "network"
 * (a constant), and 300 u after its reply the connection sends the next one. The loop
 * thread attaches to a request's interval for each step and detaches after it
 * (VPROF_ATTACH/DETACH), so one thread carries many intervals in turn.
 * Handlers: ev_handle_get (4 u) for 3 requests in 4, ev_handle_scan U(50, 250) u for the
 * rest — the planted cause (Var ≈ 5050 u^2 per request). ev_write_reply is 2 u + U(0, 20) u.
 * A request also queues behind the other connections' steps when they are ready at the same
 * time (the loop is busy ~15 % of the time): that delay is unplanted variance, so no closed
 * form is given and the realised share, Var(own time in ev_handle_scan) / Var(L), is the
 * reference. */
#include "acc_common.h"

enum { kConns = 4, kIoUnits = 600, kThinkUnits = 600 };

typedef struct ev_conn {
  uint64_t interval; /* the request's interval while one is open */
  int request;       /* index of the request being served, -1 when none is left */
  int step;          /* 0 parse, 1 handler, 2 reply */
  uint64_t ready_ns; /* when its next step can run */
} ev_conn;

static double *g_scan_u, *g_reply_u; /* drawn up front; g_scan_u = 0: a GET */
static double *g_cause_ns, *g_lat_ns;
static uint64_t *g_begin_ns;

void ev_parse(int i) {
  (void)i;
  ACC_SPIN_UNITS(3);
}
void ev_handle_get(int i) {
  (void)i;
  ACC_SPIN_UNITS(4);
}
void ev_handle_scan(int i) { ACC_SPIN_UNITS(g_scan_u[i]); }
void ev_write_reply(int i) { ACC_SPIN_UNITS(2 + g_reply_u[i]); }

/* One readiness event: runs the connection's next step on behalf of its request. The
 * interval begins with the first step and ends with the reply. */
void ev_dispatch(ev_conn *c) {
  int i = c->request;
  if (c->step == 0) {
    g_begin_ns[i] = ACC_NOW_NS();
    VPROF_INTERVAL_BEGIN(c->interval, "request");
    ev_parse(i);
    VPROF_DETACH(c->interval);
  } else if (c->step == 1) {
    VPROF_ATTACH(c->interval);
    if (g_scan_u[i] > 0) {
      uint64_t t = ACC_NOW_NS();
      ev_handle_scan(i);
      g_cause_ns[i] = (double)(ACC_NOW_NS() - t);
    } else {
      ev_handle_get(i);
    }
    VPROF_DETACH(c->interval);
  } else {
    VPROF_ATTACH(c->interval);
    ev_write_reply(i);
    VPROF_INTERVAL_END(c->interval);
    g_lat_ns[i] = (double)(ACC_NOW_NS() - g_begin_ns[i]);
  }
}

/* The loop: the connection ready first runs its step; connection k serves requests
 * k, k + kConns, ... */
static void ev_loop(ev_conn *conns, int n) {
  for (;;) {
    ev_conn *next = NULL;
    for (int k = 0; k < kConns; ++k)
      if (conns[k].request >= 0 && (!next || conns[k].ready_ns < next->ready_ns))
        next = &conns[k];
    if (!next)
      return;
    while (ACC_NOW_NS() < next->ready_ns) {
      /* idle: waiting for readiness */
    }
    ev_dispatch(next);
    uint64_t now = ACC_NOW_NS();
    if (next->step < 2) {
      ++next->step;
      next->ready_ns = now + (uint64_t)(kIoUnits * ACC_UNIT_NS);
    } else {
      next->step = 0;
      next->request = next->request + kConns < n ? next->request + kConns : -1;
      next->ready_ns = now + (uint64_t)(kThinkUnits * ACC_UNIT_NS);
    }
  }
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  g_scan_u = acc_xcalloc(n, sizeof(double));
  g_reply_u = acc_xcalloc(n, sizeof(double));
  g_cause_ns = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  g_begin_ns = acc_xcalloc(n, sizeof(uint64_t));
  for (int i = 0; i < n; ++i) {
    int scan = acc_uniform(&rng, 0, 1) < 0.25;
    double work = acc_uniform(&rng, 50, 250);
    g_scan_u[i] = scan ? work : 0;
    g_reply_u[i] = acc_uniform(&rng, 0, 20);
  }
  ev_conn conns[kConns];
  uint64_t start = ACC_NOW_NS();
  for (int k = 0; k < kConns; ++k) {
    conns[k].interval = 0;
    conns[k].request = k < n ? k : -1;
    conns[k].step = 0;
    /* staggered arrivals */
    conns[k].ready_ns = start + (uint64_t)(k * 150 * ACC_UNIT_NS);
  }
  ev_loop(conns, n);
  acc_report("eventloop", "ev_handle_scan", g_lat_ns, g_cause_ns, NULL, n, -1);
  return 0;
}
