// vprof-test: roots=gen depth=0 unchanged
#include <stdio.h>
#define DEFINE_GEN(name) static int name(void) { return puts(#name); }
DEFINE_GEN(gen)
int main(void) { return gen() < 0; }
