/* Test program: a process-shared mutex in a file mapping, used by the parent through
 * one address and by a forked child through a second mapping at another address; the
 * parent holds it until the child is blocked on it. Usage: shared FILE */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  pthread_mutexattr_t attr;
  pthread_mutex_t *m;
  atomic_int *step;
  struct timespec pause = {0, 3000000};
  char *a;
  int fd, status;
  pid_t child;
  if (argc != 2)
    return 2;
  fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || ftruncate(fd, 8192) != 0)
    return 1;
  a = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  step = (atomic_int *)a;
  m = (pthread_mutex_t *)(a + 4096 + 64);
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutex_init(m, &attr);
  pthread_mutex_lock(m);
  child = fork();
  if (child == 0) {
    /* a second mapping of the same file: another address, the same object */
    char *b = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    pthread_mutex_t *mb = (pthread_mutex_t *)(b + 4096 + 64);
    atomic_store((atomic_int *)b, 1);
    pthread_mutex_lock(mb);
    pthread_mutex_unlock(mb);
    printf("child %d %llx\n", (int)getpid(), (unsigned long long)(uintptr_t)mb);
    exit(0);
  }
  while (atomic_load(step) != 1)
    sched_yield();
  nanosleep(&pause, NULL);
  pthread_mutex_unlock(m);
  waitpid(child, &status, 0);
  printf("parent %d %llx\n", (int)getpid(), (unsigned long long)(uintptr_t)m);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
