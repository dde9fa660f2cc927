// vprof-test: roots=@annotated depth=0
#include <stdint.h>
#include <stdio.h>
#include <vprof/vprof.h>
static int step(int i) { return i * i; }
static int handle(int n) {
  uint64_t iv;
  int s = 0;
  VPROF_INTERVAL_BEGIN(iv, "request");
  for (int i = 0; i < n; i++)
    s += step(i);
  VPROF_INTERVAL_END(iv);
  return s;
}
int main(void) {
  printf("%d\n", handle(4));
  return 0;
}
