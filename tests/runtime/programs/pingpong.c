/* Test program: two threads hand one mutex back and forth R times; the next owner is
 * already blocked in pthread_mutex_lock when the current owner unlocks (it announces
 * itself, the owner waits 2 ms). Prints the mutex address. Usage: pingpong R */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static atomic_int held = -1;      /* round whose owner holds m */
static atomic_int announced = -1; /* round whose owner is about to call lock */
static int rounds;

static void *run(void *arg) {
  int me = (int)(intptr_t)arg, r;
  struct timespec pause = {0, 2000000};
  for (r = me; r < rounds; r += 2) {
    if (r > 0) {
      while (atomic_load(&held) != r - 1)
        sched_yield();
      atomic_store(&announced, r);
    }
    pthread_mutex_lock(&m);
    atomic_store(&held, r);
    if (r + 1 < rounds) {
      while (atomic_load(&announced) != r + 1)
        sched_yield();
      nanosleep(&pause, NULL);
    }
    pthread_mutex_unlock(&m);
  }
  return NULL;
}

int main(int argc, char **argv) {
  pthread_t a, b;
  if (argc != 2)
    return 2;
  rounds = atoi(argv[1]);
  pthread_create(&a, NULL, run, (void *)0);
  pthread_create(&b, NULL, run, (void *)1);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  printf("%llx\n", (unsigned long long)(uintptr_t)&m);
  return 0;
}
