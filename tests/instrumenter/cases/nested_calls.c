// vprof-test: roots=main
#include <stdio.h>
static int inc(int x) { return x + 1; }
static int add(int a, int b) { return a + b; }
int main(void) {
  int v = add(inc(inc(1)), add(inc(2), 3));
  printf("%d\n", inc(add(v, inc(v))));
  return 0;
}
