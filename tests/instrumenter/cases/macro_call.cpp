// vprof-test: roots=main std=c++17
// C++: a call behind a function-like macro keeps its value category through the lambda
// probe (`AT(v, 1) = 5` assigns through the returned reference), a macro's C-style cast
// to a class type that calls a constructor is not "just a cast" (refused), and a member
// call written in a macro is timed at the invocation.
#include <cstdio>
#include <vector>
struct Box {
  int v;
  Box(long x) : v(static_cast<int>(x)) {}
};
static int &at(std::vector<int> &v, int i) { return v[static_cast<unsigned>(i)]; }
static long make(int x) { return x + 1L; }
struct Counter {
  int n = 0;
  int bump(int by) { return n += by; }
};
#define AT(v, i) at(v, i)
#define BOXED(x) ((Box)make(x))
#define BUMP(c, by) (c).bump(by)
int main() {
  std::vector<int> v(3, 0);
  AT(v, 1) = 5;
  Box b = BOXED(2);
  Counter c;
  BUMP(c, 2);
  int n = BUMP(c, 3) * 2;
  std::printf("%d %d %d %d\n", v[1], b.v, c.n, n);
  return 0;
}
