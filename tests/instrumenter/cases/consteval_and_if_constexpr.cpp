// vprof-test: roots=main std=c++20
#include <cstdio>
consteval int ce(int x) { return x + 1; }
constexpr bool big(int x) { return x > 10; }
static int rt(int x) { return x * 2; }
template <int N> int pick() {
  if constexpr (big(N))
    return rt(N);
  else
    return ce(N) + rt(1);
}
int main() {
  constexpr int k = ce(4);
  std::printf("%d %d %d\n", pick<20>(), pick<3>(), k + rt(k));
  return 0;
}
