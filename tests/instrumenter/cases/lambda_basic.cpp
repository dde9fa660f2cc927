// vprof-test: roots=main depth=0
#include <algorithm>
#include <cstdio>
#include <vector>
static int weight(int x) { return x % 5; }
int main() {
  std::vector<int> v{5, 3, 9, 1};
  auto by_weight = [](int a, int b) { return weight(a) < weight(b); };
  std::sort(v.begin(), v.end(), by_weight);
  int total = 0;
  auto add = [&total](int x) { total += weight(x); };
  for (int x : v)
    add(x);
  std::printf("%d %d %d\n", v[0], v[3], total);
  return 0;
}
