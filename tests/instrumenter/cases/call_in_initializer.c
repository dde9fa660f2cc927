// vprof-test: roots=main
#include <stdio.h>
struct pair { int a, b; };
static int sq(int x) { return x * x; }
int main(void) {
  int x = sq(3), y = sq(x);
  int arr[3] = {sq(1), sq(2), sq(3)};
  struct pair p = {.a = sq(4), .b = sq(5)};
  printf("%d %d %d %d %d\n", x, y, arr[2], p.a, p.b);
  return 0;
}
