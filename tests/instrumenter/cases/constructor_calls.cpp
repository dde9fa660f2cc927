// vprof-test: roots=main
#include <cstdio>
static int made;
static int note(int x) { return made += x; }
struct P {
  int a, b;
  P(int x, int y) : a(x), b(y) { note(1); }
  ~P() { note(100); }
  int sum() const { return a + b; }
};
static int use(const P &p) { return p.sum(); }
int main() {
  int s = P(1, 2).sum();
  int t = use(P{3, 4});
  {
    P local(5, 6);
    s += local.sum();
  }
  std::printf("%d %d %d\n", s, t, made);
  return 0;
}
