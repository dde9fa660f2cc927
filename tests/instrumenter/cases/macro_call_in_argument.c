// vprof-test: roots=main
// A call written in a macro's argument: refused when the macro adds code around it
// (`MAX(f(a), b)` expands the argument twice: the call runs twice), timed at the
// invocation when the argument is all the macro expands to (`ID(f(3))`). The call that a
// macro expands to is timed even when its arguments hold calls (`SQUARE(f(4))`: the probe
// around the invocation times both).
#include <stdio.h>
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define ID(x) x
#define SQUARE(x) square(x)
static int g_calls;
static int f(int x) {
  ++g_calls;
  return x * 2;
}
static int square(int x) { return x * x; }
int main(void) {
  int a = 5, b = 3;
  int m = MAX(f(a), b);
  int i = ID(f(3));
  int s = SQUARE(f(4));
  printf("%d %d %d %d\n", m, i, s, g_calls);
  return 0;
}
