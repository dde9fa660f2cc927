// vprof-test: roots=work depth=1
#include <stdio.h>
#include <stdlib.h>
static int fail_at(int step, int bad) { return step == bad; }
static int work(int bad) {
  int rc = -1;
  char *a = malloc(4);
  if (fail_at(1, bad))
    goto out;
  char *b = malloc(4);
  if (fail_at(2, bad))
    goto free_b;
  rc = 0;
free_b:
  free(b);
out:
  free(a);
  return rc;
}
int main(void) {
  printf("%d %d %d\n", work(1), work(2), work(3));
  return 0;
}
