// vprof-test: roots=main depth=0
#include <stdio.h>
struct ops { int (*apply)(int); };
static int neg(int x) { return -x; }
static int dbl(int x) { return 2 * x; }
int main(void) {
  int (*fp)(int) = dbl;
  struct ops o = {neg};
  struct ops *po = &o;
  printf("%d %d %d %d\n", fp(3), (*fp)(4), o.apply(5), po->apply(6));
  return 0;
}
