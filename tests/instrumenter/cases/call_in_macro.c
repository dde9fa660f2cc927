// vprof-test: roots=main
#include <stdio.h>
#define TWICE(e) ((e) + (e))
#define CALL_F() f(2)
static int f(int x) { return x + 1; }
int main(void) {
  int a = TWICE(f(1));
  int b = CALL_F();
  int c = f(3);
  printf("%d %d %d\n", a, b, c);
  return 0;
}
