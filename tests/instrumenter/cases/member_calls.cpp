// vprof-test: roots=main
#include <cstdio>
struct Counter {
  int n = 0;
  Counter &inc() { ++n; return *this; }
  int value() const { return n; }
  static int twice(int x) { return 2 * x; }
  int run() { return inc().inc().value() + twice(n); }
};
int main() {
  Counter c;
  Counter *p = &c;
  p->inc();
  int r = c.run();
  std::printf("%d %d %d\n", r, p->value(), Counter::twice(4));
  return 0;
}
