/* Test program: one uncontended lock/unlock of each mutex kind (normal, recursive with a
 * nested lock, errorcheck, adaptive, priority-inherit, robust) and an unwaited
 * cond_signal/broadcast and sem_post. Prints "name address" lines. At VPROF_SYNC=1 only
 * the kinds whose lock word is not read (PI, robust) may write records. */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>

static void use(const char *name, int type, int protocol, int robust) {
  static pthread_mutex_t m[8];
  static int n;
  pthread_mutexattr_t a;
  pthread_mutex_t *p = &m[n++];
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, type);
  pthread_mutexattr_setprotocol(&a, protocol);
  pthread_mutexattr_setrobust(&a, robust);
  if (pthread_mutex_init(p, &a) != 0) {
    printf("skip %s\n", name);
    return;
  }
  if (pthread_mutex_lock(p) != 0)
    printf("lockfail %s\n", name);
  if (type == PTHREAD_MUTEX_RECURSIVE) {
    pthread_mutex_lock(p);
    pthread_mutex_unlock(p);
  }
  pthread_mutex_unlock(p);
  printf("%s %llx\n", name, (unsigned long long)(uintptr_t)p);
}

int main(void) {
  static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
  static sem_t s;
  use("normal", PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_STALLED);
  use("recursive", PTHREAD_MUTEX_RECURSIVE, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_STALLED);
  use("errorcheck", PTHREAD_MUTEX_ERRORCHECK, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_STALLED);
  use("adaptive", PTHREAD_MUTEX_ADAPTIVE_NP, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_STALLED);
  use("pi", PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_INHERIT, PTHREAD_MUTEX_STALLED);
  use("robust", PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_ROBUST);
  sem_init(&s, 0, 0);
  pthread_cond_signal(&c);
  pthread_cond_broadcast(&c);
  sem_post(&s);
  sem_wait(&s); /* uncontended: the post left the count at 1 */
  printf("cond %llx\nsem %llx\n", (unsigned long long)(uintptr_t)&c,
         (unsigned long long)(uintptr_t)&s);
  return 0;
}
