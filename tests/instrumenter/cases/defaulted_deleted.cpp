// vprof-test: roots=S::S,S::operator= depth=0 unchanged
#include <cstdio>
struct S {
  int v = 1;
  S() = default;
  S(const S &) = delete;
  S &operator=(const S &) = default;
};
int main() {
  S a;
  std::printf("%d\n", a.v);
  return 0;
}
