// vprof-test: roots=main
#include <cstdio>
static int next(int x) { return x + 3; }
int main() {
  int x = 0;
again:
  x = next(x);
  if (x < 10)
    goto again;
  std::printf("%d\n", x);
  return 0;
}
