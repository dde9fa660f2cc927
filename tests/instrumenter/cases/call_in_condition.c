// vprof-test: roots=main
#include <stdio.h>
static int positive(int x) { return x > 0; }
static int next(int *i) { return ++*i < 4; }
int main(void) {
  int i = 0, n = 0;
  if (positive(3))
    n++;
  while (next(&i))
    n += 2;
  do {
    n--;
  } while (positive(n - 5));
  printf("n=%d i=%d\n", n, i);
  return 0;
}
