/* Accuracy program "futexlock": intervals wait behind a lock the program writes itself on
 * a raw futex (spin a little, then FUTEX_WAIT; Drepper's "Futexes Are Tricky", mutex 2),
 * with no pthread call and no vprof marks: no interposer sees it, and only the kernel's
 * scheduler wake-ups pair the sleeper's FUTEX_WAIT with the holder's FUTEX_WAKE (compare
 * customlock, the same lock with VPROF_WAIT_BEGIN/END + VPROF_WAKE marks, and rwlock, the
 * same shape behind a pthread rwlock). A flusher thread loops: fl_lock, fl_flush_log
 * U(50, 600) u (Var 25521 u^2), fl_unlock, then a 150 u pause, asleep (no interval's path
 * runs through it, and a spinning pause kept the woken appender off the CPU: 0.53-0.60
 * realised at load 3 against 0.73-0.76 asleep, with waits stretched over two sections by
 * the flusher taking the lock again first). The main thread
 * runs one interval per append, arriving just after a flush began (it sleeps on a second
 * futex, outside the interval, until the flusher begins a section after its last append
 * ended, then spins U(0, 40) u): fl_prepare
 * (constant 10 u), the lock, fl_copy_entry (constant 8 u), the unlock, then fl_reply
 * U(0, 300) u (Var 7500 u^2). So nearly every interval sleeps for nearly all of a random
 * section: the wait's variance is the flusher's fl_flush_log, and the interval's own code
 * never runs it (share_self = 0). (Arrivals at random times, as in rwlock, left a loaded
 * 2-core machine few collisions: the flusher, starved of CPU, ran a fifth of its sections
 * and the realised share fell to 0.02-0.5; arrivals at any point of a running section gave
 * 0.48-0.56 on a quiet machine, where the shorter residual waits vary less.)
 * Realised term per interval, by the critical-path rule: if the lock slept in the kernel
 * (a FUTEX_WAIT returned 0: a FUTEX_WAKE woke it), the path jumps to the flusher at its
 * wake and walks the flusher's thread back to the interval's begin, so T(s) = the
 * flusher's section time inside [begin(s), acquisition] (all of it share_waker);
 * otherwise (the spin got the lock, or FUTEX_WAIT found the word changed) 0. Queueing and
 * the arrival's place in the section make a closed form impractical: analytic share not
 * given (nan; about 0.77 when every interval waits for a whole section). */
#include "acc_common.h"

#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

/* 0 free, 1 held, 2 held with sleepers */
typedef struct fl_mutex {
  atomic_int state;
} fl_mutex;

static double *g_noise_u, *g_offset_u, *g_flush_u;
static double *g_lat_ns, *g_self_ns, *g_waker_ns;
static uint64_t *g_begin_ns, *g_acq_ns;
static unsigned char *g_slept;                /* interval i's lock slept in FUTEX_WAIT */
static uint64_t *g_fl_begin_ns, *g_fl_end_ns; /* flusher sections, in time order */
static int g_flush_max, g_flush_count;
static atomic_int g_stop;
static atomic_int g_sections;     /* sections the flusher has begun (a futex word) */
static atomic_int g_flusher_done; /* out of sections: appends no longer wait for one */
static fl_mutex g_log_lock;

/* Returns whether the lock slept in the kernel (a FUTEX_WAIT that a FUTEX_WAKE ended). */
int fl_lock(fl_mutex *m) {
  for (int spin = 0; spin < 100; ++spin) {
    int free_state = 0;
    if (atomic_compare_exchange_weak(&m->state, &free_state, 1))
      return 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  int slept = 0;
  int c = atomic_exchange(&m->state, 2);
  while (c != 0) {
    /* 0: woken by FUTEX_WAKE; -1 (EAGAIN): the word changed before the sleep */
    if (syscall(SYS_futex, (int *)&m->state, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 2, NULL, NULL, 0) ==
        0)
      slept = 1;
    c = atomic_exchange(&m->state, 2);
  }
  return slept;
}

void fl_unlock(fl_mutex *m) {
  if (atomic_fetch_sub(&m->state, 1) != 1) {
    atomic_store(&m->state, 0);
    syscall(SYS_futex, (int *)&m->state, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
  }
}

void fl_flush_log(int w) { ACC_SPIN_UNITS(g_flush_u[w]); }

/* The flusher thread (the waker). */
void *flusher_main(void *arg) {
  (void)arg;
  struct timespec pause = {0, (long)(150 * ACC_UNIT_NS)};
  int w = 0;
  while (!atomic_load(&g_stop) && w < g_flush_max) {
    fl_lock(&g_log_lock);
    atomic_fetch_add(&g_sections, 1);
    syscall(SYS_futex, (int *)&g_sections, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
    g_fl_begin_ns[w] = ACC_NOW_NS();
    fl_flush_log(w);
    g_fl_end_ns[w] = ACC_NOW_NS();
    fl_unlock(&g_log_lock);
    ++w;
    nanosleep(&pause, NULL); /* off every interval's path: an append begins in a section */
  }
  g_flush_count = w;
  /* out of sections (a starved main thread): the appends left run without a flusher */
  atomic_store(&g_flusher_done, 1);
  atomic_fetch_add(&g_sections, 1);
  syscall(SYS_futex, (int *)&g_sections, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
  return NULL;
}

void fl_prepare(int i) {
  (void)i;
  ACC_SPIN_UNITS(10);
}
void fl_copy_entry(int i) {
  (void)i;
  ACC_SPIN_UNITS(8);
}
void fl_reply(int i) { ACC_SPIN_UNITS(g_noise_u[i]); }

void fl_append(int i) {
  g_slept[i] = (unsigned char)fl_lock(&g_log_lock);
  g_acq_ns[i] = ACC_NOW_NS();
  fl_copy_entry(i);
  fl_unlock(&g_log_lock);
}

/* The root: one interval per append. */
void handle_append(int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  g_begin_ns[i] = t0;
  VPROF_INTERVAL_BEGIN(iv, "append");
  fl_prepare(i);
  fl_append(i);
  fl_reply(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  g_flush_max = 8 * n;
  g_noise_u = acc_xcalloc(n, sizeof(double));
  g_offset_u = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  g_self_ns = acc_xcalloc(n, sizeof(double)); /* stays 0: intervals never run the cause */
  g_waker_ns = acc_xcalloc(n, sizeof(double));
  g_begin_ns = acc_xcalloc(n, sizeof(uint64_t));
  g_acq_ns = acc_xcalloc(n, sizeof(uint64_t));
  g_slept = acc_xcalloc(n, 1);
  g_flush_u = acc_xcalloc(g_flush_max, sizeof(double));
  g_fl_begin_ns = acc_xcalloc(g_flush_max, sizeof(uint64_t));
  g_fl_end_ns = acc_xcalloc(g_flush_max, sizeof(uint64_t));
  for (int i = 0; i < n; ++i) {
    g_noise_u[i] = acc_uniform(&rng, 0, 300);
    g_offset_u[i] = acc_uniform(&rng, 0, 40);
  }
  for (int w = 0; w < g_flush_max; ++w)
    g_flush_u[w] = acc_uniform(&rng, 50, 600);
  pthread_t flusher;
  if (pthread_create(&flusher, NULL, flusher_main, NULL) != 0) {
    fprintf(stderr, "futexlock: pthread_create failed\n");
    return 1;
  }
  int seen = 0;
  for (int i = 0; i < n; ++i) {
    while (!atomic_load(&g_flusher_done) && atomic_load(&g_sections) == seen)
      syscall(SYS_futex, (int *)&g_sections, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, seen, NULL, NULL, 0);
    ACC_SPIN_UNITS(g_offset_u[i]);
    handle_append(i);
    seen = atomic_load(&g_sections); /* the next append waits for a section begun after */
  }
  atomic_store(&g_stop, 1);
  pthread_join(flusher, NULL);

  int w = 0; /* both sequences are in time order: one merge pass */
  for (int i = 0; i < n; ++i) {
    double t = 0;
    while (w < g_flush_count && g_fl_end_ns[w] <= g_begin_ns[i])
      ++w;
    if (g_slept[i]) /* the path goes through the flusher */
      for (int k = w; k < g_flush_count && g_fl_begin_ns[k] < g_acq_ns[i]; ++k) {
        uint64_t lo = g_fl_begin_ns[k] > g_begin_ns[i] ? g_fl_begin_ns[k] : g_begin_ns[i];
        uint64_t hi = g_fl_end_ns[k] < g_acq_ns[i] ? g_fl_end_ns[k] : g_acq_ns[i];
        if (hi > lo)
          t += (double)(hi - lo);
      }
    g_waker_ns[i] = t;
  }
  acc_report_wakeup("futexlock", "fl_flush_log", g_lat_ns, g_self_ns, g_waker_ns, n);
  return 0;
}
