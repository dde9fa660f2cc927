// vprof-test: roots=main
#include <cstdio>
#include <stdexcept>
static int check(int x) {
  if (x > 2)
    throw std::runtime_error("too big");
  return x;
}
static int relay(int x) { return check(x) + 1; }
int main() {
  int ok = 0, caught = 0;
  for (int i = 0; i < 5; i++) {
    try {
      ok += relay(i);
    } catch (const std::exception &e) {
      caught++;
    }
  }
  std::printf("%d %d\n", ok, caught);
  return 0;
}
