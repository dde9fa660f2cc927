// vprof-test: roots=main
#include <stdio.h>
static int n(void) { return 4; }
int main(void) {
  int a[n()];
  for (int i = 0; i < n(); i++)
    a[i] = i;
  printf("%d %zu\n", a[3], sizeof a / sizeof a[0]);
  return 0;
}
