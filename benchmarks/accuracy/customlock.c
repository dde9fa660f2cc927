/* Accuracy program "customlock": a convoy behind a lock the program writes itself, as
 * database engines do (spin a little, then sleep on a futex; Drepper's "Futexes Are Tricky",
 * mutex 2): the runtime cannot see it, so the lock marks its blocking part with
 * VPROF_WAIT_BEGIN/END and its release with VPROF_WAKE. Each of --threads (default 2)
 * threads runs intervals: cl_prepare (constant 10 u), cl_lock, cl_holder_work
 * U(20, 300) u (Var 6533 u^2) in the critical section, cl_unlock, then cl_reply U(0, 200) u.
 * The lock is held ~80 % of the time: the waits' variance is the holder's cl_holder_work,
 * reached only through the marked wake-up edge.
 * The realised term follows the critical-path rule (acc_lock_path_times): an acquisition
 * "waited" when the lock went to sleep (the wait marks were written) and the previous
 * holder's release (its VPROF_WAKE, right after its section) came after the wait began;
 * a release before that is clamped to the wait's start by the analyzer, as here. */
#include "acc_common.h"

#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

/* 0 free, 1 held, 2 held with sleepers */
typedef struct cl_mutex {
  atomic_int state;
} cl_mutex;

static double *g_work_u, *g_noise_u;
static double *g_lat_ns, *g_self_ns, *g_waker_ns;
static acc_lock_sections g_sec; /* the truth's record of every critical section */
static int g_n, g_threads;
static cl_mutex g_log_lock;

static void cl_futex(atomic_int *word, int op, int value) {
  syscall(SYS_futex, (int *)word, op | FUTEX_PRIVATE_FLAG, value, NULL, NULL, 0);
}

/* Returns the time the lock decided to sleep (the wait mark), or 0 when it did not. */
uint64_t cl_lock(cl_mutex *m) {
  for (int spin = 0; spin < 200; ++spin) {
    int free_state = 0;
    if (atomic_compare_exchange_weak(&m->state, &free_state, 1))
      return 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  uint64_t asleep = ACC_NOW_NS();
  VPROF_WAIT_BEGIN(m);
  int c = atomic_exchange(&m->state, 2);
  while (c != 0) {
    cl_futex(&m->state, FUTEX_WAIT, 2);
    c = atomic_exchange(&m->state, 2);
  }
  VPROF_WAIT_END(m);
  return asleep;
}

void cl_unlock(cl_mutex *m) {
  VPROF_WAKE(m);
  if (atomic_fetch_sub(&m->state, 1) != 1) {
    atomic_store(&m->state, 0);
    cl_futex(&m->state, FUTEX_WAKE, 1);
  }
}

void cl_holder_work(int i) { ACC_SPIN_UNITS(g_work_u[i]); }

void cl_prepare(int i) {
  (void)i;
  ACC_SPIN_UNITS(10);
}
void cl_reply(int i) { ACC_SPIN_UNITS(g_noise_u[i]); }

void cl_append_log(int i) {
  uint64_t asleep = cl_lock(&g_log_lock);
  g_sec.acq_ns[i] = ACC_NOW_NS();
  /* not asleep: the request is the acquisition (no wait, no waker) */
  g_sec.req_ns[i] = asleep ? asleep : g_sec.acq_ns[i];
  g_sec.cs_begin_ns[i] = g_sec.acq_ns[i];
  cl_holder_work(i);
  g_sec.cs_end_ns[i] = ACC_NOW_NS();
  cl_unlock(&g_log_lock);
}

/* The root: one interval per commit. */
void handle_commit(int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  g_sec.begin_ns[i] = t0;
  VPROF_INTERVAL_BEGIN(iv, "commit");
  cl_prepare(i);
  cl_append_log(i);
  cl_reply(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
}

static void *worker_main(void *arg) {
  int t = (int)(intptr_t)arg;
  for (int i = t; i < g_n; i += g_threads)
    handle_commit(i);
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
  for (int i = 0; i < g_n; ++i) {
    g_work_u[i] = acc_uniform(&rng, 20, 300);
    g_noise_u[i] = acc_uniform(&rng, 0, 200);
  }
  acc_run_threads("customlock", g_threads, worker_main);
  /* waited iff it slept and the previous holder's release came after it asked */
  acc_lock_path_times(&g_sec, g_self_ns, g_waker_ns);
  acc_report_wakeup("customlock", "cl_holder_work", g_lat_ns, g_self_ns, g_waker_ns, g_n);
  return 0;
}
