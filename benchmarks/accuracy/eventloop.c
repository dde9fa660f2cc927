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
 * form is given and the realised shares are the reference. The cause shows in two calling
 * contexts (acc_report_wakeup): the request's own ev_handle_scan, and the other requests'
 * scans the loop ran while this one was detached — its queued waits open into the loop's
 * work in the gap (docs/analyzer.md, "Queueing on a loop"), the waker's call under
 * [wait:queue]. share_self and share_waker are those two nodes' shares; share is
 * ev_handle_scan's over both. */
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
/* the scans in the loop's order: [start, end] each, and the running sum of their times;
 * per request its two gaps [detach, attach] */
static uint64_t *g_scan_ns, *g_gap_ns;
static double *g_scan_sum_ns;
static int g_scans;

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
    g_gap_ns[4 * i] = ACC_NOW_NS();
  } else if (c->step == 1) {
    g_gap_ns[4 * i + 1] = ACC_NOW_NS();
    VPROF_ATTACH(c->interval);
    if (g_scan_u[i] > 0) {
      uint64_t t = ACC_NOW_NS(), e;
      ev_handle_scan(i);
      e = ACC_NOW_NS();
      g_cause_ns[i] = (double)(e - t);
      g_scan_ns[2 * g_scans] = t;
      g_scan_ns[2 * g_scans + 1] = e;
      g_scan_sum_ns[g_scans + 1] = g_scan_sum_ns[g_scans] + (double)(e - t);
      ++g_scans;
    } else {
      ev_handle_get(i);
    }
    VPROF_DETACH(c->interval);
    g_gap_ns[4 * i + 2] = ACC_NOW_NS();
  } else {
    g_gap_ns[4 * i + 3] = ACC_NOW_NS();
    VPROF_ATTACH(c->interval);
    ev_write_reply(i);
    VPROF_INTERVAL_END(c->interval);
    g_lat_ns[i] = (double)(ACC_NOW_NS() - g_begin_ns[i]);
  }
}

/* The first scan (in the loop's order) that starts at or after t. */
static int ev_first_scan_from(uint64_t t) {
  int lo = 0, hi = g_scans;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (g_scan_ns[2 * mid] < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Request i's time in the other requests' scans while it was detached: on one loop thread
 * a scan lies wholly inside a gap or outside it (its own scan runs attached). */
static double ev_waker_scan_ns(int i) {
  double sum = 0;
  for (int g = 0; g < 2; ++g) {
    uint64_t lo = g_gap_ns[4 * i + 2 * g], hi = g_gap_ns[4 * i + 2 * g + 1];
    int a = ev_first_scan_from(lo), b = a;
    while (b < g_scans && g_scan_ns[2 * b + 1] <= hi)
      ++b;
    sum += g_scan_sum_ns[b] - g_scan_sum_ns[a];
  }
  return sum;
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
  g_scan_ns = acc_xcalloc(2 * (size_t)n, sizeof(uint64_t));
  g_scan_sum_ns = acc_xcalloc((size_t)n + 1, sizeof(double));
  g_gap_ns = acc_xcalloc(4 * (size_t)n, sizeof(uint64_t));
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
  double *waker_ns = acc_xcalloc(n, sizeof(double));
  for (int i = 0; i < n; ++i)
    waker_ns[i] = ev_waker_scan_ns(i);
  acc_report_wakeup("eventloop", "ev_handle_scan", g_lat_ns, g_cause_ns, waker_ns, n);
  return 0;
}
