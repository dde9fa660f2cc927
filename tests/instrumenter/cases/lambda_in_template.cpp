// vprof-test: roots=apply_all depth=1
#include <cstdio>
static int scale(int x) { return x * 3; }
template <class T> T apply_all(T a, T b) {
  auto f = [&](T x) { return static_cast<T>(scale(static_cast<int>(x))); };
  return f(a) + f(b);
}
int main() {
  std::printf("%d %.1f\n", apply_all(1, 2), apply_all(1.0, 2.0));
  return 0;
}
