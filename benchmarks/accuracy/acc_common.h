/* Shared helpers of the accuracy programs: an exact busy-wait, a seeded RNG, per-interval
 * truth bookkeeping and the output lines the tests parse. Everything on the timed path is
 * a macro that calls only libc, so the instrumenter never finds a user function below the
 * planted one (a helper function here would become the "cause" after expansion). */
#ifndef VPROF_ACC_COMMON_H
#define VPROF_ACC_COMMON_H

/* Every program includes this header first: clock_gettime, mallopt and friends need the
 * POSIX/GNU declarations even under a strict -std=c11. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <vprof/vprof.h>

/* Monotonic nanoseconds (vDSO clock_gettime, ~20-30 ns). GNU statement expression. */
#define ACC_NOW_NS()                                                                               \
  __extension__({                                                                                  \
    struct timespec acc_ts_;                                                                       \
    clock_gettime(CLOCK_MONOTONIC, &acc_ts_);                                                      \
    (uint64_t)acc_ts_.tv_sec * 1000000000ull + (uint64_t)acc_ts_.tv_nsec;                          \
  })

/* Voluntary context switches of the calling thread so far (getrusage, RUSAGE_THREAD): a
 * blocking call that went to sleep adds one, so the difference around it says whether it
 * slept, which is what gives the kernel recorder a wake-up edge (a call that found its data
 * already there, or whose data came in before it slept, has none). */
#define ACC_VOLUNTARY_SWITCHES()                                                                   \
  __extension__({                                                                                  \
    struct rusage acc_ru_;                                                                         \
    getrusage(RUSAGE_THREAD, &acc_ru_);                                                            \
    acc_ru_.ru_nvcsw;                                                                              \
  })

/* Busy-waits until `ns` nanoseconds have passed (not sleep: sleep jitter would add
 * variance that is not planted). Error: one clock read, ~30 ns. */
#define ACC_SPIN_NS(ns)                                                                            \
  do {                                                                                             \
    uint64_t acc_end_ = ACC_NOW_NS() + (uint64_t)(ns);                                             \
    while (ACC_NOW_NS() < acc_end_) {                                                              \
    }                                                                                              \
  } while (0)

/* Durations in the programs are written in units "u" of ACC_UNIT_NS = 10 us, so the
 * planted variances (~1e6 us^2) dwarf what a loaded 2-core machine adds (millisecond
 * preemptions, wake-up delays): a single 4 ms stall among 300 intervals moves a share by
 * ~4 pp at this scale, but by ~100 pp at 1 u = 1 us. Shares do not depend on the unit. */
#define ACC_UNIT_NS 10000.0
#define ACC_SPIN_UNITS(u) ACC_SPIN_NS((uint64_t)((u) * ACC_UNIT_NS))

/* splitmix64: deterministic, seedable, good enough for drawing durations. Used only
 * outside the timed intervals (draws are made up front). */
static inline uint64_t acc_rng_next(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
/* Uniform double in [lo, hi). */
static inline double acc_uniform(uint64_t *state, double lo, double hi) {
  return lo + (hi - lo) * ((double)(acc_rng_next(state) >> 11) * (1.0 / 9007199254740992.0));
}

/* Command line shared by every program: --intervals N, --seed S, --truth (accepted; the
 * truth line is always printed), plus --threads N for the multi-threaded ones. */
typedef struct acc_options {
  int intervals;
  uint64_t seed;
  int threads;
} acc_options;

static inline void acc_parse(int argc, char **argv, acc_options *o, int default_intervals) {
  o->intervals = default_intervals;
  o->seed = 42;
  o->threads = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--truth"))
      continue;
    if (i + 1 < argc && !strcmp(argv[i], "--intervals")) {
      o->intervals = atoi(argv[++i]);
    } else if (i + 1 < argc && !strcmp(argv[i], "--seed")) {
      o->seed = strtoull(argv[++i], NULL, 10);
    } else if (i + 1 < argc && !strcmp(argv[i], "--threads")) {
      o->threads = atoi(argv[++i]);
    } else {
      fprintf(stderr,
              "%s: unknown argument '%s'\nusage: %s [--intervals N] [--seed S] [--threads N] "
              "[--truth]\n",
              argv[0], argv[i], argv[0]);
      exit(2);
    }
  }
  if (o->intervals < 10 || o->intervals > 1000000) {
    fprintf(stderr, "%s: --intervals must be in [10, 1000000]\n", argv[0]);
    exit(2);
  }
}

static inline void *acc_xcalloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  if (!p) {
    fprintf(stderr, "accuracy: out of memory\n");
    exit(1);
  }
  return p;
}

static inline double acc_mean(const double *x, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i)
    s += x[i];
  return s / n;
}
/* Sample covariance (n - 1 denominator, as the analyzer's variance tree). */
static inline double acc_cov(const double *x, const double *y, int n) {
  double mx = acc_mean(x, n), my = acc_mean(y, n), s = 0;
  for (int i = 0; i < n; ++i)
    s += (x[i] - mx) * (y[i] - my);
  return s / (n - 1);
}

/* Prints the two lines the tests parse:
 *   accuracy: program=<p> intervals=<n> mean_us=<m> var_us2=<v>     (real microseconds)
 *   truth: program=<p> cause=<qualified name>[,<second>] kind=var|cov share=<s> analytic=<a>
 * `lat_ns` are the interval latencies, `cause_ns` (and `cause2_ns` for kind=cov) the
 * realised per-interval time of the planted factor. share = Var(cause)/Var(L), or
 * 2 Cov(cause, cause2)/Var(L) for a covariance factor. analytic < 0 prints "nan"
 * (a cause whose distribution the program does not control, e.g. fsync). */
static inline void acc_report(const char *program, const char *cause, const double *lat_ns,
                              const double *cause_ns, const double *cause2_ns, int n,
                              double analytic) {
  double var_l = acc_cov(lat_ns, lat_ns, n);
  double term = cause2_ns ? 2.0 * acc_cov(cause_ns, cause2_ns, n) : acc_cov(cause_ns, cause_ns, n);
  printf("accuracy: program=%s intervals=%d mean_us=%.3f var_us2=%.3f\n", program, n,
         acc_mean(lat_ns, n) / 1e3, var_l / 1e6);
  if (analytic >= 0)
    printf("truth: program=%s cause=%s kind=%s share=%.4f analytic=%.4f\n", program, cause,
           cause2_ns ? "cov" : "var", var_l > 0 ? term / var_l : 0.0, analytic);
  else
    printf("truth: program=%s cause=%s kind=%s share=%.4f analytic=nan\n", program, cause,
           cause2_ns ? "cov" : "var", var_l > 0 ? term / var_l : 0.0);
  fflush(stdout);
}

/* For a cause whose variance lies mostly in one call of an outside function (a statement of
 * the cause, the deepest node a profiler can time there): prints
 *   call: program=<name> callee=<callee> share=<Var(call)/Var(L)>
 * so that a factor naming that call is judged by the call's own realised share, not the
 * whole function's (the rest of the function weighs more on a loaded machine). */
static inline void acc_report_call(const char *program, const char *callee, const double *lat_ns,
                                   const double *call_ns, int n) {
  double var_l = acc_cov(lat_ns, lat_ns, n);
  printf("call: program=%s callee=%s share=%.4f\n", program, callee,
         var_l > 0 ? acc_cov(call_ns, call_ns, n) / var_l : 0.0);
  fflush(stdout);
}

/* For a cause reached along wake-up edges: prints the lines of acc_report for the
 * interval's total time in the cause, self + waker (one function over all its calling
 * contexts), and adds to the truth line
 *   share_self=<Var(self)/Var(L)> share_waker=<Var(waker)/Var(L)>
 *   mean_self_us=<mean self time> mean_waker_us=<mean waker time>
 * the shares of the two calling contexts a profiler's tree shows as separate nodes: the
 * interval's own call, and the waker's call under the wait node. Modifies `self_ns` into
 * the total. */
static inline void acc_report_wakeup(const char *program, const char *cause, const double *lat_ns,
                                     double *self_ns, const double *waker_ns, int n) {
  double var_l = acc_cov(lat_ns, lat_ns, n);
  double s_self = var_l > 0 ? acc_cov(self_ns, self_ns, n) / var_l : 0.0;
  double s_waker = var_l > 0 ? acc_cov(waker_ns, waker_ns, n) / var_l : 0.0;
  double total_var, m_self = acc_mean(self_ns, n), m_waker = acc_mean(waker_ns, n);
  for (int i = 0; i < n; ++i)
    self_ns[i] += waker_ns[i];
  total_var = acc_cov(self_ns, self_ns, n);
  printf("accuracy: program=%s intervals=%d mean_us=%.3f var_us2=%.3f\n", program, n,
         acc_mean(lat_ns, n) / 1e3, var_l / 1e6);
  printf("truth: program=%s cause=%s kind=var share=%.4f analytic=nan share_self=%.4f "
         "share_waker=%.4f mean_self_us=%.3f mean_waker_us=%.3f\n",
         program, cause, var_l > 0 ? total_var / var_l : 0.0, s_self, s_waker, m_self / 1e3,
         m_waker / 1e3);
  fflush(stdout);
}

/* The critical sections of one lock, for the realised term of a lock convoy (convoy,
 * spinlock): interval i runs on thread i % threads, the threads' intervals in order; its
 * begin, lock request, acquisition and critical section [cs_begin, cs_end]. `blocked[i]`
 * says whether i's acquisition waited (a custom lock knows it went to sleep); NULL: i
 * waited iff the previous holder still held the lock at i's request (the runtime's
 * trylock failed, as pthread_mutex_lock's interposer sees it). `woke[k]` says whether
 * section k's release woke a sleeper (acc_mutex_has_sleepers just before the unlock);
 * NULL: every release did. */
typedef struct acc_lock_sections {
  int n, threads;
  uint64_t *begin_ns, *req_ns, *acq_ns, *cs_begin_ns, *cs_end_ns;
  const unsigned char *blocked;
  unsigned char *woke;
  int *order, *pos; /* filled by acc_lock_path_times: acquisition order and its inverse */
} acc_lock_sections;

static inline acc_lock_sections acc_lock_sections_new(int n, int threads) {
  acc_lock_sections s;
  memset(&s, 0, sizeof s);
  s.n = n;
  s.threads = threads;
  s.begin_ns = (uint64_t *)acc_xcalloc(n, sizeof(uint64_t));
  s.req_ns = (uint64_t *)acc_xcalloc(n, sizeof(uint64_t));
  s.acq_ns = (uint64_t *)acc_xcalloc(n, sizeof(uint64_t));
  s.cs_begin_ns = (uint64_t *)acc_xcalloc(n, sizeof(uint64_t));
  s.cs_end_ns = (uint64_t *)acc_xcalloc(n, sizeof(uint64_t));
  return s;
}

/* 1 if unlocking `m` (held by the caller) wakes a thread asleep on it: glibc's normal mutex
 * keeps 2 in its lock word once a thread went to sleep on it (0 free, 1 held); a release
 * that finds 1 wakes nobody. Other libcs: 1 (every release counts as the waker). */
static inline unsigned char acc_mutex_has_sleepers(pthread_mutex_t *m) {
#if defined(__GLIBC__) && defined(__LP64__) && (defined(__x86_64__) || defined(__aarch64__))
  return __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) == 2;
#else
  (void)m;
  return 1;
#endif
}

/* Nanoseconds the calling thread has spent runnable but waiting for a CPU (the second field
 * of /proc/thread-self/schedstat: run queue and wake-up delays, preemptions), or -1 where the
 * kernel does not say (no schedstats). */
static inline int64_t acc_cpu_wait_ns(void) {
  FILE *f = fopen("/proc/thread-self/schedstat", "r");
  unsigned long long on_cpu = 0, waiting = 0;
  int got = f ? fscanf(f, "%llu %llu", &on_cpu, &waiting) : 0;
  if (f)
    fclose(f);
  return got == 2 ? (int64_t)waiting : -1;
}

/* The machine's load as a program's threads saw it: each thread's wall time and time
 * runnable but not running, summed over the threads that called acc_load_add. */
static int64_t acc_load_wall_ns_, acc_load_wait_ns_;
static int acc_load_unknown_;

typedef struct acc_load_start {
  uint64_t t0;
  int64_t wait0;
} acc_load_start;

/* Called by a thread where its measured work begins. */
static inline acc_load_start acc_load_begin(void) {
  acc_load_start s;
  s.wait0 = acc_cpu_wait_ns();
  s.t0 = ACC_NOW_NS();
  return s;
}

/* Called by the same thread where its measured work ends. */
static inline void acc_load_add(acc_load_start s) {
  int64_t wall = (int64_t)(ACC_NOW_NS() - s.t0), wait1 = acc_cpu_wait_ns();
  __atomic_fetch_add(&acc_load_wall_ns_, wall, __ATOMIC_RELAXED);
  if (s.wait0 < 0 || wait1 < 0)
    __atomic_store_n(&acc_load_unknown_, 1, __ATOMIC_RELAXED);
  else
    __atomic_fetch_add(&acc_load_wait_ns_, wait1 - s.wait0, __ATOMIC_RELAXED);
}

/* Prints `load: program=<name> cpu_wait=<fraction>`: the share of the measured threads' time
 * they were runnable but not running (preempted by other work, or woken and not yet on a
 * CPU; -1 where the kernel keeps no schedstats). The planted durations are spins: a machine
 * that takes the CPU from the threads adds unplanted variance wherever it lands. */
static inline void acc_print_load(const char *program) {
  int64_t wall = __atomic_load_n(&acc_load_wall_ns_, __ATOMIC_RELAXED);
  int64_t waited = __atomic_load_n(&acc_load_wait_ns_, __ATOMIC_RELAXED);
  int unknown = __atomic_load_n(&acc_load_unknown_, __ATOMIC_RELAXED);
  printf("load: program=%s cpu_wait=%.4f\n", program,
         unknown || wall <= 0 ? -1.0 : (double)waited / (double)wall);
}

/* One worker of acc_run_threads. */
typedef struct acc_worker_ {
  void *(*body)(void *);
  int t;
} acc_worker_;

static void *acc_worker_main_(void *arg) {
  acc_worker_ *w = (acc_worker_ *)arg;
  acc_load_start load = acc_load_begin();
  w->body((void *)(intptr_t)w->t);
  acc_load_add(load);
  return NULL;
}

/* Runs `body(t)` on `threads` new threads (t = 0 .. threads - 1) and joins them; exits
 * with a message naming `program` when one cannot be created. Prints the workers' load
 * (acc_print_load). */
static inline void acc_run_threads(const char *program, int threads, void *(*body)(void *)) {
  pthread_t *tids = (pthread_t *)acc_xcalloc(threads, sizeof(pthread_t));
  acc_worker_ *workers = (acc_worker_ *)acc_xcalloc(threads, sizeof(acc_worker_));
  for (int t = 0; t < threads; ++t) {
    workers[t].body = body;
    workers[t].t = t;
    if (pthread_create(&tids[t], NULL, acc_worker_main_, &workers[t]) != 0) {
      fprintf(stderr, "%s: pthread_create failed\n", program);
      exit(1);
    }
  }
  for (int t = 0; t < threads; ++t)
    pthread_join(tids[t], NULL);
  acc_print_load(program);
  free(workers);
  free(tids);
}

static const uint64_t *acc_sort_key_;
static inline int acc_by_key_(const void *a, const void *b) {
  uint64_t x = acc_sort_key_[*(const int *)a], y = acc_sort_key_[*(const int *)b];
  return x < y ? -1 : x > y;
}

static inline int acc_lock_waited_(const acc_lock_sections *s, int i) {
  int k = s->pos[i];
  if (k == 0)
    return 0;
  if (s->blocked)
    return s->blocked[i] != 0;
  return s->cs_end_ns[s->order[k - 1]] > s->req_ns[i];
}

/* The section whose release woke i (i waited): the last section before i's, in acquisition
 * order, that released the lock to a sleeper. Lock stealing: while i, woken, waits for a
 * CPU, its waker may take the lock again and release it to nobody; those sections ran
 * while i was runnable (its wake-up delay), not between i's sleep and its wake-up. None
 * found after i's request (the sleeper set 2 just after the releaser looked): the section
 * just before i's. */
static inline int acc_lock_waker_(const acc_lock_sections *s, int i) {
  for (int k = s->pos[i] - 1; k >= 0; --k) {
    int j = s->order[k];
    if (s->cs_end_ns[j] <= s->req_ns[i])
      break;
    if (!s->woke || s->woke[j])
      return j;
  }
  return s->order[s->pos[i] - 1];
}

/* The critical-path rule (walk back from the interval's end; where a thread was woken,
 * jump to the waker at its release; stop at the interval's begin) applied to the holders'
 * work: self_ns[i] = i's own critical section, waker_ns[i] = the critical sections on the
 * path between i's begin and its acquisition. Sections never overlap (one lock): the
 * section whose release woke i (acc_lock_waker_) is where the path jumps to the releaser's
 * thread; it walks that thread back to begin(i), taking every one of its sections there
 * (with lock stealing the releaser may have held the lock twice while i was asleep); where
 * one of those had waited itself, the path jumps on to its waker. */
static inline void acc_lock_path_times(acc_lock_sections *s, double *self_ns, double *waker_ns) {
  int n = s->n;
  s->order = (int *)acc_xcalloc(n, sizeof(int));
  s->pos = (int *)acc_xcalloc(n, sizeof(int));
  for (int i = 0; i < n; ++i)
    s->order[i] = i;
  acc_sort_key_ = s->cs_begin_ns;
  qsort(s->order, n, sizeof(int), acc_by_key_);
  for (int k = 0; k < n; ++k)
    s->pos[s->order[k]] = k;
  for (int i = 0; i < n; ++i) {
    double t = 0;
    uint64_t lo = s->begin_ns[i], hi = s->acq_ns[i];
    /* j: a section of the thread the path is on */
    int j = acc_lock_waited_(s, i) ? acc_lock_waker_(s, i) : -1;
    while (j >= 0) {
      int next = -1;
      for (int k = j; k >= 0 && s->cs_end_ns[k] > lo; k -= s->threads) {
        uint64_t a = s->cs_begin_ns[k] > lo ? s->cs_begin_ns[k] : lo;
        uint64_t b = s->cs_end_ns[k] < hi ? s->cs_end_ns[k] : hi;
        if (b > a)
          t += (double)(b - a);
        if (acc_lock_waited_(s, k) && s->acq_ns[k] > lo) { /* blocked here: on to its releaser */
          hi = s->acq_ns[k];
          next = acc_lock_waker_(s, k);
          break;
        }
      }
      j = next;
    }
    self_ns[i] = (double)(s->cs_end_ns[i] - s->cs_begin_ns[i]);
    waker_ns[i] = t;
  }
}

#endif /* VPROF_ACC_COMMON_H */
