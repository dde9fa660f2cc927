// vprof-test: roots=main depth=1
#include <stdarg.h>
#include <stdio.h>
static int sum(int n, ...) {
  va_list ap;
  int s = 0;
  va_start(ap, n);
  for (int i = 0; i < n; i++)
    s += va_arg(ap, int);
  va_end(ap);
  return s;
}
int main(void) {
  printf("%d %s\n", sum(3, 1, 2, 3), "ok");
  fprintf(stdout, "%d\n", sum(0));
  return 0;
}
