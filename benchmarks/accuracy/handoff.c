/* Accuracy program "handoff": the interval crosses threads through a user queue. The main
 * thread begins each interval in submit_request (constant 10 u of preparation), publishes
 * it on a mutex+condvar queue (VPROF_HANDOFF_SEND) and detaches; the consumer thread takes
 * it (VPROF_HANDOFF_RECV), attaches, runs serve_request and ends the interval there. The
 * planted cause is serve_compute, U(0, 600) u (Var 30000 u^2), on the consumer side
 * of the hand-off; serve_encode is U(0, 450) u (Var 16875 u^2); serve_decode constant.
 * One request is in flight at a time, so no queueing delay: Var(L) = 46875 u^2 plus the
 * (small) hand-off latency jitter, planted share 30000/46875 = 0.64. */
#include "acc_common.h"

#include <pthread.h>

static double *g_work_u, *g_noise_u;
static double *g_cause_ns, *g_lat_ns;
static uint64_t *g_start_ns;

/* A one-slot request queue plus a completion flag (outside the interval). */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_pending = -1; /* request index waiting for the consumer, -1 none, -2 stop */
static uint64_t g_pending_iv;
static int g_done = -1; /* last completed request */

void serve_decode(int i) {
  (void)i;
  ACC_SPIN_UNITS(8);
}
void serve_compute(int i) { ACC_SPIN_UNITS(g_work_u[i]); }
void serve_encode(int i) { ACC_SPIN_UNITS(g_noise_u[i]); }

/* Consumer-side root: runs the request and ends its interval. */
void serve_request(int i, uint64_t iv) {
  VPROF_ATTACH(iv);
  serve_decode(i);
  uint64_t t = ACC_NOW_NS();
  serve_compute(i);
  g_cause_ns[i] = (double)(ACC_NOW_NS() - t);
  serve_encode(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - g_start_ns[i]);
}

static void *consumer_main(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&g_mu);
    while (g_pending == -1)
      pthread_cond_wait(&g_cv, &g_mu);
    int i = g_pending;
    uint64_t iv = g_pending_iv;
    g_pending = -1;
    pthread_mutex_unlock(&g_mu);
    if (i == -2)
      return NULL;
    VPROF_HANDOFF_RECV(&g_pending);
    serve_request(i, iv);
    pthread_mutex_lock(&g_mu);
    g_done = i;
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
  }
}

void submit_prepare(int i) {
  (void)i;
  ACC_SPIN_UNITS(10);
}

/* Producer-side root: begins the interval and hands it to the consumer. */
void submit_request(int i) {
  uint64_t iv;
  g_start_ns[i] = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(iv, "request");
  submit_prepare(i);
  pthread_mutex_lock(&g_mu);
  VPROF_HANDOFF_SEND(&g_pending);
  g_pending = i;
  g_pending_iv = iv;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
  VPROF_DETACH(iv);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  g_work_u = acc_xcalloc(n, sizeof(double));
  g_noise_u = acc_xcalloc(n, sizeof(double));
  g_cause_ns = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  g_start_ns = acc_xcalloc(n, sizeof(uint64_t));
  for (int i = 0; i < n; ++i) {
    g_work_u[i] = acc_uniform(&rng, 0, 600);
    g_noise_u[i] = acc_uniform(&rng, 0, 450);
  }
  pthread_t consumer;
  if (pthread_create(&consumer, NULL, consumer_main, NULL) != 0) {
    fprintf(stderr, "handoff: pthread_create failed\n");
    return 1;
  }
  for (int i = 0; i < n; ++i) {
    submit_request(i);
    pthread_mutex_lock(&g_mu);
    while (g_done != i)
      pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
  }
  pthread_mutex_lock(&g_mu);
  g_pending = -2;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
  pthread_join(consumer, NULL);
  acc_report("handoff", "serve_compute", g_lat_ns, g_cause_ns, NULL, n, 30000.0 / 46875.0);
  return 0;
}
