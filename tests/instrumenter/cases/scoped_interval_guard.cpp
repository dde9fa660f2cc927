// vprof-test: roots=@annotated depth=1
// C++ guards: the user functions that construct vprof::interval / vprof::attachment are
// the roots (not vprof.hpp's constructors); iv.end() gets no call-site probe.
#include <cstdio>
#include <vprof/vprof.hpp>
static int step(int i) { return i * i; }
static int handle(int n) {
  VPROF_SCOPED_INTERVAL(iv, "request");
  int s = 0;
  for (int i = 0; i < n; i++)
    s += step(i);
  iv.end();
  return s;
}
static int serve(unsigned long id, int n) {
  vprof::attachment a(id);
  return step(n) + 1;
}
int main() {
  std::printf("%d %d\n", handle(4), serve(7, 3));
  return 0;
}
