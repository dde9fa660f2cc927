// vprof-test: roots=main depth=0
#include <cstdio>
static int base(int x) { return x + 1; }
int main() {
  struct Local {
    static int twice(int x) { return 2 * base(x); }
  };
  std::printf("%d\n", Local::twice(3));
  return 0;
}
