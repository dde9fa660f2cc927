/* Test program: instrumented functions (probes by hand) left by longjmp; the program
 * must compute the right result and leave ENTER records the depth rule can close. */
#include <vprof/probe.h>

#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;
static volatile int sink;

__attribute__((noinline)) static void inner(int x) {
  VPROF_PROBE_SCOPE(3);
  if (x > 0)
    longjmp(env, x);
  sink = x;
}

__attribute__((noinline)) static void mid(int x) {
  VPROF_PROBE_SCOPE(2);
  inner(x);
  sink = x;
}

__attribute__((noinline)) static int other(int x) {
  VPROF_PROBE_SCOPE(4);
  return x * 2;
}

__attribute__((noinline)) static int outer(int x) {
  VPROF_PROBE_SCOPE(1);
  volatile int got = 0;
  if ((got = setjmp(env)) == 0)
    mid(x);
  return other(got);
}

int main(void) {
  printf("%d\n", outer(21));
  return 0;
}
