// vprof-test: roots=main
#include <stdio.h>
struct v { int x, y; };
static struct v mk(int a) { struct v r = {a, a * 2}; return r; }
static struct v *ptr(struct v *p) { return p; }
int main(void) {
  struct v a = mk(2);
  int y = mk(3).y;
  ptr(&a)->x = 9;
  printf("%d %d %d\n", a.x, a.y, y);
  return 0;
}
