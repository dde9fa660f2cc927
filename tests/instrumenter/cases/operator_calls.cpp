// vprof-test: roots=main
#include <cstdio>
struct V {
  int x, y;
  V operator+(const V &o) const { return {x + o.x, y + o.y}; }
  bool operator==(const V &o) const { return x == o.x && y == o.y; }
  int &operator[](int i) { return i ? y : x; }
  int operator()(int k) const { return k * x; }
  V &operator+=(const V &o) { x += o.x; y += o.y; return *this; }
};
int main() {
  V a{1, 2}, b{3, 4};
  V c = a + b + a;
  c[1] = 7;
  c += a;
  bool same = (a + b) == V{4, 6};
  std::printf("%d %d %d %d\n", c[0], c[1], int(same), c(3));
  return 0;
}
