// vprof-test: roots=main
#include <cstdio>
static int base() { return 10; }
static int add(int a, int b = base()) { return a + b; }
int main() {
  std::printf("%d %d\n", add(1), add(1, 2));
  return 0;
}
