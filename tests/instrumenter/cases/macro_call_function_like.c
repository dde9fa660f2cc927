// vprof-test: roots=main
// A function-like macro whose whole expansion is one call is timed at its invocation,
// as a statement and inside an expression (`if (xx_fsync(fd) != 0)`); the call's value
// and type are kept, and an argument is evaluated once.
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <unistd.h>
#define xx_fsync(fd) fdatasync(fd)
#define twice(x) add_one(add_one(x))
static int g_calls;
static int add_one(int x) {
  ++g_calls;
  return x + 1;
}
static int next_fd(int *fd) { return (*fd)++; }
int main(void) {
  FILE *f = tmpfile();
  if (!f)
    return 1;
  int fd = fileno(f);
  xx_fsync(fd);
  if (xx_fsync(fd) != 0)
    return 2;
  int copy = fd;
  int rc = xx_fsync(next_fd(&copy));
  int v = twice(40) * 2;
  printf("%d %d %d %d\n", rc, copy - fd, v, g_calls);
  fclose(f);
  return 0;
}
