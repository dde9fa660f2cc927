// vprof-test: roots=main
#include <cstdio>
#include <cstring>
static int at(int line) { return line; }
static const char *base(const char *f) { return std::strrchr(f, '/') ? std::strrchr(f, '/') + 1 : f; }
int main() {
  std::printf("%s:%d %d\n", base(__FILE__), __LINE__, at(__LINE__));
  return 0;
}
