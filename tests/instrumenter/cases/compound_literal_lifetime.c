// vprof-test: roots=main
#include <stdio.h>
struct pt { int x, y; };
static const struct pt *id(const struct pt *p) { return p; }
static int sum(const struct pt *p) { return p->x + p->y; }
int main(void) {
  const struct pt *p = id(&(struct pt){1, 2});
  int s = sum(&(struct pt){3, 4});
  printf("%d %d\n", p->x, s);
  return 0;
}
