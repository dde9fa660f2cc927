/* Accuracy program "convoy": a lock convoy whose variance is the holder's work. Each of
 * --threads (default 2) threads runs intervals: convoy_prepare (constant 10 u), then
 * pthread_mutex_lock(&g_table_lock), convoy_holder_work U(20, 300) u (Var 6533 u^2)
 * inside the critical section, unlock, then convoy_reply U(0, 200) u (Var 3333 u^2).
 * The lock is held ~80 % of the time, so most intervals wait for the other thread's
 * critical section: the wait's variance is the *holder's* convoy_holder_work, and the
 * profiler must follow the wake-up edge unlock -> lock to name it (not just the wait).
 * The realised term follows the critical-path rule (walk back from the interval's end;
 * where a thread was woken, jump to the waker at its release; stop at the interval's
 * begin): T_holder(s) = own critical section (share_self) + the critical sections on
 * the path between s's begin and its acquisition (share_waker): from the section whose
 * release woke s (the lock word said a thread slept on it), every section of the
 * releaser's thread back to s's begin (with lock stealing, more than one), and where one
 * of them had waited, its waker's, and so on. An acquisition "waited" when the previous
 * holder still held the lock at the request (the runtime's trylock failed). Sections the
 * releaser ran after waking s, while s waited for a CPU, are s's wake-up delay: off the
 * holders' path (a loaded machine makes many).
 * share = Var(T_holder)/Var(L); queueing makes a closed form impractical, so the analytic
 * value is not given (nan) and the realised share is the reference. */
#include "acc_common.h"

static double *g_work_u, *g_noise_u;
static double *g_lat_ns, *g_self_ns, *g_waker_ns;
static acc_lock_sections g_sec; /* the truth's record of every critical section */
static int g_n, g_threads;
static pthread_mutex_t g_table_lock = PTHREAD_MUTEX_INITIALIZER;

void convoy_holder_work(int i) { ACC_SPIN_UNITS(g_work_u[i]); }

void convoy_prepare(int i) {
  (void)i;
  ACC_SPIN_UNITS(10);
}
void convoy_reply(int i) { ACC_SPIN_UNITS(g_noise_u[i]); }

void convoy_update_table(int i) {
  g_sec.req_ns[i] = ACC_NOW_NS();
  pthread_mutex_lock(&g_table_lock);
  g_sec.acq_ns[i] = ACC_NOW_NS();
  g_sec.cs_begin_ns[i] = g_sec.acq_ns[i];
  convoy_holder_work(i);
  g_sec.cs_end_ns[i] = ACC_NOW_NS();
  g_sec.woke[i] = acc_mutex_has_sleepers(&g_table_lock);
  pthread_mutex_unlock(&g_table_lock);
}

/* The root: one interval per update. */
void handle_update(int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  g_sec.begin_ns[i] = t0;
  VPROF_INTERVAL_BEGIN(iv, "update");
  convoy_prepare(i);
  convoy_update_table(i);
  convoy_reply(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
}

static void *worker_main(void *arg) {
  int t = (int)(intptr_t)arg;
  for (int i = t; i < g_n; i += g_threads)
    handle_update(i);
  return NULL;
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  g_n = o.intervals;
  g_threads = o.threads > 0 ? o.threads : 2;
  uint64_t rng = o.seed;
  g_work_u = acc_xcalloc(g_n, sizeof(double));
  g_noise_u = acc_xcalloc(g_n, sizeof(double));
  g_lat_ns = acc_xcalloc(g_n, sizeof(double));
  g_self_ns = acc_xcalloc(g_n, sizeof(double));
  g_waker_ns = acc_xcalloc(g_n, sizeof(double));
  g_sec = acc_lock_sections_new(g_n, g_threads);
  g_sec.woke = acc_xcalloc(g_n, sizeof(unsigned char));
  for (int i = 0; i < g_n; ++i) {
    g_work_u[i] = acc_uniform(&rng, 20, 300);
    g_noise_u[i] = acc_uniform(&rng, 0, 200);
  }
  acc_run_threads("convoy", g_threads, worker_main);
  acc_lock_path_times(&g_sec, g_self_ns, g_waker_ns);
  acc_report_wakeup("convoy", "convoy_holder_work", g_lat_ns, g_self_ns, g_waker_ns, g_n);
  return 0;
}
