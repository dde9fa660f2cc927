/* vprof-test: roots=main std=c89 flags=-pedantic -Wdeclaration-after-statement */
/* Strict C89 (older C code bases): the probes compile warning-free under -std=c89
 * -pedantic: the body probe is a declaration at the top of the block, a call-site probe a
 * statement expression marked __extension__. */
#include <stdio.h>

static int square(int x) {
  int y;
  y = x * x;
  return y;
}

static void report(const char *what, int v) { printf("%s=%d\n", what, v); }

int main(void) {
  int i, total;
  total = 0;
  for (i = 0; i < 4; i++)
    total += square(i);
  report("total", total);
  return total == 14 ? 0 : 1;
}
