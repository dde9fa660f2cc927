// vprof-test: roots=main depth=1
// The C library's clock reads are not timed (a probe pair costs more than the call; a
// spin loop on the clock would fill the trace); other library calls and user calls are.
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>
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
  long ok = spin_ns(1000) + (time(NULL) > 0) + (clock() >= 0);
  printf("%ld %d\n", ok, buf[3]);
  return 0;
}
