// vprof-test: roots=@annotated depth=1
/* A handler table in a global initializer: the call through it gets candidate edges to
 * every address-taken function of its type, so depth 1 plans the handlers (not `unused`,
 * whose address is never taken, nor `ratio`, of another type). */
#include <stdint.h>
#include <stdio.h>
#include <vprof/vprof.h>
typedef int (*handler)(int);
static int on_a(int x) { return x + 1; }
static int on_b(int x) { return x * 3; }
static double ratio(int x) { return x / 2.0; }
int unused(int x) { return x; }
static handler table[2] = {on_a, on_b};
static double (*conv)(int) = ratio;
static int serve(int k, int x) {
  uint64_t iv;
  VPROF_INTERVAL_BEGIN(iv, "req");
  int r = table[k](x);
  VPROF_INTERVAL_END(iv);
  return r;
}
int main(void) {
  printf("%d %d %.1f %d\n", serve(0, 4), serve(1, 4), conv(3), unused(1));
  return 0;
}
