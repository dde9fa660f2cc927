// vprof-test: roots=main
// An invocation split by a preprocessor directive (legal as an extension): refused —
// text around it could land in another branch. The same call on one line is timed.
#include <stdio.h>
#define ADD(a, b) add(a, b)
static int add(int a, int b) { return a + b; }
int main(void) {
  int x = ADD(1,
#ifdef NOT_DEFINED
              100
#else
              2
#endif
  );
  int y = ADD(3, 4);
  printf("%d %d\n", x, y);
  return 0;
}
