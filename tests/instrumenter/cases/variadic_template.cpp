// vprof-test: roots=main
#include <cstdio>
static int one(int x) { return x + 1; }
static int sum() { return 0; }
template <class... T> int sum(int first, T... rest) { return first + sum(rest...); }
template <class... T> int sum_of_ones(T... xs) { return sum(one(xs)...); }
int main() {
  std::printf("%d %d\n", sum(1, 2, 3), sum_of_ones(1, 2, 3));
  return 0;
}
