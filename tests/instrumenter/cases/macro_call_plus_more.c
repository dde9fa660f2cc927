// vprof-test: roots=main
// Parentheses and a cast around the call are part of "the call" (`((long) g(x))`, the
// shape of PostgreSQL's palloc0_object): timed at the invocation. A macro that adds code
// of its own around the call (`(g(x) + 1)`, `-g(x)`, two calls) is refused: a probe at the
// invocation would time that code too.
#include <stdio.h>
#include <stdlib.h>
#define PLUS_ONE(x) (g(x) + 1)
#define NEG(x) -g(x)
#define BOTH(x) g(x) + g(x + 1)
#define AS_LONG(x) ((long)g(x))
#define PAREN(x) (g(x))
#define NEW_INTS(n) ((int *)calloc((n), sizeof(int)))
static int g(int x) { return x * 3; }
int main(void) {
  int a = PLUS_ONE(1);
  int b = NEG(2);
  int c = BOTH(3);
  long d = AS_LONG(4) + 1;
  int e = PAREN(5) * 2;
  int *p = NEW_INTS(4);
  if (!p)
    return 1;
  p[3] = 7;
  printf("%d %d %d %ld %d %d\n", a, b, c, d, e, p[3]);
  free(p);
  return 0;
}
