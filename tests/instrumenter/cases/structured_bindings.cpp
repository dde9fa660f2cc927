// vprof-test: roots=main std=c++17
#include <cstdio>
#include <utility>
#include <vector>
static std::pair<int, int> two() { return {3, 4}; }
static int add(int a, int b) { return a + b; }
static const int &first(const int &x) { return x; }
int main() {
  auto [a, b] = two();
  int s = add(a, b);
  int t = add(1, 2);
  // Calls naming a binding: void/scalar results use the statement-expression form (no
  // capture needed); first(a) returns a used reference: the lambda form with an
  // init-capture of the binding.
  // A discarded reference result: the statement-expression form casts it to void.
  std::vector<int> out;
  out.emplace_back(b);
  out[std::size_t(b - 4)] += first(a);
  std::printf("%d %d %d %d\n", s, t, first(a), out.back());
  return 0;
}
