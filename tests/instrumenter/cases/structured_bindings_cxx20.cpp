// vprof-test: roots=main std=c++20
#include <cstdio>
#include <utility>
static std::pair<int, int> two() { return {3, 4}; }
static int add(int a, int b) { return a + b; }
int main() {
  auto [a, b] = two();
  int s = add(a, b);
  std::printf("%d\n", s);
  return 0;
}
