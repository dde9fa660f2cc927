// vprof-test: roots=guarded depth=1
#include <cstdio>
#include <stdexcept>
static int risky(int x) {
  if (x == 2)
    throw std::logic_error("two");
  return x;
}
static int guarded(int x) try {
  return risky(x) * 10;
} catch (const std::exception &) {
  return -1;
}
int main() {
  std::printf("%d %d\n", guarded(1), guarded(2));
  return 0;
}
