// vprof-test: roots=main
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>
static std::string make(const char *s) { return std::string(s); }
static std::size_t len(const std::string &s) { return s.size(); }
static const std::string &id(const std::string &s) { return s; }
int main() {
  int a = 3;
  const int &m = std::max(a, 1);
  std::size_t n = std::strlen(make("hello").c_str());
  std::size_t l = len(make("abc"));
  std::string s = make("x") + make("y");
  // Discarded results cannot dangle: instrumented although an argument is a temporary.
  std::vector<std::pair<int, std::size_t>> v;
  v.emplace_back(a, s.size());
  (void)id(std::string("z"));
  // The value of a statement expression's last statement is used: refused.
  std::size_t k = __extension__({ id(std::string("w")).size(); });
  std::printf("%d %zu %zu %s %zu %zu\n", m, n, l, s.c_str(), v.size(), k);
  return 0;
}
