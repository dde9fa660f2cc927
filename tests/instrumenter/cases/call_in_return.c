// vprof-test: roots=outer depth=1
#include <stdio.h>
static int twice(int x) { return 2 * x; }
static void note(int x) { printf("note %d\n", x); }
static void say(int x) { return note(x); }
static int outer(int x) {
  if (x < 0)
    return twice(-x);
  say(x);
  return twice(x) + 1;
}
int main(void) {
  printf("%d %d\n", outer(3), outer(-2));
  return 0;
}
