// vprof-test: roots=cube depth=0 unchanged
#include <cstdio>
constexpr int sq(int x) { return x * x; }
constexpr int cube(int x) { return sq(x) * x; }
static_assert(cube(2) == 8, "compile time");
int main() {
  std::printf("%d\n", cube(3));
  return 0;
}
