/* Accuracy program "rwlock": readers wait for a writer behind a pthread rwlock. A
 * maintenance thread loops: wrlock, rw_rebuild_index U(50, 600) u, unlock, then a
 * constant 150 u pause. Each interval (main thread) runs rw_prepare (constant 10 u),
 * takes the read lock, rw_lookup (constant 8 u), unlocks, then rw_reply U(0, 200) u
 * (Var 3333 u^2). Whether an interval waits, and for how long, depends on where the
 * writer is in its random section: the wait's variance is the writer's rw_rebuild_index,
 * reached along the wake-up edge wrunlock -> rdlock. Realised term per interval, by the
 * critical-path rule: if the read lock waited (a writer section held it at the request),
 * the path jumps to the writer at its unlock and walks the writer's thread back to the
 * interval's begin, so T(s) = the writer's section time inside [begin(s), acquisition]
 * (all of it share_waker); otherwise 0. The queueing makes a closed form impractical:
 * analytic share not given (nan). */
#include "acc_common.h"

#include <pthread.h>
#include <stdatomic.h>

static double *g_noise_u, *g_writer_u;
static double *g_lat_ns, *g_self_ns, *g_waker_ns;
static uint64_t *g_begin_ns, *g_req_ns, *g_acq_ns;
static uint64_t *g_wr_begin_ns, *g_wr_end_ns; /* writer sections, in time order */
static int g_writer_max, g_writer_count;
static atomic_int g_stop;
static pthread_rwlock_t g_index_lock = PTHREAD_RWLOCK_INITIALIZER;

void rw_rebuild_index(int w) { ACC_SPIN_UNITS(g_writer_u[w]); }

static void *writer_main(void *arg) {
  (void)arg;
  acc_load_start load = acc_load_begin();
  int w = 0;
  while (!atomic_load(&g_stop) && w < g_writer_max) {
    pthread_rwlock_wrlock(&g_index_lock);
    g_wr_begin_ns[w] = ACC_NOW_NS();
    rw_rebuild_index(w);
    g_wr_end_ns[w] = ACC_NOW_NS();
    pthread_rwlock_unlock(&g_index_lock);
    ++w;
    ACC_SPIN_UNITS(150);
  }
  g_writer_count = w;
  acc_load_add(load);
  return NULL;
}

void rw_prepare(int i) {
  (void)i;
  ACC_SPIN_UNITS(10);
}
void rw_lookup(int i) {
  (void)i;
  ACC_SPIN_UNITS(8);
}
void rw_reply(int i) { ACC_SPIN_UNITS(g_noise_u[i]); }

void rw_read_index(int i) {
  g_req_ns[i] = ACC_NOW_NS();
  pthread_rwlock_rdlock(&g_index_lock);
  g_acq_ns[i] = ACC_NOW_NS();
  rw_lookup(i);
  pthread_rwlock_unlock(&g_index_lock);
}

/* The root: one interval per lookup. */
void serve_lookup(int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  g_begin_ns[i] = t0;
  VPROF_INTERVAL_BEGIN(iv, "lookup");
  rw_prepare(i);
  rw_read_index(i);
  rw_reply(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  g_writer_max = 4 * n;
  g_noise_u = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  g_self_ns = acc_xcalloc(n, sizeof(double)); /* stays 0: readers never run the cause */
  g_waker_ns = acc_xcalloc(n, sizeof(double));
  g_begin_ns = acc_xcalloc(n, sizeof(uint64_t));
  g_req_ns = acc_xcalloc(n, sizeof(uint64_t));
  g_acq_ns = acc_xcalloc(n, sizeof(uint64_t));
  g_writer_u = acc_xcalloc(g_writer_max, sizeof(double));
  g_wr_begin_ns = acc_xcalloc(g_writer_max, sizeof(uint64_t));
  g_wr_end_ns = acc_xcalloc(g_writer_max, sizeof(uint64_t));
  for (int i = 0; i < n; ++i)
    g_noise_u[i] = acc_uniform(&rng, 0, 200);
  for (int w = 0; w < g_writer_max; ++w)
    g_writer_u[w] = acc_uniform(&rng, 50, 600);
  pthread_t writer;
  if (pthread_create(&writer, NULL, writer_main, NULL) != 0) {
    fprintf(stderr, "rwlock: pthread_create failed\n");
    return 1;
  }
  acc_load_start load = acc_load_begin();
  for (int i = 0; i < n; ++i)
    serve_lookup(i);
  acc_load_add(load);
  atomic_store(&g_stop, 1);
  pthread_join(writer, NULL);
  acc_print_load("rwlock");

  int w = 0; /* both sequences are in time order: one merge pass */
  for (int i = 0; i < n; ++i) {
    double t = 0;
    while (w < g_writer_count && g_wr_end_ns[w] <= g_begin_ns[i])
      ++w;
    int held = 0; /* a writer held the lock when the reader asked: it waited */
    for (int k = w; k < g_writer_count && g_wr_begin_ns[k] <= g_req_ns[i]; ++k)
      held |= g_wr_end_ns[k] > g_req_ns[i];
    if (held) /* the path goes through the writer */
      for (int k = w; k < g_writer_count && g_wr_begin_ns[k] < g_acq_ns[i]; ++k) {
        uint64_t lo = g_wr_begin_ns[k] > g_begin_ns[i] ? g_wr_begin_ns[k] : g_begin_ns[i];
        uint64_t hi = g_wr_end_ns[k] < g_acq_ns[i] ? g_wr_end_ns[k] : g_acq_ns[i];
        if (hi > lo)
          t += (double)(hi - lo);
      }
    g_waker_ns[i] = t;
  }
  acc_report_wakeup("rwlock", "rw_rebuild_index", g_lat_ns, g_self_ns, g_waker_ns, n);
  return 0;
}
