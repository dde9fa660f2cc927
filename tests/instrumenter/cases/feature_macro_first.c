// vprof-test: roots=main std=c11
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
static char *fmt(int x) {
  char *s = NULL;
  if (asprintf(&s, "<%d>", x) < 0)
    return NULL;
  return s;
}
int main(void) {
  char *s = fmt(42);
  puts(s);
  free(s);
  return 0;
}
