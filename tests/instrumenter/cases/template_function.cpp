// vprof-test: roots=main
#include <cstdio>
static int twice(int x) { return 2 * x; }
template <class T> T twice_t(T x) { return x + x; }
template <class T> T combine(T a, T b) { return twice_t(a) + static_cast<T>(twice(static_cast<int>(b))); }
int main() {
  std::printf("%d %.1f\n", combine(1, 2), combine(1.5, 2.0));
  return 0;
}
