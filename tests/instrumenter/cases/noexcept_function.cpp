// vprof-test: roots=main
#include <cstdio>
static int leaf(int x) noexcept { return x ^ 5; }
static int mid(int x) noexcept { return leaf(x) + leaf(x + 1); }
int main() {
  static_assert(noexcept(mid(1)), "mid stays noexcept");
  std::printf("%d\n", mid(3));
  return 0;
}
