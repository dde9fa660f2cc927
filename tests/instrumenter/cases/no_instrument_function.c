// vprof-test: roots=quiet depth=0 unchanged
#include <stdio.h>
__attribute__((no_instrument_function)) static int quiet(int x) { return printf("%d\n", x); }
int main(void) { return quiet(1) < 0; }
