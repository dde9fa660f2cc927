/* vprof-test: roots=main std=gnu89 flags=-Wdeclaration-after-statement */
#include <stdio.h>
static int f(int x) { return x + 1; }
int main(void) {
  int a = f(1);
  int b;
  b = f(a);
  {
    int c = f(b);
    printf("%d %d %d\n", a, b, c);
  }
  return 0;
}
