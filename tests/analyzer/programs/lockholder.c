/* End-to-end program for the analyzer: a worker runs annotated intervals that block on a
 * mutex held by a second thread while it "flushes" (probed site 3) for a varying time.
 * The analysis must name the holder's flush, through the wait node, as the top factor.
 * Usage: lockholder <intervals> */
#include <vprof/probe.h>
#include <vprof/vprof.h>

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void spin_us(long us) {
  long long end = now_ns() + us * 1000;
  while (now_ns() < end) {
  }
}

/* Sleeps rather than spins: the holder must leave the CPU while it holds the lock, so the
 * worker blocks on it even when both threads share one core (loaded CI machines). */
static long long flush_total_ns; /* measured like the probe does: the whole call */

static void flush_log(long us) {
  long long t0 = now_ns();
  {
    VPROF_PROBE_SCOPE(3);
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
  }
  flush_total_ns += now_ns() - t0;
}

/* Rounds are handed over with atomics (no sync records): the holder takes the lock and
 * publishes the round; the worker announces that it is about to lock; the holder then
 * "flushes" (sleeps) while the worker blocks, unlocks, and waits for the round's end. */
static volatile int round_held, round_locking, round_done;

static void *holder(void *arg) {
  int n = *(int *)arg;
  unsigned x = 12345;
  for (int r = 1; r <= n; ++r) {
    pthread_mutex_lock(&m);
    __atomic_store_n(&round_held, r, __ATOMIC_RELEASE);
    while (__atomic_load_n(&round_locking, __ATOMIC_ACQUIRE) != r)
      sched_yield();
    x = x * 1103515245u + 12345u;
    flush_log(100 + (long)((x >> 16) % 400)); /* 100..500 us, varies */
    pthread_mutex_unlock(&m);
    while (__atomic_load_n(&round_done, __ATOMIC_ACQUIRE) != r)
      sched_yield();
  }
  return NULL;
}

static void transaction(int r) {
  VPROF_PROBE_SCOPE(1);
  spin_us(20);
  __atomic_store_n(&round_locking, r, __ATOMIC_RELEASE);
  __extension__({
    VPROF_PROBE_SCOPE(2);
    pthread_mutex_lock(&m);
  });
  spin_us(10);
  pthread_mutex_unlock(&m);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200;
  pthread_t h;
  pthread_create(&h, NULL, holder, &n);
  for (int r = 1; r <= n; ++r) {
    while (__atomic_load_n(&round_held, __ATOMIC_ACQUIRE) != r)
      sched_yield();
    uint64_t id;
    VPROF_INTERVAL_BEGIN(id, "Txn");
    transaction(r);
    VPROF_INTERVAL_END(id);
    __atomic_store_n(&round_done, r, __ATOMIC_RELEASE);
  }
  pthread_join(h, NULL);
  printf("ok %d %lld\n", n, flush_total_ns);
  return 0;
}
