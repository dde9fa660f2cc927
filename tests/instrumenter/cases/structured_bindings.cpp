// vprof-test: roots=main std=c++17
#include <cstdio>
#include <utility>
static std::pair<int, int> two() { return {3, 4}; }
static int add(int a, int b) { return a + b; }
int main() {
  auto [a, b] = two();
  int s = add(a, b);
  int t = add(1, 2);
  std::printf("%d %d\n", s, t);
  return 0;
}
