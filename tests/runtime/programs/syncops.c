/* Test program: condition variable, semaphore, rwlock and error paths. Prints object
 * addresses and every return code / errno, which must not change under tracing. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_cond_t c_timeout = PTHREAD_COND_INITIALIZER;
static sem_t s, s_timeout;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static atomic_int waiting, sem_announced;
static int flag, sem_wait_rc = -2;

#define ADDR(p) ((unsigned long long)(uintptr_t)(p))

static void *consumer(void *arg) {
  (void)arg;
  pthread_mutex_lock(&m);
  atomic_store(&waiting, 1);
  while (!flag)
    pthread_cond_wait(&c, &m);
  pthread_mutex_unlock(&m);
  atomic_store(&sem_announced, 1);
  sem_wait_rc = sem_wait(&s);
  return NULL;
}

static struct timespec in_ms(int ms) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_nsec += ms * 1000000L;
  t.tv_sec += t.tv_nsec / 1000000000L;
  t.tv_nsec %= 1000000000L;
  return t;
}

int main(void) {
  pthread_t th;
  pthread_mutex_t ec;
  pthread_mutexattr_t attr;
  struct timespec t, pause = {0, 5000000};
  int rc;
  sem_init(&s, 0, 0);
  sem_init(&s_timeout, 0, 0);
  printf("objects m=%llx c=%llx ct=%llx s=%llx st=%llx rw=%llx\n", ADDR(&m), ADDR(&c),
         ADDR(&c_timeout), ADDR(&s), ADDR(&s_timeout), ADDR(&rw));
  fflush(stdout);

  /* condvar: the consumer is inside pthread_cond_wait once we own m */
  pthread_create(&th, NULL, consumer, NULL);
  while (!atomic_load(&waiting))
    sched_yield();
  pthread_mutex_lock(&m);
  flag = 1;
  printf("signal %d\n", pthread_cond_signal(&c));
  pthread_mutex_unlock(&m);

  /* semaphore: the consumer blocks in sem_wait, we post after a pause */
  while (!atomic_load(&sem_announced))
    sched_yield();
  nanosleep(&pause, NULL);
  printf("sem_post %d\n", sem_post(&s));
  pthread_join(th, NULL);
  printf("sem_wait %d\n", sem_wait_rc);

  /* timeouts */
  pthread_mutex_lock(&m);
  t = in_ms(10);
  printf("cond_timedwait %d (ETIMEDOUT=%d)\n", pthread_cond_timedwait(&c_timeout, &m, &t),
         ETIMEDOUT);
  pthread_mutex_unlock(&m);
  printf("signal-unwaited %d\n", pthread_cond_signal(&c_timeout)); /* nobody waits */
  errno = 0;
  rc = sem_trywait(&s_timeout);
  printf("sem_trywait %d errno %d (EAGAIN=%d)\n", rc, errno, EAGAIN);
  t = in_ms(10);
  errno = 0;
  rc = sem_timedwait(&s_timeout, &t);
  printf("sem_timedwait %d errno %d\n", rc, errno);
  sem_post(&s_timeout);
  errno = 0;
  rc = sem_trywait(&s_timeout);
  printf("sem_trywait %d errno %d\n", rc, errno);

  /* rwlock */
  printf("rdlock %d\n", pthread_rwlock_rdlock(&rw));
  printf("trywrlock %d (EBUSY=%d)\n", pthread_rwlock_trywrlock(&rw), EBUSY);
  printf("unlock %d\n", pthread_rwlock_unlock(&rw));
  printf("wrlock %d\n", pthread_rwlock_wrlock(&rw));
  printf("unlock %d\n", pthread_rwlock_unlock(&rw));

  /* error codes pass through unchanged */
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
  pthread_mutex_init(&ec, &attr);
  printf("unlock-unowned %d\n", pthread_mutex_unlock(&ec));
  printf("lock %d\n", pthread_mutex_lock(&ec));
  printf("relock %d\n", pthread_mutex_lock(&ec));
  printf("trylock %d\n", pthread_mutex_trylock(&ec));
  printf("unlock %d\n", pthread_mutex_unlock(&ec));
  return 0;
}
