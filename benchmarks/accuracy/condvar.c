/* Accuracy program "condvar": the interval waits on a condition variable that a helper
 * thread signals when its reply is ready. Per interval the main thread runs cv_prepare
 * (constant 10 u), posts a request (signal), waits on the condition variable, then runs
 * cv_finish, U(0, 375) u (Var 11719 u^2). The helper thread, woken by the request, runs
 * cv_compute_reply, U(0, 600) u (Var 30000 u^2), then signals. The helper is never
 * attached to the interval: the cause is reachable only along the wake-up edge
 * signal -> wait return. Var(L) = 41719 u^2 (+ wake-up jitter); planted share 0.719. */
#include "acc_common.h"

#include <pthread.h>

static double *g_work_u, *g_noise_u;
static double *g_cause_ns, *g_lat_ns;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_request_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t g_reply_cv = PTHREAD_COND_INITIALIZER;
static int g_request = -1; /* index asked for, -2 stop */
static int g_reply = -1;   /* index answered */

void cv_compute_reply(int i) { ACC_SPIN_UNITS(g_work_u[i]); }

static void *helper_main(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&g_mu);
    while (g_request == -1)
      pthread_cond_wait(&g_request_cv, &g_mu);
    int i = g_request;
    g_request = -1;
    pthread_mutex_unlock(&g_mu);
    if (i == -2)
      return NULL;
    uint64_t t = ACC_NOW_NS();
    cv_compute_reply(i);
    g_cause_ns[i] = (double)(ACC_NOW_NS() - t);
    pthread_mutex_lock(&g_mu);
    g_reply = i;
    pthread_cond_signal(&g_reply_cv);
    pthread_mutex_unlock(&g_mu);
  }
}

void cv_prepare(int i) {
  (void)i;
  ACC_SPIN_UNITS(10);
}
void cv_finish(int i) { ACC_SPIN_UNITS(g_noise_u[i]); }

void cv_await_reply(int i) {
  pthread_mutex_lock(&g_mu);
  g_request = i;
  pthread_cond_signal(&g_request_cv);
  while (g_reply != i)
    pthread_cond_wait(&g_reply_cv, &g_mu);
  pthread_mutex_unlock(&g_mu);
}

/* The root: one interval per query. */
void run_query(int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(iv, "query");
  cv_prepare(i);
  cv_await_reply(i);
  cv_finish(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
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
  for (int i = 0; i < n; ++i) {
    g_work_u[i] = acc_uniform(&rng, 0, 600);
    g_noise_u[i] = acc_uniform(&rng, 0, 375);
  }
  pthread_t helper;
  if (pthread_create(&helper, NULL, helper_main, NULL) != 0) {
    fprintf(stderr, "condvar: pthread_create failed\n");
    return 1;
  }
  for (int i = 0; i < n; ++i)
    run_query(i);
  pthread_mutex_lock(&g_mu);
  g_request = -2;
  pthread_cond_signal(&g_request_cv);
  pthread_mutex_unlock(&g_mu);
  pthread_join(helper, NULL);
  acc_report("condvar", "cv_compute_reply", g_lat_ns, g_cause_ns, NULL, n, 30000.0 / 41718.75);
  return 0;
}
