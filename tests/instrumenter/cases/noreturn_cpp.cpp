// vprof-test: roots=checked depth=1
#include <cstdio>
#include <stdexcept>
[[noreturn]] static void fail(const char *what) { throw std::runtime_error(what); }
static int checked(int x) {
  if (x >= 0)
    return x * 2;
  fail("negative");
}
int main() {
  int r = checked(4);
  try {
    r += checked(-1);
  } catch (const std::exception &) {
    r += 1000;
  }
  std::printf("%d\n", r);
  return 0;
}
