// vprof-test: roots=check depth=1
#include <stdio.h>
#include <stdlib.h>
_Noreturn static void die(const char *m) {
  fprintf(stderr, "%s\n", m);
  exit(3);
}
static int check(int x) {
  if (x >= 0)
    return x;
  die("negative");
}
int main(void) {
  printf("%d\n", check(5));
  return 0;
}
