// vprof-test: roots=main depth=1 unbalanced
#include <setjmp.h>
#include <stdio.h>
static jmp_buf env;
static void thrower(int x) {
  if (x > 1)
    longjmp(env, x);
}
int main(void) {
  volatile int tries = 0;
  if (setjmp(env) != 0) {
    printf("caught after %d\n", tries);
    return 0;
  }
  for (;;) {
    tries++;
    thrower(tries);
  }
}
