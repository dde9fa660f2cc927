// vprof-test: roots=main depth=1
// Not timed: the C library's clock reads (a probe pair costs more than the call; a spin
// loop on the clock would fill the trace) and the synchronization calls the runtime
// interposes (their blocking part is recorded as a wait). Other library calls and user
// calls are timed.
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static long g_count;
static long spin_ns(long ns) {
  struct timespec a, b;
  long spins = 0;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do {
    clock_gettime(CLOCK_MONOTONIC, &b);
    ++spins;
  } while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
  return spins > 0;
}
int main(void) {
  char buf[16];
  memset(buf, 0, sizeof buf);
  pthread_mutex_lock(&g_lock);
  g_count += spin_ns(1000);
  pthread_mutex_unlock(&g_lock);
  long ok = g_count + (time(NULL) > 0) + (clock() >= 0);
  printf("%ld %d\n", ok, buf[3]);
  return 0;
}
