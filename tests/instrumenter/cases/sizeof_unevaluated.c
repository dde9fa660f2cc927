// vprof-test: roots=main
#include <stdio.h>
static long big(void) { return 1L << 40; }
int small(void) { return 7; }
int main(void) {
  size_t s = sizeof(big()) + sizeof small();
  int g = _Generic(small(), int: 1, default: 0);
  __typeof__(big()) t = big();
  printf("%zu %d %ld\n", s, g, t);
  return 0;
}
