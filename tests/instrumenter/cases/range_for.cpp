// vprof-test: roots=main
#include <cstdio>
#include <vector>
static std::vector<int> make(int n) { return std::vector<int>(static_cast<std::size_t>(n), 2); }
static int weigh(int x) { return x * 3; }
int main() {
  int s = 0;
  for (int x : make(4))
    s += weigh(x);
  std::printf("%d\n", s);
  return 0;
}
