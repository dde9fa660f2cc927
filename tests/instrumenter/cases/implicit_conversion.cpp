// vprof-test: roots=main
#include <cstdio>
struct Flag {
  bool on;
  explicit operator bool() const { return on; }
  operator int() const { return on ? 7 : 0; }
};
static Flag make(bool b) { return Flag{b}; }
int main() {
  Flag f = make(true);
  int n = 0;
  if (f)
    n = f;
  std::printf("%d %d\n", n, int(static_cast<bool>(make(false))));
  return 0;
}
