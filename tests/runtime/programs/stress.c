/* Test program: T threads each emit N records, arg = thread index << 32 | sequence.
 * Usage: stress T N */
#include <vprof/probe.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t n_events;

static void *run(void *arg) {
  uint64_t base = (uint64_t)(uintptr_t)arg << 32, i;
  for (i = 0; i < n_events; i++)
    vprof_emit_(VPROF_REC_ENTER, base | i);
  return NULL;
}

int main(int argc, char **argv) {
  pthread_t th[256];
  int t, n_threads;
  if (argc != 3)
    return 2;
  n_threads = atoi(argv[1]);
  n_events = strtoull(argv[2], NULL, 10);
  if (n_threads < 1 || n_threads > 256)
    return 2;
  for (t = 0; t < n_threads; t++)
    if (pthread_create(&th[t], NULL, run, (void *)(uintptr_t)t) != 0)
      return 1;
  for (t = 0; t < n_threads; t++)
    pthread_join(th[t], NULL);
  printf("done\n");
  return 0;
}
