// vprof-test: roots=main
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
static std::string make(const char *s) { return std::string(s); }
static std::size_t len(const std::string &s) { return s.size(); }
int main() {
  int a = 3;
  const int &m = std::max(a, 1);
  std::size_t n = std::strlen(make("hello").c_str());
  std::size_t l = len(make("abc"));
  std::string s = make("x") + make("y");
  std::printf("%d %zu %zu %s\n", m, n, l, s.c_str());
  return 0;
}
