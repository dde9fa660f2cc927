// vprof-test: roots=main
#include <cstdio>
static int one(int x) { return x + 1; }
static double one(double x) { return x + 0.5; }
int main() {
  auto g = [](auto x) { return one(x); };
  auto nested = [](int x) {
    auto inner = [x](int y) { return one(x + y); };
    return inner(1);
  };
  std::printf("%d %.1f %d\n", g(1), g(1.0), nested(2));
  return 0;
}
