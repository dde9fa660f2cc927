// vprof-test: roots=main
#include <cstdio>
struct Shape {
  virtual ~Shape() = default;
  virtual int area() const = 0;
  int twice() const { return 2 * area(); }
};
struct Sq : Shape {
  int s;
  explicit Sq(int x) : s(x) {}
  int area() const override { return s * s; }
};
struct Rect : Shape {
  int w, h;
  Rect(int a, int b) : w(a), h(b) {}
  int area() const override { return w * h; }
};
static int total(const Shape &a, const Shape &b) { return a.area() + b.twice(); }
int main() {
  Sq s(3);
  Rect r(2, 5);
  const Shape *p = &r;
  std::printf("%d %d %d\n", total(s, r), p->area(), p->Shape::twice());
  return 0;
}
