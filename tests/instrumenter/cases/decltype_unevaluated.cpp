// vprof-test: roots=main
#include <cstdio>
#include <typeinfo>
static long f() { return 5; }
int g() noexcept { return 2; }
int main() {
  decltype(f()) a = f();
  bool ne = noexcept(g());
  const char *n = typeid(f()).name();
  unsigned long s = sizeof(g());
  std::printf("%ld %d %d %lu\n", a, int(ne), n != nullptr, s);
  return 0;
}
