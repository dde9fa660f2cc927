// vprof-test: roots=main
#include <stdio.h>
static int counter;
static void bump(void) { counter++; }
static int get(void) { return counter; }
int main(void) {
  bump();
  (void)get();
  bump(), bump();
  get();
  printf("%d\n", get());
  return 0;
}
