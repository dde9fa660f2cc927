// vprof-test: roots=main
#include <stdio.h>
static int start(void) { return 1; }
static int limit(void) { return 5; }
static int step(int i) { return i + 2; }
int main(void) {
  int s = 0;
  for (int i = start(); i < limit(); i = step(i))
    s += i;
  for (;;) {
    if (step(s) > 10)
      break;
    s = step(s);
  }
  printf("%d\n", s);
  return 0;
}
