// vprof-test: roots=main
#include <cstdio>
static int runtime_only(int x) { return x + 100; }
int main() {
  constexpr auto sq = [](int x) { return x * x; };
  static_assert(sq(3) == 9, "evaluated at compile time");
  auto plain = [](int x) { return x * 2; };
  auto calls = [](int x) { return runtime_only(x); };
  std::printf("%d %d %d\n", sq(4), plain(5), calls(1));
  return 0;
}
