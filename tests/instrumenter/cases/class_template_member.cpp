// vprof-test: roots=main
#include <cstdio>
static int tick(int x) { return x + 1; }
template <class T> struct Box {
  T v;
  T get() const { return static_cast<T>(tick(static_cast<int>(v))); }
  void set(T x) { v = static_cast<T>(tick(static_cast<int>(x))); }
};
int main() {
  Box<int> a{1};
  Box<long> b{2};
  a.set(a.get());
  b.set(b.get());
  std::printf("%d %ld\n", a.get(), b.get());
  return 0;
}
