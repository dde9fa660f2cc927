// vprof-test: roots=Widget::Widget depth=0
#include <cstdio>
static int seed() { return 41; }
struct Widget {
  int id = seed();       // default member initializer: not a function body, not probed
  int extra;
  Widget() : extra(seed()) { id++; }  // mem-initializers are not probed either
};
int main() {
  Widget w;
  std::printf("%d %d\n", w.id, w.extra);
  return 0;
}
