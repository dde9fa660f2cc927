// vprof-test: roots=main
#include <stdio.h>
static int calls;
static int t(void) { calls++; return 1; }
static int f(void) { calls++; return 0; }
int main(void) {
  int a = t() || f();
  int b = f() && t();
  int c = t() ? f() : t();
  printf("%d %d %d calls=%d\n", a, b, c, calls);
  return 0;
}
